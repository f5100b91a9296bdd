"""V10 register prefetch: the numba ladder's v10 in CUDA C++, with a larger thread tile chosen per shape.

What changed against V9 (and V8): the tiles no longer flow global → shared by cp.async. Each iteration first
issues the loads of tile t+1 into registers (LDG.128 on the read-only path: one instruction per quad of A and
of B), then runs tile t's FFMAs from one of two shared stages, then stores the registers into the other stage
(A transposed by four STS.32 into the BM+4-padded tile, B by one STS.128) and meets one barrier per tile. V8's
A path moves A in 4-byte cp.async copies (four LDGSTS per quad, each its own L1 transaction); here a quad of A
is one 128-bit load.
Why: in numba this staging beat the cp.async ring (docs/numba.md). The tile is V9's larger one, not numba's,
because on Hopper every non-FFMA instruction costs an FFMA issue slot: ptxas's loop for numba's 128×128×8 with
8×8 per lane (NUMBA_V8 below) is 583 instructions for 512 FFMA, for V9's 256×128×16 with 16×8 per lane 2249
for 2048 (6 LDS.128 per 128 FFMA instead of 4 per 64, half the barriers per FFMA).
Predicted gain: 1.05-1.15× V9 at 4096³ and 8192³ (about 0.9× cuBLAS FP32, at or above numba's v10); at
2048×3072×4096 the 192 tiles fill 1.45 waves of 132 SMs, so there the smaller tiles `gemmlab tune` tries win.

The tile is tuned per shape like V9's (``gemmlab tune --kernels cuda/v10_register_prefetch``); TUNED holds the
H200's choices for when there is no cache, and PARAMS, the fallback, its large-shape one: 128×256×16, the 8×16
mirror of V9's tile, with the same FFMA and LDS.128 counts but half the transposing stores (per thread and k
tile 8 STS.32 + 4 STS.128, against 16 + 2). At 2048×3072×4096, 128×192 with 8×12 per lane makes 256 blocks,
1.94 waves of 132 SMs at one block per SM, where 256×128 or 128×256 makes 192 (1.45 waves).
Edges: rows that are not 16-byte aligned (K or N % 4 != 0, or an offset pointer) take the same template with
four guarded 4-byte loads per quad, chosen by one uniform branch per launch; edge tiles are zero-filled by the
loads' guards and C's stores are guarded (store_tile), so any M, N, K >= 1 is valid.
B handed over as the N×K Bᵀ (x @ w.t()) is read in place (B_KMAJOR=1, set by the plan: KMajorBKernel): its quads
run along K and are stored transposed like A's, into a tile padded like A's; the FFMA loop is unchanged.

Measured: docs/fp32_ladder.md (with the configuration each shape ran), results/h200/fp32.json.
"""
from gemmlab.kernels.cuda.sgemm.common.sgemm import (AutotunedKernel, KMajorBKernel, b_stride, divides,
                                                     residency_errors, traffic_of, warptile_errors, warptile_threads)
from gemmlab.kernels.geometry import Geometry, ceil_div

# Every parameter the kernel source reads; a config must name them all.
PARAM_NAMES = ("BM", "BN", "BK", "WM", "WN", "RM", "RN", "GROUP_M", "MIN_BLOCKS")
STAGES = 2  # registers hold one tile in flight, so a deeper shared ring would buy nothing


threads = warptile_threads


def smem_bytes(p) -> int:
    return 4 * STAGES * p["BK"] * (p["BM"] + 4 + b_stride(p))


def geometry(problem, p):
    tiles = ceil_div(problem.m, p["BM"]) * ceil_div(problem.n, p["BN"])
    return Geometry(grid=(tiles, 1, 1), block=(threads(p), 1, 1), smem=smem_bytes(p))


def quads_per_thread(p) -> tuple[int, int]:
    """(A, B) quads each thread loads per k tile (RegisterTileLoader's a.kQuads and b.kQuads)."""
    t = threads(p)
    return p["BM"] * p["BK"] // 4 // t, p["BK"] * p["BN"] // 4 // t


