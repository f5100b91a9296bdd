"""tc6: the stream-K walk's partition, the device arithmetic against the host model, and tc6 as its base level
with a stream-K tail (the one-launch TF32 build included)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from gemmlab.errors import InvalidConfigError
from gemmlab.kernels.cuda.launch.nvrtc import source_path
from gemmlab.kernels.cuda.tc import tc5_swap_ab
from gemmlab.kernels.cuda.tc.model.kernel import PRE_PASS
from gemmlab.kernels.cuda.tc.model.stream_k import (SK_FILL, SK_MIN_KTILES, SK_SKIP_FILL, stream_k_dp_tiles,
                                                    stream_k_grid, stream_k_partials, stream_k_units)
from gemmlab.kernels.cuda.tc.model.tiles import ONE_LAUNCH_MAX_K, bk
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic
from gemmlab.problem import Problem

from tc_levels import TC, host_block, ptx_of


# ---- tc6: stream-K tail ----------------------------------------------------------------------------------------
TC6 = [s for s in TC if s.level == 6]
SK_CASES = [(t, g, kt) for t in (1, 2, 5, 25, 131, 132, 133, 192, 263, 264, 265, 512, 2048)
            for g in (1, 3, 7, 68, 132) for kt in (1, 2, 3, 11, 64, 128)]


FILLS = [(0, 100), (SK_FILL, SK_SKIP_FILL), (100, 100), (30, 60)]


def _sk_check(tiles: int, grid: int, kt: int, fill: int = SK_FILL,
              skip: int = SK_SKIP_FILL) -> None:
    """The properties the kernel's fixup relies on, for one (T, G, KT) and region rule."""
    units = stream_k_units(tiles, grid, kt, fill, skip)
    dp = stream_k_dp_tiles(tiles, grid, fill, skip)
    waves, rest = divmod(tiles, grid)
    if rest == 0 or (waves and rest * 100 >= skip * grid):
        assert dp == tiles  # whole waves, or a last wave nearly full: no stream-K
    elif waves == 0 or rest * 100 >= fill * grid:
        assert dp == waves * grid  # the partial wave alone is the stream-K region
    else:
        assert dp == (waves - 1) * grid  # a thin partial wave joins the last full one
    assert tiles - dp < 2 * grid
    seen = {}
    for c, us in enumerate(units):
        assert [t for t, _, _ in us if t < dp] == list(range(c, dp, grid))  # data-parallel tiles first, whole
        assert all(kb == 0 and ke == kt for t, kb, ke in us if t < dp)
        assert sum(kb > 0 for _, kb, _ in us) <= 1  # at most one partial per CTA: a workspace slot each
        tail = [u for u in us if u[0] >= dp]
        assert all(kb == 0 for _, kb, _ in tail[1:])  # ... and only the first stream-K unit can start mid-tile
        assert all(ke == kt for _, _, ke in us[:-1])  # only the last unit can stop mid-tile
        for t, kb, ke in us:
            assert 0 <= kb < ke <= kt
            for k in range(kb, ke):
                assert (t, k) not in seen  # every (tile, k) iteration exactly once
                seen[(t, k)] = c
    assert len(seen) == tiles * kt
    sk = [sum(ke - kb for t, kb, ke in us if t >= dp) for us in units]
    assert max(sk) - min(sk) <= 1  # balanced stream-K ranges
    for t in range(tiles):
        owners = [(c, i) for c, us in enumerate(units) for i, u in enumerate(us) if u[0] == t and u[1] == 0]
        assert len(owners) == 1  # one owner per tile: the unit holding k = 0
        c, i = owners[0]
        holders = sorted({seen[(t, k)] for k in range(kt)})
        assert holders[0] == c  # the owner's CTA runs the tile's first iterations; the peers come after it
        if len(holders) > 1:
            assert i == len(units[c]) - 1  # a split tile's owner unit is the last its CTA runs
            for p in holders[1:]:
                first = next(u for u in units[p] if u[0] >= dp)
                assert first[0] == t and first[1] > 0  # each peer's partial is its first stream-K unit


@pytest.mark.parametrize("fills", FILLS)
def test_stream_k_partition(fills):
    for case in SK_CASES:
        _sk_check(*case, *fills)


def test_stream_k_partition_dense_small():
    for tiles in range(1, 40):
        for grid in range(1, 20):
            for kt in range(1, 9):
                for fills in FILLS:
                    _sk_check(tiles, grid, kt, *fills)


