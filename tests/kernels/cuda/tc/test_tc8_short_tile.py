"""tc8's short tile (WgmmaKernel.short_tile, GluonKernel.short_tile): 128-row tiles where they run a block-scaled
problem sooner than 192-row ones (tiles.short_pays), checked against the H100 run that fitted SHORT_COST."""
import json
import math
from pathlib import Path

import pytest

from gemmlab.kernels.cuda.tc.model import tiles
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

ROOT = Path(__file__).resolve().parents[4]
RUNS = [ROOT / "results/h100/tc8_short_tile_fp8_block.json", ROOT / "results/h100/tc8_short_tile_squares_fp8_block.json"]
SPECS = ("cuda/tc8_block_scaled_fp8", "cuda/tc8_cluster_fp8_block", "gluon/tc8_block_scaled_fp8")
SHORT = "BM=128,STAGES=5,CONSUMER_REGS=232,PRODUCER_REGS=40"


def _measured() -> dict:
    """{(shape, spec): (registered µs, 128-row variant µs)} of the H100 run."""
    times: dict = {}
    for path in RUNS:
        for r in json.loads(path.read_text())["records"]:
            if r.get("median_ms") and r.get("verified"):
                times.setdefault((r["m"], r["n"], r["k"]), {})[r["kernel"]] = r["median_ms"] * 1e3
    return {(shape, name): (t[name], t[f"{name}[{SHORT}]"]) for shape, t in times.items() for name in SPECS}


def test_the_rule_picks_the_faster_height_where_the_h100_ran_both():
    """At 21 shapes of M = 256-4096, each of the three specs: the rule's height is the faster one at all but one of
    the 63 (gluon at 1024³, 13.2 µs against 11.7), and the rule's choice is 1.09x faster than the 192-row tile
    alone in geomean, never more than 13% slower."""
    measured = _measured()
    assert len(measured) == 63
    misses, gains = [], []
    for (shape, name), (tall, short) in measured.items():
        runs = get_kernel(name).for_problem(Problem(*shape, "fp8_block"), 132)
        picked = short if runs.params["BM"] == 128 else tall
        if picked > min(tall, short):
            misses.append((name, shape))
        gains.append(tall / picked)
    assert misses == [("gluon/tc8_block_scaled_fp8", (1024, 1024, 1024))]
    assert math.exp(sum(map(math.log, gains)) / len(gains)) > 1.08 and min(gains) > 0.88


@pytest.mark.parametrize("name", SPECS)
def test_the_short_build_is_the_measured_variant(name):
    """What short() builds is the variant the H100 timed: 128 rows, 232 consumer registers, a ring of 5 stages (the
    192-row tile's 4 stages of bytes), pinned; an FP32 C's ring scales the same way (Gluon's 3 stages stay 3)."""
    spec = get_kernel(name)
    short = spec.short()
    want = {"BM": 128, "STAGES": 5, "CONSUMER_REGS": 232, "PRODUCER_REGS": 40}
    assert {k: short.params[k] for k in want} == want and short.short_tile is None
    assert short.for_problem(Problem(256, 14336, 4096, "fp8_block")) == short
    f32 = spec.for_formats(spec.prec.input_dtype, spec.prec.input_dtype, "float32")
    assert f32.short().params["STAGES"] == f32.params["STAGES"] * 320 // 256
    assert f32.short().params["OUT_BF16"] == 0


def test_short_pays_compares_the_busiest_clusters_rows():
    p = {"BM": 192, "BN": 128}
    # M = 256: 192-row tiles pad it to 384 rows; the same 224 tiles, 2 waves either way
    assert tiles.short_pays(256, 14336, p, 128)
    # 1536³: 96 tall tiles are one wave, 144 short ones two
    assert not tiles.short_pays(1536, 1536, p, 128)
    # 4096³: 704 tiles (6 waves of 192 rows) against 1024 (8 of 128): 1,152 rows against 1,024 × SHORT_COST
    assert not tiles.short_pays(4096, 4096, p, 128) and 1024 * tiles.SHORT_COST > 1152 > 1024
    # clusters halve the places and double the rows a cluster tile covers
    assert tiles.short_pays(512, 14336, {**p, "CM": 2}, 128) and not tiles.short_pays(512, 14336, p, 128)
    assert not tiles.short_pays(256, 14336, p, 192) and not tiles.short_pays(256, 14336, {**p, "STREAM_K": 1}, 128)
    assert tiles.with_tile_rows({"BM": 192, "BN": 128, "STAGES": 4}, 128, CONSUMER_REGS=232) == \
        {"BM": 128, "BN": 128, "STAGES": 5, "CONSUMER_REGS": 232}


def test_only_the_block_scaled_specs_have_a_short_tile():
    """tc8_promoted_fp8 (per tensor) and tc6's stream-K build on tc8's source were not measured on 128 rows."""
    assert get_kernel("cuda/tc8_promoted_fp8").short_tile is None
    assert get_kernel("cuda/tc6_stream_k_fp8_block").short_tile is None
    for name in SPECS:
        assert get_kernel(name).short_tile == {"BM": 128, "CONSUMER_REGS": 232, "PRODUCER_REGS": 40}


@pytest.mark.parametrize("name", SPECS)
def test_a_variant_is_pinned_to_the_parameters_it_names(name):
    """bench --variant of a spec that picks its height: the variant runs what it names everywhere (naming the
    registered BM alone pins the 192-row tile, what SHORT_COST would be fitted against again)."""
    from gemmlab.harness.bench import variant

    mid = Problem(256, 14336, 4096, "fp8_block")
    tall = variant(name, {"BM": 192})
    assert tall.name == f"{name}[BM=192]" and tall.for_problem(mid).params["BM"] == 192
    regs = variant(name, {"PRODUCER_REGS": 24}).for_problem(mid).params
    assert (regs["BM"], regs["PRODUCER_REGS"]) == (192, 24)
    assert variant(name, {"BM": 128}).for_problem(Problem(4096, 4096, 4096, "fp8_block")).params["BM"] == 128


@pytest.mark.parametrize("name", SPECS)
def test_a_record_is_remodeled_on_the_height_it_ran(name):
    """roofline.runs_for: a record of the 192-row build at a shape where the spec now picks 128 rows keeps its own
    tile (B read once per 192 rows), the CUDA and the Gluon specs alike."""
    from gemmlab.analysis.roofline import runs_for

    spec, mid = get_kernel(name), Problem(1024, 4096, 4096, "fp8_block")
    tall = dict(spec.params)
    runs = runs_for(spec, mid, tall)
    assert runs.params["BM"] == 192 and runs.for_problem(mid).params["BM"] == 192
    assert runs.traffic(mid).global_read < spec.traffic(mid).global_read


def test_gluons_short_build_keeps_its_ring_through_a_change_of_c():
    """out_params set each C type's ring for the 192-row tile; the short build scales them too, so changing C's
    type on it and back leaves its 5 stages."""
    spec = get_kernel("gluon/tc8_block_scaled_fp8")
    dtype = spec.prec.input_dtype
    short = spec.short()
    assert short.for_formats(dtype, dtype, "float32").for_formats(dtype, dtype, "bfloat16").params == short.params
    assert short.for_formats(dtype, dtype, "float32").params["STAGES"] == 3
