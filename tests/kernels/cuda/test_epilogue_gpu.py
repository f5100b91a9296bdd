"""Each kernel that fuses the epilogue, named, on a GPU (skipped without one): gemmlab.linear (bias and an
activation) and gemmlab.addmm (alpha·AB + beta·D, D a broadcast row or a whole matrix) on shapes whose last tile
hangs over M and N (the TMA-store levels' boxes cut by N, rows past M), against float64 of the operands as the
kernel reads them. The block torch's caching allocator hands out for C is filled with NaN first (poisoned, freed,
reused), so an element no store reaches shows."""
import pytest

from gemmlab import device

pytestmark = pytest.mark.skipif(device.gpu() is None, reason="needs a CUDA GPU")
torch = pytest.importorskip("torch")

import gemmlab  # noqa: E402
from test_api_linear import ACTIVATIONS  # noqa: E402

F = torch.nn.functional

# (kernel, operand dtype): the levels auto runs with a fused epilogue, one build each
KERNELS = [("cuda/tc2_wgmma_tma_bf16", torch.bfloat16), ("cuda/tc3_warp_specialized_bf16", torch.bfloat16),
           ("cuda/tc4_persistent_bf16", torch.bfloat16), ("cuda/tc6_stream_k_bf16", torch.bfloat16),
           ("cuda/tc9_narrow_swap_bf16", torch.bfloat16), ("cuda/tc10_split_k_bf16", torch.bfloat16),
           ("cuda/tc4_persistent_tf32", torch.float32), ("cuda/tc10_split_k_tf32", torch.float32),
           ("cuda/v10_register_prefetch", torch.float32), ("cuda/v11_split_k", torch.float32)]
# (M, N, K): N past a whole 64-column box of BF16 C by 8, M past a 128-row tile; a few rows (tc9's regime); long K
SHAPES = [(1000, 1032, 520), (130, 2056, 264), (24, 1032, 4104)]


def _operands(m, n, k, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, k, device="cuda", generator=g).to(dtype)
    w = (torch.randn(n, k, device="cuda", generator=g) / k ** 0.5).to(dtype)
    return x, w, torch.randn(n, device="cuda", generator=g).to(dtype)


def _poison(m, n, dtype):
    """Fill the block C's allocation will reuse with NaN (the caching allocator returns a freed block of the size)."""
    torch.full((m, n), float("nan"), device="cuda", dtype=dtype)  # freed at once, kept by the allocator
    torch.cuda.synchronize()


def _close(y, ref, dtype):
    tol = 2e-2 if dtype == torch.bfloat16 else 5e-3  # BF16 C; TF32 operands (alpha up to 2 scales their error)
    torch.testing.assert_close(y.double(), ref, rtol=tol, atol=tol)


def _runs(kernel, m, n, k, dtype) -> bool:
    x, w, _ = _operands(m, n, k, dtype)
    try:
        gemmlab.plan(x, w.t(), kernel)
    except gemmlab.errors.GemmlabError:
        return False
    return True


@pytest.mark.parametrize("kernel,dtype", KERNELS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("activation", list(ACTIVATIONS))
def test_linear_bias_and_activation_fused_by_each_kernel(kernel, dtype, shape, activation):
    if not _runs(kernel, *shape, dtype):
        pytest.skip(f"{kernel} does not take {shape}")
    x, w, bias = _operands(*shape, dtype)
    _poison(shape[0], shape[1], dtype)
    y = gemmlab.linear(x, w, bias, activation, kernel=kernel)
    ref = ACTIVATIONS[activation](F.linear(x.double(), w.double(), bias.double()))
    assert torch.isfinite(y).all()
    _close(y, ref, dtype)


@pytest.mark.parametrize("kernel,dtype", KERNELS)
@pytest.mark.parametrize("shape", SHAPES[:2])
def test_addmm_alpha_beta_and_a_matrix_fused_by_each_kernel(kernel, dtype, shape):
    m, n, k = shape
    if not _runs(kernel, m, n, k, dtype):
        pytest.skip(f"{kernel} does not take {shape}")
    x, w, bias = _operands(m, n, k, dtype, seed=1)
    d = torch.randn(m, n, device="cuda").to(dtype)
    for c, beta, alpha in ((d, 0.5, 2.0), (bias, -1.0, 0.25)):
        _poison(m, n, dtype)
        y = gemmlab.addmm(c, x, w.t(), beta=beta, alpha=alpha, kernel=kernel)
        ref = beta * c.double() + alpha * (x.double() @ w.double().t())
        _close(y, ref, dtype)
