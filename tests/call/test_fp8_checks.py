"""gemmlab.matmul on FP8 operands, the host side: which precision the scales make, the formats and output type that
pick the binary, and every bad call refused with its reason (the GPU runs are in tests/test_api_gpu.py and results/h200/run.sh)."""
import ml_dtypes
import numpy as np
import pytest
import torch

import gemmlab
from gemmlab import call, fp8
from gemmlab.device import GPUInfo
from gemmlab.errors import DTypeError, GemmlabError, NoGPUError, ShapeError
from gemmlab.kernels.plan import COL

H200 = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "", "")
M, N, K = 48, 200, 300
rng = np.random.default_rng(3)
A8 = rng.standard_normal((M, K)).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
W8 = rng.standard_normal((N, K)).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)  # B is W8.T
ONE = np.ones(1, np.float32)


def _gpu_facts(x) -> call.Facts:
    """The facts of a host array as if it lived on cuda:0 (the resolution is host logic)."""
    f = call.facts(x, "X")
    return call.Facts("cupy", f.shape, f.dtype, f.layout, 0)


def _gpu_scale(s):
    f = call.scale_facts(s, "s")
    return None if f is None else call.Facts("cupy", f.shape, f.dtype, f.layout, 0)


def _resolve(a, b, sa=None, sb=None, kernel="auto", precision=None, out=None):
    return call.resolve(_gpu_facts(a), _gpu_facts(b), kernel, precision, True, H200, (_gpu_scale(sa), _gpu_scale(sb)),
                        out)


def test_per_tensor_scales_compute_fp8_from_the_table():
    for sa, sb in ((ONE, ONE), (None, None), (np.float32([2.0]).reshape(1, 1), None)):
        spec, problem, why, scales = _resolve(A8, W8.T, sa, sb)
        # the kernel the shipped table's fp8 rows name for this shape, whichever level the H200 measured fastest
        assert problem.precision == "fp8" and spec.precision == "fp8" and problem.shape == (M, N, K)
        assert scales.copy == (False, False) and "dispatch table for NVIDIA H200" in why


