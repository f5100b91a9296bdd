import numpy as np
import pytest

from gemmlab.harness.timing import ClockSampler, Timing, TimingOptions, rotation_sets, time_cpu

L2 = 60 * 2**20


def test_rotation_exceeds_twice_l2():
    for set_bytes in (1 << 20, 7 << 20, 50 << 20):
        n = rotation_sets(set_bytes, L2, cold=True, max_sets=1000)
        assert n * set_bytes > 2 * L2 and n >= 2


def test_rotation_large_problems_alternate_two_sets_and_warm_reuses_one():
    assert rotation_sets(800 << 20, L2, cold=True, max_sets=64) == 2
    assert rotation_sets(1 << 20, L2, cold=False, max_sets=64) == 1
    assert rotation_sets(1, L2, cold=True, max_sets=64) == 64


def test_statistics():
    t = Timing([1.0, 2.0, 3.0, 4.0, 100.0], "warm")
    assert t.median_ms == 3.0 and t.min_ms == 1.0
    assert t.iqr_ms == pytest.approx(np.percentile(t.samples_ms, 75) - np.percentile(t.samples_ms, 25))
    s = t.summary()
    assert s["samples"] == 5 and s["median_ms"] == 3.0


def test_time_cpu_takes_at_least_min_repeat_samples():
    calls = []
    timing = time_cpu(lambda a, b, c: calls.append(1), None, None, None,
                      TimingOptions(repeat=30, min_repeat=20, max_seconds=0.0))
    assert len(timing.samples_ms) == 20
    assert len(calls) == 22  # JIT warm-up call and the sizing probe come first


def test_clock_sampler_flags_throttled_runs():
    sampler = ClockSampler(1980.0)
    assert sampler.summary() == {"available": False}
    sampler.samples = [1980.0] * 9 + [1700.0]
    assert sampler.summary()["throttled"] is False and sampler.summary()["min_mhz"] == 1700.0
    sampler.samples = [1500.0] * 10
    assert sampler.summary()["throttled"] is True


class _FakeGpu:
    """A stand-in for cupy.cuda on one stream: launches advance a clock, events read it."""

    def __init__(self):
        self.now = 0.0
        gpu = self

        class Event:
            def record(self, stream=None):
                self.t = gpu.now

            def synchronize(self):
                pass

            @property
            def done(self):  # cupy.cuda.Event's: reached where the GPU had passed it before the host's launch
                return self.t < gpu.host_ahead_until

        self.host_ahead_until = 0.0

        class Stream:
            def synchronize(self):
                pass

        self.cuda = type("cuda", (), {"Event": Event, "get_current_stream": staticmethod(lambda: Stream()),
                                      "get_elapsed_time": staticmethod(lambda e0, e1: e1.t - e0.t)})

    def launch(self, ms, log):
        def run(a, b, c):
            log.append(a)
            self.now += ms
        return run


