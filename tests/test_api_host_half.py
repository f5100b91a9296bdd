"""BF16 and FP16 operands on the host (dispatch.HOST_WIDENED): gemmlab.matmul, linear, addmm and gemmlab.nn.Linear
on CPU tensors and NumPy arrays run the host kernel on the operands widened to FP32 and round C once, after any
epilogue, to the operands' type, with torch.matmul's shapes and dtypes. Small integer operands keep every FP32 sum
exact, so C must equal the float64 product rounded once, bit for bit."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gemmlab
from gemmlab.call import batched_matmul
from gemmlab.errors import DTypeError, GemmlabError, SizeLimitError

torch = pytest.importorskip("torch")

# (A's shape, B's shape): 1-D operands, a 2-D GEMM, a batch that collapses into A's rows, broadcast batches, empty ones
SHAPES = [((7,), (7,)), ((5, 7), (7,)), ((7,), (7, 6)), ((33, 17), (17, 9)), ((4, 5, 7), (7, 6)),
          ((3, 1, 5, 7), (4, 7, 6)), ((2, 5, 7), (1, 7, 6)), ((0, 5, 7), (7, 6)), ((2, 0, 7), (2, 7, 6)),
          ((5, 0), (0, 6))]
TORCH = [torch.bfloat16, torch.float16]
NUMPY = [ml_dtypes.bfloat16, np.float16]


def _ints(shape, seed):
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(np.float64)


@pytest.mark.parametrize("dtype", TORCH, ids=str)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_cpu_tensors_follow_torch_matmul_and_round_once(shapes, dtype):
    a64, b64 = _ints(shapes[0], 1), _ints(shapes[1], 2)
    a, b = torch.from_numpy(a64).to(dtype), torch.from_numpy(b64).to(dtype)
    c, ref = gemmlab.matmul(a, b), torch.matmul(a, b)
    assert c.shape == ref.shape and c.dtype == ref.dtype == dtype
    assert torch.equal(c, torch.from_numpy(np.asarray(np.matmul(a64, b64))).to(dtype))
    wide = gemmlab.matmul(a, b, out_dtype=torch.float32)  # FP32 C on request: the exact sum
    assert wide.dtype == torch.float32 and torch.equal(wide.double(), torch.from_numpy(np.asarray(np.matmul(a64, b64))))


@pytest.mark.parametrize("dtype", NUMPY, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_numpy_arrays_keep_their_type(shapes, dtype):
    a64, b64 = _ints(shapes[0], 3), _ints(shapes[1], 4)
    c = np.asarray(gemmlab.matmul(a64.astype(dtype), b64.astype(dtype)))
    want = np.asarray(np.matmul(a64, b64))
    # torch's rule: NumPy's for float16; numpy.matmul returns float32 for ml_dtypes' bfloat16
    assert c.shape == want.shape and c.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(c.astype(np.float64), want.astype(dtype).astype(np.float64))


def test_the_epilogue_reads_the_fp32_sum_before_the_one_rounding():
    """1 + 2^-9 is no BF16 value (BF16 steps by 2^-7 at 1): C rounded before the addend would be 1, and
    addmm(D = -1) would return 0, not 2^-9."""
    a = torch.tensor([[1.0, 2.0 ** -9]], dtype=torch.bfloat16)
    b = torch.tensor([[1.0], [1.0]], dtype=torch.bfloat16)
    d = torch.tensor([[-1.0]], dtype=torch.bfloat16)
    assert gemmlab.addmm(d, a, b).item() == 2.0 ** -9
    x64, w64, bias64 = _ints((3, 4, 16), 5), _ints((24, 16), 6), _ints((24,), 7)
    x, w, bias = (torch.from_numpy(v).bfloat16() for v in (x64, w64, bias64))
    y = gemmlab.linear(x, w, bias, activation="relu")
    assert y.shape == (3, 4, 24) and y.dtype == torch.bfloat16
    assert torch.equal(y, torch.from_numpy(np.maximum(x64 @ w64.T + bias64, 0)).bfloat16())


def test_plans_say_the_operands_are_widened():
    a = torch.ones(4, 8, dtype=torch.float16)
    text = gemmlab.plan(a, a.t()).explain()
    assert "cpu/blas" in text and "fp16 operands widened to float32 (exactly), C rounded once to float16" in text
    assert "on FP32 copies of the operands" in text
    named = gemmlab.plan(a.numpy(), a.numpy().T, kernel="cpu/blas").explain()
    assert "named by the caller: fp16 operands widened" in named
    assert "C left in float32 (out_dtype)" in gemmlab.plan(a, a.t(), out_dtype=torch.float32).explain()


def test_a_linear_layer_trains_on_the_host_in_bf16_as_torch_s():
    torch.manual_seed(0)
    ref = torch.nn.Linear(16, 8).bfloat16()
    ours = gemmlab.nn.Linear.from_linear(ref)
    x = torch.randn(5, 16, dtype=torch.bfloat16)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = ours(xa), ref(xb)
    ya.float().square().sum().backward()
    yb.float().square().sum().backward()
    assert ya.dtype == xa.grad.dtype == ours.weight.grad.dtype == torch.bfloat16
    for got, want in ((ya, yb), (xa.grad, xb.grad), (ours.weight.grad, ref.weight.grad), (ours.bias.grad, ref.bias.grad)):
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)


def test_what_the_host_still_refuses():
    a = torch.ones(4, 8)
    with pytest.raises(DTypeError, match=r"on the host gemmlab computes fp32 \(cpu/blas\), and bf16, fp16 through it; "
                                         r"tf32 needs CUDA operands"):
        gemmlab.matmul(a, a.t(), precision="tf32")
    with pytest.raises(DTypeError, match="cpu/v0_naive computes fp32 and takes float32 operands; A is bfloat16"):
        gemmlab.matmul(a.bfloat16(), a.t().bfloat16(), kernel="cpu/v0_naive")
    with pytest.raises(DTypeError, match="A is bfloat16 and B is float16"):
        gemmlab.matmul(a.bfloat16(), a.t().half())
    with pytest.raises(DTypeError, match="A is bfloat16 and B is float16"):  # the host kernel named: the same word
        gemmlab.matmul(a.bfloat16(), a.t().half(), kernel="cpu/blas")


def test_a_broadcast_widened_past_memory_is_refused_before_numpy_tries(monkeypatch):
    """NumPy casts a broadcast operand to FP32 whole: 256 products of a 1024×2^20 A that is one element in memory
    would take a TiB, refused up front with the operands' shapes (on a machine of 64 GiB, whatever this one has)."""
    from gemmlab.call import batched

    monkeypatch.setattr(batched, "host_memory_bytes", lambda: 64 * 2 ** 30)
    one = np.ones(1, np.float16)
    a = np.lib.stride_tricks.as_strided(one, shape=(256, 1024, 2 ** 20), strides=(0, 0, 0))
    b = np.ones((2 ** 20, 1), np.float16)
    with pytest.raises(SizeLimitError, match=r"A and B broadcast over the batch \(256×1024×1048576 and 256×1048576×1\) "
                                             r"need 1025.0 GiB in float32 .* this machine has 64.0 GiB"):
        batched_matmul(a, b)


