"""Corrections the seed chapter's claim table brought elsewhere: the committed 1024³ run's summary keeps V0 and the
host BLAS, a CPU kernel's record carries no GPU's levels, and roofline --shape counts the shape it was given."""
import os
import subprocess
import sys
from pathlib import Path

from gemmlab.analysis.roofline import device_spec
from gemmlab.harness import bench, bench_records
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem
from gemmlab.report import summary

RESULTS = Path(__file__).resolve().parents[1] / "results" / "h200"


def test_summary_keeps_the_cpu_kernels_of_a_gpu_run():
    rows = {line.split("|")[1].strip() for line in summary(RESULTS / "seed_1024.json").splitlines()
            if line.startswith("| `")}
    assert {"`cpu/v0_naive`", "`cpu/blas`", "`cuda/v1_naive`", "`peers/cublas_fp32`"} <= rows


def test_a_cpu_record_keeps_the_counts_not_a_gpus_levels():
    problem = Problem(64, 64, 64)
    cpu = bench_records.new_record(get_kernel("cpu/v0_naive"), problem, device_spec("h200"), None).model
    gpu = bench_records.new_record(get_kernel("cuda/v1_naive"), problem, device_spec("h200"), None).model
    assert set(cpu) == set(bench_records.CPU_MODEL_KEYS) and cpu["modeled_intensity"] == gpu["modeled_intensity"]
    assert "levels" in gpu and "levels" not in cpu and "bound" not in cpu


def test_roofline_counts_each_shape_it_is_given():
    env = dict(os.environ, COLUMNS="200")
    proc = subprocess.run([sys.executable, "-m", "gemmlab.cli", "roofline", "--kernels", "cuda/v1_naive", "--shape",
                           "2048x3072x4096", "--shape", "1024"], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = {line.split(":")[0]: line for line in proc.stdout.splitlines() if line.startswith("at ")}
    seed, square = lines["at 2048x3072x4096"], lines["at 1024x1024x1024"]
    assert f"best intensity {Problem(2048, 3072, 4096).intensity():.1f} FLOP/byte;" in seed and "N/6" not in seed
    assert f"best intensity {1024 / 6:.1f} FLOP/byte (= N/6)" in square and "re-reads 1024×" in square
