"""gemmlab.linear, gemmlab.addmm and gemmlab.nn.Linear on the host: values against F.linear and torch.addmm,
gradients against torch's autograd (the bias's and each activation's), the refusals, torch.compile(fullgraph=True)
without a graph break, and a two-layer MLP that trains as torch.nn.Linear's does."""
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import gemmlab  # noqa: E402
import gemmlab.nn  # noqa: E402
from gemmlab.errors import (DTypeError, EpilogueError, GemmlabError, LayoutError, OperandTypeError,  # noqa: E402
                            ShapeError, UnknownKernelError)
from gemmlab.torch_fused import activation_derivative  # noqa: E402

gen = torch.Generator().manual_seed(3)
ACTIVATIONS = {None: lambda z: z, "relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"),
               "silu": F.silu}


def randn(*shape):
    return torch.randn(shape, generator=gen)


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize("x_shape", [(7,), (5, 7), (2, 3, 7)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_is_f_linear_then_the_activation(activation, x_shape, with_bias):
    x, w, bias = randn(*x_shape), randn(4, 7), randn(4) if with_bias else None
    y = gemmlab.linear(x, w, bias, activation)
    ref = ACTIVATIONS[activation](F.linear(x, w, bias))
    assert y.shape == ref.shape and y.dtype == ref.dtype
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)
    arrays = gemmlab.linear(x.numpy(), w.numpy(), None if bias is None else bias.numpy(), activation)
    np.testing.assert_allclose(arrays, ref.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x_shape", [(5, 7), (2, 3, 7)])
def test_a_repeated_linear_on_host_tensors_computes_each_calls_operands(x_shape):
    """Calls with operands of the same attributes, one after another: each result is that call's own F.linear, w
    read as w, not as a plan kept for GPU operands would take it (w's address for w.t()), the new bias included."""
    for _ in range(3):
        x, w, bias = randn(*x_shape), randn(4, 7), randn(4)
        torch.testing.assert_close(gemmlab.linear(x, w, bias, "gelu"), F.gelu(F.linear(x, w, bias)), rtol=1e-5,
                                   atol=1e-5)


def test_linear_reads_a_strided_x():
    x = randn(3, 9, 14)[:, ::2, ::2]  # (3, 5, 7), strided in both
    w, bias = randn(4, 7), randn(4)
    torch.testing.assert_close(gemmlab.linear(x, w, bias, "relu"), F.relu(F.linear(x, w, bias)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("c_shape", [(5, 4), (4,), (1, 4), (5, 1), ()])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (-1.0, 0.25)])
def test_addmm_is_torch_addmm(c_shape, beta, alpha):
    c, a, b = randn(*c_shape), randn(5, 3), randn(3, 4)
    ref = torch.addmm(c, a, b, beta=beta, alpha=alpha)
    torch.testing.assert_close(gemmlab.addmm(c, a, b, beta=beta, alpha=alpha), ref, rtol=1e-5, atol=1e-5)
    arrays = gemmlab.addmm(c.numpy(), a.numpy(), b.numpy(), beta=beta, alpha=alpha)
    np.testing.assert_allclose(arrays, ref.numpy(), rtol=1e-5, atol=1e-5)


def test_addmm_with_beta_zero_ignores_c_nans_included():
    c, a, b = torch.full((5, 4), float("nan")), randn(5, 3), randn(3, 4)
    torch.testing.assert_close(gemmlab.addmm(c, a, b, beta=0, alpha=3), 3 * (a @ b), rtol=1e-5, atol=1e-5)


def test_addmm_with_alpha_zero_reads_neither_a_nor_b():
    """BLAS's rule, and torch's: alpha = 0 leaves a and b unread, their NaNs included; beta·c, or zeros."""
    c, a, b = randn(5, 4), randn(5, 3), randn(3, 4)
    a[0, 0] = float("nan")
    for beta, c_given in ((0.5, c), (1, c[0]), (0, c)):
        ref = torch.addmm(c_given, a, b, beta=beta, alpha=0)
        assert not ref.isnan().any()
        torch.testing.assert_close(gemmlab.addmm(c_given, a, b, beta=beta, alpha=0), ref, rtol=0, atol=0)
        np.testing.assert_array_equal(gemmlab.addmm(c_given.numpy(), a.numpy(), b.numpy(), beta=beta, alpha=0),
                                      ref.numpy())


def test_alpha_and_beta_take_any_real_scalar_as_torch_does():
    c, a, b = randn(5, 4), randn(5, 3), randn(3, 4)
    for beta, alpha in ((np.float32(0.5), np.int64(2)), (np.float16(-1), 3)):
        ref = torch.addmm(c, a, b, beta=beta, alpha=alpha)
        torch.testing.assert_close(gemmlab.addmm(c, a, b, beta=beta, alpha=alpha), ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(gemmlab.addmm(c.numpy(), a.numpy(), b.numpy(), beta=beta, alpha=alpha),
                                   ref.numpy(), rtol=1e-5, atol=1e-5)
    for bad in (True, "1", np.ones(1), float("nan")):
        with pytest.raises(EpilogueError, match="beta must be a finite real number"):
            gemmlab.addmm(c, a, b, beta=bad)


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_gradients_match_torchs(activation, with_bias):
    """float32 against torch's autograd of F.linear then the activation (the host kernels take float32): x, the
    weight and the bias, through a 3-D x."""
    x, w = randn(2, 3, 7), randn(4, 7)
    bias = randn(4) if with_bias else None
    ours = [t.clone().requires_grad_() for t in (x, w, bias) if t is not None]
    refs = [t.clone().requires_grad_() for t in (x, w, bias) if t is not None]
    weight = randn(2, 3, 4)
    (gemmlab.linear(*ours[:2], ours[2] if with_bias else None, activation) * weight).sum().backward()
    (ACTIVATIONS[activation](F.linear(*refs)) * weight).sum().backward()
    for got, ref in zip(ours, refs):
        torch.testing.assert_close(got.grad, ref.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh", "silu"])
def test_activation_derivatives_are_torchs(activation):
    z = torch.linspace(-6, 6, 241, dtype=torch.float64).requires_grad_()
    ACTIVATIONS[activation](z).sum().backward()
    torch.testing.assert_close(activation_derivative(activation, z.detach()), z.grad, rtol=1e-12, atol=1e-12)


def test_relus_backward_selects_as_torchs_does():
    """torch's ReLU backward is a select, not a product: an inf gradient where the output is 0 gives 0 (a product
    gives NaN, which dx's and dw's GEMMs spread over every element), and a NaN pre-activation passes its gradient."""
    w = torch.eye(2)
    for x, grad in ((torch.tensor([[1.0, -1.0]]), torch.tensor([[1.0, float("inf")]])),
                    (torch.tensor([[float("nan"), 1.0]]), torch.ones(1, 2))):
        ours, ref = x.clone().requires_grad_(), x.clone().requires_grad_()
        gemmlab.linear(ours, w, None, "relu").backward(grad)
        F.relu(F.linear(ref, w)).backward(grad)
        torch.testing.assert_close(ours.grad, ref.grad, equal_nan=True)
    z = torch.tensor([float("nan"), -1.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    F.relu(z).sum().backward()
    torch.testing.assert_close(activation_derivative("relu", z.detach()), z.grad)


@pytest.mark.parametrize("call, shapes", [(gemmlab.matmul, [(4, 3), (3, 5)]),
                                         (gemmlab.matmul, [(2, 4, 3), (2, 3, 5)]),
                                         (lambda x, w, b: gemmlab.linear(x, w, b, "gelu"), [(4, 3), (5, 3), (5,)]),
                                         (lambda c, a, b: gemmlab.addmm(c, a, b, beta=2.0), [(5,), (4, 3), (3, 5)])],
                         ids=["mm", "batched", "linear", "addmm"])
def test_host_tensors_stay_resizable(call, shapes):
    """torch.matmul's result and operands can be resized afterwards (as a later op's out= resizes them); a CPU tensor
    once viewed through Tensor.numpy() never can, so the host path reads and writes them through their memory."""
    operands = [randn(*shape) for shape in shapes]
    for _ in range(2):  # the first call makes the plan, the second finds it
        y = call(*operands)
        y.resize_(7, 11)
    for x in operands:
        x.resize_(13)


def test_linear_backward_runs_gemmlab_gemms(monkeypatch):
    """dx and dw are gemmlab::mm calls with the forward's kernel; gelu's pre-activation is one more gemmlab GEMM."""
    from gemmlab import torch_op

    ran, direct = [], torch_op.direct
    monkeypatch.setattr(torch_op, "direct", lambda a, b, kernel, *rest, **kw: ran.append((kernel, bool(kw.get(
        "epilogue") and kw["epilogue"].activation))) or direct(a, b, kernel, *rest, **kw))
    x, w, bias = randn(5, 7).requires_grad_(), randn(4, 7).requires_grad_(), randn(4).requires_grad_()
    gemmlab.linear(x, w, bias, "gelu", kernel="cpu/v0_naive").sum().backward()
    assert ran == [("cpu/v0_naive", True), ("cpu/v0_naive", False), ("cpu/v0_naive", False), ("cpu/v0_naive", False)]


@pytest.mark.parametrize("c_shape", [(5, 4), (4,), (5, 1), ()])
def test_addmm_gradients_match_torchs(c_shape):
    c, a, b = randn(*c_shape), randn(5, 3), randn(3, 4)
    ours = [t.clone().requires_grad_() for t in (c, a, b)]
    refs = [t.clone().requires_grad_() for t in (c, a, b)]
    weight = randn(5, 4)
    (gemmlab.addmm(*ours, beta=0.5, alpha=-2.0) * weight).sum().backward()
    (torch.addmm(*refs, beta=0.5, alpha=-2.0) * weight).sum().backward()
    for got, ref in zip(ours, refs):
        torch.testing.assert_close(got.grad, ref.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("call, error, match", [
    (lambda: gemmlab.linear(randn(5, 7), randn(4, 7), None, "tanh"), EpilogueError, "activation='tanh'"),
    (lambda: gemmlab.linear(randn(5, 7), randn(4, 7), randn(5)), ShapeError, r"bias must have shape \(4,\)"),
    (lambda: gemmlab.linear(randn(5, 6), randn(4, 7)), ShapeError, r"x's last dimension \(6"),
    (lambda: gemmlab.linear(randn(5, 7), randn(7)), ShapeError, "weight must be a 2-D"),
    (lambda: gemmlab.linear(randn(5, 7), randn(4, 7).numpy()), LayoutError, "w is a ndarray"),
    (lambda: gemmlab.linear(randn(5, 7), randn(4, 7), randn(4).double()), DTypeError, "bias must be float32"),
    (lambda: gemmlab.linear(randn(5, 7).requires_grad_(), randn(4, 7), randn(4).double()), DTypeError,
     "bias must be float32"),
    (lambda: gemmlab.linear(randn(5, 7).numpy(), randn(4, 7).numpy(), None, "swiglu"), EpilogueError, "swiglu"),
    (lambda: gemmlab.addmm(randn(3, 4), randn(5, 3), randn(3, 4)), ShapeError, r"c \(3, 4\) does not broadcast"),
    (lambda: gemmlab.addmm(randn(4), randn(5, 3, 1), randn(3, 4)), ShapeError, "two 2-D matrices"),
    (lambda: gemmlab.addmm(randn(4), randn(5, 3), randn(3, 4), alpha=float("inf")), EpilogueError, "alpha"),
    (lambda: gemmlab.addmm(randn(4).numpy(), randn(5, 3).numpy(), randn(2, 4).numpy()), ShapeError, "inner"),
    (lambda: gemmlab.linear(randn(5, 7).numpy(), randn(3, 7).numpy(), [1.0, 2.0, 3.0]), OperandTypeError, "got list"),
    (lambda: gemmlab.linear(randn(5, 7).requires_grad_(), randn(4, 7), kernel=3), UnknownKernelError, "got int 3"),
    (lambda: gemmlab.addmm(randn(4), randn(5, 3).requires_grad_(), randn(3, 4), precision=2.0), DTypeError,
     "precision must be a precision's name"),
    (lambda: gemmlab.linear(torch.randn(5, 7, dtype=torch.complex64).conj().imag, randn(4, 7)), LayoutError,
     r"x is a negated view .*x.resolve_neg\(\)"),
    (lambda: gemmlab.addmm(torch.randn(5, 4, dtype=torch.complex64).conj().imag, randn(5, 3), randn(3, 4)),
     LayoutError, "c is a negated view"),
    # linear's operands named as the caller passed them, not as the GEMM's A and B
    (lambda: gemmlab.linear(randn(4, 3), randn(5, 3).double()), DTypeError, "x is float32 and w is float64"),
    (lambda: gemmlab.linear(randn(4, 3).numpy(), np.ones((5, 3))), DTypeError, "x is float32 and w is float64"),
    # a required operand of None: named, where the bias's None means no bias
    (lambda: gemmlab.linear(randn(2, 3), None), LayoutError, "w is a NoneType"),
    (lambda: gemmlab.addmm(None, randn(4, 3), randn(3, 5)), LayoutError, "c is a NoneType"),
    (lambda: gemmlab.addmm(randn(5), randn(4, 3), None), LayoutError, "b is a NoneType"),
    # alpha and beta a float32 cannot hold: torch.addmm refuses to convert them, the kernel would compute inf
    (lambda: gemmlab.addmm(randn(4, 5), randn(4, 3), randn(3, 5), beta=1e300), EpilogueError,
     "beta=1e.300 does not fit the float32"),
    (lambda: gemmlab.addmm(randn(4, 5).numpy(), randn(4, 3).numpy(), randn(3, 5).numpy(), alpha=-1e39),
     EpilogueError, "alpha=-1e.39 does not fit"),
    # c's dtype with beta = 0, where c is not read: torch.addmm refuses it all the same
    (lambda: gemmlab.addmm(torch.ones(4, 5, dtype=torch.int64), randn(4, 3), randn(3, 5), beta=0), DTypeError,
     "matrix must be float32; got int64"),
    (lambda: gemmlab.addmm(np.ones((4, 5)), randn(4, 3).numpy(), randn(3, 5).numpy(), beta=0), DTypeError,
     "matrix must be float32; got float64"),
])
def test_refusals_name_the_problem(call, error, match):
    with pytest.raises(error, match=match):
        call()
    assert issubclass(error, GemmlabError)


def test_linear_and_addmm_have_fakes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        y = torch.ops.gemmlab.linear(torch.empty(5, 7), torch.empty(4, 7), torch.empty(4), "gelu", "auto", None)
        z = torch.ops.gemmlab.addmm(torch.empty(4), torch.empty(5, 3), torch.empty(3, 4), 1.0, 2.0, "auto", None)
    assert y.shape == (5, 4) and z.shape == (5, 4) and y.dtype == z.dtype == torch.float32


@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("clang++") is None, reason="inductor compiles C++ on the CPU"))])
def test_torch_compile_fullgraph_of_linear_and_addmm_has_no_graph_break(backend):
    """aot_eager runs the ops' fakes and autograd formulas; inductor also lowers them (Optional[Tensor], str and
    float arguments) through its fallback kernels."""
    torch._dynamo.reset()

    def f(x, w, bias, c):
        return gemmlab.addmm(c, gemmlab.linear(x, w, bias, "gelu").flatten(0, 1), w, beta=0.5)

    x, w, bias, c = randn(2, 3, 7).requires_grad_(), randn(4, 7).requires_grad_(), randn(4).requires_grad_(), randn(7)
    assert torch._dynamo.explain(f)(x, w, bias, c).graph_break_count == 0
    torch._dynamo.reset()
    out = torch.compile(f, fullgraph=True, backend=backend)(x, w, bias, c)
    refs = [t.detach().clone().requires_grad_() for t in (x, w, bias)]
    ref = torch.addmm(c, F.gelu(F.linear(*refs)).flatten(0, 1), refs[1], beta=0.5)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    ref.sum().backward()
    for got, want in zip((x, w, bias), refs):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-5, atol=1e-5)


def test_nn_linear_is_a_torch_linear_with_its_parameters():
    layer = torch.nn.Linear(7, 4)
    ours = gemmlab.nn.Linear.from_linear(layer, activation="silu")
    assert isinstance(ours, torch.nn.Linear) and ours.weight is layer.weight and ours.bias is layer.bias
    assert ours.state_dict().keys() == layer.state_dict().keys() and "activation='silu'" in repr(ours)
    x = randn(3, 7)
    torch.testing.assert_close(ours(x), F.silu(layer(x)), rtol=1e-5, atol=1e-5)
    fresh = gemmlab.nn.Linear(7, 4, bias=False)
    assert fresh.bias is None and fresh.weight.shape == (4, 7)
    assert ours.training and not gemmlab.nn.Linear.from_linear(layer.eval()).training  # the layer's mode
    with pytest.raises(EpilogueError):
        gemmlab.nn.Linear(7, 4, activation="tanh")


def train_mlp(layer, device, dtype, steps=20, seed=0):
    """A two-layer MLP of ``layer`` (torch.nn.Linear or gemmlab.nn.Linear) trained with SGD to fit a fixed teacher,
    from one seed's initial weights; the losses step by step."""
    torch.manual_seed(seed)
    reference = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Linear(64, 8))
    first, second = (layer(m.in_features, m.out_features, device=device, dtype=dtype) for m in reference)
    with torch.no_grad():
        for mine, ref in zip((first, second), reference):
            mine.weight.copy_(ref.weight)
            mine.bias.copy_(ref.bias)
    g = torch.Generator(device="cpu").manual_seed(seed + 1)
    x = torch.randn(128, 32, generator=g).to(device, dtype)
    target = torch.tanh(x.float().cpu() @ torch.randn(32, 8, generator=g)).to(device, dtype)  # a teacher's output
    params = [*first.parameters(), *second.parameters()]
    opt = torch.optim.SGD(params, lr=0.2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        hidden = F.gelu(first(x).to(dtype))
        loss = F.mse_loss(second(hidden).to(dtype).float(), target.float())
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_two_layer_mlp_trains_as_torch_nn_linear_does():
    ours, ref = train_mlp(gemmlab.nn.Linear, "cpu", torch.float32), train_mlp(torch.nn.Linear, "cpu", torch.float32)
    assert ours[-1] < 0.9 * ours[0]  # it learns
    np.testing.assert_allclose(ours, ref, rtol=1e-2)


AUTOCAST_CALLS = {
    "mm": (lambda a, b, c, w: gemmlab.matmul(a, b), lambda a, b, c, w: torch.matmul(a, b)),
    "broadcast": (lambda a, b, c, w: gemmlab.matmul(a.expand(3, 4, 6), b),
                  lambda a, b, c, w: torch.matmul(a.expand(3, 4, 6), b)),
    "bmm": (lambda a, b, c, w: gemmlab.matmul(a.expand(2, 4, 6), b.expand(2, 6, 5)),
            lambda a, b, c, w: torch.matmul(a.expand(2, 4, 6), b.expand(2, 6, 5))),
    "linear": (lambda a, b, c, w: gemmlab.linear(a, w, c, "gelu"), lambda a, b, c, w: F.gelu(F.linear(a, w, c))),
    "addmm": (lambda a, b, c, w: gemmlab.addmm(c, a, b, beta=0.5), lambda a, b, c, w: torch.addmm(c, a, b, beta=0.5)),
}


@pytest.mark.parametrize("name", AUTOCAST_CALLS)
def test_an_autocast_region_gives_torchs_dtype(name):
    """Under torch.autocast("cpu") torch's matmul, linear, addmm and bmm return BF16; gemmlab's too, on the operands
    cast to BF16 as torch casts them (the host kernel's FP32 sum of them rounded once), and the FP32 leaves'
    gradients reach them in FP32; outside the region, FP32 again."""
    ours, theirs = AUTOCAST_CALLS[name]
    leaves = [randn(4, 6).requires_grad_(), randn(6, 5), randn(5), randn(5, 6).requires_grad_()]
    with torch.autocast("cpu", torch.bfloat16):
        y, ref = ours(*leaves), theirs(*(x.detach() for x in leaves))
    assert y.dtype == ref.dtype == torch.bfloat16 and y.shape == ref.shape
    exact = theirs(*(x.detach().bfloat16().double() for x in leaves))  # of the operands as the region casts them
    torch.testing.assert_close(y.double(), exact, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(y, ref, rtol=1e-2, atol=1e-2)
    y.float().sum().backward()
    assert leaves[0].grad.dtype == torch.float32 and leaves[0].grad.abs().sum() > 0
    assert ours(*(x.detach() for x in leaves)).dtype == torch.float32


def test_autocast_on_a_gpu_casts_what_torch_casts():
    """The GPU region's rule (run here on host tensors with a stand-in call), torch's for matmul: every floating
    operand but float64 (the other 16-bit type and FP8 too) cast to the region's dtype, bias and c included; float64
    and a missing bias as they are; the call itself with autocast off, its result in the region's dtype."""
    from gemmlab.torch_op import autocast_call

    seen = []

    def call(*tensors):
        seen.extend(None if t is None else t.dtype for t in tensors)
        return torch.zeros(1, dtype=torch.float16)

    operands = [randn(2), randn(2).bfloat16(), randn(2).double(), torch.zeros(2, dtype=torch.float8_e4m3fn), None]
    y = autocast_call(("cuda", torch.float16), call, *operands)
    assert seen == [torch.float16, torch.float16, torch.float64, torch.float16, None]
    assert y.dtype == torch.float16


def test_an_autocast_region_on_the_host_takes_operands_an_earlier_op_rounded():
    """In a CPU region an earlier op's output is BF16: torch and gemmlab cast every operand to the region's dtype
    (gemmlab's host kernel widens them to FP32 and rounds C once), and both return BF16 (two stacked Linears, a BF16
    x with an FP32 w, a BF16 bias, FP16 operands)."""
    x, w, b = randn(4, 6), randn(5, 6), randn(5)
    first, second = gemmlab.nn.Linear(6, 6), gemmlab.nn.Linear(6, 5)
    with torch.autocast("cpu", torch.bfloat16):
        outs = [second(first(x)), gemmlab.matmul(x.bfloat16(), w.t()), gemmlab.addmm(b, x.bfloat16(), w.t()),
                gemmlab.linear(x, w, b.bfloat16()), gemmlab.matmul(x.half(), w.t().half())]
        refs = [F.linear(F.linear(x, first.weight, first.bias), second.weight, second.bias),
                torch.matmul(x.bfloat16(), w.t()), torch.addmm(b, x.bfloat16(), w.t()), F.linear(x, w, b.bfloat16()),
                torch.matmul(x.half(), w.t().half())]
    for y, ref in zip(outs, refs):
        assert y.dtype == ref.dtype == torch.bfloat16
        torch.testing.assert_close(y.float(), ref.float(), rtol=2e-2, atol=2e-2)


def test_an_autocast_region_compiles_without_a_graph_break():
    layer = gemmlab.nn.Linear(6, 5, activation="relu")

    def f(x):
        with torch.autocast("cpu", torch.bfloat16):
            return layer(x), gemmlab.matmul(x, x.t())

    y, z = torch.compile(f, fullgraph=True, backend="eager")(randn(4, 6))
    assert y.dtype == z.dtype == torch.bfloat16


def test_a_16_bit_numpy_alpha_is_taken_without_a_warning():
    """The float32 range check compares alpha as a Python float: a NumPy float16 compared with the bound itself
    would overflow the bound into float16's inf and warn on every call."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = gemmlab.addmm(torch.ones(4, 5), randn(4, 3), randn(3, 5), beta=np.float16(0.5), alpha=np.float16(2))
    assert y.dtype == torch.float32