def test_block_scales_compute_fp8_block_and_their_layouts_decide_the_copies():
    kb, nb = -(-K // 128), -(-N // 128)
    sa_mmajor = np.ones((kb, M), np.float32).T  # (M, KB) as the transpose of a row-major (KB, M): read in place
    sb_kmajor = np.ones((nb, kb), np.float32).T  # (KB, NB) as the transpose of a row-major (NB, KB)
    spec, problem, _, scales = _resolve(A8, W8.T, sa_mmajor, sb_kmajor)
    # the block-scaled level the shipped table measured fastest near this shape (tc8 or tc10's split-K build)
    assert (problem.precision, spec.precision, scales.copy) == ("fp8_block", "fp8_block", (False, False))
    assert spec.name in ("cuda/tc8_block_scaled_fp8", "cuda/tc10_split_k_fp8_block")
    _, _, _, scales = _resolve(A8, W8.T, np.ones((M, kb), np.float32), sb_kmajor)  # row-major (M, KB): copied
    assert scales.copy == (True, False)


def test_formats_and_output_type_pick_the_binary():
    b5 = W8.astype(np.float32).astype(ml_dtypes.float8_e5m2).T
    spec, _, _, _ = _resolve(A8, b5, out="float32")
    assert spec.formats == (fp8.E4M3, fp8.E5M2) and spec.params["OUT_BF16"] == 0
    spec, _, _, _ = _resolve(A8, W8.T, kernel="cuda/tc4_persistent_fp8")
    assert spec.params["OUT_BF16"] == 1


@pytest.mark.parametrize("call,error,match", [
    (dict(sa=np.ones((2, 2), np.float32)), ShapeError, r"scale_a of shape \(48, 3\)"),
    (dict(sa=np.ones(1, np.float64)), DTypeError, "float32"),
    (dict(sa=ONE, sb=np.ones((3, 2), np.float32)), ShapeError, "fp8_block"),
    (dict(precision="fp8_block"), ShapeError, "asked: fp8_block"),
    (dict(out="float16"), DTypeError, "bfloat16 or float32"),
    (dict(kernel="cuda/tc4_persistent_bf16"), DTypeError, "takes bfloat16"),
    (dict(kernel="cuda/tc8_block_scaled_fp8", sa=ONE), ShapeError, "asked: fp8_block"),
])
def test_bad_fp8_calls_are_refused_with_the_reason(call, error, match):
    with pytest.raises(error, match=match):
        _resolve(A8, W8.T, **call)


def test_scales_with_other_operands_are_refused():
    a = np.ones((4, 4), np.float32)
    with pytest.raises(DTypeError, match="scale FP8 operands"):
        call.resolve(_gpu_facts(a), _gpu_facts(a), "auto", None, True, H200, (_gpu_scale(ONE), None), None)
    with pytest.raises(DTypeError, match="writes float32"):
        call.resolve(_gpu_facts(a), _gpu_facts(a), "auto", None, True, H200, (None, None), "bfloat16")


def test_host_fp8_arrays_need_a_gpu_kernel_named():
    with pytest.raises(DTypeError, match="fp8 needs CUDA operands"):
        gemmlab.matmul(A8, W8.T)
    from gemmlab import device

    if device.gpu() is None:
        with pytest.raises(NoGPUError):
            gemmlab.matmul(A8, W8.T, kernel="cuda/tc4_persistent_fp8", scale_a=ONE, scale_b=ONE)


def test_torch_fp8_tensors_outside_autograd_only():
    a = torch.from_numpy(A8.view(np.uint8)).view(torch.float8_e4m3fn)
    b = torch.from_numpy(W8.view(np.uint8)).view(torch.float8_e4m3fn).t()
    with pytest.raises(DTypeError, match="needs CUDA operands"):
        gemmlab.matmul(a, b, scale_a=torch.ones(1), scale_b=torch.ones(1))
    fa = call.facts(a, "A")
    assert fa.dtype == "float8_e4m3fn" and call.facts(b, "B").layout == COL
    with pytest.raises(GemmlabError, match="outside autograd"):
        gemmlab.matmul(torch.ones(2, 2, requires_grad=True), torch.ones(2, 2), scale_a=torch.ones(1))



def test_block_scale_shapes_count_whole_and_part_blocks_of_128():
    """K = 258 and N = 129: three k-blocks and two n-blocks (the last of 2 and 1 elements), not what 129 per block
    would give."""
    m, n, k = 48, 129, 258
    a = rng.standard_normal((m, k)).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    w = rng.standard_normal((n, k)).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    sa, sb = np.ones((3, m), np.float32).T, np.ones((2, 3), np.float32).T
    _, problem, _, _ = _resolve(a, w.T, sa, sb)
    assert problem.precision == "fp8_block"
    with pytest.raises(ShapeError, match=r"scale_a of shape \(48, 3\).*scale_b of shape \(3, 2\)"):
        _resolve(a, w.T, np.ones((m, 2), np.float32), np.ones((2, 1), np.float32))


def test_every_scale_given_is_checked_where_it_lives_and_its_dtype():
    on_gpu = call.Facts("torch", (1,), "float32", COL, 0)  # a torch tensor on the operands' device, A a CuPy array
    with pytest.raises(GemmlabError, match="scale_b must be a cupy array on cuda:0, with the operands; got a torch"):
        call.resolve(_gpu_facts(A8), _gpu_facts(W8.T), "auto", None, True, H200, (None, on_gpu), None)
    with pytest.raises(DTypeError, match="scale_b must be float32"):  # after a scale_a of None
        _resolve(A8, W8.T, None, np.ones(1, np.float64))


def test_the_plan_key_tells_apart_scales_a_plan_cannot_share():
    """torch_op's key of a scale: a tensor of another dtype, shape, layout (strides), device or kind needs a plan
    (and its checks) of its own."""
    from gemmlab.torch_op import _scale_key

    s = torch.ones(4, 3)
    others = [s.double(), torch.ones(4, 2), torch.ones(3, 4).t(), torch.ones(4, 3, device="meta"), s.numpy()]
    keys = [_scale_key(x) for x in (s, *others)]
    assert len(set(keys)) == len(keys) and _scale_key(torch.ones(4, 3)) == keys[0]
