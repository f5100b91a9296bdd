"""The seed's kernels written in Python run under numba's CUDA simulator here, at ragged shapes."""
import pytest

from gemmlab.harness.verify import check
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem


@pytest.mark.parametrize("name", ["numba/v1_naive", "numba/v2_smem"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (33, 17, 65), (70, 45, 31), (2, 129, 3), (32, 32, 32)])
def test_simulator_matches_float64(name, shape):
    result = check(get_kernel(name), Problem(*shape), seed=sum(shape))
    assert result.where == "simulator"
    assert result.passed, result
    assert result.error.rel_err < 1e-6
