"""What the table commands import: gemmlab list prints the registry without torch, CuPy or numba on any machine (the
Triton peer is registered where Triton and torch are installed, not imported; numba's simulator switch comes from
the driver's own device count, and the numba and CPU levels compile their kernels on first use), and gemmlab
roofline without torch or numba, and without CuPy where there is no driver."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab import device

SRC = str(Path(__file__).parents[1] / "src")
# runs one command in a fresh interpreter, then prints its exit status and the heavy modules it imported
SCRIPT = """
import contextlib, io, sys
from gemmlab.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    status = main(sys.argv[1:])
print(status, *sorted(m for m in ("torch", "cupy", "triton", "numba", "ml_dtypes") if m in sys.modules))
"""


def imported_by(*command) -> list[str]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *command], capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_list_imports_neither_torch_nor_cupy_nor_numba():
    assert imported_by("list") == ["0"]


def test_roofline_imports_no_torch_nor_numba_and_cupy_only_to_name_a_gpu():
    got = imported_by("roofline")
    assert got[0] == "0" and "torch" not in got and "numba" not in got
    if not device._driver_loads():
        assert got == ["0"]


@pytest.mark.parametrize("broken, error", [("rich", "ImportError"), ("numpy", "ImportError"),
                                           ("numpy", "RuntimeError"), ("rich", "AttributeError")])
@pytest.mark.parametrize("command", [["list"], ["list", "--kernels", "nope*"],
                                     ["report", "nonexistent.json", "--summary"],
                                     ["bench", "--repeat", "0", "--kernels", "cpu/blas", "--shape", "8"],
                                     ["verify", "--kernels", "cpu/blas", "--sample", "-1"]])
def test_a_dependency_of_the_command_line_that_fails_to_import_ends_in_one_line_and_exit_2(broken, error, command,
                                                                                           tmp_path):
    """`python -m gemmlab` (the `gemmlab` script's entry too) where a dependency the command line's modules import
    cannot be imported, or raises another error as it imports (a NumPy built for another ABI): one line naming it,
    exit 2, no traceback, whatever the command; NumPy too, which `import gemmlab` itself does not import (its public
    names load on first use)."""
    (tmp_path / f"{broken}.py").write_text(f"raise {error}('{broken} is broken here\\nsecond line')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), SRC, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "gemmlab", *command], capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gemmlab: error: ") and f"{broken} is broken here" in lines[0]
    assert (error in lines[0]) == (error != "ImportError")
