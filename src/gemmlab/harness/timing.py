"""Timing: warm-up, an event pair around every launch, cold-L2 rotation, clock sampling, statistics.

GPU launches are bracketed by CUDA events on the current CuPy stream, one pair per launch, so the samples hold
only kernel time (no launch gaps, no host overhead between launches). Cold-L2 mode rotates through input sets
whose total size exceeds twice the L2, so each launch finds its operands in DRAM, as a GEMM inside a real
network would; warm mode reuses one set. SM clocks are sampled through NVML while the samples are taken, and a
run whose clock fell below a set fraction of the maximum is flagged as throttled.

cuda-bench (nvbench's Python bindings) was considered as the engine: it is not installed on the H200 image, and
its measurement loop reports its own summaries rather than per-launch samples, which the records here keep
(median, IQR, min, count, clock per run). The method is nvbench's: events, cold L2, clock watch.
"""
from __future__ import annotations

import math
import statistics
import threading
import time
from dataclasses import dataclass, field

import numpy as np

THROTTLE_FRACTION = 0.90  # a median SM clock below 90% of the maximum marks the run as throttled


@dataclass(frozen=True)
class TimingOptions:
    repeat: int = 50  # timed launches (the seeds used 20)
    min_repeat: int = 20  # never fewer, even past the time budget
    max_seconds: float = 3.0  # time budget for the timed launches of one kernel
    warmup_seconds: float = 0.1
    min_warmup: int = 3
    cold_l2: bool = True
    max_sets: int = 64


@dataclass
class Timing:
    samples_ms: list[float]
    l2_mode: str
    clock: dict = field(default_factory=dict)
    late: int = 0  # samples whose start event the GPU had reached by the time the host had issued the launch

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def min_ms(self) -> float:
        return min(self.samples_ms)

    @property
    def iqr_ms(self) -> float:
        q1, q3 = np.percentile(self.samples_ms, [25, 75])
        return float(q3 - q1)

    def summary(self) -> dict:
        return {"median_ms": self.median_ms, "iqr_ms": self.iqr_ms, "min_ms": self.min_ms,
                "samples": len(self.samples_ms), "l2_mode": self.l2_mode, "clock": self.clock, "late": self.late}


def rotation_sets(set_bytes: int, l2_bytes: int, cold: bool, max_sets: int) -> int:
    """How many input sets to rotate so that the sets together exceed twice the L2 (at least 2 when cold)."""
    if not cold:
        return 1
    needed = math.floor(2 * l2_bytes / max(set_bytes, 1)) + 1
    return int(min(max(2, needed), max_sets))


class ClockSampler:
    """Samples the SM clock and the board power of the current CUDA device through NVML (by its PCI bus id) on a
    background thread while kernels run."""

    def __init__(self, max_mhz: float, period_s: float = 0.01):
        self.max_mhz, self.period_s = max_mhz, period_s
        self.samples: list[float] = []
        self.watts: list[float] = []
        self._stop = threading.Event()
        self._thread = None
        self._handle = None
        try:
            import pynvml

            from gemmlab.device import nvml_handle

            self._handle = nvml_handle(pynvml)
            self._nvml = pynvml
        except Exception:
            self._handle = None

    def _run(self):
        while not self._stop.is_set():
            try:
                self.samples.append(float(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM)))
            except Exception:
                return
            try:
                self.watts.append(self._nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000)
            except Exception:
                pass  # some boards do not report power; the clock is still worth having
            time.sleep(self.period_s)

    def __enter__(self):
        if self._handle is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread:
            self._thread.join()

    def summary(self) -> dict:
        if not self.samples:
            return {"available": False}
        median = statistics.median(self.samples)
        out = {"available": True, "median_mhz": median, "min_mhz": min(self.samples), "max_mhz": self.max_mhz,
               "throttled": bool(self.max_mhz and median < THROTTLE_FRACTION * self.max_mhz),
               "n": len(self.samples)}
        if self.watts:
            out["median_w"] = statistics.median(self.watts)
        return out


