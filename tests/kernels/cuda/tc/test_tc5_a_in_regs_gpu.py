"""tc5 and tc6 TF32 with the operands exchanged (A_IN_REGS=1) on a GPU (skipped without one): x @ w.t() right on
ragged shapes, x rounded in registers and w by the pre-pass (or in shared memory, small problems) as cuBLAS TF32 rounds
both, and the same bits on every call. The host side (the plan, its launches, the stores, the builds) is
test_tc5_swap_ab.py's and test_plans.py's."""
import numpy as np
import pytest
from tc_levels import assert_rounded_not_truncated

from gemmlab.kernels.cuda.tc.model.kernel import PRE_PASS
from gemmlab.kernels.plan import COL, Layout
from gemmlab.problem import Problem

# M > N (what the exchange is for), N at most 64 (tc6's narrow tile, on the kernel's M), odd sizes past a tile, K
# not a multiple of the k-tile, and a problem small enough for the rounding in shared memory (one launch)
SHAPES = [(300, 129, 1001), (1025, 64, 520), (4097, 1000, 2049), (2048, 1024, 8192), (17, 255, 777), (200, 100, 64)]


@pytest.mark.parametrize("name", ["cuda/tc5_swap_ab_tf32", "cuda/tc6_stream_k_tf32"])
@pytest.mark.parametrize("shape", SHAPES)
def test_on_gpu_the_exchanged_product_is_right_and_rounded_as_cublas(name, shape):
    import cupy

    from gemmlab import device
    from gemmlab.harness.bench import variant
    from gemmlab.harness.layouts import arrange, launch
    from gemmlab.harness.verify import check, run_once

    if device.gpu() is None:
        pytest.skip("needs a CUDA GPU")
    problem, layout = Problem(*shape, "tf32"), Layout(b=COL)
    spec = variant(name, {"A_IN_REGS": 1, **PRE_PASS})
    a, b = arrange(*spec.make_inputs(problem, 3, cupy), layout)
    run, copies = launch(spec, problem, layout)
    assert copies == ()  # x and w read in place
    result = check(spec, problem, launch=run, inputs=(a, b))
    assert result.passed, result
    first = run_once(spec, problem, a, b, run).view(np.uint8).get()
    for _ in range(4):
        assert (run_once(spec, problem, a, b, run).view(np.uint8).get() == first).all()
    assert_rounded_not_truncated(first.view(np.float32).reshape(problem.m, problem.n), a.get(), b.get())

