"""gemmlab in PyTorch on the host: tensors in and out, the gemmlab::mm custom op, autograd against torch's own
gradients, torch.compile(fullgraph=True), and the errors a tensor caller meets."""
import shutil
import warnings

import numpy as np

import pytest

torch = pytest.importorskip("torch")

import gemmlab  # noqa: E402
from gemmlab.errors import DTypeError, GemmlabError, LayoutError  # noqa: E402

gen = torch.Generator().manual_seed(7)
A = torch.randn(37, 29, generator=gen)
B = torch.randn(29, 23, generator=gen)


@pytest.mark.parametrize("kernel", ["auto", "cpu/blas", "cpu/v0_naive"])
def test_cpu_tensors_round_trip(kernel):
    c = gemmlab.matmul(A, B, kernel=kernel)
    assert isinstance(c, torch.Tensor) and c.dtype == torch.float32 and c.shape == (37, 23)
    torch.testing.assert_close(c, A @ B, rtol=1e-4, atol=1e-4)


def test_a_subclass_of_tensor_is_a_tensor():
    """torch.matmul takes a Tensor subclass (as_subclass, a library's own tensor type) as a tensor."""
    class Tagged(torch.Tensor):
        pass

    a, b = A.as_subclass(Tagged), B.as_subclass(Tagged)
    torch.testing.assert_close(gemmlab.matmul(a, b), A @ B, rtol=1e-4, atol=1e-4, check_dtype=True)
    x = torch.randn(2, 5, 29, generator=gen).as_subclass(Tagged)
    torch.testing.assert_close(gemmlab.matmul(x, b), torch.matmul(x.as_subclass(torch.Tensor), B), rtol=1e-4,
                               atol=1e-4)
    torch.testing.assert_close(gemmlab.linear(a, b.t()), A @ B, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("to", [lambda x: x, lambda x: x.numpy()])
def test_inf_and_nan_come_silently_whatever_numpys_error_state(to):
    """IEEE results as torch gives them (0·inf = NaN, a sum past FP32's range = inf, an activation at -inf), with no
    NumPy warning and no FloatingPointError under np.seterr(all="raise")."""
    inf = float("inf")
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(np.asarray(gemmlab.matmul(to(torch.zeros(2, 2)), to(torch.full((2, 2), inf))))).all()
        assert np.isposinf(np.asarray(gemmlab.matmul(to(torch.full((1, 2), 3e38)), to(torch.ones(2, 2))))).all()
        x, w = torch.full((1, 2), -inf), torch.ones(3, 2)
        for activation in ("gelu", "gelu_tanh", "silu", "relu"):
            want = torch.nn.functional.linear(x, w)
            want = {"gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu, "relu": torch.relu,
                    "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh")}[activation](want)
            got = torch.as_tensor(gemmlab.linear(to(x), to(w), activation=activation))
            torch.testing.assert_close(got, want, equal_nan=True)


def test_out_tensor_is_written_in_place_and_checked():
    out = torch.empty(37, 23)
    assert gemmlab.matmul(A, B, out=out) is out
    torch.testing.assert_close(out, A @ B, rtol=1e-5, atol=1e-5)
    with pytest.raises(LayoutError, match="float32"):
        gemmlab.matmul(A, B, out=torch.empty(37, 23, dtype=torch.float64))
    with pytest.raises(LayoutError, match="torch tensors"):
        gemmlab.matmul(A, B, out=np.empty((37, 23), np.float32))


@pytest.mark.parametrize("a, b, out, match", [
    (A.to_sparse(), B, None, "A is a sparse_coo tensor on cpu"),
    (A, B.to_sparse_csr(), None, "B is a sparse_csr tensor on cpu"),
    (A.to("meta"), B.to("meta"), None, "A is a strided tensor on meta"),
    (A, B, torch.empty(37, 23).to_sparse(), "out is a sparse_coo tensor"),
])
def test_tensors_gemmlab_cannot_read_are_refused_by_name(a, b, out, match):
    """Once a TypeError from .numpy() or a RuntimeError from .stride(): each is a LayoutError naming the tensor, also
    after a call on dense tensors of the same shapes has kept a plan (a call checks its operands once per plan key:
    these have no key, or a key of their own)."""
    gemmlab.matmul(A, B)
    with pytest.raises(LayoutError, match=match):
        gemmlab.matmul(a, b, out=out)


