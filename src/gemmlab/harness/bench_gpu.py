"""A bench run on a GPU: per shape and precision, the peer first, then every kernel verified and timed over rotating
input sets on one stream, the peer timed twice for the run's noise floor."""
from __future__ import annotations

import time

from gemmlab.errors import GemmlabError, SizeLimitError
from gemmlab.harness.bench_records import PEERS, bench_one, link_ratios, new_record, run_layout
from gemmlab.harness.record import Status
from gemmlab.harness.timing import rotation_sets, time_gpu
from gemmlab.kernels.spec import CPU
from gemmlab.problem import Problem, get_precision


def gpu_sets(problem: Problem, n_sets: int, seed: int):
    import cupy

    sets = []
    for i in range(n_sets):
        a, b = problem.make_inputs(seed + 7919 * i, cupy)
        sets.append((a, b, cupy.empty((problem.m, problem.n), problem.output_dtype())))
    return sets


def check_memory(problem: Problem, n_sets: int) -> int:
    """Fewer rotation sets if memory is short; refuse a problem that cannot fit at all."""
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    per_set = problem.compulsory_bytes()  # one input set: A, B and C
    verify_bytes = per_set + 8 * (problem.m * problem.k + problem.k * problem.n + 2 * problem.m * problem.n)
    budget = 0.8 * free - verify_bytes
    if budget < per_set:
        raise SizeLimitError(f"{problem.label()} needs about {(per_set + verify_bytes) / 2**30:.1f} GiB of GPU "
                             f"memory for inputs and the float64 reference; {free / 2**30:.1f} GiB is free")
    return max(1, min(n_sets, int(budget // per_set)))


def peers_first(specs, precision):
    """Peers first, so the ratio target exists before the kernels that need it."""
    mine = [s for s in specs if s.precision == precision]
    return sorted(mine, key=lambda s: (s.backend != "peer", s.device == CPU))


def arranged(sets, layout):
    """The input sets with A and B stored in ``layout`` (None: as drawn)."""
    from gemmlab.harness.layouts import arrange

    return sets if layout is None else [(*arrange(a, b, layout), c) for a, b, c in sets]


def run_gpu(specs, shapes, opts, dev, bw, info, records, results, progress):
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    order = sorted(PEERS, key=lambda p: get_precision(p).order)
    precisions = [p for p in order if any(s.precision == p for s in specs)]
    task = progress.add_task("bench", total=len(specs) * len(shapes)) if progress else None
    with stream:
        for shape in shapes:
            for precision in precisions:
                problem = Problem(*shape, precision)
                mine = peers_first(specs, precision)
                n_sets = check_memory(problem, rotation_sets(problem.compulsory_bytes(), info.l2_bytes,
                                                               opts.timing.cold_l2, opts.timing.max_sets))
                sets, peer_launch, registered = None, None, {}
                bases = {s.variant_of for s in mine if s.variant_of}  # whose launches their variants time beside
                for spec in mine:
                    if progress:
                        progress.update(task, description=f"{spec.name} {problem.label()}")
                    rec = new_record(spec, problem, dev, bw, sm_count=info.sm_count,
                                     layout=run_layout(opts, problem))
                    records.append(rec)
                    try:
                        if sets is None and spec.device != CPU and not spec.is_valid(problem):
                            sets = arranged(gpu_sets(problem, n_sets, opts.seed), run_layout(opts, problem))
                        launch = bench_one(spec, problem, rec, sets, opts, dev, bw, info, peer_launch,
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
                if peer and sets and peer_launch:
                    _noise(peer, peer_launch, problem, sets, opts, info, results)
                del sets
                cupy.get_default_memory_pool().free_all_blocks()
    link_ratios(records)


def _noise(peer_rec, launch, problem, sets, opts, info, results):
    """Time the peer a second time, through the launch its record timed (in the run's layout, with its copies where
    it makes any): the difference between its two medians is this run's noise floor."""
    again = time_gpu(launch, sets, opts.timing, info.max_sm_clock_mhz, problem.compulsory_bytes(), info.l2_bytes)
    first, second = peer_rec.median_ms, again.median_ms
    results["noise"].append({"kernel": peer_rec.kernel, "m": problem.m, "n": problem.n, "k": problem.k,
                             "first_ms": first, "second_ms": second,
                             "diff_pct": 100 * abs(second - first) / first})
