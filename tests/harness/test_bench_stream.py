"""The bench run talks while it works: what it will do first, then each table as soon as its records are complete,
before the kernels after it have started."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gemmlab import device
from gemmlab.analysis.roofline import device_spec
from gemmlab.harness import bench, bench_gpu, bench_progress, bench_records
from gemmlab.harness.record import Status
from gemmlab.harness.timing import TimingOptions
from gemmlab.kernels.registry import list_kernels
from gemmlab.problem import Problem

ROOT = Path(__file__).resolve().parents[2]
cpu_only = pytest.mark.skipif(device.gpu() is not None, reason="checks the CPU-only run")


class Recorder(bench.Listener):
    def __init__(self):
        self.events = []

    def step(self, label, done, total):
        self.events.append(("step", label, done, total))

    def table(self, kind, title, records):
        self.events.append(("table", kind, title, [r["kernel"] for r in records], records))


def _index(events, predicate):
    return next(i for i, e in enumerate(events) if predicate(e))


@cpu_only
def test_cpu_only_run_hands_over_each_table_before_the_next_kernel_starts():
    opts = bench.BenchOptions(shapes=[(24, 16, 40)], kernels="cpu/blas,cuda/v1_naive,numba/v1_naive,peers/cublas_fp32",
                              timing=TimingOptions(repeat=3, min_repeat=3, max_seconds=0.5), pause_s=0)
    rec = Recorder()
    results = bench.run_bench(opts, rec)
    tables = [e for e in rec.events if e[0] == "table"]
    assert [e[1] for e in tables] == ["cpu", "compiled", "simulator", "model"]
    steps = [e for e in rec.events if e[0] == "step"]
    assert [e[2] for e in steps] == [0, 1, 2] and {e[3] for e in steps} == {3}  # the peer has no step: nothing runs
    # the CPU table arrives before the CUDA C kernel is compiled, and the compile table before the simulator runs
    assert _index(rec.events, lambda e: e[:2] == ("table", "cpu")) < _index(
        rec.events, lambda e: e[0] == "step" and e[1].startswith("cuda/v1_naive"))
    assert _index(rec.events, lambda e: e[:2] == ("table", "compiled")) < _index(
        rec.events, lambda e: e[0] == "step" and e[1].startswith("numba/v1_naive"))
    # labels and titles name what actually runs: the simulator's small shapes, not the modeled one
    sim_step = next(e for e in steps if e[1].startswith("numba/v1_naive"))
    assert sim_step[1] == "numba/v1_naive: CUDA simulator at 1×1×1, 33×17×65, 70×45×31"
    assert tables[2][2].startswith("numba kernels on the CUDA simulator at 1×1×1, 33×17×65, 70×45×31")
    assert tables[0][3] == ["cpu/blas"] and tables[1][3] == ["cuda/v1_naive"] and tables[2][3] == ["numba/v1_naive"]
    assert tables[3][3] == ["numba/v1_naive", "cuda/v1_naive", "peers/cublas_fp32"]
    assert [r["kernel"] for r in results["records"]] == ["cpu/blas", "cuda/v1_naive", "numba/v1_naive",
                                                         "peers/cublas_fp32"]
    assert results["notes"][0].startswith("No CUDA GPU: ")


def test_gpu_run_hands_over_each_shape_and_precision_as_its_last_record_is_in():
    """run_gpu reports through rich's add_task/update/advance; the adapter turns them into steps and a table
    per shape and precision, its ratios linked, at the advance that completes it (driven here as run_gpu does)."""
    specs = list_kernels("cuda/v1_naive,cuda/v2_smem,peers/cublas_fp32,cuda/tc1_mma_sync_tf32,peers/cublas_tf32")
    records = []
    rec = Recorder()
    progress = bench_progress.GpuProgress(rec, records, specs)
    task = progress.add_task("bench", total=2 * len(specs))
    dev = device_spec("h200")
    for shape in ((64, 64, 64), (128, 64, 32)):
        for precision in ("fp32", "tf32"):
            for spec in bench_gpu.peers_first(specs, precision):
                progress.update(task, description=f"{spec.name} {shape}")
                r = bench_records.new_record(spec, Problem(*shape, precision), dev, None)
                r.update({"status": Status.OK, "median_ms": 1.0 if spec.backend == "peer" else 2.0})
                records.append(r)
                progress.advance(task)
    tables = [e for e in rec.events if e[0] == "table"]
    assert [e[2] for e in tables] == ["64×64×64 (M×N×K), fp32", "64×64×64 (M×N×K), tf32",
                                      "128×64×32 (M×N×K), fp32", "128×64×32 (M×N×K), tf32"]
    assert tables[0][3] == ["peers/cublas_fp32", "cuda/v1_naive", "cuda/v2_smem"]
    # each table comes right after its group's last record, before the next group's first step
    first_tf32 = _index(rec.events, lambda e: e[0] == "step" and e[1].startswith("peers/cublas_tf32"))
    assert rec.events[first_tf32 - 1][:2] == ("table", "timed")
    assert records[1].peer_ratio == pytest.approx(0.5)  # linked before the table was handed over
    assert tables[0][4][1]["peer_ratio"] == pytest.approx(0.5) and tables[0][4][1]["status"] == "ok"


@cpu_only
def test_piped_bench_prints_its_plan_at_once_and_its_tables_while_it_runs():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    env.pop("NUMBA_ENABLE_CUDASIM", None)  # the command decides it, as for a user

    def start(*args):
        return subprocess.Popen([sys.executable, "-m", "gemmlab", "bench", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=env)

    # the plain command: its first line is the plan, long before the run ends (the run takes tens of seconds)
    t0 = time.monotonic()
    proc = start()
    try:
        first = proc.stdout.readline()
        elapsed = time.monotonic() - t0
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    assert first.startswith("gemmlab bench (git ") and "No CUDA GPU: " in first
    assert elapsed < 5  # about 0.5 s on an idle machine; the margin is for a loaded one

    # a small run: the CPU table is out while the simulator has yet to run numba/v1_naive
    proc = start("--kernels", "cpu/blas,numba/v1_naive", "--shape", "24x16x40", "--repeat", "3")
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("CPU kernels at 24×16×40"):
                assert proc.poll() is None
                break
        rest = proc.stdout.read()
    finally:
        proc.wait(timeout=600)
    assert proc.returncode == 0, "".join(lines) + rest
    text = "".join(lines)
    assert "[1/2] cpu/blas at 24×16×40: verify, then time on this host" in text
    assert "[2/2] numba/v1_naive: CUDA simulator at 1×1×1, 33×17×65, 70×45×31" in rest  # a plain line, no bar
    assert "numba kernels on the CUDA simulator" in rest


def test_a_record_is_its_json_and_back():
    """The typed record serializes to the JSON the reports read, its optional fields only where a run set them,
    and fields a later command added (profile counters) survive a round trip."""
    import json

    from gemmlab.harness.record import BenchRecord

    saved = json.loads((ROOT / "results" / "h200" / "tensor_cores.json").read_text())["records"]
    for data in saved:
        assert BenchRecord.from_json(data).to_json() == data
    rec = bench_records.new_record(list_kernels("cuda/v2_smem")[0], Problem(64, 64, 64), device_spec("h200"), None)
    out = rec.to_json()
    assert out["status"] is None and "interleaved" not in out and "registers" not in out
    rec.fail(Status.FAILED, "rel err 1e-1 > tolerance 1e-5")
    assert rec.to_json()["status"] == "FAILED" and json.loads(json.dumps(rec.to_json()))["status"] == "FAILED"


@cpu_only
def test_cpu_only_run_models_no_kernel_at_a_shape_it_refuses():
    """gemv1 takes at most a few rows of A, tc9 at most 128 and V0 at most 4 GFLOP: at 4096³ each is skipped with its
    own reason, never timed, compiled there nor modeled as if it ran; at 16×4096×4096 gemv1 and tc9 are compiled and
    modeled."""
    names = "cuda/gemv1_warp_dot_bf16,cuda/tc9_narrow_swap_bf16,cpu/v0_naive"
    opts = bench.BenchOptions(shapes=[(4096, 4096, 4096), (16, 4096, 4096)], kernels=names,
                              timing=TimingOptions(repeat=3, min_repeat=3, max_seconds=0.5), pause_s=0)
    rec = Recorder()
    records = bench.run_bench(opts, rec)["records"]
    refused = [r for r in records if (r["m"], r["n"], r["k"]) == (4096, 4096, 4096)]
    assert {r["kernel"] for r in refused} == set(names.split(","))
    for r in refused:
        spec = next(s for s in list_kernels(r["kernel"]))
        problem = Problem(4096, 4096, 4096, spec.precision)
        assert r["status"] == Status.SKIPPED and r["reason"] == str(spec.is_valid(problem))
        assert not r["model"] and "registers" not in r and r["median_ms"] is None
    models = {e[2]: e[3] for e in rec.events if e[:2] == ("table", "model")}
    assert [kernels for title, kernels in models.items() if "4096×4096×4096 " in title] == []
    assert all(r["status"] == Status.COMPILED and r["model"]
               for r in records if r["m"] == 16 and r["backend"] == "cuda")
