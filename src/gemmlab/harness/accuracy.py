"""`gemmlab accuracy`: how far from float64 each way of computing an FP32-input product lands, against K and
against the inputs' scale.

The ways (series), each run on the same seeded inputs:
- cublas_fp32: cuBLAS SGEMM, TF32 off (FFMA, FP32 accumulation);
- cublas_tf32: cuBLAS with TF32 tensor cores (operands rounded to TF32);
- tf32_truncated: gemmlab TF32 as the tensor cores read FP32, truncated (tc5 built with TMA_ROUND=0);
- tf32_rounded: gemmlab TF32 rounded to nearest (tc5 as registered: its tensor maps round both operands);
- tc7: the 3xTF32 level, its partial sums promoted to FP32 every PROMOTE k-tiles;
- tc7_unpromoted: the same kernel with one tensor-core accumulation over all of K (PROMOTE=0);
- naive_split: three cuBLAS TF32 products of round-to-nearest splits (big·big, big·small, small·big) added in
  FP32, no promotion.
Two sweeps, M = N = ``mn``: K over ``ks`` with N(0,1) inputs, and each input distribution of DISTRIBUTIONS at
K = ``scale_k``. Errors against cuBLAS DGEMM of the same inputs: the relative Frobenius error ‖C − C64‖/‖C64‖ and
the largest |C − C64| over the largest |C64|. A NaN or Inf in C is recorded as such (rel_err None, nonfinite > 0).
The JSON is rendered by gemmlab.report.accuracy: the command writes its tables (.md) and figure (.png) beside it,
and `gemmlab report accuracy.json --out DIR` renders it anywhere.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from gemmlab.errors import GemmlabError
from gemmlab.problem import Problem

# name -> (what it is, how its elements are drawn from a cupy Generator, in float32)
DISTRIBUTIONS = {
    "normal": "N(0, 1)",
    "uniform": "U[0, 1): every product positive, so no cancellation hides a bias",
    "normal_x1e3": "N(0, 1) × 1000",
    "mixed": "N(0, 1) × 10^U(-3, 3) per element: six decades of magnitude in every dot product",
}
SERIES = {
    "cublas_fp32": "cuBLAS FP32 (SGEMM, TF32 off)",
    "cublas_tf32": "cuBLAS TF32",
    "tf32_truncated": "gemmlab TF32, truncated (tc5, TMA_ROUND=0)",
    "tf32_rounded": "gemmlab TF32, rounded to nearest (tc5)",
    "tc7": "gemmlab tc7_3xtf32 (3xTF32, promoted)",
    "tc7_unpromoted": "tc7 without promotion (PROMOTE=0)",
    "naive_split": "3 cuBLAS TF32 products of rna splits, summed in FP32",
}
DEFAULT_KS = (256, 1024, 4096, 16384, 65536)


@dataclass
class AccuracyOptions:
    mn: int = 2048
    ks: tuple = DEFAULT_KS
    scale_k: int = 4096
    distributions: tuple = tuple(DISTRIBUTIONS)
    series: tuple = tuple(SERIES)
    seed: int = 2026
    notes: list = field(default_factory=list)


def draw(xp, rng, dist: str, shape):
    """One operand from distribution ``dist`` (DISTRIBUTIONS), float32, on ``xp``'s device."""
    if dist == "normal":
        return rng.standard_normal(shape, dtype=xp.float32)
    if dist == "uniform":
        return rng.random(shape, dtype=xp.float32)
    if dist == "normal_x1e3":
        return (rng.standard_normal(shape, dtype=xp.float32) * 1000).astype(xp.float32)
    if dist == "mixed":
        scale = 10.0 ** rng.uniform(-3, 3, shape)
        return (rng.standard_normal(shape, dtype=xp.float32) * scale).astype(xp.float32)
    raise GemmlabError(f"unknown distribution {dist!r}; known: {', '.join(DISTRIBUTIONS)}")


def inputs(xp, dist: str, m: int, n: int, k: int, seed: int):
    rng = xp.random.default_rng(seed + 104729 * list(DISTRIBUTIONS).index(dist) + k)
    return draw(xp, rng, dist, (m, k)), draw(xp, rng, dist, (k, n))


