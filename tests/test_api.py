"""gemmlab.matmul on NumPy arrays and every bad input it must refuse with a named reason."""
import numpy as np
import pytest

import gemmlab
from gemmlab.errors import DTypeError, NoGPUError, ShapeError, SizeLimitError, UnknownKernelError
from gemmlab import device

rng = np.random.default_rng(5)
A = rng.standard_normal((33, 65), dtype=np.float32)
B = rng.standard_normal((65, 17), dtype=np.float32)


@pytest.mark.parametrize("kernel", ["cpu/v0_naive", "cpu/blas"])
def test_numpy_in_numpy_out(kernel):
    c = gemmlab.matmul(A, B, kernel=kernel)
    assert isinstance(c, np.ndarray) and c.dtype == np.float32 and c.shape == (33, 17)
    np.testing.assert_allclose(c, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


def test_transposed_and_strided_views_are_copied_and_correct():
    at = np.ascontiguousarray(A.T).T  # a transposed view: F-contiguous
    bs = np.repeat(B, 2, axis=1)[:, ::2]  # a strided view
    assert not at.flags.c_contiguous and not bs.flags.c_contiguous
    np.testing.assert_allclose(gemmlab.matmul(at, bs, kernel="cpu/v0_naive"), A @ B, rtol=1e-4, atol=1e-4)


def test_out_argument_is_filled():
    out = np.zeros((33, 17), np.float32)
    assert gemmlab.matmul(A, B, kernel="cpu/blas", out=out) is out
    np.testing.assert_allclose(out, A @ B, rtol=1e-5, atol=1e-5)


def test_torch_cpu_tensors_round_trip():
    torch = pytest.importorskip("torch")
    c = gemmlab.matmul(torch.from_numpy(A), torch.from_numpy(B), kernel="cpu/blas")
    assert isinstance(c, torch.Tensor)
    np.testing.assert_allclose(c.numpy(), A @ B, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a,b,match", [
    (A, A, "inner dimensions differ"),
    (A[None], B, "2-D"),
    (A[:, 0], B, "2-D"),
    (A[:0], B, "M=0"),
    (A[:, :0], B[:0], "K=0"),
    (A, B[:, :0], "N=0"),
])
def test_shape_errors(a, b, match):
    with pytest.raises(ShapeError, match=match):
        gemmlab.matmul(a, b, kernel="cpu/blas")


def test_dtype_errors_name_what_the_kernel_takes():
    with pytest.raises(DTypeError, match="float32 operands; A is float64"):
        gemmlab.matmul(A.astype(np.float64), B, kernel="cpu/blas")
    with pytest.raises(DTypeError, match="B is int32"):
        gemmlab.matmul(A, B.astype(np.int32), kernel="cpu/blas")
    with pytest.raises(DTypeError, match="got list"):
        gemmlab.matmul(A.tolist(), B, kernel="cpu/blas")


def test_unknown_kernel():
    with pytest.raises(UnknownKernelError, match="gemmlab list"):
        gemmlab.matmul(A, B, kernel="cuda/v42_magic")


def test_size_limit_is_checked_before_any_work():
    big = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(70000, 8), strides=(0, 0))
    big_b = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(8, 70000), strides=(0, 0))
    with pytest.raises(SizeLimitError, match="32-bit index range"):
        gemmlab.matmul(big, big_b, kernel="cuda/v2_smem")
    with pytest.raises(SizeLimitError, match="GFLOP"):
        gemmlab.matmul(np.zeros((4096, 4096), np.float32), np.zeros((4096, 4096), np.float32), kernel="cpu/v0_naive")


@pytest.mark.skipif(device.gpu() is not None, reason="this machine has a GPU")
@pytest.mark.parametrize("kernel", ["cuda/v2_smem", "peers/cublas_fp32"])
def test_gpu_kernel_without_gpu_says_so(kernel):
    with pytest.raises(NoGPUError, match="needs a CUDA GPU"):
        gemmlab.matmul(A, B, kernel=kernel)
