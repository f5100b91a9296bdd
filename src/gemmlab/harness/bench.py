"""The benchmark: verify, then time, every selected kernel at every shape, with its peer in the same run.

With a GPU: each kernel is verified on fresh inputs (own seed, NaN-poisoned C, float64 reference), then timed
with events over rotating input sets; cuBLAS at the kernel's precision is timed in the same run and every ratio
is against it. A kernel that fails verification is reported FAILED and not timed. Without a GPU: CPU kernels are
timed at a CPU-sized shape, numba kernels verified under the CUDA simulator at small ragged shapes, CUDA C
kernels compiled for sm_90a (ptxas report), and every kernel's roofline model computed for the named GPU.
"""
from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field

from gemmlab.analysis.roofline import DeviceSpec, device_spec, measure_ceilings, model
from gemmlab.errors import CompileError, GemmlabError, SizeLimitError
from gemmlab import device
from gemmlab.harness import env
from gemmlab.harness.reference import tolerance_for
from gemmlab.harness.timing import (BlockOptions, TimingOptions, rotation_sets, time_blocks, time_cpu, time_gpu,
                                    time_interleaved)
from gemmlab.harness.verify import SIMULATOR_SHAPES, check
from gemmlab.kernels.registry import list_kernels
from gemmlab.kernels.spec import CPU, KernelSpec
from gemmlab.problem import SEED_SHAPE, Problem

CPU_SHAPE = (256, 384, 512)  # the seed shape divided by 8: V0 runs it in well under a second
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


def kernel_seed(base: int, name: str, shape) -> int:
    """Fresh, reproducible inputs per kernel and shape."""
    return base + zlib.crc32(f"{name}:{shape}".encode()) % 100_000


def _selected(opts: BenchOptions) -> list[KernelSpec]:
    from gemmlab.kernels.registry import select

    specs = select(opts.kernels) if opts.kernels else list_kernels()
    names = {s.name for s in specs}
    if device.gpu() is None:
        return specs  # peers need a GPU; the CPU-only note says so
    precisions = {s.precision for s in specs if s.device != CPU}
    for precision in precisions | {FALLBACK_PEERS[p] for p in precisions if p in FALLBACK_PEERS}:
        if PEERS[precision] not in names:
            specs.append(next(s for s in list_kernels() if s.name == PEERS[precision]))
            names.add(PEERS[precision])
    return specs


def _record(spec: KernelSpec, problem: Problem, dev: DeviceSpec, bw_gbs: float | None) -> dict:
    km = model(spec, problem, dev, bw_gbs)
    return {
        "kernel": spec.name, "backend": spec.backend, "level": spec.level, "precision": spec.precision,
        "title": spec.title, "params": dict(spec.for_problem(problem).params), "m": problem.m, "n": problem.n, "k": problem.k,
        "status": None, "reason": "", "median_ms": None, "iqr_ms": None, "min_ms": None, "samples": 0,
        "tflops": None, "gflops": None, "rel_err": None, "max_abs_err": None, "tolerance": tolerance_for(problem),
        "verified": False, "peer": PEERS.get(spec.precision) if spec.device != CPU else "cpu/blas",
        "peer_ratio": None, "speedup_prev": None, "pct_peak": None, "model": km.as_dict(), "bw_util_model": None,
        "bw_util_compulsory": None, "clock": None, "l2_mode": None,
    }


def _fill_timing(rec: dict, timing, problem: Problem, dev: DeviceSpec, bw_gbs: float | None) -> None:
    rec.update(timing.summary())
    seconds = rec["median_ms"] / 1e3
    rec["tflops"] = problem.flops() / seconds / 1e12
    rec["gflops"] = rec["tflops"] * 1e3
    bw = (bw_gbs or dev.dram_gbs) * 1e9
    if rec["backend"] != "cpu":
        rec["pct_peak"] = 100 * rec["tflops"] / dev.peak_tflops(problem.precision)
        # The seeds' "bandwidth utilization": modeled global bytes per second over DRAM bandwidth. Past 100%
        # means caches served the re-reads the model counts (the naive kernel's case).
        rec["bw_util_model"] = 100 * (rec["model"]["modeled_read_bytes"] + rec["model"]["modeled_write_bytes"]) / seconds / bw
        rec["bw_util_compulsory"] = 100 * problem.compulsory_bytes() / seconds / bw


