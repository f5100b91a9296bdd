"""The benchmark: verify, then time, every selected kernel at every shape, with its peer in the same run.

With a GPU: each kernel is verified on fresh inputs (own seed, NaN-poisoned C, float64 reference), then timed
with events over rotating input sets; cuBLAS at the kernel's precision is timed in the same run and every ratio
is against it. A kernel that fails verification is reported FAILED and not timed. Without a GPU: CPU kernels are
timed at a CPU-sized shape, CUDA C kernels compiled for sm_90a (ptxas report), numba kernels verified under the
CUDA simulator at small ragged shapes, and every GPU kernel's roofline model computed for the named GPU.

``run_bench`` tells a ``Listener`` what starts and hands it each table as soon as its records are complete, so the
CLI prints while the run goes on.
"""
from __future__ import annotations

import os
import time
import zlib
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

from gemmlab.analysis.roofline import DeviceSpec, at_clock, ceilings_for, device_spec, model
from gemmlab.errors import CompileError, GemmlabError, InvalidConfigError, SizeLimitError
from gemmlab import device
from gemmlab.harness import env
from gemmlab.harness.ceilings import measure_ceilings, stored_ceilings
from gemmlab.harness.record import BenchRecord, Status
from gemmlab.harness.reference import tolerance_for
from gemmlab.harness.timing import (BlockOptions, TimingOptions, rotation_sets, time_blocks, time_cpu, time_gpu,
                                    time_interleaved)
from gemmlab.harness.verify import SIMULATOR_SHAPES, check
from gemmlab.kernels.registry import list_kernels
from gemmlab.kernels.spec import CPU, KernelSpec
from gemmlab.problem import SEED_SHAPE, Problem, get_precision

CPU_SHAPE = (256, 384, 512)  # the seed shape divided by 8: V0 runs it in well under a second
ARCH = "sm_90a"  # what CUDA C kernels are compiled for without a GPU to ask
# below this GPU time a call's host time can bind a caller, so records carry it (call_host_us); far above any call's
HOST_BOUND_MS = 0.1
PEERS = {"fp32": "peers/cublas_fp32", "tf32": "peers/cublas_tf32", "bf16": "peers/cublas_bf16",
         "fp8": "peers/cublaslt_fp8", "fp8_block": "peers/cublaslt_fp8_block"}
# Where a precision's peer cannot run (a torch without blockwise scaled matmul), the ratio is taken against this
# precision's peer at the same shape, from the two's own medians, and the record says so.
FALLBACK_PEERS = {"fp8_block": "fp8"}


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


class Listener:
    """What run_bench says as it works; the CLI prints it as it comes, tests record it. These defaults say nothing."""

    def step(self, label: str, done: int, total: int) -> None:
        """``label`` (a kernel and what it runs at) starts; ``done`` of ``total`` steps are finished."""

    def table(self, kind: str, title: str, records: list[dict]) -> None:
        """The finished records of one table. ``kind``: "timed" (a GPU run: one table per shape and precision)
        or, without a GPU, "cpu" (timed on the host), "compiled" (NVRTC's report), "simulator" or "model"."""


def shapes_text(shapes) -> str:
    return ", ".join("×".join(map(str, s)) for s in shapes)


def _kind(spec: KernelSpec) -> str:
    """What a machine without a GPU does with ``spec``: time it on the host, compile it, run it on the simulator, or
    nothing ("gpu": a peer)."""
    if spec.device == CPU:
        return "cpu"
    if spec.simulable:
        return "simulator"
    return "compiled" if spec.compiles else "gpu"


def plan(opts: BenchOptions, info, why: str, dev: DeviceSpec, specs: list[KernelSpec] | None = None) -> str:
    """What this run does on this machine, said before it starts and kept in the results' notes. ``specs``: the
    kernels selected, where known; without them every kind of kernel is named."""
    t = opts.timing
    if info is not None:
        return (f"every kernel verified, then timed at {shapes_text(opts.shapes or [SEED_SHAPE])} (up to {t.repeat} "
                f"launches or {t.max_seconds:g} s each, {'cold' if t.cold_l2 else 'warm'} L2), against cuBLAS at its "
                "precision in the same run")
    kinds = {_kind(s) for s in specs} if specs is not None else {"cpu", "compiled", "simulator", "gpu"}
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


