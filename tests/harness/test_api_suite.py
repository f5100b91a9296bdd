"""The shape suite's runner without a GPU: the grid, a record's fields (fp32 on the host, the timers stubbed), the
float64 references, the summary's geomeans and minimum with and without records whose peer is wrong, the file
written per record and merged per precision, and the CLI's no-GPU path."""
import json
import math
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from gemmlab import device  # noqa: E402
from gemmlab.harness import api_suite as S, suite_ops as O, timing, torch_side  # noqa: E402


def test_the_grid_is_56_linear_9_square_and_4_long_k_shapes():
    g = S.grid()
    groups = [grp for grp, _ in g]
    assert (groups.count("linear"), groups.count("square"), groups.count("long_k"), len(g)) == (56, 9, 4, 69)
    linear = {s for grp, s in g if grp == "linear"}
    assert {m for m, _, _ in linear} == {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192}
    assert {(n, k) for _, n, k in linear} == {(4096, 4096), (14336, 4096), (4096, 14336), (1024, 8192)}
    assert [s for grp, s in g if grp == "square"] == [(s, s, s) for s in (256, 512, 768, 1024, 1536, 2048, 3072,
                                                                         4096, 8192)]
    assert [s for grp, s in g if grp == "long_k"] == [(256, 256, 16384), (512, 512, 16384), (1024, 1024, 16384),
                                                      (256, 256, 65536)]
    every = S.cases(S.PRECISIONS)
    assert len(every) == 6 * 69 and [c.precision for c in every[::69]] == list(S.PRECISIONS)  # fp16's record too
    given = S.cases(("bf16", "fp8"), [(8, 4096, 4096), (3, 4096, 4096), (8, 4096, 4096)])
    assert [(c.precision, c.group, c.m) for c in given] == [("bf16", "linear", 8), ("bf16", "given", 3),
                                                            ("fp8", "linear", 8), ("fp8", "given", 3)]
    # a grid shape keeps its grid groups, so a run of it replaces the grid's record instead of adding one beside it
    assert [c.group for c in S.cases(("bf16",), [(4096, 4096, 4096)])] == ["linear", "square"]


def _stub_timers(monkeypatch, gpu_ms=(0.002, 0.003), eager_ms=(0.010, 0.011), late=(0, 0), host_us=(7.0, 6.0)):
    seen = []

    def gpu(torch_, calls, sets, *a, **k):
        seen.append([f(*sets[0]).dtype for f in calls])
        return timing.GpuTimes(list(gpu_ms[:len(calls)]), 20, list(late[:len(calls)]), 100.0)

    monkeypatch.setattr(timing, "gpu_times", gpu)
    monkeypatch.setattr(timing, "eager_times", lambda torch_, calls, *a: timing.EagerTimes(
        list(eager_ms[:len(calls)]), 30, list(host_us[:len(calls)])))
    return seen


CTX = {"clean": lambda: None, "copy_gbs": 4000.0, "device": "cpu"}


def test_a_record_holds_both_sides_times_ratios_checks_and_the_dram_roof(monkeypatch):
    seen = _stub_timers(monkeypatch)
    rec = S.measure(torch, O.Case("mm", "fp32", "linear", 8, 256, 384), S.SuiteOptions(), CTX)
    assert rec["verified"] and rec["torch_verified"] and not rec["peer_wrong"] and rec["verify"] == "full"
    assert rec["rel_err"] < 1e-5 and rec["layout"] == "x @ w.T (B column-major)" and rec["kernel"] == "cpu/blas"
    assert rec["out_dtype"] == rec["torch_out_dtype"] == "float32" and seen == [[torch.float32, torch.float32]]
    assert (rec["gpu_us"], rec["torch_gpu_us"], rec["eager_us"], rec["torch_eager_us"]) == (2.0, 3.0, 10.0, 11.0)
    assert (rec["eager_host_us"], rec["torch_eager_host_us"]) == (7.0, 6.0)  # each side's host time, idle GPU
    assert rec["gpu_ratio"] == pytest.approx(1.5) and rec["eager_ratio"] == pytest.approx(1.1)
    nbytes = 4 * (8 * 384 + 256 * 384 + 8 * 256)
    assert rec["bytes"] == nbytes and rec["dram_roof_us"] == pytest.approx(nbytes / 4e6)
    assert rec["dram_fraction"] == pytest.approx(rec["dram_roof_us"] / 2.0)
    assert (rec["gpu_calls"], rec["eager_calls"], rec["gpu_late"]) == (20, 30, 0) and "spin" in rec["gpu_method"]
    for field in ("op", "precision", "m", "n", "k", "layout", "kernel", "verified", "gpu_us", "torch_gpu_us",
                  "gpu_ratio", "eager_us", "torch_eager_us", "eager_ratio"):
        assert field in rec


