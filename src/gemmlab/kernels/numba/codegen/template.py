"""The kernel template: the Python source of one tiled GEMM kernel, written out for a Tiling with every tile size
a literal, every accumulator a scalar and every inner loop unrolled; and the exec + cuda.jit that makes it a kernel
(numba is imported there, not here: writing the text needs none)."""
from __future__ import annotations

import linecache
from typing import Any

from gemmlab.device import numba_mode
from gemmlab.kernels.numba.codegen.primitives import primitives
from gemmlab.kernels.numba.codegen.tiling import Tiling


class _Src:
    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, depth: int, text: str):
        self.lines.append("    " * depth + text)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class _Intrinsics:
    """Emit accesses as the flat-offset intrinsics (the levels)."""

    @staticmethod
    def ld(space, arr, idx):
        return f"ld{space}({arr}, {idx})"

    @staticmethod
    def ld4(space, arr, idx):
        return f"ld{space}4({arr}, {idx})"

    @staticmethod
    def st(space, arr, idx, *vals):
        return f"st{space}{'4' if len(vals) == 4 else ''}({arr}, {idx}, {', '.join(vals)})"


class _Indexing(_Intrinsics):
    """Emit accesses as numba array indexing on flat arrays: the comparison baseline (64-bit signed indices,
    wraparound selects, no vector accesses). Its kernels take 1-D arrays."""

    @staticmethod
    def ld(space, arr, idx):
        return f"{arr}[{idx}]"

    @staticmethod
    def ld4(space, arr, idx):
        return ", ".join(f"{arr}[{idx} + {e}]" for e in range(4))

    @staticmethod
    def st(space, arr, idx, *vals):
        return "; ".join(f"{arr}[{idx} + {e}] = {v}" for e, v in enumerate(vals))


