"""The CLI as a user runs it on this CPU-only machine."""
import json
import os
import subprocess
import sys

import pytest

from gemmlab import device

pytestmark = pytest.mark.skipif(device.gpu() is not None, reason="checks the CPU-only behaviour")


def gemmlab(*args, timeout=600):
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "gemmlab.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_bench_cpu_only_end_to_end(tmp_path):
    out = tmp_path / "bench.json"
    proc = gemmlab("bench", "--shape", "64x48x80", "--kernels", "cpu/*,cuda/v1_*,numba/v1_*", "--repeat", "5",
                   "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    assert text.startswith("gemmlab bench (git ")  # says first, plainly, what it can and cannot do
    assert "No CUDA GPU: " in text.splitlines()[0] and "GPU kernels are not timed" in text
    # a table per kind of work, titled with the shapes that actually ran
    assert "CPU kernels at 64×48×80 (M×N×K), timed on this host" in text
    assert "CUDA C kernels compiled for sm_90a by NVRTC, configured for 64×48×80" in text
    assert "numba kernels on the CUDA simulator at 1×1×1, 33×17×65, 70×45×31" in text
    assert "roofline model on the NVIDIA H200 at 64×48×80 (M×N×K): predicted, not measured" in text
    for name in ("cpu/v0_naive", "cpu/blas", "cuda/v1_naive", "numba/v1_naive"):
        assert name in text
    data = json.loads(out.read_text())
    assert data["env"]["mode"] == "cpu-only" and data["env"]["gpu"] is None
    assert data["env"]["git_sha"] and data["env"]["libraries"]["numpy"]
    recs = {r["kernel"]: r for r in data["records"]}
    v0, blas = recs["cpu/v0_naive"], recs["cpu/blas"]
    for r in (v0, blas):
        assert r["status"] == "ok" and r["verified"] and r["samples"] == 5  # --repeat 5 takes 5
        assert (r["m"], r["n"], r["k"]) == (64, 48, 80)
        assert r["tflops"] == pytest.approx(2 * 64 * 48 * 80 / (r["median_ms"] * 1e-3) / 1e12)
        assert r["rel_err"] < 1e-5
    assert v0["peer_ratio"] == pytest.approx(blas["median_ms"] / v0["median_ms"])
    naive = recs["cuda/v1_naive"]
    assert naive["status"] == "compiled" and naive["spills"] == 0 and naive["registers"] > 0
    sim = recs["numba/v1_naive"]
    assert sim["status"] == "simulated" and sim["verified"] and sim["rel_err"] is None  # no error at 64x48x80
    assert [r["shape"] for r in sim["simulator"]] == ["1x1x1", "33x17x65", "70x45x31"]
    assert all(r["status"] == "passed" and r["rel_err"] < 1e-5 for r in sim["simulator"])
    assert (naive["m"], naive["k"]) == (64, 80)  # modeled at the asked shape
    assert naive["model"]["modeled_intensity"] == pytest.approx(2 * 80 / (8 * 80 + 4))
    assert naive["model"]["seed_bound"] == "memory"  # the seeds' view; the levels are beneath it

    # its report is not headed with a GPU it did not run on, and the summary keeps the CPU rows it timed
    proc = gemmlab("report", str(out), "--out", str(tmp_path / "report"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = (tmp_path / "report" / "report.md").read_text()
    assert report.startswith("# gemmlab report: no GPU (the roofline model is for the NVIDIA H200)\n")
    proc = gemmlab("report", str(out), "--summary")
    rows = {line.split("|")[1].strip(): line for line in proc.stdout.splitlines() if line.startswith("| `")}
    assert f"{v0['tflops']:.2g} ({v0['peer_ratio']:.2f}×)" in rows["`cpu/v0_naive`"]
    assert "simulated" in rows["`numba/v1_naive`"] and "compiled" in rows["`cuda/v1_naive`"]


def test_verify_reports_pass_per_shape():
    proc = gemmlab("verify", "--kernels", "cpu/blas,cuda/v2_smem", "--sample", "4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "passed" in proc.stdout and "4097" in proc.stdout and "compiled" in proc.stdout
    assert " 0 failed" in proc.stdout


def test_roofline_prints_the_seed_numbers():
    proc = gemmlab("roofline", "--gpu", "a100", "--shape", "4096", "--kernels", "cuda/*")
    assert proc.returncode == 0, proc.stderr
    assert "A100 ridge 12.5" in proc.stdout and "0.25 FLOP/byte" in proc.stdout and "682.7" in proc.stdout


def test_list():
    proc = gemmlab("list")
    assert proc.returncode == 0 and "cuda/v2_smem" in proc.stdout and "peers/cublas_bf16" in proc.stdout


def test_bench_append_merges_runs_and_keeps_every_command(tmp_path):
    out = tmp_path / "r.json"
    for shape in ("16x8x4", "9x7x5"):
        proc = gemmlab("bench", "--shape", shape, "--kernels", "cpu/blas", "--json", str(out), "--append")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert [(r["m"], r["n"], r["k"]) for r in data["records"]] == [(16, 8, 4), (9, 7, 5)]
    assert len(data["env"]["commands"]) == 2 and "9x7x5" in data["env"]["commands"][1]


def test_bench_append_replaces_a_kernel_timed_again_at_a_shape(tmp_path):
    out = tmp_path / "r.json"
    for shape in ("16x8x4", "9x7x5", "16x8x4"):
        proc = gemmlab("bench", "--shape", shape, "--kernels", "cpu/blas", "--json", str(out), "--append")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert [(r["m"], r["n"], r["k"]) for r in data["records"]] == [(9, 7, 5), (16, 8, 4)]
    assert len(data["env"]["commands"]) == 3
    runs = data["env"]["runs"]  # each command with the commit and time it ran at
    assert [r["command"] for r in runs] == data["env"]["commands"] and all(r.get("git_sha") for r in runs)
    assert [r.get("records") for r in runs] == [None, 1, 1]


def test_timeline_names_what_it_cannot_do():
    proc = gemmlab("timeline", "--kernels", "cuda/tc5_swap_ab_tf32")
    assert proc.returncode == 2 and "has none" in proc.stderr
    proc = gemmlab("timeline", "--shape", "4096")
    assert proc.returncode == 2 and "needs a CUDA GPU" in proc.stderr


def _dispatch(*argv):
    """gemmlab dispatch's exit code and what it printed, its lines joined by single spaces (rich wraps them)."""
    from gemmlab.cli import main

    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["dispatch", *argv])
    return code, " ".join(buf.getvalue().split())


def test_dispatch_says_what_auto_runs_without_a_gpu():
    code, out = _dispatch("--shape", "4096", "--precision", "bf16", "--b-transposed")
    assert code == 0 and "cuda/tc4_persistent_bf16" in out and "column-major in place" in out


def test_dispatch_names_the_layout_no_kernel_takes_and_the_flag_that_fixes_it():
    """FP8's wgmma reads B K-major only: asked about row-major B (the default layout), dispatch says no kernel takes
    that layout and names --b-transposed, with which it answers; a layout the user named gets no such hint."""
    fp8 = ("--shape", "64x4096x4096", "--precision", "fp8")
    code, out = _dispatch(*fp8)
    assert code == 0 and "64x4096x4096 fp8, A row-major, B row-major: no kernel takes it:" in out
    assert "B must come as the transpose" in out and "--b-transposed asks for B as w.t()" in out
    code, out = _dispatch(*fp8, "--layout", "col,row")
    assert code == 0 and "A column-major, B row-major: no kernel takes it" in out and "--b-transposed" not in out
    code, out = _dispatch(*fp8, "--b-transposed")
    assert code == 0 and "no kernel takes it" not in out and "64x4096x4096 fp8: cuda/" in out
