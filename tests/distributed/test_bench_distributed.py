"""`gemmlab bench --distributed` end to end on 2 CPU processes (gloo, cpu/blas), through the command line; and
once through torchrun itself, as the docs tell a user to run it."""
import json
import subprocess
import sys

import pytest

import workers
from gemmlab.distributed.scaling import efficiency, hidden_fraction, tflops
from ranks import run_ranks

ARGS = ["--kernel", "cpu/blas", "--repeat", "3", "--warmup", "1", "--timeout", "30"]


def test_bench_records_scaling_and_hidden_communication(tmp_path):
    out = tmp_path / "cpux2" / "distributed.json"
    argv = ["bench", "--distributed", "--shape", "24x20x28", "--strong-shape", "37x29x23", *ARGS, "--json", str(out)]
    assert run_ranks(workers.cli, 2, argv, deadline_s=60) == [0, 0]
    results = json.loads(out.read_text())
    env = results["env"]
    assert env["distributed"]["ranks"] == 2 and "gloo" in env["distributed"]["backend"]
    assert env["distributed"]["multicast"] == {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                                               "NVSHMEM_DISABLE_NVLS": "1"}
    assert env["git_sha"] and env["command"].startswith("gemmlab bench --distributed --shape 24x20x28")
    records = {(r["op"], r["scaling"], r["gpus"]): r for r in results["records"]}
    assert set(records) == {(op, s, g) for s in ("weak", "strong") for g in (1, 2)
                            for op in ("all_gather_matmul", "matmul_reduce_scatter", "summa")} | {
        ("gemm", "weak", 1), ("gemm", "strong", 1)}
    assert (records[("gemm", "weak", 1)]["m"], records[("gemm", "weak", 1)]["k"]) == (24, 28)
    # weak scaling on 2 ranks: each rank's GEMM stays 24×20×28
    assert (records[("all_gather_matmul", "weak", 2)]["n"], records[("matmul_reduce_scatter", "weak", 2)]["k"]) == (40, 56)
    for (op, scaling, gpus), r in records.items():
        if op == "summa" and gpus == 2:
            assert r["status"] == "skipped" and "square number of ranks" in r["reason"]
            continue
        assert r["status"] == "ok" and r["verified"] and r["rel_err"] < 1e-5, r
        assert r["tflops"] == pytest.approx(tflops(r["m"], r["n"], r["k"], r["ms"]))
        if op == "gemm":
            continue
        one = r["one_gpu_ms"]  # the one-GPU GEMM timed again beside this op, not the sweep's first timing
        assert one > 0
        assert r["efficiency"] == pytest.approx(efficiency(one, r["ms"], gpus, scaling))
        assert r["comm_ms"] > 0 and r["compute_ms"] > 0 and r["peer_ms"] > 0
        assert r["peer"] in ("all_gather_then_mm", "mm_then_reduce_scatter", "gather_blocks_then_mm")
        ragged = any(d % gpus for d in (r["m"], r["n"], r["k"]))
        assert r["fused_peer_ms"] is None and ("PyTorch has no fused op" if op == "summa" else "ragged shards"
                                               if ragged else "needs CUDA tensors") in r["fused_peer"]
        if gpus == 1:
            assert r["hidden_fraction"] is None  # one rank sends nothing
        else:
            assert r["hidden_fraction"] == pytest.approx(hidden_fraction(r["comm_ms"], r["compute_ms"], r["ms"]))
    assert records[("matmul_reduce_scatter", "weak", 2)]["chunks"] == 4  # 8 pieces over 2 ranks
    assert out.with_name("distributed.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_under_torchrun(tmp_path):
    """torchrun of the Python running the tests (``python -m torch.distributed.run``, the program the torchrun
    script starts): a torchrun found on PATH may be another Python's, without this gemmlab."""
    out = tmp_path / "distributed.json"
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "gemmlab", "bench", "--distributed",
                           "--ops", "all-gather", "--scaling", "weak", "--gpus", "2", "--shape", "16", *ARGS,
                           "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "all_gather_matmul" in proc.stdout and f"wrote {out}" in proc.stdout
    records = json.loads(out.read_text())["records"]
    assert [(r["op"], r["gpus"], r["status"]) for r in records] == [("gemm", 1, "ok"), ("all_gather_matmul", 2, "ok")]


SMALL = ["--scaling", "weak", "--shape", "8", "--repeat", "1", "--warmup", "0", "--no-fused", "--timeout", "5"]


def test_bench_summa_on_four_ranks_after_its_other_groups(tmp_path):
    # the bench makes its one-GPU group [0] first; SUMMA's grid groups then waited the whole timeout
    out = tmp_path / "distributed.json"
    argv = ["bench", "--distributed", "--ops", "summa", "--gpus", "4", "--kernel", "cpu/blas", *SMALL,
            "--json", str(out)]
    assert run_ranks(workers.cli, 4, argv, timeout_s=5, deadline_s=60) == [0] * 4
    records = json.loads(out.read_text())["records"]
    assert [(r["op"], r["gpus"], r["status"], r["verified"]) for r in records] == [
        ("gemm", 1, "ok", True), ("summa", 4, "ok", True)]


def test_bench_runs_the_precision_it_records(tmp_path):
    # --precision reached the records but not gemmlab.matmul: a TF32 run measured FP32 and said TF32
    out = tmp_path / "distributed.json"
    argv = ["bench", "--distributed", "--ops", "all-gather", "--gpus", "2", "--kernel", "cpu/blas", *SMALL,
            "--json", str(out)]
    ran = run_ranks(workers.precisions, 2, [*argv, "--precision", "fp32"], deadline_s=60)
    assert ran == [(0, ["fp32"], "")] * 2
    assert {r["precision"] for r in json.loads(out.read_text())["records"]} == {"fp32"}
    out.unlink()
    refused = run_ranks(workers.precisions, 2, [*argv, "--precision", "tf32"], deadline_s=60)
    # the one-GPU GEMM, on rank 0, is the first to ask cpu/blas for TF32 (it computes FP32 only): refused on both
    assert [(code, seen) for code, seen, _ in refused] == [(2, ["tf32"]), (2, [])] and not out.exists()
    for rank, (_, _, err) in enumerate(refused):
        assert err.startswith("gemmlab bench: error: the one-GPU GEMM failed on 1 of 2 ranks: rank 0: DTypeError: "
                              "cpu/blas computes fp32, not precision='tf32'") and f"this is rank {rank})" in err


@pytest.mark.parametrize("gpus, says", [("x", "'x' is not a comma-separated list of GPU counts"),
                                        ("2,0", "GPU counts are at least 1, got 2,0")])
def test_bench_refuses_a_bad_gpus_in_one_line(gpus, says, capsys):
    from gemmlab.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--distributed", "--gpus", gpus])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert err.startswith("gemmlab bench --distributed: error: argument --gpus: ") and says in err


@pytest.mark.parametrize("argv, says", [
    (["--timeout", "0"], "--timeout 0: the seconds a rank waits for the others, a finite number above 0"),
    (["--timeout", "-1"], "--timeout -1: the seconds a rank waits"),
    (["--timeout", "nan"], "--timeout nan: the seconds a rank waits"),
    (["--json", "{tmp}"], "--json {tmp}: is a directory; name a file"),
    (["--json", "{tmp}/afile/x.json"], "--json {tmp}/afile/x.json: {tmp}/afile is not a directory"),
    (["--figure", "{tmp}"], "--figure {tmp}: is a directory; name a file")])
def test_options_are_checked_before_any_rank_runs(argv, says, tmp_path):
    """What c10d would take as a timedelta that never waits (or a C++ error dump), and files that the run could
    not write once it is done: refused as the options are read."""
    from gemmlab.distributed.bench import options
    from gemmlab.errors import GemmlabError

    (tmp_path / "afile").write_text("x")
    with pytest.raises(GemmlabError) as refused:
        options([a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert says.replace("{tmp}", str(tmp_path)) in str(refused.value)
