"""The memory-access primitives the generated kernels call: numba intrinsics that emit one PTX load, store or
cp.async each on the GPU, and plain Python element accesses on flattened NumPy views under the CUDA simulator."""
from __future__ import annotations

from typing import Any

import numpy as np

from gemmlab.device import numba_mode


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
    if numba_mode() == "simulator":
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