def kernel_seed(base: int, name: str, shape) -> int:
    """Fresh, reproducible inputs per kernel and shape."""
    return base + zlib.crc32(f"{name}:{shape}".encode()) % 100_000


def variant(name: str, changes: dict) -> KernelSpec:
    """Registered kernel ``name`` with the parameters in ``changes`` set: KERNEL[NAME=V,...] (those it already
    has dropped), checked by the kernel's own constraints as a
    registered configuration is, its records marked ``variant_of`` (and timed interleaved with the registered
    parameters in the same run, ``variant_gain``); gemmlab.matmul's dispatch never runs one. The wgmma levels
    only: their launch and traffic model follow their parameters (WgmmaKernel.traffic), where the numba levels
    compile their registered tiling, the tuned levels take the tuned table's, and the FFMA levels' models keep the
    registered tile."""
    from gemmlab.kernels.cuda.tc.model.fp8 import FP8_OPTIONS
    from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
    from gemmlab.kernels.registry import get_kernel

    base = get_kernel(name)
    if not isinstance(base, WgmmaKernel):
        raise InvalidConfigError(f"{name}: --variant takes the wgmma levels (cuda/tc2 up), whose launch and traffic "
                                 "model follow their parameters")
    unknown = [k for k in changes if k not in base.params]
    if unknown:
        raise InvalidConfigError(f"{name} has no parameter {', '.join(unknown)}; its parameters: "
                                 + " ".join(f"{k}={v}" for k, v in base.params.items()))
    formats = [k for k in changes if k in FP8_OPTIONS]
    if formats:
        raise InvalidConfigError(f"{name}: {', '.join(formats)} choose operand formats or C's type, which a call's "
                                 "dtypes pick (gemmlab.matmul), not a variant timed on the registered ones")
    changed = {k: v for k, v in changes.items() if v != base.params[k]}
    if not changed:
        raise InvalidConfigError(f"{name}: {', '.join(f'{k}={v}' for k, v in changes.items())} is what it has "
                                 "registered; a variant changes at least one parameter")
    label = ",".join(f"{k}={v}" for k, v in changed.items())
    spec = base.with_params(changed, name=f"{name}[{label}]", variant_of=name,
                            not_auto=f"a parameter variant of {name}, run only by gemmlab bench --variant")
    if spec.whole_tiles:
        spec.without_stream_k()  # its constraints, checked now rather than at the first shape it runs unsplit
    return spec


def selected(opts: BenchOptions) -> list[KernelSpec]:
    """The kernels a run covers: those --kernels names (all without it) and the variants with their registered
    kernels, and on a GPU every precision's peer."""
    from gemmlab.kernels.registry import get_kernel, select

    binaries: dict = {}  # one variant of each binary, however its changes are spelled: the first
    for name, changes in opts.variants:
        v = variant(name, changes)
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
    if device.gpu() is None:
        return specs  # peers need a GPU; the CPU-only note says so
    precisions = {s.precision for s in specs if s.device != CPU}
    for precision in precisions | {FALLBACK_PEERS[p] for p in precisions if p in FALLBACK_PEERS}:
        if PEERS[precision] not in names:
            specs.append(next(s for s in list_kernels() if s.name == PEERS[precision]))
            names.add(PEERS[precision])
    return specs


def _record(spec: KernelSpec, problem: Problem, dev: DeviceSpec, bw_gbs: float | None) -> BenchRecord:
    # the roofs: this GPU's last measured ceilings where `gemmlab roofline --measure` stored some, with the copy
    # bandwidth this run measured; the clock is the maximum until the timing says which one the run held
    km = model(spec, problem, stored_ceilings(ceilings_for(dev, bw_gbs)))
    return BenchRecord(spec.name, spec.backend, spec.level, spec.precision, spec.title,
                       dict(spec.for_problem(problem).params), problem.m, problem.n, problem.k,
                       tolerance=tolerance_for(problem), model=km.as_dict(),
                       peer=PEERS.get(spec.precision) if spec.device != CPU else "cpu/blas",
                       variant_of=spec.variant_of or None)