def test_stream_k_split_of_the_seed_shapes():
    # 2048x3072x4096 BF16: 192 tiles for 132 SMs, 64 k-tiles each: no data-parallel wave, all stream-K
    assert stream_k_dp_tiles(192, 132) == 0
    units = stream_k_units(192, 132, 64)
    assert {sum(ke - kb for _, kb, ke in us) for us in units} == {93, 94}  # 12288 iterations / 132
    # 4096³: 512 tiles = 3.88 waves, the last 88% full: all data-parallel (stream-K measured slower there);
    # 8192³: 2048 tiles, 15 whole waves and 68 tiles (52%) of stream-K
    assert stream_k_dp_tiles(512, 132) == 512 and stream_k_dp_tiles(2048, 132) == 1980
    assert stream_k_dp_tiles(512, 132, fill=50, skip=100) == 396  # the variants measured
    assert stream_k_dp_tiles(512, 132, fill=100, skip=100) == 264  # the two-wave region of the first design
    assert stream_k_dp_tiles(264, 132) == 264  # whole waves: no stream-K at all
    assert stream_k_partials(264, 132, 64) == 0
    # fewer tiles than SMs: the grid grows until each CTA holds about SK_MIN_KTILES k-tiles, at most one per SM
    assert stream_k_grid(25, 11, 132) == 25 * 11 // SK_MIN_KTILES
    assert stream_k_grid(1, 1, 132) == 1 and stream_k_grid(600, 64, 132) == 132
    assert stream_k_grid(3, 2, 132) == 3


GXX = shutil.which("g++") or shutil.which("clang++")


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler to run the device arithmetic with")
def test_stream_k_device_arithmetic_runs_like_the_model(tmp_path):
    """Compile the device walk (SkWalk, plain C++) on the host and compare its units and each split tile's peers
    with the Python model on many (T, G, KT)."""
    main = r"""
#include <cstdio>
int main() {
  int T, G, KT;
  while (scanf("%d %d %d", &T, &G, &KT) == 3) {
    for (int c = 0; c < G; ++c) {
      printf("C");
      for (SkWalk u(c, G, T, KT); u.valid(); u.next()) {
        printf(" %d,%d,%d", u.tile, u.kb, u.ke);
        if (u.owner_of_split()) {
          printf(":");
          for (int p = u.first_peer(); p >= 0; p = u.next_peer(p)) printf("%d;", p);
        }
      }
      printf("\n");
    }
  }
}
"""
    src = tmp_path / "walk.cpp"
    src.write_text("#define __host__\n#define __device__\n#define __forceinline__ inline\n" + host_block("tc_scheduler.cuh", "stream-K") + main)
    for fill, skip in FILLS:
        exe = tmp_path / f"walk{fill}_{skip}"
        subprocess.run([GXX, "-O1", "-std=c++17", f"-DSK_FILL={fill}", f"-DSK_SKIP_FILL={skip}", "-o", str(exe),
                        str(src)], check=True)
        _compare_walk(exe, fill, skip)


PRODUCER = r"""
#include <cstdio>
#define __host__
#define __device__
#define __forceinline__ inline
typedef unsigned u32;
typedef unsigned long long u64;
struct int2 { int x, y; };
#define STAGE_BYTES 1
#define BK 1
static u64 *g_empty;
inline void mbar_wait(u64 *bar, u32 parity) { printf(" w%d.%u", (int)(bar - g_empty), parity); }
"""

