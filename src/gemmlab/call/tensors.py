"""A call on torch tensors, below gemmlab.torch_op: its launch on torch's caching allocator and current stream
(``run``), the host path of CPU tensors through NumPy views (FP8 and BF16 by their bits), the workspaces a plan takes
from torch's allocator (under CUDA graph capture, the graph's pool), and the refusals a tensor meets before any plan:
a negated view, a first call under capture. gemmlab.torch_op's direct path and custom ops, gemmlab.torch_fused and
the batched calls of gemmlab.call.batched launch torch tensors through here; importing it imports torch."""
from __future__ import annotations

import numpy as np
import torch

from gemmlab.call.cache import Prepared, row_major_strides
from gemmlab.call.launch import check_host_memory, gpu_memory_message, host_launch, overlaps
from gemmlab.errors import GemmlabError, LayoutError, SizeLimitError

_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_current_device = getattr(torch._C, "_cuda_getDevice", None)
_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)  # the current device's current stream


# a device's current stream handle: torch's C function itself where it has one, no Python frame between
_stream = _raw_stream if _raw_stream is not None else lambda index: torch.cuda.current_stream(index).cuda_stream


FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def run(prepared: Prepared, A, B, out, scale_a=None, scale_b=None, addend=None):
    """The launch of a call whose plan ``prepared`` was made for operands like these (their dtypes, shapes, strides
    and devices; a batch's at its first matrices' addresses): C from torch's allocator (or ``out``), the addresses,
    torch's current stream."""
    if not prepared.on_device:
        return _host(prepared, A, B, out, (scale_a, scale_b), addend)
    if prepared.copy_a:
        A = A.contiguous()
    if prepared.copy_b:
        B = B.contiguous()
    if out is None:
        try:
            c = prepared.torch_template.new_empty_strided(prepared.out_shape, prepared.out_strides)
        except torch.OutOfMemoryError:
            raise SizeLimitError(gpu_memory_message(prepared.out_shape, prepared.out_dtype)) from None
    else:
        c = out
        cp = c.data_ptr()
        if overlaps(cp, prepared.c_bytes, A.data_ptr(), prepared.span_a) or \
                overlaps(cp, prepared.c_bytes, B.data_ptr(), prepared.span_b):
            raise LayoutError("out overlaps A or B; gemmlab writes C while it reads them")
    extra = ()
    if prepared.scaled:  # the scales' addresses; one in a layout the kernel does not read is copied into one
        copy_a, copy_b = prepared.copy_scales
        sa = prepared.ones if scale_a is None else scale_a.t().contiguous().t() if copy_a else scale_a
        sb = prepared.ones if scale_b is None else scale_b.t().contiguous().t() if copy_b else scale_b
        extra = (sa.data_ptr(), sb.data_ptr())
    return _enqueue(prepared, A.data_ptr(), B.data_ptr(), c, _stream(prepared.device), extra, addend)


def _enqueue(prepared: Prepared, a: int, b: int, c, stream: int, extra: tuple = (), addend=None):
    """The launch at addresses ``a`` and ``b`` into C ``c`` on ``stream``, the current stream of the plan's device:
    the stream's plan, launched in the plan's device's context."""
    index = prepared.device
    current = _current_device() == index
    if prepared.shared:
        plan = prepared.plan
    elif stream == 0:  # the legacy default stream (torch's unless a stream is set) is never captured: CUDA refuses
        # capture there, so a call on it asks no capture query (a driver call before every launch of such a plan)
        plan = prepared.by_stream.get(0) or prepared.for_stream(0, False)
    else:
        plan = prepared.for_stream(stream, _capturing() if current and _capturing is not None else None)
    with prepared.lock:
        if addend is not None:
            plan.set_addend(addend.data_ptr())
        if current:
            plan.launch(a, b, c.data_ptr(), stream, *extra)
        else:  # the tensors' device is not the current one: launch in its context
            with torch.cuda.device(index):
                plan.launch(a, b, c.data_ptr(), stream, *extra)
    return c


def launches_only(prepared: Prepared) -> bool:
    """Whether a call of ``prepared``'s operands needs nothing but C and the launch: a plan on the operands' GPU that
    reads them in place, with no scales and no addend to bind (``launcher`` serves its calls)."""
    return prepared.on_device and not (prepared.copy_a or prepared.copy_b or prepared.scaled) and \
        prepared.epilogue is None


def launcher(prepared: Prepared, shape: tuple | None = None):
    """``run`` bound once for the calls of one caller's key (torch_op.matmul's), where ``launches_only(prepared)``:
    each call allocates C (of ``shape``, x's leading dimensions then N, or the plan's), and launches, nothing else
    (the checks passed at the key's first call, which made the plan). A shared plan, or a plan's on the legacy default
    stream, launches here on the current device; another stream or device goes through ``_enqueue``. It cuts the frames,
    tests and keys of the general path, which from an idle GPU delay the launch, so the kernel's start. The
    function's ``prepared`` is its plan's: gemmlab.call.cache drops the launch with that plan."""
    template, index, lock, dtype = prepared.torch_template, prepared.device, prepared.lock, prepared.out_dtype
    c_shape = prepared.out_shape if shape is None else tuple(shape)
    c_strides = row_major_strides(c_shape)
    shared = prepared.plan if prepared.shared else None
    by_stream = prepared.by_stream

    def launch(A, B):
        try:
            c = template.new_empty_strided(c_shape, c_strides)
        except torch.OutOfMemoryError:
            raise SizeLimitError(gpu_memory_message(c_shape, dtype)) from None
        stream = _stream(index)
        plan = shared or stream == 0 and by_stream.get(0)
        if not plan or _current_device() != index:
            return _enqueue(prepared, A.data_ptr(), B.data_ptr(), c, stream)
        with lock:
            plan.launch(A.data_ptr(), B.data_ptr(), c.data_ptr(), stream)
        return c

    launch.prepared = prepared
    return launch