def test_interleaved_timing_alternates_launches_over_the_same_rotating_sets(monkeypatch):
    import sys

    from gemmlab.harness.timing import time_interleaved

    gpu = _FakeGpu()
    monkeypatch.setitem(sys.modules, "cupy", gpu)
    kernel_sets, peer_sets, order = [], [], []
    sets = [(i, None, None) for i in range(3)]
    opts = TimingOptions(repeat=10, min_repeat=10, max_seconds=0.0, warmup_seconds=0.0, min_warmup=2)

    def clean():  # takes GPU time, as the real one does, but outside every event pair
        order.append("clean")
        gpu.now += 7.0

    def logged(ms, log, name):
        run = gpu.launch(ms, log)
        return lambda a, b, c: (order.append(name), run(a, b, c))

    mine, peer = time_interleaved([logged(2.0, kernel_sets, "k"), logged(0.5, peer_sets, "p")], sets, opts,
                                  set_bytes=100, l2_bytes=100, clean=clean)
    assert mine.samples_ms == [2.0] * 10 and peer.samples_ms == [0.5] * 10  # each event pair holds one launch
    # every timed launch starts from a cleaned L2; kernel and peer take turns going first
    assert order[-40:] == ["clean", "k", "clean", "p", "clean", "p", "clean", "k"] * 5
    assert mine.late == peer.late == 0 and mine.summary()["late"] == 0
    timed_k, timed_p = kernel_sets[-10:], peer_sets[-10:]
    # warm-up rounds, the probe round, the round that queues work ahead of the timed ones, the timed rounds
    assert len(kernel_sets) == len(peer_sets) == 2 + 1 + 1 + 10
    # round j, the L2 cleaned before each launch: kernel and peer both read set (j + 1) % 3, the same tensors
    assert timed_k == timed_p == [(j + 1) % 3 for j in range(10)]
    assert mine.l2_mode.startswith("cold (rotating 3 input sets") and mine.l2_mode.endswith("cleaned before each launch")
    kernel_sets.clear(), peer_sets.clear()
    opts = TimingOptions(repeat=10, min_repeat=10, max_seconds=0.0, warmup_seconds=0.0, min_warmup=2, cold_l2=False)
    time_interleaved([logged(2.0, kernel_sets, "k"), logged(0.5, peer_sets, "p")], sets, opts, set_bytes=100)
    # without the clean, the rotation runs on across the launches in the order issued: round j's first launch (the
    # kernel in even rounds, the peer in odd ones) reads (2j + 1) % 3, its second (2j + 2) % 3
    first, second = [(2 * j + 1) % 3 for j in range(10)], [(2 * j + 2) % 3 for j in range(10)]
    assert kernel_sets[-10:] == [(first if j % 2 == 0 else second)[j] for j in range(10)]
    assert peer_sets[-10:] == [(second if j % 2 == 0 else first)[j] for j in range(10)]
    kernel_sets.clear(), peer_sets.clear()
    two = sets[:2]  # two sets, two launches: no launch reads the set it read the launch before
    time_interleaved([logged(2.0, kernel_sets, "k"), logged(0.5, peer_sets, "p")], two, opts, set_bytes=100)
    assert all(x != y for x, y in zip(kernel_sets[-10:], kernel_sets[-9:]))
    assert all(x != y for x, y in zip(peer_sets[-10:], peer_sets[-9:]))


def test_interleaved_timing_counts_the_samples_where_the_gpu_waited_on_the_host(monkeypatch):
    """A start event the GPU had passed by the time the host issued the launch: that sample holds the host's issue
    time too. The fake marks the events recorded before the fifth timed launch as passed."""
    import sys

    from gemmlab.harness.timing import time_interleaved

    gpu = _FakeGpu()
    monkeypatch.setitem(sys.modules, "cupy", gpu)
    opts = TimingOptions(repeat=10, min_repeat=10, max_seconds=0.0, warmup_seconds=0.0, min_warmup=1, cold_l2=False)
    launch = gpu.launch(2.0, [])
    gpu.host_ahead_until = 3 * 2.0 + 4 * 2.0  # the warm-up, probe and queued launches, then four timed ones
    timing = time_interleaved([launch], [(0, None, None)], opts)[0]
    assert timing.late == 4 and timing.summary()["late"] == 4


def test_single_launch_timing_is_the_interleaved_timing_of_one(monkeypatch):
    import sys

    from gemmlab.harness.timing import time_gpu

    gpu = _FakeGpu()
    monkeypatch.setitem(sys.modules, "cupy", gpu)
    used = []
    opts = TimingOptions(repeat=5, min_repeat=5, max_seconds=0.0, warmup_seconds=0.0, min_warmup=1)
    t = time_gpu(gpu.launch(1.5, used), [(0, None, None), (1, None, None)], opts)
    assert t.samples_ms == [1.5] * 5 and used[-5:] == [1, 0, 1, 0, 1]


