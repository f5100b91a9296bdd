"""A non-editable install (pip install ., a wheel) carries only the Python modules and the package data pyproject.toml
names: every other file gemmlab reads at run time (CUDA sources and headers NVRTC compiles, the shipped dispatch
table, the chapter's claims) must match one of its globs, or the kernels that include it fail to compile there."""
import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "src" / "gemmlab"


def test_every_data_file_of_the_package_is_in_its_package_data():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["gemmlab"]
    files = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*")
             if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert any(f.endswith(".cu") for f in files) and any(f.endswith(".cuh") for f in files)
    left_out = [f for f in files if not any(fnmatch.fnmatchcase(f, g) and f.count("/") == g.count("/") for g in globs)]
    assert not left_out, f"not in [tool.setuptools.package-data]: {left_out}"
