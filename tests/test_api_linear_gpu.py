"""gemmlab.nn.Linear training on a GPU (skipped without one; run with GEMMLAB_TEST_GPU=1): the two-layer MLP of
test_api_linear, BF16 and FP32 on CUDA, its losses within 1e-2 relative of torch.nn.Linear's step by step; and
gemmlab.linear's fused bias and activation against F.linear on CUDA tensors."""
import numpy as np
import pytest

from gemmlab import device

pytestmark = pytest.mark.skipif(device.gpu() is None, reason="needs a CUDA GPU")
torch = pytest.importorskip("torch")

import gemmlab  # noqa: E402
import gemmlab.nn  # noqa: E402
from test_api_linear import train_mlp  # noqa: E402

F = torch.nn.functional


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_two_layer_mlp_trains_as_torch_nn_linear_does_on_cuda(dtype):
    ours = train_mlp(gemmlab.nn.Linear, "cuda", dtype)
    ref = train_mlp(torch.nn.Linear, "cuda", dtype)
    assert ours[-1] < 0.9 * ours[0]
    np.testing.assert_allclose(ours, ref, rtol=1e-2)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_an_autocast_region_runs_the_16_bit_gemm_on_cuda(dtype, monkeypatch):
    """FP32 operands in torch.autocast("cuda", dtype): gemmlab's linear, matmul and addmm return dtype as torch's do,
    by the 16-bit kernels (the plans made are of the 16-bit precision), equal to torch's own within its rounding,
    and training an FP32 MLP in the region leaves FP32 gradients."""
    from gemmlab import call

    g = torch.Generator(device="cuda").manual_seed(0)
    x, w = (torch.randn(s, device="cuda", generator=g) for s in ((64, 256), (384, 256)))
    bias = torch.randn(384, device="cuda", generator=g)
    made = []
    prepare = call.checks.prepare
    monkeypatch.setattr(call.checks, "prepare", lambda *a, **k: made.append(prepare(*a, **k)) or made[-1])
    gemmlab.clear_plans()
    with torch.autocast("cuda", dtype):
        pairs = [(gemmlab.linear(x, w, bias, "gelu"), F.gelu(F.linear(x, w, bias))),
                 (gemmlab.matmul(x, w.t()), torch.matmul(x, w.t())),
                 (gemmlab.addmm(bias, x, w.t()), torch.addmm(bias, x, w.t()))]
    for ours, ref in pairs:
        assert ours.dtype == ref.dtype == dtype
        torch.testing.assert_close(ours.float(), ref.float(), rtol=2e-2, atol=2e-2)
    assert made and all(p.plan.spec.precision == {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype] for p in made)
    layer = gemmlab.nn.Linear(256, 384, device="cuda")
    with torch.autocast("cuda", dtype):
        layer(x).float().sum().backward()
    assert layer.weight.grad.dtype == torch.float32


