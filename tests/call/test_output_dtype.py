"""C's dtype by torch's rule, the host side: BF16 operands write BF16 C and FP16 operands FP16 C unless out_dtype
asks for FP32, each its own build of the kernel the dispatcher picks; FP16 reads BF16's dispatch table and says so;
an out_dtype a precision does not write is refused by name (the GPU runs are in tests/test_api_gpu.py)."""
import ml_dtypes
import numpy as np
import pytest
import torch

from gemmlab import call
from gemmlab.call.cache import Prepared
from gemmlab.device import GPUInfo
from gemmlab.errors import DTypeError
from gemmlab.kernels.plan import Plan
from gemmlab.torch_op import output_dtype

H200 = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "", "")
SIXTEEN = {"bfloat16": ("bf16", "OUT_BF16"), "float16": ("fp16", "OUT_F16")}


def _facts(x) -> call.Facts:
    """The facts of a host array or CPU tensor as if it lived on cuda:0 (the resolution is host logic)."""
    f = call.facts(x, "X")
    return call.Facts("cupy", f.shape, f.dtype, f.layout, 0)


def _resolve(a, b, kernel="auto", out_dtype=None):
    return call.resolve(_facts(a), _facts(b), kernel, None, True, H200, (None, None), call.out_dtype_name(out_dtype))


def _operands(dtype: str, m: int = 256, n: int = 512, k: int = 384, kind: str = "numpy"):
    a, w = np.ones((m, k), np.float32), np.ones((n, k), np.float32)
    if kind == "torch":
        t = getattr(torch, dtype)
        return torch.from_numpy(a).to(t), torch.from_numpy(w).to(t).t()
    np_type = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    return a.astype(np_type), w.astype(np_type).T


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", list(SIXTEEN))
@pytest.mark.parametrize("m", [8, 256, 4096])  # gemv1 / tc9 at decode sizes, the tile levels above
def test_16_bit_operands_write_their_own_dtype_and_fp32_on_request(kind, dtype, m):
    precision, define = SIXTEEN[dtype]
    a, b = _operands(dtype, m, kind=kind)
    spec, problem, _, _ = _resolve(a, b)
    assert problem.precision == precision and spec.precision == precision
    assert str(spec.output_dtype(problem)) == dtype and spec.params.get(define) == 1
    for asked in ("float32", np.float32, torch.float32):
        spec32, _, _, _ = _resolve(a, b, out_dtype=asked)
        assert str(spec32.output_dtype(problem)) == "float32" and spec32.params[define] == 0
        assert spec32.name == spec.name  # the same kernel choice: the output type is a build of it


def test_fp16_reads_bf16s_dispatch_table_and_says_so():
    a, b = _operands("float16", 4096, 4096, 4096)
    spec, _, why, _ = _resolve(a, b)
    spec_bf16, _, why_bf16, _ = _resolve(*_operands("bfloat16", 4096, 4096, 4096))
    assert spec.name == spec_bf16.name.replace("_bf16", "_fp16")
    assert "bf16's dispatch table, the same tensor-core instruction rates" in why and "bf16's" not in why_bf16


def test_a_named_kernel_writes_what_out_dtype_asks():
    a, b = _operands("bfloat16")
    spec, problem, _, _ = _resolve(a, b, "cuda/tc2_wgmma_tma_bf16", out_dtype="float32")
    assert spec.params["OUT_BF16"] == 0 and str(spec.output_dtype(problem)) == "float32"
    spec, problem, _, _ = _resolve(a, b, "cuda/tc9_narrow_swap_bf16")
    assert spec.inner.params["OUT_BF16"] == 1 and str(spec.output_dtype(problem)) == "bfloat16"
    spec, _, _, _ = _resolve(a, b, "cuda/tc9_narrow_swap_bf16", out_dtype="float32")
    assert spec.inner.params["OUT_BF16"] == 0 and spec.params["OUT_BF16"] == 0


@pytest.mark.parametrize("dtype,kernel,out,match", [
    ("bfloat16", "auto", "float16", "out_dtype='float16': bf16 writes bfloat16 or float32"),
    ("float16", "auto", torch.bfloat16, "out_dtype='bfloat16': fp16 writes float16 or float32"),
    ("bfloat16", "cuda/tc4_persistent_bf16", "float64", "out_dtype='float64': bf16 writes"),
    ("float16", "auto", "int8", "out_dtype='int8'"),
    ("bfloat16", "peers/cublas_bf16", "float32", "writes bfloat16 C, not bfloat16 A, bfloat16 B and float32 C"),
])
def test_an_out_dtype_the_precision_cannot_write_is_refused_by_name(dtype, kernel, out, match):
    with pytest.raises(DTypeError, match=match):
        _resolve(*_operands(dtype), kernel, out)


def test_explain_names_cs_dtype_and_the_rule():
    a, b = _operands("bfloat16")
    spec, problem, why, _ = _resolve(a, b)
    text = Prepared(Plan(spec, problem), why, out_dtype="bfloat16").explain()
    assert "C: bfloat16 (the operands' dtype, as torch; out_dtype=float32 writes it)" in text
    spec, problem, why, _ = _resolve(a, b, out_dtype="float32")
    text = Prepared(Plan(spec, problem), why, out_dtype="float32").explain()
    assert "C: float32 (as out_dtype asks; bf16's default is bfloat16)" in text and "OUT_BF16=0" in text


def test_the_fake_kernels_dtype_follows_the_records():
    for dtype, want in ((torch.bfloat16, torch.bfloat16), (torch.float16, torch.float16),
                        (torch.float32, torch.float32)):
        assert output_dtype(torch.empty(0, dtype=dtype)) == want
        assert output_dtype(torch.empty(0, dtype=dtype), None, "float32") == torch.float32
    assert output_dtype(torch.empty(0), "tf32") == torch.float32
