"""gemmlab.matmul with torch.matmul's semantics on the host: 1-D operands, N-D batches and their broadcast, against
torch.matmul and numpy.matmul (shape, dtype and values) over generated shape pairs, the refusals where they refuse,
which call runs (one 2-D GEMM through a reshape, or one batched call), autograd and torch.compile."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import gemmlab  # noqa: E402
from gemmlab import call, matmul_shapes, torch_op  # noqa: E402
from gemmlab.errors import GemmlabError, LayoutError, OperandTypeError, ShapeError, UnknownKernelError  # noqa: E402

gen = torch.Generator().manual_seed(11)
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def randn(*shape):
    return torch.randn(shape, generator=gen)


def _layout(x, transposed: bool):
    """x itself, or the same values stored with its last two dimensions swapped (column-major matrices)."""
    return x.mT.contiguous().mT if transposed and x.dim() >= 2 else x


@st.composite
def broadcasting_pairs(draw):
    """Two shapes torch.matmul accepts: ranks 1-4, sizes 1-3 (size-1 dimensions included), a batch broadcast from
    both sides, and for each operand whether its matrices are stored transposed."""
    size = st.integers(1, 3)
    batch = draw(st.lists(size, min_size=0, max_size=2))
    m, k, n = draw(size), draw(size), draw(size)

    def operand(matrix, vector):
        if draw(st.booleans()) and not batch and draw(st.booleans()):
            return vector
        own = batch[len(batch) - draw(st.integers(0, len(batch))):]
        return (*[1 if draw(st.booleans()) else d for d in own], *matrix)

    return operand((m, k), (k,)), operand((k, n), (k,)), draw(st.booleans()), draw(st.booleans())


@given(broadcasting_pairs())
@SETTINGS
def test_shape_dtype_and_values_are_torch_matmuls(pair):
    a_shape, b_shape, ta, tb = pair
    a, b = _layout(randn(*a_shape), ta), _layout(randn(*b_shape), tb)
    c, ref = gemmlab.matmul(a, b), torch.matmul(a, b)
    assert isinstance(c, torch.Tensor) and c.shape == ref.shape and c.dtype == ref.dtype
    torch.testing.assert_close(c, ref, rtol=1e-5, atol=1e-5)


@given(broadcasting_pairs())
@SETTINGS
def test_numpy_operands_get_numpy_matmuls_shape(pair):
    a_shape, b_shape, ta, tb = pair
    a, b = _layout(randn(*a_shape), ta).numpy(), _layout(randn(*b_shape), tb).numpy()
    c, ref = gemmlab.matmul(a, b), np.matmul(a, b)
    assert np.shape(c) == np.shape(ref) and type(c) is type(ref) and c.dtype == ref.dtype
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


@given(st.lists(st.integers(0, 3), min_size=1, max_size=4), st.lists(st.integers(0, 3), min_size=1, max_size=4))
@SETTINGS
def test_gemmlab_refuses_exactly_where_torch_refuses(a_shape, b_shape):
    """Shapes drawn freely (zero sizes included), many of which torch refuses: a ShapeError naming the problem where
    it does, torch's result where it does not."""
    a, b = randn(*a_shape), randn(*b_shape)
    try:
        ref = torch.matmul(a, b)
    except RuntimeError:
        ref = None
    if ref is None:
        with pytest.raises(ShapeError, match="inner dimensions differ|do not broadcast"):
            gemmlab.matmul(a, b)
        with pytest.raises(ShapeError):
            gemmlab.matmul(a.numpy(), b.numpy())
    else:
        assert gemmlab.matmul(a, b).shape == ref.shape


@pytest.mark.parametrize("a_shape, b_shape, out_shape", [
    ((5,), (5,), ()),  # a dot product
    ((5,), (5, 3), (3,)),  # vector-matrix
    ((4, 5), (5,), (4,)),  # matrix-vector
    ((5,), (2, 5, 3), (2, 3)),  # a vector against a batch
    ((2, 4, 5), (5,), (2, 4)),
    ((2, 3, 4, 5), (5, 6), (2, 3, 4, 6)),  # what nn.Linear's x @ w.T is
    ((2, 1, 4, 5), (3, 5, 6), (2, 3, 4, 6)),  # the batch broadcast from both sides
    ((4, 5), (2, 5, 6), (2, 4, 6)),
    ((1, 4, 5), (1, 5, 6), (1, 4, 6)),
])
def test_the_table_of_torch_matmuls_cases(a_shape, b_shape, out_shape):
    a, b = randn(*a_shape), randn(*b_shape)
    c = gemmlab.matmul(a, b)
    assert c.shape == out_shape
    torch.testing.assert_close(c, torch.matmul(a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a, b, match", [
    (torch.tensor(2.0), randn(3, 3), "A is a 0-D scalar"),
    (randn(3), torch.tensor(2.0), "B is a 0-D scalar"),
    (randn(4), randn(5), r"inner dimensions differ: A \(4,\) and B \(5,\)"),
    (randn(2, 3, 4), randn(3, 4, 5), r"do not broadcast: A \(2, 3, 4\) and B \(3, 4, 5\); batch dimension -1 is 2"),
    (randn(0, 3, 4), randn(2, 4, 5), r"do not broadcast: A \(0, 3, 4\) and B \(2, 4, 5\)"),  # 0 against 2
])
def test_refusals_name_the_shapes(a, b, match):
    with pytest.raises(ShapeError, match=match):
        gemmlab.matmul(a, b)


