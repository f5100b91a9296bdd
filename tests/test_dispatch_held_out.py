"""gemmlab dispatch --held-out: each measured shape of a dispatch table predicted from the others, the pick scored
against the table's own measurement there (regret, the prediction's error); on a table built here and on the
shipped one, through the command line."""
import json
import math
import subprocess
import sys

import pytest

from gemmlab import dispatch
from gemmlab.dispatch_held_out import held_out, summary

H200 = dispatch.shipped_gpu()
TC2, TC4, TC6 = "cuda/tc2_wgmma_tma_bf16", "cuda/tc4_persistent_bf16", "cuda/tc6_stream_k_bf16"


def table(*rows):
    """{H200: {bf16: {label: rows}}} from (kernel, ms, shape) triples."""
    shapes = {}
    for kernel, ms, shape in rows:
        shapes.setdefault("x".join(map(str, shape)), []).append({"kernel": kernel, "ms": ms})
    return {H200.name: {"bf16": shapes}}


def test_a_held_out_shape_is_predicted_from_the_others_and_scored_against_its_own_measurement():
    """tc4 measured twice as fast as tc2 at three squares: held out, each is predicted tc4 from its neighbours
    (regret 1; error, the prediction over the measurement)."""
    cubes = [(1024,) * 3, (2048,) * 3, (4096,) * 3]
    t = table(*[(TC4, 0.01 * (s[0] / 1024) ** 3, s) for s in cubes],
              *[(TC2, 0.02 * (s[0] / 1024) ** 3, s) for s in cubes])
    rows = {r.shape: r for r in held_out(t, H200)}
    assert set(rows) == set(cubes)
    for r in rows.values():
        assert (r.pick, r.best, r.regret) == (TC4, TC4, 1.0) and r.pick_ms == r.best_ms
        assert r.error == pytest.approx(r.predicted_ms / r.pick_ms) and r.predicted_ms > 0
    s = summary(list(rows.values()))["bf16"]
    assert (s["shapes"], s["scored"], s["fastest"], s["regret_geomean"]) == (3, 3, 3, 1.0)


def test_a_kernel_measured_at_the_held_out_shape_alone_is_not_picked_there():
    """tc6, measured only at 2048³ and fastest there: with 2048³ held out the pick is tc4, its regret tc4's time
    over tc6's there. Held out, 1024³ and 4096³ take tc6 from 2048³ (the fastest measured at their nearest shape),
    which was not measured where they are: unscored."""
    cubes = [(1024,) * 3, (2048,) * 3, (4096,) * 3]
    t = table(*[(TC4, 0.01 * (s[0] / 1024) ** 3, s) for s in cubes], (TC6, 0.05, (2048,) * 3))
    rows = {r.shape: r for r in held_out(t, H200)}
    mid = rows[cubes[1]]
    assert (mid.pick, mid.best, mid.pick_ms, mid.best_ms) == (TC4, TC6, 0.08, 0.05)
    assert mid.regret == pytest.approx(1.6)
    for shape in (cubes[0], cubes[2]):
        assert rows[shape].pick == TC6 and rows[shape].pick_ms is None and rows[shape].regret is None
    s = summary(list(rows.values()))["bf16"]
    assert (s["shapes"], s["scored"], s["fastest"]) == (3, 1, 0)
    assert s["regret_geomean"] == pytest.approx(1.6) and s["regret_max_at"] == "2048x2048x2048"


def test_a_shape_without_a_kernel_auto_may_run_there_is_left_out():
    """A shape whose only rows failed, or name a kernel auto never runs (a truncating TF32 build), has nothing to
    score a pick against."""
    t = table((TC4, 0.01, (1024,) * 3), (TC4, 0.08, (2048,) * 3))
    t[H200.name]["bf16"]["2048x2048x2048"][0]["failed"] = True
    assert [r.shape for r in held_out(t, H200)] == [(1024,) * 3]
    t = {H200.name: {"tf32": {"1024x1024x1024": [{"kernel": "cuda/tc4_persistent_tf32", "ms": 0.01}]}}}
    assert held_out(t, H200) == []


