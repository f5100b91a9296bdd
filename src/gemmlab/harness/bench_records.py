"""One kernel's record in a bench run: made with its model, verified, timed (on the GPU, with its peer and, for a
variant, its registered kernel interleaved; or on the host), then linked to its peer and the level below it."""
from __future__ import annotations

import zlib

from gemmlab.analysis.roofline import DeviceSpec, at_clock, ceilings_for, model
from gemmlab.errors import CompileError, GemmlabError
from gemmlab.harness.record import BenchRecord, Status
from gemmlab.harness.reference import tolerance_for
from gemmlab.harness.roof_probes import stored_ceilings
from gemmlab.harness.timing import call_host_us, time_blocks, time_cpu, time_gpu, time_interleaved
from gemmlab.harness.verify import check
from gemmlab.kernels.spec import CPU, SM_COUNT, KernelSpec
from gemmlab.problem import PrecisionTable, Problem

# below this GPU time a call's host time can bind a caller, so records carry it (call_host_us); far above any call's
HOST_BOUND_MS = 0.1
PEERS = PrecisionTable(lambda p: p.peer)
# Where a precision's peer cannot run (a torch without blockwise scaled matmul), the ratio is taken against this
# precision's peer at the same shape, from the two's own medians, and the record says so.
FALLBACK_PEERS = PrecisionTable(lambda p: p.fallback)


def kernel_seed(base: int, name: str, shape) -> int:
    """Fresh, reproducible inputs per kernel and shape."""
    return base + zlib.crc32(f"{name}:{shape}".encode()) % 100_000


# what a CPU kernel's record keeps of the model: the problem's and its traffic's counts, not a GPU's roofs
CPU_MODEL_KEYS = ("flops", "compulsory_bytes", "intensity", "modeled_read_bytes", "modeled_write_bytes",
                  "modeled_intensity", "basis")


def new_record(spec: KernelSpec, problem: Problem, dev: DeviceSpec, bw_gbs: float | None,
               modeled: bool = True, sm_count: int | None = None, layout=None) -> BenchRecord:
    """A kernel's record at ``problem``, with its model unless ``modeled`` is False (a kernel that refuses the
    problem is not modeled there); its parameters those of the build that runs on ``sm_count`` SMs (the GPU's;
    without one, the roofline device's datasheet). ``layout``: the operands as the run hands them over (run_layout;
    None: the natural one), which the model's pre-passes and copies follow."""
    # the roofs: this GPU's last measured ceilings where `gemmlab roofline --measure` stored some, with the copy
    # bandwidth this run measured; the clock is the maximum until the timing says which one the run held
    layout = None if spec.device == CPU else layout  # the host's kernels take NumPy's row-major
    modeled = modeled and spec.peak_share()[0] in dev.tflops  # a board with no roof for its units: no model
    km = model(spec, problem, stored_ceilings(ceilings_for(dev, bw_gbs)), layout=layout).as_dict() if modeled else {}
    if spec.device == CPU and km:  # a GPU's roofs and levels bound nothing a host loop does: the counts alone
        km = {key: km[key] for key in CPU_MODEL_KEYS}
    runs = spec.for_problem(problem, sm_count or dev.sm_count or SM_COUNT)
    rec = BenchRecord(spec.name, spec.backend, spec.level, spec.precision, spec.title,
                      dict(runs.params), problem.m, problem.n, problem.k,
                      tolerance=tolerance_for(problem), model=km,
                      peer=PEERS.get(spec.precision) if spec.device != CPU else "cpu/blas",
                      variant_of=spec.variant_of or None, out_dtype=str(spec.output_dtype(problem)))
    if layout is not None:  # what its model (and its timing) took: remodelling reads it
        from gemmlab.dispatch_layout import layout_key

        rec.extra["layout"] = layout_key(layout)
    return rec


def fill_timing(rec: BenchRecord, timing, problem: Problem, dev: DeviceSpec, bw_gbs: float | None,
                 spec: KernelSpec) -> None:
    rec.update(timing.summary())
    clock = (rec.clock or {}).get("median_mhz")
    if clock and rec.model:
        rec.model = at_clock(rec.model, clock)
    seconds = rec.median_ms / 1e3
    rec.tflops = problem.flops() / seconds / 1e12
    rec.gflops = rec.tflops * 1e3
    bw = (bw_gbs or dev.dram_gbs) * 1e9
    if rec.backend != "cpu":
        units, ops = spec.peak_share()  # against the units that do its arithmetic (tc7: TF32, three per product)
        if units in dev.tflops:
            rec.pct_peak = 100 * rec.tflops * ops / dev.peak_tflops(units)
        if rec.model:
            # The seeds' "bandwidth utilization": modeled global bytes per second over DRAM bandwidth. Past 100%
            # means caches served the re-reads the model counts (the naive kernel's case).
            rec.bw_util_model = 100 * (rec.model["modeled_read_bytes"] + rec.model["modeled_write_bytes"]) / \
                seconds / bw
        rec.bw_util_compulsory = 100 * problem.compulsory_bytes() / seconds / bw


