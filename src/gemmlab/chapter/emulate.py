"""The seeds' own code, emulated in NumPy where it is wrong: the first seed's swapped launch arguments and its V2's
store guard."""
from __future__ import annotations

import numpy as np


def emulate_swapped(m: int, n: int, k: int, seed: int = 0) -> float:
    """Relative error of the seed's launch, sgemm_kernel1(C, A, B, M, K, N) for a kernel declared (C, A, B, M, N,
    K): its index math emulated in NumPy (the kernel's N is the caller's K and its K the caller's N)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(m * k).astype(np.float32)
    b = rng.standard_normal(k * n).astype(np.float32)
    kn, kk = k, n  # what the kernel believes N and K are
    c = np.full(m * n, np.nan, np.float32)
    rows, cols = np.meshgrid(np.arange(m), np.arange(kn), indexing="ij")
    acc = np.zeros((m, kn), np.float64)
    for kx in range(kk):
        ai, bi = rows * kk + kx, kx * kn + cols
        ok = (ai < a.size) & (bi < b.size)  # past the end the GPU reads other memory; here it stops
        acc += np.where(ok, a[np.minimum(ai, a.size - 1)] * b[np.minimum(bi, b.size - 1)], np.nan)
    idx = (rows * kn + cols).ravel()
    inside = idx < c.size
    c[idx[inside]] = acc.ravel()[inside]
    ref = a.reshape(m, k).astype(np.float64) @ b.reshape(k, n).astype(np.float64)
    err = np.linalg.norm(np.nan_to_num(c.reshape(m, n), nan=1e30) - ref) / np.linalg.norm(ref)
    return float(min(err, 1e30))


def seed_guard_strays(m: int, n: int, tile: int = 32) -> int:
    """Threads of the seed's V2 grid that store under its guard ``row < M || col < N`` though they own no element of
    C (row ≥ M or col ≥ N): stray stores, wherever they land."""
    return seed_guard_stores(m, n, tile)["stray"]


def seed_guard_stores(m: int, n: int, tile: int = 32) -> dict:
    """Where the seed's V2 stores land under ``if (row < M || col < N) C[col + row * N] = val;`` on a grid of
    tile×tile blocks covering M×N: ``stray`` threads own no element (row ≥ M or col ≥ N) yet store; ``inside`` of
    them land on an element of C (col ≥ N wraps to C[row + 1][col − N]), racing that element's own store,
    ``outside`` land past C's end. Each stray stores 0: its As tile (row ≥ M) or its Bs tile (col ≥ N) was loaded as
    zeros, so every product it sums is 0."""
    rows = np.arange(-(-m // tile) * tile)[:, None]
    cols = np.arange(-(-n // tile) * tile)[None, :]
    stray = ((rows < m) | (cols < n)) & ~((rows < m) & (cols < n))
    index = cols + rows * n  # the seed's C[col + row * N]
    inside = stray & (index < m * n)
    return {"stray": int(np.count_nonzero(stray)), "inside": int(np.count_nonzero(inside)),
            "outside": int(np.count_nonzero(stray & ~inside)),
            "targets": int(np.unique(index[inside]).size)}
