"""The wgmma levels' traffic model: bytes through L2 and shared memory for a problem, pre-passes and stream-K
partials included."""
from __future__ import annotations

import dataclasses

from gemmlab.kernels.cuda.tc.model.stream_k import (SK_FILL, SK_MIN_KTILES, SK_SKIP_FILL, stream_k_dp_tiles, stream_k_grid,
                                                    stream_k_partials)
from gemmlab.kernels.cuda.tc.model.tiles import bk, narrow_fills_last_wave, narrow_pays, rounds_a_in_place
from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.plan import COL
from gemmlab.kernels.spec import SM_COUNT, Traffic, tiled_traffic
from gemmlab.problem import Problem, get_precision


def wgmma_traffic(precision: str, bm: int, bn: int, cm: int = 1, cn: int = 1, prepass: bool | None = None,
                  stream_k: bool = False, sk_fill: int = SK_FILL, sk_skip: int = SK_SKIP_FILL, whole=None,
                  narrow: dict | None = None, persistent: bool = False, group_m: int = 1, swap_ab: bool = False,
                  epi_tma: bool = False, a_reads: int = 1, a_pass: int = 0, block_scales: bool = False,
                  round_a: bool = False, a_rounding: int = 0, one_launch_mnk: int = 0):
    """A read once per cluster of CN·BN columns, B once per cluster of CM·BM rows (multicast shares an operand
    within a cluster), C written once; the TF32 transpose pre-pass (tc2-tc4: B read and Bᵀ written) on top. With
    ``stream_k``, each partial accumulator (4·BM·BN bytes) is written once and read once by its tile's owner, for
    the grid that a GPU of ``sm_count`` SMs gets; where no tile is split, ``whole`` (the base level's model).
    ``narrow``: the whole-tile parameters whose NARROW_BN choice (narrow_pays) the launch follows: the tiles are
    NARROW_BN wide there, and a stream-K level runs the base level (``whole``) where they fill a last wave
    (narrow_fills_last_wave, the launch's rule). ``block_scales`` (tc8): each tile
    also reads its rows' A scales and one B scale per 128 of K. ``round_a`` (tc5, tc6): the build's TF32_ROUND
    (``a_rounding`` where its parameters name none: the registered build's) says how A is rounded: 3, a launch of its
    own before the kernel reads A and writes it rounded to TF32 into the workspace the kernel reads, and up to
    ``one_launch_mnk`` multiply-adds (WgmmaKernel.one_launch_mnk, rounds_a_in_place) the producer warps round A in
    place instead (``a_pass`` 2); 2, in place always; 0, not at all (truncated, or rounded by its maps).

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

    def model(problem: Problem, sm_count: int = SM_COUNT, params: dict | None = None, layout=None) -> Traffic:
        # the tile the spec's own parameters name (WgmmaKernel.traffic): a pinned configuration's or a bench
        # --variant's, where they differ from those the model was registered with
        p = params or {}
        if stream_k and whole is not None and params is not None and not p.get("STREAM_K", 0):  # the base level's
            return whole(problem, sm_count, params, layout)
        bm_, cm_, cn_, group = p.get("BM", bm), p.get("CM", cm), p.get("CN", cn), p.get("GROUP_M", group_m)
        fill, skip = p.get("SK_FILL", sk_fill), p.get("SK_SKIP_FILL", sk_skip)
        narrow_ = p if "NARROW_BN" in p and narrow is not None else narrow
        m, n, k = problem.shape
        rnd = p.get("TF32_ROUND", a_rounding if round_a else 0)
        own = {"TF32_ROUND": rnd} if round_a else None  # what the base level's model (``whole``) takes of this build
        pre_round, a_pass_ = round_a and rnd == 3, a_pass
        if pre_round and rounds_a_in_place(problem, one_launch_mnk):
            pre_round, a_pass_ = False, 2
        elif round_a and rnd == 2:
            a_pass_ = 2
        bn_ = p.get("BN", bn)
        # the launch's own rules. A stream-K level runs the base level's narrower tiles only where they fill a last
        # wave (WgmmaKernel.stream_k_tiles): with no more tiles than clusters narrow_pays holds too, but the launch
        # splits K over the idle SMs instead, and the base level's model would count a whole tile per cluster
        if narrow_ is not None and whole is not None:
            if narrow_fills_last_wave(m, n, narrow_, sm_count):
                return whole(problem, sm_count, own, layout=layout)
        elif narrow_ is not None and narrow_pays(m, n, narrow_, sm_count):  # WgmmaKernel.for_problem's
            bn_ = narrow_["NARROW_BN"]
        tiles, kt = ceil_div(m, bm_) * ceil_div(n, bn_), ceil_div(k, bk(precision))
        grid = stream_k_grid(tiles, kt, sm_count, p.get("SK_MIN_KTILES", SK_MIN_KTILES)) if stream_k else 0
        if stream_k and whole is not None and stream_k_dp_tiles(tiles, grid, fill, skip) == tiles:
            return whole(problem, sm_count, own, layout=layout)
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
            smem += 2 * problem.output_bytes * walk.tiles_m * bm_ * cm_ * walk.tiles_n * bn_ * cn_
        if a_reads > 1 or a_pass_:  # per output element and k: A's share of a warp's reads is 1 / WN, a tile's 1 / BN
            area = walk.tiles_m * bm_ * cm_ * walk.tiles_n * bn_ * cn_ * k
            smem += problem.prec.input_bytes * area * ((a_reads - 1) / warp[1] + a_pass_ / bn_)
        extra = 0.0
        if prepass and (layout is None or layout.b != COL):  # a B handed over K-major (x @ w.t()) is read in place
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
