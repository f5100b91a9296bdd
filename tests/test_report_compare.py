"""gemmlab compare: suite runs of the code before and after a change, row by row, on CPU-made suite files."""
import json
import math

import pytest

from gemmlab.cli import main
from gemmlab.errors import GemmlabError
from gemmlab.report.compare import compare, markdown

GPU = {"name": "NVIDIA H100 80GB HBM3"}


def _suite(path, rows, gpu=GPU, verified=True, torch_eager_us=20.0):
    """A suite file of mm rows {(precision, m, n, k): gpu_us}, each eager time 2 µs past its GPU time."""
    records = [{"op": "mm", "precision": p, "group": "linear", "m": m, "n": n, "k": k, "layout": "x @ w.T",
                "kernel": f"cuda/tc10_split_k_{p}", "verified": verified, "gpu_us": us, "torch_gpu_us": 10.0,
                "gpu_ratio": 10.0 / us, "eager_us": us + 2, "torch_eager_us": torch_eager_us,
                "eager_ratio": torch_eager_us / (us + 2)} for (p, m, n, k), us in rows.items()]
    path.write_text(json.dumps({"suite": "api_suite", "env": {"gpu": gpu}, "records": records, "notes": []}))
    return str(path)


def test_each_side_s_mean_the_ratio_its_geomean_and_the_spread(tmp_path):
    a, b = ("bf16", 64, 4096, 4096), ("bf16", 128, 4096, 4096)
    before = [_suite(tmp_path / "b1.json", {a: 10.0, b: 20.0}), _suite(tmp_path / "b2.json", {a: 12.0, b: 20.0})]
    after = [_suite(tmp_path / "a1.json", {a: 9.0, b: 22.0}), _suite(tmp_path / "a2.json", {a: 9.0, b: 22.0})]
    got = compare(before, after)
    rows = {(r["m"]): r for r in got["rows"]}
    assert rows[64]["before_values"] == [10.0, 12.0] and rows[64]["ratio"] == pytest.approx(9.0 / 11.0)
    assert rows[128]["ratio"] == pytest.approx(1.1)
    s = got["groups"][("mm", "bf16")]
    assert s["rows"] == 2 and s["geomean"] == pytest.approx(math.sqrt(9.0 / 11.0 * 1.1))
    assert s["lowest"]["m"] == 64 and s["highest"]["m"] == 128
    assert s["spread_max"] == pytest.approx(1.2) and s["spread_median"] == pytest.approx(1.0)  # 1.2, 1, 1, 1
    text = markdown(got)
    assert "| mm | bf16 | 2 | 0.949 |" in text and "| 10.00 12.00 | 9.00 9.00 | 0.818 |" in text


def test_a_side_s_files_may_split_its_precisions_and_unverified_rows_are_left_out(tmp_path):
    f, g = ("fp8", 64, 4096, 4096), ("bf16", 64, 4096, 4096)
    before = [_suite(tmp_path / "bb.json", {g: 10.0}), _suite(tmp_path / "bf.json", {f: 8.0})]
    after = [_suite(tmp_path / "ab.json", {g: 10.0}), _suite(tmp_path / "af.json", {f: 6.0}),
             _suite(tmp_path / "ax.json", {("fp8", 1, 4096, 4096): 3.0}, verified=False)]
    got = compare(before, after)
    assert {g: s["rows"] for g, s in got["groups"].items()} == {("mm", "bf16"): 1, ("mm", "fp8"): 1}
    assert got["groups"][("mm", "fp8")]["geomean"] == pytest.approx(0.75)
    assert got["groups"][("mm", "fp8")]["spread_median"] is None  # one run a side: no spread to read


def test_eager_time_compares_each_runs_ratio_to_torch(tmp_path):
    """An eager comparison reads each run's eager time against torch's in that run: a run whose host was slower for
    both sides (torch's eager time 40 against 20 µs) counts as its ratio, not as its times."""
    a = ("bf16", 64, 4096, 4096)
    before = [_suite(tmp_path / "b1.json", {a: 10.0}), _suite(tmp_path / "b2.json", {a: 10.0}, torch_eager_us=40.0)]
    after = [_suite(tmp_path / "a1.json", {a: 8.0}, torch_eager_us=40.0), _suite(tmp_path / "a2.json", {a: 8.0})]
    got = compare(before, after, "eager")
    row, = got["rows"]
    assert row["before_values"] == [20 / 12, 40 / 12] and row["after_values"] == [4.0, 2.0]
    assert row["ratio"] == pytest.approx(3.0 / 2.5) and row["torch_us"] == 20.0  # torch's eager time, last run
    assert got["groups"][("mm", "bf16")]["spread_max"] == pytest.approx(2.0)
    text = markdown(got)
    assert "eager time's ratio to torch's" in text and "| before ratio | after ratio |" in text
    assert compare(before, after)["rows"][0]["ratio"] == pytest.approx(0.8)  # GPU time: 8 against 10 µs


def test_refuses_two_gpus_and_sides_without_a_common_row(tmp_path):
    a = ("bf16", 64, 4096, 4096)
    h100 = _suite(tmp_path / "h100.json", {a: 10.0})
    with pytest.raises(GemmlabError, match="one GPU"):
        compare([h100], [_suite(tmp_path / "h200.json", {a: 9.0}, gpu={"name": "NVIDIA H200"})])
    with pytest.raises(GemmlabError, match="no row"):
        compare([h100], [_suite(tmp_path / "other.json", {("bf16", 1, 4096, 4096): 9.0})])


def test_command_line_prints_or_writes_and_refuses_in_one_line(tmp_path, capsys):
    a = ("bf16", 64, 4096, 4096)
    b, f = _suite(tmp_path / "b.json", {a: 10.0}), _suite(tmp_path / "a.json", {a: 8.0})
    assert main(["compare", "--before", b, "--after", f]) == 0
    assert "| mm | bf16 | 1 | 0.800 |" in capsys.readouterr().out
    assert main(["compare", "--before", b, "--after", f, "--time", "eager"]) == 0
    assert "| mm | bf16 | 1 | 1.200 |" in capsys.readouterr().out  # 20/10 after against 20/12 before
    out = tmp_path / "deep" / "compare.md"
    assert main(["compare", "--before", b, "--after", f, "--out", str(out)]) == 0
    assert out.read_text().startswith("# Before and after: NVIDIA H100 80GB HBM3")
    capsys.readouterr()
    assert main(["compare", "--before", str(tmp_path / "missing.json"), "--after", f]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.json" in err[0]
