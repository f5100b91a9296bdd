"""What compute-sanitizer racecheck makes of Triton 3.6's warp_specialize start and exit: kernels that bisect it,
each one launch of one CTA, run under the sanitizer by hand:

    compute-sanitizer --tool racecheck --racecheck-report all \\
        python -m gemmlab.harness.probes.ws_racecheck [VARIANT ...]

(every variant without arguments; ``--list`` names them and what each tests, without a GPU). Each variant prints
what it ran and what each worker warp read. Each kernel is named after its variant (level_tc3's is the level's,
tc3_warp_specialized), so racecheck's report says which variant each hazard is in.

Why: racecheck reports hazards in every warp-specialized Gluon level (and none in gluon/tc2), all between a worker
warp's read of its state byte at the top of Triton's switch loop and the default partition's stores of the start
and exit states, accesses that `barrier.sync 1` over the whole CTA orders by PTX's rules. Something in the code
Triton generates keeps racecheck from seeing that order, or the order is not what it seems; the variants bisect
the generated code, from the real thing down to the plain model of the protocol:

- ``level_tc3``: gluon/tc3 itself, one CTA (128×256×64): the reported hazards at their smallest.
- ``gluon_bare``, ``gluon_mbarrier`` (ws_gluon.py): Triton's protocol around partitions that touch no shared memory
  (bare), or share one mbarrier (the default arrives, the worker waits; Triton then adds the default partition's
  own `bar.sync 0, 128`). Hazards in gluon_bare: the protocol as Triton emits it is enough, no level code needed.
- ``copy_*``: ws_protocol.cu, a CUDA copy of the protocol as Triton compiles it for gluon/tc3 (8 default warps, 4
  workers in 3 partitions, the state word stored by every default thread, setmaxnreg at each partition's count,
  bar.sync 0 over the default partition, an mbarrier before the state bytes), ``copy_tc3`` with everything and
  each ``copy_tc3_no*`` without one part (``copy_tc3_ownbar2`` moves the default partition's own barrier from id 0
  to id 2; ``copy_tc3_balanced`` gives the workers, in one partition, a barrier of their own met as often as the
  default partition's, so that every warp has passed as many barriers at each barrier.sync 1: copy_tc3_onepart
  flagged and copy_tc3_balanced clean says racecheck loses the order where warps have passed different numbers of
  barriers); ``copy_tc8`` at tc8's shape (4 default warps, 12 workers in 5 partitions); ``copy_minimal`` with none
  of the parts (the plain model).
  copy_tc3 flagged and copy_minimal clean: the variant whose removed part makes it clean names what racecheck does
  not follow. copy_tc3 clean while gluon_bare or level_tc3 is flagged: the copy still lacks what matters; compare
  their SASS (the test compiles both).
- ``control``: the same states across __syncthreads() at one PC; it must be clean, or the run itself is suspect.

``level_state_accesses`` finds the state bytes' load and stores in each build of a level by their PCs, which racecheck
reports: by them ``gemmlab verify --sanitize`` tells these hazards from any other (harness/sweep.py).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

SOURCE = "ws_protocol.cu"
# the protocol as Triton 3.6 compiles it for gluon/tc3 at its registered parameters (BM=128: 8 consumer warps in the
# default partition; its 1 producer warp, warp 10, is partition 0, and Triton fills the rest of its warpgroup with
# two idle partitions, of warps 8-9 and 11; PRODUCER_REGS=40 for all three, CONSUMER_REGS=232; the state bytes after
# its 4 + 4 mbarriers at 196784); the CPU test holds these to the level
TC3 = {"DEFAULT_WARPS": 8, "WORKER_WARPS": 4, "PARTS": 3, "STATES": (1, 1, 0, 2), "PART_REGS": (40, 40, 40),
       "STATE": 196784, "REGS": 1, "REG_DEFAULT": 240, "REG_DEFAULT_PART": 232, "REG_LOW": 24, "WIDE": 1, "OWN_BAR": 1,
       "OWN_BAR_ID": 0, "MBAR": 1, "WORKER_BAR": 0}
# gluon/tc8's shape (BM=192: the default partition is one consumer warpgroup; the two others are partitions 0 and 1
# at 160 registers; the producer warp, warp 14, is partition 2, and two idle ones fill its warpgroup, all three at
# 32; the state bytes at 0x340e0, written by an STS.64 and an STS)
TC8 = {**TC3, "DEFAULT_WARPS": 4, "WORKER_WARPS": 12, "PARTS": 5, "STATES": (0, 0, 0, 0, 1, 1, 1, 1, 3, 3, 2, 4),
       "PART_REGS": (160, 160, 32, 32, 32), "STATE": 213216, "REG_DEFAULT": 256, "REG_DEFAULT_PART": 160,
       "REG_LOW": 80}
ONE_PART = {"PARTS": 1, "STATES": (0, 0, 0, 0), "PART_REGS": (40,)}
LEVEL = "gluon/tc3_warp_specialized_bf16"
LEVEL_SHAPE = (128, 256, 64)  # one tile of its 128x256, one CTA


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str  # "copy" (ws_protocol.cu), "control" (its control kernel), "gluon" (ws_gluon.py), "level"
    tests: str
    defines: dict = field(default_factory=dict)

    @property
    def threads(self) -> int:
        return 32 * (self.defines["DEFAULT_WARPS"] + self.defines["WORKER_WARPS"])

    @property
    def smem(self) -> int:
        """The dynamic shared memory that holds the state bytes (and the mbarrier before them)."""
        return -(-(self.defines["STATE"] + self.defines["WORKER_WARPS"]) // 16) * 16


def _copy(name: str, tests: str, shape: dict = TC3, **changes) -> Variant:
    return Variant(name, "copy", tests, {**shape, **changes, "ENTRY": name})


VARIANTS = {v.name: v for v in [
    Variant("level_tc3", "level", "the level itself, one CTA: the reported hazards at their smallest"),
    Variant("gluon_bare", "gluon", "Triton's protocol, partitions that touch no shared memory"),
    Variant("gluon_mbarrier", "gluon", "Triton's protocol, the worker waiting on an mbarrier the default arrives on"),
    _copy("copy_tc3", "the protocol as compiled for gluon/tc3, every part"),
    _copy("copy_tc3_noregs", "without setmaxnreg", REGS=0),
    _copy("copy_tc3_noownbar", "without the default partition's own bar.sync 0", OWN_BAR=0),
    _copy("copy_tc3_ownbar2", "the default partition's own barrier on id 2 instead of 0", OWN_BAR_ID=2),
    _copy("copy_tc3_nombar", "without the mbarrier", MBAR=0),
    _copy("copy_tc3_bytes", "the states stored a byte at a time instead of as words", WIDE=0),
    _copy("copy_tc3_onepart", "one worker partition: the workers meet barrier 1 at the same PCs", **ONE_PART),
    _copy("copy_tc3_balanced", "copy_tc3_onepart with the workers meeting a barrier of their own as often as the "
          "default partition meets its own", **ONE_PART, WORKER_BAR=1),
    _copy("copy_tc8", "every part, at gluon/tc8's shape (12 workers in 5 partitions)", TC8),
    _copy("copy_minimal", "none of the parts: byte stores, barrier.sync 1, one partition", **ONE_PART, REGS=0,
          OWN_BAR=0, MBAR=0, WIDE=0),
    Variant("control", "control", "the same hand-over across __syncthreads() at one PC", dict(TC3)),
]}


def select(names: list[str]) -> list[Variant]:
    """The variants named (all of them for none), refusing an unknown name with the known ones."""
    from gemmlab.errors import InvalidConfigError

    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise InvalidConfigError(f"no racecheck variant {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    return [VARIANTS[n] for n in names] if names else list(VARIANTS.values())


def describe(variant: Variant) -> str:
    """The line printed before a variant runs: what it runs and what it tests."""
    if variant.kind in ("copy", "control"):
        what = (f"{SOURCE}:{variant.name}, {variant.threads} threads, "
                + " ".join(f"{k}={str(v).replace(' ', '')}" for k, v in defines(variant).items() if k != "ENTRY"))
    elif variant.kind == "gluon":
        what = f"ws_gluon.py:{variant.name}, compiled by Triton for sm_90a"
    else:
        what = f"{LEVEL} at {'x'.join(map(str, LEVEL_SHAPE))}"
    return f"{variant.name}: {variant.tests} [{what}]"


def worker_reads(out: list[int], workers: int) -> dict:
    """ws_protocol.cu's output as a dict: whether the default partition ran, each worker warp's
    partition and the states it read (its partition, then the exit state)."""
    return {"default ran": out[0] == 1, "partition": out[1:1 + workers],
            "states read": [tuple(out[1 + workers + 2 * w:3 + workers + 2 * w]) for w in range(workers)]}


# ---- running (on the GPU) -------------------------------------------------------------------------------------------
def defines(variant: Variant) -> dict:
    """ws_protocol.cu's defines: a list as C's initializer list."""
    return {k: ", ".join(map(str, v)) if isinstance(v, tuple) else v for k, v in variant.defines.items()}


def compile_copy(variant: Variant, arch: str = "sm_90a"):
    from gemmlab.kernels.cuda.launch.nvrtc import compile_cuda

    return compile_cuda(SOURCE, variant.name, defines(variant), arch)


def compile_gluon(variant: Variant):
    """Triton's CompiledKernel of a Gluon variant for sm_90a (no GPU needed)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from gemmlab.harness.probes import ws_gluon
    from gemmlab.kernels.gluon.launch.kernel import ARCH

    source = GluonASTSource(fn=ws_gluon.KERNELS[variant.name], signature={"out_ptr": "*i32"}, constexprs={})
    return triton.compile(source, target=GPUTarget("cuda", ARCH, 32),
                          options={"num_warps": ws_gluon.DEFAULT_WARPS, "maxnreg": ws_gluon.MAXNREG})


