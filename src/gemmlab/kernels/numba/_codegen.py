"""Shared code generation for the fast numba levels (v3 onwards).

numba compiles what the Python source says, and the plain numba way of writing a register-tiled GEMM says too
much and too little: array indexing carries 64-bit index math, a negative-index wraparound select and loads of
the array's shape; ``cuda.local.array`` accumulators indexed in a ``for`` loop that NVVM does not fully unroll
go to local memory; and Python has no float4. This module removes those costs at the source:

* **Templates.** Each level's kernel is Python source generated here from its tile constants (BM, BN, BK, the
  warp tile WM×WN split WMITER×WNITER times, TM×TN per thread) and exec'd, so every tile size is a literal,
  every per-thread accumulator is a scalar local (``c_3_5``) and every loop over BK, TM and TN is unrolled in
  the text itself. NVVM sees straight-line code, as nvcc sees CUDA C with ``#pragma unroll``.
* **Memory intrinsics.** ``ldg/ldg4/stg/stg4`` (global) and ``lds/lds4/sts/sts4`` (shared) are numba
  ``@intrinsic``\\ s that emit one load or store from the array's data pointer plus a flat element offset: no
  wraparound, no shape loads, and the ``.v4`` forms are single 16-byte instructions (``ld.global.nc.v4.f32``,
  ``ld.shared.v4.f32``) that numba's indexing cannot express. Shared accesses are cast to the shared address
  space so they compile to ``ld.shared``/``st.shared`` with immediate offsets instead of generic loads.
  ``cp4/cp16/cp_commit/cp_waitN`` emit cp.async as inline PTX, which numba lacks. ``gemm_source(...,
  access="index")`` writes the same template with numba array indexing, as a baseline.
* **Variants per problem.** 16-byte global accesses need K % 4 == 0, N % 4 == 0 and 16-byte aligned operands;
  otherwise the same template, emitted with 4-byte global accesses, runs instead (``GeneratedKernel.variant``
  picks per launch), so every M, N, K >= 1 stays valid.

Under numba's CUDA simulator (CI without a GPU) the same generated source runs with the intrinsics replaced by
plain Python element accesses on flattened NumPy views, so the tests execute the real kernel text.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import config, cuda, float32

from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.numba._kernel import NumbaKernel, numba_plan
from gemmlab.kernels.plan import ROW_MAJOR
from gemmlab.kernels.spec import SM_COUNT, tiled_traffic
from gemmlab.problem import Problem

SIMULATED = bool(config.ENABLE_CUDASIM)


# --------------------------------------------------------------------------------------------------------------
# Memory access primitives
# --------------------------------------------------------------------------------------------------------------
def _sim_flat(x):
    """The NumPy array behind a simulator kernel argument, as a flat view (writes land in the original)."""
    while hasattr(x, "_item") or hasattr(x, "_ary"):
        x = x._item if hasattr(x, "_item") else x._ary
    return np.asarray(x).reshape(-1)


def _sim_ld(a, i):
    return a[i]


def _sim_ld4(a, i):
    return a[i], a[i + 1], a[i + 2], a[i + 3]


def _sim_st(a, i, v):
    a[i] = v


def _sim_st4(a, i, x, y, z, w):
    a[i] = x
    a[i + 1] = y
    a[i + 2] = z
    a[i + 3] = w


def _sim_cp(s, si, g, gi, ok):
    s[si] = g[gi] if ok else 0.0


def _sim_cp16(s, si, g, gi, ok):
    for e in range(4):
        s[si + e] = g[gi + e] if ok else 0.0


def _sim_nop():
    pass


def _gpu_intrinsics() -> dict[str, Any]:
    """numba intrinsics for one-instruction loads and stores at a flat element offset (GPU only)."""
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    GLOBAL, SHARED = 1, 3
    f32 = ir.FloatType()

    def element_ptr(context, builder, arrty, arr, idxty, idx, addrspace):
        ary = context.make_array(arrty)(context, builder, value=arr)
        offset = context.cast(builder, idx, idxty, types.int64)  # sign- or zero-extends, no wraparound
        ptr = builder.gep(ary.data, [offset], inbounds=True)
        return builder.addrspacecast(ptr, ir.PointerType(f32, addrspace))

    def vec_ptr(builder, ptr, addrspace):
        return builder.bitcast(ptr, ir.PointerType(ir.VectorType(f32, 4), addrspace))

    def check(arr, idx):
        if not (isinstance(arr, types.Array) and arr.dtype == types.float32 and arr.layout == "C"):
            raise TypeError(f"expected a C-contiguous float32 array, got {arr}")
        if not isinstance(idx, types.Integer):
            raise TypeError(f"expected an integer element offset, got {idx}")

    quad = types.UniTuple(types.float32, 4)

    def load(addrspace):
        @intrinsic
        def ld(typingctx, arr, idx):
            check(arr, idx)

            def codegen(context, builder, sig, args):
                ptr = element_ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1], addrspace)
                if addrspace == GLOBAL:  # read-only path: ld.global.nc
                    asm = ir.InlineAsm(ir.FunctionType(f32, [ptr.type]), "ld.global.nc.f32 $0, [$1];", "=f,l")
                    return builder.call(asm, [ptr])
                return builder.load(ptr, align=4)

            return types.float32(arr, idx), codegen

        return ld

    def load4(addrspace):
        @intrinsic
        def ld4(typingctx, arr, idx):
            check(arr, idx)

            def codegen(context, builder, sig, args):
                ptr = element_ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1], addrspace)
                if addrspace == GLOBAL:
                    out = ir.LiteralStructType([f32] * 4)
                    asm = ir.InlineAsm(ir.FunctionType(out, [ptr.type]),
                                       "ld.global.nc.v4.f32 {$0, $1, $2, $3}, [$4];", "=f,=f,=f,=f,l")
                    res = builder.call(asm, [ptr])
                    vals = [builder.extract_value(res, i) for i in range(4)]
                else:
                    vec = builder.load(vec_ptr(builder, ptr, addrspace), align=16)
                    vals = [builder.extract_element(vec, ir.Constant(ir.IntType(32), i)) for i in range(4)]
                return context.make_tuple(builder, quad, vals)

            return quad(arr, idx), codegen

        return ld4

    def store(addrspace):
        @intrinsic
        def st(typingctx, arr, idx, val):
            check(arr, idx)

            def codegen(context, builder, sig, args):
                ptr = element_ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1], addrspace)
                v = context.cast(builder, args[2], sig.args[2], types.float32)
                builder.store(v, ptr, align=4)
                return context.get_dummy_value()

            return types.void(arr, idx, val), codegen

        return st

    def store4(addrspace):
        @intrinsic
        def st4(typingctx, arr, idx, x, y, z, w):
            check(arr, idx)

            def codegen(context, builder, sig, args):
                ptr = element_ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1], addrspace)
                vec = ir.Constant(ir.VectorType(f32, 4), ir.Undefined)
                for i in range(4):
                    v = context.cast(builder, args[2 + i], sig.args[2 + i], types.float32)
                    vec = builder.insert_element(vec, v, ir.Constant(ir.IntType(32), i))
                builder.store(vec, vec_ptr(builder, ptr, addrspace), align=16)
                return context.get_dummy_value()

            return types.void(arr, idx, x, y, z, w), codegen

        return st4

    def copy_async(nbytes):
        """cp.async of 4 or 16 bytes global -> shared; when ``ok`` is false the source is the array's first
        element and src-size is 0, so the destination is zero-filled and nothing out of bounds is read."""
        cache = "ca" if nbytes == 4 else "cg"  # 16-byte copies may bypass L1

        @intrinsic
        def cp(typingctx, sarr, sidx, garr, gidx, ok):
            check(sarr, sidx)
            check(garr, gidx)

            def codegen(context, builder, sig, args):
                i64, i32 = ir.IntType(64), ir.IntType(32)
                okv = context.cast(builder, args[4], sig.args[4], types.boolean)
                gi = context.cast(builder, args[3], sig.args[3], types.int64)
                gi = builder.select(okv, gi, ir.Constant(i64, 0))
                dst = element_ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1], SHARED)
                src = element_ptr(context, builder, sig.args[2], args[2], types.int64, gi, GLOBAL)
                size = builder.select(okv, ir.Constant(i32, nbytes), ir.Constant(i32, 0))
                asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [i64, i64, i32]),
                                   f"cp.async.{cache}.shared.global [$0], [$1], {nbytes}, $2;", "l,l,r",
                                   side_effect=True)
                builder.call(asm, [builder.ptrtoint(dst, i64), builder.ptrtoint(src, i64), size])
                return context.get_dummy_value()

            return types.void(sarr, sidx, garr, gidx, ok), codegen

        return cp

    def asm_stmt(text):
        @intrinsic
        def stmt(typingctx):
            def codegen(context, builder, sig, args):
                builder.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), text, "~{memory}",
                                          side_effect=True), [])
                return context.get_dummy_value()

            return types.void(), codegen

        return stmt

    prims = {"ldg": load(GLOBAL), "ldg4": load4(GLOBAL), "stg": store(GLOBAL), "stg4": store4(GLOBAL),
             "lds": load(SHARED), "lds4": load4(SHARED), "sts": store(SHARED), "sts4": store4(SHARED),
             "cp4": copy_async(4), "cp16": copy_async(16), "cp_commit": asm_stmt("cp.async.commit_group;")}
    for n in range(4):
        prims[f"cp_wait{n}"] = asm_stmt(f"cp.async.wait_group {n};")
    return prims


def _primitives() -> dict[str, Any]:
    if SIMULATED:
        return {"ldg": _sim_ld, "ldg4": _sim_ld4, "stg": _sim_st, "stg4": _sim_st4,
                "lds": _sim_ld, "lds4": _sim_ld4, "sts": _sim_st, "sts4": _sim_st4, "_flat": _sim_flat,
                "cp4": _sim_cp, "cp16": _sim_cp16, "cp_commit": _sim_nop,
                **{f"cp_wait{n}": _sim_nop for n in range(4)}}
    return _gpu_intrinsics()


_PRIMITIVES: dict[str, Any] | None = None


def primitives() -> dict[str, Any]:
    global _PRIMITIVES
    if _PRIMITIVES is None:
        _PRIMITIVES = _primitives()
    return _PRIMITIVES


# --------------------------------------------------------------------------------------------------------------
# The tile configuration and its constraints
# --------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tiling:
    """One block computes BM×BN of C, stepping K by BK. Its warps each own a WM×WN warp tile, split into
    WMITER×WNITER sub-tiles; the 32 lanes of a warp cover one sub-tile with TM×TN results per lane. A thread's
    TM rows (TN columns) are contiguous, so they load from shared memory as TM/4 (TN/4) 16-byte vectors.

    VEC: width of global loads and C stores (4 = 16 bytes, needs K % 4 == N % 4 == 0; 1 = any shape).
    SVEC: read shared memory with 16-byte loads. STAGES: 1 = load, sync, compute, sync; 2 = the next tile is
    loaded into registers while this one is computed, then stored to the other shared buffer (one sync per tile).
    ASYNC: tiles move global -> shared by cp.async into a ring of STAGES buffers, STAGES - 1 tiles in flight.
    APAD: floats of padding after each BM-long row of the transposed A tile (keeps the transposing stores
    conflict-free; a multiple of 4 keeps 16-byte alignment).
    """

    BM: int
    BN: int
    BK: int
    WM: int
    WN: int
    WMITER: int
    WNITER: int
    TM: int
    TN: int
    VEC: int = 1
    SVEC: bool = False
    STAGES: int = 1
    APAD: int = 0
    ASYNC: bool = False

    @property
    def threads(self) -> int:
        return (self.BM // self.WM) * (self.BN // self.WN) * 32

    @property
    def wsubm(self) -> int:
        return self.WM // self.WMITER

    @property
    def wsubn(self) -> int:
        return self.WN // self.WNITER

    @property
    def bmp(self) -> int:
        return self.BM + self.APAD

    def smem_bytes(self) -> int:
        return 4 * self.STAGES * self.BK * (self.bmp + self.BN)

    def errors(self) -> list[str]:
        e = []
        if self.BM % self.WM or self.BN % self.WN:
            e.append(f"warp tile {self.WM}×{self.WN} must divide the block tile {self.BM}×{self.BN}")
        if self.WM % self.WMITER or self.WN % self.WNITER:
            e.append("WMITER must divide WM and WNITER must divide WN")
        elif (self.wsubm % self.TM or self.wsubn % self.TN
              or (self.wsubm // self.TM) * (self.wsubn // self.TN) != 32):
            e.append(f"a {self.wsubm}×{self.wsubn} warp sub-tile with {self.TM}×{self.TN} per lane is not 32 lanes")
        if self.threads > 1024:
            e.append(f"{self.threads} threads per block is over 1024")
        if self.VEC not in (1, 4):
            e.append("VEC must be 1 or 4")
        if self.BK % self.VEC or self.BN % self.VEC:
            e.append("VEC must divide BK and BN")
        for name, elems in (("A", self.BM * self.BK), ("B", self.BK * self.BN)):
            if elems % (self.VEC * self.threads):
                e.append(f"the {name} tile ({elems} floats) does not split evenly into {self.threads} threads "
                         f"loading {self.VEC} each")
        if self.SVEC and (self.TM % 4 or self.TN % 4 or self.APAD % 4 or self.BN % 4):
            e.append("16-byte shared loads need TM, TN, APAD and BN multiples of 4")
        if self.VEC == 4 and self.TN % 4:
            e.append("16-byte C stores need TN % 4 == 0")
        if self.ASYNC and not 2 <= self.STAGES <= 5:
            e.append("a cp.async ring needs 2 to 5 STAGES")
        if not self.ASYNC and self.STAGES not in (1, 2):
            e.append("STAGES must be 1 or 2 (register prefetch); deeper rings need ASYNC")
        if self.smem_bytes() > 48 * 1024:
            e.append(f"{self.smem_bytes()} bytes of static shared memory is over 48 KiB")
        return e


# --------------------------------------------------------------------------------------------------------------
# The kernel template
# --------------------------------------------------------------------------------------------------------------
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


def gemm_source(name: str, t: Tiling, simulated: bool = SIMULATED, access: str = "intrinsic") -> str:
    """Python source of a kernel ``name(C, A, B, M, N, K)`` computing C = A @ B with tiling ``t``.

    ``access="index"`` writes every access as numba array indexing instead (a baseline for measurements; the
    kernel then takes flat 1-D arrays)."""
    x = _Indexing if access == "index" else _Intrinsics
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
    src = gemm_source(name, t, access=access)
    _COUNTER[0] += 1
    filename = f"<gemmlab-numba {name} #{_COUNTER[0]}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # tracebacks show the source
    namespace: dict[str, Any] = {"cuda": cuda, "float32": float32, **primitives()}
    exec(compile(src, filename, "exec"), namespace)
    fn = namespace[name]
    if SIMULATED:
        return cuda.jit(fn), src
    return cuda.jit(**jit_options)(fn), src


# --------------------------------------------------------------------------------------------------------------
# The spec: picks the 16-byte or the 4-byte variant for each problem
# --------------------------------------------------------------------------------------------------------------
def vector_ok(problem: Problem) -> bool:
    """16-byte global accesses stay aligned when every row of A, B and C starts on a 16-byte boundary."""
    return problem.k % 4 == 0 and problem.n % 4 == 0


@dataclass(frozen=True, kw_only=True)
class GeneratedKernel(NumbaKernel):
    """A numba level generated from a Tiling. ``scalar`` is the same tiling with 4-byte global accesses, used
    when a problem's rows are not 16-byte aligned (K or N not a multiple of 4) or an operand is misaligned."""

    tiling: Tiling | None = None
    scalar: Any = None  # dispatcher of the VEC=1 variant, or None when ``kernel`` already is VEC=1
    source: str = ""
    jit_options: dict = field(default_factory=dict)

    def config_error(self) -> str | None:
        broken = self.tiling.errors() if self.tiling else ["no tiling"]
        return "; ".join(broken) if broken else None

    def variant(self, problem: Problem, aligned: bool = True):
        if self.scalar is not None and not (vector_ok(problem) and aligned):
            return self.scalar
        return self.kernel

    def plan(self, problem: Problem, layout=ROW_MAJOR):
        return numba_plan(self, problem, layout, lambda aligned: self.variant(problem, aligned))


