"""The accuracy study's renderer (gemmlab.report.accuracy) and command, without a GPU: tables and figure from a
results JSON, the inputs it draws, and a plain error where it needs a GPU."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gemmlab import device
from gemmlab.harness import accuracy as study
from gemmlab.report import accuracy as report


def synthetic() -> dict:
    """A results JSON of the study's shape; the errors are made up for the renderer only."""
    records = []
    for i, s in enumerate(study.SERIES):
        for k in (256, 4096):
            records.append({"sweep": "k", "series": s, "dist": "normal", "m": 64, "n": 64, "k": k,
                            "rel_err": (i + 1) * 1e-6 * (k / 256) ** 0.5, "max_rel_err": 1e-5, "nonfinite": 0})
        for d in study.DISTRIBUTIONS:
            records.append({"sweep": "scale", "series": s, "dist": d, "m": 64, "n": 64, "k": 4096,
                            "rel_err": None if (s, d) == ("tc7", "mixed") else (i + 1) * 2e-6,
                            "max_rel_err": None, "nonfinite": 3 if (s, d) == ("tc7", "mixed") else 0})
    return {"env": {"gpu": {"name": "NVIDIA H200"}, "git_sha": "abc", "command": "gemmlab accuracy --mn 64"},
            "options": {"mn": 64, "ks": [256, 4096], "scale_k": 4096, "seed": 1}, "series": dict(study.SERIES),
            "distributions": dict(study.DISTRIBUTIONS), "records": records}


def test_markdown_tables_and_ratios():
    md = report.markdown(synthetic())
    assert "| series | K=256 | K=4096 |" in md and "| series | normal | uniform | normal_x1e3 | mixed |" in md
    row = next(line for line in md.splitlines() if line.startswith(f"| {study.SERIES['tc7']} | 5.00e-06"))
    assert "2.00e-05" in row  # 5e-6 · sqrt(16)
    ratios = md[md.index("As a multiple"):]
    assert f"| {study.SERIES['naive_split']} | 7.00× | 7.00× |" in ratios  # series 7 over series 1
    assert "non-finite" in md  # a NaN in C is reported as such, not as a number


def test_figure_has_a_line_and_bars_per_series():
    fig = report.figure(synthetic())
    left, right = fig.axes
    assert {line.get_gid() for line in left.get_lines()} == set(study.SERIES)
    assert left.get_xscale() == "log" and left.get_yscale() == "log"
    bars = {p.get_gid() for p in right.patches}
    assert bars == set(study.SERIES)
    # the key stands below both panels, not over the lines of the left one (where it covered two)
    assert left.get_legend() is None and right.get_legend() is None
    (key,) = fig.legends
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert key.get_window_extent(renderer).y1 <= min(ax.get_tightbbox(renderer).y0 for ax in (left, right)) + 1
    assert len(key.get_texts()) == len(study.SERIES)


def test_render_writes_markdown_and_png_beside_the_json(tmp_path):
    path = tmp_path / "accuracy.json"
    path.write_text(json.dumps(synthetic()))
    md, png = report.render(path)
    assert md == tmp_path / "accuracy.md" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_inputs_are_float32_and_seeded():
    for d in study.DISTRIBUTIONS:
        a, b = study.inputs(np, d, 8, 6, 40, seed=3)
        a2, _ = study.inputs(np, d, 8, 6, 40, seed=3)
        assert a.dtype == b.dtype == np.float32 and a.shape == (8, 40) and b.shape == (40, 6)
        assert np.array_equal(a, a2) and np.all(np.isfinite(a))
    u, _ = study.inputs(np, "uniform", 64, 64, 64, seed=0)
    assert u.min() >= 0 and u.max() < 1
    m, _ = study.inputs(np, "mixed", 256, 8, 256, seed=0)
    assert np.abs(m).max() / np.median(np.abs(m)) > 1e3  # decades of magnitude in one operand


@pytest.mark.skipif(device.gpu() is not None, reason="checks the CPU-only behaviour")
def test_command_needs_a_gpu_and_its_json_renders_without_one(tmp_path):
    def gemmlab(*args):
        return subprocess.run([sys.executable, "-m", "gemmlab.cli", *args], capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, COLUMNS="200"))

    proc = gemmlab("accuracy", "--mn", "64", "--json", str(tmp_path / "a.json"))
    assert proc.returncode == 2 and "gemmlab accuracy needs a CUDA GPU" in proc.stdout + proc.stderr
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(synthetic()))
    proc = gemmlab("report", str(path), "--out", str(tmp_path / "report"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Against K" in md and "](accuracy.png)" in md
    assert (tmp_path / "report" / "accuracy.png").read_bytes()[:4] == b"\x89PNG"
    proc = gemmlab("report", str(path), "--summary")
    assert proc.returncode == 0 and "## Against the inputs (K = 4096)" in proc.stdout
    proc = gemmlab("accuracy", "--mn", "0")
    assert proc.returncode == 2 and "--mn" in (proc.stdout + proc.stderr)


class HostCupy:
    """The few CuPy calls gemmlab.harness.accuracy makes, on NumPy: the study's bookkeeping runs on this machine."""

    float32, float64 = np.float32, np.float64
    random, linalg = np.random, np.linalg
    matmul, abs, full, empty, isfinite, count_nonzero = (np.matmul, np.abs, np.full, np.empty, np.isfinite,
                                                         np.count_nonzero)

    class cuda:
        @staticmethod
        def get_current_stream():
            return type("Stream", (), {"synchronize": lambda self: None})()

    @staticmethod
    def get_default_memory_pool():
        return type("Pool", (), {"free_all_blocks": lambda self: None})()


def test_measure_records_every_series_at_every_point(monkeypatch):
    """measure() with the GPU and the products replaced by NumPy stand-ins (exact TF32 arithmetic): one record
    per series and point, errors against the float64 product, NaN reported as non-finite."""
    from gemmlab import numerics as nm

    monkeypatch.setitem(sys.modules, "cupy", HostCupy)
    monkeypatch.setattr(device, "require_gpu", lambda what: None)

    def compute(series, specs, a, b):
        if series == "tf32_truncated":
            return (nm.tf32_trunc(a).astype(np.float64) @ nm.tf32_trunc(b).astype(np.float64)).astype(np.float32)
        if series == "tc7_unpromoted":
            return np.full((a.shape[0], b.shape[1]), np.nan, np.float32)
        return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)

    monkeypatch.setattr(study, "_compute", compute)
    monkeypatch.setattr(study, "_kernel_series", lambda: {})
    opts = study.AccuracyOptions(mn=16, ks=(8, 64), scale_k=32)
    res = study.measure(opts, say=lambda line: None)
    recs = res["records"]
    assert len(recs) == len(study.SERIES) * (2 + len(study.DISTRIBUTIONS))
    by = {(r["sweep"], r["series"], r["dist"], r["k"]): r for r in recs}
    assert by[("k", "cublas_fp32", "normal", 64)]["rel_err"] < 1e-6
    assert by[("k", "tf32_truncated", "normal", 64)]["rel_err"] > 1e-4
    nan = by[("scale", "tc7_unpromoted", "mixed", 32)]
    assert nan["rel_err"] is None and nan["nonfinite"] == 16 * 16
    assert "non-finite" in report.markdown(res)
    with pytest.raises(study.GemmlabError, match="unknown series"):
        study.measure(study.AccuracyOptions(series=("nope",)), say=lambda line: None)
