"""gemmlab.matmul on the host: results, the default kernel, plans and their cache, and every bad input it must refuse
with a named reason. The GPU path's own checks are in test_api_gpu.py (they need a GPU)."""
import builtins
import os
import subprocess
import sys

import numpy as np
import pytest

import gemmlab
from gemmlab import call
from gemmlab import device
from gemmlab.errors import (DTypeError, GemmlabError, LayoutError, NoGPUError, OperandTypeError, ShapeError,
                            SizeLimitError, UnknownKernelError)

rng = np.random.default_rng(5)
A = rng.standard_normal((33, 65), dtype=np.float32)
B = rng.standard_normal((65, 17), dtype=np.float32)
REF = A.astype(np.float64) @ B


@pytest.mark.parametrize("kernel", ["auto", "cpu/v0_naive", "cpu/blas"])
def test_numpy_in_numpy_out(kernel):
    c = gemmlab.matmul(A, B, kernel=kernel)
    assert isinstance(c, np.ndarray) and c.dtype == np.float32 and c.shape == (33, 17)
    np.testing.assert_allclose(c, REF, rtol=1e-4, atol=1e-4)


def test_default_on_host_arrays_is_the_host_peer_and_says_why():
    prepared = gemmlab.plan(A, B)
    assert prepared.plan.spec.name == "cpu/blas"
    text = prepared.explain()
    assert "cpu/blas" in text and "host" in text and "33x17x65" in text


def test_transposed_strided_and_big_endian_operands_are_correct():
    at = np.ascontiguousarray(A.T).T  # a transposed view: F-contiguous
    bs = np.repeat(B, 2, axis=1)[:, ::2]  # a strided view
    assert not at.flags.c_contiguous and not bs.flags.c_contiguous
    np.testing.assert_allclose(gemmlab.matmul(at, bs, kernel="cpu/v0_naive"), REF, rtol=1e-4, atol=1e-4)
    big = A.astype(">f4")
    np.testing.assert_allclose(gemmlab.matmul(big, B, kernel="cpu/v0_naive"), REF, rtol=1e-4, atol=1e-4)