def refuse_capture(A) -> None:
    """A plan is made outside CUDA graph capture: the first call with these operands under capture is refused."""
    if A.is_cuda and torch.cuda.is_current_stream_capturing():
        raise GemmlabError("gemmlab.matmul's first call with these operands is under CUDA graph capture, where its "
                           "plan cannot be made (that compiles, loads and allocates): call it once before capturing, "
                           "as torch's pattern does on a side stream")


def workspace(template, nbytes: int):
    """A stream's workspace from torch's caching allocator on the current stream: under capture, the graph's pool."""
    buffer = template.new_empty(nbytes, dtype=torch.uint8)
    return buffer, buffer.data_ptr()


def _host(prepared: Prepared, A, B, out, scales=(None, None), addend=None):
    """CPU tensors: NumPy views for a host kernel; a GPU kernel named for them copies to the GPU and back (FP8
    through their bytes: NumPy has no float8 of torch's)."""
    a, b = (numpy_view(x) for x in (A, B))
    host_scales = tuple(None if s is None else s.detach().numpy() for s in scales)
    c = host_c(prepared.out_shape, prepared.out_dtype) if out is None else out
    host_launch(prepared, a, b, numpy_view(c), host_scales, None if addend is None else numpy_view(addend))
    return c


class _Memory:
    """A CPU tensor's memory as NumPy's array interface describes it. ``Tensor.numpy()`` would mark the tensor's
    storage as one that cannot be resized any more (the caller's operands and C alike), where torch's own matmul
    leaves them as they were; the view keeps the tensor alive."""

    def __init__(self, x, typestr: str):
        self.tensor = x
        size = x.element_size()
        self.__array_interface__ = {"shape": tuple(x.shape), "typestr": typestr, "version": 3,
                                    "strides": tuple(size * s for s in x.stride()), "data": (x.data_ptr(), False)}


_TYPESTR = {torch.float32: "<f4", torch.float64: "<f8", torch.float16: "<f2", torch.bfloat16: "<i2",
            torch.float8_e4m3fn: "|u1", torch.float8_e5m2: "|u1"}


def numpy_view(x):
    """A NumPy view of a CPU tensor's memory; FP8 and BF16 through their bits, as the ml_dtypes types."""
    import ml_dtypes

    x = x.detach()
    if x.dtype not in _TYPESTR:  # a dtype the checks refuse before any launch: NumPy's own conversion
        return x.numpy()
    view = np.asarray(_Memory(x, _TYPESTR[x.dtype])) if x.numel() else \
        np.empty(tuple(x.shape), np.dtype(_TYPESTR[x.dtype]))
    if x.dtype in FP8 or x.dtype == torch.bfloat16:
        name = {torch.float8_e4m3fn: "float8_e4m3fn", torch.float8_e5m2: "float8_e5m2"}.get(x.dtype, "bfloat16")
        return view.view(getattr(ml_dtypes, name))
    return view


def host_c(shape: tuple, dtype: str):
    """C of a call on CPU tensors from torch's own allocator, which the host kernels write through its NumPy view:
    a tensor whose storage resizes, as torch.matmul's result does (one wrapping NumPy's memory cannot)."""
    check_host_memory(tuple(shape), dtype)
    try:
        return torch.empty(shape, dtype=getattr(torch, dtype))
    except RuntimeError:  # the allocator's failure past what check_host_memory could know
        raise SizeLimitError(f"C ({'×'.join(map(str, shape))} {dtype}) could not be allocated in host "
                             "memory") from None


def check_initialized(**tensors) -> None:
    """A lazy module's parameter before its first call (UninitializedParameter) has no shape or memory yet: a
    LayoutError naming it, where torch would raise its own ValueError from the first attribute read."""
    for name, x in tensors.items():
        if isinstance(x, torch.nn.parameter.UninitializedParameter):
            raise LayoutError(f"{name} is an uninitialized parameter (a lazy module's, before its first call): it "
                              "has no shape or memory yet")


def check_values(**tensors) -> None:
    """Tensors whose memory holds their values: not a negated view (its negative bit set, as the .imag of a
    conjugated complex tensor is), whose memory holds the values' negatives and which a kernel reading it by address
    would take as they are. The plan keys hold the bit, so such a tensor always meets this check. (Traced by
    torch.compile, the tensors are symbolic: the operator checks the real ones when it runs.)"""
    if torch.compiler.is_compiling():
        return
    for name, x in tensors.items():
        if isinstance(x, torch.Tensor) and x.is_neg():
            raise LayoutError(f"{name} is a negated view (its negative bit is set, as on the .imag of a conjugated "
                              f"complex tensor): pass {name}.resolve_neg()")
