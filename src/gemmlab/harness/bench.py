"""The benchmark: verify, then time, every selected kernel at every shape, with its peer in the same run.

With a GPU: each kernel is verified on fresh inputs (own seed, NaN-poisoned C, float64 reference), then timed
with events over rotating input sets; cuBLAS at the kernel's precision is timed in the same run and every ratio
is against it. A kernel that fails verification is reported FAILED and not timed. Without a GPU: CPU kernels are
timed at a CPU-sized shape, CUDA C kernels compiled for sm_90a (ptxas report), numba kernels verified under the
CUDA simulator at small ragged shapes, and every GPU kernel's roofline model computed for the named GPU.

``run_bench`` tells a ``Listener`` what starts and hands it each table as soon as its records are complete, so the
CLI prints while the run goes on. The GPU run is in bench_gpu, the run without one in bench_host, each kernel's
record (verified, timed, linked to its peer) in bench_records, the Listener in bench_progress. A run writes its
results only; the dispatch table of kernel="auto" is written from them by ``gemmlab dispatch --write``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gemmlab.analysis.roofline import DeviceSpec, device_spec, gpu_spec
from gemmlab.errors import InvalidConfigError
from gemmlab import device
from gemmlab.harness import env
from gemmlab.harness.bench_gpu import run_gpu
from gemmlab.harness.bench_host import ARCH, CPU_SHAPE, kind_without_gpu, run_cpu_only, shapes_text
from gemmlab.harness.bench_progress import GpuProgress, Listener
from gemmlab.harness.bench_records import FALLBACK_PEERS, PEERS
from gemmlab.harness.record import BenchRecord
from gemmlab.harness.roof_probes import measure_ceilings
from gemmlab.harness.timing import BlockOptions, TimingOptions
from gemmlab.harness.verify import SIMULATOR_SHAPES
from gemmlab.kernels.registry import list_kernels
from gemmlab.kernels.spec import CPU, KernelSpec
from gemmlab.problem import SEED_SHAPE

__all__ = ["BenchOptions", "Listener", "plan", "run_bench", "selected", "variant", "PEERS", "FALLBACK_PEERS"]


@dataclass
class BenchOptions:
    shapes: list = field(default_factory=list)  # (M, N, K); empty: seed shape on a GPU, CPU_SHAPE without
    kernels: str | None = None  # glob(s); None: all
    timing: TimingOptions = field(default_factory=TimingOptions)
    seed: int = 2026
    gpu: str = "h200"  # roofline device when there is no GPU to ask
    pause_s: float = 0.3  # idle between kernels so one kernel's heat does not tax the next
    ceilings: bool = True
    sim_shapes: tuple = SIMULATOR_SHAPES[:3]
    blocks: BlockOptions | None = None  # also time each GPU kernel and its peer in alternating blocks
    # (kernel, {parameter: value}): registered kernels with some parameters changed, run beside them (variant())
    variants: tuple = ()
    layout: object = None  # a plan.Layout the operands are handed over in (harness/layouts.py); None: the natural one
    peers: bool = True  # on a GPU, each precision's peer in the same run
    # (spec, problem) -> why not to time this kernel at this shape ("" to time it): a grid run's pruning (grid.py)
    skip: object = None


def plan(opts: BenchOptions, info, why: str, dev: DeviceSpec, specs: list[KernelSpec] | None = None) -> str:
    """What this run does on this machine, said before it starts and kept in the results' notes. ``specs``: the
    kernels selected, where known; without them every kind of kernel is named."""
    t = opts.timing
    if info is not None:
        return (f"every kernel verified, then timed at {shapes_text(opts.shapes or [SEED_SHAPE])} (up to {t.repeat} "
                f"launches or {t.max_seconds:g} s each, {'cold' if t.cold_l2 else 'warm'} L2), against cuBLAS at its "
                "precision in the same run")
    kinds = {kind_without_gpu(s) for s in specs} if specs is not None else {"cpu", "compiled", "simulator", "gpu"}
    does = []
    if "cpu" in kinds:
        does.append(f"times the CPU kernels at {shapes_text(opts.shapes or [CPU_SHAPE])}")
    if "compiled" in kinds:
        does.append(f"compiles the CUDA C kernels for {ARCH} (registers, spills, shared memory)")
    if "simulator" in kinds:
        does.append(f"runs the numba kernels on the CUDA simulator at {shapes_text(opts.sim_shapes)}")
    if kinds - {"cpu"}:
        does.append(f"models the GPU kernels on the {dev.name} roofline at {shapes_text(opts.shapes or [SEED_SHAPE])}")
    text = f"No CUDA GPU: {why}. GPU kernels are not timed; this run " + ", ".join(does)
    return text + ("; the peers need a GPU." if "gpu" in kinds else ".")


def variant(name: str, changes: dict) -> KernelSpec:
    """Registered kernel ``name`` with the parameters in ``changes`` set: KERNEL[NAME=V,...] (those it already
    has dropped), checked by the kernel's own constraints as a
    registered configuration is, its records marked ``variant_of`` (and timed interleaved with the registered
    parameters in the same run, ``variant_gain``); gemmlab.matmul's dispatch never runs one. The wgmma levels,
    whose launch and traffic model follow their parameters (WgmmaKernel.traffic), and the parameters another level
    names in its ``varies`` (the seed levels' block and tile, V1's thread mapping); the numba levels compile
    their registered tiling, the tuned levels take the tuned table's, and the other FFMA levels' models keep the
    registered tile."""
    from gemmlab.kernels.cuda.tc.model.fp8 import FP8_OPTIONS
    from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
    from gemmlab.kernels.registry import get_kernel

    base = get_kernel(name)
    if not isinstance(base, WgmmaKernel) and not base.varies:
        named = ", ".join(f"{s.name} ({' '.join(s.varies)})" for s in list_kernels() if s.varies)
        raise InvalidConfigError(f"{name}: --variant takes the wgmma levels (cuda/tc2 up), whose launch and traffic "
                                 f"model follow their parameters, and the parameters other levels name: {named}")
    allowed = base.params if isinstance(base, WgmmaKernel) else base.varies
    unknown = [k for k in changes if k not in allowed]
    if unknown and not isinstance(base, WgmmaKernel):
        raise InvalidConfigError(f"{name}: --variant may set {', '.join(base.varies)}, not {', '.join(unknown)}")
    if unknown:
        raise InvalidConfigError(f"{name} has no parameter {', '.join(unknown)}; its parameters: "
                                 + " ".join(f"{k}={v}" for k, v in base.params.items()))
    formats = [k for k in changes if k in FP8_OPTIONS]
    if formats:
        raise InvalidConfigError(f"{name}: {', '.join(formats)} choose operand formats or C's type, which a call's "
                                 "dtypes pick (gemmlab.matmul), not a variant timed on the registered ones")
    changed = {k: v for k, v in changes.items() if v != base.params.get(k, 0)}  # an unregistered one defaults to 0
    # a level that picks its tile height per problem (short_tile): a variant is pinned to the parameters it names,
    # so naming the registered BM alone times the registered height everywhere
    pinned = {"short_tile": None} if getattr(base, "short_tile", None) else {}
    if not changed and pinned and "BM" in changes:
        changed = {"BM": changes["BM"]}
    if not changed:
        raise InvalidConfigError(f"{name}: {', '.join(f'{k}={v}' for k, v in changes.items())} is what it has "
                                 "registered; a variant changes at least one parameter")
    label = ",".join(f"{k}={v}" for k, v in changed.items())
    spec = base.with_params(changed, name=f"{name}[{label}]", variant_of=name,
                            not_auto=f"a parameter variant of {name}, run only by gemmlab bench --variant", **pinned)
    if isinstance(spec, WgmmaKernel) and spec.whole_tiles:
        spec.without_stream_k()  # its constraints, checked now rather than at the first shape it runs unsplit
    return spec


def selected(opts: BenchOptions) -> list[KernelSpec]:
    """The kernels a run covers: those --kernels names (all without it) and the variants with their registered
    kernels, and on a GPU every precision's peer."""
    from gemmlab.kernels.registry import get_kernel, select

    binaries: dict = {}  # one variant of each binary, however its changes are spelled: the first
    for name, changes in opts.variants:
        v = variant(name, changes)
        if opts.layout is None and getattr(v, "exchanges", False):  # its own layout only: the yardstick's must match
            raise InvalidConfigError(f"{v.name} reads B as the transpose of an N×K matrix only; pass --layout row,col "
                                     f"so that {name} is timed on the same operands beside it")
        binaries.setdefault((v.variant_of, tuple(sorted(v.params.items()))), v)
    variants = list(binaries.values())
    # variants alone run beside their registered kernels only
    if opts.kernels:
        specs = select(opts.kernels)
    else:
        specs = [] if variants else list_kernels()
    names = {s.name for s in specs}
    for v in variants:
        if v.variant_of not in names:  # the registered parameters in the same run, the variant's yardstick
            specs.append(get_kernel(v.variant_of))
            names.add(v.variant_of)
    specs += variants
    names |= {v.name for v in variants}
    if device.gpu() is None or not opts.peers:
        return specs  # peers need a GPU; the CPU-only note says so
    precisions = {s.precision for s in specs if s.device != CPU}
    for precision in precisions | {FALLBACK_PEERS[p] for p in precisions if p in FALLBACK_PEERS}:
        if PEERS[precision] not in names:
            specs.append(next(s for s in list_kernels() if s.name == PEERS[precision]))
            names.add(PEERS[precision])
    return specs