def run(variant: Variant) -> dict:
    """One launch of ``variant``, synchronized; what it wrote: for the copies, worker_reads; for the Gluon kernels,
    each partition's mark (1 and 2 where both ran); for the level, whether C came out zero (A and B are)."""
    import cupy

    from gemmlab.device import require_gpu
    from gemmlab.kernels.gluon.launch.kernel import triton_refusal

    gpu = require_gpu("the racecheck probe")
    why = triton_refusal(variant.name) if variant.kind in ("gluon", "level") else None
    if why:
        raise why.exception()
    stream = cupy.cuda.get_current_stream()
    if variant.kind == "level":
        from gemmlab.kernels.registry import get_kernel
        from gemmlab.problem import Problem

        m, n, k = LEVEL_SHAPE
        spec = get_kernel(LEVEL)
        plan = spec.plan(Problem(m, n, k, spec.precision))
        a, b, c = (cupy.zeros(shape, cupy.uint16) for shape in ((m, k), (k, n), (m, n)))  # BF16 zeros
        c.fill(0xFFFF)  # a NaN: the store must overwrite it
        plan.launch(a.data.ptr, b.data.ptr, c.data.ptr, stream.ptr)
        stream.synchronize()
        return {"C all zero": not bool(c.any())}
    if variant.kind == "gluon":
        out = cupy.zeros(2, cupy.int32)
        compile_gluon(variant)[(1, 1, 1)](out.data.ptr, stream=stream.ptr)  # Triton takes a pointer as an int
        stream.synchronize()
        return {"partitions' marks": out.get().tolist()}
    from gemmlab.kernels.cuda.launch.nvrtc import launch, load_kernel

    workers = variant.defines["WORKER_WARPS"]
    out = cupy.full(1 + 3 * workers, -1, cupy.int32)
    kernel = load_kernel(compile_copy(variant, gpu.arch), variant.smem)
    launch(kernel, (1, 1, 1), (variant.threads, 1, 1), (out.data.ptr,), variant.smem, stream)
    stream.synchronize()
    return worker_reads(out.get().tolist(), workers)