def test_an_accumulator_the_host_cannot_allocate_is_a_size_limit(monkeypatch):
    """C of FP16 fits where its FP32 accumulator does not: the allocation's MemoryError is a SizeLimitError."""
    real = np.empty

    def empty(shape, dtype=float, *args, **kwargs):
        if np.dtype(dtype) == np.float32 and tuple(shape) == (64, 48):
            raise MemoryError
        return real(shape, dtype, *args, **kwargs)

    monkeypatch.setattr(np, "empty", empty)
    with pytest.raises(SizeLimitError, match=r"C's FP32 accumulator \(64×48\) needs"):
        gemmlab.matmul(np.ones((64, 32), np.float16), np.ones((32, 48), np.float16))


@pytest.mark.parametrize("dtype", TORCH, ids=str)
def test_out_of_fp16_range_and_subnormals_as_torch_without_warnings(dtype):
    """Past FP16's range the product is inf and far below it a subnormal or zero, as torch's; NumPy's cast warns
    (and raises under numpy.seterr) there unless told not to."""
    import warnings

    big, tiny = torch.full((2, 4), 200.0, dtype=dtype), torch.full((2, 4), 1e-4, dtype=dtype)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        for a in (big, tiny):
            for b in (a.t(), a.t().expand(3, 4, 2)):  # 2-D, and a batch on the host's numpy.matmul
                assert torch.equal(gemmlab.matmul(a, b), torch.matmul(a, b))


def test_an_out_array_of_the_operands_type_is_written():
    a64, b64 = _ints((9, 5), 8), _ints((5, 7), 9)
    for dtype in NUMPY:
        out = np.full((9, 7), np.nan, dtype)
        assert gemmlab.matmul(a64.astype(dtype), b64.astype(dtype), out=out) is out
        np.testing.assert_array_equal(out.astype(np.float64), a64 @ b64)
    with pytest.raises(GemmlabError, match="float32"):  # an FP32 out is C's dtype only on request
        gemmlab.matmul(a64.astype(np.float16), b64.astype(np.float16), out=np.empty((9, 7), np.float32))