def test_explain_names_the_layouts_and_tensors_it_was_given():
    """A transposed weight (x @ w.t()) is column-major, not "row-major"; a tensor is not called a NumPy array."""
    w = torch.randn(23, 29, generator=gen)
    text = gemmlab.plan(A, w.t()).explain()
    assert "(A row-major, B column-major)" in text and "NumPy arrays" not in text
    assert "(A strided, B row-major)" in gemmlab.plan(torch.randn(37, 58, generator=gen)[:, ::2], B).explain()


def test_tensor_errors():
    with pytest.raises(LayoutError, match="pass two tensors"):
        gemmlab.matmul(A, B.numpy())
    with pytest.raises(DTypeError, match="bfloat16"):
        gemmlab.matmul(A.bfloat16(), B)
    with pytest.raises(DTypeError, match="fp8 needs CUDA operands"):  # BF16 runs on the host (widened), FP8 does not
        gemmlab.matmul(A.to(torch.float8_e4m3fn), B.t().contiguous().to(torch.float8_e4m3fn).t())


def test_custom_op_is_registered_with_a_fake():
    c = torch.ops.gemmlab.mm(A, B, "cpu/blas", None)
    torch.testing.assert_close(c, A @ B, rtol=1e-5, atol=1e-5)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fa, fb = torch.empty(5, 7), torch.empty(7, 3)
        fake = torch.ops.gemmlab.mm(fa, fb, "auto", None)
    assert fake.shape == (5, 3) and fake.dtype == torch.float32
    # C's dtype by torch's rule, as the real op returns it: BF16 in -> BF16 out (it was FP32 whatever the inputs
    # before the rule), FP16 in -> FP16 out, FP32 where out_dtype asks
    for dtype, out_dtype, want in ((torch.bfloat16, None, torch.bfloat16), (torch.float16, None, torch.float16),
                                   (torch.bfloat16, "float32", torch.float32), (torch.float16, "float32", torch.float32)):
        with FakeTensorMode():
            fake = torch.ops.gemmlab.mm(torch.empty(5, 7, dtype=dtype), torch.empty(7, 3, dtype=dtype), "auto", None,
                                        out_dtype)
        assert fake.dtype == want and fake.shape == (5, 3)


def test_a_plan_is_kept_per_stride_pattern():
    """The plan cache is keyed by the operands' and out's strides: a column-major A gets a plan of its own, and an
    out that is not C-contiguous is refused even after a contiguous one of its shape was taken."""
    from gemmlab import call

    call.plans.clear()
    out = torch.empty(37, 23)
    gemmlab.matmul(A, B, kernel="cpu/v0_naive", out=out)
    col_major = A.t().contiguous().t()
    torch.testing.assert_close(gemmlab.matmul(col_major, B, kernel="cpu/v0_naive"), A @ B, rtol=1e-4, atol=1e-4)
    assert sorted(key[6] for key in call.plans) == [(1, 37), (29, 1)]  # A's strides, one plan each
    with pytest.raises(LayoutError, match="C-contiguous"):
        gemmlab.matmul(A, B, kernel="cpu/v0_naive", out=torch.empty(23, 37).t())