def _verify_fill(rec: dict, result) -> bool:
    if result.error is None:
        rec["status"], rec["reason"] = "error", result.reason
        return False
    e = result.error
    rec.update(rel_err=e.rel_err, max_abs_err=e.max_abs_err, tolerance=e.tolerance, verified=e.passed)
    if e.recipe_err is not None:
        rec.update(recipe_err=e.recipe_err, recipe_tolerance=e.recipe_tolerance)
    if not e.passed:
        rec["status"] = "FAILED"
        rec["reason"] = (f"{e.nonfinite} non-finite outputs" if e.nonfinite else
                         f"rel err {e.rel_err:.2e} > tolerance {e.tolerance:.1e}" if e.rel_err > e.tolerance else
                         f"recipe measure {e.recipe_err:.2e} > {e.recipe_tolerance:.0e} against the unquantized "
                         "product")
    return e.passed


def _link_ratios(records: list[dict]) -> None:
    """peer_ratio = peer time / kernel time at the same precision and shape, from the interleaved timing of the
    two where the run made one, else from their own medians (against FALLBACK_PEERS' peer where the precision's
    own did not run, with a ``peer_note``); speedup over the previous level of the same backend and precision present
    in the run."""
    by_key = {(r["kernel"], r["m"], r["n"], r["k"]): r for r in records}
    for r in records:
        if r["median_ms"] is None:
            continue
        peer = by_key.get((r["peer"], r["m"], r["n"], r["k"]))
        fallback = FALLBACK_PEERS.get(r["precision"])
        if (fallback and r["backend"] != "peer" and not (peer and peer["median_ms"])
                and (by_key.get((PEERS[fallback], r["m"], r["n"], r["k"])) or {}).get("median_ms")):
            why = peer["reason"] if peer else "not in this run"
            r["peer"], peer = PEERS[fallback], by_key[(PEERS[fallback], r["m"], r["n"], r["k"])]
            r["peer_note"] = (f"{PEERS[r['precision']]} did not run ({why}): the ratio is against {r['peer']}, "
                              f"{fallback} with per-tensor scales, from the two's own medians")
        if peer and peer["median_ms"] and peer is not r:
            paired = r.get("interleaved")
            r["peer_ratio"] = (paired["peer_ms"] / paired["kernel_ms"] if paired
                               else peer["median_ms"] / r["median_ms"])
        if r["level"] is None:
            continue
        below = [q for q in records if q["backend"] == r["backend"] and q["precision"] == r["precision"]
                 and (q["m"], q["n"], q["k"]) == (r["m"], r["n"], r["k"]) and q["level"] is not None
                 and q["level"] < r["level"] and q["median_ms"]]
        if below:
            prev = max(below, key=lambda q: (q["level"], -q["median_ms"]))
            r["speedup_prev"] = prev["median_ms"] / r["median_ms"]
            r["prev_kernel"] = prev["kernel"]


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


def run_bench(opts: BenchOptions, progress=None) -> dict:
    info, why = device.probe()
    specs = _selected(opts)
    mode = "gpu" if info else "cpu-only"
    dev = device_spec(info.name) if info else device_spec(opts.gpu)
    results = {"env": env.collect(info, mode), "records": [], "notes": [], "noise": []}
    results["env"]["device_spec"] = dev.as_dict()
    results["env"]["options"] = {"repeat": opts.timing.repeat, "min_repeat": opts.timing.min_repeat,
                                 "cold_l2": opts.timing.cold_l2, "seed": opts.seed, "kernels": opts.kernels,
                                 "blocks": opts.blocks.__dict__ if opts.blocks else None}
    if info is None:
        results["notes"].append(f"No CUDA GPU ({why}): GPU kernels were not timed. CUDA C kernels were compiled "
                                f"for sm_90a, numba kernels verified under the CUDA simulator at small shapes, "
                                f"peers not run; the roofline model is for {dev.name}.")
        _run_cpu_only(specs, opts, dev, results, progress)
        return results
    bw = None
    if opts.ceilings:
        results["env"]["ceilings"] = measure_ceilings()
        bw = results["env"]["ceilings"]["copy_bw_gbs"]
    shapes = opts.shapes or [SEED_SHAPE]
    _run_gpu(specs, shapes, opts, dev, bw, info, results, progress)
    from gemmlab import dispatch

    written = dispatch.record(results)  # kernel="auto" on this GPU now picks from what this run measured
    if written:
        results["notes"].append(f"dispatch table for {info.name} updated from this run's verified records: {written}")
    return results


