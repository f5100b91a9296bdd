"""The FP32 CUDA ladder (v3 and up) without a GPU: compiles for sm_90a with no spills and bounded registers,
launch geometry covers ragged shapes, invalid tile combinations are rejected before compiling, traffic models."""
import importlib

import pytest

from gemmlab.errors import InvalidConfigError
from gemmlab.kernels.cuda._kernel import CudaKernel
from gemmlab.problem import Problem

LEVELS = {  # module: (level, most registers ptxas may assign, threads per block)
    "v3_1d_blocktile": (3, 64, 512),
    "v4_2d_blocktile": (4, 168, 256),
    "v5_vectorized": (5, 128, 256),
    "v6_bank_conflict_free": (6, 128, 256),
    "v7_warptile": (7, 128, 256),
    "v8_cp_async": (8, 176, 256),
    "v9_autotuned": (9, 176, 256),
}


def spec_of(module: str):
    (spec,) = importlib.import_module(f"gemmlab.kernels.cuda.{module}").SPECS
    return spec


@pytest.mark.parametrize("module", LEVELS)
def test_compiles_without_spills(module):
    level, max_regs, _ = LEVELS[module]
    spec = spec_of(module)
    assert spec.level == level and spec.precision == "fp32" and spec.name == f"cuda/{module}"
    report = spec.compile("sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0, report
    assert report.registers <= max_regs, report


@pytest.mark.parametrize("module", LEVELS)
def test_docstring_names_change_and_prediction(module):
    doc = spec_of(module).doc
    assert "What changed against" in doc and "Predicted gain" in doc


@pytest.mark.parametrize("module", LEVELS)
@pytest.mark.parametrize("shape", [(1, 1, 1), (33, 17, 65), (127, 129, 255), (4097, 257, 31), (4096, 4096, 4096)])
def test_grid_covers_ragged_shapes(module, shape):
    _, _, threads = LEVELS[module]
    spec = spec_of(module)
    problem = Problem(*shape)
    geo = spec.launch_geometry(problem)
    p = spec.params
    tiles_m, tiles_n = -(-problem.m // p["BM"]), -(-problem.n // p["BN"])
    assert geo.threads == threads
    if "STAGES" in p:  # v8, v9: a 1D grid of tiles and a dynamic shared ring
        assert geo.grid == (tiles_m * tiles_n, 1, 1)
        assert geo.smem == 4 * p["STAGES"] * p["BK"] * (p["BM"] + 4 + p["BN"])
    else:
        assert geo.grid == (tiles_n, tiles_m, 1)


def test_v9_uses_cached_tuning(tmp_path, monkeypatch):
    from gemmlab import tune

    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    best = dict(tune.SEARCH_SPACE[-2])
    tune._store("Some GPU", "100x200x300", {"params": best, "ms": 1.0}, tune.cache_path())
    spec = spec_of("v9_autotuned")
    assert spec.params_for(Problem(100, 200, 300), "Some GPU") == best
    assert spec.params_for(Problem(120, 200, 300), "Some GPU") == best  # nearest cached shape
    assert spec.params_for(Problem(100, 200, 300), "Other GPU") == spec.params
    geo = spec.concrete(Problem(100, 200, 300), "Some GPU").launch_geometry(Problem(100, 200, 300))
    assert geo.threads == (best["BM"] // best["WM"]) * (best["BN"] // best["WN"]) * 32


def test_tune_search_space_is_valid():
    from gemmlab import tune
    from gemmlab.kernels.cuda.v8_cp_async import constraints

    assert all(constraints(p) == [] for p in tune.SEARCH_SPACE)
    assert len({tuple(sorted(p.items())) for p in tune.SEARCH_SPACE}) == len(tune.SEARCH_SPACE)
    assert tune.candidates(Problem(4096, 4096, 4096)) and tune.candidates(Problem(1, 1, 1))


@pytest.mark.parametrize("module, params, reason", [
    ("v3_1d_blocktile", {"BM": 64, "BN": 64, "BK": 8, "TM": 6}, "TM must divide BM"),
    ("v3_1d_blocktile", {"BM": 128, "BN": 128, "BK": 8, "TM": 8}, "past the 1024 limit"),
    ("v4_2d_blocktile", {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 3}, "TN must divide BN"),
    ("v5_vectorized", {"BM": 128, "BN": 128, "BK": 6}, "multiple of 4"),
    ("v5_vectorized", {"BM": 128, "BN": 128, "BK": 128}, "48 KiB"),
    ("v7_warptile", {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 64}, "not 32"),
    ("v8_cp_async", {"BK": 4}, "multiple of 8"),
    ("v8_cp_async", {"STAGES": 1}, "at least 2 stages"),
    ("v8_cp_async", {"BK": 32, "STAGES": 16}, "per-block limit"),
    ("v8_cp_async", {"RN": 4}, "lanes, not 32"),
    ("v8_cp_async", {"KUNROLL": 3}, "must divide BK"),
    ("v8_cp_async", {"MIN_BLOCKS": 9}, "registers a thread"),
    ("v8_cp_async", {"GROUP_M": None}, "missing parameters GROUP_M"),
])
def test_invalid_configs_rejected_before_compiling(module, params, reason):
    spec = spec_of(module)
    merged = {**spec.params, **params}
    merged = {k: v for k, v in merged.items() if v is not None}
    with pytest.raises(InvalidConfigError, match=reason):
        CudaKernel(name=spec.name, level=spec.level, precision="fp32", title="t", source=spec.source,
                   entry=spec.entry, params=merged, geometry=spec.geometry, constraints=spec.constraints)


@pytest.mark.parametrize("module, bm, bn", [("v3_1d_blocktile", 64, 64), ("v4_2d_blocktile", 128, 128),
                                            ("v8_cp_async", 128, 128)])
def test_traffic_model(module, bm, bn):
    spec = spec_of(module)
    problem = Problem(4096, 4096, 4096)
    t = spec.traffic(problem)
    n = 4096
    assert t.global_read == 4 * (n * n * (n // bn) + n * n * (n // bm))
    assert t.global_write == 4 * n * n
    assert t.intensity(problem) == pytest.approx(2 * n**3 / t.total)
    ragged = spec.traffic(Problem(129, 130, 7))  # a partial tile counts as a whole one
    assert ragged.global_read == 4 * (129 * 7 * -(-130 // bn) + 7 * 130 * -(-129 // bm))


def test_v9_traffic_follows_tuned_tile(tmp_path, monkeypatch):
    from gemmlab import tune

    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    spec = spec_of("v9_autotuned")
    problem = Problem(4096, 4096, 4096)
    assert spec.traffic(problem) == spec_of("v8_cp_async").traffic(problem)  # no GPU: the fallback tile


def test_tuned_table_configs_compile_without_spills():
    from gemmlab.kernels.cuda.v8_cp_async import make_spec
    from gemmlab.kernels.cuda.v9_autotuned import TUNED

    for gpu, entries in TUNED.items():
        for label, entry in entries.items():
            report = make_spec("cuda/v9_autotuned", 9, label, entry["params"], "").compile("sm_90a").report
            assert report.spills == 0 and report.registers <= 255, (gpu, label, report)