def tiled_geometry(problem: Problem, params: dict) -> Geometry:
    threads = (params["BM"] // params["WM"]) * (params["BN"] // params["WN"]) * 32
    return Geometry((ceil_div(problem.n, params["BN"]), ceil_div(problem.m, params["BM"]), 1), (threads, 1, 1))


def level(name: str, level: int, title: str, tiling: Tiling, doc: str, unmodeled: str = "",
          **jit_options) -> GeneratedKernel:
    """The spec of one generated level: the kernel at ``tiling`` and, when it uses 16-byte global accesses,
    its 4-byte twin for unaligned problems. ``unmodeled``: see KernelSpec."""
    errors = tiling.errors()
    if errors:
        from gemmlab.errors import InvalidConfigError

        raise InvalidConfigError(f"numba/{name}: {'; '.join(errors)}")
    if not SIMULATED:
        jit_options.setdefault("launch_bounds", tiling.threads)
    kernel, src = make_kernel(name, tiling, **jit_options)
    scalar = None
    if tiling.VEC == 4:
        scalar, _ = make_kernel(f"{name}_any", _replace(tiling, VEC=1), **jit_options)
    params = {f: getattr(tiling, f) for f in tiling.__dataclass_fields__}
    return GeneratedKernel(
        name=f"numba/{name}", level=level, precision="fp32", title=title, kernel=kernel, scalar=scalar,
        tiling=tiling, source=src, jit_options=jit_options, params=params, geometry=tiled_geometry, unmodeled=unmodeled,
        traffic_model=lambda pr, sm_count=SM_COUNT: tiled_traffic(pr, tiling.BM, tiling.BN,
                                                                  warp=(tiling.WM, tiling.WN)), doc=doc,
    )


def _replace(t: Tiling, **changes) -> Tiling:
    from dataclasses import replace

    return replace(t, **changes)
