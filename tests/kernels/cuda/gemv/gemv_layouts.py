"""What both gemv levels take: B only as the transpose of an N×K weight (x @ w.t()), and at most their rows of x."""
from gemmlab.errors import ShapeError
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.problem import Problem


def assert_takes_only_w_t_and_at_most(spec, rows: int) -> None:
    """``spec`` reads B as w.t() alone (a row-major B refused by naming the transpose) and up to ``rows`` rows of A:
    one more is refused as a shape."""
    assert spec.layouts == frozenset({Layout(b=COL)})
    assert "transpose" in spec.layout_refusal(ROW_MAJOR)
    assert spec.is_valid(Problem(rows, 64, 64, spec.precision)) is None
    refusal = spec.is_valid(Problem(rows + 1, 64, 64, spec.precision))
    assert refusal is not None and refusal.error is ShapeError
