"""A bench run writes its results only: the dispatch table that kernel="auto" reads on this machine is written by
`gemmlab dispatch --write RESULTS.json`, from saved results, never as a side effect of a run."""
import json

import pytest

from gemmlab import dispatch
from gemmlab.cli import main
from gemmlab.device import GPUInfo
from gemmlab.harness import bench
from gemmlab.harness.bench_records import new_record
from gemmlab.harness.record import Status
from gemmlab.harness.timing import TimingOptions
from gemmlab.kernels.plan import ROW_MAJOR
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

H200 = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "13.0", "13.0")
KERNEL = "cuda/tc4_persistent_bf16"


# each test on a dispatch table of its own (conftest.py)
pytestmark = pytest.mark.usefixtures("own_dispatch_cache")


def _gpu_run(monkeypatch) -> dict:
    """run_bench as on an H200, its GPU part replaced by one verified, timed record (faster than any the shipped
    table holds at its shape)."""
    def run_gpu(specs, shapes, opts, dev, bw, info, records, results, progress):
        rec = new_record(get_kernel(KERNEL), Problem(*shapes[0], "bf16"), dev, bw)
        rec.update({"status": Status.OK, "verified": True, "median_ms": 0.1})
        records.append(rec)

    monkeypatch.setattr(bench.device, "probe", lambda: (H200, ""))
    monkeypatch.setattr(bench.device, "gpu", lambda: H200)
    monkeypatch.setattr(bench, "run_gpu", run_gpu)
    opts = bench.BenchOptions(shapes=[(4096, 4096, 4096)], kernels=KERNEL, ceilings=False,
                              timing=TimingOptions(repeat=3, min_repeat=3))
    return bench.run_bench(opts)


def test_a_bench_run_leaves_the_dispatch_table_alone(monkeypatch):
    results = _gpu_run(monkeypatch)
    assert [r["kernel"] for r in results["records"]] == [KERNEL] and results["records"][0]["verified"]
    assert not dispatch.local_path().exists()
    assert not any("dispatch" in note for note in results["notes"])
    assert dispatch.table_from_results(results)  # it held what a table is made of


def test_dispatch_write_adds_saved_results_to_this_machines_table(monkeypatch, tmp_path, capsys):
    path = tmp_path / "bf16.json"
    path.write_text(json.dumps(_gpu_run(monkeypatch), default=float))
    assert main(["dispatch", "--write", str(path)]) == 0
    assert str(dispatch.local_path()) in capsys.readouterr().out
    written = json.loads(dispatch.local_path().read_text())
    assert written == {"NVIDIA H200": {"bf16": {"4096x4096x4096": [{"kernel": KERNEL, "ms": 0.1}]}}}
    # kernel="auto" reads it on top of the shipped table, where this time is the fastest at 4096³
    assert dispatch.load_table()["NVIDIA H200"]["bf16"]["4096x4096x4096"][0] == {"kernel": KERNEL, "ms": 0.1}
    assert dispatch.choose(Problem(4096, 4096, 4096, "bf16"), ROW_MAJOR, H200).spec.name == KERNEL


def test_dispatch_write_refuses_results_without_gpu_records(tmp_path, capsys):
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps({"env": {"gpu": None}, "records": [
        {"kernel": "cpu/blas", "precision": "fp32", "m": 8, "n": 8, "k": 8, "status": "ok", "backend": "cpu"}]}))
    assert main(["dispatch", "--write", str(path)]) == 2
    assert "no verified GPU records" in capsys.readouterr().err
    assert not dispatch.local_path().exists()