def test_the_shipped_table_checked_through_the_command_line(tmp_path):
    """Every precision's shapes of the shipped table, the summary printed and the records written; the records'
    regrets are the measured times' ratio and at least 1, most picks the fastest."""
    out = tmp_path / "held_out.json"
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "dispatch", "--held-out", "--out", str(out)],
                          capture_output=True, text=True, env={**__import__("os").environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert "regret geomean" in proc.stdout and "the picks farthest from the fastest measured" in proc.stdout
    data = json.loads(out.read_text())
    rendered = (tmp_path / "held_out.md").read_text()
    assert all(f"| {p} | {s['shapes']} | {s['scored']} | {s['fastest']} |" in rendered
               for p, s in data["summary"].items())
    shipped = json.loads(dispatch.SHIPPED.read_text())[H200.name]
    assert set(data["summary"]) == set(shipped)
    # the roofs the model scaled by, named in both (the H200's measurement shipped with gemmlab, in a fresh cache)
    assert data["env"]["roofs"].startswith("NVIDIA H200: ") and f"The model's roofs: {data['env']['roofs']}" in rendered
    for r in data["records"]:
        assert "x".join(map(str, r["shape"])) in shipped[r["precision"]]
        if r["regret"] is not None:
            assert r["regret"] == pytest.approx(r["pick_ms"] / r["best_ms"]) and r["regret"] >= 1.0
    scored = [r for r in data["records"] if r["regret"] is not None]
    assert sum(r["regret"] == 1.0 for r in scored) > len(scored) / 2
    for s in data["summary"].values():
        assert 1.0 <= s["regret_geomean"] <= s["regret_max"] and s["scored"] <= s["shapes"]
    one = subprocess.run([sys.executable, "-m", "gemmlab", "dispatch", "--held-out", "--precision", "fp8"],
                         capture_output=True, text=True, env={**__import__("os").environ, "COLUMNS": "200"})
    assert one.returncode == 0 and "fp8 " in one.stdout and "bf16" not in one.stdout


@pytest.mark.usefixtures("own_dispatch_cache")
def test_on_a_gpu_of_the_h200_s_chip_the_command_checks_the_table_auto_reads_there(monkeypatch, capsys):
    """An H100 SXM has no table of its own and reads the H200's: --held-out checks that one and says so; an H100 PCIe
    (another chip) has none to check."""
    from gemmlab import device
    from gemmlab.cli import main
    from gemmlab.device import GPUInfo

    sxm = GPUInfo("NVIDIA H100 80GB HBM3", 132, (9, 0), 50 * 2**20, 232448, 1980.0, 80 * 2**30, "", "")
    pcie = GPUInfo("NVIDIA H100 PCIe", 114, (9, 0), 50 * 2**20, 232448, 1755.0, 80 * 2**30, "", "")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(device, "gpu", lambda: sxm)
    assert main(["dispatch", "--held-out", "--precision", "fp8"]) == 0
    said = capsys.readouterr().out
    assert f"{sxm.name} has no dispatch table of its own: the {H200.name}'s" in said
    assert f"on {H200.name}'s dispatch table" in said and "regret geomean" in said
    monkeypatch.setattr(device, "gpu", lambda: pcie)
    assert main(["dispatch", "--held-out", "--precision", "fp8"]) == 2
    assert f"no dispatch table for {pcie.name}" in capsys.readouterr().err


def test_an_unwritable_out_is_refused_before_the_table_is_computed_or_printed(tmp_path, monkeypatch, capsys):
    """--held-out --out at a path gemmlab cannot write: the one line, exit 2, and nothing printed before it (the
    whole table was printed, then the error)."""
    from gemmlab import dispatch_held_out
    from gemmlab.cli import main

    def never(*args, **kwargs):
        raise AssertionError("held_out computed before --out was checked")

    monkeypatch.setattr(dispatch_held_out, "held_out", never)
    for out in (tmp_path, tmp_path / "afile" / "x.json"):
        (tmp_path / "afile").write_text("x")
        assert main(["dispatch", "--held-out", "--out", str(out)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and len(captured.err.splitlines()) == 1, captured
        assert captured.err.startswith(f"gemmlab dispatch: error: --out {out}: "), captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
