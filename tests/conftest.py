"""Tests run without a GPU: numba kernels execute under the CUDA simulator, CUDA C kernels are compiled only.

The simulator switch is read when numba.cuda is first imported, so it is set here, before any gemmlab import.
On a machine with a GPU, GEMMLAB_TEST_GPU=1 runs the same tests against the real device.
"""
import os

import pytest

if os.environ.get("GEMMLAB_TEST_GPU") != "1":
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
os.environ.setdefault("GEMMLAB_CACHE", os.path.join(os.path.dirname(__file__), "..", ".cache", "gemmlab"))


@pytest.fixture
def own_dispatch_cache(tmp_path, monkeypatch):
    """This machine's dispatch table in an empty cache folder (beside the test's own files in tmp_path), and the
    tables read afresh before and after."""
    from gemmlab import dispatch

    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path / "cache"))
    dispatch.load_table.cache_clear()
    dispatch._roofs.cache_clear()
    yield
    dispatch.load_table.cache_clear()
    dispatch._roofs.cache_clear()
