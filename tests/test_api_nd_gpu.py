"""gemmlab.matmul with torch.matmul's semantics on a GPU (skipped without one; run with GEMMLAB_TEST_GPU=1): an
activation of (batch, seq, hidden) against a weight as one 2-D GEMM, a true batch as one batched call, broadcast
batches and 1-D operands, and their gradients, on CUDA tensors against float64."""
import pytest

from gemmlab import device

pytestmark = pytest.mark.skipif(device.gpu() is None, reason="needs a CUDA GPU")
torch = pytest.importorskip("torch")

import gemmlab  # noqa: E402
from gemmlab import call  # noqa: E402
from gemmlab.errors import ShapeError  # noqa: E402

TOL = {torch.float32: 1e-4, torch.bfloat16: 2e-2}


def randn(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, device="cuda", generator=g).to(dtype)


def check(c, a, b, dtype):
    ref = torch.matmul(a.double(), b.double())
    assert c.shape == ref.shape and c.is_cuda
    torch.testing.assert_close(c.double(), ref, rtol=TOL[dtype], atol=TOL[dtype] * ref.abs().max().item())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_an_activation_against_a_weight_is_one_2d_gemm(dtype, monkeypatch):
    calls, batched = [], call.batched_matmul
    monkeypatch.setattr(call, "batched_matmul", lambda *args: calls.append(args) or batched(*args))
    x, w = randn(4, 64, 256, dtype=dtype), randn(384, 256, dtype=dtype, seed=1)
    check(gemmlab.matmul(x, w.t()), x, w.t(), dtype)
    assert not calls


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("a_shape, b_shape", [((8, 128, 256), (8, 256, 192)), ((256, 128), (4, 128, 64)),
                                              ((2, 1, 64, 128), (3, 128, 96)), ((128,), (6, 128, 64))])
