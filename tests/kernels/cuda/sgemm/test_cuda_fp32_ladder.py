"""The FP32 CUDA ladder (v3 and up) without a GPU: compiles for sm_90a with no spills and bounded registers,
launch geometry covers ragged shapes, invalid tile combinations are rejected before compiling, traffic models.
v10's kernel source also runs on the CPU in more tile configurations than the ladder-wide host test
(test_cuda_host.py) uses, through hostsim (g++, one std::thread per CUDA thread, a std::barrier for
__syncthreads), so its index math, grouped block order and edge guards are checked against float64 here."""
import importlib

import hostsim
import pytest
from hostsim import host_builds  # noqa: F401  (the session's host libraries, a pytest fixture)

from gemmlab.errors import InvalidConfigError
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.problem import Problem

LEVELS = {  # module: (level, most registers ptxas may assign, threads per block)
    "v3_1d_blocktile": (3, 64, 512),
    "v4_2d_blocktile": (4, 168, 256),
    "v5_vectorized": (5, 128, 256),
    "v6_bank_conflict_free": (6, 128, 256),
    "v7_warptile": (7, 128, 256),
    "v8_cp_async": (8, 176, 256),
    "v9_autotuned": (9, 176, 256),
    "v10_register_prefetch": (10, 255, 256),
}


def spec_of(module: str):
    (spec,) = importlib.import_module(f"gemmlab.kernels.cuda.sgemm.{module}").SPECS
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
    if "STAGES" in p or "GROUP_M" in p:  # v8 to v10: a 1D grid of tiles and a dynamic shared ring
        assert geo.grid == (tiles_m * tiles_n, 1, 1)
        assert geo.smem == 4 * p.get("STAGES", 2) * p["BK"] * (p["BM"] + 4 + p["BN"])
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
    from gemmlab.kernels.cuda.sgemm.v8_cp_async import constraints

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
    ("v10_register_prefetch", {"BK": 6}, "multiple of 4"),
    ("v10_register_prefetch", {"RN": 2}, "lanes, not 32"),
    ("v10_register_prefetch", {"BM": 256, "RM": 4, "RN": 2, "BK": 4}, "split the B tile's quads evenly"),
    ("v10_register_prefetch", {"BK": 128}, "per-block limit"),
    ("v10_register_prefetch", {"MIN_BLOCKS": 5}, "exceed an SM's shared memory"),
    ("v10_register_prefetch", {"MIN_BLOCKS": 9, "BK": 8}, "registers a thread"),
    ("v10_register_prefetch", {"MIN_BLOCKS": None}, "missing parameters MIN_BLOCKS"),
])
def test_invalid_configs_rejected_before_compiling(module, params, reason):
    spec = spec_of(module)
    merged = {**spec.params, **params}
    merged = {k: v for k, v in merged.items() if v is not None}
    with pytest.raises(InvalidConfigError, match=reason):
        CudaKernel(name=spec.name, level=spec.level, precision="fp32", title="t", source=spec.source,
                   entry=spec.entry, params=merged, geometry=spec.geometry, constraints=spec.constraints)


@pytest.mark.parametrize("module, bm, bn", [("v3_1d_blocktile", 64, 64), ("v4_2d_blocktile", 128, 128),
                                            ("v8_cp_async", 128, 128), ("v10_register_prefetch", 128, 256)])
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


@pytest.mark.parametrize("module, shape", [("v9_autotuned", (4096, 4096, 4096)),
                                           ("v10_register_prefetch", (2048, 3072, 4096))])