def _order(specs, precision):
    """Peers first, so the ratio target exists before the kernels that need it."""
    mine = [s for s in specs if s.precision == precision]
    return sorted(mine, key=lambda s: (s.backend != "peer", s.device == CPU))


def _run_gpu(specs, shapes, opts, dev, bw, info, results, progress):
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    order = sorted(PEERS, key=lambda p: Problem(1, 1, 1, p).prec.order)
    precisions = [p for p in order if any(s.precision == p for s in specs)]
    task = progress.add_task("bench", total=len(specs) * len(shapes)) if progress else None
    with stream:
        for shape in shapes:
            for precision in precisions:
                problem = Problem(*shape, precision)
                mine = _order(specs, precision)
                n_sets = _check_memory(problem, rotation_sets(_set_bytes(problem), info.l2_bytes,
                                                                opts.timing.cold_l2, opts.timing.max_sets))
                sets, peer_launch = None, None
                for spec in mine:
                    if progress:
                        progress.update(task, description=f"{spec.name} {problem.label()}")
                    rec = _record(spec, problem, dev, bw)
                    results["records"].append(rec)
                    try:
                        if sets is None and spec.device != CPU and not spec.is_valid(problem):
                            sets = _gpu_sets(problem, n_sets, opts.seed)
                        launch = _bench_one(spec, problem, rec, sets, opts, dev, bw, info, peer_launch)
                        if spec.name == PEERS[precision]:
                            peer_launch = launch
                    except GemmlabError as exc:
                        rec["status"], rec["reason"] = "error", str(exc)
                    if progress:
                        progress.advance(task)
                    time.sleep(opts.pause_s)
                peer = next((r for r in results["records"] if r["kernel"] == PEERS[precision]
                             and (r["m"], r["n"], r["k"]) == shape and r["median_ms"]), None)
                if peer and sets:
                    _noise(peer, problem, sets, opts, info, results)
                del sets
                cupy.get_default_memory_pool().free_all_blocks()
    _link_ratios(results["records"])


def _bench_one(spec, problem, rec, sets, opts, dev, bw, info, peer_launch=None):
    """Verify and time one kernel into ``rec``; return its launch if it was timed on the GPU. With the peer's
    launch, the kernel is also timed interleaved with it (rec["interleaved"]), which gives the ratio."""
    reason = spec.is_valid(problem)
    if reason:
        rec["status"], rec["reason"] = "skipped", reason
        return None
    try:
        launch = spec.build(problem)
    except CompileError as exc:
        rec["status"], rec["reason"] = "error", str(exc)
        return None
    if hasattr(spec, "compile"):
        rep = spec.for_problem(problem).compile(info.arch).report
        rec.update(registers=rep.registers, spills=rep.spills, smem_static=rep.smem_bytes)
    seed = kernel_seed(opts.seed, spec.name, problem.shape)
    if spec.device == CPU:
        import numpy as np

        a, b = problem.make_inputs(seed, np)
        result = check(spec, problem, launch=launch, inputs=(a, b))
        if _verify_fill(rec, result):
            c = np.empty((problem.m, problem.n), problem.output_dtype())
            _fill_timing(rec, time_cpu(launch, a, b, c, opts.timing), problem, dev, bw)
            rec["status"] = "ok"
        return None
    result = check(spec, problem, seed=seed, launch=launch)
    if not _verify_fill(rec, result):
        return None
    timing_args = (sets, opts.timing, info.max_sm_clock_mhz, _set_bytes(problem), info.l2_bytes)
    _fill_timing(rec, time_gpu(launch, *timing_args), problem, dev, bw)
    rec["status"] = "ok"
    if peer_launch is not None:
        mine, peer = time_interleaved([launch, peer_launch], *timing_args)
        rec["interleaved"] = {"kernel_ms": mine.median_ms, "peer_ms": peer.median_ms,
                              "rounds": len(mine.samples_ms), "clock": mine.clock}
        if opts.blocks:
            mine, peer = time_blocks([launch, peer_launch], sets, opts.timing, opts.blocks, *timing_args[2:])
            rec["blocks"] = {"kernel": mine, "peer": peer, "ratio": peer["median_ms"] / mine["median_ms"],
                             "rounds": opts.blocks.rounds, "seconds": opts.blocks.seconds}
    return launch


