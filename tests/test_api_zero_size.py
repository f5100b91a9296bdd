"""Zero-size dimensions on the host, as torch does them: gemmlab.matmul, linear, addmm and nn.Linear with M, N, K
or a batch dimension of 0 (1-D operands included) against torch.matmul, F.linear then the activation, torch.addmm
and numpy.matmul (shape, dtype, values), their gradients against torch's, ``out=``, torch.compile(fullgraph=True),
no plan made, and the refusals a call of the same operands keeps."""
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import gemmlab  # noqa: E402
import gemmlab.nn  # noqa: E402
from gemmlab import call  # noqa: E402
from gemmlab.device import GPUInfo  # noqa: E402
from gemmlab.epilogue import Epilogue  # noqa: E402
from gemmlab.errors import DTypeError, EpilogueError, LayoutError, ShapeError, UnknownKernelError  # noqa: E402
from test_api_linear import ACTIVATIONS  # noqa: E402

gen = torch.Generator().manual_seed(5)


def randn(*shape):
    return torch.randn(shape, generator=gen)


@pytest.fixture(autouse=True)
def no_plan(monkeypatch):
    """Every call here must run without a plan: making one (every kernel's path goes through prepare) fails."""
    def refuse(*args, **kwargs):
        raise AssertionError("a plan was made for a product with a zero dimension")

    monkeypatch.setattr(call.checks, "prepare", refuse)
    before = dict(call.plans)
    yield
    assert dict(call.plans) == before


MATMUL_CASES = [
    ((0, 4), (4, 5)),  # M = 0: an empty (0, 5)
    ((3, 4), (4, 0)),  # N = 0
    ((3, 0), (0, 5)),  # K = 0: zeros
    ((0, 0), (0, 5)),
    ((0,), (0,)),  # a dot product of two empty vectors: 0-D zero
    ((0,), (0, 5)),  # vector @ matrix, K = 0
    ((3, 0), (0,)),  # matrix @ vector, K = 0
    ((4,), (4, 0)),  # vector @ matrix, N = 0
    ((0, 4), (4,)),  # matrix @ vector, M = 0
    ((2, 0, 4), (4, 5)),  # a batch whose rows collapse: M = 0
    ((0, 3, 4), (4, 5)),  # a batch dimension of 0, B 2-D
    ((2, 3, 0), (2, 0, 5)),  # a batch with K = 0: zeros
    ((2, 0, 4), (2, 4, 5)),  # a batch with M = 0
    ((0, 3, 4), (0, 4, 5)),  # a batch of 0 products
    ((1, 3, 4), (0, 4, 5)),  # 1 broadcast against 0
    ((0, 3, 4), (1, 4, 5)),
    ((3, 4), (0, 4, 5)),  # a 2-D A against an empty batch of B
    ((2, 1, 3, 0), (4, 0, 5)),  # a broadcast batch with K = 0: zeros of (2, 4, 3, 5)
    ((0,), (2, 0, 5)),  # a vector against a batch, K = 0
]


@pytest.mark.parametrize("a_shape, b_shape", MATMUL_CASES)
def test_matmul_of_tensors_is_torch_matmuls(a_shape, b_shape):
    a, b = randn(*a_shape), randn(*b_shape)
    c, ref = gemmlab.matmul(a, b), torch.matmul(a, b)
    assert isinstance(c, torch.Tensor) and c.shape == ref.shape and c.dtype == ref.dtype and c.device == ref.device
    assert torch.equal(c, ref)