def test_out_argument_is_filled_and_checked():
    out = np.zeros((33, 17), np.float32)
    assert gemmlab.matmul(A, B, kernel="cpu/blas", out=out) is out
    np.testing.assert_allclose(out, REF, rtol=1e-5, atol=1e-5)
    for bad, match in ((np.zeros((33, 17), np.int32), "float32"), (np.zeros((17, 33), np.float32), r"\(33, 17\)"),
                       (np.zeros((17, 33), np.float32).T, "C-contiguous")):
        for kernel in ("cpu/blas", "cpu/v0_naive"):
            with pytest.raises(LayoutError, match=match):
                gemmlab.matmul(A, B, kernel=kernel, out=bad)
    frozen = np.zeros((33, 17), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(LayoutError, match="read-only"):
        gemmlab.matmul(A, B, out=frozen)
    square = rng.standard_normal((17, 17), dtype=np.float32)
    with pytest.raises(LayoutError, match="overlaps"):
        gemmlab.matmul(square, square, out=square)


@pytest.mark.parametrize("a,b,match", [
    (A, A, "inner dimensions differ"),
    (A[:, 0], B, r"inner dimensions differ: A \(33,\) and B \(65, 17\)"),
    (np.stack([A, A]), np.stack([B, B, B]), r"do not broadcast: A \(2, 33, 65\) and B \(3, 65, 17\)"),
    (np.float32(1.0), B, "0-D scalar"),
    (A[:, :0], B, "inner dimensions differ"),  # K = 0 against B's 65 rows: zero sizes themselves are products
])
def test_shape_errors(a, b, match):
    with pytest.raises(ShapeError, match=match):
        gemmlab.matmul(a, b, kernel="cpu/blas")


def test_dtype_errors_name_what_the_kernel_takes():
    with pytest.raises(DTypeError, match="float32 operands; A is float64"):
        gemmlab.matmul(A.astype(np.float64), B, kernel="cpu/blas")
    with pytest.raises(DTypeError, match="B is int32"):
        gemmlab.matmul(A, B.astype(np.int32), kernel="cpu/blas")
    with pytest.raises(DTypeError, match="A is float64 and B is float32"):
        gemmlab.matmul(A.astype(np.float64), B)
    with pytest.raises(DTypeError, match="A and B are float64"):  # a dtype no precision takes
        gemmlab.matmul(A.astype(np.float64), B.astype(np.float64))
    # float16 operands compute fp16 (it named float16 as a dtype gemmlab did not take before the fp16 record): on the
    # host the host kernel widens them, named or not; another host kernel takes float32 only
    with pytest.raises(DTypeError, match="cpu/v0_naive computes fp32 and takes float32 operands; A is float16"):
        gemmlab.matmul(A.astype(np.float16), B.astype(np.float16), kernel="cpu/v0_naive")
    with pytest.raises(DTypeError, match="cpu/blas computes fp32, not precision='tf32'"):
        gemmlab.matmul(A.astype(np.float16), B.astype(np.float16), kernel="cpu/blas", precision="tf32")
    with pytest.raises(DTypeError, match="precision='bf16' does not take float32"):
        gemmlab.matmul(A, B, precision="bf16")
    with pytest.raises(DTypeError, match="tf32 needs CUDA operands"):
        gemmlab.matmul(A, B, precision="tf32")


def test_operands_that_are_not_arrays():
    with pytest.raises(OperandTypeError, match="got list"):
        gemmlab.matmul(A.tolist(), B)
    with pytest.raises(OperandTypeError, match="got float"):
        gemmlab.matmul(A, 2.0)
    # a masked array's mask would be ignored: the product of the hidden entries, returned as if right
    with pytest.raises(OperandTypeError, match="B is a NumPy masked array"):
        gemmlab.matmul(A, np.ma.masked_array(B, mask=B > 0))


def test_byte_ranges_overlap_only_where_they_share_a_byte():
    """The GPU paths' out= check (its arrays' addresses): C ending where A begins is no overlap, one byte is."""
    assert not call.overlaps(100, 10, 110, 5) and not call.overlaps(110, 5, 100, 10)
    assert call.overlaps(100, 10, 109, 5) and call.overlaps(109, 5, 100, 10)
    assert call.overlaps(100, 10, 102, 2) and call.overlaps(102, 2, 100, 10)


def test_an_out_of_another_kind_is_refused_before_any_work():
    """NumPy operands with a torch ``out``: once a TypeError from NumPy's dtype parser."""
    torch = pytest.importorskip("torch")
    for kernel in ("auto", "cpu/blas", "cpu/v0_naive"):
        with pytest.raises(LayoutError, match="out is a torch array; the operands are numpy arrays"):
            gemmlab.matmul(A, B, kernel=kernel, out=torch.empty(33, 17))


def test_a_host_blas_out_of_memory_is_a_size_limit(monkeypatch):
    """A MemoryError inside the host BLAS (its copy of a strided operand) reaches the caller as a SizeLimitError
    naming the problem, not as a traceback through kernels/cpu."""
    from gemmlab.kernels.cpu import blas

    class NoMemory:
        errstate = staticmethod(np.errstate)

        def matmul(self, *args, **kwargs):
            raise MemoryError

    monkeypatch.setattr(blas, "np", NoMemory())
    with pytest.raises(SizeLimitError, match="33x17x65: the host BLAS ran out of memory"):
        gemmlab.matmul(A, B, kernel="cpu/blas")


@pytest.mark.parametrize("kernel,error,match", [
    ("cuda/v42_magic", UnknownKernelError, "gemmlab list"),
    ("cpu/blsa", UnknownKernelError, "no kernel named"),
    (123, UnknownKernelError, "got int 123"),
])
def test_unknown_kernels(kernel, error, match):
    with pytest.raises(error, match=match):
        gemmlab.matmul(A, B, kernel=kernel)


def test_no_kernel_given_means_auto():
    np.testing.assert_allclose(gemmlab.matmul(A, B, kernel=None), REF, rtol=1e-5, atol=1e-5)


def test_size_limits_are_checked_before_any_work():
    big = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(70000, 8), strides=(0, 0))
    big_b = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(8, 70000), strides=(0, 0))
    with pytest.raises(SizeLimitError, match="32-bit index range"):
        gemmlab.matmul(big, big_b, kernel="cuda/v2_smem")
    with pytest.raises(SizeLimitError, match="GFLOP"):
        gemmlab.matmul(np.zeros((4096, 4096), np.float32), np.zeros((4096, 4096), np.float32), kernel="cpu/v0_naive")
    tall = np.lib.stride_tricks.as_strided(np.ones(1, np.float32), shape=(200_000, 1), strides=(0, 0))
    wide = np.lib.stride_tricks.as_strided(np.ones(1, np.float32), shape=(1, 200_000), strides=(0, 0))
    with pytest.raises(SizeLimitError, match="GiB"):  # C alone is 149 GiB
        gemmlab.matmul(tall, wide)