def l2_cleaner(l2_bytes: int):
    """A callable that evicts the whole L2 by reading a buffer twice its size. Lines the previous launch left dirty
    (its C, a split-K workspace) are written back then, outside any timed interval, so no launch pays for its
    predecessor's writes: without it, a kernel that leaves more dirty data hands part of its cost to whichever
    launch comes next (its peer, when the two are interleaved)."""
    import cupy

    scratch = cupy.zeros(max(1, 2 * l2_bytes // 4), cupy.float32)
    return lambda: scratch.sum()


def time_gpu(launch, sets, opts: TimingOptions, max_clock_mhz: float = 0.0, set_bytes: int = 0,
             l2_bytes: int = 0) -> Timing:
    """Time ``launch(a, b, c)`` over the rotating ``sets`` of (a, b, c) CuPy arrays on the current stream."""
    return time_interleaved([launch], sets, opts, max_clock_mhz, set_bytes, l2_bytes)[0]


def time_interleaved(launches, sets, opts: TimingOptions, max_clock_mhz: float = 0.0, set_bytes: int = 0,
                     l2_bytes: int = 0, clean=None) -> list[Timing]:
    """Time several launches round-robin (one launch of each per round, each in its own event pair) over the
    rotating ``sets``; one Timing per launch. With two launches, a kernel and its peer, both are sampled through
    the same interval, so drift in clocks (the power limit pulls them down as the GPU heats) or in the machine
    taxes both alike and their ratio is free of it. In cold-L2 mode with the L2 size known, ``clean`` (default:
    ``l2_cleaner``) runs before every timed launch, outside its events, and the launches of a round read the same
    set; without it, each launch reads the next set in turn. The launches of a round alternate their order round by
    round (a kernel and its peer each go first in half of the rounds). A sample whose start event the GPU had
    already passed when the host had issued its launch is counted (``Timing.late``): the GPU waited on the host
    there, and that wait is in the sample; the cleaning kernel, where it runs, keeps the GPU ahead."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    n, k = len(sets), len(launches)
    if clean is None and opts.cold_l2 and l2_bytes:
        clean = l2_cleaner(l2_bytes)
    # Warm-up: until both a launch count and a time floor are reached, which also settles clocks and caches.
    t0, i = time.perf_counter(), 0
    while i < opts.min_warmup or time.perf_counter() - t0 < opts.warmup_seconds:
        for launch in launches:
            launch(*sets[i % n])
        i += 1
        if i % 8 == 0:
            stream.synchronize()
        if i >= 1000:
            break
    stream.synchronize()
    # One probe round sizes the run to the time budget.
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    for launch in launches:
        launch(*sets[0])
    stop.record(stream)
    stop.synchronize()
    one = cupy.cuda.get_elapsed_time(start, stop) / 1e3
    repeat = max(opts.min_repeat, min(opts.repeat, int(opts.max_seconds / max(one, 1e-6))))
    events = [[(cupy.cuda.Event(), cupy.cuda.Event()) for _ in launches] for _ in range(repeat)]
    late = [0] * k
    drain = None  # the last end event of the round before: waited on to keep the queue short, never emptied
    for launch in launches:  # untimed, so that the first timed launch is issued behind queued work, as the rest are
        launch(*sets[0])
    with ClockSampler(max_clock_mhz) as clocks:
        for j, pairs in enumerate(events):
            for p, i in enumerate(range(k) if j % 2 == 0 else reversed(range(k))):
                e0, e1 = pairs[i]
                if clean:
                    clean()
                e0.record(stream)
                # L2 cleaned: every launch of a round on the same set, each side timing the same tensors; else the
                # rotation runs on across the launches in the order issued, so that every one finds cold data
                launches[i](*sets[(j + 1) % n if clean else (j * k + p + 1) % n])
                e1.record(stream)
                late[i] += e0.done
            if j % 16 == 15:
                drain.synchronize()  # the clock samples overlap the launches; this round's are still queued
            drain = e1
        stream.synchronize()
    total = n * set_bytes
    if n == 1:
        mode = "warm (one input set reused)"
    elif total > 2 * l2_bytes:
        mode = f"cold (rotating {n} input sets, {total / 2**20:.0f} MiB > 2×L2)"
    else:
        mode = f"cold-ish (rotating {n} sets, {total / 2**20:.1f} MiB, under 2×L2: problem too small)"
    if clean:
        mode += ", L2 cleaned before each launch"
    clock = clocks.summary()
    return [Timing([cupy.cuda.get_elapsed_time(*pairs[i]) for pairs in events], mode, clock, late[i])
            for i in range(k)]


@dataclass(frozen=True)
class BlockOptions:
    rounds: int = 4  # blocks of each launch; the order of the launches is reversed every other round
    seconds: float = 0.5  # timed launches per block, after a warm-up of its own


def time_blocks(launches, sets, opts: TimingOptions, blocks: BlockOptions, max_clock_mhz: float = 0.0,
                set_bytes: int = 0, l2_bytes: int = 0) -> list[dict]:
    """Time each launch alone, in blocks of back-to-back launches long enough for the clock and the board power to
    settle where the launch itself puts them, the launches' blocks alternated over ``blocks.rounds`` rounds; one
    ``block_summary`` per launch. Interleaving launch by launch (time_interleaved) hands each short launch the power
    state its predecessor left; timed alone once, a launch inherits whatever ran before. Here each block reaches
    its own steady state, and alternating the blocks spreads drift over all of them."""
    import dataclasses

    block = dataclasses.replace(opts, repeat=max(opts.repeat, 20_000), max_seconds=blocks.seconds)
    clean = l2_cleaner(l2_bytes) if opts.cold_l2 and l2_bytes else None
    rows: list[list[dict]] = [[] for _ in launches]
    for r in range(blocks.rounds):
        order = range(len(launches)) if r % 2 == 0 else reversed(range(len(launches)))
        for i in order:
            t = time_interleaved([launches[i]], sets, block, max_clock_mhz, set_bytes, l2_bytes, clean=clean)[0]
            rows[i].append({"median_ms": t.median_ms, "samples": len(t.samples_ms),
                            "mhz": t.clock.get("median_mhz"), "watts": t.clock.get("median_w")})
    return [block_summary(r) for r in rows]


def block_summary(rows: list[dict]) -> dict:
    """A launch's blocks: the median of the block medians, with each block's median, clock and power."""
    def med(key):
        vals = [r[key] for r in rows if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    return {"median_ms": med("median_ms"), "blocks_ms": [r["median_ms"] for r in rows],
            "spread_pct": 100 * (max(r["median_ms"] for r in rows) / min(r["median_ms"] for r in rows) - 1),
            "mhz": med("mhz"), "watts": med("watts"), "samples": sum(r["samples"] for r in rows)}


def host_us_per_call(call, synchronize, calls: int = 300, warmup: int = 10, queue: int = 100) -> float:
    """Median wall time of one ``call()`` that never waits for the GPU, in µs: what a caller issuing calls back to
    back pays on the host per call. ``synchronize`` drains the GPU every ``queue`` calls, so the launch queue stays
    far from full (a full queue would make a launch wait for the GPU)."""
    for _ in range(warmup):
        call()
    synchronize()
    samples = []
    for i in range(calls):
        if i % queue == 0:
            synchronize()
        t0 = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t0)
    synchronize()
    return 1e6 * statistics.median(samples)


@dataclass
class EagerTimes:
    """Eager time of each call (ms medians), the rounds taken, and each call's host time in those same samples."""

    median_ms: list
    rounds: int
    host_us: list  # per call: median wall time of the Python call itself, issued on an idle GPU


def eager_times(torch, calls, sets, rounds: int, max_seconds: float, min_rounds: int, clean) -> EagerTimes:
    """Eager time of each of ``calls`` on torch CUDA tensors: median CUDA-event time of one call started on an idle
    GPU (the stream synchronized first, so the call's host time lands inside its events), the calls alternating
    which goes first each round, every call of a round on the same one of the rotating ``sets`` (so each side times
    the same tensors), ``clean`` (an L2 eviction) before each. Returns the medians in ms, the rounds taken
    (``rounds``, cut back past ``max_seconds`` but never below ``min_rounds``) and each call's host time in the same
    samples: a call issued right after a synchronization runs its host code well below its speed in a loop
    (host_us_per_call's), and that host time is part of what the caller waits for."""
    stream = torch.cuda.current_stream()
    for fn in calls:  # warm-up: plans, cuBLAS heuristics, allocator pools
        for args in sets[:2]:
            fn(*args)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    times, host = [[] for _ in calls], [[] for _ in calls]
    r = 0
    while r < rounds and (r < min_rounds or time.perf_counter() - t0 < max_seconds):
        order = range(len(calls)) if r % 2 == 0 else reversed(range(len(calls)))
        for i in order:
            args = sets[r % len(sets)]
            clean()
            stream.synchronize()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(stream)
            h0 = time.perf_counter()
            calls[i](*args)
            h1 = time.perf_counter()
            e1.record(stream)
            e1.synchronize()
            times[i].append(e0.elapsed_time(e1))
            host[i].append(1e6 * (h1 - h0))
        r += 1
    return EagerTimes([statistics.median(t) for t in times], r, [statistics.median(h) for h in host])


HEAD_START_US = 100.0  # the spin before each timed call: longer than any call's host time seen (~20-40 µs)


@dataclass
class GpuTimes:
    """GPU time of each call (ms medians), the calls timed, and per call the samples whose host was late."""

    median_ms: list
    calls: int
    late: list  # per call: samples where the GPU reached the call before the host had issued all of it
    head_start_us: float


def gpu_times(torch, calls, sets, rounds: int, max_seconds: float, min_rounds: int, clean,
              head_start_us: float = HEAD_START_US, tries: int = 3) -> GpuTimes:
    """GPU time of each of ``calls`` on torch CUDA tensors: the time from the call's first kernel to its last,
    every kernel the call launches counted (pre-passes, copies, reductions), host time left out, every call of a
    round on the same one of the rotating ``sets`` (as eager_times). Before each call
    ``clean`` evicts the L2 and a spin kernel (torch.cuda._sleep) holds the GPU for ``head_start_us``; the host
    issues the call while the GPU spins, so the events around it time the GPU's work alone, as
    triton.testing.do_bench does behind its cache flush. A sample whose start event the GPU had already passed when
    the call returned was host-bound (the host's issue time leaked into it): the run starts again with the spin
    doubled, ``tries`` runs at most, and the last run's count of such samples is kept (``late``) so a record can
    say so.

    Why not CUDA graphs: capturing a plan that allocates its output, or makes per-stream workspaces, or a torch call
    that picks its algorithm at first call, takes care per plan; the spin needs none, and it times the same Python
    call the eager time does. Why not the profiler: its kernel durations leave out the gaps between a plan's
    launches, which a caller's GPU does spend."""
    stream = torch.cuda.current_stream()
    for fn in calls:
        for args in sets[:2]:
            fn(*args)
    torch.cuda.synchronize()
    cycles_per_us = _spin_rate(torch)
    for attempt in range(tries):
        last = attempt == tries - 1
        t0 = time.perf_counter()
        samples = [[] for _ in calls]
        late = [0 for _ in calls]
        r = 0
        while r < rounds and (r < min_rounds or time.perf_counter() - t0 < max_seconds) and (last or not any(late)):
            order = range(len(calls)) if r % 2 == 0 else reversed(range(len(calls)))
            for i in order:
                args = sets[r % len(sets)]
                clean()
                torch.cuda._sleep(int(head_start_us * cycles_per_us))
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(stream)
                calls[i](*args)
                e1.record(stream)
                late[i] += bool(e0.query())
                e1.synchronize()
                samples[i].append(e0.elapsed_time(e1))
            r += 1
        if last or not any(late):
            break
        head_start_us *= 2  # a late sample ends the try at once: the next starts with twice the spin
    return GpuTimes([statistics.median(t) for t in samples], r, late, head_start_us)


def _spin_rate(torch) -> float:
    """torch.cuda._sleep's cycles per µs on this GPU (its clock as it runs now), from one timed spin."""
    cycles = 2_000_000
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(cycles // 10)  # the clock up from idle first
    e0.record()
    torch.cuda._sleep(cycles)
    e1.record()
    e1.synchronize()
    return cycles / (e0.elapsed_time(e1) * 1e3)


def time_cpu(launch, a, b, c, opts: TimingOptions) -> Timing:
    """Wall-clock samples of a host kernel (first call outside: it may JIT-compile)."""
    launch(a, b, c)
    t_probe = time.perf_counter()
    launch(a, b, c)
    one = time.perf_counter() - t_probe
    repeat = max(opts.min_repeat, min(opts.repeat, int(opts.max_seconds / max(one, 1e-6))))
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        launch(a, b, c)
        samples.append((time.perf_counter() - t0) * 1e3)
    return Timing(samples, "host (warm caches)", {"available": False})


def call_host_us(spec, problem, operands) -> float:
    """Host time of one ``gemmlab.matmul(A, B, kernel=spec.name, out=C)`` on the run's operands (torch tensors over
    the same memory where torch has CUDA, as most callers hold; else the CuPy arrays): the call's checks, plan
    lookup and every launch its plan makes. kernel="auto" weighs it against the GPU time (gemmlab.dispatch)."""
    import cupy

    import gemmlab

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
