"""gluon/tc8's device code: gluon/tc4's persistent walk (tile_origin) with a producer warp and BM/64 consumer
warpgroups, each a partition of its own that computes 64 rows of the tile. Per k-tile (128 of K, one scale block) a
consumer runs its wgmma from zero into `part`, waits for them, gives the slot back and adds part · scale_a[rows] ·
scale_b[block] into its FP32 accumulator: cuda/tc8's promotion. The scales (gemmlab.fp8's layouts: A's (K/128, M),
B's (N/128, K/128), row-major) are loaded from global memory a k-tile ahead. B comes N×K, as FP8 wgmma reads it.
The spec: kernels/gluon/tc8_block_scaled_fp8.py."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from gemmlab.kernels.gluon.source.common import accumulator_layout
from gemmlab.kernels.gluon.source.tc4_persistent import tile_origin


@gluon.jit
def produce(a_desc, b_desc, a_ring, b_ring, full, empty, tiles_m, tiles_n, k_tiles, GROUP_M: gl.constexpr):
    STAGES: gl.constexpr = b_ring.shape[0]
    ROWS: gl.constexpr = a_desc.block_type.shape[0]  # a warpgroup's rows: one box of A each
    WGS: gl.constexpr = a_ring.shape[0] // STAGES
    BN: gl.constexpr = b_ring.shape[1]
    BK: gl.constexpr = b_ring.shape[2]
    stage_bytes: gl.constexpr = a_desc.block_type.nbytes * WGS + b_desc.block_type.nbytes
    count = 0  # k-tiles loaded so far: the ring's slot and phase run on across tiles
    for t in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        tm, tn = tile_origin(t, tiles_m, tiles_n, GROUP_M)
        for kt in range(k_tiles):
            slot = count % STAGES
            mbarrier.wait(empty.index(slot), ((count // STAGES) & 1) ^ 1)
            mbarrier.expect(full.index(slot), stage_bytes)
            for w in gl.static_range(WGS):
                tma.async_copy_global_to_shared(a_desc, [tm * (WGS * ROWS) + w * ROWS, kt * BK], full.index(slot),
                                                a_ring.index(slot * WGS + w))
            tma.async_copy_global_to_shared(b_desc, [tn * BN, kt * BK], full.index(slot), b_ring.index(slot))
            count += 1


@gluon.jit
def consume(c_desc, scale_a, scale_b, a_ring, b_ring, c_tiles, full, empty, tiles_m, tiles_n, k_tiles,
            GROUP_M: gl.constexpr, WG: gl.constexpr):
    STAGES: gl.constexpr = b_ring.shape[0]
    WGS: gl.constexpr = a_ring.shape[0] // STAGES
    ROWS: gl.constexpr = a_ring.shape[1]
    BN: gl.constexpr = b_ring.shape[1]
    layout: gl.constexpr = accumulator_layout(ROWS, BN, 4, a_ring.dtype.primitive_bitwidth)
    M = c_desc.shape[0]
    rows = WG * ROWS + gl.arange(0, ROWS, gl.SliceLayout(1, layout))  # of the tile
    c_tile = c_tiles.index(WG)
    part = gl.zeros((ROWS, BN), gl.float32, layout)  # a k-tile's products; its values never read (use_acc=False)
    count = 0
    for t in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        tm, tn = tile_origin(t, tiles_m, tiles_n, GROUP_M)
        m = tm * (WGS * ROWS) + rows
        live = m < M  # rows past M: TMA zero-filled their A, and their C is clipped from the store
        b_scales = scale_b + (tn * BN // 128) * k_tiles  # the tile's row of B's (N/128, K/128) scales
        sa = gl.load(scale_a + m, mask=live, other=0.0)  # k-block 0 of A's (K/128, M) scales
        sb = gl.load(b_scales)
        acc = gl.zeros((ROWS, BN), gl.float32, layout)
        for kt in range(k_tiles):
            slot = count % STAGES
            mbarrier.wait(full.index(slot), (count // STAGES) & 1)
            part = warpgroup_mma(a_ring.index(slot * WGS + WG), b_ring.index(slot).permute((1, 0)), part,
                                 use_acc=False, is_async=True)
            # the next k-tile's scales in flight under this one's wgmma (the last k-tile reloads its own)
            kn = gl.minimum(kt + 1, k_tiles - 1)
            sa_next = gl.load(scale_a + kn * M + m, mask=live, other=0.0)
            sb_next = gl.load(b_scales + kn)
            part = warpgroup_mma_wait(num_outstanding=0, deps=(part, ))
            mbarrier.arrive(empty.index(slot), count=1)
            acc += part * gl.expand_dims(sa * sb, 1)  # the promotion: FP32 FFMA on the CUDA cores
            sa = sa_next
            sb = sb_next
            count += 1
        # the last tile's store has read the staging tile before it is written again
        tma.store_wait(pendings=0)
        c_tile.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [tm * (WGS * ROWS) + WG * ROWS, tn * BN], c_tile)  # clipped at M, N
    tma.store_wait(pendings=0)


# CONSUMER_REGS reaches the default partition (consumer 0) through the kernel's maxnreg (GluonKernel.maxnreg); the
# other consumers ask for it themselves
@gluon.jit
def tc8_block_scaled_fp8(a_desc, b_desc, c_desc, scale_a, scale_b, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                         BN: gl.constexpr, WGS: gl.constexpr, PRODUCER_WARPS: gl.constexpr,
                         PRODUCER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr, num_warps: gl.constexpr):
    ROWS: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    tiles_m = gl.cdiv(a_desc.shape[0], WGS * ROWS)
    tiles_n = gl.cdiv(c_desc.shape[1], BN)
    k_tiles = gl.cdiv(a_desc.shape[1], BK)

    # A's slot in WGS boxes of 64 rows (a shared-memory shape is a power of 2: 192 is not), slot s's at s * WGS
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES * WGS, ROWS, BK], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_tiles = gl.allocate_shared_memory(c_desc.dtype, [WGS] + c_desc.block_type.shape, c_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(full.index(s), count=1)
        mbarrier.init(empty.index(s), count=WGS)  # each consumer partition arrives once

    # one consumer partition a warpgroup, the default partition the first: a warpgroup arrives on `empty` and waits on
    # its wgmma alone, so one promotes while another's wgmma run (a partition of two would meet at each arrival);
    # written out for 3 and 2, as warp_specialize takes its partitions from a list literal
    if WGS == 3:
        gl.warp_specialize([
            (consume, (c_desc, scale_a, scale_b, a_ring, b_ring, c_tiles, full, empty, tiles_m, tiles_n, k_tiles,
                       GROUP_M, 0)),
            (consume, (c_desc, scale_a, scale_b, a_ring, b_ring, c_tiles, full, empty, tiles_m, tiles_n, k_tiles,
                       GROUP_M, 1)),
            (consume, (c_desc, scale_a, scale_b, a_ring, b_ring, c_tiles, full, empty, tiles_m, tiles_n, k_tiles,
                       GROUP_M, 2)),
            (produce, (a_desc, b_desc, a_ring, b_ring, full, empty, tiles_m, tiles_n, k_tiles, GROUP_M)),
        ], [4, 4, PRODUCER_WARPS], [CONSUMER_REGS, CONSUMER_REGS, PRODUCER_REGS])
    else:
        gl.warp_specialize([
            (consume, (c_desc, scale_a, scale_b, a_ring, b_ring, c_tiles, full, empty, tiles_m, tiles_n, k_tiles,
                       GROUP_M, 0)),
            (consume, (c_desc, scale_a, scale_b, a_ring, b_ring, c_tiles, full, empty, tiles_m, tiles_n, k_tiles,
                       GROUP_M, 1)),
            (produce, (a_desc, b_desc, a_ring, b_ring, full, empty, tiles_m, tiles_n, k_tiles, GROUP_M)),
        ], [4, PRODUCER_WARPS], [CONSUMER_REGS, PRODUCER_REGS])