@pytest.mark.skipif(device.gpu() is not None, reason="this machine has a GPU")
@pytest.mark.parametrize("kernel", ["cuda/v2_smem", "peers/cublas_fp32", "cuda/tc4_persistent_bf16"])
def test_gpu_kernel_without_gpu_says_so(kernel):
    import ml_dtypes

    a, b = (A, B) if "bf16" not in kernel else (A.astype(ml_dtypes.bfloat16), B.astype(ml_dtypes.bfloat16))
    with pytest.raises(NoGPUError, match="needs a CUDA GPU"):
        gemmlab.matmul(a, b, kernel=kernel)


def test_a_second_call_reuses_its_plan_and_reads_no_file(monkeypatch):
    gemmlab.clear_plans()
    gemmlab.matmul(A, B)

    def refuse(*args, **kwargs):
        raise AssertionError("the second call prepared a plan or opened a file")

    monkeypatch.setattr(call.checks, "prepare", refuse)
    monkeypatch.setattr(builtins, "open", refuse)
    np.testing.assert_allclose(gemmlab.matmul(A, B), REF, rtol=1e-5, atol=1e-5)
    other = rng.standard_normal((33, 65), dtype=np.float32)
    np.testing.assert_allclose(gemmlab.matmul(other, B), other.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError, match="prepared a plan"):
        gemmlab.matmul(A[:, :64], B[:64])  # a new shape is a new plan


def test_importing_gemmlab_and_a_host_product_leave_numba_alone():
    code = ("import os, sys, numpy as np, gemmlab; a = np.ones((3, 4), np.float32); gemmlab.matmul(a, a.T.copy()); "
            "print('numba.cuda' in sys.modules, os.environ.get('NUMBA_ENABLE_CUDASIM'))")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "None"]


def test_every_error_is_a_gemmlab_error():
    for err in (DTypeError, LayoutError, NoGPUError, OperandTypeError, ShapeError, SizeLimitError, UnknownKernelError):
        assert issubclass(err, GemmlabError)


def test_explain_says_what_is_copied_first():
    """A plan that copies nothing says nothing of copies; one that copies an operand, a scale or host operands says
    which."""
    import numpy as np

    from gemmlab.call import Prepared

    a, b = np.ones((30, 20), np.float32), np.ones((20, 10), np.float32)
    text = gemmlab.plan(a, b, kernel="cpu/v0_naive").explain()
    assert "copied" not in text
    plan = gemmlab.plan(a, b, kernel="cpu/v0_naive").plan
    lines = Prepared(plan, "named", copy_b=True, copy_scales=(True, False), host_copy=True).explain().splitlines()
    assert lines[-3:] == ["  B is copied into row-major order first: the kernel does not read its layout in place",
                          "  scale_a is copied into the layout the kernel reads first (the transpose of a row-major "
                          "tensor: gemmlab.fp8)", "  host operands are copied to the GPU and the result back"]
