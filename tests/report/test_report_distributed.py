"""The distributed scaling figure and table, from saved JSON only (made-up numbers: the drawing is under test)."""
import json

import pytest

from gemmlab.report.distributed import print_table, render, scaling_figure


def record(op, scaling, gpus, ms, one_gpu_ms, comm_ms=None, compute_ms=None, hidden=None, peer_ms=None):
    return {"op": op, "scaling": scaling, "gpus": gpus, "m": 64, "n": 64, "k": 64, "ms": ms, "status": "ok",
            "one_gpu_ms": one_gpu_ms, "efficiency": one_gpu_ms / ms if scaling == "weak" else one_gpu_ms / (gpus * ms),
            "hidden_fraction": hidden, "comm_ms": comm_ms, "compute_ms": compute_ms, "peer_ms": peer_ms,
            "verified": True}


def results(records, ranks):
    return {"env": {"gpu": {"name": "NVIDIA H200"}, "git_sha": "abc123", "distributed": {"ranks": ranks,
                                                                                          "backend": "cpu:gloo,cuda:nccl"}},
            "records": records}


X2 = results([record("all_gather_matmul", "weak", 1, 10.0, 10.0, peer_ms=10.0),
              record("all_gather_matmul", "weak", 2, 12.0, 10.0, 2.0, 10.0, 0.0, peer_ms=12.5),
              record("all_gather_matmul", "strong", 2, 8.0, 16.0, peer_ms=9.0)], 2)
X4 = results([record("all_gather_matmul", "weak", 2, 10.5, 10.0, 2.0, 10.0, 0.75, peer_ms=12.0),
              record("all_gather_matmul", "weak", 4, 11.0, 10.0, 4.0, 10.0, 0.75, peer_ms=14.0),
              record("summa", "weak", 4, 10.0, 10.0, 2.0, 10.0, 1.0),
              {"op": "summa", "scaling": "weak", "gpus": 2, "status": "skipped", "reason": "not a square",
               "verified": None}], 4)


def line(fig, gid):
    found = [a for ax in fig.axes for a in ax.get_lines() if a.get_gid() == gid]
    assert len(found) == 1, gid
    return [float(v) for v in found[0].get_xdata()], [float(v) for v in found[0].get_ydata()]


def test_figure_joins_runs_a_later_file_replacing_an_earlier_record():
    fig = scaling_figure([X2, X4])
    xs, ys = line(fig, "weak:all_gather_matmul")
    assert xs == [1, 2, 4] and ys == pytest.approx([1.0, 10.0 / 10.5, 10.0 / 11.0])  # the 2-GPU point from X4
    assert line(fig, "weak:all_gather_matmul:peer")[1] == pytest.approx([1.0, 10.0 / 12.0, 10.0 / 14.0])
    assert line(fig, "strong:all_gather_matmul") == ([2], [pytest.approx(2.0)])  # speedup t(1)/t(P)
    assert line(fig, "hidden:all_gather_matmul") == ([2, 4], [0.75, 0.75])
    assert line(fig, "weak:summa") == ([4], [1.0])  # the skipped 2-GPU record draws nothing
    assert [ax.get_title() for ax in fig.axes] == ["weak scaling (fixed per-GPU problem)",
                                                   "strong scaling (fixed total problem)",
                                                   "communication hidden (weak scaling)"]


def test_one_key_below_the_panels_and_a_reason_for_an_empty_one():
    """The keys stood inside the panels over the points; a one-GPU run's third panel was empty with no word why."""
    one = results([record("all_gather_matmul", "weak", 1, 10.0, 8.0, peer_ms=9.0),
                   record("all_gather_matmul", "strong", 1, 10.0, 9.5)], 1)
    fig = scaling_figure([one])
    weak, strong, hidden = fig.axes
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert fig.legends[0].get_window_extent(renderer).y1 <= min(ax.get_tightbbox(renderer).y0 for ax in fig.axes) + 1
    assert strong.get_ylim()[0] == 0
    assert "no communication to hide" in next(t for t in hidden.texts if t.get_gid() == "empty").get_text()
    assert not [t for t in scaling_figure([X4]).axes[2].texts if t.get_gid() == "empty"]


def test_render_writes_a_png(tmp_path):
    paths = []
    for name, res in (("h200x2", X2), ("h200x4", X4)):
        path = tmp_path / name / "distributed.json"
        path.parent.mkdir()
        path.write_text(json.dumps(res))
        paths.append(path)
    out = render(paths, tmp_path / "scaling.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table_shows_every_record_and_why_one_was_skipped(capsys):
    print_table(X4)
    text = capsys.readouterr().out
    assert "4 × NVIDIA H200" in text and "all_gather_matmul" in text and "skipped: not a square" in text
    assert "0.909" in text  # weak efficiency of the 4-GPU all-gather record: 10 / 11