@pytest.mark.parametrize("op,shape", [("mm", (8, 256, 384)), ("linear_bias_gelu", (8, 64, 32))])
def test_the_timed_call_is_gemmlabs_entry_point_with_nothing_between(monkeypatch, op, shape):
    """The suite times gemmlab's function as it times torch's: what the timer calls is gemmlab.matmul (or
    gemmlab.linear) with its precision bound, no Python frame between, so the eager time holds the library's host
    cost and not the suite's."""
    import gemmlab

    callers, timed = [], []
    entry = "matmul" if op == "mm" else "linear"
    real = getattr(gemmlab, entry)

    def spy(*a, **k):
        callers.append(sys._getframe(1).f_code.co_name)  # 0: spy, 1: whoever called it
        return real(*a, **k)

    def gpu(torch_, calls, sets, *a, **k):
        callers.clear()
        calls[0](*sets[0])
        timed.append(list(callers))
        return timing.GpuTimes([0.002] * len(calls), 20, [0] * len(calls), 100.0)

    monkeypatch.setattr(gemmlab, entry, spy)
    monkeypatch.setattr(timing, "gpu_times", gpu)
    monkeypatch.setattr(timing, "eager_times", lambda torch_, calls, *a: timing.EagerTimes([0.01] * len(calls), 30,
                                                                                           [5.0] * len(calls)))
    rec = S.measure(torch, O.Case(op, "fp32", "linear", *shape), S.SuiteOptions(), CTX)
    assert rec["verified"] and timed == [["gpu"]]


def test_the_fp8_suite_hands_gemmlab_the_scales_torch_gets(monkeypatch):
    """FP8's calls take (a, b, scale_a, scale_b) on both sides: gemmlab.matmul gets the two scales by name and no
    precision (the scales' shapes say per tensor or per block), as torch._scaled_mm gets them."""
    import gemmlab

    seen = []
    monkeypatch.setattr(gemmlab, "matmul", lambda *a, **k: seen.append((a, k)))
    for precision in ("fp8", "fp8_block"):
        O.OPS["mm"].ours(gemmlab, precision)("a", "b", "sa", "sb")
    assert seen == [(("a", "b"), {"scale_a": "sa", "scale_b": "sb"})] * 2


def test_a_failed_check_is_recorded_and_not_timed(monkeypatch):
    _stub_timers(monkeypatch)
    monkeypatch.setitem(O.OPS, "mm", O.OPS["mm"].__class__(**{**O.OPS["mm"].__dict__,
                                                               "ours": lambda g, p: lambda a, b: (a @ b) * 1.01}))
    rec = S.measure(torch, O.Case("mm", "fp32", "square", 16, 16, 16), S.SuiteOptions(), CTX)
    assert not rec["verified"] and rec["rel_err"] == pytest.approx(0.01, rel=1e-3) and "gpu_us" not in rec


def test_torch_is_called_for_c_in_the_dtype_gemmlabs_result_has(monkeypatch):
    assert O.OPS["mm"].theirs(torch, "bf16", torch.bfloat16) is torch.matmul  # BF16 out: no out_dtype
    assert O.OPS["mm"].theirs(torch, "tf32", torch.float32) is torch.matmul
    calls = []
    monkeypatch.setattr(torch, "mm", lambda a, b, **kw: calls.append(kw))
    monkeypatch.setattr(torch, "_scaled_mm", lambda *a, **kw: calls.append(kw))
    O.OPS["mm"].theirs(torch, "bf16", torch.float32)(None, None)
    O.OPS["mm"].theirs(torch, "fp8_block", torch.float32)(None, None, "sa", "sb")
    O.OPS["mm"].theirs(torch, "fp8", torch.bfloat16)(None, None, "sa", "sb")
    assert calls == [{"out_dtype": torch.float32},
                     {"scale_a": "sa", "scale_b": "sb", "out_dtype": torch.float32, "use_fast_accum": False},
                     {"scale_a": "sa", "scale_b": "sb", "out_dtype": torch.bfloat16, "use_fast_accum": True}]


@pytest.mark.parametrize("precision", ["fp8", "fp8_block"])
def test_the_fp8_reference_is_the_product_of_the_operands_dequantized_with_the_calls_scales(precision):
    x, w = torch.randn(40, 300), torch.randn(200, 300)
    args, want = torch_side.fp8_operands(torch, x, w, precision)
    a64, b64 = O.operands64(torch, precision, args)
    assert torch.allclose(a64 @ b64, want, rtol=1e-12, atol=1e-12)
    rows = torch.tensor([0, 7, 39])
    assert torch.allclose(O.OPS["mm"].reference(torch, precision, args, rows), want[rows], rtol=1e-12, atol=1e-12)


