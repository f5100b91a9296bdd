"""A call's operands, whatever their kind (NumPy, CuPy, PyTorch, the CUDA array interface): shape, dtype, layout
and device, read once per call and part of its plan key."""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from gemmlab.errors import DTypeError, OperandTypeError, ShapeError
from gemmlab.kernels.plan import ANY, COL, ROW


@dataclass(frozen=True)
class Facts:
    kind: str  # numpy | cupy | torch
    shape: tuple
    dtype: str  # numpy-style name: float32, bfloat16, ...
    layout: str | None  # ROW, COL, or None (strided: copied)
    device: int | None  # CUDA device index; None on the host
    native: bool = True  # host byte order (NumPy)


def _torch():
    return sys.modules.get("torch")


def kind_of(x) -> str:
    if isinstance(x, np.ma.MaskedArray):  # its mask would be ignored: the hidden entries computed with, silently
        raise OperandTypeError("a NumPy masked array: gemmlab does not apply masks; pass the array's .filled(0)")
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):  # a subclass of Tensor too, as torch.matmul takes it
        return "torch"
    if type(x).__module__.startswith("cupy"):
        return "cupy"
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        return "numpy"
    if hasattr(x, "__cuda_array_interface__"):
        return "cuda-interface"
    raise OperandTypeError(f"gemmlab takes NumPy, CuPy or PyTorch arrays (or objects with __cuda_array_interface__), "
                           f"got {type(x).__name__}")


def _layout(shape, strides) -> str | None:
    """ROW, COL, ANY (a vector: both at once) or None (strided) from element strides."""
    rows, cols = shape
    s0, s1 = strides
    row = (s1 == 1 or cols == 1) and (s0 == cols or rows == 1)
    col = (s0 == 1 or rows == 1) and (s1 == rows or cols == 1)
    if row and col:
        return ANY
    return ROW if row else COL if col else None


def facts(x, name: str) -> Facts:
    if isinstance(x, np.ma.MaskedArray):  # its mask would be ignored: a product of the hidden entries, silently
        raise OperandTypeError(f"{name} is a NumPy masked array; gemmlab does not apply masks: pass {name}.filled(0)")
    kind = kind_of(x)
    if kind == "cuda-interface":
        import cupy

        x, kind = cupy.asarray(x), "cupy"
    ndim = x.dim() if kind == "torch" else x.ndim
    shape = tuple(x.shape)
    if ndim != 2:
        what = "a 0-D scalar" if ndim == 0 else f"{ndim}-D with shape {shape}"
        raise ShapeError(f"{name} must be a 2-D matrix, got {what}")
    if kind == "torch":
        dtype = str(x.dtype).removeprefix("torch.")
        return Facts(kind, shape, dtype, _layout(shape, x.stride()), x.device.index if x.is_cuda else None)
    dtype = x.dtype
    layout = None
    if all(s % dtype.itemsize == 0 for s in x.strides):
        layout = _layout(shape, tuple(s // dtype.itemsize for s in x.strides))
    device = x.device.id if kind == "cupy" else None
    return Facts(kind, shape, np.dtype(dtype).name, layout, device, native=dtype.isnative or dtype.itemsize == 1)


def scale_facts(x, name: str) -> Facts | None:
    """The facts of a scale argument (None stays None): any shape, its layout where it is 2-D."""
    if x is None:
        return None
    if isinstance(x, (int, float)):
        raise DTypeError(f"{name} must be a float32 array on the operands' device, not a Python {type(x).__name__}: "
                         "the kernel reads it by address, so a scale the GPU computed is never read back to the host")
    kind = kind_of(x)
    if kind == "cuda-interface":
        import cupy

        x, kind = cupy.asarray(x), "cupy"
    shape = tuple(x.shape)
    if kind == "torch":
        dtype, strides = str(x.dtype).removeprefix("torch."), tuple(x.stride())
        device = x.device.index if x.is_cuda else None
    else:
        dtype, strides = np.dtype(x.dtype).name, tuple(s // x.dtype.itemsize for s in x.strides)
        device = x.device.id if kind == "cupy" else None
    return Facts(kind, shape, dtype, _layout(shape, strides) if len(shape) == 2 else ROW, device)


@dataclass(frozen=True)
class AddendFacts:
    """The facts of an epilogue's addend (a bias vector or a D matrix): its strides in elements, 0 included."""

    kind: str
    shape: tuple
    dtype: str
    strides: tuple
    device: int | None


def addend_facts(x) -> AddendFacts | None:
    """The facts of ``addend`` (None stays None)."""
    if x is None:
        return None
    if isinstance(x, (int, float)):
        raise OperandTypeError(f"addend must be an array (the bias vector or the matrix D), not a Python "
                               f"{type(x).__name__}; a constant is alpha's or beta's business")
    kind = kind_of(x)
    if kind == "cuda-interface":
        import cupy

        x, kind = cupy.asarray(x), "cupy"
    shape = tuple(x.shape)
    if kind == "torch":
        return AddendFacts(kind, shape, str(x.dtype).removeprefix("torch."), tuple(x.stride()),
                           x.device.index if x.is_cuda else None)
    item = x.dtype.itemsize
    if any(s % item for s in x.strides):
        raise OperandTypeError(f"addend's strides {x.strides} are not whole elements of {item} bytes")
    return AddendFacts(kind, shape, np.dtype(x.dtype).name, tuple(s // item for s in x.strides),
                       x.device.id if kind == "cupy" else None)


def out_dtype_name(out_dtype) -> str | None:
    if out_dtype is None:
        return None
    name = str(out_dtype).removeprefix("torch.")
    if name not in ("float32", "bfloat16"):
        try:
            name = np.dtype(out_dtype).name
        except TypeError:
            pass
    return name


def devices_differ(fa: Facts, fb: Facts) -> str:
    def where(f):
        return "the host" if f.device is None else f"cuda:{f.device}"

    return f"A is on {where(fa)} and B on {where(fb)}: pass both on the host or both on one GPU"