@pytest.mark.parametrize("kernel", ["auto", "cpu/v0_naive"])
def test_autograd_matches_torch(kernel):
    a, b = A.clone().requires_grad_(), B.clone().requires_grad_()
    weight = torch.randn(37, 23, generator=gen)
    (gemmlab.matmul(a, b, kernel=kernel) * weight).sum().backward()
    ra, rb = A.clone().requires_grad_(), B.clone().requires_grad_()
    ((ra @ rb) * weight).sum().backward()
    torch.testing.assert_close(a.grad, ra.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(b.grad, rb.grad, rtol=1e-4, atol=1e-4)


def test_backward_runs_the_kernel_the_forward_named(monkeypatch):
    from gemmlab import torch_op

    ran, direct = [], torch_op.direct
    monkeypatch.setattr(torch_op, "direct",
                        lambda a, b, kernel, *rest, **kw: ran.append(kernel) or direct(a, b, kernel, *rest, **kw))
    a, b = A.clone().requires_grad_(), B.clone().requires_grad_()
    gemmlab.matmul(a, b, kernel="cpu/v0_naive").sum().backward()
    assert ran == ["cpu/v0_naive"] * 3  # C, then dA = dC·Bᵀ and dB = Aᵀ·dC
    torch.testing.assert_close(a.grad, torch.ones(37, 23) @ B.t(), rtol=1e-4, atol=1e-4)


def test_an_out_that_requires_grad_is_refused():
    """Operands outside autograd, an out that requires grad: written in place, it would leave autograd's record."""
    with pytest.raises(LayoutError, match="out requires grad"):
        gemmlab.matmul(A, B, out=torch.empty(37, 23, requires_grad=True))


def test_out_refused_under_autograd():
    with pytest.raises(GemmlabError, match="outside autograd"):
        gemmlab.matmul(A.clone().requires_grad_(), B, out=torch.empty(37, 23))


@pytest.mark.parametrize("backend", ["eager", pytest.param("inductor", marks=pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("clang++") is None, reason="inductor compiles C++ on the CPU"))])
def test_torch_compile_fullgraph_traces_through_gemmlab(backend):
    """Inductor lowers the op through FallbackKernel.create(kernel, ...), so none of gemmlab::mm's arguments may be
    called ``kernel``."""
    torch._dynamo.reset()

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(23, 29, generator=gen))

        def forward(self, x):
            return torch.relu(gemmlab.matmul(x, self.w.t()))  # nn.Linear's x @ w.T

    model = Model()
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    x = torch.randn(37, 29, generator=gen, requires_grad=True)
    y = compiled(x)
    torch.testing.assert_close(y, torch.relu(x @ model.w.t()), rtol=1e-4, atol=1e-4)
    y.sum().backward()
    ref_x = x.detach().clone().requires_grad_()
    torch.relu(ref_x @ model.w.t()).sum().backward()
    torch.testing.assert_close(x.grad, ref_x.grad, rtol=1e-4, atol=1e-4)
    assert model.w.grad is not None and model.w.grad.shape == (23, 29)


@pytest.mark.parametrize("dtype,out_dtype,want", [(torch.bfloat16, None, torch.bfloat16),
                                                  (torch.float16, None, torch.float16),
                                                  (torch.bfloat16, torch.float32, torch.float32),
                                                  (torch.float32, None, torch.float32)])
def test_torch_compile_sees_the_dtype_the_kernel_writes(dtype, out_dtype, want):
    """torch.compile traces gemmlab::mm through its fake: the graph's output has torch's dtype for the operands (BF16
    in -> BF16 out), or out_dtype's, as the kernel writes it. The graph is traced on the host, so the backend only
    records what it sees."""
    torch._dynamo.reset()
    seen = []

    def backend(gm, example_inputs):
        seen.extend(node.meta["example_value"].dtype for node in gm.graph.nodes
                    if node.op == "call_function" and "gemmlab" in str(node.target))
        return lambda *args: (torch.empty(0),)  # never runs the kernel: 16-bit operands need a GPU

    def f(x, w):
        return gemmlab.matmul(x, w.t(), out_dtype=out_dtype)

    torch.compile(f, fullgraph=True, backend=backend)(torch.ones(8, 16, dtype=dtype), torch.ones(4, 16, dtype=dtype))
    assert seen == [want]
