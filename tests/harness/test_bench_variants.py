"""gemmlab bench --variant: a registered kernel with some parameters changed runs beside its registered self and its
peer, checked by the kernel's own constraints, modeled at its own tile, compared with the registered parameters
in the same run (variant_gain), and never taken into kernel="auto"'s dispatch table."""
import dataclasses

import pytest

from gemmlab import device, dispatch
from gemmlab.analysis.remodel import remodel_record
from gemmlab.analysis.roofline import ceilings_for, device_spec
from gemmlab.cli import main
from gemmlab.errors import InvalidConfigError, UnknownKernelError
from gemmlab.harness import bench, bench_gpu, bench_records
from gemmlab.harness.record import BenchRecord, Status
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

TC8 = "cuda/tc8_block_scaled_fp8"
TWO_WARPGROUPS = {"BM": 128, "STAGES": 5, "CONSUMER_REGS": 232, "PRODUCER_REGS": 40}
cpu_only = pytest.mark.skipif(device.gpu() is not None, reason="checks the CPU-only run")


def test_a_variant_is_the_registered_kernel_with_its_changes():
    v = bench.variant(TC8, TWO_WARPGROUPS)
    base = get_kernel(TC8)
    assert v.name == TC8 + "[BM=128,STAGES=5,CONSUMER_REGS=232,PRODUCER_REGS=40]"
    # a change to what it already has is dropped
    assert bench.variant(TC8, {**TWO_WARPGROUPS, "SCALE_TMA": 2}).name == v.name
    assert v.params == {**base.params, **TWO_WARPGROUPS} and v.variant_of == TC8
    assert (v.source, v.entry, v.precision, v.level) == (base.source, base.entry, base.precision, base.level)
    assert "bench --variant" in v.auto_refusal()  # kernel="auto" never runs one
    # it launches its own tile: two consumer warpgroups of 128 threads and the producer
    problem = Problem(4096, 4096, 4096, "fp8_block")
    assert v.launch_geometry(problem).threads == 384 and base.launch_geometry(problem).threads == 512


@pytest.mark.parametrize("name,changes,error,words", [
    (TC8, {"FOO": 1}, InvalidConfigError, "has no parameter FOO; its parameters: BM=192"),
    (TC8, {"STAGES": 4}, InvalidConfigError, "STAGES=4 is what it has registered"),
    (TC8, {"BN": 256}, InvalidConfigError, "shared memory"),  # the kernel's own constraints
    (TC8, {"CONSUMER_REGS": 232}, InvalidConfigError, "setmaxnreg"),
    ("peers/cublas_fp32", {"X": 1}, InvalidConfigError, "takes the wgmma levels"),
    ("numba/v2_smem", {"TILE": 16}, InvalidConfigError, "takes the wgmma levels"),  # compiled from its tiling
    ("cuda/v1_naive", {"FOO": 1}, InvalidConfigError, "may set BX, BY, ROWS_ON_X, not FOO"),
    ("cuda/v1_naive", {"BX": 64}, InvalidConfigError, "1024-thread block limit"),
    ("cuda/v10_register_prefetch", {"BN": 128}, InvalidConfigError, "takes the wgmma levels"),  # tuned table's
    ("cuda/tc4_persistent_fp8", {"OUT_BF16": 0}, InvalidConfigError, "a call's dtypes pick"),
    ("cuda/nope", {"BM": 1}, UnknownKernelError, "no kernel named"),
])
def test_a_variant_that_cannot_be_is_refused_with_the_reason(name, changes, error, words):
    with pytest.raises(error, match=words):
        bench.variant(name, changes)


def test_variants_alone_run_beside_their_registered_kernels_once_each():
    reordered = dict(reversed(list(TWO_WARPGROUPS.items())))  # the same binary, spelled another way
    opts = bench.BenchOptions(variants=((TC8, TWO_WARPGROUPS), (TC8, reordered), (TC8, {"CM": 2})))
    names = [s.name for s in bench.selected(opts)]
    mine = [n for n in names if not n.startswith("peers/")]
    assert mine == [TC8, bench.variant(TC8, TWO_WARPGROUPS).name, bench.variant(TC8, {"CM": 2}).name]
    with_glob = [s.name for s in bench.selected(dataclasses.replace(opts, kernels="cuda/tc4_persistent_fp8"))]
    assert with_glob[:2] == ["cuda/tc4_persistent_fp8", TC8]


def test_a_variant_is_modeled_at_its_own_tile():
    problem = Problem(4096, 4096, 4096, "fp8_block")
    v = bench.variant(TC8, TWO_WARPGROUPS)
    own = wgmma_traffic("fp8_block", 128, 128, 1, persistent=True, group_m=8, epi_tma=True,
                        block_scales=True)(problem)
    assert v.traffic(problem).global_read == own.global_read
    assert v.traffic(problem).global_read > get_kernel(TC8).traffic(problem).global_read  # 32 row tiles, not 22
    # a record of it remodels from the registered kernel at the record's parameters
    rec = {"kernel": v.name, "variant_of": TC8, "params": dict(v.params), "m": 4096, "n": 4096, "k": 4096,
           "precision": "fp8_block"}
    ceil = ceilings_for(device_spec("h200"), None)
    remodeled = remodel_record(rec, ceil)
    assert remodeled["modeled_read_bytes"] == pytest.approx(own.global_read)