@pytest.mark.parametrize("a_shape, b_shape", MATMUL_CASES)
def test_matmul_of_numpy_arrays_is_numpy_matmuls(a_shape, b_shape):
    a, b = randn(*a_shape).numpy(), randn(*b_shape).numpy()
    c, ref = gemmlab.matmul(a, b), np.matmul(a, b)
    assert type(c) is type(ref) and np.shape(c) == np.shape(ref) and c.dtype == ref.dtype
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("a_shape, b_shape", MATMUL_CASES)
def test_matmul_gradients_are_torchs(a_shape, b_shape):
    """Through gemmlab::mm and gemmlab::bmm: zeros where torch's are (the grad of B for M = 0 and K > 0), empty
    where the operand is."""
    a, b = randn(*a_shape).requires_grad_(), randn(*b_shape).requires_grad_()
    ra, rb = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    c = gemmlab.matmul(a, b)
    ref = torch.matmul(ra, rb)
    assert c.shape == ref.shape and c.requires_grad
    grad = randn(*ref.shape)
    c.backward(grad)
    ref.backward(grad)
    for got, want in ((a.grad, ra.grad), (b.grad, rb.grad)):
        assert got.shape == want.shape and got.dtype == want.dtype and torch.equal(got, want)


def test_matmul_writes_out_for_a_zero_dimension():
    """K = 0: out is overwritten with zeros (NaNs included); its shape and dtype are checked as a call's are."""
    a, b = randn(2, 3, 0), randn(2, 0, 5)
    out = torch.full((2, 3, 5), float("nan"))
    assert gemmlab.matmul(a, b, out=out) is out and torch.equal(out, torch.zeros(2, 3, 5))
    out2 = np.full((3, 5), np.nan, np.float32)
    assert gemmlab.matmul(a[0].numpy(), b[0].numpy(), out=out2) is out2 and not out2.any()
    out3 = torch.full((3, 5), float("nan"))
    assert gemmlab.matmul(a[0], b[0], out=out3) is out3 and torch.equal(out3, torch.zeros(3, 5))
    empty = np.empty((0, 5), np.float32)
    assert gemmlab.matmul(np.ones((0, 4), np.float32), np.ones((4, 5), np.float32), out=empty) is empty
    with pytest.raises(LayoutError, match=r"\(3, 5\)"):
        gemmlab.matmul(a[0], b[0], out=torch.empty(5, 3))
    with pytest.raises(LayoutError, match="float32"):
        gemmlab.matmul(a[0].numpy(), b[0].numpy(), out=np.empty((3, 5), np.float64))
    with pytest.raises(LayoutError, match="C-contiguous"):
        gemmlab.matmul(a, b, out=torch.empty(2, 5, 3).mT)


def test_a_zero_dimension_keeps_the_refusals_of_its_operands():
    """Only the size is let through: dtypes, precisions, kernel names, shapes that do not fit and epilogues are
    refused as for a product of the same operands with every dimension >= 1."""
    a, b = randn(0, 4), randn(4, 5)
    with pytest.raises(DTypeError, match="float64"):
        gemmlab.matmul(a.double(), b.double())
    with pytest.raises(DTypeError, match="A is float64 and B is float32"):
        gemmlab.matmul(a.numpy().astype(np.float64), b.numpy())
    with pytest.raises(DTypeError, match="precision='bf16' does not take float32"):
        gemmlab.matmul(a, b, precision="bf16")
    with pytest.raises(DTypeError, match="tf32 needs CUDA operands"):
        gemmlab.matmul(a.numpy(), b.numpy(), precision="tf32")
    with pytest.raises(UnknownKernelError):
        gemmlab.matmul(a, b, kernel="cpu/no_such_kernel")
    with pytest.raises(ShapeError, match="inner dimensions differ"):
        gemmlab.matmul(randn(3, 0), randn(1, 5))
    with pytest.raises(ShapeError, match="do not broadcast"):
        gemmlab.matmul(randn(0, 3, 4), randn(2, 4, 5))
    with pytest.raises(ShapeError, match=r"bias must have shape \(5,\)"):
        gemmlab.linear(randn(3, 0), randn(5, 0), randn(4))
    with pytest.raises(EpilogueError, match="activation='tanh'"):
        gemmlab.linear(randn(0, 4), randn(5, 4), None, "tanh")
    with pytest.raises(ShapeError, match="does not broadcast"):
        gemmlab.addmm(randn(2, 5), randn(3, 0), randn(0, 5))
    with pytest.raises(DTypeError, match="bias must be float32"):
        gemmlab.linear(randn(3, 0).numpy(), randn(5, 0).numpy(), np.zeros(5, np.float64))


