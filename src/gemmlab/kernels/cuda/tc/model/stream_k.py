"""The stream-K walk (STREAM_K=1, tc6) in Python: the grid, the data-parallel tiles before the stream-K region, and
each CTA's units, the model of SkWalk in tc_scheduler.cuh."""


SK_MIN_KTILES = 4  # with fewer tiles than SMs, stream-K spreads K over at most tiles·KT / SK_MIN_KTILES CTAs


def stream_k_grid(tiles: int, kt: int, sm_count: int, min_ktiles: int = SK_MIN_KTILES) -> int:
    """CTAs of a stream-K launch: one per SM when the tiles fill them; with fewer tiles than SMs, enough CTAs that
    each takes at least ``min_ktiles`` k-tiles (a deeper split costs more in fixup than it saves; a level's
    SK_MIN_KTILES parameter, a host-side choice), at least one per tile."""
    if tiles >= sm_count:
        return sm_count
    return max(tiles, min(sm_count, tiles * kt // min_ktiles))


SK_FILL = 50  # the last partial wave alone is the stream-K region when it fills at least this % of the grid
SK_SKIP_FILL = 70  # ... and no stream-K at all when it fills at least this % (measured on the H200, see tc6)


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