def test_large_products_are_checked_on_evenly_spaced_rows_and_nan_never_passes():
    assert O.checked_rows(4096, 4096) is None and O.verify_note(4096, None) == "full"
    rows = O.checked_rows(8192, 14336)
    assert len(rows) == O.SAMPLED_ROWS and rows[0] == 0 and rows[-1] == 8191 and rows == sorted(set(rows))
    assert O.verify_note(8192, rows).startswith("rows: 1024 of 8192")
    c = torch.ones(4, 3)
    assert O.check(torch, c, c.double(), None, 1e-6) == (0.0, True)
    c[2, 1] = float("nan")
    err, ok = O.check(torch, c, torch.ones(4, 3, dtype=torch.float64), None, 1e-6)
    assert not ok
    err, ok = O.check(torch, c, torch.ones(2, 3, dtype=torch.float64), [0, 3], 1e-6)  # NaN outside the rows
    assert err == 0.0 and not ok


def test_an_error_confined_to_one_column_fails_the_suites_check_though_the_norm_passes():
    """The suite's check holds every checked element to harness.reference's bound, as compare does."""
    g = torch.Generator().manual_seed(4)
    ref = torch.randn(256, 16, generator=g, dtype=torch.float64) @ torch.randn(16, 16384, generator=g,
                                                                                dtype=torch.float64)
    c = ref.to(torch.bfloat16)
    assert O.check(torch, c, ref, None, 1e-2)[1]
    c[:, 0] = 0
    err, ok = O.check(torch, c, ref, None, 1e-2)
    assert err < 1e-2 and not ok


def test_the_blockwise_peer_is_known_wrong_where_k_blocks_are_not_a_multiple_of_4():
    assert [k for k in (256, 512, 768, 1024, 4096, 14336, 65536) if O.peer_note("fp8_block", k)] == [256, 768]
    assert O.peer_note("fp8", 256) is None


def _rec(precision, m, ratio, eager=1.0, group="linear", n=4096, k=4096, **extra):
    return {"op": "mm", "precision": precision, "group": group, "m": m, "n": n, "k": k, "layout": "x @ w.T",
            "kernel": "cuda/tc4_persistent_bf16", "verified": True, "gpu_us": 10.0, "eager_us": 20.0,
            "gpu_ratio": ratio, "eager_ratio": eager, "dram_fraction": 0.8, **extra}


def test_the_summary_gives_each_sides_median_host_time_from_an_idle_gpu():
    records = [_rec("bf16", m, 1.0, eager_host_us=h, torch_eager_host_us=t)
               for m, h, t in ((1, 12.0, 10.0), (16, 14.0, 11.0), (64, 30.0, 12.0))]
    records.append(_rec("bf16", 128, 1.0))  # a record of a run before the field: left out
    s = S.summarize(records)["mm bf16"]
    assert s["eager_host_us"] == {"gemmlab": 14.0, "torch": 11.0}
    assert "host time from an idle GPU, median 14.0 µs (torch 11.0)" in S.summary_line("mm bf16", s)
    assert S.summarize([_rec("bf16", 1, 1.0)])["mm bf16"]["eager_host_us"] is None


def test_the_regimes_split_the_linear_rows_by_m_and_keep_the_other_groups_in_the_suites_order():
    assert [S.regime(_rec("bf16", m, 1.0)) for m in (1, 128, 256, 2048, 4096)] == \
        ["decode", "decode", "mid", "mid", "large"]
    assert S.regime(_rec("bf16", 256, 1.0, group="square", n=256, k=256)) == "square"
    assert S.regime(_rec("bf16", 8, 1.0, group="given")) == "given"
    records = [_rec("bf16", 512, 0.9, group="square", n=512, k=512),
               _rec("bf16", 256, 0.25, group="square", n=256, k=256, peer_wrong=True),  # left out of every regime
               _rec("bf16", 256, 0.5, group="long_k", n=256, k=16384, peer_wrong=True),  # a regime of none right
               _rec("bf16", 8192, 1.0), _rec("bf16", 512, 0.8), _rec("bf16", 64, 0.5), _rec("bf16", 1, 2.0)]
    s = S.summarize(records)["mm bf16"]
    assert list(s["regimes"]) == ["decode", "mid", "large", "square"]
    decode = s["regimes"]["decode"]
    assert decode["n"] == 2 and decode["gpu_geomean"] == pytest.approx(1.0)
    assert (decode["gpu_min"], decode["gpu_min_at"]) == (0.5, "64x4096x4096")
    assert s["regimes"]["square"]["n"] == 1 and s["regimes"]["square"]["gpu_min_at"] == "512x512x512"
    assert ("by regime decode ×1.000 (2), mid ×0.800 (1), large ×1.000 (1), square ×0.900 (1)"
            in S.summary_line("mm bf16", s))
    assert "by regime" not in S.summary_line("mm bf16", S.summarize([_rec("bf16", 1, 1.0)])["mm bf16"])