def _fill_timing(rec: BenchRecord, timing, problem: Problem, dev: DeviceSpec, bw_gbs: float | None,
                 spec: KernelSpec) -> None:
    rec.update(timing.summary())
    clock = (rec.clock or {}).get("median_mhz")
    if clock:
        rec.model = at_clock(rec.model, clock)
    seconds = rec.median_ms / 1e3
    rec.tflops = problem.flops() / seconds / 1e12
    rec.gflops = rec.tflops * 1e3
    bw = (bw_gbs or dev.dram_gbs) * 1e9
    if rec.backend != "cpu":
        units, ops = spec.peak_share()  # against the units that do its arithmetic (tc7: TF32, three per product)
        rec.pct_peak = 100 * rec.tflops * ops / dev.peak_tflops(units)
        # The seeds' "bandwidth utilization": modeled global bytes per second over DRAM bandwidth. Past 100%
        # means caches served the re-reads the model counts (the naive kernel's case).
        rec.bw_util_model = 100 * (rec.model["modeled_read_bytes"] + rec.model["modeled_write_bytes"]) / seconds / bw
        rec.bw_util_compulsory = 100 * problem.compulsory_bytes() / seconds / bw


def _verify_fill(rec: BenchRecord, result) -> bool:
    if result.error is None:
        rec.fail(Status.ERROR, result.reason)
        return False
    e = result.error
    rec.update({"rel_err": e.rel_err, "max_abs_err": e.max_abs_err, "tolerance": e.tolerance, "verified": e.passed})
    if e.recipe_err is not None:
        rec.update({"recipe_err": e.recipe_err, "recipe_tolerance": e.recipe_tolerance})
    if not e.passed:
        rec.fail(Status.FAILED, f"{e.nonfinite} non-finite outputs" if e.nonfinite else
                 f"rel err {e.rel_err:.2e} > tolerance {e.tolerance:.1e}" if e.rel_err > e.tolerance else
                 f"recipe measure {e.recipe_err:.2e} > {e.recipe_tolerance:.0e} against the unquantized product")
    return e.passed


def _link_ratios(records: list[BenchRecord]) -> None:
    """peer_ratio = peer time / kernel time at the same precision and shape, from the interleaved timing of the
    two where the run made one, else from their own medians (against FALLBACK_PEERS' peer where the precision's
    own did not run, with a ``peer_note``); speedup over the previous level of the same backend and precision present
    in the run; a variant's speedup over its registered kernel (variant_gain), from the two interleaved where the
    run timed them so, else from their own medians."""
    by_key = {(r.kernel, r.shape): r for r in records}
    for r in records:
        if r.median_ms is None:
            continue
        peer = by_key.get((r.peer, r.shape))
        fallback = FALLBACK_PEERS.get(r.precision)
        stand_in = by_key.get((PEERS[fallback], r.shape)) if fallback else None
        if stand_in and stand_in.median_ms and r.backend != "peer" and not (peer and peer.median_ms):
            why = peer.reason if peer else "not in this run"
            r.peer, peer = PEERS[fallback], stand_in
            r.peer_note = (f"{PEERS[r.precision]} did not run ({why}): the ratio is against {r.peer}, {fallback} "
                           "with per-tensor scales, from the two's own medians")
        if peer and peer.median_ms and peer is not r:
            paired = r.interleaved
            r.peer_ratio = paired["peer_ms"] / paired["kernel_ms"] if paired else peer.median_ms / r.median_ms
        base = by_key.get((r.variant_of, r.shape)) if r.variant_of else None
        if r.variant_interleaved:
            r.variant_gain = r.variant_interleaved["registered_ms"] / r.variant_interleaved["kernel_ms"]
        elif base and base.median_ms:
            r.variant_gain = base.median_ms / r.median_ms
        if r.level is None or r.variant_of:
            continue
        below = [q for q in records if q.backend == r.backend and q.precision == r.precision and not q.variant_of
                 and q.shape == r.shape and q.level is not None and q.level < r.level and q.median_ms]
        if below:
            prev = max(below, key=lambda q: (q.level, -q.median_ms))
            r.speedup_prev = prev.median_ms / r.median_ms
            r.prev_kernel = prev.kernel


def _gpu_sets(problem: Problem, n_sets: int, seed: int):
    import cupy

    sets = []
    for i in range(n_sets):
        a, b = problem.make_inputs(seed + 7919 * i, cupy)
        sets.append((a, b, cupy.empty((problem.m, problem.n), problem.output_dtype())))
    return sets