# ---- the protocol's state accesses in a level's compiled code (what verify --sanitize tells its hazards by) ----------
@dataclass(frozen=True)
class StateAccesses:
    """The PCs of Triton's warp_specialize state bytes' accesses in one compiled build, as offsets from the kernel's
    entry (as compute-sanitizer reports them): the worker loop's load of a warp's byte, and the default partition's
    stores of the start states and of the exit state."""
    loads: frozenset
    starts: frozenset
    exits: frozenset

    def protocol(self, read: int, write: int) -> bool:
        """Whether a hazard between a read at ``read`` and a write at ``write`` is a state load against a state store:
        the protocol's hand-over, which racecheck reports without following its `barrier.sync 1` (docs/gluon.md)."""
        return read in self.loads and write in self.starts | self.exits

    def describe(self) -> str:
        return ", ".join(f"{what} {'/'.join(f'+{pc:#x}' for pc in sorted(pcs))}"
                         for what, pcs in (("load", self.loads), ("start", self.starts), ("exit", self.exits)))


def cuda_tool(name: str) -> str | None:
    """A CUDA binary on PATH, or from the nvidia-cuda-* wheel that ships it (nvidia-cuda-nvdisasm, -cuobjdump)."""
    import shutil
    from pathlib import Path

    found = shutil.which(name)
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        return None
    for root in nvidia.__path__:
        for candidate in Path(root).glob(f"cu*/bin/{name}"):
            return str(candidate)
    return None


_SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?(\S+)\s*(.*?)\s*;")
_IMMEDIATE = re.compile(r"\[(?:[^\]]*\+)?(0x[0-9a-f]+)\]")


def state_accesses_in(listing: str, entry: str, state: int, default_warps: int, workers: int) -> StateAccesses:
    """The state accesses in nvdisasm's listing of ``entry``, whose state bytes (one a worker warp) are at ``state``
    in shared memory: the loads of a byte there (a worker warp at its index among all warps, so ``state`` less the
    default partition's warps plus the index, folded into the offset or not), and the stores into them, split at
    the barriers between them: the first run the start states, the others the exit state."""
    code = re.split(r"\.section\s+\.text\.(\w+)", listing)
    instrs = [(int(m.group(1), 16), m.group(2), m.group(3)) for name, text in zip(code[1::2], code[2::2])
              if name == entry for m in _SASS_LINE.finditer(text)]

    def offset(args: str) -> int | None:
        m = _IMMEDIATE.search(args)
        return int(m.group(1), 16) if m else None

    loads, runs = set(), [[]]
    for pc, op, args in instrs:
        kind = op.split(".")[0]
        if kind == "LDS" and state - default_warps <= (offset(args.split(", ", 1)[-1]) or -1) < state + workers:
            loads.add(pc)
        elif kind == "STS" and state <= (offset(args.split(",")[0]) or -1) < state + workers:
            runs[-1].append(pc)
        elif kind == "BAR" and runs[-1]:
            runs.append([])
    runs = [run for run in runs if run]
    return StateAccesses(frozenset(loads), frozenset(runs[0] if runs else ()),
                         frozenset(pc for run in runs[1:] for pc in run))


def disassemble(cubin: bytes) -> str:
    """nvdisasm's listing of ``cubin``; MissingDependencyError without nvdisasm."""
    import os
    import subprocess
    import tempfile

    from gemmlab.errors import MissingDependencyError

    tool = cuda_tool("nvdisasm")
    if tool is None:
        raise MissingDependencyError("nvdisasm is not on PATH (python3 -m pip install nvidia-cuda-nvdisasm ships it)")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        return subprocess.run([tool, path], capture_output=True, text=True, check=True).stdout


def level_state_accesses(spec) -> list[StateAccesses]:
    """Each build of the Gluon level ``spec`` that ``gemmlab verify --sanitize`` runs (its configurations: every
    tile width and C type), compiled as it runs (Triton for sm_90a, no GPU needed): the state accesses of
    warp_specialize's protocol in its SASS, where Triton puts them, the last bytes of the kernel's shared memory;
    none for a build without worker warps. MissingDependencyError without the Triton it is written for or nvdisasm;
    ValueError where a warp-specialized build's loads or stores are not found as this reads them."""
    found = []
    for build in spec.configurations():
        compiled = build.gluon_compile()
        md = compiled.metadata
        workers = md.num_warps - build.num_warps
        if workers <= 0:
            continue
        state = md.shared - workers
        got = state_accesses_in(disassemble(compiled.asm["cubin"]), md.name, state, build.num_warps, workers)
        if not (got.loads and got.starts and got.exits):
            raise ValueError(f"{spec.name} {dict(build.params)}: warp_specialize's state accesses at shared "
                             f"{state:#x} not found in its SASS ({got.describe() or 'none'})")
        found.append(got)
    return found


def main(argv: list[str] | None = None) -> int:
    from gemmlab.errors import GemmlabError

    argv = sys.argv[1:] if argv is None else argv
    try:
        variants = select([a for a in argv if a != "--list"])
        for variant in variants:
            print(describe(variant), flush=True)
            if "--list" not in argv:
                print(f"  {variant.name} wrote {run(variant)}", flush=True)
    except GemmlabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
