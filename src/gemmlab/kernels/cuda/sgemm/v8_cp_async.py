"""V8 cp.async pipeline: the tiles flow global → shared through a ring of STAGES buffers.

What changed against V7: the same 128×128×8 block tile, 64×32 warp tiles and 8×8 per lane, but the tiles are
copied by cp.async (LDGSTS) into a ring of STAGES = 3 shared buffers. The copies for tile t + 2 are issued before
tile t is computed and land while it runs; copies bypass the registers (no staging registers, no stall between a
global load and its shared store), and one barrier per k tile replaces V7's two. A is transposed on the way in
by 4-byte copies (a 16-byte copy cannot scatter), arranged so a warp's copies read 32-byte row segments and write
32 distinct banks of the padded tile; B moves in 16-byte copies when its rows are 16-byte aligned (4-byte copies
otherwise). Edges are zero-filled by the copies' src-size operand, so ragged shapes take the same path.
B handed over as the N×K Bᵀ (x @ w.t()) is read in place (B_KMAJOR=1, set by the plan): it is copied as A is,
4 bytes at a time along K, transposed into a tile padded like A's (KMajorBKernel).
The grid is 1D; GROUP_M > 1 walks GROUP_M block rows column by column (L2 reuse of B panels).
Why: in V7 every warp of a block waits for global memory once per k tile, and with one or two blocks per SM
there is little other work to hide it; the pipeline keeps STAGES - 1 tiles in flight.
Predicted gain: 1.2-1.4× V7, toward 0.8× cuBLAS FP32.

Measured: docs/fp32_ladder.md, results/h200/fp32.json.
"""
from gemmlab.kernels.cuda.sgemm.common.sgemm import (KMajorBKernel, b_stride, divides, residency_errors, traffic_of,
                                                     warptile_errors, warptile_threads)
from gemmlab.kernels.geometry import Geometry, ceil_div

# Every parameter the kernel source reads; a config must name them all.
PARAM_NAMES = ("BM", "BN", "BK", "WM", "WN", "RM", "RN", "STAGES", "GROUP_M", "MIN_BLOCKS", "KUNROLL")


threads = warptile_threads


def smem_bytes(p) -> int:
    return 4 * p["STAGES"] * p["BK"] * (p["BM"] + 4 + b_stride(p))


def geometry(problem, p):
    tiles = ceil_div(problem.m, p["BM"]) * ceil_div(problem.n, p["BN"])
    return Geometry(grid=(tiles, 1, 1), block=(threads(p), 1, 1), smem=smem_bytes(p))


def constraints(p) -> list[str]:
    errors = warptile_errors(p, PARAM_NAMES)
    if errors:
        return errors
    divides(errors, 8, p["BK"], "BK must be a multiple of 8 (A is copied 8 k at a time)")
    if p["STAGES"] < 2:
        errors.append(f"STAGES={p['STAGES']}: a pipeline needs at least 2 stages")
    if not 1 <= p["KUNROLL"] <= p["BK"] or p["BK"] % p["KUNROLL"]:
        errors.append(f"KUNROLL={p['KUNROLL']} must divide BK={p['BK']}")
    if errors:
        return errors
    t = threads(p)
    divides(errors, t // 8, p["BM"], "a pass of A copies covers threads/8 rows, which must divide BM")
    if p.get("B_KMAJOR", 0):
        divides(errors, t // 8, p["BN"], "a pass of transposing B copies (B_KMAJOR=1) covers threads/8 rows of Bᵀ, "
                                         "which must divide BN")
        if not errors and p["BN"] // (t // 8) > 32:
            errors.append(f"B_KMAJOR=1: {p['BN'] // (t // 8)} passes of B copies, past the 32 a row mask holds")
    divides(errors, p["BN"] // 4, t, "the B tile's quads per row must divide the thread count")
    if not errors:
        divides(errors, t // (p["BN"] // 4), p["BK"], "rows of B per copy pass must divide BK")
    return errors + residency_errors(p, smem_bytes(p), f"{p['STAGES']} stages")


def make_spec(name: str, level: int, title: str, params: dict, doc: str, cls=KMajorBKernel, **extra):
    return cls(name=name, level=level, precision="fp32", title=title, source="v8_cp_async.cu",
               entry="v8_cp_async", params=params, geometry=geometry, constraints=constraints,
               traffic_model=traffic_of(params), doc=doc, fuses_epilogue=True, **extra)


PARAMS = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "RM": 2, "RN": 2, "STAGES": 3, "GROUP_M": 1,
          "MIN_BLOCKS": 1, "KUNROLL": 8}
SPECS = [make_spec("cuda/v8_cp_async", 8, "cp.async ring of 3 shared stages", PARAMS, __doc__,
                   unmodeled="issue slots and occupancy: A arrives by 4-byte cp.async, four LDGSTS per quad, and "
                             "its registers leave one CTA of 8 warps per SM")]
