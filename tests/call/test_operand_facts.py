"""What a call reads off its operands: a view whose rows (or columns) are contiguous but spaced wider than the
matrix is strided, never row- (column-) major, so it is copied before a kernel reads it as packed; and NumPy
operands are told apart from tensors without importing torch."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gemmlab import call
from gemmlab.kernels.plan import COL, ROW

SRC = str(Path(__file__).parents[2] / "src")


@pytest.mark.parametrize("x, layout", [
    (np.ones((6, 8), np.float32), ROW),
    (np.ones((8, 6), np.float32).T, COL),
    (np.ones((6, 8), np.float32)[:, :3], None),  # rows of 3 elements, 8 apart
    (np.ones((8, 6), np.float32).T[:3, :], None),  # columns of 3 elements, 8 apart
])
def test_a_view_with_padded_rows_or_columns_is_strided(x, layout):
    assert call.facts(x, "A").layout == layout


def test_numpy_operands_run_without_importing_torch():
    code = ("import sys, numpy as np, gemmlab; a = np.ones((3, 4), np.float32); "
            "c = gemmlab.matmul(a, a.T); assert c.shape == (3, 3) and (c == 4).all(); print('torch' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]


def test_the_plan_cache_keeps_the_newest_plans_up_to_its_bound(monkeypatch):
    """A program that calls with ever new shapes keeps working: past the bound the oldest plan makes room."""
    import gemmlab
    from gemmlab.call import cache

    gemmlab.clear_plans()
    monkeypatch.setattr(cache, "MAX_PLANS", 3)
    for n in range(1, 7):
        a = np.ones((2, n), np.float32)
        np.testing.assert_array_equal(gemmlab.matmul(a, a.T), np.full((2, 2), n, np.float32))
        assert len(cache.plans) == min(n, 3)
    assert [(key[3].shape, key[4].shape) for key in cache.plans] == [((2, n), (n, 2)) for n in (4, 5, 6)]
    gemmlab.clear_plans()
