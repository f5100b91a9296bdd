"""Host side shared by the wgmma levels (tc2..tc6), free of the GPU: parameters and their constraints, launch
geometry, tensor-map shapes, the tile order, the stream-K partition and the traffic model. The plan that launches
them (workspaces, tensor maps in the argument struct, pre-passes) is in _tc_plan.py.

Operand staging, decided per problem and layout before anything launches:
- BF16: A (M×K) is K-major and B (K×N) N-major as given; wgmma reads B through its transpose bit. A B handed over
  as the transpose of an N×K matrix (``x @ w.T``) is read K-major in place (B_KMAJOR=1). TMA needs 16-byte row
  strides, so K % 8 (A) or N % 8 (B) sends that operand through a padded copy first (a slower but correct path;
  the kernel's tensor map still has the true width, so the padding is never read).
- TF32, tc2-tc4: tf32 wgmma reads K-major shared-memory operands only, so a row-major B goes through a transpose
  pre-pass into Bᵀ (N×K, row stride K rounded up to 4); the pre-pass moves 8·K·N bytes and is the second launch
  (tc_transpose) in the profiles of results/h200/tensor_cores.json. A B handed over as Bᵀ is read in place.
- TF32, tc5 (``swap_ab``): the kernel computes Cᵀ = Bᵀ·Aᵀ with B as wgmma's register operand, so A and B are
  read as given, padded like BF16's when K % 4 (A) or N % 4 (B).
- FP8 (tc4_persistent_fp8, tc8): fp8 wgmma reads both operands K-major, so A comes M×K and B as the transpose of
  an N×K matrix (what torch._scaled_mm and cuBLASLt take); a row-major K×N B is refused with that reason (its
  transpose would be a pass over B on every call, as large as the TF32 pre-pass in bytes). K % 16 sends both
  through the padded copy. C is BF16 (N % 8 for TMA stores) or FP32 (OUT_BF16=0).

Stream-K (``STREAM_K=1``, tc6): the persistent walk ends in a stream-K tail; ``stream_k_units`` is the Python
model of the device walk (SkWalk in tc_scheduler.cuh), ``stream_k_grid`` picks its grid, and each plan allocates the
partials' workspace and the per-tile flags that the kernel finds in its argument struct.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gemmlab.errors import LayoutError, Refusal, SizeLimitError
from gemmlab.fp8 import E4M3, E5M2
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.cuda.launch.tma import TiledMap
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.spec import INT32_MAX, SM_COUNT, Instrumented, Traffic, tile_walk, tiled_traffic
from gemmlab.problem import Problem, get_precision

SPECS: list = []  # helpers only; the levels register themselves
TC_PRECISIONS = ("bf16", "tf32")  # the unscaled tensor-core precisions: tc1, tc2 and tc3 build one spec of each

SMEM_LIMIT = 227 * 1024  # opt-in dynamic shared memory per block on sm_90
BARRIER_BYTES = 16  # full + empty mbarrier per stage
ALIGN_SLACK = 1024  # the kernel rounds its dynamic shared memory up to the 1024-byte swizzle alignment


def bk(precision: str) -> int:
    """K elements per k-tile: one 128-byte swizzle row (64 bf16, 32 tf32, 128 fp8)."""
    return get_precision(precision).k_tile


def is_fp8(precision: str) -> bool:
    return get_precision(precision).scaling is not None


# the FP8 levels' operand formats and output type, and tc8's per-tensor scales, 0 or 1 each
FP8_OPTIONS = ("A_E5M2", "B_E5M2", "OUT_BF16", "PER_TENSOR")


def fp8_constraints(p: dict, promoted: bool) -> list[str]:
    """The parameter errors of an FP8 level beyond wgmma_constraints (``promoted``: tc8's source, which promotes
    every k-tile into a second accumulator set)."""
    e = [f"{name}={p.get(name)}: 0 or 1" for name in FP8_OPTIONS if p.get(name, 0) not in (0, 1)]
    if p.get("PER_TENSOR", 0) and not promoted:
        e.append("PER_TENSOR=1 is an option of tc8's source (its scales through zero strides)")
    widths = (128, 192) if promoted else (128, 192, 256)
    for name in ("BN", "NARROW_BN"):
        if p.get(name, 0) and p[name] not in widths:
            e.append(f"{name}={p[name]}: " + ("two accumulator sets of BN/2 registers must fit beside each other in "
                                              "a consumer thread's registers (232 at most), and a tile may straddle at "
                                              "most two 128-wide blocks of B's scales: 128 or 192" if promoted else
                                              "the fp8 wgmma shapes here are n128, n192 and n256"))
    if promoted and p.get("BN") in widths and p["BN"] > p.get("CONSUMER_REGS", 232) - 32:
        e.append(f"BN={p['BN']}: the two accumulator sets take BN of a consumer thread's CONSUMER_REGS="
                 f"{p.get('CONSUMER_REGS', 232)} registers, which must leave 32 for the rest")
    defer = p.get("EPI_DEFER", 0)
    if promoted and defer:  # beside the two accumulator sets at 160 registers
        if defer > 1:
            e.append(f"EPI_DEFER={defer}: tc8's consumers hold one box of C beside their two accumulator sets; more "
                     "spill at 160 registers")
        if p.get("SCALE_TMA", 0) == 0:
            e.append(f"EPI_DEFER={defer} with SCALE_TMA=0{' (PER_TENSOR)' if p.get('PER_TENSOR', 0) else ''}: the "
                     "held box spills beside the scales' loads at 160 registers")
    if promoted and p.get("STREAM_K", 0):  # the stream-K walk's state beside what each build already holds spills
        if p.get("SCALE_TMA", 0) == 2:
            e.append("STREAM_K=1 with SCALE_TMA=2: producer warp 1's copy of the stream-K walk spills at the "
                     "producer's 32 registers; the split launches take SCALE_TMA=1")
        elif p.get("SCALE_TMA", 0) == 0 and not p.get("PER_TENSOR", 0):
            e.append("STREAM_K=1 with SCALE_TMA=0: the consumers' scale loads beside the stream-K walk spill at "
                     "160 registers; the split launches take SCALE_TMA=1")
        if p.get("HALVES", 0):
            e.append("STREAM_K=1 with HALVES=1: the two halves in flight beside the stream-K walk spill at 160 "
                     "registers")
    halves = p.get("HALVES", 0)
    if halves and p.get("BN") != 128:
        e.append(f"HALVES=1 with BN={p.get('BN')}: the halves are wgmma m64n64, so BN=128")
    elif halves and p.get("SCALE_TMA", 0) != 1 and not p.get("PER_TENSOR", 0):
        e.append(f"HALVES=1 with SCALE_TMA={p.get('SCALE_TMA', 0)}: beside the two halves in flight, the scales' "
                 "loads (0) or their ring's positions (2) spill at 160 registers")
    tma = p.get("SCALE_TMA", 0)
    if p.get("SCALE_GATE", 0) not in (0, 1):
        e.append(f"SCALE_GATE={p.get('SCALE_GATE')}: 0 (the consumers wait on the scale ring) or 1 (producer warp 0 "
                 "does, before it arms each k-tile's barrier)")
    elif p.get("SCALE_GATE", 0) and tma != 2:
        e.append(f"SCALE_GATE=1 with SCALE_TMA={tma}: it moves the wait on the scale ring (SCALE_TMA=2) to the "
                 "producer")
    if tma not in (0, 1, 2):
        e.append(f"SCALE_TMA={tma}: 0 (block scales loaded by the consumers), 1 (copied with each k-tile by TMA) or "
                 "2 (copied by TMA into a ring of their own)")
    elif tma and not promoted:
        e.append(f"SCALE_TMA={tma} is an option of tc8's source (its block scales copied into shared memory)")
    elif tma and p.get("PER_TENSOR", 0):
        e.append(f"SCALE_TMA={tma} copies block scales for each k-tile; PER_TENSOR=1 has one scale per operand")
    return e


def stage_bytes(bm: int, bn: int) -> int:
    return (bm + bn) * 128


TL_SLOTS = 64  # readings per consumer warpgroup with TIMELINE=1 (Timeline in tc_timeline.cuh, harness/timeline.py)
TIMELINE_SOURCES = ("tc4_persistent.cu", "tc8_block_scaled_fp8.cu")  # the sources that have the stamps
# Dense tensor-core multiply-adds per SM per clock on Hopper: the datasheet's 989.4 BF16 TFLOPS (494.7 TF32, 1979
# FP8) for 132 SMs at 1830 MHz is 4096 (2048, 8192) FLOP per SM per clock.
TENSOR_FMA_PER_SM_CLOCK = {"bf16": 2048, "tf32": 1024, "fp8": 4096, "fp8_block": 4096}
C_BOX_BYTES = 64 * 128  # one TMA box of C: 64 rows of 32 FP32 (tc4's EPI_TMA epilogue)


def epilogue_bytes(p: dict) -> int:
    """Shared memory of the EPI_TMA epilogue: EPI_BOXES staging boxes of C (two unless set) per consumer
    warpgroup."""
    return (p["BM"] // 64) * p.get("EPI_BOXES", 2) * C_BOX_BYTES if p.get("EPI_TMA", 0) else 0


def scale_bytes(p: dict) -> int:
    """Shared memory of tc8's scales (tc8_block_scaled_fp8.cu's scale_area_bytes): per slot, a box of BM + 4 of
    A's, rounded up to 128 bytes, and two 128-byte places for B's boxes of 4; a slot per ring stage with
    SCALE_TMA=1, a ring of twice the stages with SCALE_TMA=2, whose two mbarriers a slot follow the slots."""
    slot = ceil_div(4 * (p["BM"] + 4), 128) * 128 + 256
    tma = p.get("SCALE_TMA", 0)
    return {0: 0, 1: p["STAGES"] * slot, 2: 2 * p["STAGES"] * (slot + 16)}.get(tma, 0)


def pass_bytes(p: dict) -> int:
    """Shared memory of the producer warps' pass over landed k-tiles (tc_round.cuh; the barriers in
    tc_persistent.cuh): a `ready` barrier per ring slot where they round A in place (TF32_ROUND=2), and for the
    3xTF32 source (tc7, the one with a PROMOTE interval) also the small part of each slot's A tile, BM rows of 128
    bytes, after the ring."""
    if "PROMOTE" in p:
        return p["STAGES"] * (p["BM"] * 128 + 8)
    return 8 * p["STAGES"] if p.get("TF32_ROUND", 0) == 2 else 0


def smem_bytes(p: dict) -> int:
    return (p["STAGES"] * (stage_bytes(p["BM"], p["BN"]) + BARRIER_BYTES) + epilogue_bytes(p) + scale_bytes(p)
            + pass_bytes(p) + ALIGN_SLACK)



def launch_registers(threads: int) -> int:
    """Registers a block of ``threads`` holds from launch to exit under __launch_bounds__(threads, 1): ptxas caps
    each thread at 65536 / threads rounded down to the allocation unit of 8 (255 at most, allocated as 256), and
    setmaxnreg only moves registers between the block's warps, so the warpgroups' counts must fit this pool."""
    return threads * min(256, 65536 // threads // 8 * 8)


def wgmma_desc(addr: int, lbo: int, sbo: int) -> int:
    """The 64-bit wgmma shared-memory descriptor (128-byte swizzle), as the kernels' wgmma_desc builds it."""
    return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1 << 62)