def constraints(p) -> list[str]:
    errors = warptile_errors(p, PARAM_NAMES)
    if errors:
        return errors
    divides(errors, 4, p["BK"], "BK must be a multiple of 4 (A is loaded in quads along k)")
    if errors:
        return errors
    t = threads(p)
    divides(errors, t, p["BM"] * p["BK"] // 4, "threads must split the A tile's quads evenly")
    divides(errors, t, p["BK"] * p["BN"] // 4, "threads must split the B tile's quads evenly")
    return errors + residency_errors(p, smem_bytes(p), "two stages")


def make_spec(name: str, level: int, title: str, params: dict, doc: str, cls=KMajorBKernel, **extra):
    return cls(name=name, level=level, precision="fp32", title=title, source="v10_register_prefetch.cu",
               entry="v10_register_prefetch", params=params, geometry=geometry, constraints=constraints,
               traffic_model=traffic_of(params), doc=doc, fuses_epilogue=True, **extra)


# numba's v10_register_prefetch tiling. Under __launch_bounds__(256, 2) ptxas spills 4 bytes (the 4-byte path's
# hoisted column guards); unbounded it takes 127 registers, so two blocks are resident per SM all the same.
NUMBA_V8 = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "RM": 2, "RN": 2, "GROUP_M": 1, "MIN_BLOCKS": 1}
# The fallback for a GPU with neither a tune cache nor a TUNED entry: the H200's large-shape winner.
PARAMS = {"BM": 128, "BN": 256, "BK": 16, "WM": 64, "WN": 64, "RM": 2, "RN": 4, "GROUP_M": 1, "MIN_BLOCKS": 1}
_T8x12 = {"BM": 128, "BN": 192, "BK": 16, "WM": 32, "WN": 96, "RM": 2, "RN": 3, "GROUP_M": 1, "MIN_BLOCKS": 1}
_T8x8 = {"BM": 128, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "RM": 2, "RN": 2, "GROUP_M": 1, "MIN_BLOCKS": 1}
# Winners of `gemmlab tune --kernels cuda/v10_register_prefetch` (12 candidates per shape, warm L2), used when
# the local cache has nothing; a shape not here takes the nearest one's (in log space). The suite's shapes from
# M = 512 up, where the nearest of the first three sent 2048x4096x4096 to 128x192 (2.7 waves of 132 SMs) and
# 1024x4096x4096 to the same 1.3 waves.
TUNED: dict[str, dict[str, dict]] = {
    "NVIDIA H200": {
        # 2026-11-30
        "4096x4096x4096": {"params": PARAMS, "ms": 2.921},
        "2048x3072x4096": {"params": _T8x12, "ms": 1.147},
        "8192x8192x8192": {"params": PARAMS, "ms": 23.263},
        # 2026-12-04
        "512x1024x8192": {"params": _T8x8, "ms": 0.8436},
        "1024x1024x8192": {"params": _T8x8, "ms": 0.8449},
        "2048x1024x8192": {"params": _T8x8, "ms": 0.8475},
        "4096x1024x8192": {"params": PARAMS, "ms": 1.459},
        "8192x1024x8192": {"params": PARAMS, "ms": 2.907},
        "1536x1536x1536": {"params": _T8x12, "ms": 0.211},
        "2048x2048x2048": {"params": PARAMS, "ms": 0.3712},
        "3072x3072x3072": {"params": _T8x12, "ms": 1.289},
        "512x4096x4096": {"params": _T8x8, "ms": 0.4232},
        "1024x4096x4096": {"params": PARAMS, "ms": 0.7327},
        "2048x4096x4096": {"params": PARAMS, "ms": 1.461},
        "512x4096x14336": {"params": _T8x8, "ms": 1.471},
        "1024x4096x14336": {"params": PARAMS, "ms": 2.551},
        "2048x4096x14336": {"params": PARAMS, "ms": 5.101},
        "512x14336x4096": {"params": PARAMS, "ms": 1.477},
        "1024x14336x4096": {"params": _T8x12, "ms": 2.915},
        "2048x14336x4096": {"params": PARAMS, "ms": 5.151},
    },
}

SPECS = [make_spec("cuda/v10_register_prefetch", 10, "register prefetch into two shared stages, tile tuned per shape",
                   PARAMS, __doc__, cls=AutotunedKernel, family="cuda/v10_register_prefetch", tuned=TUNED,
                   make=make_spec, unmodeled="issue slots: every non-FFMA instruction of the loop (shared loads, "
                                            "staging stores, address arithmetic) takes an FFMA issue slot")]
