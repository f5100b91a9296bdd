import pytest

from gemmlab.harness.verify import check
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem


@pytest.mark.parametrize("name", ["cpu/v0_naive", "cpu/blas"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (33, 17, 65), (127, 129, 255), (4097, 3, 17)])
def test_cpu_kernels_verify(name, shape):
    result = check(get_kernel(name), Problem(*shape), seed=11)
    assert result.where == "cpu" and result.passed, result


def test_v0_accumulates_in_float32_like_the_seed():
    # float32 accumulation over a long K leaves error far above float64's and within FP32's tolerance
    spec = get_kernel("cpu/v0_naive")
    result = check(spec, Problem(4, 4, 20000), seed=3)
    assert result.passed and result.error.rel_err > 1e-9


def test_v0_refuses_problems_that_would_take_minutes():
    from gemmlab.errors import SizeLimitError

    reason = get_kernel("cpu/v0_naive").is_valid(Problem(4096, 4096, 4096))
    assert reason and "GFLOP" in reason and reason.error is SizeLimitError
    assert get_kernel("cpu/v0_naive").is_valid(Problem(1024, 1024, 1024)) is None