def fill_verification(rec: BenchRecord, result) -> bool:
    if result.error is None:
        rec.fail(Status.ERROR, result.reason)
        return False
    e = result.error
    rec.update({"rel_err": e.rel_err, "max_abs_err": e.max_abs_err, "tolerance": e.tolerance, "verified": e.passed})
    if e.recipe_err is not None:
        rec.update({"recipe_err": e.recipe_err, "recipe_tolerance": e.recipe_tolerance})
    if not e.passed:
        rec.fail(Status.FAILED, e.failure())
    return e.passed


def link_ratios(records: list[BenchRecord]) -> None:
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


def run_layout(opts, problem: Problem):
    """The layout a run hands this problem's operands over in where it is not the natural one, else None (FP8's
    quantized operands come in the only layout its kernels read)."""
    if opts.layout is None or opts.layout == KernelSpec.natural_layout(problem) or problem.prec.scaled:
        return None
    return opts.layout


def bench_one(spec, problem, rec, sets, opts, dev, bw, info, peer_launch=None, registered_launch=None):
    """Verify and time one kernel into ``rec``; return its launch if it was timed on the GPU. With the peer's
    launch, the kernel is also timed interleaved with it (rec.interleaved), which gives the ratio; a variant, with
    its registered kernel's launch, interleaved with that too (rec.variant_interleaved: variant_gain)."""
    reason = spec.is_valid(problem) or (opts.skip(spec, problem) if opts.skip else "")
    if reason:
        rec.fail(Status.SKIPPED, reason)
        return None
    layout = run_layout(opts, problem) if spec.device != CPU else None  # the host's kernels take NumPy's row-major
    try:
        if layout is None:
            launch = spec.build(problem)
        else:
            from gemmlab.harness.layouts import launch as launch_in

            launch, copies = launch_in(spec, problem, layout)
            if copies:
                rec.extra["copies"] = list(copies)
    except CompileError as exc:
        rec.fail(Status.ERROR, str(exc))
        return None
    if spec.compiles:
        rep = spec.for_problem(problem, info.sm_count).compile(info.arch).report
        rec.registers, rec.spills, rec.smem_static = rep.registers, rep.spills, rep.smem_bytes
    seed = kernel_seed(opts.seed, spec.name, problem.shape)
    if spec.device == CPU:
        import numpy as np

        a, b = problem.make_inputs(seed, np)
        result = check(spec, problem, launch=launch, inputs=(a, b))
        if fill_verification(rec, result):
            c = np.empty((problem.m, problem.n), problem.output_dtype())
            fill_timing(rec, time_cpu(launch, a, b, c, opts.timing), problem, dev, bw, spec)
            rec.status = Status.OK
        return None
    inputs = None
    if layout is not None:
        import cupy

        from gemmlab.harness.layouts import arrange

        inputs = arrange(*spec.make_inputs(problem, seed, cupy), layout)
    result = check(spec, problem, seed=seed, launch=launch, inputs=inputs)
    if not fill_verification(rec, result):
        return None
    timing_args = (sets, opts.timing, info.max_sm_clock_mhz, problem.compulsory_bytes(), info.l2_bytes)
    fill_timing(rec, time_gpu(launch, *timing_args), problem, dev, bw, spec)
    rec.status = Status.OK
    if spec.backend != "peer" and not spec.variant_of and rec.median_ms < HOST_BOUND_MS and \
            not problem.prec.scaled:
        try:
            rec.call_host_us = call_host_us(spec, problem, sets[0])
        except GemmlabError as exc:  # the timing stands; kernel="auto" ranks this one by its GPU time alone
            rec.extra["call_host_error"] = str(exc)
    if registered_launch is not None:
        mine, registered = time_interleaved([launch, registered_launch], *timing_args)
        rec.variant_interleaved = {"kernel_ms": mine.median_ms, "registered_ms": registered.median_ms,
                                   "rounds": len(mine.samples_ms), "late": [mine.late, registered.late]}
    if peer_launch is not None:
        mine, peer = time_interleaved([launch, peer_launch], *timing_args)
        rec.interleaved = {"kernel_ms": mine.median_ms, "peer_ms": peer.median_ms,
                           "rounds": len(mine.samples_ms), "clock": mine.clock, "late": [mine.late, peer.late]}
        if opts.blocks:
            mine, peer = time_blocks([launch, peer_launch], sets, opts.timing, opts.blocks, *timing_args[2:])
            rec.blocks = {"kernel": mine, "peer": peer, "ratio": peer["median_ms"] / mine["median_ms"],
                          "rounds": opts.blocks.rounds, "seconds": opts.blocks.seconds}
    return launch