def _set_bytes(problem: Problem) -> int:
    p = problem.prec
    return p.input_bytes * (problem.m * problem.k + problem.k * problem.n) + p.output_bytes * problem.m * problem.n


def _check_memory(problem: Problem, n_sets: int) -> int:
    """Fewer rotation sets if memory is short; refuse a problem that cannot fit at all."""
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    per_set = _set_bytes(problem)
    verify_bytes = per_set + 8 * (problem.m * problem.k + problem.k * problem.n + 2 * problem.m * problem.n)
    budget = 0.8 * free - verify_bytes
    if budget < per_set:
        raise SizeLimitError(f"{problem.label()} needs about {(per_set + verify_bytes) / 2**30:.1f} GiB of GPU "
                             f"memory for inputs and the float64 reference; {free / 2**30:.1f} GiB is free")
    return max(1, min(n_sets, int(budget // per_set)))


def run_bench(opts: BenchOptions, listener: Listener | None = None) -> dict:
    listener = listener or Listener()
    records: list[BenchRecord] = []  # typed while the run fills them; the results hold their JSON
    info, why = device.probe()
    specs = selected(opts)
    mode = "gpu" if info else "cpu-only"
    dev = device_spec(info.name) if info else device_spec(opts.gpu)
    results = {"env": env.collect(info, mode), "records": [], "notes": [], "noise": []}
    results["env"]["device_spec"] = dev.as_dict()
    results["env"]["options"] = {"repeat": opts.timing.repeat, "min_repeat": opts.timing.min_repeat,
                                 "cold_l2": opts.timing.cold_l2, "seed": opts.seed, "kernels": opts.kernels,
                                 "blocks": opts.blocks.__dict__ if opts.blocks else None}
    if info is None:
        results["notes"].append(plan(opts, info, why, dev, specs))
        _run_cpu_only(specs, opts, dev, records, listener)
        results["records"] = [r.to_json() for r in records]
        return results
    bw = None
    if opts.ceilings:
        listener.step("measuring the roofs: copy bandwidth, cuBLAS FP32 at 8192³", 0, 0)
        results["env"]["ceilings"] = measure_ceilings()
        bw = results["env"]["ceilings"]["copy_bw_gbs"]
    shapes = opts.shapes or [SEED_SHAPE]
    _run_gpu(specs, shapes, opts, dev, bw, info, records, results, _GpuProgress(listener, records, specs))
    results["records"] = [r.to_json() for r in records]
    from gemmlab import dispatch

    written = dispatch.record(results)  # kernel="auto" on this GPU now picks from what this run measured
    if written:
        results["notes"].append(f"dispatch table for {info.name} updated from this run's verified records: {written}")
    return results


def _group_key(rec: BenchRecord) -> tuple:
    return rec.m, rec.n, rec.k, rec.precision


class _GpuProgress:
    """The progress calls _run_gpu makes (rich's add_task, update, advance) passed on to a Listener: each kernel a
    step, and each shape and precision's table as soon as its last record is in, its ratios linked."""

    def __init__(self, listener: Listener, records: list[BenchRecord], specs: list[KernelSpec]):
        self.listener, self.records = listener, records
        self.group_size = Counter(s.precision for s in specs)  # _run_gpu runs every selected kernel per group
        self.done = self.total = 0

    def add_task(self, description: str, total: int) -> int:
        self.total = total
        return 0

    def update(self, task: int, description: str) -> None:
        self.listener.step(description, self.done, self.total)

    def advance(self, task: int) -> None:
        self.done += 1
        key = _group_key(self.records[-1])
        group = [r for r in self.records if _group_key(r) == key]
        if len(group) == self.group_size[key[3]]:
            _link_ratios(self.records)
            self.listener.table("timed", f"{key[0]}×{key[1]}×{key[2]} (M×N×K), {key[3]}", [r.to_json() for r in group])


def _order(specs, precision):
    """Peers first, so the ratio target exists before the kernels that need it."""
    mine = [s for s in specs if s.precision == precision]
    return sorted(mine, key=lambda s: (s.backend != "peer", s.device == CPU))


def _run_gpu(specs, shapes, opts, dev, bw, info, records, results, progress):
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    order = sorted(PEERS, key=lambda p: get_precision(p).order)
    precisions = [p for p in order if any(s.precision == p for s in specs)]
    task = progress.add_task("bench", total=len(specs) * len(shapes)) if progress else None
    with stream:
        for shape in shapes:
            for precision in precisions:
                problem = Problem(*shape, precision)
                mine = _order(specs, precision)
                n_sets = _check_memory(problem, rotation_sets(_set_bytes(problem), info.l2_bytes,
                                                                opts.timing.cold_l2, opts.timing.max_sets))
                sets, peer_launch, registered = None, None, {}
                bases = {s.variant_of for s in mine if s.variant_of}  # whose launches their variants time beside
                for spec in mine:
                    if progress:
                        progress.update(task, description=f"{spec.name} {problem.label()}")
                    rec = _record(spec, problem, dev, bw)
                    records.append(rec)
                    try:
                        if sets is None and spec.device != CPU and not spec.is_valid(problem):
                            sets = _gpu_sets(problem, n_sets, opts.seed)
                        launch = _bench_one(spec, problem, rec, sets, opts, dev, bw, info, peer_launch,
                                            registered.get(spec.variant_of))
                        if spec.name in bases:
                            registered[spec.name] = launch
                        if spec.name == PEERS[precision]:
                            peer_launch = launch
                    except GemmlabError as exc:
                        rec.fail(Status.ERROR, str(exc))
                    if progress:
                        progress.advance(task)
                    time.sleep(opts.pause_s)
                peer = next((r for r in records if r.kernel == PEERS[precision] and r.shape == tuple(shape)
                             and r.median_ms), None)
                if peer and sets:
                    _noise(peer, problem, sets, opts, info, results)
                del sets
                cupy.get_default_memory_pool().free_all_blocks()
    _link_ratios(records)


def _bench_one(spec, problem, rec, sets, opts, dev, bw, info, peer_launch=None, registered_launch=None):
    """Verify and time one kernel into ``rec``; return its launch if it was timed on the GPU. With the peer's
    launch, the kernel is also timed interleaved with it (rec.interleaved), which gives the ratio; a variant, with
    its registered kernel's launch, interleaved with that too (rec.variant_interleaved: variant_gain)."""
    reason = spec.is_valid(problem)
    if reason:
        rec.fail(Status.SKIPPED, reason)
        return None
    try:
        launch = spec.build(problem)
    except CompileError as exc:
        rec.fail(Status.ERROR, str(exc))
        return None
    if spec.compiles:
        rep = spec.for_problem(problem).compile(info.arch).report
        rec.registers, rec.spills, rec.smem_static = rep.registers, rep.spills, rep.smem_bytes
    seed = kernel_seed(opts.seed, spec.name, problem.shape)
    if spec.device == CPU:
        import numpy as np

        a, b = problem.make_inputs(seed, np)
        result = check(spec, problem, launch=launch, inputs=(a, b))
        if _verify_fill(rec, result):
            c = np.empty((problem.m, problem.n), problem.output_dtype())
            _fill_timing(rec, time_cpu(launch, a, b, c, opts.timing), problem, dev, bw, spec)
            rec.status = Status.OK
        return None
    result = check(spec, problem, seed=seed, launch=launch)
    if not _verify_fill(rec, result):
        return None
    timing_args = (sets, opts.timing, info.max_sm_clock_mhz, _set_bytes(problem), info.l2_bytes)
    _fill_timing(rec, time_gpu(launch, *timing_args), problem, dev, bw, spec)
    rec.status = Status.OK
    if spec.backend != "peer" and not spec.variant_of and rec.median_ms < HOST_BOUND_MS and \
            problem.prec.scaling is None:
        try:
            rec.call_host_us = _call_host_us(spec, problem, sets[0])
        except GemmlabError as exc:  # the timing stands; kernel="auto" ranks this one by its GPU time alone
            rec.extra["call_host_error"] = str(exc)
    if registered_launch is not None:
        mine, registered = time_interleaved([launch, registered_launch], *timing_args)
        rec.variant_interleaved = {"kernel_ms": mine.median_ms, "registered_ms": registered.median_ms,
                                   "rounds": len(mine.samples_ms)}
    if peer_launch is not None:
        mine, peer = time_interleaved([launch, peer_launch], *timing_args)
        rec.interleaved = {"kernel_ms": mine.median_ms, "peer_ms": peer.median_ms,
                           "rounds": len(mine.samples_ms), "clock": mine.clock}
        if opts.blocks:
            mine, peer = time_blocks([launch, peer_launch], sets, opts.timing, opts.blocks, *timing_args[2:])
            rec.blocks = {"kernel": mine, "peer": peer, "ratio": peer["median_ms"] / mine["median_ms"],
                          "rounds": opts.blocks.rounds, "seconds": opts.blocks.seconds}
    return launch


def _call_host_us(spec, problem, operands) -> float:
    """Host time of one ``gemmlab.matmul(A, B, kernel=spec.name, out=C)`` on the run's operands (torch tensors over
    the same memory where torch has CUDA, as most callers hold; else the CuPy arrays): the call's checks, plan
    lookup and every launch its plan makes. kernel="auto" weighs it against the GPU time (gemmlab.dispatch)."""
    import cupy

    import gemmlab
    from gemmlab.harness.timing import host_us_per_call

    a, b, c = operands
    torch = _cuda_torch()
    if torch is not None:
        a, b, c = (_as_tensor(torch, x) for x in (a, b, c))
        sync = torch.cuda.synchronize
    else:
        sync = cupy.cuda.get_current_stream().synchronize
    return host_us_per_call(lambda: gemmlab.matmul(a, b, spec.name, precision=problem.precision, out=c), sync)


def _as_tensor(torch, x):
    """A torch tensor over CuPy array ``x``'s memory (BF16 through its bits: the CUDA array interface has no
    bfloat16 type)."""
    device = f"cuda:{x.device.id}"  # the array's own GPU: on another, as_tensor would copy it there
    if x.dtype.name == "bfloat16":
        return torch.as_tensor(x.view("int16"), device=device).view(torch.bfloat16)
    return torch.as_tensor(x, device=device)


def _cuda_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _noise(peer_rec, problem, sets, opts, info, results):
    """Time the peer a second time: the difference between its two medians is this run's noise floor."""
    from gemmlab.kernels.registry import get_kernel

    launch = get_kernel(peer_rec.kernel).build(problem)
    again = time_gpu(launch, sets, opts.timing, info.max_sm_clock_mhz, _set_bytes(problem), info.l2_bytes)
    first, second = peer_rec.median_ms, again.median_ms
    results["noise"].append({"kernel": peer_rec.kernel, "m": problem.m, "n": problem.n, "k": problem.k,
                             "first_ms": first, "second_ms": second,
                             "diff_pct": 100 * abs(second - first) / first})


def _run_cpu_only(specs, opts, dev, records, listener):
    """CPU kernels timed, CUDA C kernels compiled, numba kernels simulated, every GPU kernel modeled: a table
    each, handed to the listener as soon as it is done."""
    cpu_shapes = opts.shapes or [CPU_SHAPE]
    gpu_shapes = opts.shapes or [SEED_SHAPE]  # where GPU kernels are configured, compiled and modeled
    of = {kind: [s for s in specs if _kind(s) == kind] for kind in ("cpu", "compiled", "simulator", "gpu")}
    total = len(of["cpu"]) * len(cpu_shapes) + len(of["compiled"]) * len(gpu_shapes) + len(of["simulator"])
    done = 0

    def step(label):
        nonlocal done
        listener.step(label, done, total)
        done += 1

    def new(spec, shape):
        problem = Problem(*shape, spec.precision)
        rec = _record(spec, problem, dev, None)
        records.append(rec)
        return rec, problem

    for shape in cpu_shapes:
        recs = []
        for spec in of["cpu"]:
            step(f"{spec.name} at {shapes_text([shape])}: verify, then time on this host")
            rec, problem = new(spec, shape)
            with _reported(rec):
                _time_on_host(spec, problem, rec, opts, dev)
            recs.append(rec)
        _link_ratios(recs)
        if recs:
            listener.table("cpu", f"CPU kernels at {shapes_text([shape])} (M×N×K), timed on this host",
                           [r.to_json() for r in recs])
    for shape in gpu_shapes:
        recs = []
        for spec in of["compiled"]:
            step(f"{spec.name}: compile for {ARCH}, configured for {shapes_text([shape])}")
            rec, problem = new(spec, shape)
            with _reported(rec):
                _compile(spec, problem, rec)
            recs.append(rec)
        if recs:
            listener.table("compiled", f"CUDA C kernels compiled for {ARCH} by NVRTC, configured for "
                                       f"{shapes_text([shape])} (not run: no GPU)", [r.to_json() for r in recs])
    simulated = []
    for spec in of["simulator"]:
        step(f"{spec.name}: CUDA simulator at {shapes_text(opts.sim_shapes)}")
        recs = [new(spec, shape)[0] for shape in gpu_shapes]  # the same runs stand beside each shape's model
        try:
            runs = _simulate(spec, opts)
        except GemmlabError as exc:
            runs = {"status": Status.ERROR, "reason": str(exc)}
        for rec in recs:
            rec.update(runs)
        simulated.append(recs[0])
    if simulated:
        listener.table("simulator", f"numba kernels on the CUDA simulator at {shapes_text(opts.sim_shapes)} "
                                    "(M×N×K; verified, not timed)", [r.to_json() for r in simulated])
    for spec in of["gpu"]:
        for shape in gpu_shapes:
            new(spec, shape)[0].fail(Status.SKIPPED, "needs a GPU")
    order = {s.name: i for i, s in enumerate(specs)}
    for shape in gpu_shapes:
        modeled = [r for r in records if r.backend != CPU and r.shape == tuple(shape)]
        if modeled:
            listener.table("model", f"roofline model on the {dev.name} at {shapes_text([shape])} (M×N×K): "
                                    "predicted, not measured",
                           [r.to_json() for r in sorted(modeled, key=lambda r: order[r.kernel])])


@contextmanager
def _reported(rec: BenchRecord):
    """A GemmlabError while filling ``rec`` becomes its status and reason; the run goes on."""
    try:
        yield
    except GemmlabError as exc:
        rec.fail(Status.ERROR, str(exc))


def _host_memory_reason(problem: Problem) -> str:
    """Why ``problem`` cannot run on this host, or "": its operands in float32 and in float64 for the reference
    must fit in physical memory (past it an allocation may still succeed, and the process die when it is filled)."""
    elements = problem.m * problem.k + problem.k * problem.n + problem.m * problem.n
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows): let the allocation say
        return ""
    need = 12 * elements
    if need <= memory:
        return ""
    return (f"{problem.label()} needs about {need / 2**30:.0f} GiB of host memory (operands in float32 and float64), "
            f"this machine has {memory / 2**30:.0f} GiB")


def _time_on_host(spec, problem, rec, opts, dev):
    reason = _host_memory_reason(problem)
    if reason:
        rec.fail(Status.SKIPPED, reason)
        return
    _bench_one(spec, problem, rec, None, opts, dev, None, None)


def _compile(spec, problem, rec):
    """NVRTC's report of the configuration that would run ``problem``; shared memory counts the static and the
    dynamic part (the launch geometry's)."""
    runs = spec.for_problem(problem)
    try:
        rep = runs.compile(ARCH).report
    except CompileError as exc:
        rec.fail(Status.ERROR, str(exc))
        return
    smem = rep.smem_bytes + runs.launch_geometry(problem).smem
    rec.registers, rec.spills, rec.smem_static, rec.smem_bytes = rep.registers, rep.spills, rep.smem_bytes, smem
    rec.fail(Status.COMPILED, f"compiled for {ARCH}: {rep.registers} registers, {rep.spills} spill bytes, "
                              f"{smem / 1024:.1f} KiB shared memory; not run (no GPU)")


def _simulate(spec, opts) -> dict:
    """Verify a numba kernel under the CUDA simulator at each of opts.sim_shapes (stopping at the first failure);
    the fields its records get. The error is kept apart from rel_err, which is the error at the record's shape."""
    runs = []
    for shape in opts.sim_shapes:
        small = Problem(*shape, spec.precision)
        result = check(spec, small, seed=kernel_seed(opts.seed, spec.name, shape))
        runs.append({"shape": small.label(), "status": result.status,
                     "rel_err": result.error.rel_err if result.error else None,
                     "tolerance": result.error.tolerance if result.error else None})
        if not result.passed:
            reason = f"simulator {small.label()}: {result.status} {result.reason}".strip()
            return {"status": Status.FAILED, "reason": reason, "simulator": runs}
    return {"status": Status.SIMULATED, "verified": True, "simulator": runs,
            "reason": f"verified under the CUDA simulator at {shapes_text(opts.sim_shapes)}; not timed (no GPU)"}
