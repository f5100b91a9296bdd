"""The TF32 levels with their operands rounded by TFLOAT32 tensor maps (TMA_ROUND=1: tc5, tc6 and tc10 as registered,
a variant of tc4) on a GPU (skipped without one): right on ragged shapes in both layouts gemmlab.matmul hands them, and as
accurate as rounding both operands to nearest, not as truncating them."""
import pytest
from tc_levels import assert_rounded_not_truncated

from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

LEVELS = {"cuda/tc4_persistent_tf32": {"TMA_ROUND": 1},
          "cuda/tc5_swap_ab_tf32": {"TF32_ROUND": 0, "TMA_ROUND": 1},
          "cuda/tc6_stream_k_tf32": {"TF32_ROUND": 0, "TMA_ROUND": 1},
          "cuda/tc10_split_k_tf32": {"TF32_ROUND": 0, "TMA_ROUND": 1}}
SHAPES = [(1, 33, 4097), (3, 257, 1001), (17, 255, 8191), (127, 129, 777), (300, 200, 132), (512, 512, 2048)]


@pytest.mark.parametrize("name", list(LEVELS))
@pytest.mark.parametrize("layout", [Layout(b=COL), ROW_MAJOR], ids=["w.t()", "row-major B"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_tma_round_is_right_and_rounds_both_operands(name, layout, shape):
    import cupy

    from gemmlab import device
    from gemmlab.harness.layouts import arrange, launch
    from gemmlab.harness.verify import check, run_once

    if device.gpu() is None:
        pytest.skip("needs a CUDA GPU")
    spec = get_kernel(name).with_params(LEVELS[name])
    problem = Problem(*shape, "tf32")
    a, b = arrange(*spec.make_inputs(problem, 5, cupy), layout)
    run, _ = launch(spec, problem, layout)
    result = check(spec, problem, launch=run, inputs=(a, b))
    assert result.passed, result
    m, n, _ = shape
    if m * n < 1000:  # too few elements for a relative error to tell rounding from truncation
        return
    assert_rounded_not_truncated(run_once(spec, problem, a, b, run).get(), a.get(), b.get())
