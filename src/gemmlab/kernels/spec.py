"""KernelSpec: what every kernel declares about itself, so the harness can check, run and explain it.

A spec names the kernel (``backend/level_name``), its ladder level, precision and tile parameters, says whether
a problem is valid for it (and why not), models its global-memory traffic (the seeds' analysis), and builds a
launcher. Kernels never time or verify themselves: the harness does both.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping

from gemmlab.errors import DTypeError, LayoutError, Refusal, SizeLimitError
from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout, Plan
from gemmlab.problem import BatchedProblem, Precision, Problem, get_precision

INT32_MAX = 2**31 - 1
INT32_ROUNDING = 1024  # past any tile or vector a 32-bit kernel rounds a dimension up to (tc1's k-tile, gemv1's K)

# Where a kernel runs, which decides the array module the harness hands it.
CPU, GPU = "cpu", "gpu"


SM_COUNT = 132  # the H200's SMs: the traffic models' default, where a launch's geometry depends on the GPU


def tile_walk(tiles_m: int, tiles_n: int, group_m: int = 1, snake: bool = False) -> list[tuple[int, int]]:
    """(row, column) of each output tile in the order a launch's CTAs take them: ``group_m`` tile rows at a time,
    column by column (1: row-major, a 2-D grid's blockIdx.x along N); with ``snake``, odd groups walk their columns
    right to left. The FP32 ladder's tile_coords and the tensor-core levels' schedule() in C++."""
    order = []
    group = group_m * tiles_n
    for t in range(tiles_m * tiles_n):
        first = (t // group) * group_m
        rows = min(tiles_m - first, group_m)
        r = t % group
        tn = r // rows
        order.append((first + r % rows, tiles_n - 1 - tn if snake and (t // group) % 2 else tn))
    return order


@dataclass(frozen=True)
class TileWalk:
    """The output tiles of one launch in the order its CTAs take them: what the L2 model needs to say which
    panels of A and B one wave of tiles holds, and which of them the next wave finds still cached.

    A tile (a cluster's tile, with clusters) reads one row panel of A (``a_panel`` bytes: its rows over all of K)
    and one column panel of B (``b_panel``); the last row and column of tiles overhang the matrix's edge, and their
    panels hold only the rows (columns) left there: ``a_edge`` and ``b_edge`` bytes (None: as large as the others).
    A TMA load or a bounds check reads nothing past the edge, so a whole panel there would count bytes no level
    moves (at 17x33x4097 in 256x128 tiles, nearly eight times the operands' bytes, more than through L2).
    ``wave`` tiles run at once: a persistent grid's resident CTAs (clusters), or None for a grid of one CTA per
    tile, where the SMs' occupancy decides (the analysis counts it). With ``snake`` every other wave also walks K
    backwards (tc4's produce_ring), so it starts on what the last wave read last. The last ``split_tail`` tiles are
    split along K over every CTA (stream-K): a wave of their own.
    """

    tiles_m: int
    tiles_n: int
    a_panel: float
    b_panel: float
    tile_flops: float  # FLOPs of one tile, padded to whole tiles
    group_m: int = 1
    snake: bool = False
    wave: int | None = None
    sms_per_tile: int = 1  # SMs one tile runs on (a cluster's CTAs)
    split_tail: int = 0
    # whole tiles, each on one SM (cluster): the busiest SM's share of the arithmetic is ceil(tiles / places) of
    # them. False where the tiles are assumed (a library's, which may split K or pick other tiles per shape)
    quantized: bool = True
    a_edge: float | None = None
    b_edge: float | None = None

    @property
    def tiles(self) -> int:
        return self.tiles_m * self.tiles_n

    def a_bytes(self, rows) -> float:
        """Bytes of the row panels of A numbered ``rows``: the last one's rows at the edge."""
        edge = self.tiles_m - 1 in rows and self.a_edge is not None
        return len(rows) * self.a_panel - (self.a_panel - self.a_edge if edge else 0.0)

    def b_bytes(self, cols) -> float:
        """Bytes of the column panels of B numbered ``cols``: the last one's columns at the edge."""
        edge = self.tiles_n - 1 in cols and self.b_edge is not None
        return len(cols) * self.b_panel - (self.b_panel - self.b_edge if edge else 0.0)

    def order(self) -> list[tuple[int, int]]:
        return tile_walk(self.tiles_m, self.tiles_n, self.group_m, self.snake)


@dataclass(frozen=True)
class Traffic:
    """Modeled bytes one launch moves, per memory level.

    The seeds' view: ``global_read`` counts every load a thread (or a copy engine) issues to global memory, as
    if no cache absorbed any of it, ``global_write`` every store. The hierarchy beneath it: ``l2_read`` and
    ``l2_write`` are what crosses between the SMs and L2 (the global loads less what L1 serves: only the naive
    kernel's differ), ``l1`` the L1 requests where L1 serves re-reads (the naive kernel's sectors), ``smem`` the
    bytes read from and written to shared memory; ``walk`` is the tile order from which the analysis models what
    reaches DRAM (without one, each input is read from DRAM once), and ``prepass`` the DRAM bytes of a launch
    before the kernel (TF32's Bᵀ for tc2-tc4: B read, Bᵀ written; the kernel then reads Bᵀ as its B).
    """

    global_read: float
    global_write: float
    basis: str  # one line: where the numbers come from
    l2_read: float | None = None  # None: global_read
    l2_write: float | None = None  # None: global_write
    l1: float = 0.0
    smem: float = 0.0
    walk: TileWalk | None = None
    prepass: float = 0.0

    @property
    def total(self) -> float:
        return self.global_read + self.global_write

    @property
    def l2(self) -> float:
        """Bytes between the SMs and L2, both ways."""
        return (self.global_read if self.l2_read is None else self.l2_read) + \
            (self.global_write if self.l2_write is None else self.l2_write)

    def intensity(self, problem: Problem) -> float:
        return problem.flops() / self.total

    def with_copies(self, problem: Problem, copies) -> "Traffic":
        """This launch after gemmlab.matmul's row-major copies of ``copies`` ("A", "B"), made before it on every call
        of a layout the kernel does not read: each operand read and written once more, as a pre-pass."""
        if not copies:
            return self
        import dataclasses

        m, n, k = problem.shape
        moved = problem.prec.input_bytes * sum({"A": m * k, "B": k * n}[x] for x in copies)
        return dataclasses.replace(
            self, global_read=self.global_read + moved, global_write=self.global_write + moved,
            l2_read=None if self.l2_read is None else self.l2_read + moved,
            l2_write=None if self.l2_write is None else self.l2_write + moved, prepass=self.prepass + 2 * moved,
            basis=f"{self.basis}, plus the row-major copy of {' and '.join(copies)} before it")


def naive_traffic(problem: Problem, sm_count: int = SM_COUNT, bx: int = 32, by: int = 32,
                  rows_on_x: bool = False) -> Traffic:
    """One thread per C element, each reading a row of A and a column of B: 2MNK loads, the seeds' 8MNK bytes.

    Beneath that: a warp is 32 threads along a row of C (of ``bx``-wide blocks), so at each k it asks L1 for one
    sector of A (all lanes read the same element) and 128 contiguous bytes of B: 5 sectors of 32 bytes, 5MNK bytes
    in all. A sector of A serves the next 8 k from L1, and the block's warps read the same sector of B at about the
    same k, so L2 sees each block's rows of A and columns of B once: the traffic of ``by``×``bx`` tiles. With
    ``rows_on_x`` threadIdx.x walks M instead (blocks of ``bx`` rows by ``by`` columns): a warp's lanes read 32 rows
    of A, a sector each, and one element of B, 33 sectors per warp and k where the seeds' mapping asks for 5."""
    p = problem.prec
    m, n, k = problem.shape
    lanes = min(bx, 32)
    across = 32 // lanes  # rows (columns, with rows_on_x) of C one warp covers
    sector = 32
    contiguous = across * ceil_div(lanes * p.input_bytes, sector) * sector  # the lanes' consecutive elements
    if rows_on_x:  # a sector of A per lane (rows K apart), the warp's few columns of B in one row
        per_warp_k = lanes * sector + ceil_div(across * p.input_bytes, sector) * sector
        l1 = ceil_div(m, lanes) * ceil_div(n, across) * k * per_warp_k
    else:
        per_warp_k = across * sector + contiguous
        l1 = ceil_div(m, across) * ceil_div(n, lanes) * k * per_warp_k
    blocks = tiled_traffic(problem, bx, by) if rows_on_x else tiled_traffic(problem, by, bx)
    warp = f"{per_warp_k // sector} sectors per warp and k" + (": its lanes walk M" if rows_on_x else "")
    tile = f"{bx}x{by}" if rows_on_x else f"{by}x{bx}"
    return Traffic(p.input_bytes * 2 * m * n * k, problem.output_bytes * m * n,
                   "every thread reads its row of A and column of B: 2MNK elements; L1 serves each warp's "
                   f"re-reads ({warp}), L2 sees {tile} tiles",
                   l2_read=blocks.l2_read, l2_write=blocks.l2_write, l1=l1, walk=blocks.walk)


def tiled_traffic(problem: Problem, bm: int, bn: int, split_k: int = 1, warp: tuple[int, int] | None = None,
                  group_m: int = 1, snake: bool = False, wave: int | None = None, cluster: tuple[int, int] = (1, 1),
                  quantized: bool = True) -> Traffic:
    """A BM×BN output tile reads a BM×K panel of A and a K×BN panel of B once.

    A is then read ceil(N/BN) times and B ceil(M/BM) times: the seeds' tiled intensity
    2·BM·BN·BK / ((BM+BN)·BK·4) in the limit of large, exact tiles. Split-K adds a write and a read of each
    partial tile. With ``cluster`` = (CM, CN) CTAs sharing operands by multicast, A is read once per CN·BN
    columns and B once per CM·BM rows. ``warp`` = (WM, WN), a warp's (or a wgmma warpgroup's) share of the tile:
    at each k it reads WM values of A and WN of B from shared memory (lanes that share one get a broadcast),
    after the staging stores wrote each CTA's tiles there once. The (cluster) tiles are taken ``group_m`` rows at
    a time (1: row-major), with ``snake`` (see TileWalk), ``wave`` at once (None: as many as the SMs hold);
    ``quantized``: see TileWalk.
    """
    p = problem.prec
    m, n, k = problem.shape
    e = p.input_bytes
    cm, cn = cluster
    tiles_n, tiles_m = ceil_div(n, bn * cn), ceil_div(m, bm * cm)
    read = e * (m * k * tiles_n + k * n * tiles_m)
    write = problem.output_bytes * m * n
    shared = " (multicast in a cluster)" if cm * cn > 1 else ""
    basis = f"A read once per {bn * cn}-column tile, B once per {bm * cm}-row tile{shared}"
    smem = 0.0
    if warp is not None:
        wm, wn = warp
        smem = e * tiles_m * bm * cm * tiles_n * bn * cn * k * (1 / wm + 1 / wn + 1 / bm + 1 / bn)
        basis += f"; each {wm}x{wn} warp tile reads {wm}+{wn} values per k from shared memory"
    if split_k > 1:
        read += 4 * m * n * split_k
        write += 4 * m * n * split_k
        basis += f", {split_k} FP32 partial tiles written and reduced"
    # the panels of the last tile row and column: the rows and columns left at the matrix's edge
    a_edge, b_edge = e * (m - (tiles_m - 1) * bm * cm) * k, e * k * (n - (tiles_n - 1) * bn * cn)
    walk = TileWalk(tiles_m, tiles_n, e * bm * cm * k, e * k * bn * cn, 2 * bm * cm * bn * cn * k, group_m=group_m,
                    snake=snake, wave=wave, sms_per_tile=cm * cn, quantized=quantized, a_edge=a_edge, b_edge=b_edge)
    return Traffic(read, write, basis, l2_read=read, l2_write=write, smem=smem, walk=walk)


def compulsory_traffic(problem: Problem, sm_count: int = SM_COUNT) -> Traffic:
    p = problem.prec
    m, n, k = problem.shape
    return Traffic(p.input_bytes * (m * k + k * n), problem.output_bytes * m * n, "each input read once, C written once")


@dataclass(frozen=True)
class Instrumented:
    """A build with clock stamps: the spec that runs it, and what its mainloop would take at the tensor cores' rate."""

    spec: "KernelSpec"
    k_tile: int  # K elements per k-tile: the unit its mainloop stamps
    ideal_ktile_cycles: float


@dataclass(frozen=True, kw_only=True)
class KernelSpec:
    """Base of every kernel. Subclasses fill ``build``; most only pass arguments."""

    name: str  # "cuda/v2_smem": backend, then level and what changed
    backend: str  # cpu | cuda | numba | peer
    level: int | None  # ladder rung; the same number means the same algorithm in every backend
    precision: str  # fp32 | tf32 | bf16 | fp8 | fp8_block
    title: str  # one line: what this level does
    device: str = GPU
    params: Mapping[str, Any] = field(default_factory=dict)
    traffic_model: Callable[..., Traffic] = compulsory_traffic  # (problem, sm_count=SM_COUNT) -> Traffic
    int32_indices: bool = True  # element offsets computed in 32-bit ints
    max_flops: float | None = None  # refuse problems that would take minutes (CPU loops)
    doc: str = ""  # the module docstring: what changed, why, predicted gain
    # what the roofline leaves out where this kernel runs well below its predicted time (latency, occupancy, a
    # pipeline the levels do not count): the model's own reason, shown beside the prediction
    unmodeled: str = ""
    # the arithmetic units its multiply-adds run on where they are not its precision's own: (precision of the
    # units, their operations per multiply-add); tc7's FP32 products are three TF32 products each: ("tf32", 3)
    math: tuple[str, int] | None = None
    # why kernel="auto" never picks this kernel from a dispatch table though it may measure fastest (it is run only
    # when named); auto_refusal() adds the rule every TF32 build shares
    not_auto: str = ""
    # the registered kernel whose parameters this one changes (gemmlab bench --variant; gemmlab.harness.bench's
    # variant), else empty
    variant_of: str = ""
    # parameters a bench --variant may set on a level whose launch geometry and traffic model follow them (the
    # wgmma levels take all of theirs); a name not among ``params`` has a default in the source (an #ifndef)
    varies: tuple = ()
    # runs a BatchedProblem (a strided batch of products) in one launch, through its BATCHED=1 build (for_problem)
    batches: bool = False
    # a fused epilogue (gemmlab.epilogue.Epilogue: out = act(alpha·AB + beta·D)), None for C = AB; with_epilogue sets
    # it, with the addend's dtype, which selects its loads
    epilogue: Any = None
    addend_dtype: str | None = None
    # whether the kernel applies an epilogue in its store (the host kernels: after their GEMM)
    fuses_epilogue: bool = False

    @property
    def prec(self) -> Precision:
        return get_precision(self.precision)

    def auto_refusal(self) -> str:
        """Why kernel="auto" passes over this kernel ("" if it may pick it): its own reason, or, for TF32, a build
        that truncates FP32 to TF32, whose error is a multiple of cuBLAS's rounding to nearest (docs/accuracy.md), so a
        float32 call with TF32 on gets one rounding whichever kernel the shape and layout pick."""
        if self.not_auto:
            return self.not_auto
        if self.prec.tf32_multiply and not (self.params.get("TF32_ROUND", 0) or self.params.get("TMA_ROUND", 0)):
            return "truncates FP32 to TF32 (TF32_ROUND=0); kernel=\"auto\" runs TF32 rounded to nearest, as cuBLAS"
        return ""

    #: build parameters that pick a binary whose speed the scaling model does not see (gemv's accumulator rows:
    #: each row count its own registers, unroll and warps): kernel="auto" scales a measurement of this kernel only
    #: to problems that run the same values (``same_build``)
    unscaled_params: ClassVar[tuple] = ()

    def same_build(self, problem: Problem, measured: Problem, sm_count: int = SM_COUNT) -> bool:
        """Whether a measurement of this kernel at ``measured`` may be scaled to ``problem``: both run the same
        ``unscaled_params``."""
        if not self.unscaled_params:
            return True
        here, there = self.for_problem(problem, sm_count).params, self.for_problem(measured, sm_count).params
        return all(here.get(p) == there.get(p) for p in self.unscaled_params)

    def staged_operands(self, problem: Problem, layout) -> tuple[str, ...]:
        """The operands ("A", "B") this kernel's plan copies into a workspace of its own on every call to read them
        (a TMA level's rows off 16 bytes): none here. The dispatch model counts their bytes."""
        return ()

    def epilogue_refusal(self, epilogue) -> str:
        """Why this kernel cannot fuse ``epilogue`` ("" if it can, or if there is nothing to fuse)."""
        if epilogue is None or epilogue.is_identity or self.fuses_epilogue:
            return ""
        from gemmlab.errors import EpilogueError

        return Refusal(f"{self.name} has no fused epilogue: it stores C = AB as it is, so {epilogue.describe()} "
                       "would cost another launch; kernel='auto' picks a kernel that fuses it", EpilogueError)

    def with_epilogue(self, epilogue, addend_dtype: str | None = None) -> "KernelSpec":
        """This kernel with ``epilogue`` fused (its own binary), reading an addend of ``addend_dtype``."""
        import dataclasses

        if epilogue is None or epilogue.is_identity:
            return self
        why = self.epilogue_refusal(epilogue)
        if why:
            raise why.exception()
        return dataclasses.replace(self, epilogue=epilogue, addend_dtype=addend_dtype if epilogue.addend else None)

    def epilogue_defines(self) -> dict:
        """The epilogue's compile-time switches (gemmlab.epilogue.Epilogue.defines); none without one."""
        return {} if self.epilogue is None else self.epilogue.defines(self.addend_dtype)

    def peak_share(self) -> tuple[str, int]:
        """(the precision whose units do the arithmetic, how many of their operations one multiply-add takes)."""
        return self.math or (self.precision, 1)

    def __post_init__(self):
        reason = self.config_error()
        if reason:
            from gemmlab.errors import InvalidConfigError

            raise InvalidConfigError(f"{self.name}: {reason}")

    # -- validity -----------------------------------------------------------------------------------
    def config_error(self) -> str | None:
        """Why these parameters cannot make a correct kernel (checked before anything compiles)."""
        return None

    def is_valid(self, problem: Problem) -> Refusal | None:
        """None when this kernel can compute ``problem``; otherwise the reason it cannot (a Refusal: its text, and
        the error class that tells a caller)."""
        if problem.precision != self.precision:
            return Refusal(f"{self.name} computes {self.precision}, the problem asks for {problem.precision}",
                           DTypeError)
        if isinstance(problem, BatchedProblem) and not self.batches:
            return Refusal(f"{self.name} runs one product a launch, not a batch of {problem.batch} in one; "
                           "kernel=\"auto\" picks a level that does", LayoutError)
        if self.int32_indices:
            m, n, k = problem.shape
            worst = max(m * k, k * n, m * n)
            if worst > INT32_MAX:
                return Refusal(f"{problem.label()} has {worst} elements in one operand, past this kernel's 32-bit "
                               f"index range ({INT32_MAX})", SizeLimitError)
            if max(m, n, k) > INT32_MAX - INT32_ROUNDING:  # a dimension rounded up to whole tiles in an int
                return Refusal(f"{problem.label()}: a dimension past {INT32_MAX - INT32_ROUNDING} does not fit this "
                               "kernel's 32-bit index range once rounded up to whole tiles", SizeLimitError)
        if self.max_flops is not None and problem.flops() > self.max_flops:
            return Refusal(f"{problem.flops() / 1e9:.1f} GFLOP is past this kernel's limit of "
                           f"{self.max_flops / 1e9:.1f} GFLOP (it would run for minutes); a smaller problem or "
                           "another kernel", SizeLimitError)
        return None

    # -- capabilities the harness asks for (never by probing for attributes) -------------------------------
    #: CUDA C++ that gemmlab compiles with NVRTC: compile(arch) returns its cubin and ptxas report
    compiles: ClassVar[bool] = False

    def compile(self, arch: str = "sm_90a"):
        raise NotImplementedError(f"{self.name} is not compiled by gemmlab (it runs {self.backend} code)")

    def configurations(self) -> list["KernelSpec"]:
        """Every distinct binary this kernel can launch, each pinned (checks that must cover all of them, such as
        the sanitizer's, run each)."""
        return [self]

    def instrumented(self, problem: Problem, sm_count: int = 132):
        """The build that stamps where its cycles go (gemmlab timeline) for ``problem``, with the tensor cores'
        own cycles per k-tile of its tile: an ``Instrumented``, or None for a kernel without stamps."""
        return None

    def unsupported(self, gpu) -> str | None:
        """Why this kernel cannot run on ``gpu`` (a gemmlab.device.GPUInfo), or None."""
        return None

    def traffic(self, problem: Problem, sm_count: int = SM_COUNT, layout=None) -> Traffic:
        """Its bytes per level at ``problem``, the operands in ``layout`` (one it reads in place; None: its natural
        one): the same bytes in any layout, except where a layout spares a pre-pass (the TF32 wgmma levels' Bᵀ)."""
        if self.varies:  # its model follows the parameters a variant changes
            return self.traffic_model(problem, sm_count, params=dict(self.params))
        return self.traffic_model(problem, sm_count)

    def with_params(self, changes: dict, **fields) -> "KernelSpec":
        """This spec with ``changes`` to its parameters (and other ``fields`` replaced)."""
        import dataclasses

        return dataclasses.replace(self, params={**self.params, **changes}, **fields)

    # -- operands -----------------------------------------------------------------------------------
    def make_inputs(self, problem: Problem, seed: int = 0, xp=None):
        """A and B as this kernel reads them (what verification draws): the problem's, in this kernel's operand
        formats where a precision has several (FP8's e4m3 and e5m2)."""
        import numpy as np

        return problem.make_inputs(seed, np if xp is None else xp)

    def output_dtype(self, problem: Problem):
        """The dtype of the C this kernel writes."""
        return problem.output_dtype()

    def for_formats(self, a: str, b: str, out: str) -> "KernelSpec":
        """This kernel for A and B in dtypes ``a`` and ``b`` and C in ``out`` (dtype names); a kernel with one set
        of formats returns itself for those and refuses any other."""
        problem = Problem(1, 1, 1, self.precision)
        want = (problem.prec.input_dtype, problem.prec.input_dtype, str(self.output_dtype(problem)))
        if (a, b, out) != want:
            raise DTypeError(f"{self.name} takes {want[0]} A and B and writes {want[2]} C, not {a} A, {b} B and "
                             f"{out} C")
        return self

    def formats_refusal(self, a: str, b: str) -> Refusal | None:
        """Why this kernel has no build for A and B in dtypes ``a`` and ``b`` (None if it has one): kernel="auto"
        passes over it for such operands (the Gluon FP8 levels take e4m3 only, the CUDA ones e5m2 too)."""
        try:
            self.for_formats(a, b, self.prec.output_dtype)
        except DTypeError as e:
            return Refusal(str(e), DTypeError)
        return None

    def for_problem(self, problem: Problem, sm_count: int = SM_COUNT) -> "KernelSpec":
        """The spec that actually runs ``problem`` on a GPU of ``sm_count`` SMs: itself, except for kernels that pick
        parameters per shape (some by the GPU's SMs: the tiles that fill its waves, the splits of K)."""
        return self

    # -- running ------------------------------------------------------------------------------------
    def plan(self, problem: Problem, layout: Layout = ROW_MAJOR) -> Plan:
        """Resolve this kernel for ``problem`` once: compile, load, lay out parameters, allocate workspaces.

        ``layout`` must be one of ``self.layouts``. The plan's ``launch`` is the hot path; see kernels/plan.py.
        """
        raise NotImplementedError

    def build(self, problem: Problem) -> Callable[..., None]:
        """``run(A, B, C)`` for arrays already on the kernel's device (the harness's call): a plan's ``run``.

        A is M×K, B is K×N, C is M×N, all C-contiguous, in the precision's dtypes (FP8: gemmlab.fp8.Scaled
        operands, B stored N×K, and the plan reads B as that transpose). ``run`` only enqueues work (GPU kernels run
        on the current CuPy stream); the harness synchronizes and times.
        """
        return self.plan(problem, self.natural_layout(problem)).run

    @staticmethod
    def natural_layout(problem: Problem) -> Layout:
        """The layout the harness hands operands over in: row-major, B as N×K for FP8 (make_inputs)."""
        return Layout(b=COL) if problem.prec.kmajor_b else ROW_MAJOR

    @property
    def layouts(self) -> frozenset:
        """Operand layouts the kernel reads in place (kernels/plan.py); gemmlab.matmul copies any other."""
        return frozenset({ROW_MAJOR})

    def layout_refusal(self, layout: Layout) -> str:
        """Why operands given in ``layout`` are refused: none of ``layouts`` is reached by copying them row-major."""
        return (f"{self.name} reads {', '.join(sorted(x.label() for x in self.layouts))} in place, and a row-major "
                f"copy of {layout.label()} is none of them")

    def in_place_refusal(self, problem: Problem, layout: Layout) -> Refusal | None:
        """Why this kernel cannot read ``problem``'s operands in ``layout`` where it takes that layout, for this
        problem alone (a batch's row pitches); None where it can. A layout it reads only after a copy is
        ``layouts``' business, not this."""
        return None

    @property
    def simulable(self) -> bool:
        """True when the kernel can run under numba's CUDA simulator (Python kernels)."""
        return False

    @property
    def short(self) -> str:
        return self.name.split("/", 1)[1]


class ReadsWeightTransposed:
    """Mixed in before KernelSpec by a kernel that reads B only as the transpose of an N×K weight (x @ w.t(), what
    nn.Linear computes): that layout in place, and verification's operands drawn in it."""

    @property
    def layouts(self) -> frozenset:
        return frozenset({Layout(b=COL)})

    def natural_layout(self, problem: Problem) -> Layout:
        return Layout(b=COL)

    def make_inputs(self, problem: Problem, seed: int = 0, xp=None):
        """A (M×K) and B as the K×N transpose view of an N×K array; FP8 as gemmlab.fp8.Scaled operands (B stored
        N×K) in the kernel's formats."""
        import numpy as np

        xp = np if xp is None else xp
        if self.fp8:
            return problem.make_inputs(seed, xp, formats=self.formats)
        a, b = problem.make_inputs(seed, xp)
        return a, xp.ascontiguousarray(b.T).T
