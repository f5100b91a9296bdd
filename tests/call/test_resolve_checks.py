"""What a call resolves to, and the refusals on the way, as a caller meets them: a precision that contradicts the
kernel named, operands of two kinds of dtype (one FP8, one not), a precision the dtype does not take (the message
lists those it does), a GPU kernel named on a machine without one (the message names it); the reason explain()
gives on the host; and C's dtype and the batch carried into the problem, for a kernel named and for "auto"."""
import ml_dtypes
import numpy as np
import pytest
import torch

import gemmlab
from gemmlab import call, device
from gemmlab.device import GPUInfo
from gemmlab.errors import DTypeError, NoGPUError
from gemmlab.problem import BatchedProblem

H200 = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "", "")
A = np.ones((6, 4), np.float32)
B = np.ones((4, 5), np.float32)


OPERANDS = {"numpy": (A, B), "torch": (torch.from_numpy(A), torch.from_numpy(B))}


@pytest.mark.parametrize("kind", OPERANDS)
def test_a_precision_is_checked_against_the_kernel_named(kind):
    a, b = OPERANDS[kind]
    np.testing.assert_array_equal(np.asarray(gemmlab.matmul(a, b, kernel="cpu/blas", precision="fp32")), A @ B)
    with pytest.raises(DTypeError, match=r"cpu/blas computes fp32, not precision='tf32'"):
        gemmlab.matmul(a, b, kernel="cpu/blas", precision="tf32")
    with pytest.raises(DTypeError, match="out_dtype='bfloat16': fp32 writes float32"):
        gemmlab.matmul(a, b, out_dtype="bfloat16")


def test_one_fp8_operand_with_a_float32_one_is_refused_naming_both():
    with pytest.raises(DTypeError, match="A is float8_e4m3fn and B is float32: gemmlab multiplies two operands of "
                                         "one dtype"):
        gemmlab.matmul(A.astype(ml_dtypes.float8_e4m3fn), B)


def test_a_precision_the_dtype_does_not_take_is_refused_with_those_it_does():
    with pytest.raises(DTypeError, match="precision='bf16' does not take float32 operands; float32 takes 'fp32', "
                                         "'tf32'"):
        gemmlab.matmul(A, B, precision="bf16")


@pytest.mark.parametrize("kind", OPERANDS)
def test_a_gpu_kernel_named_without_a_gpu_is_refused_by_its_name(monkeypatch, kind):
    monkeypatch.setattr(device, "probe", lambda *a, **k: (None, "no CUDA driver installed"))
    with pytest.raises(NoGPUError, match="cuda/v2_smem needs a CUDA GPU, and this machine has none usable: no CUDA "
                                         "driver installed"):
        gemmlab.matmul(*OPERANDS[kind], kernel="cuda/v2_smem")


def test_a_second_call_on_tensors_of_one_key_reuses_the_first_calls_plan():
    from gemmlab.call import cache

    gemmlab.clear_plans()
    a, b = OPERANDS["torch"]
    gemmlab.matmul(a, b)
    (first,) = cache.plans.values()
    gemmlab.matmul(a.clone(), b.clone())
    assert list(cache.plans.values()) == [first] and list(cache.plans.values())[0] is first
    gemmlab.clear_plans()


def test_explain_on_the_host_says_why_the_host_peer_runs():
    assert "chosen: host operands run on the host peer, as torch and NumPy run them" in gemmlab.plan(A, B).explain()


def _gpu_facts(x) -> call.Facts:
    """The facts of a host array as if it lived on cuda:0 (the resolution is host logic)."""
    f = call.facts(x, "X")
    return call.Facts("cupy", f.shape, f.dtype, f.layout, 0)


@pytest.mark.parametrize("kernel", ["auto", "cuda/tc4_persistent_bf16"])
def test_the_problem_carries_cs_dtype_and_the_batch_for_a_kernel_named_and_for_auto(kernel):
    a, b = A.astype(ml_dtypes.bfloat16), B.astype(ml_dtypes.bfloat16)
    fa, fb = _gpu_facts(a), _gpu_facts(b)
    _, problem, _, _ = call.resolve(fa, fb, kernel, None, True, H200, out_dtype="float32")
    assert problem.out_dtype == "float32" and str(problem.output_dtype()) == "float32"
    _, problem, _, _ = call.resolve(fa, fb, kernel, None, True, H200, batch=(3, 24, 0))
    assert isinstance(problem, BatchedProblem) and (problem.batch, problem.stride_a, problem.stride_b) == (3, 24, 0)


def test_a_batch_of_tensors_passes_the_precision_on_to_its_checks():
    a, b = torch.ones(2, 6, 4), torch.ones(2, 4, 5)
    assert gemmlab.matmul(a, b, precision="fp32").shape == (2, 6, 5)
    with pytest.raises(DTypeError, match=r"on the host gemmlab computes fp32 \(cpu/blas\), and bf16, fp16 through it; "
                                         r"tf32 needs CUDA operands"):
        gemmlab.matmul(a, b, precision="tf32")