PRODUCER_MAIN = r"""
int main() {
  int T, G, KT;
  while (scanf("%d %d %d", &T, &G, &KT) == 3)
    for (int c = 0; c < G; ++c) {
      unsigned char smem[STAGES];
      u64 full[STAGES], empty[STAGES];
      g_empty = empty;
      printf("C");
      produce_ring<STAGES>(smem, full, empty, c, G, T, KT, [](int t) { return int2{t, -t}; },
                           [&](unsigned char *stage, u64 *bar, int m0, int n0, int k0) {
                             printf(" L%d.%d:%d,%d,%d", (int)(stage - smem), (int)(bar - full), m0, n0, k0);
                           });
      printf("\n");
    }
}
"""


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler to run the device arithmetic with")
@pytest.mark.parametrize("stream_k", [0, 1])
def test_the_producer_fills_the_ring_along_the_walk(tmp_path, stream_k):
    """produce_ring (the producer thread of tc4, tc5, tc7, tc8, and of tc6 through them) compiled on the host, its
    waits and TMA copies recorded, against the model for many (T, G, KT): the CTA's units in the walk's order (the
    data-parallel tiles c, c + G, ...; with STREAM_K the stream-K model's units), every other unit's k-tiles last to
    first (unit_ktile), k-tile i of the CTA into slot i % STAGES with its full barrier, and from the second lap on a
    wait on that slot's empty barrier for the lap before's phase. The consumers walk the same units inline in each
    kernel, between wgmma and mbarrier instructions, where only a GPU runs them: a walk that differed would hang the
    ring or write a wrong C in the GPU tests of tc4-tc6 on ragged shapes (tests/test_api_gpu.py)."""
    stages = 3
    src = tmp_path / "producer.cpp"
    src.write_text(PRODUCER + host_block("tc_scheduler.cuh", "walk")
                   + host_block("tc_pipeline.cuh", "producer ring") + PRODUCER_MAIN)
    exe = tmp_path / "producer"
    subprocess.run([GXX, "-O1", "-std=c++17", f"-DSTREAM_K={stream_k}", f"-DSTAGES={stages}", "-o", str(exe),
                    str(src)], check=True)
    cases = SK_CASES[:20] + [(t, g, kt) for t in range(1, 10) for g in range(1, 7) for kt in range(1, 6)]
    out = subprocess.run([str(exe)], input="\n".join(f"{t} {g} {k}" for t, g, k in cases), capture_output=True,
                         text=True, check=True).stdout.splitlines()
    row = 0
    for t, g, kt in cases:
        walks = stream_k_units(t, g, kt) if stream_k else [[(tile, 0, kt) for tile in range(c, t, g)]
                                                          for c in range(g)]
        for units in walks:
            want, it = ["C"], 0
            for n, (tile, kb, ke) in enumerate(units):
                for step in range(ke - kb):
                    s = it % stages
                    if it >= stages:
                        want.append(f"w{s}.{(it // stages - 1) & 1}")
                    want.append(f"L{s}.{s}:{tile},{-tile},{ke - 1 - step if n % 2 else kb + step}")
                    it += 1
            assert out[row] == " ".join(want), (t, g, kt, row)
            row += 1
    assert row == len(out)


def _compare_walk(exe, fill: int, skip: int) -> None:
    cases = SK_CASES + [(t, g, kt) for t in range(1, 12) for g in range(1, 9) for kt in range(1, 6)]
    out = subprocess.run([str(exe)], input="\n".join(f"{t} {g} {k}" for t, g, k in cases), capture_output=True,
                         text=True, check=True).stdout.splitlines()
    row = 0
    for t, g, kt in cases:
        units = stream_k_units(t, g, kt, fill, skip)
        holders = {}
        for c, us in enumerate(units):
            for tile, kb, ke in us:
                holders.setdefault(tile, []).append(c)
        for c, us in enumerate(units):
            want = []
            for tile, kb, ke in us:
                w = f"{tile},{kb},{ke}"
                if kb == 0 and ke < kt:
                    w += ":" + "".join(f"{p};" for p in holders[tile][1:])
                want.append(w)
            assert out[row] == " ".join(["C"] + want), (t, g, kt, c, fill, skip)
            row += 1
    assert row == len(out)


