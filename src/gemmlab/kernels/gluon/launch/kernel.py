"""GluonKernel: a Gluon level's spec and plan.

Triton compiles a level's @gluon.jit source (kernels/gluon/source/) for sm_90a from its constexpr parameters and the
operands' TMA descriptor types, with no GPU needed; one binary serves every shape (the shape travels in the
descriptors). A plan launches that binary on the caller's stream, with descriptors of A, B and C built from their
addresses: TMA zero-fills the reads past M, N and K and clips the stores, so ragged M, N and K need no masks.

TMA's limits are the levels' limits: each row of A, B and C must start a multiple of 16 bytes after the last (K and N
multiples of 8 for BF16 operands; K of 16 and N of 8 for FP8's, B being N×K; N of 4 for FP32 C); other shapes are
refused with that limit named, so kernel="auto" runs another level there. A base off 16 bytes (a view into a larger
tensor) is staged for that call: copied into a buffer of its own (C copied back after), as the CUDA levels stage it.

Triton is optional and Gluon's API changes between releases: the levels are written for Triton ``SUPPORTED`` (what
torch brings on the H200, pinned by the gemmlab[gluon] extra). Without it, or with another version, every level
refuses every problem with a MissingDependencyError naming the versions; reading the registry imports no Triton.
Launching needs PyTorch too: Triton's CUDA driver finds the current device through it; a level's binary is loaded
once a device, on the first launch of a plan there (loaded_here).
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import dataclasses
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping

from gemmlab.errors import LayoutError, MissingDependencyError, Refusal
from gemmlab.fp8 import BLOCK
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout, Plan
from gemmlab.kernels.spec import GPU, SM_COUNT, KernelSpec, Traffic
from gemmlab.problem import Problem, itemsize

SUPPORTED = "3.6.0"
ARCH = 90  # wgmma, TMA and setmaxnreg: sm_90a, which Triton targets for compute capability 9.0
SMEM_LIMIT = 227 * 1024  # an H100/H200 CTA's opt-in shared memory
TMA_ALIGN = 16  # bytes: a TMA descriptor's base and row stride
# each operand dtype's name in a Triton signature and in gluon.language
TRITON_TYPES = {"bfloat16": "bf16", "float32": "fp32", "float8_e4m3fn": "fp8e4nv"}
GLUON_TYPES = {"bfloat16": "bfloat16", "float32": "float32", "float8_e4m3fn": "float8e4nv"}
# a persistent level's left accumulator part and C's staging tile: 128 columns
LEFT_COLUMNS = 128


@lru_cache(maxsize=1)
def installed_triton() -> str | None:
    """The installed Triton's version, or None; read from its metadata, without importing it."""
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return None


def triton_refusal(name: str) -> Refusal | None:
    """Why the level ``name`` cannot compile here: no Triton, or not the version its Gluon code is written for."""
    version = installed_triton()
    fix = f"python3 -m pip install 'gemmlab[gluon]' installs Triton {SUPPORTED}"
    if version is None:
        return Refusal(f"{name} is written in Triton's Gluon and needs Triton {SUPPORTED}, which is not installed; "
                       f"{fix}", MissingDependencyError)
    if version != SUPPORTED:
        return Refusal(f"{name} is written for Gluon as Triton {SUPPORTED} has it (its API changes between "
                       f"releases), and Triton {version} is installed; {fix}", MissingDependencyError)
    return None


class _Operand:
    """What a TMA descriptor reads of its base: the address and the element type."""

    def __init__(self, ptr: int, dtype: str):
        self.ptr, self.dtype = ptr, dtype

    def data_ptr(self) -> int:
        return self.ptr


_compiled: dict = {}