def tile_order(tiles_m: int, tiles_n: int, group_m: int) -> list[tuple[int, int]]:
    """The (row, column) of each cluster tile in the order tc4's scheduler hands them out: grouped order, odd
    groups walking their columns right to left (the snake order)."""
    return tile_walk(tiles_m, tiles_n, group_m, snake=True)


# ---- stream-K (tc6) --------------------------------------------------------------------------------------------
SK_MIN_KTILES = 4  # with fewer tiles than SMs, stream-K spreads K over at most tiles·KT / SK_MIN_KTILES CTAs


def stream_k_grid(tiles: int, kt: int, sm_count: int) -> int:
    """CTAs of a stream-K launch: one per SM when the tiles fill them; with fewer tiles than SMs, enough CTAs that
    each takes at least SK_MIN_KTILES k-tiles (a deeper split costs more in fixup than it saves), at least one per
    tile."""
    if tiles >= sm_count:
        return sm_count
    return max(tiles, min(sm_count, tiles * kt // SK_MIN_KTILES))


SK_FILL = 50  # the last partial wave alone is the stream-K region when it fills at least this % of the grid
SK_SKIP_FILL = 70  # ... and no stream-K at all when it fills at least this % (measured on the H200, see tc6)
# A NARROW_BN-wide (n192) tile's cost per output column against the BN-wide (n256) one's: the narrower wgmma
# reads more shared memory per multiply-add, and the per-tile costs weigh more (measured on the H200, see tc4)
NARROW_COST = 1.1


def stream_k_dp_tiles(tiles: int, grid: int, fill: int = SK_FILL, skip: int = SK_SKIP_FILL) -> int:
    """Tiles processed whole (data-parallel), before the stream-K region: all when the waves are full or the last
    one fills at least ``skip`` % of the grid (the fixup would cost more than the little idle time it saves); else
    all but the last partial wave when that fills at least ``fill`` % of the grid (or is the only wave), and all but
    the last full and partial waves when it fills less, so that every CTA's stream-K range holds at least a tile
    (the CTAs that finish a split tile then run their share before its owner needs it)."""
    waves, rest = divmod(tiles, grid)
    if rest == 0 or (waves > 0 and rest * 100 >= skip * grid):
        return tiles
    if waves == 0 or rest * 100 >= fill * grid:
        return waves * grid
    return (waves - 1) * grid


def stream_k_units(tiles: int, grid: int, kt: int, fill: int = SK_FILL,
                   skip: int = SK_SKIP_FILL) -> list[list[tuple[int, int, int]]]:
    """The units (tile, kb, ke: k-tiles [kb, ke) of the tile-th tile in schedule order) of each CTA, in the order
    it runs them: its data-parallel tiles c, c + G, ..., then its contiguous share
    [c·S·KT/G, (c+1)·S·KT/G) of the stream-K region's S·KT iterations, cut at tile boundaries."""
    dp = stream_k_dp_tiles(tiles, grid, fill, skip)
    iters = (tiles - dp) * kt
    out = []
    for c in range(grid):
        units = [(t, 0, kt) for t in range(c, dp, grid)]
        i, end = c * iters // grid, (c + 1) * iters // grid
        while i < end:
            t, kb = dp + i // kt, i % kt
            ke = min(kt, kb + end - i)
            units.append((t, kb, ke))
            i += ke - kb
        out.append(units)
    return out


def stream_k_partials(tiles: int, grid: int, kt: int, fill: int = SK_FILL, skip: int = SK_SKIP_FILL) -> int:
    """Partial accumulators written (and read back by the owners) in one launch: the units that start mid-tile."""
    return sum(kb > 0 for units in stream_k_units(tiles, grid, kt, fill, skip) for _, kb, _ in units)


def narrow_pays(m: int, n: int, p: dict, sm_count: int = 132) -> bool:
    """Whether whole tiles NARROW_BN wide finish an M×N problem sooner than BN-wide ones. Only for problems of more
    BN-wide (cluster) tiles than resident clusters: the busiest cluster runs ceil(tiles / clusters) tiles, so a
    partial last wave costs a whole tile; narrower tiles can fill it better. The busiest cluster's columns,
    ceil(tiles / clusters) · width, are compared with the narrow ones weighted by NARROW_COST."""
    narrow = p.get("NARROW_BN", 0)
    if not narrow or p.get("STREAM_K", 0):
        return False
    cm, cn = p.get("CM", 1), p.get("CN", 1)
    clusters = max(1, sm_count // (cm * cn))
    rows = ceil_div(m, p["BM"] * cm)

    def tiles(width: int) -> int:
        return rows * ceil_div(n, width * cn)

    def busiest(width: int) -> int:
        return ceil_div(tiles(width), clusters) * width

    return tiles(p["BN"]) > clusters and busiest(narrow) * NARROW_COST < busiest(p["BN"])


# Options that one source reads (the levels that take them name them in wgmma_constraints' ``options``)
SOURCE_OPTIONS = {"EPI_LEND": "tc4 FP8's BF16 C staged in the tile's last ring slot too",
                  "HALVES": "tc8's k-tile wgmma in two halves, each promoted while the other runs"}


def wgmma_constraints(p: dict, specialized: bool, swap_ab: bool = False, options: tuple = ()) -> list[str]:
    """The parameter errors of a wgmma level. With ``swap_ab`` (tc5) the wgmma tile is Cᵀ: the consumer
    warpgroups split BN (64 C columns each) and BM is the wgmma N; otherwise they split BM and BN is the N.
    ``options``: the SOURCE_OPTIONS this level's source reads."""
    e = []
    bm, bn, stages = p["BM"], p["BN"], p["STAGES"]
    split, wide = ("BN", "BM") if swap_ab else ("BM", "BN")  # names of the split side and of the wgmma N
    split_v, wide_v = p[split], p[wide]
    if split_v not in (64, 128, 192, 256):
        e.append(f"{split}={split_v}: each consumer warpgroup owns 64 of them, so {split} must be 64, 128, 192 or 256")
    if wide_v not in (64, 128, 192, 256) or (swap_ab and wide_v == 192):
        e.append(f"{wide}={wide_v}: wgmma shapes used here are n64, n128, n192 (not tc5) and n256")
    if stages < 2:
        e.append(f"STAGES={stages}: the ring needs at least 2 slots to overlap loads with math")
    if smem_bytes(p) > SMEM_LIMIT:
        e.append(f"{stages} stages of {bm}x{bn} tiles need {smem_bytes(p)} bytes of shared memory, "
                 f"past the {SMEM_LIMIT}-byte limit")
    warpgroups = split_v // 64 + (1 if specialized else 0)
    if warpgroups * 128 > 1024:
        e.append(f"{split}={split_v} needs {warpgroups * 128} threads, past 1024")
    if specialized:
        consumer, producer = p.get("CONSUMER_REGS", 232), p.get("PRODUCER_REGS", 40)
        if consumer % 8 or producer % 8 or not (24 <= producer <= consumer <= 256):
            e.append("setmaxnreg counts must be multiples of 8 in 24..256, producer <= consumer")
        pool = launch_registers(warpgroups * 128)
        if consumer * 128 * (split_v // 64) + producer * 128 > pool:
            e.append(f"{split_v // 64} consumer warpgroups at {consumer} registers and a producer at {producer} "
                     f"exceed the {pool} registers the block holds at launch (setmaxnreg.inc would wait forever)")
        if wide_v // 2 + 40 > consumer:
            e.append(f"{wide}={wide_v} needs {wide_v // 2} accumulator registers per thread, too many for {consumer}")
    if swap_ab:  # the CN CTAs of a cluster sit side by side along N and split the A tile's rows
        if p.get("CM", 1) != 1:
            e.append("tc5 clusters run along N (CN), not M")
        if p.get("CN", 1) not in (1, 2):
            e.append(f"CN={p.get('CN')}: clusters of 1 or 2 CTAs along N")
    else:  # the CM CTAs of a cluster sit one above the other along M and split the B tile's 64-column boxes
        cm = p.get("CM", 1)
        if cm not in (1, 2):
            e.append(f"CM={cm}: clusters of 1 or 2 CTAs along M")
        elif p["BN"] // 64 < cm:
            e.append(f"CM={cm}: each CTA of the cluster loads at least one of the {p['BN'] // 64} B boxes "
                     f"(BN={p['BN']})")
    if p.get("GROUP_M", 1) < 1:
        e.append("GROUP_M must be at least 1")
    if p.get("STREAM_K", 0) not in (0, 1):
        e.append(f"STREAM_K={p.get('STREAM_K')}: 0 (whole tiles) or 1 (stream-K tail)")
    elif p.get("STREAM_K", 0) and p.get("CM", 1) * p.get("CN", 1) != 1:
        e.append("STREAM_K=1 needs clusters off (CM=1, CN=1): the CTAs of a cluster share multicast k-tiles, so "
                 "they would all have to walk the same units, which the per-CTA stream-K ranges do not")
    if not 0 <= p.get("SK_FILL", SK_FILL) <= p.get("SK_SKIP_FILL", SK_SKIP_FILL) <= 100:
        e.append(f"SK_FILL={p.get('SK_FILL', SK_FILL)}, SK_SKIP_FILL={p.get('SK_SKIP_FILL', SK_SKIP_FILL)}: "
                 "percentages of the grid, 0 <= SK_FILL <= SK_SKIP_FILL <= 100")
    if p.get("EPI_TMA", 0) not in (0, 1):
        e.append(f"EPI_TMA={p.get('EPI_TMA')}: 0 (C stored from registers) or 1 (through shared memory and TMA)")
    elif p.get("EPI_TMA", 0) and (swap_ab or not specialized):
        e.append("EPI_TMA=1 is an option of the tc4_persistent.cu source (tc4, tc6 BF16)")
    if p.get("EPI_BOXES", 2) < 2 or (p.get("EPI_BOXES", 2) != 2 and not p.get("EPI_TMA", 0)):
        e.append(f"EPI_BOXES={p.get('EPI_BOXES')}: staging boxes per consumer warpgroup of the EPI_TMA=1 "
                 "epilogue, at least 2")
    for name, value in SOURCE_OPTIONS.items():
        if p.get(name, 0) not in (0, 1):
            e.append(f"{name}={p.get(name)}: 0 or 1 ({value})")
        elif p.get(name, 0) and name not in options:
            e.append(f"{name}=1 ({value}) is not an option of this level's source")
    if p.get("EPI_LEND", 0) and not p.get("EPI_TMA", 0):
        e.append("EPI_LEND=1 stages C in a ring slot for the TMA-store epilogue (EPI_TMA=1)")
    defer = p.get("EPI_DEFER", 0)
    if defer not in range(5):
        e.append(f"EPI_DEFER={defer}: how many of a tile's 64-column boxes of C wait for the next tile's first "
                 "k-tile, 0 to 4")
    elif defer and not (p.get("OUT_BF16", 0) and p.get("EPI_TMA", 0)):
        e.append(f"EPI_DEFER={defer} holds boxes of BF16 C for the TMA-store epilogue (OUT_BF16=1, EPI_TMA=1)")
    elif defer:
        if p.get("EPI_LEND", 0):
            e.append(f"EPI_DEFER={defer} with EPI_LEND=1: both move a tile's last boxes of C; one or the other")
        if p.get("HALVES", 0):
            e.append(f"EPI_DEFER={defer} with HALVES=1: the halves' loop has no first k-tile of its own to store the "
                     "held boxes under")
        if p.get("STREAM_K", 0):
            e.append(f"EPI_DEFER={defer} with STREAM_K=1: the held words spill beside the stream-K walk")
    if p.get("STREAM_K", 0) and not specialized:
        e.append("STREAM_K=1 is an option of the persistent walk (tc4, tc5 sources)")
    narrow = p.get("NARROW_BN", 0)
    if narrow and (swap_ab or narrow not in (64, 128, 192, 256) or narrow >= p["BN"]
                   or narrow // 64 < p.get("CM", 1)):
        e.append(f"NARROW_BN={narrow}: a wgmma N (64, 128, 192) below BN={p['BN']} with a B box per CTA of the "
                 "cluster, on the tc4_persistent.cu source")
    rnd = p.get("TF32_ROUND", 0)
    if rnd not in (0, 1, 2, 3):
        e.append(f"TF32_ROUND={rnd}: 0 (truncated by the tensor cores), 1 (register operands rounded), 2 (and the "
                 "shared-memory ones, by the producer's pass) or 3 (and A, by a pre-pass)")
    elif rnd in (1, 3) and not swap_ab:
        e.append(f"TF32_ROUND={rnd} rounds the operand that passes through registers, which only tc5's swap has")
    elif rnd == 2 and not specialized:
        e.append("TF32_ROUND=2 needs the producer warpgroup, whose idle warps round the shared-memory tiles")
    if p.get("ROUND_B_SMEM", 0) and (rnd != 2 or swap_ab):
        e.append("ROUND_B_SMEM=1 (the plan's choice for a K-major B in tc4) needs TF32_ROUND=2")
    if p.get("TIMELINE", 0) not in (0, 1):
        e.append(f"TIMELINE={p.get('TIMELINE')}: 0 or 1 (stamp each warpgroup's cycles for gemmlab timeline)")
    elif p.get("TIMELINE", 0) and (swap_ab or not specialized or p.get("STREAM_K", 0)):
        e.append("TIMELINE=1 is an option of the tc4 and tc8 sources walking whole tiles (tc4, tc8, not tc6)")
    return e


ONE_LAUNCH_MAX_K = 512  # past it the in-place pass costs a CTA more k-tiles than the launch it saves


def rounds_a_in_place(problem: Problem, one_launch_mnk: int) -> bool:
    """Whether a TF32_ROUND=3 level runs ``problem`` in one launch, A rounded in shared memory (TF32_ROUND=2): up to
    ``one_launch_mnk`` multiply-adds, K at most ONE_LAUNCH_MAX_K (the pass's cost grows with the k-tiles each CTA
    walks, the launch it saves does not), and A's rows a whole number of 16 bytes (else A is copied into a pitched
    workspace first anyway, which the pre-pass does as it rounds)."""
    m, n, k = problem.shape
    return m * n * k <= one_launch_mnk and k <= ONE_LAUNCH_MAX_K and k % 4 == 0


def wgmma_traffic(precision: str, bm: int, bn: int, cm: int = 1, cn: int = 1, prepass: bool | None = None,
                  stream_k: bool = False, sk_fill: int = SK_FILL, sk_skip: int = SK_SKIP_FILL, whole=None,
                  narrow: dict | None = None, persistent: bool = False, group_m: int = 1, swap_ab: bool = False,
                  epi_tma: bool = False, a_reads: int = 1, a_pass: int = 0, block_scales: bool = False,
                  round_a: bool = False, one_launch_mnk: int = 0):
    """A read once per cluster of CN·BN columns, B once per cluster of CM·BM rows (multicast shares an operand
    within a cluster), C written once; the TF32 transpose pre-pass (tc2-tc4: B read and Bᵀ written) on top. With
    ``stream_k``, each partial accumulator (4·BM·BN bytes) is written once and read once by its tile's owner, for
    the grid that a GPU of ``sm_count`` SMs gets; where no tile is split, ``whole`` (the base level's model).
    ``narrow``: the whole-tile parameters whose NARROW_BN choice (narrow_pays) the launch follows: the tiles are
    NARROW_BN wide there, and a stream-K level runs the base level (``whole``). ``block_scales`` (tc8): each tile
    also reads its rows' A scales and one B scale per 128 of K. ``round_a`` (tc5, tc6 with TF32_ROUND=3): a launch
    of its own before the kernel reads A and writes it rounded to TF32 into the workspace the kernel reads; up to
    ``one_launch_mnk`` multiply-adds (WgmmaKernel.one_launch_mnk, rounds_a_in_place) the producer warps round A in
    place instead (``a_pass`` 2).

    Beneath the L2 traffic: each consumer warpgroup's wgmma reads its 64 rows of A and the tile's BN columns of B
    from shared memory per k (with ``swap_ab``, all BM rows of A and its 64 columns of B), after TMA wrote each
    CTA's A and B tiles there, and ``epi_tma`` stages C there once more on its way out; ``a_reads``: how many times
    each warpgroup's wgmmas read its A (tc7's three products read A's big part twice and its small part once),
    ``a_pass``: A-tile-sized accesses per k-tile of the producer warps' pass (tc_round.cuh: a read and a write, 2,
    where they round A in place or write its small part). A ``persistent`` grid
    walks its (cluster) tiles ``group_m`` rows at a time in the snake order, one wave per resident cluster; the
    other levels launch a 2-D grid, row-major, as many CTAs at a time as the SMs hold."""
    if prepass is None:  # the tensor cores read this B K-major only, and it comes row-major into shared memory
        prec = get_precision(precision)
        prepass = not (prec.reads_b_n_major or prec.kmajor_b or swap_ab)

    def model(problem: Problem, sm_count: int = SM_COUNT, params: dict | None = None) -> Traffic:
        # the tile the spec's own parameters name (WgmmaKernel.traffic): a pinned configuration's or a bench
        # --variant's, where they differ from those the model was registered with
        p = params or {}
        if stream_k and whole is not None and params is not None and not p.get("STREAM_K", 0):  # the base level's
            return whole(problem, sm_count, params)
        bm_, cm_, cn_, group = p.get("BM", bm), p.get("CM", cm), p.get("CN", cn), p.get("GROUP_M", group_m)
        fill, skip = p.get("SK_FILL", sk_fill), p.get("SK_SKIP_FILL", sk_skip)
        narrow_ = p if "NARROW_BN" in p and narrow is not None else narrow
        m, n, k = problem.shape
        pre_round, a_pass_ = round_a, a_pass
        if round_a and rounds_a_in_place(problem, one_launch_mnk):
            pre_round, a_pass_ = False, 2
        bn_ = p.get("BN", bn)
        if narrow_ is not None and narrow_pays(m, n, narrow_, sm_count):
            if whole is not None:
                return whole(problem, sm_count)
            bn_ = narrow_["NARROW_BN"]
        tiles, kt = ceil_div(m, bm_) * ceil_div(n, bn_), ceil_div(k, bk(precision))
        grid = stream_k_grid(tiles, kt, sm_count) if stream_k else 0
        if stream_k and whole is not None and stream_k_dp_tiles(tiles, grid, fill, skip) == tiles:
            return whole(problem, sm_count)
        wave = None  # a 2-D grid: as many CTAs at once as the SMs hold
        if stream_k:
            wave = grid
        elif persistent:  # one wave of resident clusters, never more than the tiles
            wave = max(1, min(ceil_div(m, bm_ * cm_) * ceil_div(n, bn_ * cn_), sm_count // (cm_ * cn_)))
        # a warpgroup's wgmma tile: HALVES (tc8) issues each k-tile as two of half the width, reading A for each
        warp = (bm_, 64) if swap_ab else (64, bn_ // 2 if p.get("HALVES", 0) else bn_)
        t = tiled_traffic(problem, bm_, bn_, warp=warp, group_m=group if wave else 1, snake=bool(wave),
                          wave=wave, cluster=(cm_, cn_))
        read, write, smem, walk = t.global_read, t.global_write, t.smem, t.walk
        basis = (f"A once per {bn_ * cn_}-column {'cluster' if cn_ > 1 else 'tile'}, "
                 f"B once per {bm_ * cm_}-row {'cluster' if cm_ > 1 else 'tile'}")
        if epi_tma:
            smem += 2 * problem.prec.output_bytes * walk.tiles_m * bm_ * cm_ * walk.tiles_n * bn_ * cn_
        if a_reads > 1 or a_pass_:  # per output element and k: A's share of a warp's reads is 1 / WN, a tile's 1 / BN
            area = walk.tiles_m * bm_ * cm_ * walk.tiles_n * bn_ * cn_ * k
            smem += problem.prec.input_bytes * area * ((a_reads - 1) / warp[1] + a_pass_ / bn_)
        extra = 0.0
        if prepass:
            read += 4 * k * n
            write += 4 * k * n
            extra = 8 * k * n
            basis += ", plus the Bᵀ pre-pass (read B, write Bᵀ)"
        if pre_round:
            read += 4 * m * k
            write += 4 * m * k
            extra += 8 * m * k
            basis += ", plus the rounding pre-pass (read A, write it rounded to TF32)"
        if stream_k:
            partials = stream_k_partials(tiles, grid, kt, fill, skip)
            read += 4 * bm_ * bn_ * partials
            write += 4 * bm_ * bn_ * partials
            walk = dataclasses.replace(walk, split_tail=tiles - stream_k_dp_tiles(tiles, grid, fill, skip))
            basis += f", plus {partials} stream-K partials written and read back ({sm_count} SMs)"
        if block_scales:
            kb, tiles_m, tiles_n = ceil_div(k, 128), ceil_div(m, bm_), ceil_div(n, bn_)
            read += 4 * kb * (m * tiles_n + tiles_m * tiles_n)
            basis += ", plus each tile's A and B scales"
        return Traffic(read, write, basis, l2_read=read, l2_write=write, smem=smem, walk=walk, prepass=extra)

    return model


@dataclass(frozen=True, kw_only=True)
class WgmmaKernel(CudaKernel):
    """A TMA + wgmma level. ``kind`` picks the launch shape: plain (tc2), specialized (tc3), persistent (tc4,
    tc5). ``swap_ab`` (tc5, TF32): the kernel computes Cᵀ = Bᵀ·Aᵀ from A and B as given, no pre-pass."""

    kind: str = "plain"
    swap_ab: bool = False
    int32_indices: bool = False  # C offsets are 64-bit; M, N, K themselves must fit an int (checked below)
    # STREAM_K=1 (tc6): what runs where no tile is split, the base level's parameters, its clusters included
    whole_tiles: dict | None = None
    # TF32_ROUND=3 levels: up to this many multiply-adds (M·N·K), A is rounded in shared memory (TF32_ROUND=2), one
    # launch instead of the pre-pass's two (for_problem, rounds_a_in_place)
    one_launch_mnk: int = 0
    TIMELINE_SLOTS: ClassVar[int] = TL_SLOTS

    @property
    def k_tile(self) -> int:
        """K elements per k-tile: one 128-byte swizzle row of the operands."""
        return bk(self.precision)

    @property
    def layouts(self) -> frozenset:
        """Row-major operands; and B as the transpose of an N×K matrix wherever B is a shared-memory operand
        (wgmma reads it K-major: TF32 then needs no pre-pass), so not in tc5's swap, whose B goes through
        registers from an N-major tile. FP8: B as the transpose of an N×K matrix only."""
        if self.fp8:
            return frozenset({Layout(b=COL)})
        return frozenset({ROW_MAJOR} if self.swap_ab else {ROW_MAJOR, Layout(b=COL)})

    def layout_refusal(self, layout: Layout) -> str:
        if not self.fp8:
            return super().layout_refusal(layout)
        return (f"{self.name}: fp8 wgmma reads both operands K-major, so B must come as the transpose of an N×K "
                "matrix (w.t(), as torch._scaled_mm takes it), not row-major K×N: transposing B on every call would "
                "move as many bytes again as the product reads")

    @property
    def fp8(self) -> bool:
        return is_fp8(self.precision)

    @property
    def args_struct(self):
        """The kernel's one parameter (tc_args.cuh): TcArgs, or Fp8Args with the scales' addresses."""
        from gemmlab.kernels.cuda._tc_plan import FP8_ARGS, TC_ARGS

        return FP8_ARGS if self.fp8 else TC_ARGS

    def defines(self) -> dict:
        d = {k: v for k, v in self.params.items() if k != "NARROW_BN"}  # a host-side choice (for_problem)
        d.update(self.prec.tensor_core_defines)
        return d

    # ---- FP8 operand formats and output type ------------------------------------------------------------------
    @property
    def formats(self) -> tuple[str, str]:
        """The FP8 formats of A and B (ml_dtypes names)."""
        return tuple(E5M2 if self.params.get(f"{x}_E5M2", 0) else E4M3 for x in "AB")

    def output_dtype(self, problem: Problem):
        if self.fp8 and not self.params.get("OUT_BF16", 1):
            import numpy as np

            return np.dtype(np.float32)
        return problem.output_dtype()

    def make_inputs(self, problem: Problem, seed: int = 0, xp=None):
        import numpy as np

        return problem.make_inputs(seed, np if xp is None else xp, formats=self.formats if self.fp8 else None)

    def for_formats(self, a: str, b: str, out: str) -> "WgmmaKernel":
        """This FP8 level for operands in formats ``a``, ``b`` (float8_e4m3fn or float8_e5m2) and C in ``out``
        (bfloat16 or float32): each its own binary."""
        if (a, b, out) == (*self.formats, str(self.output_dtype(Problem(1, 1, 1, self.precision)))):
            return self
        bad = [x for x in (a, b) if x not in (E4M3, E5M2)] + ([out] if out not in ("bfloat16", "float32") else [])
        if not self.fp8 or bad:
            return super().for_formats(a, b, out)
        changes = {"A_E5M2": int(a == E5M2), "B_E5M2": int(b == E5M2), "OUT_BF16": int(out == "bfloat16")}
        if out != "bfloat16" and "EPI_DEFER" in {**self.params, **(self.whole_tiles or {})}:
            changes["EPI_DEFER"] = 0  # it holds boxes of C as BF16 words
        return self.with_params(changes)

    def with_params(self, changes: dict, **fields) -> "WgmmaKernel":
        """This spec with ``changes`` to its parameters (and other ``fields`` replaced); a stream-K level's
        whole-tile launches (``whole_tiles``, where no tile is split) take the changes to the parameters they have."""
        import dataclasses

        whole = self.whole_tiles and {**self.whole_tiles,
                                      **{k: v for k, v in changes.items() if k in self.whole_tiles}}
        return dataclasses.replace(self, params={**self.params, **changes}, whole_tiles=whole, **fields)

    def config_error(self) -> str | None:
        why = super().config_error()
        if not why and not self.prec.tf32_multiply and self.params.get("TF32_ROUND", 0):
            return f"TF32_ROUND={self.params['TF32_ROUND']}: rounding to TF32 is an option of the TF32 levels"
        return why

    def unsupported(self, gpu) -> str | None:
        if tuple(gpu.cc) != (9, 0):
            return (f"{self.name} uses wgmma, TMA and setmaxnreg, which exist on sm_90a (Hopper) only; "
                    f"{gpu.name} is sm_{gpu.cc[0]}{gpu.cc[1]}")
        return None

    def is_valid(self, problem: Problem) -> str | None:
        why = super().is_valid(problem)
        if why:
            return why
        if max(problem.shape) > INT32_MAX // 2:
            return Refusal(f"{problem.label()}: a dimension past 2^30 does not fit the kernel's int coordinates",
                           SizeLimitError)
        if self.kind != "persistent" and ceil_div(problem.m, self.params["BM"]) > 65535:
            return Refusal(f"M={problem.m} needs more than 65535 row blocks in gridDim.y", SizeLimitError)
        return None

    def launch_geometry(self, problem: Problem, sm_count: int = 132, max_clusters: int | None = None) -> Geometry:
        """Blocks, threads and shared memory of one launch. The persistent grid has one CTA per SM, or, with
        clusters, as many clusters as can be resident at once (``max_clusters``, from the occupancy query): a
        GPC with an odd number of free SMs cannot host a 2-CTA cluster on its last SM, and a cluster that is not
        resident would run after the others, doubling the time."""
        runs = self.for_problem(problem, sm_count)
        if runs is not self:
            return runs.launch_geometry(problem, sm_count, max_clusters)
        p = dict(self.params)
        bm, bn = p["BM"], p["BN"]
        consumers = (bn if self.swap_ab else bm) // 64
        threads = (consumers + (0 if self.kind == "plain" else 1)) * 128
        smem = smem_bytes(p)
        if self.kind == "persistent":
            cm, cn = p.get("CM", 1), p.get("CN", 1)
            size = cm * cn
            tiles = ceil_div(problem.m, bm * cm) * ceil_div(problem.n, bn * cn)
            if p.get("STREAM_K", 0):  # clusters off (constraints)
                grid = stream_k_grid(tiles, ceil_div(problem.k, bk(self.precision)), sm_count)
                return Geometry(grid=(grid, 1, 1), block=(threads, 1, 1), smem=smem)
            resident = sm_count // size if max_clusters is None else min(max_clusters, sm_count // size)
            clusters = max(1, min(tiles, resident))
            return Geometry(grid=(clusters * size, 1, 1), block=(threads, 1, 1), smem=smem)
        return Geometry(grid=(ceil_div(problem.n, bn), ceil_div(problem.m, bm), 1), block=(threads, 1, 1),
                        smem=smem)

    def cluster(self) -> tuple[int, int, int] | None:
        size = self.params.get("CM", 1) * self.params.get("CN", 1)
        return (size, 1, 1) if self.kind == "persistent" and size > 1 else None

    def traffic(self, problem: Problem, sm_count: int = SM_COUNT) -> Traffic:
        """wgmma_traffic's model at this spec's own tile (BM, BN, CM, CN, GROUP_M, NARROW_BN): the registered
        level's, a pinned configuration's or a bench --variant's alike."""
        return self.traffic_model(problem, sm_count, params=dict(self.params))

    def for_problem(self, problem: Problem, sm_count: int = 132) -> "WgmmaKernel":
        """The spec that runs ``problem``: a TF32_ROUND=3 level with ``one_launch_mnk``, TF32_ROUND=2 where
        rounds_a_in_place says so; with NARROW_BN, NARROW_BN-wide tiles where they fill the last wave better
        (narrow_pays); with STREAM_K, the base level where no tile is split; else this one."""
        import dataclasses

        p = self.params
        if p.get("TF32_ROUND", 0) == 3 and rounds_a_in_place(problem, self.one_launch_mnk):
            return dataclasses.replace(self, params={**p, "TF32_ROUND": 2}).for_problem(problem, sm_count)
        if p.get("STREAM_K", 0):
            if self.stream_k_tiles(problem, sm_count):
                return self
            return self.without_stream_k().for_problem(problem, sm_count)
        if narrow_pays(problem.m, problem.n, p, sm_count):
            return dataclasses.replace(self, params={**p, "BN": p["NARROW_BN"], "NARROW_BN": 0})
        return self

    def instrumented(self, problem: Problem, sm_count: int = 132) -> Instrumented | None:
        """tc4_persistent.cu and tc8's source walking whole tiles stamp their cycles with TIMELINE=1 (the
        configuration that runs ``problem``: tc4's tile width is chosen per problem)."""
        runs = self.for_problem(problem, sm_count)
        if runs.source not in TIMELINE_SOURCES or runs.params.get("STREAM_K", 0):
            return None
        import dataclasses

        p = runs.params
        ideal = p["BM"] * p["BN"] * bk(self.precision) / TENSOR_FMA_PER_SM_CLOCK[self.precision]
        return Instrumented(dataclasses.replace(runs, params={**p, "TIMELINE": 1}), bk(self.precision), ideal)

    def configurations(self, formats: bool = False) -> list["WgmmaKernel"]:
        """Every binary this spec can launch whose memory accesses differ, each pinned (gemmlab verify --sanitize
        runs them all): the tile widths, the TF32 levels' two ways of rounding A (``one_launch_mnk``), and for FP8
        both output types. With ``formats``, also every FP8 format pair, which changes only the wgmma instruction (the
        compile tests build them all)."""
        import dataclasses

        if not self.params.get("NARROW_BN", 0):
            specs = [self]
        else:
            wide = {**self.params, "NARROW_BN": 0}
            narrow = {**wide, "BN": self.params["NARROW_BN"]}
            specs = [dataclasses.replace(self, params=wide), dataclasses.replace(self, params=narrow)]
        if self.one_launch_mnk:  # small problems round A in shared memory: another binary, and each pinned
            specs = [dataclasses.replace(s, one_launch_mnk=0) for s in specs]
            specs.append(dataclasses.replace(specs[0], params={**specs[0].params, "TF32_ROUND": 2}))
        if not self.fp8:
            return specs
        pairs = [(a, b) for a in (E4M3, E5M2) for b in (E4M3, E5M2)] if formats else [self.formats]
        return [s.for_formats(a, b, out) for s in specs for a, b in pairs for out in ("bfloat16", "float32")]

    def stream_k_tiles(self, problem: Problem, sm_count: int = 132) -> int:
        """How many tiles of ``problem`` the stream-K walk splits (0: whole waves, a last wave nearly full, or a
        base level whose narrower tiles fill it)."""
        if narrow_pays(problem.m, problem.n, self.without_stream_k().params, sm_count):
            return 0
        p = self.params
        tiles = ceil_div(problem.m, p["BM"]) * ceil_div(problem.n, p["BN"])
        grid = stream_k_grid(tiles, ceil_div(problem.k, bk(self.precision)), sm_count)
        return tiles - stream_k_dp_tiles(tiles, grid, p.get("SK_FILL", SK_FILL), p.get("SK_SKIP_FILL", SK_SKIP_FILL))

    def without_stream_k(self) -> "WgmmaKernel":
        """The kernel launched where no tile is split: the base level's (``whole_tiles``), the same binary; else
        this spec with STREAM_K=0 (the SK_* defines are read only under STREAM_K=1)."""
        import dataclasses

        params = self.whole_tiles or {k: v for k, v in self.params.items()
                                      if k not in ("STREAM_K", "SK_FILL", "SK_SKIP_FILL")}
        if "TF32_ROUND" in self.params:  # how A is rounded does not depend on whether a tile is split
            params = {**params, "TF32_ROUND": self.params["TF32_ROUND"]}
        return dataclasses.replace(self, params=dict(params), whole_tiles=None)

    def operand_maps(self, problem: Problem, lda: int, ldb: int, b_kmajor: bool = False) -> tuple[TiledMap, TiledMap]:
        """Tensor maps of the operands the kernel reads: A (M×K, row stride lda), and B (K×N, N-major, row stride
        ldb) for BF16 and swap_ab TF32, or K-major (N×K, row stride ldb: Bᵀ) with ``b_kmajor`` and for the other
        TF32 levels, whose pre-pass writes Bᵀ."""
        m, n, k = problem.shape
        bm, kt = self.params["BM"], bk(self.precision)
        dtype = self.prec.tma_dtype
        if self.swap_ab:  # each CTA of a cluster loads BM/CN rows of A; B in 32-column boxes (128-byte rows)
            return (TiledMap(dtype, m, k, lda, bm // self.params.get("CN", 1), kt), TiledMap(dtype, k, n, ldb, kt, 32))
        a = TiledMap(dtype, m, k, lda, bm, kt)
        if b_kmajor or not self.prec.reads_b_n_major:
            return a, TiledMap(dtype, n, k, ldb, 64, kt)
        return a, TiledMap(dtype, k, n, ldb, kt, 64)

    def c_map(self, problem: Problem) -> TiledMap:
        """C's tensor map for the EPI_TMA epilogue: M×N in boxes of 64 rows of 128 bytes, 32 FP32 or 64 BF16
        columns."""
        if self.output_dtype(problem).itemsize == 2:
            return TiledMap("bf16", problem.m, problem.n, problem.n, 64, 64)
        return TiledMap("fp32", problem.m, problem.n, problem.n, 64, 32)

    def c_by_tma(self, problem: Problem, ptr: int) -> bool:
        """Whether TMA can store into C at ``ptr``: a 16-byte aligned base and whatever else C's map needs."""
        return ptr % 16 == 0 and not self.c_map(problem).errors()

    def make_plan(self, problem: Problem, layout: Layout, info, gpu=None):
        from gemmlab.kernels.cuda import _tc_plan

        if layout not in self.layouts:
            raise LayoutError(f"{self.name} reads {', '.join(sorted(x.label() for x in self.layouts))} in place, "
                              f"not {layout.label()}")
        return _tc_plan.make_plan(self.for_problem(problem, info.sm_count), problem, layout, info,
                                  gpu or _tc_plan.RESOURCES)
