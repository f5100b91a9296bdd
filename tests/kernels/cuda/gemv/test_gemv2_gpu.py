"""gemv2 on a GPU (skipped without one): every count of the weight's rows a block (ROWS 16, 32, 64) right against
float64 at ragged shapes with NaN-poisoned C, at each count of x's rows, in BF16, FP16 and FP8, and the same bits on
every call (the warps' sums meet in a fixed order). FP8 block-scaled's scales change every 128 of K and N, which the
shapes cross (K 4097 and 8191, N 255, 1000 and 4160) and M_SLICE's slices start inside A's scales."""
import numpy as np
import pytest

from gemmlab.kernels.cuda.gemv.gemv2_mma_swap import ROW_CHOICES
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

# x's rows 1, 3, 9, 17, 32 (each MAX_M build); N cut inside a block of 16, 32 and 64 rows; K not a multiple of a
# 16-byte chunk (element by element), of a k-block, and long enough for every warp
SHAPES = [(1, 33, 4097), (3, 1000, 129), (9, 4097, 999), (17, 255, 8191), (32, 4160, 4096), (29, 129, 1000)]


def assert_the_same_bits_on_every_call(spec, problem, seed):
    """Four launches of one plan on the same operands write the same bits (the warps' sums meet in a fixed order)."""
    import cupy

    from gemmlab.harness.verify import run_once

    a, b = spec.make_inputs(problem, seed, cupy)
    plan = spec.build(problem)
    first = run_once(spec, problem, a, b, plan).view(np.uint8).get()
    for _ in range(3):
        assert (run_once(spec, problem, a, b, plan).view(np.uint8).get() == first).all()


@pytest.mark.parametrize("precision", ["bf16", "fp16", "fp8", "fp8_block"])
@pytest.mark.parametrize("rows", ROW_CHOICES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_on_gpu_each_rows_a_block_is_right_and_repeats_its_bits(precision, rows, shape):
    from gemmlab import device
    from gemmlab.harness.verify import check

    if device.gpu() is None:
        pytest.skip("needs a CUDA GPU")
    problem = Problem(*shape, precision)
    spec = get_kernel(f"cuda/gemv2_mma_swap_{precision}").with_params({"ROWS": rows})
    assert spec.for_problem(problem).params["ROWS"] == rows
    result = check(spec, problem, seed=2)
    assert result.passed, result
    assert_the_same_bits_on_every_call(spec, problem, 3)


@pytest.mark.parametrize("precision", ["bf16", "fp16", "fp8", "fp8_block"])
@pytest.mark.parametrize("m_slice, shape", [(16, (32, 4096, 4096)), (16, (17, 1000, 129)), (8, (29, 4097, 999)),
                                            (16, (32, 33, 8191))], ids=lambda x: "x".join(map(str, x)) if
                         isinstance(x, tuple) else f"slice{x}")
def test_on_gpu_rows_of_x_in_slices_are_right_with_a_matrix_addend(precision, m_slice, shape):
    """M_SLICE: ceil(M / MAX_M) blocks on each run of the weight's rows, each its slice of x's rows; right against
    float64 with NaN-poisoned C, plain and with alpha·AB + beta·D fused (D read at the call's rows, not the slice's)."""
    from gemmlab import device
    from gemmlab.epilogue import Epilogue
    from gemmlab.harness.verify import check

    if device.gpu() is None:
        pytest.skip("needs a CUDA GPU")
    problem = Problem(*shape, precision)
    spec = get_kernel(f"cuda/gemv2_mma_swap_{precision}").with_params({"M_SLICE": m_slice})
    build = spec.for_problem(problem)
    assert build.params["MAX_M"] == m_slice and build.geometry_of_build(problem).grid[0] == \
        -(-shape[1] // 16) * -(-shape[0] // m_slice)
    for s in (spec, spec.with_epilogue(Epilogue(alpha=0.5, beta=2.0, addend="matrix"), "float32")):
        result = check(s, problem, seed=4)
        assert result.passed, result


@pytest.mark.parametrize("precision", ["bf16", "fp16", "fp8", "fp8_block"])
@pytest.mark.parametrize("shape", [(16, 1000, 129), (13, 255, 8191), (29, 129, 1000), (32, 1024, 4097)],
                         ids=lambda s: "x".join(map(str, s)))
def test_on_gpu_the_registered_builds_own_slices_are_right_and_repeat_their_bits(precision, shape):
    """The registered spec slices x's rows itself on these weights of few rows (slice_for): right against float64
    with NaN-poisoned C, with a fused bias and GELU too, and the same bits on every call."""
    from gemmlab import device
    from gemmlab.epilogue import Epilogue
    from gemmlab.harness.verify import check

    if device.gpu() is None:
        pytest.skip("needs a CUDA GPU")
    problem = Problem(*shape, precision)
    spec = get_kernel(f"cuda/gemv2_mma_swap_{precision}")
    assert spec.for_problem(problem).params["M_SLICE"] > 0
    for s in (spec, spec.with_epilogue(Epilogue(addend="bias", activation="gelu"), spec.prec.output_dtype)):
        result = check(s, problem, seed=6)
        assert result.passed, result
    assert_the_same_bits_on_every_call(spec, problem, 7)