@pytest.mark.parametrize("activation", [None, "relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_linear_fuses_bias_and_activation_on_cuda(activation, dtype):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(4, 64, 256, device="cuda", generator=g).to(dtype)
    w = torch.randn(384, 256, device="cuda", generator=g).to(dtype) / 16
    bias = torch.randn(384, device="cuda", generator=g).to(dtype)
    y = gemmlab.linear(x, w, bias, activation)
    z = F.linear(x.double(), w.double(), bias.double())
    ref = {None: z, "relu": F.relu(z), "gelu": F.gelu(z), "gelu_tanh": F.gelu(z, approximate="tanh"),
           "silu": F.silu(z)}[activation]
    assert y.shape == (4, 64, 384)
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(y.double(), ref, rtol=tol, atol=tol)


def test_compiled_mlp_of_gemmlab_linear_on_cuda_matches_torchs():
    """torch.compile(fullgraph=True) of gemmlab.nn.Linear layers on CUDA tensors: the forward pass and every
    gradient against the same layers in torch.nn.Linear, FP32."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 128)).cuda()
    ours = torch.nn.Sequential(gemmlab.nn.Linear.from_linear(torch.nn.Linear(256, 512).cuda(), activation="gelu"),
                               gemmlab.nn.Linear.from_linear(torch.nn.Linear(512, 128).cuda()))
    ours.load_state_dict({k.replace("2.", "1."): v for k, v in reference.state_dict().items()})
    x = torch.randn(4, 32, 256, device="cuda")
    out = torch.compile(ours, fullgraph=True)(x)
    ref = reference(x)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    out.square().sum().backward()
    ref.square().sum().backward()
    for (name, got), want in zip(ours.named_parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-3, atol=1e-3, msg=name)


@pytest.mark.parametrize("activation", [None, "relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("x_shape, n", [((0, 256), 384), ((2, 8, 0), 384), ((8, 256), 0)])
def test_linear_with_a_zero_dimension_on_cuda(activation, dtype, x_shape, n):
    """K = 0: act(bias) in every row; no rows or N = 0: empty. Against F.linear then the activation in float64,
    and the gradients of x, w and the bias against torch's (zeros where its are)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(x_shape, device="cuda", generator=g).to(dtype).requires_grad_()
    w = torch.randn(n, x_shape[-1], device="cuda", generator=g).to(dtype).requires_grad_()
    bias = torch.randn(n, device="cuda", generator=g).to(dtype).requires_grad_()
    y = gemmlab.linear(x, w, bias, activation)
    refs = [t.detach().double().requires_grad_() for t in (x, w, bias)]
    z = F.linear(*refs)
    ref = {None: z, "relu": F.relu(z), "gelu": F.gelu(z), "gelu_tanh": F.gelu(z, approximate="tanh"),
           "silu": F.silu(z)}[activation]
    assert y.shape == ref.shape and y.dtype == dtype and y.is_cuda
    tol = 1e-6 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(y.double(), ref, rtol=tol, atol=tol)
    y.double().sum().backward()
    ref.sum().backward()
    tol = 1e-5 if dtype == torch.float32 else 1e-2  # the bias's: 16 FP32 derivatives summed
    for got, want in zip((x, w, bias), refs):
        assert got.grad.shape == want.grad.shape and got.grad.dtype == dtype
        torch.testing.assert_close(got.grad.double(), want.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_addmm_and_nn_linear_with_a_zero_dimension_on_cuda(dtype):
    c = torch.randn(16, 32, device="cuda").to(dtype)
    out = gemmlab.addmm(c, torch.empty(16, 0, device="cuda", dtype=dtype), torch.empty(0, 32, device="cuda",
                                                                                         dtype=dtype), beta=0.5)
    assert out.dtype == dtype and torch.equal(out, 0.5 * c)  # beta·c, exact in either dtype
    layer = torch.nn.Linear(64, 32, device="cuda", dtype=dtype)
    y = gemmlab.nn.Linear.from_linear(layer, activation="gelu")(torch.empty(0, 64, device="cuda", dtype=dtype))
    assert y.shape == (0, 32) and y.dtype == dtype
    y.sum().backward()
    assert torch.equal(layer.weight.grad, torch.zeros_like(layer.weight))
    assert torch.equal(layer.bias.grad, torch.zeros_like(layer.bias))


@pytest.mark.parametrize("x_shape", [(16, 256), (2, 8, 256), (256,)])
def test_a_repeated_linear_launches_its_plan_on_new_operands(x_shape, monkeypatch):
    """A second call with operands of the same attributes finds the first call's plan before any check (the checks
    are not run again) and computes act(x·wᵀ + bias) of its own operands, the new bias included."""
    from gemmlab import torch_fused

    def operands(seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        return (torch.randn(x_shape, device="cuda", generator=g).to(torch.bfloat16),
                torch.randn(384, 256, device="cuda", generator=g).to(torch.bfloat16) / 16,
                torch.randn(384, device="cuda", generator=g).to(torch.bfloat16))

    def check(y, x, w, bias):
        ref = F.gelu(F.linear(x.double(), w.double(), bias.double()))
        assert y.shape == ref.shape
        torch.testing.assert_close(y.double(), ref, rtol=2e-2, atol=2e-2)

    x, w, bias = operands(0)
    check(gemmlab.linear(x, w, bias, "gelu"), x, w, bias)
    checks = []
    monkeypatch.setattr(torch_fused, "_check", lambda **t: checks.append(t))
    for seed in (1, 2):
        x, w, bias = operands(seed)
        check(gemmlab.linear(x, w, bias, "gelu"), x, w, bias)
    assert not checks


def test_a_linear_filed_under_no_grad_takes_its_plan_there_and_autograd_outside(monkeypatch):
    """A weight that requires grad (an nn.Linear's) called under no_grad: the repeated call there takes the first's
    plan without the checks; the same operands with grad enabled go through autograd (the output has a grad_fn, w
    gets its gradient), not through that plan."""
    from gemmlab import torch_fused

    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(16, 256, device="cuda", generator=g)
    w = torch.randn(384, 256, device="cuda", generator=g).requires_grad_()
    with torch.no_grad():
        gemmlab.linear(x, w)
        checks = []
        monkeypatch.setattr(torch_fused, "_check", lambda **t: checks.append(t))
        torch.testing.assert_close(gemmlab.linear(x, w), F.linear(x, w), rtol=1e-4, atol=1e-3)
        assert not checks
    y = gemmlab.linear(x, w)
    assert checks  # with grad: a key of its own, the checks, autograd
    assert y.grad_fn is not None
    y.sum().backward()
    torch.testing.assert_close(w.grad, x.sum(0).expand(384, 256), rtol=1e-4, atol=1e-3)


# (M, N, K): several tiles per CTA (the held boxes of one tile stored under the next tile's first k-tiles), ragged
# rows and columns at C's edges; K of 3 k-tiles (one held box under each; with a fused bias's EPI_GAP of 4, all after
# the unit's loop), of 1 (every held box after it), of 5 and of 16 (a fused bias's held boxes under k-tiles 3, 7 and
# 11); N = 1004 is no multiple of 8, so TMA cannot address C, which goes from registers, the held words unused;
# 8100×4104 runs the 256-wide tile (one box stored at the tile's end, three held) with its last tiles cut by M and N
HELD_SHAPES = [(2049, 4104, 192), (2100, 2056, 64), (8192, 1004, 200), (8192, 4096, 320), (4097, 2056, 1000),
               (8100, 4104, 520)]
HELD_KERNELS = ["cuda/tc4_persistent_bf16", "cuda/tc4_persistent_fp16", "cuda/tc6_stream_k_bf16"]


def _operands(m, n, k, dtype):
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    return (torch.randn(m, k, device="cuda", generator=g).to(dtype),
            (torch.randn(n, k, device="cuda", generator=g) / 8).to(dtype),
            torch.randn(n, device="cuda", generator=g).to(dtype), torch.randn(m, n, device="cuda", generator=g))


def _poison(m, n, dtype):
    """A NaN block of C's size freed into the caching allocator, which hands it to the next output of that size: an
    element a kernel leaves unwritten stays NaN."""
    poison = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    del poison


@pytest.mark.parametrize("kernel", HELD_KERNELS)
@pytest.mark.parametrize("activation,with_bias", [(None, True), (None, False), ("gelu", True), ("silu", False)])
@pytest.mark.parametrize("m,n,k", HELD_SHAPES)
def test_held_boxes_of_c_take_the_fused_epilogue(kernel, activation, with_bias, m, n, k):
    """tc4's held boxes of 16-bit C (EPI_DEFER) stored under the next tile's k-tiles, a bias added there by producer
    warps (EPI_ASYNC; an activation's build stores every box at the tile's end, the consumers applying it; tc6 splits
    no tile at these shapes and runs tc4's builds): act(x·wᵀ + bias) at every element against float64, the output
    NaN-poisoned first; the same bits on a second call."""
    dtype = torch.float16 if kernel.endswith("fp16") else torch.bfloat16
    x, w, bias, _ = _operands(m, n, k, dtype)
    bias = bias if with_bias else None
    _poison(m, n, dtype)
    y = gemmlab.linear(x, w, bias, activation, kernel=kernel)
    z = F.linear(x.double(), w.double(), None if bias is None else bias.double())
    ref = {"gelu": F.gelu, "silu": F.silu}[activation](z) if activation else z
    assert y.shape == (m, n) and y.dtype == dtype and not y.isnan().any()
    torch.testing.assert_close(y.double(), ref, rtol=2e-2, atol=2e-2)
    assert torch.equal(gemmlab.linear(x, w, bias, activation, kernel=kernel), y)


@pytest.mark.parametrize("kernel", HELD_KERNELS[:2])
@pytest.mark.parametrize("m,n,k", HELD_SHAPES)
def test_held_boxes_of_c_take_alpha_alone(kernel, m, n, k):
    """addmm's α·(a @ b) with β = 0 on tc4's held boxes of 16-bit C (EPI_ASYNC's pass scales by α alone): every
    element against float64, the output NaN-poisoned first."""
    dtype = torch.float16 if kernel.endswith("fp16") else torch.bfloat16
    a, w, _, c = _operands(m, n, k, dtype)
    _poison(m, n, dtype)
    y = gemmlab.addmm(c, a, w.t(), beta=0.0, alpha=2.0, kernel=kernel)  # c unread
    assert y.shape == (m, n) and y.dtype == dtype and not y.isnan().any()
    torch.testing.assert_close(y.double(), 2.0 * (a.double() @ w.double().t()), rtol=2e-2, atol=4e-2)


@pytest.mark.parametrize("m,n,k", HELD_SHAPES)
def test_held_boxes_of_c_take_a_matrix_addend(m, n, k):
    """addmm's β·c + α·(a @ b) with FP32 c on tc4's held boxes of BF16 C: every element against float64."""
    a, w, _, c = _operands(m, n, k, torch.bfloat16)
    _poison(m, n, torch.bfloat16)
    y = gemmlab.addmm(c, a, w.t(), beta=0.5, alpha=2.0, kernel="cuda/tc4_persistent_bf16")
    ref = 0.5 * c.double() + 2.0 * (a.double() @ w.double().t())
    assert y.shape == (m, n) and not y.isnan().any()
    torch.testing.assert_close(y.double(), ref, rtol=2e-2, atol=4e-2)