@dataclass(frozen=True, kw_only=True)
class GluonKernel(KernelSpec):
    """A Gluon level: its device code (``entry`` in source/``source``.py), tile parameters BM, BN, STAGES (BK is
    one 128-byte swizzle row, as in the CUDA levels) and OUT_BF16 (C's type: BF16, or FP32 where 0); BM/64 consumer
    warpgroups, each owning 64 rows of the tile, and ``producer_warps`` more where a level specializes warps, whose
    warpgroup keeps PRODUCER_REGS registers a thread and leaves the consumers CONSUMER_REGS (cuda/tc3's names).
    A block-scaled level (precision fp8_block) promotes each k-tile into FP32 with one B scale a tile: BN divides
    128."""

    backend: str = "gluon"
    device: str = GPU
    source: str = ""
    entry: str = ""
    producer_warps: int = 0  # with PRODUCER_REGS and CONSUMER_REGS, each partition's registers a thread
    # one CTA per SM walking the tiles GROUP_M rows at a time (spec.tile_walk's snake order), C stored in two parts
    # through a staging tile of its own; with NARROW_BN, tiles that wide where they fill the last wave better
    persistent: bool = False
    # each consumer warpgroup a partition of its own (the default one and BM/64 - 1 workers, at CONSUMER_REGS each),
    # which arrives on a slot's `empty` and waits for its wgmma apart from the others; A's slot in boxes of its 64
    # rows, and C's staging tile and stores each warpgroup's
    warpgroup_partitions: bool = False
    # parameters each C type builds with, where they differ (a staging tile of FP32 C takes a ring slot's bytes)
    out_params: Mapping[str, Mapping] = field(default_factory=dict)
    # a shorter tile's BM and the registers it takes: where it runs a problem sooner, cuda/tc8's rule (short_pays)
    short_tile: Mapping | None = None
    varies: tuple = ("BM", "BN", "STAGES")

    # ---- parameters ---------------------------------------------------------------------------------------------
    @property
    def bk(self) -> int:
        return self.prec.k_tile

    @property
    def consumer_warps(self) -> int:
        """The consumer warpgroups' warps: a warpgroup owns 64 rows of the tile."""
        return self.params["BM"] // 64 * 4

    @property
    def num_warps(self) -> int:
        """The warps of the default partition: the consumer warpgroups, or the first (warpgroup_partitions)."""
        return 4 if self.warpgroup_partitions else self.consumer_warps

    @property
    def total_warps(self) -> int:
        """The warps a CTA launches: registers are handed out a warpgroup at a time, so a producer warp takes one."""
        return self.consumer_warps + ceil_div(self.producer_warps, 4) * 4

    def maxnreg(self) -> int | None:
        """The kernel's registers a thread, from which Triton gives the producer's warpgroup PRODUCER_REGS (and
        consumer partitions past the first CONSUMER_REGS: warpgroup_partitions) and the default partition the rest:
        CONSUMER_REGS (None without a producer: ptxas decides)."""
        if not self.producer_warps:
            return None
        p = self.params
        producers = self.total_warps - self.consumer_warps
        return (p["CONSUMER_REGS"] * self.consumer_warps + p["PRODUCER_REGS"] * producers) // self.total_warps // 8 * 8

    @property
    def accumulator_parts(self) -> tuple[int, ...]:
        """The columns of each accumulator a consumer warpgroup keeps, one wgmma each per k-tile: the tile, or in a
        persistent level a left part of LEFT_COLUMNS and the rest (128 + 128 of a 256-wide tile, 128 + 64 of a
        192-wide one), since the whole tile's C would not fit beside the ring in one staging tile; a persistent tile
        no wider than the left part is one."""
        bn = self.params["BN"]
        return (LEFT_COLUMNS, bn - LEFT_COLUMNS) if self.persistent and bn > LEFT_COLUMNS else (bn,)

    @property
    def c_box(self) -> tuple[int, int]:
        """The rows and columns of C one TMA store writes: the tile, or a persistent level's right part (the left
        part leaves in boxes of the same width); a warpgroup partition's 64 rows of them."""
        return self.box_rows, self.accumulator_parts[-1]

    @property
    def box_rows(self) -> int:
        """The rows of A and C one TMA copy moves: the tile's, or a warpgroup partition's."""
        return 64 if self.warpgroup_partitions else self.params["BM"]

    def smem_bytes(self) -> int:
        """The ring of STAGES A and B tiles and an 8-byte mbarrier per slot (two, full and empty, with a producer);
        C's staging tile reuses the ring once the mainloop is done, except in a persistent level, where the ring
        runs on into the next tile and C has a tile of its own, as wide as the left part."""
        p = self.params
        barriers = (2 if self.producer_warps else 1) * p["STAGES"] * 8
        out_bytes = 2 if p.get("OUT_BF16", 1) else 4  # output_dtype's, without importing ml_dtypes for its name
        staging = p["BM"] * self.accumulator_parts[0] * out_bytes if self.persistent else 0
        return p["STAGES"] * (p["BM"] + p["BN"]) * self.bk * self.prec.input_bytes + barriers + staging

    def config_error(self) -> str | None:
        p = self.params
        if self.warpgroup_partitions and p["BM"] not in (128, 192):
            return (f"BM={p['BM']}: a warpgroup owns 64 rows of the tile, and the device code runs 2 or 3 of them, "
                    "each a partition")
        if not self.warpgroup_partitions and p["BM"] not in (64, 128, 256):
            return (f"BM={p['BM']}: a warpgroup owns 64 rows of the tile, and 1, 2 or 4 of them stack along M (a "
                    "partition's warps are a power of 2)")
        if self.prec.block_scaled:
            if BLOCK % p["BN"] or p["BN"] < 16:
                return (f"BN={p['BN']}: a tile takes one B scale a k-tile, so its columns lie in one of B's "
                        f"{BLOCK}-column scale blocks: BN divides {BLOCK} (16 or more)")
        elif self.persistent:
            for bn in {p["BN"], p.get("NARROW_BN", 0)} - {0}:
                if bn not in (LEFT_COLUMNS + 64, 2 * LEFT_COLUMNS):
                    return (f"BN={bn}: a persistent level's tile is a {LEFT_COLUMNS}-column left part and a right part "
                            f"of 64 or {LEFT_COLUMNS} columns, whose width C's boxes take")
        elif p["BN"] % 16 or not 16 <= p["BN"] <= 256:
            return f"BN={p['BN']}: one wgmma spans the tile's columns, a multiple of 16 up to 256"
        if self.persistent and p.get("GROUP_M", 0) < 1:
            return "a persistent level walks its tiles GROUP_M rows at a time: GROUP_M of 1 or more"
        if p["STAGES"] < 2:
            return f"STAGES={p['STAGES']}: the ring needs 2 slots or more to overlap a copy with the tensor cores"
        if self.producer_warps:
            regs = (p["PRODUCER_REGS"], p["CONSUMER_REGS"])
            if any(r % 8 or not 24 <= r <= 256 for r in regs):
                return (f"PRODUCER_REGS={regs[0]}, CONSUMER_REGS={regs[1]}: setmaxnreg takes multiples of 8 from 24 "
                        "to 256")
            used = 32 * (regs[1] * self.consumer_warps + regs[0] * (self.total_warps - self.consumer_warps))
            if used > 65536:
                return f"the partitions' registers ({used}) are past the SM's 65536"
        if self.smem_bytes() > SMEM_LIMIT:
            return f"the ring takes {self.smem_bytes()} bytes of shared memory, past the {SMEM_LIMIT} a CTA may have"
        return None

    # ---- C's type -------------------------------------------------------------------------------------------------
    def output_dtype(self, problem: Problem):
        from gemmlab.problem import np_dtype

        return np_dtype(self._output_name())

    def _output_name(self) -> str:
        """C's dtype name: its size comes without ml_dtypes (problem.itemsize), which the roofline's validity check
        must not import."""
        return "bfloat16" if self.params.get("OUT_BF16", 1) else "float32"

    def for_formats(self, a: str, b: str, out: str) -> "GluonKernel":
        """This level writing C in ``out`` (BF16 or FP32: OUT_BF16, each its own binary)."""
        dtype = self.prec.input_dtype
        if (a, b) != (dtype, dtype) or out not in self.prec.output_dtypes:
            return super().for_formats(a, b, out)
        return self.with_params({"OUT_BF16": int(out == "bfloat16"), **self.out_params.get(out, {})})

    def configurations(self) -> list["GluonKernel"]:
        """Each C type's build, and with NARROW_BN each one's narrow tile too, with a short tile each one's short."""
        dtype = self.prec.input_dtype
        builds = [self.for_formats(dtype, dtype, out) for out in self.prec.output_dtypes]
        if self.short_tile:
            builds = [dataclasses.replace(b, short_tile=None) for b in builds] + [b.short() for b in builds]
        return builds + [b.narrow() for b in builds if b.params.get("NARROW_BN", 0)]

    # ---- the tile per problem ---------------------------------------------------------------------------------------
    def narrow(self) -> "GluonKernel":
        """This level's NARROW_BN-wide build."""
        return self.with_params({"BN": self.params["NARROW_BN"], "NARROW_BN": 0})

    def for_problem(self, problem: Problem, sm_count: int = SM_COUNT) -> "GluonKernel":
        """The build that runs ``problem``: with NARROW_BN, tiles that wide where they fill the last wave better, by
        cuda/tc4's rule (narrow_pays: one CTA per SM here, no clusters); with ``short_tile``, its rows where they
        finish the problem sooner, by cuda/tc8's (short_pays); else this one."""
        from gemmlab.kernels.cuda.tc.model.tiles import narrow_pays, short_pays

        if self.params.get("NARROW_BN", 0) and narrow_pays(problem.m, problem.n, self.params, sm_count):
            return self.narrow()
        if self.short_tile and short_pays(problem.m, problem.n, self.params, self.short_tile["BM"], sm_count):
            return self.short()
        return self

    def short(self) -> "GluonKernel":
        """The build on ``short_tile``'s rows, its ring the taller tile's bytes, each C type's too (pinned: no other
        tile per problem)."""
        from gemmlab.kernels.cuda.tc.model.tiles import with_tile_rows

        bm = self.short_tile["BM"]
        outs = {out: {**given, "STAGES": with_tile_rows({**self.params, **given}, bm)["STAGES"]} if "STAGES" in given
                else dict(given) for out, given in self.out_params.items()}
        return dataclasses.replace(self, params=with_tile_rows(self.params, bm, **self.short_tile), short_tile=None,
                                   out_params=outs)

    # ---- validity -------------------------------------------------------------------------------------------------
    def is_valid(self, problem: Problem) -> Refusal | None:
        return super().is_valid(problem) or triton_refusal(self.name) or self.alignment_refusal(problem)

    def alignment_refusal(self, problem: Problem) -> Refusal | None:
        """TMA's 16-byte row strides: K a whole multiple of 16 bytes of A's elements (and of B's, where B is N×K), N of
        C's (and of B's, where B is K×N)."""
        m, n, k = problem.shape
        c_bytes = itemsize(self._output_name())
        steps = {"K": (k, TMA_ALIGN // self.prec.input_bytes),
                 "N": (n, TMA_ALIGN // (c_bytes if self.prec.kmajor_b else min(self.prec.input_bytes, c_bytes)))}
        bad = [f"{dim}={value} is not a multiple of {step}" for dim, (value, step) in steps.items() if value % step]
        if bad:
            return Refusal(f"{self.name} moves A, B and C by TMA, whose rows must be a multiple of {TMA_ALIGN} bytes "
                           f"long: {' and '.join(bad)}; kernel='auto' picks a level without that limit", LayoutError)
        return None

    def unsupported(self, gpu) -> str | None:
        if tuple(gpu.cc) != (9, 0):
            return (f"{self.name} runs wgmma and TMA, which exist on sm_90a (Hopper) only; this GPU is "
                    f"sm_{gpu.cc[0]}{gpu.cc[1]}")
        return None

    # ---- geometry and traffic ---------------------------------------------------------------------------------------
    def launch_geometry(self, problem: Problem, sm_count: int = SM_COUNT) -> Geometry:
        """One CTA per BM×BN tile, its x along N as in cuda/tc2 and tc3; a persistent level's, one per SM (never more
        than the tiles), at the tile width that runs the problem (for_problem)."""
        runs = self.for_problem(problem, sm_count)
        if runs is not self:
            return runs.launch_geometry(problem, sm_count)
        p = self.params
        tiles_n, tiles_m = ceil_div(problem.n, p["BN"]), ceil_div(problem.m, p["BM"])
        grid = (min(sm_count, tiles_m * tiles_n), 1, 1) if self.persistent else (tiles_n, tiles_m, 1)
        return Geometry(grid=grid, block=(self.total_warps * 32, 1, 1), smem=self.smem_bytes())

    def traffic(self, problem: Problem, sm_count: int = SM_COUNT, layout=None) -> Traffic:
        """The CUDA wgmma levels' model at the tile that runs the problem, C staged in shared memory on its way to a
        TMA store."""
        from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

        p = self.for_problem(problem, sm_count).params
        model = wgmma_traffic(self.precision, p["BM"], p["BN"], epi_tma=True, persistent=self.persistent,
                              group_m=p.get("GROUP_M", 1), block_scales=self.prec.block_scaled)
        return model(problem, sm_count, dict(p))

    # ---- compiling ------------------------------------------------------------------------------------------------
    def descriptor_blocks(self) -> dict:
        """Each operand's TMA box (rows, columns) and element type."""
        p = self.params
        out = "bfloat16" if p.get("OUT_BF16", 1) else "float32"
        dtype = self.prec.input_dtype
        b_n = self.c_box[1] if self.persistent else p["BN"]  # a persistent level's slot of B takes BN / b_n boxes
        b_box = (b_n, self.bk) if self.prec.kmajor_b else (self.bk, b_n)
        return {"a_desc": ((self.box_rows, self.bk), dtype), "b_desc": (b_box, dtype), "c_desc": (self.c_box, out)}

    def scale_args(self) -> tuple:
        """The pointer arguments after the descriptors: an FP8 level's scales of A and B, per tensor or in
        gemmlab.fp8's block layouts (A's (K/128, M), B's (N/128, K/128), each row-major)."""
        return ("scale_a", "scale_b") if self.prec.scaled else ()

    def constexprs(self) -> dict:
        """The device code's compile-time arguments after the descriptors."""
        p = self.params
        extra = {"PRODUCER_WARPS": self.producer_warps, "PRODUCER_REGS": p["PRODUCER_REGS"],
                 "CONSUMER_REGS": p["CONSUMER_REGS"]} if self.producer_warps else {}
        group = {"GROUP_M": p["GROUP_M"], "BN": p["BN"]} if self.persistent else {}
        if self.warpgroup_partitions:
            group["WGS"] = p["BM"] // 64
        return {"STAGES": p["STAGES"], **group, **extra, "num_warps": self.num_warps}

    def gluon_compile(self):
        """Triton's CompiledKernel of this level (its PTX, cubin and metadata in .asm and .metadata), compiled once a
        process. Raises MissingDependencyError without the Triton it is written for."""
        why = triton_refusal(self.name)
        if why:
            raise why.exception()
        key = (self.source, self.entry, tuple(self.constexprs().items()), tuple(self.descriptor_blocks().items()),
               self.scale_args())
        if key not in _compiled:
            import triton
            from triton.backends.compiler import GPUTarget
            from triton.experimental.gluon import language as gl
            from triton.experimental.gluon._runtime import GluonASTSource

            fn = getattr(importlib.import_module(f"gemmlab.kernels.gluon.source.{self.source}"), self.entry)
            signature = {}
            for arg, (block, dtype) in self.descriptor_blocks().items():
                layout = gl.NVMMASharedLayout.get_default_for(list(block), getattr(gl, GLUON_TYPES[dtype]))
                signature[arg] = f"tensordesc<{TRITON_TYPES[dtype]}[{block[0]}, {block[1]}],{layout!r}>"
            signature.update({arg: "*fp32" for arg in self.scale_args()})
            constexprs = self.constexprs()
            signature.update({name: "constexpr" for name in constexprs})
            source = GluonASTSource(fn=fn, signature=signature, constexprs=constexprs)
            _compiled[key] = triton.compile(source, target=GPUTarget("cuda", ARCH, 32),
                                            options={"num_warps": self.num_warps, "maxnreg": self.maxnreg()})
        return _compiled[key]

    # ---- running --------------------------------------------------------------------------------------------------
    @property
    def layouts(self) -> frozenset:
        """Row-major A, B row-major (K×N) or, for FP8, as the transpose of an N×K matrix: what its wgmma reads."""
        return frozenset({Layout(b=COL) if self.prec.kmajor_b else ROW_MAJOR})

    def plan(self, problem: Problem, layout: Layout = ROW_MAJOR) -> "GluonPlan":
        from gemmlab.device import require_gpu

        why = self.is_valid(problem)
        if why:
            raise why.exception()
        if importlib.util.find_spec("torch") is None:
            raise MissingDependencyError(f"{self.name} launches through Triton's CUDA driver, which needs PyTorch; "
                                         "it is not installed")
        gpu = require_gpu(self.name)
        sm_count = gpu.sm_count if gpu is not None else SM_COUNT
        runs = self.for_problem(problem, sm_count)
        if runs is not self:
            return runs.plan(problem, layout)
        from triton.experimental.gluon import language as gl

        geometry = self.launch_geometry(problem, sm_count)
        m, n, k = problem.shape
        extents = {"a_desc": (m, k), "b_desc": (n, k) if self.prec.kmajor_b else (k, n), "c_desc": (m, n)}
        descriptors = {arg: (extents[arg], list(block), dtype,
                             gl.NVMMASharedLayout.get_default_for(list(block), getattr(gl, GLUON_TYPES[dtype])))
                       for arg, (block, dtype) in self.descriptor_blocks().items()}
        steps = [f"Triton {SUPPORTED} compiles {self.source}.py's {self.entry} for sm_90a (once a process)",
                 f"TMA descriptors of A, B and C encoded at each address an operand comes at, kept for the next "
                 f"launch there; grid {geometry.grid[:2]}, {geometry.threads} threads"]
        compiled = self.gluon_compile()
        return GluonPlan(self, problem, layout, steps=steps, kernel=compiled, grid=geometry.grid,
                         descriptors=descriptors, constexprs=tuple(self.constexprs().values()),
                         launcher=TritonLaunch(compiled))


# descriptors a plan keeps per operand, by address: a caller's operands and outputs come back to a few addresses
# (torch's caching allocator hands C the blocks it freed), so most launches encode none
KEPT_DESCRIPTORS = 16


class TritonLaunch:
    """Triton's launcher of one compiled kernel, called below the wrapper through which Triton launches a kernel that
    takes TMA descriptors (triton.backends.nvidia.driver.wrap_handle_tensordesc, as Triton SUPPORTED has it), which
    encodes every descriptor again on every launch (a driver call and a few Python objects each): a plan encodes an
    operand's descriptor with the wrapper's own make_tensordesc_arg once an address (``encode``) and passes what it
    made, so a launch at known addresses encodes none. The arguments before them are the ones Triton's CudaLauncher
    passes for a kernel without scratch memory; Triton's launch hooks (its profiler's) do not see these launches."""

    def __init__(self, compiled):
        self.compiled = compiled
        self.raw = None  # the launcher below the wrapper, once the binary is loaded
        self.head = ()  # its arguments between the stream and the kernel's

    def encode(self, operand: int, descriptor) -> list:
        """The launch arguments of the TensorDescriptor of the kernel's ``operand``-th descriptor parameter: the
        encoded tensor map, then its shape and strides."""
        from triton.backends.nvidia.driver import make_tensordesc_arg

        return make_tensordesc_arg(descriptor, self.compiled.metadata.tensordesc_meta[operand])

    def __call__(self, grid: tuple, stream: int, *args) -> None:
        """Launch on ``stream`` with ``args``: each descriptor's ``encode``, then the other parameters in order."""
        if self.raw is None:  # a plan runs on one device: the one current at its first launch
            kernel = loaded_here(self.compiled)
            run = kernel.run
            self.head = (kernel.function, run.launch_cooperative_grid, run.launch_pdl, None, None,
                         kernel.packed_metadata, None, None, None)
            self.raw = below_wrapper(run)
        self.raw(*grid, stream, *self.head, *args)


_loaded = weakref.WeakKeyDictionary()  # a compiled kernel -> {device: a copy of it loaded there}


def loaded_here(compiled):
    """``compiled`` (a CompiledKernel) for the device current now: Triton loads a CompiledKernel's binary once, on the
    device current when its ``run`` is first read, so each device gets a copy of its own, whose ``run`` loads it
    there."""
    import copy

    from triton.runtime import driver as triton_driver

    copies = _loaded.setdefault(compiled, {})
    device = triton_driver.active.get_current_device()
    kernel = copies.get(device)
    if kernel is None:
        kernel = copies[device] = copy.copy(compiled)
        kernel.module = kernel.function = kernel._run = None  # its handles, which its first ``run`` loads here
    return kernel


def below_wrapper(launcher):
    """The launch function under a Triton CudaLauncher's ``launch``, which wrap_handle_tensordesc wraps for a kernel
    with TMA descriptor parameters; a Triton whose launcher is not that, or a kernel that needs scratch memory
    (allocated per launch by Triton's launcher), is refused by name."""
    names = getattr(getattr(launcher.launch, "__code__", None), "co_freevars", ())
    if "launcher" not in names:
        raise MissingDependencyError(f"gemmlab launches Gluon kernels below Triton {SUPPORTED}'s descriptor wrapper "
                                     f"(wrap_handle_tensordesc), which Triton {installed_triton()}'s launcher is not")
    if launcher.global_scratch_size or launcher.profile_scratch_size:
        raise RuntimeError("a Gluon kernel that needs scratch memory, which Triton's launcher allocates per launch: "
                           "gemmlab's launch passes none")
    return launcher.launch.__closure__[names.index("launcher")].cell_contents


@dataclass
class GluonPlan(Plan):
    """A Gluon level's launch: TMA descriptors of A, B and C at their addresses, each encoded the first time an
    operand is at that address and kept (KEPT_DESCRIPTORS per operand), the scales' addresses, the compiled kernel on
    the caller's stream (TritonLaunch). It holds no workspace (an operand staged for one call has a buffer for that
    call only), so one plan serves every stream and CUDA graph capture (a descriptor is passed by value in the
    kernel's parameters, which a graph captures)."""

    kernel: object = None  # triton's CompiledKernel
    grid: tuple = ()
    descriptors: dict | None = None  # argument: ((rows, columns), box, dtype, shared layout)
    constexprs: tuple = ()
    launcher: object = None  # TritonLaunch of ``kernel``
    kept: tuple = field(init=False, default=())  # per operand {address: its encoded launch arguments}
    scales: int = field(init=False, default=0)  # the scales' addresses a launch takes after the stream

    def __post_init__(self):
        self.kept = tuple({} for _ in self.descriptors)
        self.scales = len(self.spec.scale_args())

    def run(self, a, b, c) -> None:
        """The harness's call: CuPy arrays, or FP8's Scaled operands, whose scales' addresses follow the stream."""
        if not self.spec.prec.scaled:
            super().run(a, b, c)
            return
        import cupy

        self.launch(a.data.data.ptr, b.data.data.ptr, c.data.ptr, cupy.cuda.get_current_stream().ptr,
                    a.scale.data.ptr, b.scale.data.ptr)

    def descriptor(self, operand: int, ptr: int):
        """The TMA descriptor (Gluon's TensorDescriptor) of operand ``operand`` (0, 1, 2: A, B, C) at ``ptr``."""
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

        ((rows, cols), box, dtype, layout) = list(self.descriptors.values())[operand]
        return TensorDescriptor(_Operand(ptr, dtype), [rows, cols], [cols, 1], box, layout)

    def arguments(self, operand: int, ptr: int) -> list:
        """The launch arguments of operand ``operand``'s descriptor at ``ptr``, kept for the next launch there."""
        kept = self.kept[operand]
        args = kept.get(ptr)
        if args is None:
            if len(kept) >= KEPT_DESCRIPTORS:
                kept.pop(next(iter(kept)))
            args = kept[ptr] = self.launcher.encode(operand, self.descriptor(operand, ptr))
        return args

    def launch(self, a, b, c, stream: int = 0, *scales) -> None:
        if len(scales) != self.scales:
            raise TypeError(f"{self.spec.name} takes the addresses of {self.scales} scales after the stream, got "
                            f"{len(scales)}")
        if (a | b | c) % TMA_ALIGN:
            self._staged_launch(a, b, c, stream, scales)
            return
        self.launcher(self.grid, stream, *self.arguments(0, a), *self.arguments(1, b), *self.arguments(2, c),
                      *scales, *self.constexprs)

    def _staged_launch(self, a, b, c, stream: int, scales: tuple) -> None:
        """A launch with an operand whose base is off 16 bytes, which a TMA descriptor cannot take: that operand
        copied on ``stream`` into a buffer of its own (staging_buffer), the kernel run on the copy, and C copied back
        to its place after."""
        from gemmlab import driver
        from gemmlab.problem import np_dtype

        ptrs, buffers, c_back = [a, b, c], [], None
        for i, ((rows, cols), _, dtype, _) in enumerate(self.descriptors.values()):
            if ptrs[i] % TMA_ALIGN:
                width = cols * np_dtype(dtype).itemsize
                buffer, address = staging_buffer(rows * width, stream)
                buffers.append(buffer)  # alive until the copies and the launch are enqueued
                if i < 2:
                    driver.copy_2d(address, width, ptrs[i], width, width, rows, stream)
                else:  # C: copied to its place after the launch
                    c_back = (c, width, address, width, width, rows, stream)
                ptrs[i] = address
        self.launch(*ptrs, stream, *scales)
        if c_back:
            driver.copy_2d(*c_back)


def staging_buffer(nbytes: int, stream: int) -> tuple[object, int]:
    """Device memory for one call's staged operand: (the buffer, its address), from torch's caching allocator on
    ``stream`` (the current device's), which hands it to another allocation on that stream only, after this call's
    work in stream order, so the buffer is freed when the launch returns; under CUDA graph capture it comes from the
    graph's pool, as torch's other intermediates there do."""
    import contextlib

    import torch

    current = torch.cuda.current_stream().cuda_stream == stream  # torch's own calls: their stream is the current one
    with contextlib.nullcontext() if current else torch.cuda.stream(torch.cuda.ExternalStream(stream)):
        buffer = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    return buffer, buffer.data_ptr()
