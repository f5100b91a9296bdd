"""V7 warp tiling: block tile → warp tile (WM×WN) → thread tile (2×2 quads of 4×4).

What changed against V6: threads are placed warp by warp. Each warp owns a WM×WN = 64×32 sub-tile of the
128×128 block tile and its 32 lanes cover it as 8×4 lanes with 2×2 quads (WM/2 and WN/2 apart). In V6 a warp's
lanes spread over the whole 128-column width of the block, so per k a warp read 32 distinct quads of B and 4 of
A (36 × 16 bytes); now it reads 8 quads of B and 16 of A (24 × 16 bytes), a third fewer shared-memory
wavefronts for the same FFMAs, and the lanes of a quarter-warp still read contiguous 128-byte runs.
Why: at 0.25 shared loads per FFMA, shared-memory bandwidth and the LSU pipe are the next limit; a squarer
per-warp footprint is the standard remedy (CUTLASS's warp-level tiles).
Predicted gain: 1.05-1.10× V6. The global → shared staging still stalls every thread twice per k tile
(load, barrier, compute, barrier): V8's target. V8 builds on this warp layout.

Measured: docs/fp32_ladder.md, results/h200/fp32.json.
"""
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.cuda.sgemm.common.sgemm import block_tile_grid, divides, staged_quads_errors, traffic_of


def _threads(p):
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def _constraints(p):
    errors = []
    divides(errors, p["WM"], p["BM"], "WM must divide BM")
    divides(errors, p["WN"], p["BN"], "WN must divide BN")
    divides(errors, 8, p["WM"], "WM must be a multiple of 8 (2 quads of 4 rows per lane)")
    divides(errors, 8, p["WN"], "WN must be a multiple of 8 (2 quads of 4 columns per lane)")
    if not errors and (p["WM"] // 8) * (p["WN"] // 8) != 32:
        errors.append(f"a {p['WM']}×{p['WN']} warp tile with 8×8 per lane needs "
                      f"{(p['WM'] // 8) * (p['WN'] // 8)} lanes, not 32")
    return errors or staged_quads_errors(p, _threads(p))


PARAMS = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32}
SPECS = [
    CudaKernel(
        name="cuda/v7_warptile", level=7, precision="fp32", title="warp tiling: 64×32 warp tiles, 8×8 per lane",
        source="v7_warptile.cu", entry="v7_warptile", params=PARAMS,
        geometry=block_tile_grid(_threads), constraints=_constraints, traffic_model=traffic_of(PARAMS), doc=__doc__,
        unmodeled="latency: every warp waits on each k tile's global loads (load, barrier, compute, barrier), with "
                  "two CTAs per SM to cover them (V8's target)",
    )
]