def test_the_summary_leaves_wrong_peers_out_of_the_geomeans_and_counts_what_it_left():
    records = [_rec("bf16", 1, 2.0, dram_fraction=0.7), _rec("bf16", 64, 0.5), _rec("bf16", 128, 1.0,
                                                                                      dram_fraction=0.1),
               _rec("bf16", 256, 0.25, group="square", n=256, k=256, peer_wrong=True),
               {**_rec("bf16", 512, None), "gpu_ratio": None, "eager_ratio": None},  # torch could not run it
               {**_rec("bf16", 1024, None), "verified": False},
               _rec("fp8", 1, 1.2, eager=0.9)]
    s = S.summarize(records)
    bf16 = s["mm bf16"]
    assert (bf16["records"], bf16["failed"], bf16["no_peer"], bf16["peer_wrong"]) == (6, 1, 1, 1)
    assert bf16["peer_ok"]["n"] == 3 and bf16["peer_ok"]["gpu_geomean"] == pytest.approx(1.0)
    assert bf16["peer_ok"]["gpu_min"] == 0.5 and bf16["peer_ok"]["gpu_min_at"] == "64x4096x4096"
    assert bf16["all"]["n"] == 4 and bf16["all"]["gpu_geomean"] == pytest.approx(math.sqrt(0.5))
    assert bf16["all"]["gpu_min"] == 0.25 and bf16["all"]["gpu_min_at"] == "256x256x256"
    assert bf16["decode_dram_min"] == 0.7 and bf16["decode_dram_min_at"] == "1x4096x4096"  # M=128 is not decode
    assert bf16["bars"] == {"gpu_geomean": True, "gpu_min": False, "eager_geomean": True, "decode_dram": False}
    fp8 = s["mm fp8"]
    assert fp8["bars"] == {"gpu_geomean": True, "gpu_min": True, "eager_geomean": False, "decode_dram": True}
    assert "min ×0.500 at 64x4096x4096" in S.summary_line("mm bf16", bf16)
    assert "with the 1 whose peer is wrong: ×0.707" in S.summary_line("mm bf16", bf16)


def test_a_run_writes_each_record_as_it_finishes_and_an_interrupted_one_is_marked_partial(tmp_path):
    path = tmp_path / "api_suite.json"
    todo = S.cases(("bf16",), [(1, 64, 64), (2, 64, 64), (4, 64, 64)])

    def run(started, fail_at=None, cases=todo):
        def one(case):
            if case.m == fail_at:
                raise KeyboardInterrupt
            return _rec(case.precision, case.m, 1.1, group=case.group, n=case.n, k=case.k, started=started)
        out = S.SuiteFile(path, {"gpu": {"name": "NVIDIA H200"}}, {"started": started, "finished": False})
        return S.run_cases(cases, one, out, lambda line: None)

    with pytest.raises(KeyboardInterrupt):
        run("t1", fail_at=4)
    first = json.loads(path.read_text())
    assert first["partial"] is True and [r["m"] for r in first["records"]] == [1, 2]
    assert S.load(path)["records"] == first["records"]
    run("t2", cases=S.cases(("fp8",), [(1, 64, 64)]))  # another precision: bf16's records stay, still partial
    second = json.loads(path.read_text())
    assert [(r["precision"], r["run"]) for r in second["records"]] == [("bf16", "t1"), ("bf16", "t1"), ("fp8", "t2")]
    assert second["partial"] is True and [r["started"] for r in second["env"]["runs"]] == ["t1", "t2"]
    run("t3")  # bf16 again, to the end: its records replace the interrupted run's, which leaves the file
    third = json.loads(path.read_text())
    assert third["partial"] is False and [r["started"] for r in third["env"]["runs"]] == ["t2", "t3"]
    assert sorted((r["precision"], r["m"], r["run"]) for r in third["records"]) == [
        ("bf16", 1, "t3"), ("bf16", 2, "t3"), ("bf16", 4, "t3"), ("fp8", 1, "t2")]


def test_a_file_of_another_gpus_suite_is_refused_and_a_run_names_its_gpu(tmp_path):
    """One GPU's records a file: a run on another would leave a summary over both."""
    from gemmlab.errors import GemmlabError

    path = tmp_path / "api_suite.json"
    out = S.SuiteFile(path, {"gpu": {"name": "NVIDIA H200"}}, {"started": "t1", "finished": False})
    out.add(_rec("bf16", 1, 1.1, group="linear", n=64, k=64, started="t1"))
    assert json.loads(path.read_text())["env"]["runs"][0]["gpu"] == "NVIDIA H200"
    with pytest.raises(GemmlabError, match="holds a suite run on NVIDIA H200, this run is on NVIDIA H100"):
        S.SuiteFile(path, {"gpu": {"name": "NVIDIA H100 80GB HBM3"}}, {"started": "t2", "finished": False})
    S.SuiteFile(path, {"gpu": {"name": "NVIDIA H200"}}, {"started": "t3", "finished": False})  # its own GPU: added


def test_a_file_of_another_kind_is_refused_before_a_run(tmp_path):
    from gemmlab.errors import ResultsFileError

    other = tmp_path / "bench.json"
    other.write_text(json.dumps({"env": {}, "records": [{"kernel": "x", "precision": "fp32", "m": 1, "n": 1, "k": 1,
                                                         "status": "ok"}]}))
    with pytest.raises(ResultsFileError, match="not those of gemmlab bench --api --suite"):
        S.load(other)


