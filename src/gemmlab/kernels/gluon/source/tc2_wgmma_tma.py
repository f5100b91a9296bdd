"""gluon/tc2's device code: one BM×BN tile of C per program, K walked through a STAGES-deep ring of TMA-filled
shared-memory slots, each consumed by a warpgroup_mma that is drained before the slot is refilled (cuda/tc2's
schedule). The spec and its docstring: kernels/gluon/tc2_wgmma_tma.py."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from gemmlab.kernels.gluon.source.common import accumulator_layout


@gluon.jit
def tc2_wgmma_tma(a_desc, b_desc, c_desc, STAGES: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    K = a_desc.shape[1]
    m0 = gl.program_id(1) * BM
    n0 = gl.program_id(0) * BN
    k_tiles = gl.cdiv(K, BK)

    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BK, BN], b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(full.index(s), count=1)
    stage_bytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes

    # fill the ring; copies past K are predicated off, and TMA zero-fills a last k-tile's columns past K
    for s in gl.static_range(STAGES):
        live = s < k_tiles
        mbarrier.expect(full.index(s), stage_bytes, pred=live)
        tma.async_copy_global_to_shared(a_desc, [m0, s * BK], full.index(s), a_ring.index(s), pred=live)
        tma.async_copy_global_to_shared(b_desc, [s * BK, n0], full.index(s), b_ring.index(s), pred=live)

    acc = gl.zeros((BM, BN), gl.float32, accumulator_layout(BM, BN, num_warps))
    for kt in range(k_tiles):
        slot = kt % STAGES
        mbarrier.wait(full.index(slot), (kt // STAGES) & 1)
        acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, is_async=True)
        # drained before the slot is refilled, and every warpgroup past its read: cuda/tc2's wgmma_wait<0> and
        # __syncthreads
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
        gl.thread_barrier()
        refill = kt + STAGES < k_tiles
        mbarrier.expect(full.index(slot), stage_bytes, pred=refill)
        k_next = (kt + STAGES) * BK
        tma.async_copy_global_to_shared(a_desc, [m0, k_next], full.index(slot), a_ring.index(slot), pred=refill)
        tma.async_copy_global_to_shared(b_desc, [k_next, n0], full.index(slot), b_ring.index(slot), pred=refill)

    for s in gl.static_range(STAGES):
        mbarrier.invalidate(full.index(s))
    c_tile = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    c_tile.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [m0, n0], c_tile)  # TMA clips the rows and columns past M and N
    tma.store_wait(pendings=0)
