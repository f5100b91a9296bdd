"""The CUDA driver calls on gemmlab's hot path, through ctypes: prepared launches, tensor maps, pitched copies.

A ``Launch`` holds everything a kernel launch needs but the values that change per call: the function, its
geometry (a cluster shape goes through cuLaunchKernelEx) and one buffer laid out like the kernel's parameter list,
with the void* array the driver reads it through. A call writes the few values that changed (pointers, a flag) into
that buffer and launches: no argument packing, no Python objects made per call. A tensor map is a parameter too (a
__grid_constant__ struct member), so a new operand address is one cuTensorMapReplaceAddress on the map in place.

cuda.core and cuda.bindings stay on the cold path (compiling, loading, occupancy queries): cuda.core's launch
packs its arguments anew on every call and takes no 128-byte struct by value.

libcuda.so.1 is loaded on first use; ``use_library`` points gemmlab at another library with the same entry points
(the tests load a stub that records what it is given).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Sequence

from gemmlab.errors import GemmlabError

CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_CONTEXT = 201
CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
CU_MEMORYTYPE_DEVICE = 2
CU_STREAM_CAPTURE_STATUS_ACTIVE = 1
# cuTensorMapEncodeTiled's enums (cuda.h)
TMA_DTYPES = {"fp8": 0, "bf16": 9, "f16": 6, "fp32": 7, "tf32": 11}  # FP8 moves as UINT8: TMA only copies it;
# TFLOAT32 reads FP32 from memory and writes shared memory rounded to TF32 (the TMA_ROUND levels)
TMA_SWIZZLE_128B = 3
TMA_L2_PROMOTION_128B = 2
MAP_BYTES = 128


class DriverError(GemmlabError, RuntimeError):
    """A CUDA driver call failed; the message carries the driver's own name for the error."""


class _LaunchAttribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint32 * 16)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttribute)), ("numAttrs", ctypes.c_uint)]


class _Memcpy2D(ctypes.Structure):
    _fields_ = [("srcXInBytes", ctypes.c_size_t), ("srcY", ctypes.c_size_t), ("srcMemoryType", ctypes.c_int),
                ("srcHost", ctypes.c_void_p), ("srcDevice", ctypes.c_uint64), ("srcArray", ctypes.c_void_p),
                ("srcPitch", ctypes.c_size_t), ("dstXInBytes", ctypes.c_size_t), ("dstY", ctypes.c_size_t),
                ("dstMemoryType", ctypes.c_int), ("dstHost", ctypes.c_void_p), ("dstDevice", ctypes.c_uint64),
                ("dstArray", ctypes.c_void_p), ("dstPitch", ctypes.c_size_t), ("WidthInBytes", ctypes.c_size_t),
                ("Height", ctypes.c_size_t)]


_lib = None
_path = "libcuda.so.1"
_u, _p, _sz = ctypes.c_uint, ctypes.c_void_p, ctypes.c_size_t
_SIGNATURES = {
    "cuLaunchKernelEx": (ctypes.POINTER(_LaunchConfig), _p, _p, _p),
    "cuTensorMapEncodeTiled": (_p, ctypes.c_int, ctypes.c_uint32, _p, ctypes.POINTER(ctypes.c_uint64),
                               ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32),
                               ctypes.POINTER(ctypes.c_uint32), ctypes.c_int, ctypes.c_int, ctypes.c_int,
                               ctypes.c_int),
    "cuTensorMapReplaceAddress": (_p, _p),
    "cuMemcpy2DAsync_v2": (ctypes.POINTER(_Memcpy2D), _p),
    "cuCtxGetCurrent": (ctypes.POINTER(_p),),
    "cuCtxSetCurrent": (_p,),
    "cuGetErrorName": (ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)),
    "cuStreamIsCapturing": (_p, ctypes.POINTER(ctypes.c_int)),
    "cuMemsetD8Async": (ctypes.c_uint64, ctypes.c_ubyte, _sz, _p),
}


