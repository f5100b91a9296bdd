"""The launches for NumPy and CuPy operands (and host tensors through gemmlab.call.tensors): a plan found or prepared
for the call's key, the operands copied where the plan says, C allocated or ``out`` checked, then the kernel."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from gemmlab.call import checks
from gemmlab.call.operands import addend_facts, devices_differ, facts, kind_of, out_dtype_name, scale_facts
from gemmlab.call.cache import Prepared, plans, remember
from gemmlab.errors import LayoutError, SizeLimitError
from gemmlab.kernels.plan import COL
from gemmlab.problem import np_dtype, scaled_dtype


def overlaps(c: int, c_bytes: int, x: int, x_bytes: int) -> bool:
    return c < x + x_bytes and x < c + c_bytes


def array_matmul(A, B, kernel, precision, out, scale_a=None, scale_b=None, out_dtype=None, epilogue=None,
                 addend=None):
    """NumPy, CuPy and CUDA-array-interface operands (and CPU tensors through call.tensors); ``epilogue`` (a
    gemmlab.epilogue.Epilogue) fused, ``addend`` its bias or D (an array of the operands' kind and device)."""
    fa, fb = facts(A, "A"), facts(B, "B")
    if fa.kind != fb.kind and {fa.kind, fb.kind} != {"cupy"}:
        raise LayoutError(f"A is a {fa.kind} array and B a {fb.kind} array: pass two arrays of one kind")
    if fa.device != fb.device:
        raise LayoutError(devices_differ(fa, fb))
    scales = (scale_facts(scale_a, "scale_a"), scale_facts(scale_b, "scale_b"))
    out_name = out_dtype_name(out_dtype)
    fd = addend_facts(addend)
    key = ("array", kernel, precision, fa, fb, _out_key(out), scales, out_name, epilogue, fd)
    try:
        prepared = plans.get(key)
    except TypeError:  # a kernel or precision of no hashable kind: the checks name it
        checks.check_names(kernel, precision)
        raise
    if prepared is None:
        if 0 in fa.shape + fb.shape:
            return array_empty(fa.kind, (fa.dtype, fb.dtype), fa.device, (fa.shape, fb.shape),
                               (fa.shape[0], fb.shape[1]), kernel, precision, out, scales, out_name, epilogue, fd,
                               addend)
        prepared = checks.prepare(fa, fb, kernel, precision, fa.device, scales, out_name, epilogue, fd)
        if out is not None:
            checks.check_out(out, fa.kind, prepared.out_shape, fa.device, prepared.out_dtype)
        if prepared.scaled and fa.kind == "cupy" and None in (scale_a, scale_b):
            import cupy

            with cupy.cuda.Device(prepared.device):
                prepared.ones = cupy.ones(1, cupy.float32)
        remember(key, prepared)
    if fa.kind == "cupy":
        return _cupy_launch(prepared, A, B, out, (scale_a, scale_b), addend)
    return host_launch(prepared, A, B, out, (scale_a, scale_b), addend)


def array_empty(kind: str, dtypes: tuple, device, shapes: tuple, shape: tuple, kernel, precision, out,
                scales=(None, None), out_dtype: str | None = None, epilogue=None, fd=None, addend=None):
    """A product with a zero dimension for NumPy and CuPy operands (M, N or K of the matrices' ``shapes``, (M, K)
    and (K, N), or a batch's): C of ``shape``, in the dtype a call of these operands writes (its other checks:
    gemmlab.call.checks.empty_dtype), made without a kernel: empty where M, N or the batch is 0; for K = 0 what the
    epilogue makes of a zero product: zeros (every activation keeps 0), act(bias) in every row, or beta·D (alpha
    times an empty sum is 0), computed as ``Epilogue.apply_numpy`` computes it. ``out`` is checked and written as a
    call's is. ``scales`` and ``fd`` are the call's facts of its scales and addend."""
    import contextlib

    from gemmlab.epilogue import activate

    checks.check_names(kernel, precision)  # empty_dtype's cache hashes them
    dtype = checks.empty_dtype(kind, dtypes, device, shapes, kernel, precision, scales, out_dtype, epilogue, fd,
                               len(shape) > 2)
    if out is not None:
        checks.check_out(out, kind, shape, device, dtype)
    xp, where = np, contextlib.nullcontext()
    if kind == "cupy":
        import cupy as xp

        where = xp.cuda.Device(device)
    with where:
        c = out if out is not None else host_empty(shape, dtype) if kind == "numpy" else _device_empty(shape, dtype)
        if epilogue is None or epilogue.addend is None:
            c[...] = 0
        else:
            c[...] = activate(epilogue.activation, xp.asarray(addend).astype(xp.float64) * epilogue.beta)
    return c


def _out_key(out):
    if out is None:
        return None
    if kind_of(out) == "torch":
        return ("torch", tuple(out.shape), str(out.dtype), out.stride(), str(out.device), out.requires_grad,
                out.is_neg())
    return (kind_of(out), tuple(out.shape), str(out.dtype), out.strides, getattr(out.flags, "writeable", True),
            getattr(getattr(out, "device", None), "id", None))


def _host_array(x):
    """A NumPy array of the operand in host byte order (NumPy operands are used as they are)."""
    if not x.dtype.isnative:
        return x.astype(x.dtype.newbyteorder("="))
    return x


def _to_device(x, layout: str):
    """A host operand copied to the GPU in ``layout`` (COL: its transpose's row-major storage), FP8 as its bytes."""
    import cupy

    x = np.ascontiguousarray(x.T if layout == COL else x)
    return cupy.asarray(x.view(np.uint8) if scaled_dtype(x.dtype.name) else x)


def host_launch(prepared: Prepared, A, B, out, scales=(None, None), addend=None):
    if prepared.host_copy:  # a GPU kernel on host operands: the copies, C and the launch on the plan's GPU
        import cupy

        with cupy.cuda.Device(prepared.device):
            return _host_copy_launch(prepared, A, B, out, scales, addend)
    plan = prepared.plan
    a, b = _host_array(A), _host_array(B)
    if out is None:
        c = host_empty(prepared.out_shape, prepared.out_dtype)
    else:
        c = out
        if np.shares_memory(c, a) or np.shares_memory(c, b):
            raise LayoutError("out overlaps A or B; gemmlab writes C while it reads them")
    with prepared.lock:
        if addend is not None:
            plan.set_addend(_host_array(addend))
        plan.launch(a, b, c)
    return c


def _host_copy_launch(prepared: Prepared, A, B, out, scales, addend):
    """Host operands on the GPU kernel of ``prepared`` (its device current): copied there in the layouts it reads,
    the result copied back."""
    import cupy

    a, b = _to_device(A, prepared.plan.layout.a), _to_device(B, prepared.plan.layout.b)
    if prepared.scaled:  # scales in the layouts the kernel reads (gemmlab.fp8)
        scales = tuple(None if s is None else cupy.asarray(np.ascontiguousarray(
            np.asarray(s, np.float32).reshape(1) if np.size(s) == 1 else np.asarray(s, np.float32).T))
            for s in scales)
        if None in scales:
            prepared.ones = cupy.ones(1, cupy.float32)
        prepared = dataclasses.replace(prepared, copy_scales=(False, False))
    c = cupy.empty(prepared.out_shape, np_dtype(prepared.out_dtype))
    d = None if addend is None else cupy.asarray(np.ascontiguousarray(_host_array(addend)))
    _cupy_run(prepared, a.data.ptr, b.data.ptr, c.data.ptr, scales, d)
    result = c.get()
    if out is None:
        return result
    out[...] = result
    return out


def host_memory_bytes() -> float:
    """This machine's physical memory in bytes (infinite where the system does not say)."""
    import os

    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return math.inf


def check_host_memory(shape: tuple, dtype: str = "float32") -> None:
    """A SizeLimitError where C of ``shape`` would not fit in this machine's memory at all."""
    need = np_dtype(dtype).itemsize * math.prod(shape)
    total = host_memory_bytes()
    if need > total:
        raise SizeLimitError(f"C ({'×'.join(map(str, shape))} {dtype}) needs {need / 2**30:.1f} GiB; this machine "
                             f"has {total / 2**30:.1f} GiB of memory")


def host_empty(shape: tuple, dtype: str = "float32") -> np.ndarray:
    """C of ``shape`` on the host; a SizeLimitError where it cannot be allocated."""
    check_host_memory(shape, dtype)
    try:
        return np.empty(shape, np_dtype(dtype))
    except MemoryError:
        need = np_dtype(dtype).itemsize * math.prod(shape)
        raise SizeLimitError(f"C ({'×'.join(map(str, shape))} {dtype}) needs {need / 2**30:.1f} GiB of host memory, "
                             "which could not be allocated") from None


def _cupy_launch(prepared: Prepared, A, B, out, scales=(None, None), addend=None):
    import cupy

    if cupy.cuda.runtime.getDevice() != prepared.device:  # the arrays' GPU is not the current one: all of the call
        with cupy.cuda.Device(prepared.device):          # (copies, C, the stream, the launch) in its context
            return _cupy_launch(prepared, A, B, out, scales, addend)
    if prepared.copy_a:
        A = cupy.ascontiguousarray(A)
    if prepared.copy_b:
        B = cupy.ascontiguousarray(B)
    if out is None:
        try:
            c = cupy.empty(prepared.out_shape, np_dtype(prepared.out_dtype))
        except cupy.cuda.memory.OutOfMemoryError:
            raise SizeLimitError(gpu_memory_message(prepared.out_shape, prepared.out_dtype)) from None
        cp = c.data.ptr
    else:
        c, cp = out, out.data.ptr
        if overlaps(cp, prepared.c_bytes, A.data.ptr, prepared.span_a) or \
                overlaps(cp, prepared.c_bytes, B.data.ptr, prepared.span_b):
            raise LayoutError("out overlaps A or B; gemmlab writes C while it reads them")
    _cupy_run(prepared, A.data.ptr, B.data.ptr, cp, scales, addend)
    return c


def _cupy_run(prepared: Prepared, a: int, b: int, c: int, scales, addend=None) -> None:
    """Launch on CuPy's current stream of the plan's device, which is current; FP8 plans get their scales'
    addresses (a scale in a layout the kernel does not read is copied into one first, on the same stream), an
    epilogue its addend's."""
    import cupy

    stream = cupy.cuda.get_current_stream().ptr
    plan = prepared.for_stream(stream)
    extra = ()
    if prepared.scaled:
        (sa, sb), (copy_a, copy_b) = scales, prepared.copy_scales
        sa = prepared.ones if sa is None else cupy.ascontiguousarray(sa.T).T if copy_a else sa
        sb = prepared.ones if sb is None else cupy.ascontiguousarray(sb.T).T if copy_b else sb
        extra = (sa.data.ptr, sb.data.ptr)
    with prepared.lock:
        if addend is not None:
            plan.set_addend(addend.data.ptr)
        plan.launch(a, b, c, stream, *extra)


def _device_empty(shape: tuple, dtype: str):
    """C of ``shape`` from CuPy's pool on the current device; a SizeLimitError where it does not fit."""
    import cupy

    try:
        return cupy.empty(shape, np_dtype(dtype))
    except cupy.cuda.memory.OutOfMemoryError:
        raise SizeLimitError(gpu_memory_message(shape, dtype)) from None


def gpu_memory_message(shape, dtype: str = "float32") -> str:
    size = np_dtype(dtype).itemsize * math.prod(shape)
    return f"C ({'×'.join(map(str, shape))} {dtype}, {size / 2**30:.1f} GiB) does not fit in the GPU memory left free"
