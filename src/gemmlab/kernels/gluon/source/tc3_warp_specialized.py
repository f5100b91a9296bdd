"""gluon/tc3's device code: a producer warp streams k-tiles by TMA into the ring, waiting on each slot's `empty`
barrier; the consumer warpgroups (the default partition) wait on `full`, keep one warpgroup_mma in flight and release
the slot before it (cuda/tc3's schedule). The spec and its docstring: kernels/gluon/tc3_warp_specialized.py."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from gemmlab.kernels.gluon.source.common import accumulator_layout


@gluon.jit
def produce(a_desc, b_desc, a_ring, b_ring, full, empty, m0, n0, k_tiles):
    STAGES: gl.constexpr = a_ring.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    stage_bytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
    for kt in range(k_tiles):
        slot = kt % STAGES
        # a fresh mbarrier counts as having completed the phase before its first, so the first pass through the
        # ring waits on nothing
        mbarrier.wait(empty.index(slot), ((kt // STAGES) & 1) ^ 1)
        mbarrier.expect(full.index(slot), stage_bytes)
        tma.async_copy_global_to_shared(a_desc, [m0, kt * BK], full.index(slot), a_ring.index(slot))
        tma.async_copy_global_to_shared(b_desc, [kt * BK, n0], full.index(slot), b_ring.index(slot))


@gluon.jit
def consume(a_ring, b_ring, full, empty, k_tiles, BN: gl.constexpr, num_warps: gl.constexpr):
    STAGES: gl.constexpr = a_ring.shape[0]
    BM: gl.constexpr = a_ring.shape[1]
    acc = gl.zeros((BM, BN), gl.float32, accumulator_layout(BM, BN, num_warps))
    for kt in range(k_tiles):
        slot = kt % STAGES
        mbarrier.wait(full.index(slot), (kt // STAGES) & 1)
        acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, is_async=True)
        # the previous k-tile's wgmma is done: its slot goes back to the producer
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, ))
        mbarrier.arrive(empty.index((kt + STAGES - 1) % STAGES), count=1, pred=kt > 0)
    return (warpgroup_mma_wait(num_outstanding=0, deps=(acc, )), )  # the default partition returns a tuple


@gluon.jit
def tc3_warp_specialized(a_desc, b_desc, c_desc, STAGES: gl.constexpr, PRODUCER_WARPS: gl.constexpr,
                         PRODUCER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr, num_warps: gl.constexpr):
    # CONSUMER_REGS reaches the consumers through the kernel's maxnreg (GluonKernel.maxnreg): the default partition
    # takes what the producer's warpgroup leaves
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    m0 = gl.program_id(1) * BM
    n0 = gl.program_id(0) * BN
    k_tiles = gl.cdiv(a_desc.shape[1], BK)

    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BK, BN], b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(full.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)

    results = gl.warp_specialize([
        (consume, (a_ring, b_ring, full, empty, k_tiles, BN, num_warps)),
        (produce, (a_desc, b_desc, a_ring, b_ring, full, empty, m0, n0, k_tiles)),
    ], [PRODUCER_WARPS], [PRODUCER_REGS])
    acc = results[0]

    for s in gl.static_range(STAGES):
        mbarrier.invalidate(full.index(s))
        mbarrier.invalidate(empty.index(s))
    c_tile = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    c_tile.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [m0, n0], c_tile)  # TMA clips the rows and columns past M and N
    tma.store_wait(pendings=0)