def _rec(kernel, ms, peer_ms, variant_of=None, backend="cuda"):
    r = BenchRecord(kernel, backend, 8, "fp8_block", "", {}, 64, 64, 64, median_ms=ms, status=Status.OK,
                    verified=True, peer="peers/cublaslt_fp8_block", variant_of=variant_of)
    if backend != "peer":
        r.interleaved = {"kernel_ms": ms, "peer_ms": peer_ms}
    return r


def test_variant_gain_is_the_speedup_over_the_registered_kernel_timed_beside_it():
    peer = _rec("peers/cublaslt_fp8_block", 1.0, None, backend="peer")
    base, v = _rec(TC8, 1.25, 1.0), _rec(TC8 + "[CM=2]", 1.0, 0.96, variant_of=TC8)
    v.variant_interleaved = {"kernel_ms": 1.02, "registered_ms": 1.275, "rounds": 20}
    alone = _rec(TC8 + "[CM=1]", 1.1, 1.0, variant_of=TC8)  # its registered kernel's launch did not time with it
    bench_records.link_ratios([peer, base, v, alone])
    assert base.peer_ratio == pytest.approx(0.8) and v.peer_ratio == pytest.approx(0.96)
    assert v.variant_gain == pytest.approx(1.25) and base.variant_gain is None
    assert alone.variant_gain == pytest.approx(1.25 / 1.1)  # their own medians
    assert v.speedup_prev is None  # a variant is not the next level up
    table = dispatch.table_from_results({"env": {"gpu": {"name": "NVIDIA H200"}},
                                         "records": [r.to_json() for r in (peer, base, v)]})
    assert [row["kernel"] for row in table["NVIDIA H200"]["fp8_block"]["64x64x64"]] == [TC8]
    assert v.to_json()["variant_of"] == TC8 and "variant_of" not in base.to_json()


def test_a_gpu_run_times_each_variant_interleaved_with_its_registered_kernel(monkeypatch):
    """run_gpu hands the registered kernel's launch to each of its variants, whose bench_one times the two
    launch by launch (the GPU-free part: the launches handed over and the record's fields)."""
    calls = []

    def fake_bench_one(spec, problem, rec, sets, opts, dev, bw, info, peer_launch=None, registered_launch=None):
        calls.append((spec.name, peer_launch, registered_launch))
        rec.status = Status.OK
        return f"launch:{spec.name}"

    monkeypatch.setattr(bench_gpu, "bench_one", fake_bench_one)
    monkeypatch.setattr(bench_gpu, "check_memory", lambda problem, n: 1)
    monkeypatch.setattr(bench_gpu, "gpu_sets", lambda problem, n, seed: [])

    class Info:
        l2_bytes, arch, max_sm_clock_mhz, sm_count = 50 << 20, "sm_90a", 1980, 132

    import sys
    import types

    fake_cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(Stream=lambda **kw: _Null()),
                                      get_default_memory_pool=lambda: types.SimpleNamespace(free_all_blocks=int))
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    v = bench.variant(TC8, {"CM": 2})
    specs = [get_kernel("peers/cublaslt_fp8_block"), get_kernel(TC8), v]
    records = []
    bench_gpu.run_gpu(specs, [(256, 256, 256)], bench.BenchOptions(pause_s=0), device_spec("h200"), None, Info(),
                   records, {}, None)
    assert calls == [("peers/cublaslt_fp8_block", None, None),
                     (TC8, "launch:peers/cublaslt_fp8_block", None),
                     (v.name, "launch:peers/cublaslt_fp8_block", f"launch:{TC8}")]


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@cpu_only
def test_without_a_gpu_a_variant_is_compiled_and_modeled_beside_its_registered_kernel(tmp_path, capsys):
    out = tmp_path / "v.json"
    assert main(["bench", "--variant", f"{TC8}:BM=128,STAGES=5,CONSUMER_REGS=232,PRODUCER_REGS=40",
                 "--shape", "4096", "--json", str(out)]) == 0
    import json

    records = {r["kernel"]: r for r in json.loads(out.read_text())["records"]}
    v = records[bench.variant(TC8, TWO_WARPGROUPS).name]
    assert set(records) == {TC8, v["kernel"]}
    assert v["variant_of"] == TC8 and v["params"]["BM"] == 128 and v["status"] == "compiled"
    assert v["spills"] == 0 and v["registers"] == 168 and records[TC8]["registers"] == 128
    assert v["model"]["modeled_read_bytes"] > records[TC8]["model"]["modeled_read_bytes"]
    assert v["kernel"] in capsys.readouterr().out


def test_a_variant_of_a_stream_k_level_changes_its_whole_tile_launches_too():
    """Where no tile is split a stream-K level launches its base level's parameters (whole_tiles): a variant's
    changes reach those launches as well, so its records at such shapes time the variant, not the registered
    binary, and a change the whole-tile build refuses is refused at once."""
    v = bench.variant("cuda/tc6_stream_k_fp8_block", {"GROUP_M": 16})
    for shape in ((4096, 4096, 4096), (8192, 8192, 8192)):  # split; whole tiles
        assert v.for_problem(Problem(*shape, "fp8_block")).params["GROUP_M"] == 16
    assert v.for_problem(Problem(8192, 8192, 8192, "fp8_block")).params["SCALE_TMA"] == 2  # the rest as registered
    with pytest.raises(InvalidConfigError, match="SCALE_TMA=0"):
        bench.variant("cuda/tc6_stream_k_fp8_block", {"SCALE_TMA": 0})