def test_clock_sampler_reports_board_power_when_sampled():
    sampler = ClockSampler(1980.0)
    sampler.samples = [1700.0] * 3
    assert "median_w" not in sampler.summary()  # a board that does not report power
    sampler.watts = [650.0, 700.0, 690.0]
    assert sampler.summary()["median_w"] == 690.0


def test_blocks_alternate_launches_and_summarize_block_medians(monkeypatch):
    import sys

    from gemmlab.harness import timing

    gpu = _FakeGpu()
    monkeypatch.setitem(sys.modules, "cupy", gpu)
    order, speeds = [], {"k": [2.0, 2.2, 1.8, 2.0], "p": [1.0, 1.0, 1.1, 0.9]}

    def settling(name):  # each block of a launch runs at its own (drifting) speed
        def run(a, b, c):
            order.append(name)
            gpu.now += speeds[name][sum(1 for x in blocks if x == name) - 1]
        return run

    blocks = []
    real = timing.time_interleaved

    def one_block(launches, *args, **kwargs):
        blocks.append("k" if launches[0] is kernel else "p")
        return real(launches, *args, **kwargs)

    kernel, peer = settling("k"), settling("p")
    monkeypatch.setattr(timing, "time_interleaved", one_block)
    opts = TimingOptions(repeat=5, min_repeat=5, max_seconds=0.0, warmup_seconds=0.0, min_warmup=1)
    mine, theirs = timing.time_blocks([kernel, peer], [(0, None, None), (1, None, None)], opts,
                                      timing.BlockOptions(rounds=4, seconds=0.0))
    assert blocks == ["k", "p", "p", "k", "k", "p", "p", "k"]  # the order reversed every other round
    assert mine["blocks_ms"] == pytest.approx([2.0, 2.2, 1.8, 2.0]) and mine["median_ms"] == pytest.approx(2.0)
    assert theirs["median_ms"] == pytest.approx(1.0) and theirs["spread_pct"] == pytest.approx(100 * (1.1 / 0.9 - 1))
    assert mine["samples"] == 4 * 5 and mine["watts"] is None  # no NVML here


def test_block_summary_is_the_median_of_block_medians():
    from gemmlab.harness.timing import block_summary

    rows = [{"median_ms": m, "samples": 10, "mhz": f, "watts": w}
            for m, f, w in ((0.20, 1650, 690), (0.21, 1620, 700), (0.19, 1700, 680))]
    s = block_summary(rows)
    assert s["median_ms"] == 0.20 and s["mhz"] == 1650 and s["watts"] == 690 and s["samples"] == 30
    assert s["blocks_ms"] == [0.20, 0.21, 0.19] and s["spread_pct"] == pytest.approx(100 * (0.21 / 0.19 - 1))


def test_host_time_per_call_is_the_median_wall_time_with_the_queue_kept_short(monkeypatch):
    """Each call's wall time alone (the synchronize calls outside it), the queue drained every ``queue`` calls."""
    from gemmlab.harness import timing

    clock = iter(range(10_000))
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(clock) * 1e-6)  # 1 µs between any two reads
    calls, syncs = [], []

    def call():
        calls.append(1)
        if len(calls) % 3 == 0:  # every third call reads the clock twice more: 3 µs where the others take 1
            timing.time.perf_counter(), timing.time.perf_counter()

    us = timing.host_us_per_call(call, lambda: syncs.append(len(calls)), calls=30, warmup=2, queue=10)
    assert len(calls) == 32 and us == pytest.approx(1.0)
    assert syncs == [2, 2, 12, 22, 32]


class _FakeTorch:
    """torch.cuda as gpu_times sees it, on a simulated GPU clock: a call advances it by its duration, a spin by its
    cycles at 2000 per µs, and the start event reads as passed (the host late) while the spin is under ``host_us``."""

    def __init__(self, host_us: float):
        self.clock_ms, self.host_us, self.spins, self.cuda = 0.0, host_us, [], self

    def _sleep(self, cycles):
        self.spins.append(cycles)
        self.clock_ms += cycles / 2000 / 1e3

    def current_stream(self):
        return self  # a stream whose synchronize is the device's

    def synchronize(self):
        pass

    def Event(self, enable_timing=True):  # noqa: N802 (torch's name)
        fake = self

        class Event:
            def record(self, stream=None):
                self.t = fake.clock_ms

            def query(self):
                return fake.spins[-1] / 2000 < fake.host_us

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return other.t - self.t

        return Event()