@pytest.mark.parametrize("a, b", [(np.zeros((0, 3), np.float32), np.zeros((3, 4), np.float32)),
                                  (np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32))])
def test_plan_refuses_a_zero_dimension_it_has_no_kernel_for(a, b, monkeypatch):
    monkeypatch.undo()  # the real prepare, which plan calls (and which refuses)
    with pytest.raises(ShapeError, match="=0: a product with a zero dimension runs no kernel, so it has no plan"):
        gemmlab.plan(a, b)


LINEAR_SHAPES = [((0, 4), 5), ((3, 4), 0), ((3, 0), 5), ((2, 0, 4), 5), ((2, 3, 0), 5), ((0,), 5), ((4,), 0),
                 ((0, 0), 0)]  # x's shape, N


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize("x_shape, n", LINEAR_SHAPES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_is_f_linear_then_the_activation(activation, x_shape, n, with_bias):
    """K = 0: act(bias) in every row (zeros without a bias); M or N = 0: empty. Tensors, NumPy arrays, and the
    gradients of x, w and the bias (the bias's a sum over zero rows for M = 0: zeros). The values against torch's
    formulas in float64: torch's own float32 gelu loses digits where 1 + erf cancels, more or fewer by the CPU's
    vector path (1.5e-5 relative on one machine, past the tolerance), where gemmlab's host epilogue computes in
    float64."""
    k = x_shape[-1]
    x, w, bias = randn(*x_shape), randn(n, k), randn(n) if with_bias else None
    ref_in = [t if t is None else t.clone().requires_grad_() for t in (x, w, bias)]
    args = [t if t is None else t.clone().requires_grad_() for t in (x, w, bias)]
    ref = ACTIVATIONS[activation](F.linear(*ref_in))
    want = ACTIVATIONS[activation](F.linear(*(t if t is None else t.double() for t in (x, w, bias)))).float()
    y = gemmlab.linear(*args, activation)
    assert y.shape == ref.shape and y.dtype == ref.dtype and y.requires_grad
    torch.testing.assert_close(y, want, rtol=1e-6, atol=1e-7)
    arrays = gemmlab.linear(x.numpy(), w.numpy(), None if bias is None else bias.numpy(), activation)
    assert arrays.shape == ref.shape and arrays.dtype == np.float32
    np.testing.assert_allclose(arrays, want.numpy(), rtol=1e-6, atol=1e-7)
    grad = randn(*ref.shape)
    y.backward(grad)
    ref.backward(grad)
    for got, want in zip(args, ref_in):
        if got is not None:
            assert got.grad.shape == want.grad.shape
            torch.testing.assert_close(got.grad, want.grad, rtol=1e-5, atol=1e-6)


def test_linear_with_k_zero_is_the_activation_of_the_bias_in_every_row():
    """The values themselves, not only torch's: a test that cannot pass on zeros."""
    bias = torch.tensor([-1.0, 0.5, 2.0])
    y = gemmlab.linear(randn(4, 0), randn(3, 0), bias, "relu")
    assert torch.equal(y, torch.tensor([[0.0, 0.5, 2.0]] * 4))


@pytest.mark.parametrize("m, n, k", [(0, 5, 4), (3, 0, 4), (3, 5, 0), (0, 0, 0), (0, 5, 0)])
@pytest.mark.parametrize("c_shape", ["mn", "n", "m1", "scalar"])
@pytest.mark.parametrize("beta, alpha", [(1.0, 1.0), (0.5, 2.0), (0.0, 3.0), (-2.0, 1.0)])
def test_addmm_is_torch_addmm(m, n, k, c_shape, beta, alpha):
    """K = 0: beta·c broadcast (alpha times an empty sum is 0; beta = 0 ignores c, its NaNs included); M or N = 0:
    empty. Tensors, NumPy arrays and the gradients of c, a and b."""
    shape = {"mn": (m, n), "n": (n,), "m1": (m, 1), "scalar": ()}[c_shape]
    c, a, b = randn(*shape), randn(m, k), randn(k, n)
    if beta == 0 and c.numel():
        c.view(-1)[0] = float("nan")
    args = [t.clone().requires_grad_() for t in (c, a, b)]
    refs = [t.clone().requires_grad_() for t in (c, a, b)]
    out = gemmlab.addmm(*args, beta=beta, alpha=alpha)
    ref = torch.addmm(*refs, beta=beta, alpha=alpha)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    arrays = gemmlab.addmm(c.numpy(), a.numpy(), b.numpy(), beta=beta, alpha=alpha)
    assert arrays.shape == ref.shape and arrays.dtype == np.float32
    np.testing.assert_array_equal(arrays, ref.detach().numpy())
    grad = randn(*ref.shape)
    out.backward(grad)
    ref.backward(grad)
    for got, want in zip(args, refs):
        assert got.grad.shape == want.grad.shape
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-6, atol=1e-6)


