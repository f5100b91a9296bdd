"""What torch is handed in gemmlab's API benches (``bench --api`` and its suite): the random operands of a problem,
FP8 operands quantized as torch._scaled_mm and gemmlab.matmul both take them, and torch's own call per precision."""
from __future__ import annotations

import numpy as np

from gemmlab.problem import PRECISIONS, get_precision

# the scaled precisions and their recipes' blocks of A and of w (gemmlab.fp8; None: one scale per tensor)
FP8 = {name: ("1x128", "128x128") if p.block_scaled else None for name, p in PRECISIONS.items() if p.scaled}


def fp8_operands(torch, a, w, precision: str, reference: bool = True) -> tuple:
    """x (M×K) and w (N×K) float32 tensors quantized by gemmlab.fp8 (amax scaling, e4m3) for ``precision``'s recipe,
    as torch._scaled_mm and gemmlab.matmul take them: (a8, w8.t(), scale_a, scale_b), the block scales as the
    transposes of gemmlab.fp8's stored layouts (scale_a M×K/128, scale_b K/128×N/128), per tensor one float each
    (torch takes no other layout: rows of scale_b padded to 16 bytes it refuses, peers/cublaslt_fp8_block says why);
    and (``reference``) the float64 product of the dequantized operands, on the tensors' device."""
    from gemmlab import fp8

    xp, to_torch = np, torch.from_numpy
    if a.is_cuda:
        import cupy as xp

        to_torch = torch.from_dlpack
    blocks = FP8[precision] or (fp8.PER_TENSOR, fp8.PER_TENSOR)
    qa, qw = (fp8.quantize(xp.from_dlpack(x.detach()), fp8.E4M3, blk) for x, blk in zip((a, w), blocks))
    a8, w8 = (to_torch(q.data).view(torch.float8_e4m3fn) for q in (qa, qw))
    sa, sw = to_torch(qa.scale), to_torch(qw.scale)
    if get_precision(precision).block_scaled:  # stored (K/128, M) and (N/128, K/128), given transposed
        sa, sw = sa.t(), sw.t()
    ref = to_torch(qa.dequantize() @ qw.dequantize().T) if reference else None
    return (a8, w8.t(), sa, sw), ref


def torch_call(torch, prec, out_dtype=None):
    """torch's call for this precision writing C as ``out_dtype`` (a torch dtype; default: the precision's C):
    torch.mm with out_dtype where C's dtype is not the operands'; FP8: torch._scaled_mm with the same scales, fast
    accumulation per tensor (tc4_persistent_fp8's)."""
    if prec.scaled:
        fast, out = prec.tensor_scaled, out_dtype or torch.bfloat16
        return lambda a, b, sa, sb: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=out,
                                                     use_fast_accum=fast)
    out = out_dtype or getattr(torch, prec.output_dtype)  # torch names dtypes as NumPy does
    if out != getattr(torch, prec.input_dtype):
        return lambda a, b: torch.mm(a, b, out_dtype=out)
    return torch.matmul


def inputs(torch, problem, n_sets, seed, linear, device="cuda", reference=True):
    """n_sets argument tuples of the calls (A, B; FP8: A, B, scale_a, scale_b), and (``reference``, else None) the
    float64 product of the first (FP8: of its dequantized operands)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    fp8 = problem.prec.scaled
    dtype = torch.float32 if fp8 else getattr(torch, problem.prec.input_dtype)  # torch names them as NumPy does
    m, n, k = problem.shape
    sets, ref = [], None
    for i in range(n_sets):
        a = torch.randn(m, k, device=device, generator=gen).to(dtype)
        if fp8:  # always x @ w.T
            args, r = fp8_operands(torch, a, torch.randn(n, k, device=device, generator=gen), problem.prec.name,
                                   reference=reference and i == 0)
            ref = ref if r is None else r
        else:  # linear: w is N×K and the product reads w.T
            b = torch.randn(*((n, k) if linear else (k, n)), device=device, generator=gen).to(dtype)
            args = (a, b.t() if linear else b)
        sets.append(args)
    if not reference or fp8:
        return sets, ref
    return sets, sets[0][0].double() @ sets[0][1].double()
