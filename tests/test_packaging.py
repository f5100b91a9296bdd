"""A non-editable install (pip install ., a wheel) carries only the Python modules and the package data pyproject.toml
names: every other file gemmlab reads at run time (CUDA sources and headers NVRTC compiles, the shipped dispatch
table, the chapter's claims) must be in the wheel, or the kernels that include it fail to compile there. The test
builds the wheel from a copy of the project (setuptools, the build backend, is in the test extra) and reads it."""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "src" / "gemmlab"


def test_the_wheel_carries_every_data_file_of_the_package(tmp_path):
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path / "dist")], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "dist").glob("gemmlab-*.whl")
    carried = set(zipfile.ZipFile(wheel).namelist())
    files = ["gemmlab/" + p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*")
             if p.is_file() and p.suffix != ".pyc" and "__pycache__" not in p.parts]
    assert any(f.endswith(".cu") for f in files) and any(f.endswith(".cuh") for f in files)
    assert any(f.endswith(".json") for f in files)
    left_out = [f for f in files if f not in carried]
    assert not left_out, f"not in the wheel (pyproject.toml's [tool.setuptools.package-data]): {left_out}"