def run_bench(opts: BenchOptions, listener: Listener | None = None) -> dict:
    listener = listener or Listener()
    records: list[BenchRecord] = []  # typed while the run fills them; the results hold their JSON
    info, why = device.probe()
    specs = selected(opts)
    mode = "gpu" if info else "cpu-only"
    dev = gpu_spec(info) if info else device_spec(opts.gpu)
    results = {"env": env.collect(info, mode), "records": [], "notes": [], "noise": []}
    results["env"]["device_spec"] = dev.as_dict()
    results["env"]["options"] = {"repeat": opts.timing.repeat, "min_repeat": opts.timing.min_repeat,
                                 "cold_l2": opts.timing.cold_l2, "seed": opts.seed, "kernels": opts.kernels,
                                 "blocks": opts.blocks.__dict__ if opts.blocks else None}
    if info is None:
        results["notes"].append(plan(opts, info, why, dev, specs))
        run_cpu_only(specs, opts, dev, records, listener)
        results["records"] = [r.to_json() for r in records]
        return results
    bw = None
    if opts.ceilings:
        listener.step("measuring the roofs: DRAM, L2, shared memory, arithmetic, cuBLAS FP32 at 8192³", 0, 0)
        results["env"]["ceilings"] = measure_ceilings()
        bw = results["env"]["ceilings"]["dram_gbs"]  # the faster of the copy and the read stream: the DRAM roof
    shapes = opts.shapes or [SEED_SHAPE]
    run_gpu(specs, shapes, opts, dev, bw, info, records, results, GpuProgress(listener, records, specs))
    results["records"] = [r.to_json() for r in records]
    return results
