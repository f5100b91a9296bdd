"""The cuBLAS peer's call, checked on the host: the column-major GemmEx it makes for each layout of A and B, run by a
NumPy model of cuBLAS's column-major semantics on the very buffers a caller's operands occupy, gives the row-major
C = A·B; every layout is read in place (a --layout run's peer pays no copy a caller's torch call would not)."""
import numpy as np
import pytest

from gemmlab.harness.layouts import arrange, launch
from gemmlab.kernels.peers import _cublas
from gemmlab.kernels.plan import COL, ROW, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

LAYOUTS = [Layout(a, b) for a in (ROW, COL) for b in (ROW, COL)]


def _column_major(buffer, rows, cols, ld):
    """The column-major rows×cols matrix with leading dimension ld that cuBLAS reads from ``buffer``."""
    return np.lib.stride_tricks.as_strided(buffer, (rows, cols), (buffer.itemsize, ld * buffer.itemsize))


def _gemm_ex(transa, transb, m, n, k, a_buf, lda, b_buf, ldb, ldc):
    """cublasGemmEx's C (m×n, column-major, leading dimension ldc) = op(A)·op(B), as a flat buffer."""
    op_a = _column_major(a_buf, k, m, lda).T if transa == _cublas.CUBLAS_OP_T else _column_major(a_buf, m, k, lda)
    op_b = _column_major(b_buf, n, k, ldb).T if transb == _cublas.CUBLAS_OP_T else _column_major(b_buf, k, n, ldb)
    c = np.zeros(ldc * n)
    _column_major(c, m, n, ldc)[...] = op_a @ op_b
    return c


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: x.label())
def test_each_layouts_call_computes_row_major_c_from_the_operands_memory(layout):
    m, n, k = 5, 7, 3
    rng = np.random.default_rng(1)
    a, b = arrange(rng.standard_normal((m, k)), rng.standard_normal((k, n)), layout)
    # the buffers as the device holds them: each operand's memory in its storage order
    a_buf = np.ravel(a, order="F" if layout.a == COL else "C")
    b_buf = np.ravel(b, order="F" if layout.b == COL else "C")
    transa, lda, transb, ldb = _cublas.operand_ops(m, n, k, layout.a == COL, layout.b == COL)
    c = _gemm_ex(transa, transb, n, m, k, b_buf, lda, a_buf, ldb, n)  # the call's (N, M, K), B in cuBLAS's A place
    np.testing.assert_allclose(c.reshape(m, n), a @ b, rtol=1e-12)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: x.label())
def test_a_layout_run_times_the_peer_in_place(layout, monkeypatch):
    """bench --layout times the peer on the caller's operands as they are, with no copy, and the launch hands
    cuBLAS the operands' majors."""
    import gemmlab.device

    monkeypatch.setattr(gemmlab.device, "require_gpu", lambda name: None)
    calls = []
    monkeypatch.setattr(_cublas, "gemm_ptr", lambda *args, **kw: calls.append(kw))
    peer = get_kernel("peers/cublas_bf16")
    run, copies = launch(peer, Problem(64, 32, 16, "bf16"), layout)
    assert copies == ()
    run.__self__.launch(1, 2, 3, 0)
    assert calls == [{"a_col": layout.a == COL, "b_col": layout.b == COL}]
