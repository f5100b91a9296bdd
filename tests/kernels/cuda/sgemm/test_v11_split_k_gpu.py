"""cuda/v11_split_k on a GPU (skipped without one): ragged shapes against float64 into a NaN-poisoned C, with B
row-major and as w.t() (read in place), at the model's choice of tile and S and at a pinned S; the same bits on five
calls of one plan (its tickets back at zero after each); the fused bias + gelu on the reduced tile. Apart from the
CPU tests, whose stub driver (a module fixture) would take these launches."""
import numpy as np
import pytest

from gemmlab import device
from gemmlab.epilogue import Epilogue
from gemmlab.harness.reference import tolerance_for
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

pytestmark = pytest.mark.skipif(device.gpu() is None, reason="needs a CUDA GPU")

NAME = "cuda/v11_split_k"
# ragged in every dimension (K across many k tiles, none a multiple of 16 or of S), and the suite's long-K and
# small-M shapes
SHAPES = [(1, 33, 4097), (17, 127, 8191), (33, 1, 1001), (127, 129, 777), (129, 17, 4095), (32, 4096, 4096),
          (128, 1024, 8192), (256, 256, 16384), (256, 256, 65536)]


def _operands(problem: Problem, layout: Layout, seed: int):
    """A (M×K), B as the kernel reads it (K×N row-major, or the N×K w whose transpose B is), and float64 A·B."""
    import cupy

    m, n, k = problem.shape
    rng = cupy.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=cupy.float32)
    w = rng.standard_normal((n, k), dtype=cupy.float32)
    b = w if layout.b == COL else cupy.ascontiguousarray(w.T)
    return a, b, (a.astype(cupy.float64) @ w.T.astype(cupy.float64)).get()


def _call(plan, problem: Problem, a, b) -> np.ndarray:
    """One launch of ``plan`` into a NaN-filled C (synchronized): C on the host."""
    import cupy

    c = cupy.full((problem.m, problem.n), cupy.nan, dtype=cupy.float32)
    stream = cupy.cuda.get_current_stream()
    plan.launch(a.data.ptr, b.data.ptr, c.data.ptr, stream.ptr)
    stream.synchronize()
    return c.get()


def _error(c: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref))  # NaN where C was not written


@pytest.mark.parametrize("layout", [ROW_MAJOR, Layout(b=COL)], ids=["row_major_b", "w_t"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_right_and_the_same_bits_on_five_calls(shape, layout):
    problem = Problem(*shape)
    a, b, ref = _operands(problem, layout, seed=sum(shape))
    for spec in (get_kernel(NAME), get_kernel(NAME).with_params({"SPLITS": 7})):
        plan = spec.plan(problem, layout)
        first = _call(plan, problem, a, b)
        assert _error(first, ref) < tolerance_for(problem), (dict(plan.spec.params), _error(first, ref))
        for _ in range(4):
            assert (_call(plan, problem, a, b).view(np.uint32) == first.view(np.uint32)).all(), dict(plan.spec.params)


@pytest.mark.parametrize("shape", [(127, 129, 4097), (32, 4096, 4096), (256, 256, 16384)],
                         ids=lambda s: "x".join(map(str, s)))
def test_fused_bias_and_gelu_on_the_reduced_tile(shape):
    """The epilogue runs once, on the sum of the S partials, in the CTA that reduces: the harness's check (float64
    reference with the epilogue, NaN-poisoned C) at a split shape, at the chosen S and at S = 7."""
    from gemmlab.harness.verify import check

    problem = Problem(*shape)
    for spec in (get_kernel(NAME), get_kernel(NAME).with_params({"SPLITS": 7})):
        fused = spec.with_epilogue(Epilogue("gelu", addend="bias"), "float32")
        assert fused.for_problem(problem).params["SPLITS"] > 1
        result = check(fused, problem, seed=2)
        assert result.passed, result
