"""The kernels a call launches (gemmlab.harness.launches): names stripped of templates and parameters, a Chrome
trace's kernel events in launch order with their grids, the table's one-line form, and the suite's records that
carry both sides' (the profiler stubbed: no GPU here)."""
import pytest

from gemmlab.harness import launches as L

TRACE = [
    {"cat": "cpu_op", "name": "aten::mm", "ts": 1.0, "dur": 30.0},
    {"cat": "kernel", "name": "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, "
                              "__nv_bfloat16, false>(cublasLt::cublasSplitKParams<float>, float const*)",
     "ts": 20.0, "dur": 1.73, "args": {"grid": [16, 32, 1], "block": [32, 16, 1]}},
    {"cat": "kernel", "name": "nvjet_sm90_tst_128x64_64x8_1x2_h_bz_splitK_TNT", "ts": 5.0, "dur": 23.25,
     "args": {"grid": [2, 64, 1], "block": [384, 1, 1]}},
    {"cat": "gpu_memset", "name": "Memset (Device)", "ts": 2.0, "dur": 1.0},
]


def test_a_kernels_name_loses_its_return_type_template_and_parameters():
    assert L.short_name("void cublasLt::splitKreduce_kernel<32, 16, int>(float const*)") == \
        "cublasLt::splitKreduce_kernel"
    assert L.short_name("tc10_split_k") == "tc10_split_k"
    assert L.short_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)") \
        == "at::native::vectorized_elementwise_kernel"


def test_the_trace_gives_its_kernels_in_launch_order_with_grids_and_times():
    got = L.from_trace(TRACE)
    assert got == [
        {"name": "nvjet_sm90_tst_128x64_64x8_1x2_h_bz_splitK_TNT", "grid": [2, 64, 1], "block": [384, 1, 1],
         "us": 23.25},
        {"name": "cublasLt::splitKreduce_kernel", "grid": [16, 32, 1], "block": [32, 16, 1], "us": 1.73}]
    assert L.from_trace([e for e in TRACE if e["cat"] != "kernel"]) == []


def test_the_brief_form_names_each_kernel_with_its_grids_used_dimensions():
    assert L.brief(L.from_trace(TRACE)) == ("nvjet_sm90_tst_128x64_64x8_1x2_h_bz_splitK_TNT [2×64] + "
                                            "cublasLt::splitKreduce_kernel [16×32]")
    assert L.brief([{"name": "tc10_split_k", "grid": [128, 1, 1]}]) == "tc10_split_k [128]"
    assert L.brief([{"name": "gemv", "grid": [1, 1, 1]}]) == "gemv [1]"
    assert L.brief(None) == L.brief([]) == "—"


def test_a_suite_record_holds_each_sides_kernels_from_the_call_it_timed(monkeypatch):
    torch = pytest.importorskip("torch")
    from gemmlab.harness import api_suite as S, suite_ops as O, timing

    monkeypatch.setattr(timing, "gpu_times", lambda torch_, calls, *a, **k: timing.GpuTimes(
        [0.002] * len(calls), 20, [0] * len(calls), 100.0))
    monkeypatch.setattr(timing, "eager_times", lambda torch_, calls, *a: timing.EagerTimes(
        [0.01] * len(calls), 30, [7.0] * len(calls)))
    seen = []

    def launched(torch_, call, args):
        c = call(*args)  # the side's own call on the record's operands
        seen.append((getattr(call, "func", call), c.shape))
        return [{"name": f"k{len(seen)}", "grid": [len(seen), 1, 1], "block": [128, 1, 1], "us": 1.0}]

    ctx = {"clean": lambda: None, "copy_gbs": 4000.0, "device": "cpu", "launches": launched}
    rec = S.measure(torch, O.Case("mm", "fp32", "linear", 8, 64, 32), S.SuiteOptions(), ctx)
    import gemmlab
    assert seen[0] == (gemmlab.matmul, (8, 64)) and seen[1][0] is torch.matmul and len(seen) == 2
    assert rec["kernels"][0]["name"] == "k1" and rec["torch_kernels"][0]["name"] == "k2"
    plain = S.measure(torch, O.Case("mm", "fp32", "linear", 8, 64, 32), S.SuiteOptions(),
                      {k: v for k, v in ctx.items() if k != "launches"})
    assert "kernels" not in plain and "torch_kernels" not in plain  # a run without the profiler records none