def test_a_collapsible_batch_runs_as_one_2d_gemm_on_a_view(monkeypatch):
    """(batch, seq, K) @ (K, N): the reshape is a view of A (no copy), and one 2-D product runs."""
    seen, direct = [], torch_op.direct
    monkeypatch.setattr(torch_op, "direct", lambda a, b, *rest, **kw: seen.append((a, b)) or direct(a, b, *rest, **kw))
    x, w = randn(3, 7, 5), randn(6, 5)
    c = gemmlab.matmul(x, w.t())
    (a, b), = seen
    assert a.shape == (21, 5) and a.data_ptr() == x.data_ptr() and a._base is x
    assert b.data_ptr() == w.data_ptr() and c.shape == (3, 7, 6)
    torch.testing.assert_close(c, x @ w.t(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a, b", [
    (randn(3, 5, 4).mT, randn(5, 6)),  # A's batch does not collapse into its rows
    (randn(3, 4, 5), randn(3, 5, 6)),  # both batched
    (randn(4, 5), randn(3, 5, 6)),  # A broadcast over B's batch
])
def test_a_true_batch_is_one_batched_call_with_broadcast_strides(monkeypatch, a, b):
    calls, batched = [], call.batched_matmul
    monkeypatch.setattr(call, "batched_matmul", lambda *args: calls.append(args) or batched(*args))
    c = gemmlab.matmul(a, b)
    (_, _, _, _, _, _, batch), = calls
    assert batch.shape == (3,)
    assert batch.a == ((0,) if a.dim() == 2 else (a.stride(0),))
    assert batch.b == ((0,) if b.dim() == 2 else (b.stride(0),))
    torch.testing.assert_close(c, torch.matmul(a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a_shape, b_shape", [((4, 5, 7), (4, 7, 3)), ((2, 3, 5, 7), (7, 3)), ((5, 7), (2, 7, 3))])
def test_repeated_nd_calls_on_host_tensors_compute_each_calls_operands(a_shape, b_shape):
    """Calls with operands of the same attributes, one after another (a batch, x's rows against a matrix, a matrix
    against a batch): each result is torch.matmul of that call's own operands."""
    for _ in range(3):
        a, b = torch.randn(a_shape, generator=gen), torch.randn(b_shape, generator=gen)
        torch.testing.assert_close(gemmlab.matmul(a, b), torch.matmul(a, b), rtol=1e-5, atol=1e-5)


def test_the_route_reads_shapes_and_strides():
    r = matmul_shapes.route((2, 3, 4), (12, 4, 1), (4, 5), (5, 1))
    assert not r.batched and (r.a_shape, r.c_shape, r.out_shape) == ((6, 4), (6, 5), (2, 3, 5))
    r = matmul_shapes.route((2, 3, 4), (12, 1, 3), (4, 5), (5, 1))  # column-major matrices: no single row stride
    assert r.batched and r.batch == call.Batch((2,), (12,), (0,))
    r = matmul_shapes.route((4,), (1,), (2, 1, 4, 5), (20, 20, 5, 1))
    assert r.out_shape == (2, 1, 5) and r.batch == call.Batch((2, 1), (0, 0), (20, 0))


def test_out_of_the_results_shape_is_written_in_place():
    a, b = randn(2, 3, 4), randn(2, 4, 5)
    out = torch.empty(2, 3, 5)
    assert gemmlab.matmul(a, b, out=out) is out
    torch.testing.assert_close(out, a @ b, rtol=1e-5, atol=1e-5)
    out2 = np.empty((2, 3, 5), np.float32)
    assert gemmlab.matmul(a.numpy(), b.numpy(), out=out2) is out2
    np.testing.assert_allclose(out2, (a @ b).numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(LayoutError, match=r"product's shape \(2, 3, 5\), got \(6, 5\)"):
        gemmlab.matmul(a, b, out=torch.empty(6, 5))
    with pytest.raises(LayoutError, match="not C-contiguous"):
        gemmlab.matmul(a, b, out=torch.empty(2, 5, 3).mT)


@pytest.mark.parametrize("a_shape, b_shape", [((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((2, 3, 5), (5, 4)),
                                              ((2, 1, 3, 5), (4, 5, 2)), ((3, 5), (2, 5, 4)), ((2, 3, 5), (5,))])
def test_autograd_matches_torchs(a_shape, b_shape):
    """float32 against torch's own autograd (the host kernels take float32, not float64): broadcast operands'
    gradients are summed over the batch they were broadcast along."""
    a, b = randn(*a_shape).requires_grad_(), randn(*b_shape).requires_grad_()
    ra, rb = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    out = gemmlab.matmul(a, b)
    weight = randn(*out.shape)
    (out * weight).sum().backward()
    (torch.matmul(ra, rb) * weight).sum().backward()
    torch.testing.assert_close(a.grad, ra.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(b.grad, rb.grad, rtol=1e-5, atol=1e-5)


def test_bmm_operator_has_a_fake():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake = torch.ops.gemmlab.bmm(torch.empty(2, 3, 4), torch.empty(2, 4, 5), "auto", None)
    assert fake.shape == (2, 3, 5) and fake.dtype == torch.float32


def test_torch_compile_traces_nd_matmul_without_a_graph_break():
    torch._dynamo.reset()

    def f(x, y, v):
        return (gemmlab.matmul(x, y) + gemmlab.matmul(x, v).unsqueeze(-1)).relu()

    x, y, v = randn(2, 3, 4).requires_grad_(), randn(2, 4, 5).requires_grad_(), randn(4)
    explained = torch._dynamo.explain(f)(x, y, v)
    assert explained.graph_break_count == 0
    torch._dynamo.reset()
    out = torch.compile(f, fullgraph=True, backend="aot_eager")(x, y, v)
    torch.testing.assert_close(out, f(x.detach(), y.detach(), v))
    out.sum().backward()
    rx, ry = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    (torch.matmul(rx, ry) + torch.matmul(rx, v).unsqueeze(-1)).relu().sum().backward()
    torch.testing.assert_close(x.grad, rx.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(y.grad, ry.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("y_shape", [(7, 3), (2, 7, 3)])
def test_torch_compile_of_nd_matmul_takes_symbolic_sizes(y_shape):
    """A second sequence length recompiles with symbolic sizes (and dynamic=True starts with them): the route then
    reads sizes it cannot format, and formats them only for an error."""
    torch._dynamo.reset()
    y = randn(*y_shape)
    for dynamic in (None, True):
        torch._dynamo.reset()
        f = torch.compile(lambda x: gemmlab.matmul(x, y), fullgraph=True, backend="aot_eager", dynamic=dynamic)
        for seq in (5, 9, 11):
            x = randn(2, seq, 7)
            torch.testing.assert_close(f(x), torch.matmul(x, y), rtol=1e-5, atol=1e-5)


def test_out_dtype_goes_through_the_operators_under_autograd():
    """out_dtype under autograd, 2-D or not: gemmlab::mm and gemmlab::bmm take it, their fakes report it."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    for a_shape, b_shape in (((4, 5, 7), (7, 3)), ((4, 5, 7), (4, 7, 3)), ((5, 7), (7, 3))):
        a, b = randn(*a_shape).requires_grad_(), randn(*b_shape).requires_grad_()
        c = gemmlab.matmul(a, b, out_dtype=torch.float32)
        assert c.dtype == torch.float32 and c.grad_fn is not None
        c.sum().backward()
        ra, rb = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
        torch.matmul(ra, rb).sum().backward()
        torch.testing.assert_close(a.grad, ra.grad, rtol=1e-5, atol=1e-5)
    with FakeTensorMode():
        fake = torch.ops.gemmlab.bmm(torch.empty(2, 3, 4, dtype=torch.bfloat16), torch.empty(2, 4, 5,
                                     dtype=torch.bfloat16), "auto", None, "float32")
    assert fake.dtype == torch.float32


def test_numpy_batches_of_any_strides_are_numpy_matmuls():
    """A field of a packed record array steps by bytes that are no multiple of its element, and a batch reversed by
    [::-1] steps back: numpy.matmul reads both, and so does gemmlab.matmul (through a copy)."""
    rng = np.random.default_rng(3)
    rec = np.zeros(4, dtype=[("x", "<f4", (5, 7)), ("pad", "u1")])
    rec["x"] = rng.standard_normal((4, 5, 7))
    b = rng.standard_normal((4, 7, 3)).astype(np.float32)
    assert rec["x"].strides[0] % 4
    for a, bb in ((rec["x"], b), (rec["x"][::-1], b[::-1]), (rec["x"][::-1], b[0]),
                  (b.transpose(0, 2, 1)[::-1], rec["x"][::-1].transpose(0, 2, 1))):
        np.testing.assert_allclose(gemmlab.matmul(a, bb), np.matmul(a, bb), rtol=1e-5, atol=1e-5)
    with pytest.raises(LayoutError, match="not whole elements of 4 bytes"):
        call.batched_matmul(rec["x"], b)


def test_every_refusal_is_a_gemmlab_error():
    with pytest.raises(GemmlabError):
        gemmlab.matmul(randn(3, 4), [1.0, 2.0])
    a3, b3 = np.ones((4, 5, 7), np.float32), np.ones((4, 7, 3), np.float32)
    with pytest.raises(OperandTypeError, match="got list"):
        gemmlab.matmul(a3, b3, out=[0])
    with pytest.raises(LayoutError, match="out is a torch array; the operands are numpy arrays"):
        gemmlab.matmul(a3, b3, out=randn(4, 5, 3))
    with pytest.raises(UnknownKernelError, match="no kernel named 'nope'"):
        gemmlab.matmul(randn(4, 5, 7), randn(4, 7, 3), kernel="nope")
    with pytest.raises(LayoutError, match=r"by numpy.matmul \(cpu/blas\); kernel='cuda/v1_naive' is another"):
        gemmlab.matmul(randn(4, 5, 7), randn(4, 7, 3), kernel="cuda/v1_naive")
    with pytest.raises(ShapeError, match="FP8 scales go with 2-D operands"):
        gemmlab.matmul(randn(0, 5, 7), randn(0, 7, 3), scale_a=torch.ones(1))
    with pytest.raises(UnknownKernelError, match="got int 3"):
        gemmlab.matmul(randn(4, 5, 7).requires_grad_(), randn(7, 3), kernel=3)
    negated = torch.randn(4, 5, 7, dtype=torch.complex64).conj().imag
    for x, y, name in ((negated, randn(7, 3), "A"), (negated, randn(4, 7, 3), "A"), (randn(2, 3, 5), negated, "B")):
        with pytest.raises(LayoutError, match=f"{name} is a negated view"):
            gemmlab.matmul(x, y)
    with pytest.raises(LayoutError, match="A is a negated view"):
        call.batched_matmul(negated, randn(4, 7, 3))
    with pytest.raises(LayoutError, match="pass two tensors"):
        gemmlab.matmul(randn(2, 3, 4), np.ones((4, 5), np.float32))
    with pytest.raises(LayoutError, match="A is a numpy array and B a torch array: pass arrays of one kind"):
        gemmlab.matmul(np.ones((2, 3, 4), np.float32), randn(4, 5))


def test_broadcast_operands_a_caller_expanded_are_read_through_their_zero_strides():
    """A B expanded over the batch (stride 0) is one matrix: A's batch collapses into one GEMM; an A expanded over
    the batch does not collapse, and is one batched call with its stride 0."""
    x, w = randn(3, 4, 5), randn(5, 6)
    r = matmul_shapes.route(x.shape, x.stride(), (3, 5, 6), w.expand(3, 5, 6).stride())
    assert not r.batched and r.a_shape == (12, 5)
    torch.testing.assert_close(gemmlab.matmul(x, w.expand(3, 5, 6)), x @ w, rtol=1e-5, atol=1e-5)
    a = randn(1, 4, 5).expand(3, 4, 5)
    r = matmul_shapes.route(a.shape, a.stride(), w.shape, w.stride())
    assert r.batch == call.Batch((3,), (0,), (0,))
    torch.testing.assert_close(gemmlab.matmul(a, w), a @ w, rtol=1e-5, atol=1e-5)


def test_a_host_batch_takes_the_host_kernel_by_name():
    a, b = randn(4, 5, 7), randn(4, 7, 3)
    torch.testing.assert_close(gemmlab.matmul(a, b, kernel="cpu/blas"), a @ b, rtol=1e-5, atol=1e-5)


def test_plan_explains_the_one_gemm_an_nd_call_runs():
    x, w = randn(3, 4, 5), randn(6, 5)
    assert "12x6x5" in gemmlab.plan(x, w.t()).explain()  # M = 3·4 rows
    with pytest.raises(ShapeError, match="one batched call"):
        gemmlab.plan(x, randn(3, 5, 6))
