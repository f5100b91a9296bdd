"""What the core install does without its extras: CuPy (gemmlab[cupy]) and matplotlib (gemmlab[plots]) blocked
from import, as in an install that lacks them. The CPU bench and the tables run; a figure or a GPU run stops with
one line naming the extra to install."""
import os
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "results" / "h200"
# an interpreter in which cupy, matplotlib and torch cannot be imported, then the console script's main
WITHOUT_EXTRAS = ("import sys\nfor name in ('cupy', 'matplotlib', 'torch'):\n    sys.modules[name] = None\n"
                  "from gemmlab.cli import main\nsys.exit(main(sys.argv[1:]))")


def _gemmlab(*args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
               COLUMNS="120")
    return subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS, *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=env)


def test_the_cpu_bench_runs_on_the_core_install(tmp_path):
    proc = _gemmlab("bench", "--kernels", "cpu/blas", "--json", str(tmp_path / "r.json"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CuPy is not importable" in proc.stdout and "gemmlab[cupy]" in proc.stdout  # its first line says why
    assert (tmp_path / "r.json").exists()


def test_tables_render_and_a_figure_names_the_plots_extra(tmp_path):
    tables = _gemmlab("report", str(H200 / "verify.json"), "--out", str(tmp_path / "v"), cwd=tmp_path)
    assert tables.returncode == 0 and (tmp_path / "v" / "report.md").exists(), tables.stderr
    figures = _gemmlab("report", str(H200 / "fp32.json"), "--out", str(tmp_path / "f"), cwd=tmp_path)
    assert figures.returncode == 2 and not (tmp_path / "f").exists()
    assert figures.stderr.splitlines() == ["gemmlab report: error: this figure needs matplotlib, which is not "
                                           "installed: python3 -m pip install 'gemmlab[plots]'"]


def test_a_suite_and_a_chapter_import_matplotlib_only_for_their_figures(tmp_path):
    """The shape suite's summary table renders on the core install; its report, which draws, names the extra; the
    chapter's report module imports without matplotlib."""
    sample = ROOT / "tests" / "report" / "data" / "sample_suite.json"
    table = _gemmlab("report", str(sample), "--summary", cwd=tmp_path)
    assert table.returncode == 0 and "## Summary" in table.stdout, table.stderr
    figures = _gemmlab("report", str(sample), "--out", str(tmp_path / "s"), cwd=tmp_path)
    assert figures.returncode == 2 and not (tmp_path / "s").exists()
    assert figures.stderr.splitlines() == ["gemmlab report: error: this figure needs matplotlib, which is not "
                                           "installed: python3 -m pip install 'gemmlab[plots]'"]
    code = "import sys\nsys.modules['matplotlib'] = None\nimport gemmlab.report.chapter, gemmlab.report.suite\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr


def test_a_gpu_kernel_on_numpy_operands_names_the_cupy_extra():
    code = ("import sys\nsys.modules['cupy'] = None\nimport numpy as np, gemmlab\nfrom gemmlab.errors import "
            "NoGPUError\ntry:\n    gemmlab.matmul(np.ones((3, 4), np.float32), np.ones((4, 2), np.float32), "
            "kernel='cuda/v2_smem')\nexcept NoGPUError as exc:\n    print(exc)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert "python3 -m pip install 'gemmlab[cupy]'" in proc.stdout, proc.stdout + proc.stderr