def use_library(path: str) -> None:
    """Load the driver entry points from ``path`` instead of libcuda.so.1 (from the next call on)."""
    global _lib, _path, _launch_ex, _address_offset
    _lib, _path, _launch_ex, _address_offset = None, path, None, _UNPROBED


def lib():
    global _lib
    if _lib is None:
        try:
            handle = ctypes.CDLL(_path)
        except OSError as exc:
            raise DriverError(f"cannot load the CUDA driver library {_path} ({exc})") from None
        for name, args in _SIGNATURES.items():
            fn = getattr(handle, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
        _lib = handle
    return _lib


def check(err: int, what: str) -> None:
    if err != CUDA_SUCCESS:
        name = ctypes.c_char_p()
        lib().cuGetErrorName(err, ctypes.byref(name))
        raise DriverError(f"{what} failed: {(name.value or b'CUDA error').decode()} ({err})")


def current_context() -> int:
    ctx = ctypes.c_void_p()
    check(lib().cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    return ctx.value or 0


# ---- kernel parameters -------------------------------------------------------------------------------------------
_SCALARS = {"ptr": (8, ctypes.c_uint64), "i32": (4, ctypes.c_int32), "u32": (4, ctypes.c_uint32),
            "f32": (4, ctypes.c_float), "i64": (8, ctypes.c_int64)}
MAP = "map"  # a CUtensorMap: 128 bytes, 64-byte aligned


@dataclass(frozen=True)
class Struct:
    """A struct passed by value as one kernel parameter, its fields (name, kind) in declaration order."""

    fields: tuple[tuple[str, str], ...]

    def layout(self) -> tuple[dict[str, int], int, int]:
        """(field offsets, size, alignment) by the C rules: each field at a multiple of its alignment, the size
        a multiple of the largest."""
        offsets, at, align = {}, 0, 1
        for name, kind in self.fields:
            size, a = _size_align(kind)
            at = -(-at // a) * a
            offsets[name] = at
            at += size
            align = max(align, a)
        return offsets, -(-at // align) * align, align


def _size_align(kind) -> tuple[int, int]:
    if kind == MAP:
        return MAP_BYTES, 64
    if isinstance(kind, Struct):
        _, size, align = kind.layout()
        return size, align
    return _SCALARS[kind][0], _SCALARS[kind][0]


class Params:
    """One kernel's parameter list in host memory: each parameter at its own aligned place in one buffer, the
    void* array pointing at them, and a writable view per scalar (``params.C = ptr``). Field names of a struct
    parameter, and of the structs nested in it, are addressed directly; names must be unique across the list."""

    def __init__(self, signature: Sequence[tuple[str, object]]):
        places, at = [], 0
        for name, kind in signature:
            size, align = _size_align(kind)
            at = -(-at // align) * align
            places.append((name, kind, at))
            at += size
        self._buf = ctypes.create_string_buffer(at + 64)
        base = -(-ctypes.addressof(self._buf) // 64) * 64
        self.array = (ctypes.c_void_p * len(places))(*[base + off for _, _, off in places])
        self.address = ctypes.addressof(self.array)
        self._fields: dict[str, tuple[str, int]] = {}
        for name, kind, off in places:
            self._add(name, kind, base + off)

    def _add(self, name: str, kind, addr: int) -> None:
        if isinstance(kind, Struct):
            offsets, _, _ = kind.layout()
            for fname, fkind in kind.fields:
                self._add(fname, fkind, addr + offsets[fname])
            return
        if name in self._fields:
            raise ValueError(f"kernel parameter {name!r} named twice")
        self._fields[name] = (kind, addr)
        if kind != MAP:
            object.__setattr__(self, "_v_" + name, _SCALARS[kind][1].from_address(addr))

    def __setattr__(self, name, value):
        view = self.__dict__.get("_v_" + name)
        if view is None:
            object.__setattr__(self, name, value)
        else:
            view.value = value

    def __getattr__(self, name):
        view = self.__dict__.get("_v_" + name)
        if view is None:
            raise AttributeError(name)
        return view.value

    def views(self, *names: str) -> tuple:
        """The ctypes views of scalar parameters, for owners that write them on every launch."""
        return tuple(self.__dict__["_v_" + name] for name in names)

    def map_address(self, name: str) -> int:
        kind, addr = self._fields[name]
        if kind != MAP:
            raise ValueError(f"{name!r} is not a tensor map")
        return addr

    def raw(self, name: str) -> bytes:
        kind, addr = self._fields[name]
        return ctypes.string_at(addr, _size_align(kind)[0])


# ---- tensor maps -------------------------------------------------------------------------------------------------
def encode_tiled(dest: int, dtype: str, global_dim: Sequence[int], global_strides: Sequence[int],
                 box_dim: Sequence[int], address: int, swizzle: bool = True) -> None:
    """Encode a tiled tensor map (zero fill) at host address ``dest``: dimensions and box innermost first, the
    strides of every dimension but the innermost in bytes. 2-D with the 128-byte swizzle and 128-byte L2 promotion
    (kernels/cuda/launch/tma.py's TiledMap.encode_args), or 1-D without either (LinearMap: tc8's scales)."""
    rank = len(global_dim)
    dims = (ctypes.c_uint64 * rank)(*global_dim)
    strides = (ctypes.c_uint64 * max(1, rank - 1))(*global_strides)
    box = (ctypes.c_uint32 * rank)(*box_dim)
    elem = (ctypes.c_uint32 * rank)(*[1] * rank)
    check(lib().cuTensorMapEncodeTiled(dest, TMA_DTYPES[dtype], rank, address, dims, strides, box, elem, 0,
                                       TMA_SWIZZLE_128B if swizzle else 0, TMA_L2_PROMOTION_128B if swizzle else 0,
                                       0),
          f"cuTensorMapEncodeTiled({dtype}, dims {tuple(global_dim)}, strides {tuple(global_strides)} B, "
          f"box {tuple(box_dim)})")


def replace_address(dest: int, ptr: int) -> None:
    check(lib().cuTensorMapReplaceAddress(dest, ptr), "cuTensorMapReplaceAddress")


_UNPROBED = -1
_address_offset = _UNPROBED


def address_offset() -> int | None:
    """Where an encoded tensor map keeps its global address, if this driver keeps it as a plain 64-bit word: the
    byte offset, found once per process by encoding one map at two addresses and comparing; else None. The map's
    layout is the driver's own, so nothing is assumed: where the probe finds no such word, addresses change through
    cuTensorMapReplaceAddress (a driver call) instead of an 8-byte store."""
    global _address_offset
    if _address_offset == _UNPROBED:
        offsets = set()
        for shape in (((64, 64), (256,), (32, 64), True), ((4096,), (), (196,), False)):  # a 2-D and a 1-D map
            maps = []
            for address in (0x7F12_3456_7000, 0x7E65_4321_0C00):
                buf = ctypes.create_string_buffer(MAP_BYTES + 64)
                dest = -(-ctypes.addressof(buf) // 64) * 64
                encode_tiled(dest, "fp32", *shape[:3], address, swizzle=shape[3])
                words = [int.from_bytes(ctypes.string_at(dest + 8 * i, 8), "little") for i in range(MAP_BYTES // 8)]
                maps.append((words, address))
            (w0, a0), (w1, a1) = maps
            differ = [i for i in range(len(w0)) if w0[i] != w1[i]]
            ok = differ and len(differ) == 1 and (w0[differ[0]], w1[differ[0]]) == (a0, a1)
            offsets.add(8 * differ[0] if ok else None)
        _address_offset = offsets.pop() if len(offsets) == 1 else None
    return _address_offset


# ---- launches ----------------------------------------------------------------------------------------------------
_launch_ex = None


def _launch_ex_fn():
    """cuLaunchKernelEx as a bare function pointer: four pointer arguments, the cheapest call ctypes makes (every
    launch goes through it, clustered or not, since cuLaunchKernel's eleven arguments cost twice the time)."""
    global _launch_ex
    if _launch_ex is None:
        addr = ctypes.cast(lib().cuLaunchKernelEx, ctypes.c_void_p).value
        _launch_ex = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.c_void_p)(addr)
    return _launch_ex


class Launch:
    """One prepared kernel launch. ``params`` is written by the owner between calls; ``launch(stream)`` enqueues it
    in the current context: the caller makes the plan's device current (gemmlab.matmul compares it with the
    runtime's current device, which costs less than asking the driver), and a thread with no context current at all
    gets the plan's own and the launch again."""

    def __init__(self, function: int, grid: Sequence[int], block: Sequence[int], smem: int, params: Params,
                 cluster: Sequence[int] | None = None, context: int | None = None, cooperative: bool = False):
        """``cooperative``: the driver starts the grid only with every CTA resident at once, and refuses a grid that
        cannot be (a kernel whose CTAs wait for each other: tc10's SK_SPREAD)."""
        self.function, self.params = function, params
        self.grid, self.block, self.smem = tuple(grid), tuple(block), smem
        self.cluster = tuple(cluster) if cluster else None
        self.cooperative = cooperative
        self.context = current_context() if context is None else context
        attrs = []
        if self.cluster:
            attrs.append(_LaunchAttribute(id=CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION))
            attrs[-1].value[:3] = self.cluster
        if cooperative:
            attrs.append(_LaunchAttribute(id=CU_LAUNCH_ATTRIBUTE_COOPERATIVE))
            attrs[-1].value[0] = 1
        self._attrs = (_LaunchAttribute * max(1, len(attrs)))(*attrs)
        self._config = _LaunchConfig(*self.grid, *self.block, smem, None,
                                     ctypes.cast(self._attrs, ctypes.POINTER(_LaunchAttribute)), len(attrs))
        self._config_address = ctypes.addressof(self._config)

    def launch(self, stream: int) -> None:
        self._config.hStream = stream
        err = (_launch_ex or _launch_ex_fn())(self._config_address, self.function, self.params.address, None)
        if err == CUDA_ERROR_INVALID_CONTEXT:
            check(lib().cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
            err = _launch_ex(self._config_address, self.function, self.params.address, None)
        if err:
            check(err, f"cuLaunchKernelEx(grid {self.grid}, block {self.block}, {self.smem} B shared"
                       f"{', cluster ' + str(self.cluster) if self.cluster else ''}"
                       f"{', cooperative' if self.cooperative else ''})")


def copy_2d(dst: int, dst_pitch: int, src: int, src_pitch: int, width_bytes: int, rows: int, stream: int) -> None:
    """Enqueue a device-to-device copy of ``rows`` rows of ``width_bytes`` between pitched buffers."""
    desc = _Memcpy2D(srcMemoryType=CU_MEMORYTYPE_DEVICE, srcDevice=src, srcPitch=src_pitch,
                     dstMemoryType=CU_MEMORYTYPE_DEVICE, dstDevice=dst, dstPitch=dst_pitch,
                     WidthInBytes=width_bytes, Height=rows)
    check(lib().cuMemcpy2DAsync_v2(ctypes.byref(desc), stream), "cuMemcpy2DAsync")


def capturing(stream: int) -> bool:
    """Whether ``stream`` is being captured into a CUDA graph (cuStreamIsCapturing): what a launch enqueues there is
    recorded, not run, and the stream may take no allocation of device memory but its own pool's, and no
    synchronization."""
    status = ctypes.c_int()
    check(lib().cuStreamIsCapturing(stream, ctypes.byref(status)), "cuStreamIsCapturing")
    return status.value == CU_STREAM_CAPTURE_STATUS_ACTIVE


def zero_async(dst: int, nbytes: int, stream: int) -> None:
    """Enqueue the zeroing of ``nbytes`` at ``dst`` on ``stream`` (under capture, a memset node of the graph)."""
    check(lib().cuMemsetD8Async(dst, 0, nbytes, stream), "cuMemsetD8Async")