def test_addmm_with_k_zero_is_beta_c():
    c = torch.tensor([[1.0, -2.0], [3.0, 4.0]])
    assert torch.equal(gemmlab.addmm(c, randn(2, 0), randn(0, 2), beta=0.5, alpha=7.0), 0.5 * c)


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors is a no-op")
def test_nn_linear_takes_an_empty_batch_and_no_input_features():
    """An MoE expert that got no tokens: (0, in) in, (0, out) out; the weight's gradient zeros, the bias's too. A
    layer of 0 input features is its bias, activated."""
    layer = torch.nn.Linear(4, 3)
    ours = gemmlab.nn.Linear.from_linear(layer, activation="silu")
    y = ours(torch.empty(0, 4))
    assert y.shape == (0, 3)
    y.sum().backward()
    assert torch.equal(layer.weight.grad, torch.zeros(3, 4)) and torch.equal(layer.bias.grad, torch.zeros(3))
    no_features = torch.nn.Linear(0, 3)
    x = randn(2, 5, 0)
    ours = gemmlab.nn.Linear.from_linear(no_features, activation="gelu")
    torch.testing.assert_close(ours(x), F.gelu(no_features(x)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("clang++") is None, reason="inductor compiles C++ on the CPU"))])
def test_torch_compile_fullgraph_with_zero_dimensions(backend):
    """The ops' fakes give the zero-size shapes: no graph break, the values and gradients torch's (inductor runs
    the ops through its fallback kernels)."""
    torch._dynamo.reset()

    def f(x, w, bias, c, v, e, p, q):
        return (gemmlab.linear(x, w, bias, "gelu"), gemmlab.matmul(x, v), gemmlab.addmm(c, x, v, beta=0.5),
                gemmlab.matmul(e, w), gemmlab.matmul(p, q))

    def ref(x, w, bias, c, v, e, p, q):
        return (F.gelu(F.linear(x, w, bias)), torch.matmul(x, v), torch.addmm(c, x, v, beta=0.5),
                torch.matmul(e, w), torch.matmul(p, q))

    # K = 0 (linear, matmul, addmm), M = 0 with K > 0, a batch with M = 0
    args = [randn(3, 0), randn(5, 0), randn(5), randn(4), randn(0, 4), randn(0, 5), randn(2, 0, 3), randn(2, 3, 4)]
    args = [t.requires_grad_() for t in args]
    assert torch._dynamo.explain(f)(*args).graph_break_count == 0
    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True, backend=backend)(*args)
    refs = [t.detach().clone().requires_grad_() for t in args]
    want = ref(*refs)
    for g, r in zip(got, want):
        assert g.shape == r.shape
        torch.testing.assert_close(g, r, rtol=1e-6, atol=1e-7)
    sum(g.sum() for g in got).backward()
    sum(r.sum() for r in want).backward()
    for g, r in zip(args, refs):
        torch.testing.assert_close(g.grad, r.grad, rtol=1e-5, atol=1e-6)  # the gelu derivative, fused or not