@pytest.mark.parametrize("spec", TC6, ids=lambda s: s.name)
def test_tc6_is_its_base_level_with_stream_k(spec):
    base = next(s for s in TC if s.level == (4 if spec.prec.sixteen_bit else 5) and s.precision == spec.precision)
    assert spec.source == base.source and spec.entry == base.entry
    sk = {"STREAM_K": 1, "SK_FILL": SK_FILL, "SK_SKIP_FILL": SK_SKIP_FILL}
    # narrower tiles are the base level's choice; the held boxes of C its own (they spill beside stream-K), and with
    # them a fused epilogue's pass in producer warps (EPI_ASYNC, EPI_GAP)
    own = {k: v for k, v in base.params.items() if k not in ("NARROW_BN", "EPI_DEFER", "EPI_ASYNC", "EPI_GAP")}
    narrow_m = {"NARROW_BM": 64} if spec.precision == "tf32" else {}  # shorter tiles are tc6 TF32's own
    assert spec.params in ({**own, "CM": 1, **sk, **narrow_m}, {**own, **sk, **narrow_m})
    assert spec.params.get("CM", 1) * spec.params.get("CN", 1) == 1
    assert "STREAM_K" not in base.params  # tc4, tc5 compile with the .cu default, STREAM_K=0
    assert "red.release.gpu" in ptx_of(spec) and "ld.acquire.gpu" in ptx_of(spec)
    assert "red.release.gpu" not in ptx_of(base)
    # bar 0 (__syncthreads), the consumers' bar 1 and, under EPI_TMA, each warpgroup's epilogue bar 2 + cw: a
    # barrier id held in a register makes ptxas reserve all 16 (harmless at one CTA per SM)
    assert spec.compile("sm_90a").report.barriers == (16 if spec.params.get("EPI_TMA") else 2)
    # where no tile is split (whole waves, or a last wave at least SK_SKIP_FILL % full), tc6 launches the base
    # level's kernel: the same binary
    plain = spec.without_stream_k()
    assert plain.params == base.params and plain.compile("sm_90a").cubin == base.compile("sm_90a").cubin
    assert spec.stream_k_tiles(Problem(4096, 4096, 4096, spec.precision)) == 0  # 116 of 132: 88% full
    assert spec.stream_k_tiles(Problem(8192, 8192, 8192, spec.precision)) == 68
    # BF16: tc4's 192-wide tiles fill the seed shape's last wave (128 cluster tiles for 66 clusters), so tc6 runs them
    seed = Problem(2048, 3072, 4096, spec.precision)
    assert spec.stream_k_tiles(seed) == (0 if spec.prec.sixteen_bit else 192)  # FP16: BF16's tiles
    if spec.prec.sixteen_bit:
        assert spec.for_problem(seed).params == {**base.params, "BN": 192, "NARROW_BN": 0}


def test_small_tf32_problems_round_a_in_shared_memory_in_one_launch():
    """The registered tc5 and tc6 TF32 round both operands by their maps: one launch, no pre-pass, at every size.
    Their pre-pass variant (TF32_ROUND=3): tc6 up to ONE_LAUNCH_MNK multiply-adds runs TF32_ROUND=2 (no pre-pass),
    split or not; above it, tc5's pre-pass. The traffic model and the configurations verify --sanitize runs follow
    the same rule."""
    from gemmlab.kernels.cuda.tc import tc6_stream_k

    registered = next(s for s in TC6 if s.precision == "tf32")
    for shape in ((256, 256, 256), (17, 33, 5), (16, 16, 65536), (4096, 4096, 4096)):
        problem = Problem(*shape, "tf32")
        assert (registered.for_problem(problem).params["TF32_ROUND"], registered.traffic(problem).prepass) == (0, 0)
    tf32 = registered.with_params(PRE_PASS)
    limit = tc6_stream_k.ONE_LAUNCH_MNK
    assert tf32.one_launch_mnk == limit == 512 ** 3
    # K past ONE_LAUNCH_MAX_K: the pass would cost each CTA more k-tiles than the launch saves; K % 4: A's rows are
    # not 16-byte pitched, so A is copied first anyway, which the pre-pass does as it rounds
    assert ONE_LAUNCH_MAX_K == 512
    for shape, rounds in (((512, 512, 512), 2), ((256, 256, 256), 2), ((17, 33, 8), 2), ((17, 33, 5), 3),
                          ((16, 16, 65536), 3), ((128, 128, 516), 3), ((513, 512, 512), 3),
                          ((1024, 1024, 1024), 3), ((4096, 4096, 4096), 3)):
        problem = Problem(*shape, "tf32")
        runs = tf32.for_problem(problem)
        assert runs.params["TF32_ROUND"] == rounds, shape
        traffic = tf32.traffic(problem)
        m, n, k = shape
        assert traffic.prepass == (0 if rounds == 2 else 8 * m * k), shape
        assert ("rounding pre-pass" in traffic.basis) == (rounds == 3)
    # a small problem whose K gives stream-K nothing to split runs the base level, still in one launch
    tiny_k = Problem(256, 256, 32, "tf32")
    assert tf32.stream_k_tiles(tiny_k) == 0
    assert tf32.for_problem(tiny_k).params == {**tc5_swap_ab.PARAMS, **PRE_PASS, "TF32_ROUND": 2}
    # the in-place pass reads and writes A's tiles in shared memory: more shared-memory bytes than the pre-pass build
    small = Problem(512, 512, 512, "tf32")
    pre_pass = wgmma_traffic("tf32", 256, 128, prepass=False, stream_k=True, group_m=8, swap_ab=True,
                                       round_a=True, a_rounding=3)(small)
    assert tf32.traffic(small).smem > pre_pass.smem and tf32.traffic(small).global_read < pre_pass.global_read
    assert [(c.params["BM"], c.params["TF32_ROUND"]) for c in tf32.configurations()] == [(256, 3), (64, 3), (256, 2)]
    assert all(c.for_problem(small).params["TF32_ROUND"] == c.params["TF32_ROUND"] for c in tf32.configurations())
    assert not next(s for s in TC6 if s.precision == "bf16").one_launch_mnk
    # tc5, whose few CTAs at these sizes carry the pass alone, keeps the pre-pass above 256³
    tc5 = next(s for s in TC if s.level == 5).with_params(PRE_PASS)
    assert tc5.one_launch_mnk == tc5_swap_ab.ONE_LAUNCH_MNK == 256 ** 3
    assert [tc5.for_problem(Problem(*s, "tf32")).params["TF32_ROUND"] for s in ((256,) * 3, (257, 256, 256))] == [2, 3]
    assert [c.params["TF32_ROUND"] for c in tc5.configurations()] == [3, 2]


