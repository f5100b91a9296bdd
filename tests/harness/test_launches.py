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
    assert L.brief([{"name": "k<a|b>", "grid": [2, 1, 1]}]) == "k<a\\|b> [2]"  # a cell of a Markdown table


def _timed_run(monkeypatch, tmp_path, cases):
    """The cases timed (timers stubbed) into a suite file, as a run writes it before its kernels are recorded."""
    torch = pytest.importorskip("torch")
    from gemmlab.harness import api_suite as S, timing

    monkeypatch.setattr(timing, "gpu_times", lambda torch_, calls, *a, **k: timing.GpuTimes(
        [0.002] * len(calls), 20, [0] * len(calls), 100.0))
    monkeypatch.setattr(timing, "eager_times", lambda torch_, calls, *a: timing.EagerTimes(
        [0.01] * len(calls), 30, [7.0] * len(calls)))
    ctx = {"clean": lambda: None, "copy_gbs": 4000.0, "device": "cpu"}
    out = S.SuiteFile(tmp_path / "suite.json", {"gpu": {"name": "GPU"}}, {"started": "t0"})
    S.run_cases(cases, lambda case: S.measure(torch, case, S.SuiteOptions(), ctx), out, lambda line: None)
    return torch, S, out, ctx


def test_the_kernels_are_recorded_after_every_case_is_timed_from_each_sides_own_call(monkeypatch, tmp_path):
    """record_launches runs after the timing (the profiler, once started, slows every later call's host path): one
    call of each side of each verified record, on the case's operands made again, into the file."""
    from gemmlab.harness import suite_ops as O

    cases = [O.Case("mm", "fp32", "linear", 8, 64, 32), O.Case("bmm", "fp32", "bmm", 24, 16, 8, batch=5),
             O.Case("linear_bias", "fp32", "linear", 8, 64, 32)]
    torch, S, out, ctx = _timed_run(monkeypatch, tmp_path, cases)
    assert not any("kernels" in r for r in out.results["records"])  # the timing ran without the profiler
    seen, flushes = [], []

    def launched(torch_, call, args, clean):
        clean()  # the flush before the profiled call, as launches.kernels runs it
        c = call(*args)  # the side's own call on the record's operands
        seen.append((getattr(call, "func", call), tuple(c.shape)))
        return [{"name": f"k{len(seen)}", "grid": [len(seen), 1, 1], "block": [128, 1, 1], "us": 1.0}]

    S.record_launches(torch, cases, out, S.SuiteOptions(),
                      {**ctx, "clean": lambda: flushes.append(len(seen)), "launches": launched})
    assert flushes == list(range(6))  # one flush before each of the six profiled calls
    import gemmlab
    assert seen[0] == (gemmlab.matmul, (8, 64)) and seen[1] == (torch.matmul, (8, 64))
    assert [shape for _, shape in seen[2:]] == [(5, 24, 16), (5, 24, 16), (8, 64), (8, 64)]
    on_disk = {r["op"]: r for r in __import__("json").loads((tmp_path / "suite.json").read_text())["records"]}
    assert [on_disk[o]["kernels"][0]["name"] for o in ("mm", "bmm", "linear_bias")] == ["k1", "k3", "k5"]
    assert [on_disk[o]["torch_kernels"][0]["name"] for o in ("mm", "bmm", "linear_bias")] == ["k2", "k4", "k6"]


def test_a_profiler_that_cannot_start_leaves_the_timed_record_whole(monkeypatch, tmp_path):
    from gemmlab.harness import suite_ops as O

    cases = [O.Case("mm", "fp32", "linear", 8, 64, 32)]
    torch, S, out, ctx = _timed_run(monkeypatch, tmp_path, cases)

    def broken(torch_, call, args, clean):
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")

    S.record_launches(torch, cases, out, S.SuiteOptions(), {**ctx, "launches": broken})
    rec = out.results["records"][0]
    assert rec["verified"] and rec["gpu_us"] == 2.0 and "kernels" not in rec
    assert rec["kernels_error"] == "RuntimeError: CUPTI_ERROR_NOT_INITIALIZED"


def test_the_profiled_call_runs_after_the_l2_flush_and_outside_it():
    """launches.kernels flushes (``clean``) and waits for the GPU before the profiler starts, so the one call it
    records reads its operands cold, as the timed calls do, and the flush's own kernel is not among the call's."""
    import json
    import types
    from contextlib import contextmanager

    order = []

    @contextmanager
    def profile(activities):
        order.append("profiler on")
        yield types.SimpleNamespace(export_chrome_trace=lambda path: open(path, "w").write(json.dumps(
            {"traceEvents": [{"cat": "kernel", "name": "void gemm<1>(int)", "ts": 1, "dur": 9.5,
                              "args": {"grid": [4, 1, 1], "block": [128, 1, 1]}}]})))
        order.append("profiler off")

    torch = types.SimpleNamespace(
        cuda=types.SimpleNamespace(synchronize=lambda: order.append("sync")),
        profiler=types.SimpleNamespace(profile=profile, ProfilerActivity=types.SimpleNamespace(CUDA="cuda")))
    got = L.kernels(torch, lambda x: order.append(f"call {x}"), (3,), clean=lambda: order.append("flush"))
    assert order == ["flush", "sync", "profiler on", "call 3", "sync", "profiler off"]
    assert got == [{"name": "gemm", "grid": [4, 1, 1], "block": [128, 1, 1], "us": 9.5}]