H200 = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "13.0", "13.0")


@pytest.fixture
def h200(monkeypatch):
    """GPU operands' checks on this host: device 0 an H200 as its properties read (nothing runs on it)."""
    monkeypatch.setattr(gemmlab.device, "gpu_info", lambda index: H200)
    call.checks.empty_dtype.cache_clear()
    yield
    call.checks.empty_dtype.cache_clear()


@pytest.mark.parametrize("dtypes, precision, out_dtype, want", [
    (("float32", "float32"), None, None, "float32"),
    (("float32", "float32"), "tf32", None, "float32"),
    (("bfloat16", "bfloat16"), None, None, "bfloat16"),  # torch's rule: BF16 in, BF16 out
    (("bfloat16", "bfloat16"), None, "float32", "float32"),
    (("float16", "float16"), None, None, "float16"),
    (("float8_e4m3fn", "float8_e5m2"), None, None, "bfloat16"),
])
@pytest.mark.parametrize("shapes", [((0, 64), (64, 32)), ((16, 0), (0, 32)), ((16, 64), (64, 0))])
def test_gpu_operands_with_a_zero_dimension_get_the_dtype_their_call_writes(h200, dtypes, precision, out_dtype, want,
                                                                             shapes):
    got = call.checks.empty_dtype("torch", dtypes, 0, shapes, "auto", precision, (None, None), out_dtype)
    assert got == want


@pytest.mark.parametrize("m, n, k", [(0, 512, 256), (64, 0, 256), (64, 512, 0)])
def test_fp8_block_scales_of_a_zero_dimension_are_their_recipes_shapes(h200, m, n, k):
    """DeepGEMM's scales for an expert with no tokens: scale_a (0, ceil(K/128)); they select fp8_block, BF16 C."""
    kb, nb = -(-k // 128), -(-n // 128)
    scales = (call.Facts("torch", (m, kb), "float32", "col", 0), call.Facts("torch", (kb, nb), "float32", "col", 0))
    fp8 = ("float8_e4m3fn", "float8_e4m3fn")
    assert call.checks.empty_dtype("torch", fp8, 0, ((m, k), (k, n)), "auto", None, scales) == "bfloat16"
    with pytest.raises(ShapeError, match="FP8 scales"):
        call.checks.empty_dtype("torch", fp8, 0, ((m, k), (k, n)), "auto", None,
                                (scales[0], call.Facts("torch", (kb + 2, nb), "float32", "col", 0)))


def test_gpu_operands_with_a_zero_dimension_keep_the_kernels_refusals(h200):
    bf16, k0 = ("bfloat16", "bfloat16"), ((16, 0), (0, 32))
    bias = call.AddendFacts("torch", (32,), "bfloat16", (1,), 0)
    with pytest.raises(EpilogueError, match="cuda/tc1_mma_sync_bf16 has no fused epilogue"):
        call.checks.empty_dtype("torch", bf16, 0, k0, "cuda/tc1_mma_sync_bf16", None, (None, None), None,
                                Epilogue("gelu", addend="bias"), bias)
    with pytest.raises(LayoutError, match="cpu/blas runs on the host"):
        call.checks.empty_dtype("torch", ("float32", "float32"), 0, k0, "cpu/blas", None)
    with pytest.raises(DTypeError, match=r"out_dtype='float16': bf16 writes"):
        call.checks.empty_dtype("torch", bf16, 0, k0, "auto", None, (None, None), "float16")
    with pytest.raises(DTypeError, match="bias must be bfloat16"):
        call.checks.empty_dtype("torch", bf16, 0, k0, "auto", None, (None, None), None, Epilogue(addend="bias"),
                                call.AddendFacts("torch", (32,), "float16", (1,), 0))