def test_tc6_refuses_clusters_and_bad_values():
    import dataclasses

    bf16, tf32 = (next(s for s in TC6 if s.precision == p) for p in ("bf16", "tf32"))
    with pytest.raises(InvalidConfigError, match="clusters off"):
        dataclasses.replace(bf16, params={**bf16.params, "CM": 2})
    with pytest.raises(InvalidConfigError, match="clusters off"):
        dataclasses.replace(tf32, params={**tf32.params, "CN": 2})
    with pytest.raises(InvalidConfigError, match="STREAM_K=2"):
        dataclasses.replace(bf16, params={**bf16.params, "STREAM_K": 2})
    for bad in ({"SK_FILL": 101}, {"SK_FILL": 80, "SK_SKIP_FILL": 70}, {"SK_SKIP_FILL": 120}):
        with pytest.raises(InvalidConfigError, match="SK_FILL"):
            dataclasses.replace(bf16, params={**bf16.params, **bad})
    tc4 = next(s for s in TC if s.level == 4 and s.precision == "tf32" and s.params["CM"] == 2)
    with pytest.raises(InvalidConfigError, match="clusters off"):
        dataclasses.replace(tc4, params={**tc4.params, "STREAM_K": 1})


def test_tc6_traffic_counts_the_partials():
    for spec in TC6:
        base = next(s for s in TC if s.level == (4 if spec.prec.sixteen_bit else 5) and s.precision == spec.precision)
        # the seed shape for TF32; for BF16 and FP16 a shape where tc4 keeps its 256-wide tile, so tc6 splits
        m, n, k = (2048, 3072, 4096) if spec.precision == "tf32" else (2048, 2048, 4096)
        p = Problem(m, n, k, spec.precision)
        bm, bn = spec.params["BM"], spec.params["BN"]
        # the split walk runs with clusters off: its reads and writes are those of unclustered tiles plus partials
        t6 = spec.traffic(p)
        tb = wgmma_traffic(spec.precision, bm, bn, prepass=False,
                                     round_a=True, a_rounding=spec.params.get("TF32_ROUND", 0))(p)
        tiles, kt = -(-m // bm) * -(-n // bn), -(-k // bk(spec.precision))
        partials = stream_k_partials(tiles, 132, kt)
        assert 0 < partials <= 132
        assert t6.global_read - tb.global_read == t6.global_write - tb.global_write == 4 * bm * bn * partials
        assert "stream-K" in t6.basis
        whole = Problem(bm * 132, bn, 64, spec.precision)  # 132 tiles: one whole wave, no partials
        assert spec.traffic(whole) == base.traffic(whole)  # the base level runs, clusters and all


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize("shape", [(256, 256, 65536), (1024, 1024, 16384), (1, 4096, 14336), (256, 1024, 8192)],
                         ids=lambda s: "x".join(map(str, s)))
def test_tc6_with_no_more_tiles_than_clusters_is_modeled_as_it_launches(precision, shape):
    """tc4's 192-wide tiles would pay at these shapes (narrow_pays: its few 256-wide cluster tiles leave clusters idle
    either way), but they are no more than the clusters, so tc6's launch splits K over the idle SMs instead of
    handing the problem to tc4 (narrow_fills_last_wave, stream_k_tiles). The model walks that launch: tc6's own
    unclustered tiles on its stream-K grid with the launch's split tail, not tc4's whole tiles on 2-CTA clusters
    (at 256x256x65536 BF16 that model counted 2 tiles on 2 clusters: 397 µs where the kernel measured 108)."""
    from gemmlab.kernels.cuda.tc.model.tiles import narrow_fills_last_wave, narrow_pays

    spec = next(s for s in TC6 if s.precision == precision)
    problem = Problem(*shape, precision)
    m, n, _ = shape
    whole = spec.without_stream_k().params
    assert narrow_pays(m, n, whole) and not narrow_fills_last_wave(m, n, whole)
    assert spec.for_problem(problem) is spec and spec.stream_k_tiles(problem) > 0  # the launch splits
    walk = spec.traffic(problem).walk
    tiles = -(-m // spec.params["BM"]) * -(-n // spec.params["BN"])
    assert (walk.tiles, walk.sms_per_tile) == (tiles, 1)
    assert walk.wave == spec.launch_geometry(problem).grid[0]
    assert walk.split_tail == spec.stream_k_tiles(problem)


@pytest.mark.parametrize("shape,bm,rounds", [((16, 4096, 4096), 64, 0), ((64, 14336, 4096), 64, 0),
                                             ((1, 1000, 129), 64, 0), ((16, 256, 256), 64, 0),
                                             ((65, 4096, 4096), 256, 0), ((4096, 4096, 4096), 256, 0),
                                             ((16, 4096, 4096), 64, 3), ((16, 256, 256), 256, 2)])
def test_tc6_tf32_takes_64_row_tiles_where_a_has_no_more_rows(shape, bm, rounds):
    """NARROW_BM: the swapped tile's height (wgmma's N) is 64 rows of A at M <= 64 where A is not rounded in shared
    memory (the registered build, whose maps round it; the pre-pass variant's, TF32_ROUND=3), split or not; a
    problem small enough for the pre-pass variant to round A in shared memory keeps the 256-row tile (that pass's
    binary at 64 rows spills); the level's model is the running build's."""
    spec = next(s for s in TC6 if s.precision == "tf32")
    if rounds:
        spec = spec.with_params(PRE_PASS)
    problem = Problem(*shape, "tf32")
    runs = spec.for_problem(problem)
    assert (runs.params["BM"], runs.params["TF32_ROUND"]) == (bm, rounds) and "NARROW_BM" not in runs.defines()
    # the shorter tile's ring holds the base tile's bytes: twice the stages of (64 + 128) rows of 128 bytes
    assert runs.params["STAGES"] * (bm + 128) == spec.params["STAGES"] * (256 + 128)
    assert runs.for_problem(problem).params == runs.params
    assert spec.traffic(problem) == runs.traffic(problem)
    assert runs.traffic(problem).walk.tiles_m == -(-shape[0] // bm)


def test_tc6_tf32_builds_and_the_narrow_bm_rule():
    """Every binary tc6 TF32 runs is among its configurations (the 256-row and the 64-row tile, both the truncating
    binary under the rounding maps), and so are its pre-pass variant's (the same tiles, and the 256-row one rounding
    A in shared memory), each compiles without spills; NARROW_BM only on a swapped level, at a wgmma N, and at or
    above BM it changes nothing."""
    spec = next(s for s in TC6 if s.precision == "tf32")
    builds = [(c.params["BM"], c.params["STAGES"], c.params["TF32_ROUND"], c.params["TMA_ROUND"])
              for c in spec.configurations()]
    assert builds == [(256, 4, 0, 1), (64, 8, 0, 1), (256, 4, 3, 0), (64, 8, 3, 0), (256, 4, 2, 0)]
    for c in spec.configurations():
        report = c.compile("sm_90a").report
        assert report.spills == 0 and report.stack_bytes == 0, (c.params, report)
    assert spec.with_params({"BM": 64}).for_problem(Problem(16, 4096, 4096, "tf32")).params["BM"] == 64
    bf16 = next(s for s in TC6 if s.precision == "bf16")
    with pytest.raises(InvalidConfigError, match="NARROW_BM=64: .*swapped level"):
        bf16.with_params({"NARROW_BM": 64})
    with pytest.raises(InvalidConfigError, match="NARROW_BM=96"):
        spec.with_params({"NARROW_BM": 96})