def test_tuned_traffic_follows_the_tile_tuned_for_the_gpu(module, shape, tmp_path, monkeypatch):
    """Without a GPU the fallback tile's traffic; on the H200 its built-in tuned tile's (at a shape where the table
    holds another tile), which reads A once per tile column and B once per tile row of that tile."""
    from gemmlab import device
    from gemmlab.dispatch import shipped_gpu

    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    spec, problem = spec_of(module), Problem(*shape)
    m, n, k = problem.shape

    def reads(p):
        return 4 * (m * k * -(-n // p["BN"]) + k * n * -(-m // p["BM"]))

    monkeypatch.setattr(device, "gpu", lambda: None)
    assert spec.traffic(problem).global_read == reads(spec.params)  # no GPU: the fallback tile
    monkeypatch.setattr(device, "gpu", shipped_gpu)
    tuned = spec.concrete(problem).params
    assert reads(tuned) != reads(spec.params)  # the H200's table holds another tile here
    assert spec.traffic(problem).global_read == reads(tuned)


@pytest.mark.parametrize("module, level", [("v9_autotuned", 9), ("v10_register_prefetch", 10)])
def test_tuned_table_configs_compile_without_spills(module, level):
    import importlib

    tuned = importlib.import_module(f"gemmlab.kernels.cuda.sgemm.{module}")
    maker = importlib.import_module(tuned.make_spec.__module__)
    for gpu, entries in tuned.TUNED.items():
        for label, entry in entries.items():
            assert maker.constraints(entry["params"]) == [], (gpu, label)
            report = tuned.make_spec(f"cuda/{module}", level, label, entry["params"], "").compile("sm_90a").report
            assert report.spills == 0 and report.registers <= 255, (gpu, label, report)


def test_v10_h200_table_fills_the_waves_of_the_seed_shape():
    """On the H200 (132 SMs) the seed shape gets the 128×192 tile: 256 blocks, 1.94 waves at one block per SM,
    where the large shapes' 128×256 tile would make 192 (1.45 waves)."""
    spec = spec_of("v10_register_prefetch")
    seed, big = Problem(2048, 3072, 4096), Problem(4096, 4096, 4096)
    small_tile = spec.concrete(seed, "NVIDIA H200")
    assert (small_tile.params["BM"], small_tile.params["BN"]) == (128, 192)
    assert small_tile.launch_geometry(seed).grid[0] == 16 * 16
    assert dict(spec.concrete(big, "NVIDIA H200").params) == dict(spec.params)


# ---- v10 register prefetch ----------------------------------------------------------------------------------
def test_v10_default_is_one_block_of_256_threads_per_sm():
    from gemmlab.kernels.cuda.sgemm.common.sgemm import SM_REGISTERS
    from gemmlab.kernels.cuda.sgemm.v10_register_prefetch import quads_per_thread, smem_bytes, threads

    spec = spec_of("v10_register_prefetch")
    p = dict(spec.params)
    report = spec.compile("sm_90a").report
    assert threads(p) == 256 and quads_per_thread(p) == (2, 4)
    assert smem_bytes(p) == 2 * 16 * (128 + 4 + 256) * 4  # over 48 KiB: dynamic, opted in at load
    assert report.smem_bytes == 0 and report.barriers == 1, report  # all of it dynamic, one barrier
    assert report.registers * threads(p) <= SM_REGISTERS, report


def test_v10_numba_tiling_fits_two_blocks_per_sm():
    """numba's v10_register_prefetch tiling in CUDA C: no spills, at most 128 registers (two 256-thread blocks)."""
    from gemmlab.kernels.cuda.sgemm.v10_register_prefetch import NUMBA_V8, make_spec, threads

    assert threads(NUMBA_V8) == 256
    report = make_spec("cuda/v10_register_prefetch", 10, "numba", NUMBA_V8, "").compile("sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0 and report.registers <= 128, report


def test_v10_search_space_is_valid_and_compiles_without_spills():
    from gemmlab import tune
    from gemmlab.kernels.cuda.sgemm.v10_register_prefetch import NUMBA_V8, PARAMS, constraints, make_spec

    space = tune.V10_SEARCH_SPACE
    assert all(constraints(p) == [] for p in space)
    assert len({tuple(sorted(p.items())) for p in space}) == len(space)
    assert PARAMS in space and NUMBA_V8 in space
    assert tune.candidates(Problem(4096, 4096, 4096), kernel="cuda/v10_register_prefetch") == list(space)
    for p in space:
        report = make_spec("cuda/v10_register_prefetch", 10, "candidate", p, "").compile("sm_90a").report
        assert report.spills == 0 and report.stack_bytes == 0, (p, report)
        assert report.registers * 32 * (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * p["MIN_BLOCKS"] <= 65536


def test_v10_tunes_into_its_own_cache(tmp_path, monkeypatch):
    from gemmlab import tune

    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    assert "cuda/v10_register_prefetch" in tune.TUNABLE and "cuda/v9_autotuned" in tune.TUNABLE
    v9, v10 = tune.cache_path("cuda/v9_autotuned"), tune.cache_path("cuda/v10_register_prefetch")
    assert v9 == tune.cache_path() and v9 != v10 and v9.parent == v10.parent
    tune._store("Some GPU", "100x200x300", {"params": dict(tune.V10_SEARCH_SPACE[0]), "ms": 1.0}, v10)
    assert tune.lookup("Some GPU", Problem(100, 200, 300)) is None  # v9 never sees v10's parameters
    assert tune._cache_for("cuda/v10_register_prefetch", tmp_path / "x.json").name == v10.name


def test_v10_runs_its_tuned_parameters_and_defaults_without_a_cache(tmp_path, monkeypatch):
    from gemmlab import tune

    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    spec = spec_of("v10_register_prefetch")
    problem = Problem(2048, 3072, 4096)
    assert spec.params_for(problem, "Some GPU") == dict(spec.params)  # nothing tuned: the measured default
    small = dict(tune.V10_SEARCH_SPACE[5])  # numba's 128×128×8 tiling
    tune._store("Some GPU", problem.label(), {"params": small, "ms": 1.0}, tune.cache_path("cuda/v10_register_prefetch"))
    concrete = spec.concrete(problem, "Some GPU")
    assert dict(concrete.params) == small and concrete.source == "v10_register_prefetch.cu"
    assert concrete.launch_geometry(problem).grid[0] == (2048 // 128) * (3072 // 128)
    assert spec_of("v9_autotuned").params_for(problem, "Some GPU") == dict(spec_of("v9_autotuned").params)


def test_a_gpu_of_the_h200_s_chip_runs_the_h200_s_tuned_tiles(tmp_path, monkeypatch):
    """With no tune cache, an H100 SXM (compute capability 9.0, 132 SMs: the H200's chip) runs the tile the H200's
    table measured fastest at a shape (512x4096x14336: 128x128, where the 128x256 fallback fills 0.5 waves); an H100
    PCIe (114 SMs) is another chip and runs the fallback. A plan's GPU (its GPUInfo, make_plan's) is matched by its
    chip; a GPU named alone only where it is this machine's."""
    from gemmlab import device
    from gemmlab.device import GPUInfo
    from gemmlab.kernels.cuda.sgemm import v10_register_prefetch as v10

    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    spec = spec_of("v10_register_prefetch")
    problem = Problem(512, 4096, 14336)
    sxm = GPUInfo("NVIDIA H100 80GB HBM3", 132, (9, 0), 50 * 2**20, 232448, 1980.0, 80 * 2**30, "", "")
    pcie = GPUInfo("NVIDIA H100 PCIe", 114, (9, 0), 50 * 2**20, 232448, 1755.0, 80 * 2**30, "", "")
    assert v10.TUNED["NVIDIA H200"]["512x4096x14336"]["params"] == v10._T8x8 != v10.PARAMS
    for info, expected in ((sxm, v10._T8x8), (pcie, v10.PARAMS)):
        monkeypatch.setattr(device, "gpu", lambda info=info: info)
        assert spec.params_for(problem, info.name) == expected, info.name
        assert dict(spec.concrete(problem, info.name).params) == expected
    # GPU 0 an H100 PCIe, the plan's GPU an H100 SXM: the plan's GPUInfo decides, not GPU 0's
    monkeypatch.setattr(device, "gpu", lambda: pcie)
    assert spec.params_for(problem, sxm.name) == v10.PARAMS  # a name alone: matched against this machine's GPU
    assert spec.params_for(problem, info=sxm) == v10._T8x8 and spec.params_for(problem, info=pcie) == v10.PARAMS
    assert dict(spec.concrete(problem, info=sxm).params) == v10._T8x8


V10_HOST_CONFIGS = {
    "default": None,  # the spec's PARAMS
    "numba_v8": "NUMBA_V8",
    "8x16_lanes_128_threads_grouped": {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 64, "RM": 2, "RN": 4,
                                       "GROUP_M": 2, "MIN_BLOCKS": 2},
    "8x12_lanes_128x192": {"BM": 128, "BN": 192, "BK": 16, "WM": 32, "WN": 96, "RM": 2, "RN": 3, "GROUP_M": 1,
                           "MIN_BLOCKS": 1},
    "12x8_lanes_192x128": {"BM": 192, "BN": 128, "BK": 16, "WM": 48, "WN": 64, "RM": 3, "RN": 2, "GROUP_M": 1,
                           "MIN_BLOCKS": 1},
}


@pytest.mark.skipif(not hostsim.HAVE_GXX, reason="needs g++ (C++20) to run the kernel source on the CPU")
@pytest.mark.usefixtures("host_builds")
@pytest.mark.parametrize("config", V10_HOST_CONFIGS)
def test_v10_kernel_source_on_cpu(config):
    from gemmlab.kernels.cuda.sgemm import v10_register_prefetch as v10

    chosen = V10_HOST_CONFIGS[config]
    p = dict(v10.PARAMS) if chosen is None else getattr(v10, chosen) if isinstance(chosen, str) else chosen
    assert v10.constraints(p) == []
    spec = v10.make_spec("cuda/v10_register_prefetch", 10, config, p, "")
    # ragged in every dimension, K below one tile, K%4 and N%4 != 0, several tiles with grouped order, exact tiles
    shapes = [(1, 1, 1), (33, 17, 65), (127, 129, 255), (5, 300, 13), (257, 260, 32), (300, 388, 20),
              (p["BM"], p["BN"], 2 * p["BK"])]
    for shape in shapes:
        for offset in (0, 1):  # 16-byte aligned operands (the 128-bit path where K, N allow) and misaligned ones
            hostsim.check_gemm_on_host(spec, Problem(*shape), offset, seed=10)


def test_autotuned_records_the_parameters_it_runs_with():
    """v9 resolves its tile per shape: the spec the bench records and compiles is the tuned one, not v8's fallback."""
    from gemmlab.kernels.cuda.sgemm.v9_autotuned import TUNED
    from gemmlab.kernels.registry import get_kernel

    spec = get_kernel("cuda/v9_autotuned")
    problem = Problem(4096, 4096, 4096)
    concrete = spec.concrete(problem, "NVIDIA H200")
    assert dict(concrete.params) == TUNED["NVIDIA H200"]["4096x4096x4096"]["params"]
    assert dict(concrete.params) != dict(spec.params)
    assert get_kernel("cuda/v8_cp_async").for_problem(problem) is get_kernel("cuda/v8_cp_async")


def test_v10_configurations_cover_every_tile_it_can_pick(tmp_path, monkeypatch):
    from gemmlab import tune
    from gemmlab.kernels.cuda.sgemm.v10_register_prefetch import TUNED

    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    spec = spec_of("v10_register_prefetch")
    h200 = [dict(c.params) for c in spec.configurations("NVIDIA H200")]
    assert len(h200) == 3 and dict(spec.params) in h200  # the shapes share three tiles, the fallback's one of them
    assert {(p["BM"], p["BN"]) for p in h200} == {(e["params"]["BM"], e["params"]["BN"])
                                                  for e in TUNED["NVIDIA H200"].values()}
    assert [dict(c.params) for c in spec.configurations("Some GPU")] == [dict(spec.params)]
    cached = dict(tune.V10_SEARCH_SPACE[5])
    tune._store("Some GPU", "100x200x300", {"params": cached, "ms": 1.0}, tune.cache_path(spec.family))
    assert [dict(c.params) for c in spec.configurations("Some GPU")] == [cached, dict(spec.params)]


def test_sanitizer_child_runs_each_configuration_of_a_tuned_kernel(monkeypatch):
    """compute-sanitizer must see every compiled variant: the child checks each configuration at each shape."""
    from types import SimpleNamespace

    from gemmlab import device
    from gemmlab.harness import sweep

    monkeypatch.setattr(device, "gpu", lambda: SimpleNamespace(name="NVIDIA H200"))
    seen = []

    def fake_check(spec, problem, seed):
        seen.append(((spec.params["BM"], spec.params["BN"]), problem.shape))
        return SimpleNamespace(passed=True)

    monkeypatch.setattr(sweep, "check", fake_check)
    assert sweep._sanitize_target(["cuda/v10_register_prefetch", "cuda/v8_cp_async"]) == 0
    tiles = [tile for tile, _ in seen]
    assert tiles.count((128, 256)) == tiles.count((128, 192)) == len(sweep.SANITIZE_SHAPES)
    assert tiles.count((128, 128)) == 2 * len(sweep.SANITIZE_SHAPES)  # v10's third tile and v8's one


def test_sanitizer_child_runs_the_stream_k_levels_through_whole_tiles_and_a_split_tail(monkeypatch):
    """The sanitizer's ragged shapes split tiles only where a problem has fewer tiles than SMs; the stream-K levels
    also run STREAM_K_SANITIZE_SHAPE, where their walk takes whole tiles and then splits the rest, ragged in M and
    N, so that the fixup runs beside data-parallel tiles under memcheck and racecheck. The other levels do not."""
    from types import SimpleNamespace

    from gemmlab import device
    from gemmlab.harness import sweep
    from gemmlab.kernels.cuda.tc.model.stream_k import stream_k_dp_tiles, stream_k_grid
    from gemmlab.kernels.cuda.tc.model.tiles import bk
    from gemmlab.kernels.geometry import ceil_div
    from gemmlab.kernels.registry import get_kernel
    from gemmlab.problem import Problem

    names = ["cuda/tc6_stream_k_bf16", "cuda/tc6_stream_k_tf32", "cuda/tc6_stream_k_fp8_block"]
    for name in names:
        spec = get_kernel(name)
        problem = Problem(*sweep.STREAM_K_SANITIZE_SHAPE, spec.precision)
        p = spec.for_problem(problem).params
        tiles = ceil_div(problem.m, p["BM"]) * ceil_div(problem.n, p["BN"])
        grid = stream_k_grid(tiles, ceil_div(problem.k, bk(spec.precision)), 132)
        assert 0 < stream_k_dp_tiles(tiles, grid, p["SK_FILL"], p["SK_SKIP_FILL"]) < tiles, name
    monkeypatch.setattr(device, "gpu", lambda: SimpleNamespace(name="NVIDIA H200"))
    seen = []
    monkeypatch.setattr(sweep, "check", lambda spec, problem, seed: seen.append((spec.name, problem.shape))
                        or SimpleNamespace(passed=True))
    assert sweep._sanitize_target(names + ["cuda/tc4_persistent_bf16"]) == 0
    at_split = {name for name, shape in seen if shape == sweep.STREAM_K_SANITIZE_SHAPE}
    assert at_split == set(names)
