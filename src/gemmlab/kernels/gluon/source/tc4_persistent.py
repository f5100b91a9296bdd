"""gluon/tc4's device code: tc3's producer warp and consumer warpgroups in a persistent grid that walks the output
tiles in grouped snake order (spec.tile_walk), the ring's phases running on across tiles so the producer loads the
next tile while the consumers store this one. The accumulator is two BM×BN/2 halves, each stored through its own
pass of one staging tile and a TMA store. The FP8 entry reads B K-major (an N×K matrix, as FP8 wgmma must) and scales
the accumulators by the two per-tensor scales before the store. The specs: kernels/gluon/tc4_persistent.py."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from gemmlab.kernels.gluon.source.common import accumulator_layout


@gluon.jit
def tile_origin(t, tiles_m, tiles_n, GROUP_M: gl.constexpr):
    """Tile ``t`` of the walk: GROUP_M tile rows at a time, column by column, odd groups right to left."""
    group = GROUP_M * tiles_n
    first = (t // group) * GROUP_M
    rows = gl.minimum(tiles_m - first, GROUP_M)
    r = t % group
    tn = r // rows
    tn = gl.where((t // group) % 2 == 1, tiles_n - 1 - tn, tn)
    return first + r % rows, tn


@gluon.jit
def produce(a_desc, b_desc, a_ring, b_ring, full, empty, tiles_m, tiles_n, k_tiles, GROUP_M: gl.constexpr,
            KMAJOR_B: gl.constexpr):
    STAGES: gl.constexpr = a_ring.shape[0]
    BM: gl.constexpr = a_ring.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_ring.shape[1] if KMAJOR_B else b_ring.shape[2]
    stage_bytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
    count = 0  # k-tiles loaded so far: the ring's slot and phase run on across tiles
    for t in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        tm, tn = tile_origin(t, tiles_m, tiles_n, GROUP_M)
        for kt in range(k_tiles):
            slot = count % STAGES
            mbarrier.wait(empty.index(slot), ((count // STAGES) & 1) ^ 1)
            mbarrier.expect(full.index(slot), stage_bytes)
            tma.async_copy_global_to_shared(a_desc, [tm * BM, kt * BK], full.index(slot), a_ring.index(slot))
            if KMAJOR_B:
                tma.async_copy_global_to_shared(b_desc, [tn * BN, kt * BK], full.index(slot), b_ring.index(slot))
            else:
                tma.async_copy_global_to_shared(b_desc, [kt * BK, tn * BN], full.index(slot), b_ring.index(slot))
            count += 1


@gluon.jit
def consume(c_desc, scale_a, scale_b, a_ring, b_ring, full, empty, tiles_m, tiles_n, k_tiles, GROUP_M: gl.constexpr,
            KMAJOR_B: gl.constexpr, num_warps: gl.constexpr):
    STAGES: gl.constexpr = a_ring.shape[0]
    BM: gl.constexpr = a_ring.shape[1]
    BN: gl.constexpr = b_ring.shape[1] if KMAJOR_B else b_ring.shape[2]
    HALF: gl.constexpr = BN // 2
    layout: gl.constexpr = accumulator_layout(BM, HALF, num_warps, a_ring.dtype.primitive_bitwidth)
    c_tile = gl.allocate_shared_memory(c_desc.dtype, [BM, HALF], c_desc.layout)
    count = 0
    for t in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        tm, tn = tile_origin(t, tiles_m, tiles_n, GROUP_M)
        left = gl.zeros((BM, HALF), gl.float32, layout)
        right = gl.zeros((BM, HALF), gl.float32, layout)
        for kt in range(k_tiles):
            slot = count % STAGES
            mbarrier.wait(full.index(slot), (count // STAGES) & 1)
            b = b_ring.index(slot)
            if KMAJOR_B:  # an N×K tile: wgmma reads its transpose view
                b_left = b.slice(0, HALF, dim=0).permute((1, 0))
                b_right = b.slice(HALF, HALF, dim=0).permute((1, 0))
            else:
                b_left = b.slice(0, HALF, dim=1)
                b_right = b.slice(HALF, HALF, dim=1)
            left = warpgroup_mma(a_ring.index(slot), b_left, left, is_async=True)
            right = warpgroup_mma(a_ring.index(slot), b_right, right, is_async=True)
            # the previous k-tile's two wgmma groups are done: its slot goes back to the producer
            left, right = warpgroup_mma_wait(num_outstanding=2, deps=(left, right))
            mbarrier.arrive(empty.index((count + STAGES - 1) % STAGES), count=1, pred=kt > 0)
            count += 1
        left, right = warpgroup_mma_wait(num_outstanding=0, deps=(left, right))
        mbarrier.arrive(empty.index((count + STAGES - 1) % STAGES), count=1)
        if scale_a is not None:
            scale = gl.load(scale_a) * gl.load(scale_b)
            left = left * scale
            right = right * scale
        # the last tile's store has read the staging tile before it is written again
        tma.store_wait(pendings=0)
        c_tile.store(left.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [tm * BM, tn * BN], c_tile)  # clipped at M and N
        tma.store_wait(pendings=0)
        c_tile.store(right.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [tm * BM, tn * BN + HALF], c_tile)
    tma.store_wait(pendings=0)


@gluon.jit
def walk(a_desc, b_desc, c_desc, scale_a, scale_b, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
         KMAJOR_B: gl.constexpr, PRODUCER_WARPS: gl.constexpr, PRODUCER_REGS: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[0] if KMAJOR_B else b_desc.block_type.shape[1]
    tiles_m = gl.cdiv(a_desc.shape[0], BM)
    tiles_n = gl.cdiv(c_desc.shape[1], BN)
    k_tiles = gl.cdiv(a_desc.shape[1], BK)

    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(full.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)

    gl.warp_specialize([
        (consume, (c_desc, scale_a, scale_b, a_ring, b_ring, full, empty, tiles_m, tiles_n, k_tiles, GROUP_M, KMAJOR_B,
                   num_warps)),
        (produce, (a_desc, b_desc, a_ring, b_ring, full, empty, tiles_m, tiles_n, k_tiles, GROUP_M, KMAJOR_B)),
    ], [PRODUCER_WARPS], [PRODUCER_REGS])


# CONSUMER_REGS reaches the consumers through the kernel's maxnreg (GluonKernel.maxnreg)
@gluon.jit
def tc4_persistent(a_desc, b_desc, c_desc, STAGES: gl.constexpr, GROUP_M: gl.constexpr, PRODUCER_WARPS: gl.constexpr,
                   PRODUCER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr, num_warps: gl.constexpr):
    walk(a_desc, b_desc, c_desc, None, None, STAGES, GROUP_M, False, PRODUCER_WARPS, PRODUCER_REGS, num_warps)


@gluon.jit
def tc4_persistent_fp8(a_desc, b_desc, c_desc, scale_a, scale_b, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                       PRODUCER_WARPS: gl.constexpr, PRODUCER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                       num_warps: gl.constexpr):
    walk(a_desc, b_desc, c_desc, scale_a, scale_b, STAGES, GROUP_M, True, PRODUCER_WARPS, PRODUCER_REGS, num_warps)