def gemm_source(name: str, t: Tiling, simulated: bool | None = None, access: str = "intrinsic") -> str:
    """Python source of a kernel ``name(C, A, B, M, N, K)`` computing C = A @ B with tiling ``t``, for numba's
    simulator or the GPU (``simulated``; by default, where numba runs kernels in this process).

    ``access="index"`` writes every access as numba array indexing instead (a baseline for measurements; the
    kernel then takes flat 1-D arrays)."""
    x = _Indexing if access == "index" else _Intrinsics
    if simulated is None:
        simulated = numba_mode() == "simulator"
    s = _Src()
    T, BK, BN, BMP = t.threads, t.BK, t.BN, t.bmp
    a_loads = t.BM * t.BK // (t.VEC * T)
    b_loads = t.BK * t.BN // (t.VEC * T)
    a_per_row = BK // t.VEC  # loaders along one row of the A tile
    b_per_row = BN // t.VEC
    a_stage, b_stage = BK * BMP, BK * BN

    s(0, f"def {name}(C, A, B, M, N, K):")
    if simulated:
        s(1, "C = _flat(C)")
        s(1, "A = _flat(A)")
        s(1, "B = _flat(B)")
    s(1, f"As = cuda.shared.array({t.STAGES * a_stage}, float32)  # A tile, transposed: As[k*{BMP} + m]")
    s(1, f"Bs = cuda.shared.array({t.STAGES * b_stage}, float32)  # B tile: Bs[k*{BN} + n]")
    s(1, "tid = cuda.threadIdx.x")
    s(1, f"bm0 = cuda.blockIdx.y * {t.BM}")
    s(1, f"bn0 = cuda.blockIdx.x * {t.BN}")
    s(1, "warp = tid // 32")
    s(1, "lane = tid % 32")
    tx_n = t.wsubn // t.TN
    s(1, f"a_rd = (warp // {t.BN // t.WN}) * {t.WM} + (lane // {tx_n}) * {t.TM}  # first of this lane's rows")
    s(1, f"b_rd = (warp % {t.BN // t.WN}) * {t.WN} + (lane % {tx_n}) * {t.TN}  # first of its columns")

    # Global-load slots: slot q of a thread covers element (row, col) of the tile, VEC wide along the row.
    for q in range(a_loads):
        s(1, f"ar{q} = bm0 + (tid + {q * T}) // {a_per_row}")
        s(1, f"ac{q} = ((tid + {q * T}) % {a_per_row}) * {t.VEC}")
        s(1, f"ag{q} = ar{q} * K + ac{q}")
        s(1, f"aw{q} = ac{q} * {BMP} + (tid + {q * T}) // {a_per_row}")
    for q in range(b_loads):
        s(1, f"br{q} = (tid + {q * T}) // {b_per_row}")
        s(1, f"bc{q} = bn0 + ((tid + {q * T}) % {b_per_row}) * {t.VEC}")
        s(1, f"bg{q} = br{q} * N + bc{q}")
        s(1, f"bw{q} = br{q} * {BN} + ((tid + {q * T}) % {b_per_row}) * {t.VEC}")

    rows = [(i, r) for i in range(t.WMITER) for r in range(t.TM)]
    cols = [(j, c) for j in range(t.WNITER) for c in range(t.TN)]
    for i, r in rows:
        s(1, " = ".join(f"c_{i * t.TM + r}_{j * t.TN + c}" for j, c in cols) + " = float32(0.0)")

    def emit_global_loads(depth: int, k0: str):
        """Registers x{q}_{e} / y{q}_{e} get the A / B tile at k offset ``k0`` (zeros outside the matrix)."""
        for reg, mat, loads, offset, guard in (
                ("x", "A", a_loads, lambda q: f"ag{q} + {k0}", lambda q: f"ar{q} < M and {k0} + ac{q} < K"),
                ("y", "B", b_loads, lambda q: f"bg{q} + {k0} * N", lambda q: f"{k0} + br{q} < K and bc{q} < N")):
            for q in range(loads):
                if t.VEC == 4:
                    s(depth, f"if {guard(q)}:")
                    s(depth + 1, f"{reg}{q}_0, {reg}{q}_1, {reg}{q}_2, {reg}{q}_3 = {x.ld4('g', mat, offset(q))}")
                    s(depth, "else:")
                    s(depth + 1, f"{reg}{q}_0 = {reg}{q}_1 = {reg}{q}_2 = {reg}{q}_3 = float32(0.0)")
                else:
                    s(depth, f"{reg}{q}_0 = {x.ld('g', mat, offset(q))} if {guard(q)} else float32(0.0)")

    def emit_smem_stores(depth: int, a_off: str, b_off: str):
        for q in range(a_loads):
            for e in range(t.VEC):
                s(depth, x.st('s', 'As', f"aw{q} + {a_off}{e * BMP}", f"x{q}_{e}"))
        for q in range(b_loads):
            if t.VEC == 4:
                s(depth, x.st('s', 'Bs', f"bw{q} + {b_off}0", *(f"y{q}_{e}" for e in range(4))))
            else:
                s(depth, x.st('s', 'Bs', f"bw{q} + {b_off}0", f"y{q}_0"))

    def emit_fragment(depth: int, reg: str, arr: str, off: str, row: int, iters: int, sub: int, width: int):
        """One k step's registers reg0.. of A (or B): `iters` sub-tiles `sub` apart in shared row `row`, `width`
        values each, read as quads (SVEC) or one by one."""
        for i in range(iters):
            base = row + i * sub
            for r in range(0, width, 4 if t.SVEC else 1):
                n = i * width + r
                at = f"{reg}_rd + {off}{base + r}"
                if t.SVEC:
                    s(depth, f"{reg}{n}, {reg}{n + 1}, {reg}{n + 2}, {reg}{n + 3} = {x.ld4('s', arr, at)}")
                else:
                    s(depth, f"{reg}{n} = {x.ld('s', arr, at)}")

    def emit_compute(depth: int, a_off: str, b_off: str):
        for kk in range(BK):
            emit_fragment(depth, "a", "As", a_off, kk * BMP, t.WMITER, t.wsubm, t.TM)
            emit_fragment(depth, "b", "Bs", b_off, kk * BN, t.WNITER, t.wsubn, t.TN)
            for i, r in rows:
                for j, c in cols:
                    m, n = i * t.TM + r, j * t.TN + c
                    s(depth, f"c_{m}_{n} += a{m} * b{n}")

    def emit_copies(depth: int, k0: str, a_off: str, b_off: str):
        """cp.async the A and B tiles at k offset ``k0`` into the stage at (a_off, b_off); A element by element
        (it is transposed on the way), B in 16-byte copies when VEC == 4."""
        for q in range(a_loads):
            for e in range(t.VEC):
                s(depth, f"cp4(As, aw{q} + {a_off}{e * BMP}, A, ag{q} + {k0} + {e}, "
                         f"ar{q} < M and {k0} + ac{q} + {e} < K)")
        for q in range(b_loads):
            fn = "cp16" if t.VEC == 4 else "cp4"
            s(depth, f"{fn}(Bs, bw{q} + {b_off}0, B, bg{q} + {k0} * N, {k0} + br{q} < K and bc{q} < N)")

    s(1, f"ntiles = (K + {BK - 1}) // {BK}")
    if t.ASYNC:
        S = t.STAGES
        # Prologue: tiles 0..S-2 in flight. Iteration `tile` waits until its own copies of that tile landed,
        # then the barrier makes every thread's copies visible and proves every thread finished computing
        # tile-1, whose stage the copies of tile+S-1 then refill. One barrier per tile. Copies past the last
        # tile are zero-fills (src-size 0) into a stage nobody reads again.
        for st in range(S - 1):
            emit_copies(1, str(st * BK), f"{st * a_stage} + ", f"{st * b_stage} + ")
            s(1, "cp_commit()")
        s(1, "for tile in range(ntiles):")
        s(2, f"cp_wait{S - 2}()")
        s(2, "cuda.syncthreads()")
        s(2, f"nxt = (tile + {S - 1}) % {S}")
        s(2, f"a_nxt = nxt * {a_stage}")
        s(2, f"b_nxt = nxt * {b_stage}")
        emit_copies(2, f"(tile + {S - 1}) * {BK}", "a_nxt + ", "b_nxt + ")
        s(2, "cp_commit()")
        s(2, f"cur = tile % {S}")
        s(2, f"a_cur = cur * {a_stage}")
        s(2, f"b_cur = cur * {b_stage}")
        emit_compute(2, "a_cur + ", "b_cur + ")
    elif t.STAGES == 1:
        s(1, "for tile in range(ntiles):")
        s(2, f"k0 = tile * {BK}")
        emit_global_loads(2, "k0")
        emit_smem_stores(2, "", "")
        s(2, "cuda.syncthreads()")
        emit_compute(2, "", "")
        s(2, "cuda.syncthreads()")
    else:
        # Prologue: tile 0 into stage 0. Each iteration loads tile+1 into registers before computing on the
        # current stage, then stores it into the other stage; one barrier per tile suffices because a stage is
        # rewritten only after every thread has passed the barrier that ended the last reads of it.
        emit_global_loads(1, "0")
        emit_smem_stores(1, "", "")
        s(1, "cuda.syncthreads()")
        s(1, "a_cur = 0")
        s(1, "b_cur = 0")
        s(1, "for tile in range(ntiles):")
        s(2, f"k1 = (tile + 1) * {BK}")
        emit_global_loads(2, "k1")  # past the last tile every guard fails: zeros, stored harmlessly
        emit_compute(2, "a_cur + ", "b_cur + ")
        s(2, f"a_cur = {a_stage} - a_cur")
        s(2, f"b_cur = {b_stage} - b_cur")
        emit_smem_stores(2, "a_cur + ", "b_cur + ")
        s(2, "cuda.syncthreads()")

    # Epilogue: each lane's TM×TN results per sub-tile, rows and columns guarded against the matrix edge.
    for i, r in rows:
        m = i * t.TM + r
        s(1, f"row = bm0 + a_rd + {i * t.wsubm + r}")
        s(1, "if row < M:")
        s(2, "rowo = row * N")
        for j in range(t.WNITER):
            for c in range(0, t.TN, t.VEC):
                n = j * t.TN + c
                s(2, f"col = bn0 + b_rd + {j * t.wsubn + c}")
                if t.VEC == 4:
                    s(2, "if col < N:")
                    s(3, x.st('g', 'C', "rowo + col", *(f"c_{m}_{n + e}" for e in range(4))))
                else:
                    s(2, "if col < N:")
                    s(3, x.st('g', 'C', "rowo + col", f"c_{m}_{n}"))
    return s.text()


_COUNTER = [0]


def make_kernel(name: str, t: Tiling, access: str = "intrinsic", **jit_options):
    """Generate, exec and ``cuda.jit`` the kernel for tiling ``t``. Returns (dispatcher, source)."""
    from numba import cuda, float32

    src = gemm_source(name, t, access=access)
    _COUNTER[0] += 1
    filename = f"<gemmlab-numba {name} #{_COUNTER[0]}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # tracebacks show the source
    namespace: dict[str, Any] = {"cuda": cuda, "float32": float32, **primitives()}
    exec(compile(src, filename, "exec"), namespace)
    fn = namespace[name]
    if numba_mode() == "simulator":
        return cuda.jit(fn), src
    return cuda.jit(**jit_options)(fn), src