def test_true_batches_and_broadcasts(dtype, a_shape, b_shape):
    a, b = randn(*a_shape, dtype=dtype), randn(*b_shape, dtype=dtype, seed=1)
    check(gemmlab.matmul(a, b), a, b, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("a_shape, b_shape", [((4, 5, 3), (4, 3, 7)), ((3, 17, 33), (3, 33, 127)),
                                              ((2, 64, 130), (2, 130, 96))])
def test_batches_of_rows_tma_cannot_pitch(dtype, a_shape, b_shape):
    """Rows of K or N off 16 bytes, which the TMA levels cannot read in place in a batch: one launch of tc1, which
    stages them element by element; torch.matmul runs these, so gemmlab must too."""
    a, b = randn(*a_shape, dtype=dtype), randn(*b_shape, dtype=dtype, seed=1)
    c = gemmlab.matmul(a, b)
    assert c.dtype == dtype
    check(c.float(), a.float(), b.float(), torch.float32 if dtype == torch.float32 else torch.bfloat16)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m, n, k", [(64, 96, 128), (17, 33, 7)])
def test_batches_of_transposed_matrices(dtype, m, n, k):
    """a.mT @ b and a @ b.mT over a batch, as attention's q @ k.mT and a backward pass hand them over: the operand the
    chosen level reads only after a copy is copied contiguous (torch.matmul copies too), the other read in place."""
    a, b = randn(4, k, m, dtype=dtype), randn(4, n, k, dtype=dtype, seed=1)
    check(gemmlab.matmul(a.mT, b.mT), a.mT, b.mT, dtype)
    check(gemmlab.matmul(a.mT.contiguous(), b.mT), a.mT, b.mT, dtype)
    if dtype == torch.float32:
        check(gemmlab.matmul(a.mT, b.mT.contiguous(), precision="tf32").float(), a.mT, b.mT, torch.bfloat16)
    w = randn(k, m, dtype=dtype, seed=2)  # one weight, handed over transposed, against the whole batch
    check(gemmlab.matmul(w.mT, b.mT.contiguous()), w.mT, b.mT, dtype)


@pytest.mark.parametrize("a_shape, b_shape", [((8, 128, 256), (8, 256, 192)), ((256, 128), (4, 128, 64)),
                                              ((2, 3, 64, 128), (2, 3, 128, 96)), ((1, 64, 128), (5, 128, 32)),
                                              ((4, 16, 256), (256, 64)), ((2, 2, 8, 256), (256, 72))])
def test_a_repeated_nd_call_launches_its_plan_on_new_operands(a_shape, b_shape, monkeypatch):
    """The second call with operands of the same attributes, a batch or x's rows against a matrix, takes the plan the
    first filed under them (no route, no checks: torch_op._route is not called again) and computes the product of its
    own operands; a transposed B of the same shape is another key, with its own, right, product."""
    from gemmlab import torch_op

    dtype = torch.bfloat16
    a, b = randn(*a_shape, dtype=dtype), randn(*b_shape, dtype=dtype, seed=1)
    check(gemmlab.matmul(a, b), a, b, dtype)
    routes, route = [], torch_op._route
    monkeypatch.setattr(torch_op, "_route", lambda *args: routes.append(args) or route(*args))
    for seed in (2, 3):
        a2, b2 = randn(*a_shape, dtype=dtype, seed=seed), randn(*b_shape, dtype=dtype, seed=seed + 10)
        check(gemmlab.matmul(a2, b2), a2, b2, dtype)
    assert not routes
    bt = randn(*b_shape[:-2], b_shape[-1], b_shape[-2], dtype=dtype, seed=4).transpose(-1, -2)
    check(gemmlab.matmul(a, bt), a, bt, dtype)
    assert len(routes) == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_repeated_batch_still_takes_autograd_and_out(dtype):
    """After a call files its plan: operands that require grad go through autograd (both gradients of a true batch,
    gemmlab::bmm's backward), and an out= call writes out."""
    a, b = randn(4, 64, 96, dtype=dtype), randn(4, 96, 32, dtype=dtype, seed=1)
    gemmlab.matmul(a, b)  # files the plan under the operands' attributes
    ga, gb = a.clone().requires_grad_(), b.clone().requires_grad_()
    gemmlab.matmul(ga, gb).sum().backward()
    ref_a, ref_b = a.double().requires_grad_(), b.double().requires_grad_()
    torch.matmul(ref_a, ref_b).sum().backward()
    tol = TOL[dtype] * 10  # a column of 64 dC·B products, or of 64 Aᵀ·dC, summed in the operands' precision
    torch.testing.assert_close(ga.grad.double(), ref_a.grad, rtol=tol, atol=tol)
    torch.testing.assert_close(gb.grad.double(), ref_b.grad, rtol=tol, atol=tol)
    out = torch.full((4, 64, 32), float("nan"), device="cuda", dtype=dtype)
    assert gemmlab.matmul(a, b, out=out) is out
    check(out, a, b, dtype)


def test_nd_gradients_on_cuda():
    a, b = randn(2, 3, 64, 96).requires_grad_(), randn(96, 32, seed=1).requires_grad_()
    ra, rb = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    gemmlab.matmul(a, b).sum().backward()
    torch.matmul(ra, rb).sum().backward()
    torch.testing.assert_close(a.grad.double(), ra.grad, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(b.grad.double(), rb.grad, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("a_shape, b_shape", [((3, 64, 128), (128, 32)), ((4, 64, 128), (4, 128, 32)),
                                              ((128,), (128, 32)), ((128,), (128,))])
def test_cupy_operands_get_cupys_matmul_shape(a_shape, b_shape):
    cupy = pytest.importorskip("cupy")
    rng = cupy.random.default_rng(0)
    a = rng.standard_normal(a_shape, dtype=cupy.float32)
    b = rng.standard_normal(b_shape, dtype=cupy.float32)
    c, ref = gemmlab.matmul(a, b), cupy.matmul(a.astype(cupy.float64), b.astype(cupy.float64))
    assert isinstance(c, cupy.ndarray) and c.shape == ref.shape and c.dtype == cupy.float32
    cupy.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


def _no_plan(monkeypatch):
    """A product with a zero dimension makes no plan (every kernel's path goes through prepare): one made fails."""
    def refuse(*args, **kwargs):
        raise AssertionError("a plan was made for a product with a zero dimension")

    monkeypatch.setattr(call.checks, "prepare", refuse)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("a_shape, b_shape", [((0, 64), (64, 32)), ((16, 0), (0, 32)), ((16, 64), (64, 0)),
                                              ((0,), (0,)), ((3, 0, 64), (64, 32)), ((2, 16, 0), (2, 0, 32)),
                                              ((1, 16, 64), (0, 64, 32))])
def test_zero_sizes_on_cuda_are_torch_matmuls(dtype, a_shape, b_shape, monkeypatch):
    """Empty, or zeros for K = 0, in torch's dtype on the operands' GPU, and the gradients torch gives."""
    _no_plan(monkeypatch)
    a, b = randn(*a_shape, dtype=dtype), randn(*b_shape, dtype=dtype, seed=1)
    c, ref = gemmlab.matmul(a, b), torch.matmul(a, b)
    assert c.shape == ref.shape and c.dtype == ref.dtype and c.device == ref.device and torch.equal(c, ref)
    wide = gemmlab.matmul(a, b, out_dtype=torch.float32) if dtype != torch.float32 else c
    assert wide.dtype == torch.float32 and torch.equal(wide, ref.float())
    a.requires_grad_(), b.requires_grad_()
    ra, rb = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    gemmlab.matmul(a, b).sum().backward()
    torch.matmul(ra, rb).sum().backward()
    assert torch.equal(a.grad, ra.grad) and torch.equal(b.grad, rb.grad)


def test_zero_sizes_on_cuda_write_out_and_plan_refuses_them():
    a, b = randn(16, 0), randn(0, 32)
    out = torch.full((16, 32), float("nan"), device="cuda")
    assert gemmlab.matmul(a, b, out=out) is out and not out.any()
    with pytest.raises(ShapeError, match="K=0: a product with a zero dimension runs no kernel"):
        gemmlab.plan(a, b)


@pytest.mark.parametrize("a_shape, b_shape", [((0, 64), (64, 32)), ((16, 0), (0, 32)), ((0,), (0,)),
                                              ((2, 16, 0), (2, 0, 32)), ((0, 16, 64), (1, 64, 32))])
def test_zero_sizes_of_cupy_operands_are_cupys_matmul(a_shape, b_shape, monkeypatch):
    cupy = pytest.importorskip("cupy")
    _no_plan(monkeypatch)
    a, b = cupy.ones(a_shape, cupy.float32), cupy.ones(b_shape, cupy.float32)
    c, ref = gemmlab.matmul(a, b), cupy.matmul(a, b)
    assert isinstance(c, cupy.ndarray) and c.shape == ref.shape and c.dtype == ref.dtype and c.device == a.device
    cupy.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("kernel", ["cuda/tc4_persistent_bf16", "cuda/tc4_persistent_fp16"])
@pytest.mark.parametrize("a_shape, b_shape, bn, cm", [((8, 512, 512), (8, 512, 512), 128, 1),
                                                      ((3, 127, 200), (3, 200, 96), 128, 1),
                                                      ((2, 1536, 64), (2, 64, 1536), 128, 1),
                                                      ((2, 1536, 2048), (2, 2048, 1536), 192, 2)])
def test_a_batch_runs_the_narrow_tile_and_clusters_its_products_take(kernel, a_shape, b_shape, bn, cm):
    """tc4's batched build with narrower tiles (each busy cluster runs one whole tile, a narrow one sooner): 128
    columns and no clusters for products of K <= 1024 (SHORT_BATCH), 192 in 2-CTA clusters past it; on C poisoned
    with NaN: every element written, none past a product's rows or columns."""
    from gemmlab.kernels.registry import get_kernel
    from gemmlab.problem import BatchedProblem

    dtype = torch.bfloat16 if kernel.endswith("bf16") else torch.float16
    a, b = randn(*a_shape, dtype=dtype), randn(*b_shape, dtype=dtype, seed=1)
    batch, m, k = a_shape
    problem = BatchedProblem(m, b_shape[-1], k, get_kernel(kernel).precision, batch=batch)
    runs = get_kernel(kernel).for_problem(problem)
    assert (runs.params["BN"], runs.params["CM"], runs.params["BATCHED"]) == (bn, cm, 1)
    out = torch.full((batch, m, b_shape[-1]), float("nan"), device="cuda", dtype=dtype)
    c = gemmlab.matmul(a, b, kernel=kernel, out=out)
    assert c.data_ptr() == out.data_ptr()
    check(c, a, b, torch.bfloat16)
