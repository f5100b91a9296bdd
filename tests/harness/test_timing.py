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