def _calls(fake, log):
    def call(ms, name):
        def run(*args):
            log.append(name)
            fake.clock_ms += ms
        return run
    return [call(0.5, "ours"), call(0.25, "theirs")]


def test_gpu_times_are_the_calls_own_and_alternate_after_a_flush_and_a_spin():
    from gemmlab.harness.timing import gpu_times

    fake, log, cleans = _FakeTorch(host_us=30), [], []
    t = gpu_times(fake, _calls(fake, log), [()], rounds=20, max_seconds=10, min_rounds=20,
                  clean=lambda: cleans.append(1))
    assert t.median_ms == pytest.approx([0.5, 0.25]) and t.calls == 20 and t.late == [0, 0]
    assert t.head_start_us == 100 and len(cleans) == 40
    assert set(fake.spins[2:]) == {200_000}  # 100 µs at 2000 cycles per µs, after the rate probe's two spins
    assert log[2:6] == ["ours", "theirs", "theirs", "ours"]  # after the warm-up, who goes first alternates


@pytest.mark.parametrize("timer", ["eager_times", "gpu_times"])
def test_every_call_of_a_round_times_the_same_tensors(timer):
    """Both sides of a round on the same set (an L2 eviction before each): neither times tensors the other never
    reads, whatever the number of sets."""
    from gemmlab.harness import timing

    fake, seen = _FakeTorch(host_us=0), []

    def call(name):
        def run(x):
            seen.append((name, x))
            fake.clock_ms += 0.1
        return run

    out = getattr(timing, timer)(fake, [call("ours"), call("theirs")], [(0,), (1,), (2,), (3,)], rounds=8,
                                 max_seconds=10, min_rounds=8, clean=lambda: None)
    rounds = out.rounds if timer == "eager_times" else out.calls
    timed = seen[4:]  # after the warm-up's two sets each
    assert rounds == 8 and len(timed) == 16
    assert [x for name, x in timed if name == "ours"] == [x for name, x in timed if name == "theirs"] == \
        [r % 4 for r in range(8)]


def test_a_host_late_for_the_spin_doubles_it_and_the_run_starts_again():
    from gemmlab.harness.timing import gpu_times

    fake = _FakeTorch(host_us=150)
    t = gpu_times(fake, _calls(fake, []), [()], rounds=20, max_seconds=10, min_rounds=20, clean=lambda: None)
    assert t.head_start_us == 200 and t.late == [0, 0] and t.median_ms == pytest.approx([0.5, 0.25])
    fake = _FakeTorch(host_us=10_000)  # never enough: the count of late samples is kept, after three tries
    t = gpu_times(fake, _calls(fake, []), [()], rounds=20, max_seconds=10, min_rounds=20, clean=lambda: None)
    assert t.head_start_us == 400 and t.late == [20, 20]  # the spin of the last run


def test_eager_times_keeps_each_calls_own_host_time_from_its_samples():
    """Beside the event times, each call's own wall time in the same samples: the host work before a launch, which
    an idle GPU waits for, told apart from the GPU's (here the simulated GPU clock moves by the same for both)."""
    import time as _time

    from gemmlab.harness import timing

    fake = _FakeTorch(host_us=0)

    def call(host_s):
        def run(x):
            _time.sleep(host_s)
            fake.clock_ms += 0.1
        return run

    e = timing.eager_times(fake, [call(0.002), call(0.0)], [(0,)], rounds=10, max_seconds=10, min_rounds=10,
                           clean=lambda: None)
    assert e.rounds == 10 and e.median_ms == pytest.approx([0.1, 0.1])
    assert e.host_us[0] >= 2000 and e.host_us[1] < 1000