def naive_split(a, b):
    """Three cuBLAS TF32 products of round-to-nearest splits, added in FP32 (small ones first)."""
    import cupy

    from gemmlab.kernels.peers._cublas import gemm
    from gemmlab.numerics import tf32_split

    (a_big, a_small), (b_big, b_small) = tf32_split(a), tf32_split(b)
    out = [cupy.empty((a.shape[0], b.shape[1]), cupy.float32) for _ in range(3)]
    for c, (x, y) in zip(out, ((a_big, b_small), (a_small, b_big), (a_big, b_big))):
        gemm(x, y, c, "tf32")
    return (out[0] + out[1]) + out[2]


def _kernel_series():
    """Series computed by gemmlab kernels: name -> (spec, precision)."""
    from gemmlab.kernels.registry import get_kernel

    tc5, tc7 = get_kernel("cuda/tc5_swap_ab_tf32"), get_kernel("cuda/tc7_3xtf32")
    return {
        "tf32_truncated": dataclasses.replace(tc5, params={**tc5.params, "TF32_ROUND": 0, "TMA_ROUND": 0}),
        "tf32_rounded": tc5,
        "tc7": tc7,
        "tc7_unpromoted": dataclasses.replace(tc7, params={**tc7.params, "PROMOTE": 0}),
    }


def _compute(series: str, specs: dict, a, b):
    import cupy

    from gemmlab.kernels.peers._cublas import gemm

    m, n, k = a.shape[0], b.shape[1], a.shape[1]
    if series == "naive_split":
        return naive_split(a, b)
    c = cupy.full((m, n), cupy.nan, cupy.float32)
    if series in ("cublas_fp32", "cublas_tf32"):
        gemm(a, b, c, series.split("_")[1])
    else:
        spec = specs[series]
        spec.build(Problem(m, n, k, spec.precision))(a, b, c)
    return c


def measure(opts: AccuracyOptions, say=print) -> dict:
    """Run both sweeps on the GPU; the results JSON (env, options, series, records)."""
    from gemmlab import device
    from gemmlab.harness import env

    info = device.require_gpu("gemmlab accuracy")
    import cupy

    unknown = [s for s in opts.series if s not in SERIES] + [d for d in opts.distributions if d not in DISTRIBUTIONS]
    if unknown:
        raise GemmlabError(f"gemmlab accuracy: unknown series or distribution {', '.join(unknown)}; series: "
                           f"{', '.join(SERIES)}; distributions: {', '.join(DISTRIBUTIONS)}")
    specs = _kernel_series()
    points = [("k", "normal", k) for k in opts.ks] + [("scale", d, opts.scale_k) for d in opts.distributions]
    records = []
    for sweep, dist, k in points:
        a, b = inputs(cupy, dist, opts.mn, opts.mn, k, opts.seed)
        ref = cupy.matmul(a.astype(cupy.float64), b.astype(cupy.float64))
        ref_norm, ref_max = float(cupy.linalg.norm(ref)), float(cupy.abs(ref).max())
        for series in opts.series:
            c = _compute(series, specs, a, b)
            cupy.cuda.get_current_stream().synchronize()
            c64 = c.astype(cupy.float64)
            nonfinite = int(cupy.count_nonzero(~cupy.isfinite(c64)))
            diff = c64 - ref
            rec = {"sweep": sweep, "series": series, "dist": dist, "m": opts.mn, "n": opts.mn, "k": k,
                   "rel_err": None if nonfinite else float(cupy.linalg.norm(diff)) / ref_norm,
                   "max_rel_err": None if nonfinite else float(cupy.abs(diff).max()) / ref_max,
                   "nonfinite": nonfinite}
            if series in specs:
                rec.update(kernel=specs[series].name, params=dict(specs[series].params))
            records.append(rec)
            say(f"{sweep:5s} {dist:12s} K={k:<6d} {series:15s} "
                + (f"rel err {rec['rel_err']:.3e}" if rec["rel_err"] is not None else f"{nonfinite} non-finite"))
            del c, c64, diff
        del a, b, ref
        cupy.get_default_memory_pool().free_all_blocks()
    return {"env": env.collect(info, "gpu"),
            "options": {"mn": opts.mn, "ks": list(opts.ks), "scale_k": opts.scale_k, "seed": opts.seed},
            "series": {s: SERIES[s] for s in opts.series},
            "distributions": {d: DISTRIBUTIONS[d] for d in opts.distributions},
            "records": records}
