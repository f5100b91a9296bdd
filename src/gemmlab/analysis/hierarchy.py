"""What reaches DRAM through the L2, and how many CTAs an SM holds: the two pieces of the cache-aware roofline that
depend on how a launch walks its tiles rather than on the tiles alone.

DRAM. The CTAs resident at one time (a wave) sweep K together, so the tiles of one wave that share a panel of A
or B read each of its k-slices at about the same moment: L2 serves all but the first, and a wave reads each of its
panels from DRAM at most once, whatever their size. Whether the next wave finds the panels it shares with this one
still in L2 is a question of reuse distance: between the two reads of a k-slice the grid touches the rest of this
wave's sweep and the start of the next one. Going the same way through K, that is (1 - x)·S_prev + x·S_next at
slice x, so the shared panels stay only while the waves' working sets are about the L2's size or smaller; going
backwards (tc4's snake), it is (1 - x)·(S_prev + S_next - shared), and the slices read last stay whenever that
fits. The L2 holds ``L2_SHARE`` of its size for data every SM reads: the H200's L2 is two partitions, and a line
that SMs on both sides read is kept in both.

In step, or staggered. A wave of a grid of one CTA per tile is the CTAs resident at once, and "they sweep K together"
holds across SMs (identical SMs running identical tiles start each slot's next CTA at the same moment), but not
always among the CTAs that share an SM: where the SM's warp schedulers let one of them run ahead, it finishes first,
its successor starts in its slot, and the n CTAs of an SM settle 1/n of a tile apart. Then only one CTA per SM sweeps
K in step with the other SMs', a burst of ``sm_count`` tiles, and a k-slice that two bursts share is read by the
second 1/n of a tile after the first, when the n bursts in between have read about the resident wave's working set:
for a wave larger than the L2 keeps, each burst reads its panels from DRAM. Which of the two a kernel does is decided
by its warps' scheduling at run time, not by its tiles, order or occupancy (the same code can do either at two
register counts), so the model counts both: ``dram_reads`` of the resident wave, the fewest bytes the order allows
(the DRAM roof's), and ``staggered_reads``, the same walk one CTA per SM at a time.
"""
from __future__ import annotations

from gemmlab.kernels.spec import TileWalk

L2_SHARE = 0.5  # of the L2's bytes, what holds lines read by every SM (one copy per partition)

# An H100/H200 SM: what limits how many CTAs it holds at once
SM_THREADS, SM_CTAS, SM_REGISTERS = 2048, 32, 65536
SM_SMEM, SMEM_PER_CTA_RESERVED = 228 * 1024, 1024
REGISTER_UNIT = 8  # registers per thread are allocated in multiples of 8 (256 per warp)


def reuse_fraction(prev: float, nxt: float, shared: float, capacity: float, backwards: bool) -> float:
    """Fraction of the ``shared`` bytes (panels both waves read) that the next wave finds in L2: the share of k
    whose reuse distance fits ``capacity``. ``prev`` and ``nxt`` are the two waves' working sets over all of K."""
    if backwards:
        distance = prev + nxt - shared
        return 1.0 if distance <= capacity else capacity / distance
    if prev <= capacity and nxt <= capacity:
        return 1.0
    if prev > capacity and nxt > capacity:
        return 0.0
    # the distance (1 - x)·prev + x·nxt crosses the capacity once, at x = (prev - capacity) / (prev - nxt)
    return (capacity - nxt) / (prev - nxt) if prev > nxt else (capacity - prev) / (nxt - prev)


def waves(walk: TileWalk, wave: int) -> list[list[tuple[int, int]]]:
    """The walk's tiles cut into the waves that run together: ``wave`` at a time, then the split tail as one."""
    order = walk.order()
    whole = len(order) - walk.split_tail
    out = [order[i:min(i + wave, whole)] for i in range(0, whole, wave)]
    if walk.split_tail:
        out.append(order[whole:])
    return out


def dram_reads(walk: TileWalk, wave: int, l2_bytes: float) -> float:
    """Bytes of A and B the walk reads from DRAM, ``wave`` tiles at a time, through an L2 of ``l2_bytes``."""
    capacity = L2_SHARE * l2_bytes
    total, prev = 0.0, None
    cut = waves(walk, wave)
    for i, tiles in enumerate(cut):
        rows, cols = {r for r, _ in tiles}, {c for _, c in tiles}
        size = walk.a_bytes(rows) + walk.b_bytes(cols)
        total += size
        if prev is not None:
            prev_rows, prev_cols, prev_size = prev
            shared = walk.a_bytes(rows & prev_rows) + walk.b_bytes(cols & prev_cols)
            # a snake's waves alternate their direction through K; the split tail's units start anywhere in K
            tail = walk.split_tail and i == len(cut) - 1
            total -= shared * reuse_fraction(prev_size, size, shared, capacity, walk.snake and not tail)
        prev = (rows, cols, size)
    return total


def staggered_reads(walk: TileWalk, sm_count: int, l2_bytes: float, resident: int) -> float:
    """Bytes of A and B the walk reads from DRAM when the CTAs that share an SM run out of step: one CTA per SM,
    ``sm_count`` tiles, sweeps K together, and a panel two such bursts share is read again after the ``resident``
    tiles' working set has passed through the L2 between them. Counted as bursts of ``sm_count`` tiles through
    ``dram_reads``, and never below the resident wave in step (where the bursts' own working sets fit the L2 better
    than the wave's, the wave's is still what passes between them). A persistent grid (``walk.wave``) holds no CTAs
    beside its own to stagger: its in-step count."""
    if walk.wave:
        return dram_reads(walk, walk.wave, l2_bytes)
    return max(dram_reads(walk, sm_count, l2_bytes), dram_reads(walk, resident, l2_bytes))


def ctas_per_sm(threads: int, registers: int | None = None, smem: int = 0) -> int:
    """CTAs of ``threads`` threads, ``registers`` per thread and ``smem`` bytes of shared memory one SM holds."""
    limits = [SM_THREADS // threads, SM_CTAS]
    if registers:
        per_thread = -(-registers // REGISTER_UNIT) * REGISTER_UNIT
        limits.append(SM_REGISTERS // (per_thread * -(-threads // 32) * 32))
    if smem:
        limits.append(SM_SMEM // (smem + SMEM_PER_CTA_RESERVED))
    return max(1, min(limits))
