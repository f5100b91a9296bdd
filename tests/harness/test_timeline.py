"""gemmlab timeline's arithmetic on stamps written here by hand, and its refusals; the stamps themselves come from
tc4 built with TIMELINE=1, compiled in tests/kernels/cuda/tc/test_tc4_options.py."""
import dataclasses

import numpy as np
import pytest

from gemmlab.errors import GemmlabError
from gemmlab.harness import timeline
from gemmlab.kernels.cuda.tc.model.timeline import TL_SLOTS
from gemmlab.kernels.registry import get_kernel, list_kernels
from gemmlab.problem import Problem

KT = 4


def _row(entry, prologue, mains, epilogues, gaps, tail, mhz=1500.0, ns0=0):
    """One warpgroup's readings: units with the given mainloop, epilogue and gap cycles."""
    r = np.zeros(TL_SLOTS, np.uint64)
    r[1] = entry
    t = entry + prologue
    for i, (m, e) in enumerate(zip(mains, epilogues)):
        r[2 + 3 * i] = t
        r[3 + 3 * i] = t + m
        r[4 + 3 * i] = t + m + e
        t += m + e + (gaps[i] if i < len(gaps) else 0)
    end = int(r[4 + 3 * (len(mains) - 1)]) + tail
    r[TL_SLOTS - 2] = end
    r[0] = ns0
    r[TL_SLOTS - 1] = ns0 + round((end - entry) / mhz * 1e3)
    return r


def _launch():
    # 2 blocks x 2 warpgroups; block 1 starts 100 ns later and its second warpgroup runs one unit only
    rows = [_row(1000, 100, [4096, 4100], [500, 520], [50], 20),
            _row(1000, 110, [4090, 4096], [510, 500], [60], 20),
            _row(5000, 100, [4096, 4104], [500, 500], [50], 30, ns0=100),
            _row(5000, 120, [4200], [600], [], 25, ns0=100)]
    return np.stack(rows).reshape(2, 2, TL_SLOTS)


def test_summary_splits_each_warpgroups_cycles():
    s = timeline.summarize(_launch(), KT, ideal_ktile_cycles=1024)
    assert s["warpgroups"] == 4 and s["units_per_warpgroup"] == {1: 1, 2: 3}
    assert s["mainloop_cycles"]["median"] == 4096 and s["mainloop_cycles"]["n"] == 7
    assert s["ktile_cycles"] == 1024 and s["mainloop_efficiency"] == 1.0
    assert s["epilogue_cycles"]["median"] == 500 and s["gap_cycles"]["median"] == 50
    assert s["prologue_cycles"]["median"] == 105 and s["tail_cycles"]["median"] == 22.5
    assert s["clock_mhz"] == pytest.approx(1500, rel=1e-3)
    total = 100 + 4096 + 500 + 50 + 4100 + 520 + 20
    assert timeline.summarize(_launch()[:1, :1], KT)["mainloop_share"] == pytest.approx((4096 + 4100) / total)
    # the later block's end sets the span; the single-unit warpgroup finishes first
    assert s["span_ns"] == 100 + round((100 + 4096 + 500 + 50 + 4104 + 500 + 30) / 1.5)
    assert s["finish_ns"]["first"] == 100 + round((120 + 4200 + 600 + 25) / 1.5)


def test_bad_stamps_are_refused():
    raw = _launch()
    raw[0, 0, 3] = raw[0, 0, 2] - 1  # mainloop ends before it starts
    with pytest.raises(GemmlabError, match="out of order"):
        timeline.summarize(raw, KT)
    with pytest.raises(GemmlabError, match="TIMELINE=1"):
        timeline.summarize(np.zeros((2, 2, TL_SLOTS), np.uint64), KT)
    units = (TL_SLOTS - 4) // 3
    full = _row(1000, 100, [10] * units, [1] * units, [1] * units, 5)
    with pytest.raises(GemmlabError, match="past the stamps"):
        timeline.summarize(full[None, None], KT)


def test_tensor_cores_own_cycles_per_k_tile():
    # 128x256 tiles: 64 (BF16, FP16), 32 (TF32) or 128 (FP8) deep, at 2048, 1024 or 4096 multiply-adds per SM per
    # clock
    for spec in list_kernels("cuda/tc4_persistent_*"):
        build = spec.instrumented(Problem(4096, 4096, 4096, spec.precision))
        assert build.ideal_ktile_cycles == 1024
        assert build.k_tile == {"bf16": 64, "fp16": 64, "tf32": 32, "fp8": 128}[spec.precision]


def test_the_stamped_build_follows_the_tile_tc4_picks():
    spec = get_kernel("cuda/tc4_persistent_bf16")
    seed, big = (spec.instrumented(Problem(*shape, "bf16")) for shape in ((2048, 3072, 4096), (4096,) * 3))
    assert seed.spec.params["BN"] == 192 and seed.spec.params["TIMELINE"] == 1 and seed.ideal_ktile_cycles == 768
    assert big.spec.params["BN"] == 256 and big.ideal_ktile_cycles == 1024


def test_only_tc4_walking_whole_tiles_has_stamps():
    square = Problem(4096, 4096, 4096, "bf16")
    for name in ("cuda/tc5_swap_ab_tf32", "cuda/tc3_warp_specialized_bf16", "cuda/v10_register_prefetch"):
        spec = get_kernel(name)
        assert spec.instrumented(Problem(4096, 4096, 4096, spec.precision)) is None
        with pytest.raises(GemmlabError, match="has none"):
            timeline.stamped(spec, Problem(4096, 4096, 4096, spec.precision))
    tc6 = get_kernel("cuda/tc6_stream_k_bf16")
    assert tc6.instrumented(Problem(8192, 8192, 8192, "bf16")) is None  # it splits tiles there: no stamps
    assert tc6.instrumented(square).spec.params == get_kernel("cuda/tc4_persistent_bf16").instrumented(
        square).spec.params  # where it splits none, it runs tc4's binary, stamps and all
    t = timeline.stamped(get_kernel("cuda/tc4_persistent_bf16"), square).spec
    assert t.params["TIMELINE"] == 1 and t.config_error() is None
    with pytest.raises(GemmlabError, match="TIMELINE=2: 0 or 1"):
        dataclasses.replace(t, params={**t.params, "TIMELINE": 2})


def test_markdown_table_holds_every_record():
    rec = {"kernel": "cuda/tc4_persistent_bf16", "problem": {"m": 4096, "n": 4096, "k": 4096, "precision": "bf16"},
           "summary": timeline.summarize(_launch(), KT, 1024)}
    text = timeline.markdown({"env": {"gpu": {"name": "NVIDIA H200"}, "command": "gemmlab timeline"},
                              "records": [rec, rec]})
    rows = [line for line in text.splitlines() if line.startswith("| cuda/tc4")]
    assert len(rows) == 2 and "1,024 (1,024, 100.0%)" in rows[0] and "| 500 | 50 |" in rows[0]
    assert "NVIDIA H200" in text and len(rows[0].split("|")) == len(timeline.COLUMNS) + 2
