// Which output tiles a persistent CTA computes, and in which order: the grouped snake order of the tiles, and the
// walks that hand a CTA its units (a tile and a range of its k-tiles), data-parallel or with a stream-K tail.
// Plain C++ (the tests compile it on the host against tile_order and the stream-K model in tc_common.py).
#pragma once

// Tile t of a grid of tiles_m x tiles_n cluster tiles in grouped order: GROUP_M cluster-rows at a time, column
// by column, so the CTAs working at one moment share A rows and B columns in L2 (the persistent levels). Odd groups
// walk their columns right to left, so the tiles after a group's last ones need the B columns just read (and
// produce_ring's k order alternates to match).
// begin schedule arithmetic
__host__ __device__ __forceinline__ void schedule(int t, int tiles_m, int tiles_n, int group_m, int &tm, int &tn) {
  const int group = group_m * tiles_n;
  const int first = (t / group) * group_m;
  const int rows = min(tiles_m - first, group_m);
  const int r = t % group;
  tm = first + r % rows;
  tn = r / rows;
  if ((t / group) % 2) tn = tiles_n - 1 - tn;
}
// end schedule arithmetic

// ---- work walk: data-parallel tiles, then (STREAM_K=1, tc6) a stream-K tail ---------------------------------
// Both walks hand out units (tile, k-tiles [kb, ke)); `tile` is an index into schedule()'s order. The producer
// and the consumers of a CTA construct the same walk and so see the same units.
// begin walk arithmetic (the walks, unit_ktile: the tests compile this block with produce_ring on the host)
#ifndef STREAM_K
#define STREAM_K 0
#endif

// tc4/tc5: CTA (cluster) `first` takes tiles first, first + step, ... whole.
struct DpWalk {
  int tile, kb, ke, step, tiles;
  __host__ __device__ __forceinline__ DpWalk(int first, int step_, int tiles_, int KT)
      : tile(first), kb(0), ke(KT), step(step_), tiles(tiles_) {}
  __host__ __device__ __forceinline__ bool valid() const { return tile < tiles; }
  __host__ __device__ __forceinline__ void next() { tile += step; }
};

// begin stream-K arithmetic (plain C++: the tests compile this block on the host against the Python model)
// Grid G, T tiles of KT k-tiles, R = T % G tiles in the last, partial wave. All tiles are data-parallel (CTA c
// takes c, c + G, ... whole) when R = 0 or R fills at least SK_SKIP_FILL % of a wave: then stream-K would save
// less than the fixup costs. Else the stream-K region is the last R tiles when they fill at least SK_FILL % of a
// wave (or make the only wave), and the last G + R tiles when fewer, so that every CTA's range holds at least a
// tile and the CTAs that finish a tile's k-range for its owner run their share first. The region's S·KT (tile,
// k-tile) iterations, in schedule order, split evenly into G contiguous ranges, CTA c taking
// [sk_begin(c), sk_begin(c + 1)) after its whole tiles.
#ifndef SK_FILL
#define SK_FILL 50
#endif
#ifndef SK_SKIP_FILL
#define SK_SKIP_FILL 70
#endif
__host__ __device__ __forceinline__ int sk_dp_tiles(int tiles, int grid) {
  const int waves = tiles / grid, rest = tiles % grid;
  if (rest == 0 || (waves > 0 && rest * 100 >= SK_SKIP_FILL * grid)) return tiles;
  if (waves == 0 || rest * 100 >= SK_FILL * grid) return waves * grid;
  return (waves - 1) * grid;
}
// The first iteration of CTA c's range, floor(c · iters / G), without the 64-bit product overflowing and with one
// 32-bit division: iters = q·G + r, so it is c·q + floor(c·r / G), and c·r < G² fits an int.
__host__ __device__ __forceinline__ long long sk_begin(int c, int grid, long long q, int r) {
  return (long long)c * q + (c * r) / grid;
}
struct SkWalk {
  int tile, kb, ke;  // the current unit
  int cta, grid, tiles, KT, dp_tiles;
  bool dp;
  int r;                // the stream-K region's iterations are q·G + r
  long long q, i, end;  // this CTA's next iteration and its range's end
  __host__ __device__ __forceinline__ SkWalk(int cta_, int grid_, int tiles_, int KT_)
      : tile(cta_), kb(0), ke(KT_), cta(cta_), grid(grid_), tiles(tiles_), KT(KT_) {
    dp_tiles = sk_dp_tiles(tiles, grid);
    const long long iters = (long long)(tiles - dp_tiles) * KT;
    q = iters / grid;
    r = (int)(iters % grid);
    i = sk_begin(cta, grid, q, r);
    end = sk_begin(cta + 1, grid, q, r);
    dp = tile < dp_tiles;
    if (!dp) load();
  }
  __host__ __device__ __forceinline__ bool valid() const { return tile < tiles; }
  __host__ __device__ __forceinline__ void next() {
    if (dp) {
      tile += grid;
      if (tile < dp_tiles) return;
      dp = false;
    } else {
      i += ke - kb;
    }
    load();
  }
  // A range cuts into units at tile boundaries: only the first can start mid-tile, only the last end mid-tile.
  __host__ __device__ __forceinline__ void load() {
    if (i >= end) {
      tile = tiles;
      return;
    }
    tile = dp_tiles + (int)(i / KT);
    kb = (int)(i % KT);
    const long long left = end - i;
    ke = left < (long long)(KT - kb) ? kb + (int)left : KT;
  }
  // A unit that starts mid-tile leaves a partial for the tile's owner; one that starts at k = 0 and stops short of
  // KT is the owner of a split tile and adds the partials of the CTAs after it (the last unit of its range).
  __host__ __device__ __forceinline__ bool partial() const { return kb > 0; }
  __host__ __device__ __forceinline__ bool owner_of_split() const { return kb == 0 && ke < KT; }
  // The CTAs after this one that hold the rest of the current tile, in k order: c = first_peer(), next_peer(c)
  // while c >= 0. CTAs with empty ranges (fewer iterations than CTAs) are skipped.
  __host__ __device__ __forceinline__ int next_peer(int c) const {
    const long long tile_end = (long long)(tile - dp_tiles + 1) * KT;
    for (++c; c < grid; ++c) {
      const long long b = sk_begin(c, grid, q, r);
      if (b >= tile_end) return -1;
      if (sk_begin(c + 1, grid, q, r) > b) return c;
    }
    return -1;
  }
  __host__ __device__ __forceinline__ int first_peer() const { return next_peer(cta); }
};
// end stream-K arithmetic

#if STREAM_K
typedef SkWalk Walk;
#else
typedef DpWalk Walk;
#endif
// whether u is its CTA's last unit (EPI_DEFER stores a held tile's C there, rather than after the walk's loop: code
// of the consumers past that loop gets the launch's register count rather than setmaxnreg's, and spills)
__device__ __forceinline__ bool last_unit(Walk u) {
  u.next();
  return !u.valid();
}

// The k-tile that step kt of a CTA's unit-th unit covers: every other unit runs its k-tiles last to first
// (produce_ring's order, which whatever indexes per-k data by k-tile, tc8's scales, follows too).
template <class W>
__host__ __device__ __forceinline__ int unit_ktile(const W &u, unsigned unit, int kt) {
  return unit % 2 ? u.kb + u.ke - 1 - kt : kt;
}
// end walk arithmetic