def _cli(*args):
    env = dict(os.environ, COLUMNS="400")
    return subprocess.run([sys.executable, "-m", "gemmlab.cli", *args], capture_output=True, text=True, timeout=600,
                          env=env)


@pytest.mark.skipif(device.gpu() is not None, reason="the CPU-only behaviour")
def test_without_a_gpu_the_suite_says_so_first_and_lists_the_grid_with_autos_kernels(tmp_path):
    out = tmp_path / "suite.json"
    proc = _cli("bench", "--api", "--suite", "--precision", "bf16", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("gemmlab bench --api --suite: nothing timed: it needs a CUDA GPU and torch with CUDA")
    assert f"{out} not written" in lines[0] and not out.exists() and lines[1].startswith("the 113 cases")
    cases = lines[2:]
    assert len(cases) == 113 and all(": cuda/" in line and "(" in line for line in cases)
    assert all(" bf16 mm " in line for line in cases[:69])
    # bmm: every batch of every square, on a level that takes a batch in one launch
    assert all(" bf16 bmm bmm " in line and ": cuda/tc4_persistent_bf16 " in line for line in cases[69:81])
    assert all(" bf16 bmm bmm " in line for line in cases[69:81])
    assert any("64x2048x2048x2048" in line for line in cases[69:81])
    # linear_bias and linear_bias_gelu: the layers' (N, K) at 4 row counts each, on kernels that fuse the epilogue
    assert [line.split()[2] for line in cases[81:]] == ["linear_bias"] * 16 + ["linear_bias_gelu"] * 16
    assert all("gemv1" not in line and "tc5" not in line for line in cases[81:])
    proc = _cli("bench", "--api", "--suite", "--precision", "fp8", "--shape", "1x4096x4096")
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 3 and "1x4096x4096: cuda/" in proc.stdout
    proc = _cli("bench", "--api", "--suite", "--precision", "bf16", "--op", "linear_bias_gelu", "--op", "bmm")
    listed = proc.stdout.splitlines()[2:]
    assert proc.returncode == 0 and proc.stdout.splitlines()[1].startswith("the 28 cases")
    assert [line.split()[2] for line in listed] == ["bmm"] * 12 + ["linear_bias_gelu"] * 16


@pytest.mark.skipif(device.gpu() is not None, reason="the CPU-only behaviour")
@pytest.mark.parametrize("args, says", [
    (("--api", "--suite", "--op", "gemm"), "--op gemm: the suite's ops are mm, bmm, "),
    (("--api", "--op", "mm"), "--op goes with --api --suite, which is not given"),
    (("--op", "mm", "--kernels", "cpu/v0_naive"), "--op goes with --api --suite, which is not given"),
    (("--api", "--suite", "--op", "bmm", "--shape", "1x4096x4096"), "--op bmm: no case at these precisions and shapes"),
    (("--api", "--suite", "--op", "linear_bias", "--precision", "fp32"), "--op linear_bias: no case at these")])
def test_an_op_the_suite_does_not_run_is_refused_in_one_line(args, says):
    proc = _cli("bench", *args)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and says in proc.stderr


@pytest.mark.skipif(device.gpu() is not None, reason="the CPU-only behaviour")
def test_the_suite_refuses_a_json_of_another_kind_in_one_line(tmp_path):
    other = tmp_path / "bench.json"
    other.write_text(json.dumps({"env": {}, "records": [{"kernel": "x", "precision": "fp32", "m": 1, "n": 1, "k": 1,
                                                         "status": "ok"}]}))
    proc = _cli("bench", "--api", "--suite", "--json", str(other))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "not those of gemmlab bench --api --suite" in proc.stderr


def test_bmm_records_are_bf16_batches_of_squares_beside_the_mm_records():
    every = S.cases(S.PRECISIONS, ops=S.OPS_RUN)
    bmm = [c for c in every if c.op == "bmm"]
    assert len(every) == len(S.PRECISIONS) * 69 + 12 + 2 * 16 and {c.precision for c in bmm} == {"bf16"}
    assert sorted((c.m, c.batch) for c in bmm) == sorted((s, b) for s in (512, 1024, 2048) for b in (8, 16, 32, 64))
    assert all(c.m == c.n == c.k and c.group == "bmm" and c.rows == c.batch * c.m for c in bmm)
    assert [c for c in every if c.op == "mm"] == S.cases(S.PRECISIONS)  # the mm records as they were
    assert not [c for c in S.cases(("bf16",), [(8, 4096, 4096)], S.OPS_RUN) if c.op == "bmm"]  # given shapes: mm's
    assert S.SuiteOptions().ops == ("mm", "bmm", "linear_bias", "linear_bias_gelu")
    linear = [c for c in every if c.op.startswith("linear")]
    assert {(c.precision, c.group) for c in linear} == {("bf16", "linear")} and {c.m for c in linear} == {16, 128, 2048, 8192}


def test_a_bmm_record_holds_the_mm_records_fields_and_its_batch(monkeypatch):
    """On the CPU (FP32 host tensors: numpy.matmul on the batch's views, torch.bmm beside it), with the timers
    stubbed: the BF16 record's GPU run is the same code on CUDA tensors."""
    from gemmlab import call

    seen = _stub_timers(monkeypatch)
    rec = S.measure(torch, O.Case("bmm", "fp32", "bmm", 24, 16, 8, batch=5), S.SuiteOptions(), CTX)
    mm = S.measure(torch, O.Case("mm", "fp32", "square", 16, 16, 16), S.SuiteOptions(), CTX)
    assert set(mm) | {"batch"} == set(rec) and rec["batch"] == 5 and "batch" not in mm
    assert rec["verified"] and rec["torch_verified"] and rec["verify"] == "full" and rec["rel_err"] < 1e-5
    assert rec["layout"] == O.OPS["bmm"].layout and seen[0] == [torch.float32, torch.float32]
    assert rec["bytes"] == 5 * 4 * (24 * 8 + 8 * 16 + 24 * 16) and rec["tflops"] == pytest.approx(2 * 5 * 24 * 16 * 8 / (0.002 * 1e9))
    assert "numpy.matmul" in rec["why"]
    assert S.key(rec) != S.key({**rec, "batch": 6})  # a batch is its own record
    assert any(k[0] == "batched" for k in call.plans)


def test_the_bmm_reference_indexes_the_batch_rows_stacked():
    a, b = torch.randn(3, 5, 4), torch.randn(3, 4, 6)
    whole = O.OPS["bmm"].reference(torch, "bf16", (a, b))
    want = torch.bmm(a.double(), b.double()).reshape(15, 6)
    assert torch.allclose(whole, want)
    rows = torch.tensor([0, 4, 5, 14])
    assert torch.allclose(O.OPS["bmm"].reference(torch, "bf16", (a, b), rows), want[rows])
    assert O.OPS["bmm"].matrix(torch.zeros(3, 5, 6)).shape == (15, 6)
    assert O.checked_rows(64 * 2048, 2048) is not None and O.checked_rows(8 * 512, 512) is None


def test_bmm_calls_torch_bmm_for_c_in_gemmlabs_dtype(monkeypatch):
    assert O.OPS["bmm"].theirs(torch, "bf16", torch.bfloat16) is torch.bmm
    calls = []
    monkeypatch.setattr(torch, "bmm", lambda a, b, **kw: calls.append(kw))
    O.OPS["bmm"].theirs(torch, "bf16", torch.float32)(None, None)
    assert calls == [{"out_dtype": torch.float32}]


def test_bmms_bar_is_its_own():
    rec = dict(_rec("bf16", 512, 0.96, group="bmm", n=512, k=512), op="bmm", batch=8)
    s = S.summarize([rec, dict(rec, batch=16, gpu_ratio=0.97)])["bmm bf16"]
    assert s["records"] == 2 and s["bars"]["gpu_geomean"]  # 0.95× for bmm, where mm's is 1.0×
    assert not S.summarize([dict(rec, op="mm")])["mm bf16"]["bars"]["gpu_geomean"]


def test_a_fused_record_times_gemmlabs_plain_gemm_of_the_same_operands_beside_it(monkeypatch):
    """linear_bias_gelu on the CPU (FP32 host tensors, the timers stubbed): a third call in the same interleaved
    run, gemmlab.matmul(x, w.t()) on the record's own x and w, its time, its kernel and the fused call's ratio to
    it."""
    results = []

    def gpu(torch_, calls, sets, *a, **k):
        results.append([f(*sets[0]) for f in calls])
        return timing.GpuTimes([0.0021, 0.003, 0.002, 0.0033, 0.0031], 20, [0] * 5, 100.0)

    monkeypatch.setattr(timing, "gpu_times", gpu)
    eager_calls = []
    monkeypatch.setattr(timing, "eager_times", lambda torch_, calls, *a: timing.EagerTimes(
        eager_calls.append(len(calls)) or [0.010, 0.011, 0.009, 0.1, 0.1], 30, [5.0] * 5))
    case = O.Case("linear_bias_gelu", "fp32", "linear", 8, 64, 32)
    rec = S.measure(torch, case, S.SuiteOptions(), CTX)
    assert rec["verified"] and rec["plain_kernel"] == "cpu/blas"
    x, w, bias = O.OPS["linear_bias_gelu"].inputs(torch, case, S.SuiteOptions().seed, "cpu")
    ours, theirs, plain, torch_fused, torch_plain = results[0]
    assert torch.allclose(plain, x @ w.t(), rtol=1e-5, atol=1e-5)  # no bias, no activation: the GEMM alone
    assert torch.allclose(ours, torch.nn.functional.gelu(x @ w.t() + bias), rtol=1e-4, atol=1e-4)
    # torch's own fused call (cuBLASLt's GELU_BIAS epilogue on a GPU, a tanh GELU) and its plain GEMM
    assert torch.allclose(torch_fused, torch.nn.functional.gelu(x @ w.t() + bias, approximate="tanh"), rtol=1e-3,
                          atol=1e-3)
    assert torch.equal(torch_plain, torch.mm(x, w.t()))
    assert (rec["plain_gpu_us"], rec["plain_eager_us"]) == (2.0, 9.0)
    assert rec["over_plain"] == pytest.approx(1.05) and rec["gpu_ratio"] == pytest.approx(3.0 / 2.1)
    assert (rec["torch_fused_gpu_us"], rec["torch_plain_gpu_us"]) == (3.3, 3.1)
    assert rec["torch_over_plain"] == pytest.approx(3.3 / 3.1) and rec["torch_fused_rel_err"] < 1e-3
    assert eager_calls == [3]  # torch's own fused call and its plain GEMM: GPU time only
    assert "plain 2.0 µs (fused ×1.050)  torch fused ×1.065 its plain" in S.line(rec)
    assert rec["plain_verified"] and rec["plain_rel_err"] < 1e-5  # checked before it is timed
    mm = S.measure(torch, O.Case("mm", "fp32", "linear", 8, 64, 32), S.SuiteOptions(), CTX)
    assert not any(f.startswith("plain") or f == "over_plain" for f in mm)  # mm is the plain GEMM itself


def test_the_timed_call_is_checked_on_poisoned_memory_and_an_unchecked_plain_gemm_is_not_timed(monkeypatch):
    """The record's second call, through the cached plan as the timed ones go, is checked too: an element it leaves
    unwritten (NaN from the poisoned block) fails the record. A fused op's plain GEMM that fails its check is left
    out of the timing, and out of over_plain."""
    _stub_timers(monkeypatch, gpu_ms=(0.002, 0.003, 0.002, 0.002, 0.002), eager_ms=(0.010, 0.011, 0.009, 0.1, 0.1))
    real = S.poisoned_call

    def unwritten(torch_, call, args, like):
        c = real(torch_, call, args, like)
        c[-1, -1] = float("nan")
        return c

    monkeypatch.setattr(S, "poisoned_call", unwritten)
    rec = S.measure(torch, O.Case("mm", "fp32", "linear", 8, 64, 32), S.SuiteOptions(), CTX)
    assert not rec["verified"] and "gpu_us" not in rec
    monkeypatch.setattr(S, "poisoned_call", real)
    import dataclasses

    # the plain GEMM's C read through mm's view, made wrong here
    monkeypatch.setitem(O.OPS, "mm", dataclasses.replace(O.OPS["mm"], matrix=lambda c: c + 1))
    rec = S.measure(torch, O.Case("linear_bias", "fp32", "linear", 8, 64, 32), S.SuiteOptions(), CTX)
    assert rec["verified"] and not rec["plain_verified"] and "over_plain" not in rec and "plain_gpu_us" not in rec
    assert rec["torch_over_plain"] == pytest.approx(1.0)  # the stubs' last two: torch's fused call and its plain


def test_torch_s_own_fused_call_is_timed_only_where_it_computes_the_op(monkeypatch):
    """The peer's fused call (torch.addmm for a bias) is checked against the op's float64 reference first: one that
    drops the bias is left out of the timing, its error recorded, and the record has no torch_over_plain."""
    import dataclasses

    seen = _stub_timers(monkeypatch, gpu_ms=(0.002, 0.003, 0.002, 0.004, 0.004), eager_ms=(0.01,) * 5)
    op = O.OPS["linear_bias"]
    wrong = dataclasses.replace(op, peer_epilogue=lambda torch_: (lambda x, w, b: torch_.mm(x, w.t()),
                                                                  lambda x, w, b: torch_.mm(x, w.t())))
    monkeypatch.setitem(O.OPS, "linear_bias", wrong)
    rec = S.measure(torch, O.Case("linear_bias", "fp32", "linear", 8, 64, 32), S.SuiteOptions(), CTX)
    assert rec["verified"] and rec["torch_fused_rel_err"] > 1e-2
    assert "torch_over_plain" not in rec and "torch_fused_gpu_us" not in rec and len(seen[-1]) == 3


def test_the_epilogues_bar_reads_the_fused_over_plain_geomean_from_m_2048_up():
    def fused(m, over):
        return dict(_rec("bf16", m, 1.0), op="linear_bias_gelu", over_plain=over, plain_gpu_us=10.0)

    records = [fused(16, 1.5), fused(128, 1.2), fused(2048, 1.02), fused(8192, 1.04)]
    s = S.summarize(records)["linear_bias_gelu bf16"]
    o = s["over_plain"]
    assert o["n"] == 2 and o["geomean"] == pytest.approx(math.sqrt(1.02 * 1.04)) and o["max_at"] == "8192x4096x4096"
    assert o["all_geomean"] == pytest.approx((1.5 * 1.2 * 1.02 * 1.04) ** 0.25)
    assert s["bars"]["over_plain"]  # 1.0300 from M = 2048 up; the decode rows' 1.5 does not count
    assert not S.summarize(records[:2] + [fused(2048, 1.05)])["linear_bias_gelu bf16"]["bars"]["over_plain"]
    assert "over gemmlab's plain GEMM at M ≥ 2048: geomean ×1.030, max ×1.040" in \
        S.summary_line("linear_bias_gelu bf16", s)
    assert "over_plain" not in S.summarize([_rec("bf16", 16, 1.0)])["mm bf16"]["bars"]
    assert o["torch_geomean"] is None  # no record timed torch's own fused call
    peer = [dict(fused(16, 1.5), torch_over_plain=1.3), dict(fused(2048, 1.02), torch_over_plain=1.01),
            dict(fused(8192, 1.04), torch_over_plain=1.04)]
    o = S.summarize(peer)["linear_bias_gelu bf16"]["over_plain"]
    assert o["torch_geomean"] == pytest.approx(math.sqrt(1.01 * 1.04))  # the same rows as gemmlab's: M ≥ 2048
    assert "(torch's own fused call over torch.mm: ×1.025)" in S.summary_line(
        "linear_bias_gelu bf16", S.summarize(peer)["linear_bias_gelu bf16"])


def test_each_op_and_precision_is_held_to_its_own_bars():
    """BF16 and FP8 per tensor: 1.0×, 0.85×, eager 0.95×, decode DRAM 75%; FP8 block-scaled 0.95× and 0.80×; TF32
    0.95×, 0.75×, eager 0.90× and FP32 0.90×, 0.60×, eager 0.90×, neither with a DRAM bar; bmm and
    linear_bias_gelu a geomean each; linear_bias none."""
    def rows(precision, ratio, low, eager, op="mm"):
        return [dict(_rec(precision, 1, ratio, eager=eager, dram_fraction=0.5), op=op),
                dict(_rec(precision, 4096, low, eager=eager), op=op)]

    s = S.summarize(rows("fp32", 0.95, 0.61, 0.91) + rows("tf32", 0.95, 0.74, 0.91)
                    + rows("fp8_block", 0.97, 0.81, 0.96) + rows("bf16", 1.2, 0.9, 0.96)
                    + rows("bf16", 0.9, 0.8, 0.9, op="linear_bias"))
    assert s["mm fp32"]["bars"] == {"gpu_geomean": False, "gpu_min": True, "eager_geomean": True}  # √(0.95·0.61)
    assert s["mm tf32"]["bars"] == {"gpu_geomean": False, "gpu_min": False, "eager_geomean": True}
    assert s["mm fp8_block"]["bars"] == {"gpu_geomean": False, "gpu_min": True, "eager_geomean": True,
                                         "decode_dram": False}
    assert s["mm bf16"]["bars"] == {"gpu_geomean": True, "gpu_min": True, "eager_geomean": True, "decode_dram": False}
    assert s["linear_bias bf16"]["bars"] == {}
    assert S.bars_for("linear_bias_gelu", "bf16") == {"gpu_geomean": 1.0}
    assert S.bars_for("mm", "fp8") == S.BARS and S.bars_for("mm", "fp32")["gpu_min"] == 0.60


@pytest.mark.parametrize("n, k", [(4096, 4096), (1024, 8192), (4096, 14336)])
def test_a_fused_records_check_catches_a_bias_dropped_or_shifted(n, k):
    """The suite's bias has the product's spread (N(0, K)): gemmlab.linear's C without it, or with it one column
    off, fails the record's check at every (N, K) of the suite, long K included, at BF16's tolerance there."""
    from gemmlab.harness.reference import tolerance_for
    from gemmlab.problem import Problem

    case = O.Case("linear_bias", "bf16", "linear", 16, n, k)
    x, w, bias = O._linear_inputs(torch, case, 0, device="cpu")
    assert float(bias.double().std()) == pytest.approx(k ** 0.5, rel=0.15)
    ref = O.OPS["linear_bias"].reference(torch, "bf16", (x, w, bias))
    product = x.double() @ w.double().t()
    tolerance = tolerance_for(Problem(16, n, k, "bf16"))
    assert O.check(torch, ref.to(torch.bfloat16), ref, None, tolerance)[1]  # C rounded once to BF16 passes
    for wrong in (product, product + bias.double().roll(1)):
        err, passed = O.check(torch, wrong.to(torch.bfloat16), ref, None, tolerance)
        assert not passed and err > 10 * tolerance


def test_the_summary_names_a_batchs_lowest_shape_with_its_count():
    rec = dict(_rec("bf16", 512, 0.96, group="bmm", n=512, k=512), op="bmm", batch=8)
    s = S.summarize([rec, dict(rec, batch=32, gpu_ratio=0.93)])["bmm bf16"]
    assert s["peer_ok"]["gpu_min_at"] == "32 × 512x512x512"