def _noise(peer_rec, problem, sets, opts, info, results):
    """Time the peer a second time: the difference between its two medians is this run's noise floor."""
    from gemmlab.kernels.registry import get_kernel

    launch = get_kernel(peer_rec["kernel"]).build(problem)
    again = time_gpu(launch, sets, opts.timing, info.max_sm_clock_mhz, _set_bytes(problem), info.l2_bytes)
    first, second = peer_rec["median_ms"], again.median_ms
    results["noise"].append({"kernel": peer_rec["kernel"], "m": problem.m, "n": problem.n, "k": problem.k,
                             "first_ms": first, "second_ms": second,
                             "diff_pct": 100 * abs(second - first) / first})


def _run_cpu_only(specs, opts, dev, results, progress):
    cpu_shapes = opts.shapes or [CPU_SHAPE]
    gpu_shapes = opts.shapes or [SEED_SHAPE]  # where GPU kernels are compiled or simulated and modeled
    task = progress.add_task("bench", total=len(specs) * len(cpu_shapes)) if progress else None
    for spec in specs:
        for shape in cpu_shapes if spec.device == CPU else gpu_shapes:
            problem = Problem(*shape, spec.precision)
            if progress:
                progress.update(task, description=f"{spec.name} {problem.label()}")
            rec = _record(spec, problem, dev, None)
            results["records"].append(rec)
            try:
                _cpu_only_one(spec, problem, rec, opts, dev)
            except GemmlabError as exc:
                rec["status"], rec["reason"] = "error", str(exc)
            if progress:
                progress.advance(task)
    _link_ratios(results["records"])


def _cpu_only_one(spec, problem, rec, opts, dev):
    if spec.device == CPU:
        _bench_one(spec, problem, rec, None, opts, dev, None, None)
        return
    if spec.simulable:
        worst = None
        for shape in opts.sim_shapes:
            small = Problem(*shape, spec.precision)
            result = check(spec, small, seed=kernel_seed(opts.seed, spec.name, shape))
            if not result.passed:
                rec["status"] = "FAILED"
                rec["reason"] = f"simulator {small.label()}: {result.status} {result.reason}".strip()
                return
            worst = max(worst or 0.0, result.error.rel_err)
        rec.update(status="simulated", verified=True, rel_err=worst,
                   reason="verified under the CUDA simulator at " + ", ".join("x".join(map(str, s)) for s in opts.sim_shapes)
                   + "; not timed (no GPU)")
        return
    if hasattr(spec, "compile"):
        try:
            rep = spec.compile("sm_90a").report
        except CompileError as exc:
            rec["status"], rec["reason"] = "error", str(exc)
            return
        rec.update(status="compiled", registers=rep.registers, spills=rep.spills, smem_static=rep.smem_bytes,
                   reason=f"compiled for sm_90a: {rep.registers} registers, {rep.spills} spill bytes; not run (no GPU)")
        return
    rec["status"], rec["reason"] = "skipped", "needs a GPU"
