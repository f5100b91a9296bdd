"""The wgmma levels' budgets, checked before anything compiles: the dynamic shared memory of a launch (its ring,
epilogue staging, tc8's scales, the producers' pass) and the registers a block holds from launch to exit."""
from __future__ import annotations

from gemmlab.kernels.geometry import ceil_div

SMEM_LIMIT = 227 * 1024  # opt-in dynamic shared memory per block on sm_90
BARRIER_BYTES = 16  # full + empty mbarrier per stage
ALIGN_SLACK = 1024  # the kernel rounds its dynamic shared memory up to the 1024-byte swizzle alignment


def stage_bytes(bm: int, bn: int) -> int:
    return (bm + bn) * 128


C_BOX_BYTES = 64 * 128  # one TMA box of C: 64 rows of 32 FP32 (tc4's EPI_TMA epilogue)
C_BOX_SYNC_BYTES = 24  # EPI_ASYNC: a staging box's two mbarriers and its origin in C (tc_epilogue.cuh's BoxSync)


def epilogue_bytes(p: dict) -> int:
    """Shared memory of the EPI_TMA epilogue: EPI_BOXES staging boxes of C (two unless set) per consumer
    warpgroup, each with its BoxSync in a build whose fused epilogue runs in producer warps (its defines hold EPI=1
    and EPI_ASYNC=1: WgmmaKernel.defines; a level's parameters alone say only that it may)."""
    per_box = C_BOX_BYTES + (C_BOX_SYNC_BYTES if p.get("EPI", 0) and p.get("EPI_ASYNC", 0) else 0)
    return (p["BM"] // 64) * p.get("EPI_BOXES", 2) * per_box if p.get("EPI_TMA", 0) else 0


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
