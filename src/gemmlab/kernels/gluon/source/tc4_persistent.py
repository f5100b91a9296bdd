"""gluon/tc4's device code: tc3's producer warp and consumer warpgroups in a persistent grid that walks the output
tiles in grouped snake order (spec.tile_walk), the ring's phases running on across tiles so the producer loads the
next tile while the consumers store this one. The accumulator is two parts, a left one as wide as the staging tile
and a right one as wide as C's TMA box (128 + 128 columns of a 256-wide tile, 128 + 64 of a 192-wide one), each
stored through its own pass of the staging tile, in boxes of C's width. The FP8 entry reads B K-major (an N×K matrix, as FP8 wgmma must) and scales
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
def produce(a_desc, b_desc, a_ring, b_left_ring, b_right_ring, full, empty, tiles_m, tiles_n, k_tiles,
            GROUP_M: gl.constexpr, KMAJOR_B: gl.constexpr):
    STAGES: gl.constexpr = a_ring.shape[0]
    BM: gl.constexpr = a_ring.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    N_DIM: gl.constexpr = 0 if KMAJOR_B else 1  # B's N in a slot and in its box
    LEFT: gl.constexpr = b_left_ring.shape[1 + N_DIM]
    BOX: gl.constexpr = b_desc.block_type.shape[N_DIM]  # the right part's columns; the left part takes LEFT // BOX
    BN: gl.constexpr = LEFT + BOX
    stage_bytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes * (BN // BOX)
    count = 0  # k-tiles loaded so far: the ring's slot and phase run on across tiles
    for t in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        tm, tn = tile_origin(t, tiles_m, tiles_n, GROUP_M)
        for kt in range(k_tiles):
            slot = count % STAGES
            mbarrier.wait(empty.index(slot), ((count // STAGES) & 1) ^ 1)
            mbarrier.expect(full.index(slot), stage_bytes)
            tma.async_copy_global_to_shared(a_desc, [tm * BM, kt * BK], full.index(slot), a_ring.index(slot))
            for j in gl.static_range(BN // BOX):
                if j < LEFT // BOX:
                    b_box = b_left_ring.index(slot).slice(j * BOX, BOX, dim=N_DIM)
                else:
                    b_box = b_right_ring.index(slot)
                if KMAJOR_B:
                    tma.async_copy_global_to_shared(b_desc, [tn * BN + j * BOX, kt * BK], full.index(slot), b_box)
                else:
                    tma.async_copy_global_to_shared(b_desc, [kt * BK, tn * BN + j * BOX], full.index(slot), b_box)
            count += 1


@gluon.jit
def consume(c_desc, scale_a, scale_b, a_ring, b_left_ring, b_right_ring, full, empty, tiles_m, tiles_n, k_tiles,
            GROUP_M: gl.constexpr, KMAJOR_B: gl.constexpr, num_warps: gl.constexpr):
    STAGES: gl.constexpr = a_ring.shape[0]
    BM: gl.constexpr = a_ring.shape[1]
    LEFT: gl.constexpr = b_left_ring.shape[1] if KMAJOR_B else b_left_ring.shape[2]
    BOX: gl.constexpr = c_desc.block_type.shape[1]  # the right part's columns
    BN: gl.constexpr = LEFT + BOX
    left_layout: gl.constexpr = accumulator_layout(BM, LEFT, num_warps, a_ring.dtype.primitive_bitwidth)
    right_layout: gl.constexpr = accumulator_layout(BM, BOX, num_warps, a_ring.dtype.primitive_bitwidth)
    c_tile = gl.allocate_shared_memory(c_desc.dtype, [BM, LEFT], c_desc.layout)
    count = 0
    for t in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        tm, tn = tile_origin(t, tiles_m, tiles_n, GROUP_M)
        left = gl.zeros((BM, LEFT), gl.float32, left_layout)
        right = gl.zeros((BM, BOX), gl.float32, right_layout)
        for kt in range(k_tiles):
            slot = count % STAGES
            mbarrier.wait(full.index(slot), (count // STAGES) & 1)
            b_left = b_left_ring.index(slot)
            b_right = b_right_ring.index(slot)
            if KMAJOR_B:  # N×K tiles: wgmma reads their transpose views
                b_left = b_left.permute((1, 0))
                b_right = b_right.permute((1, 0))
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
        for j in gl.static_range(LEFT // BOX):  # clipped at M and N
            tma.async_copy_shared_to_global(c_desc, [tm * BM, tn * BN + j * BOX], c_tile.slice(j * BOX, BOX, dim=1))
        tma.store_wait(pendings=0)
        right_tile = c_tile.slice(0, BOX, dim=1)
        right_tile.store(right.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [tm * BM, tn * BN + LEFT], right_tile)
    tma.store_wait(pendings=0)


@gluon.jit
def walk(a_desc, b_desc, c_desc, scale_a, scale_b, STAGES: gl.constexpr, GROUP_M: gl.constexpr, BN: gl.constexpr,
         KMAJOR_B: gl.constexpr, PRODUCER_WARPS: gl.constexpr, PRODUCER_REGS: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BOX: gl.constexpr = c_desc.block_type.shape[1]
    LEFT: gl.constexpr = BN - BOX
    tiles_m = gl.cdiv(a_desc.shape[0], BM)
    tiles_n = gl.cdiv(c_desc.shape[1], BN)
    k_tiles = gl.cdiv(a_desc.shape[1], BK)

    # B's slot in two rings, the accumulator's parts (a shared-memory shape is a power of 2: 192 is not)
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_left_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, LEFT, BK] if KMAJOR_B else [STAGES, BK, LEFT],
                                            b_desc.layout)
    b_right_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(full.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)

    gl.warp_specialize([
        (consume, (c_desc, scale_a, scale_b, a_ring, b_left_ring, b_right_ring, full, empty, tiles_m, tiles_n, k_tiles,
                   GROUP_M, KMAJOR_B, num_warps)),
        (produce, (a_desc, b_desc, a_ring, b_left_ring, b_right_ring, full, empty, tiles_m, tiles_n, k_tiles, GROUP_M,
                   KMAJOR_B)),
    ], [PRODUCER_WARPS], [PRODUCER_REGS])


# CONSUMER_REGS reaches the consumers through the kernel's maxnreg (GluonKernel.maxnreg)
@gluon.jit
def tc4_persistent(a_desc, b_desc, c_desc, STAGES: gl.constexpr, GROUP_M: gl.constexpr, BN: gl.constexpr,
                   PRODUCER_WARPS: gl.constexpr, PRODUCER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                   num_warps: gl.constexpr):
    walk(a_desc, b_desc, c_desc, None, None, STAGES, GROUP_M, BN, False, PRODUCER_WARPS, PRODUCER_REGS, num_warps)


@gluon.jit
def tc4_persistent_fp8(a_desc, b_desc, c_desc, scale_a, scale_b, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                       BN: gl.constexpr, PRODUCER_WARPS: gl.constexpr, PRODUCER_REGS: gl.constexpr,
                       CONSUMER_REGS: gl.constexpr, num_warps: gl.constexpr):
    walk(a_desc, b_desc, c_desc, scale_a, scale_b, STAGES, GROUP_M, BN, True, PRODUCER_WARPS, PRODUCER_REGS, num_warps)
