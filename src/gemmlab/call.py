"""One call of gemmlab.matmul, below the public functions: the operands' facts, every check, the plan cache and
the launch for NumPy and CuPy operands (torch tensors take gemmlab.torch_op's path, which shares all of this).

The first call for a (kernel, shapes, dtypes, strides, device) makes a plan: every check, the dispatcher's choice,
compilation, tensor maps, workspaces. Later calls with the same key find it in memory and only launch it: no file
access, no compilation, no DLPack conversion, no synchronization. Operands whose layout the kernel does not read in
place (a view that is neither row-major nor the transpose of a row-major matrix, or a transpose the kernel cannot
take) are copied into row-major order first, as ``plan(...).explain()`` says.

FP8 (float8_e4m3fn or float8_e5m2 operands, ml_dtypes' types for NumPy and CuPy): C = (scale_a · A)(scale_b · B)
with FP32 scales that live on the operands' device, passed by address on every call (no host read, no sync).
One scale per operand (a 1-element tensor, or None for 1) computes precision fp8; scale_a of shape (M, ⌈K/128⌉)
and scale_b of shape (⌈K/128⌉, ⌈N/128⌉) compute fp8_block (DeepGEMM's recipe, gemmlab.fp8 has the layouts; the
transposes of row-major (⌈K/128⌉, M) and (⌈N/128⌉, ⌈K/128⌉) tensors are read in place, others copied per call).
FP8 tensor cores read both operands K-major: B must come as the transpose of an N×K matrix, as torch._scaled_mm
takes it.
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field

import numpy as np

from gemmlab.errors import (DTypeError, GemmlabError, LayoutError, NoGPUError, OperandTypeError, ShapeError,
                            SizeLimitError, UnknownKernelError)
from gemmlab.kernels.plan import ANY, COL, ROW, Layout, Plan, target_layout
from gemmlab.problem import PRECISIONS, Problem, get_precision, np_dtype

AUTO = "auto"
# the precisions each operand dtype can be computed in, the first one by default (FP8: chosen by the scales)
PRECISIONS_OF = {"float32": ("fp32", "tf32"), "bfloat16": ("bf16",), "float8_e4m3fn": ("fp8", "fp8_block"),
                 "float8_e5m2": ("fp8", "fp8_block")}
FP8_DTYPES = ("float8_e4m3fn", "float8_e5m2")
OUT_DTYPES = {"fp8": ("bfloat16", "float32"), "fp8_block": ("bfloat16", "float32")}  # others write float32 only
MAX_PLANS = 512


@dataclass
class Prepared:
    """A resolved call: the plan, how the operands reach it, and why this kernel (``explain``)."""

    plan: Plan
    why: str
    device: int | None = None  # the CUDA device the plan runs on
    copy_a: bool = False  # A copied into row-major order before each launch
    copy_b: bool = False
    host_copy: bool = False  # host operands run on a GPU kernel: copied there and back
    out_shape: tuple = ()
    span_a: int = 0  # bytes each operand covers, to refuse an out= that overlaps it
    span_b: int = 0
    by_stream: dict = field(default_factory=dict)  # plans with workspaces: one per stream
    torch_template: object = None  # an empty tensor of C's dtype on the plan's device: outputs are its new_empty
    out_dtype: str = "float32"
    scaled: bool = False  # an FP8 plan: launches take the scales' addresses
    copy_scales: tuple = (False, False)  # a scale tensor copied into the layout the kernel reads before each launch
    ones: object = None  # a device float 1.0 for a scale given as None
    # read on every call, so computed once from the plan and host_copy, which nothing changes after construction
    on_device: bool = field(init=False)  # the plan runs on the operands' GPU in place (not on the host or a copy)
    shared: bool = field(init=False)  # the plan holds no workspace, so one plan serves every stream

    def __post_init__(self):
        self.on_device = self.plan.on_gpu and not self.host_copy
        self.shared = not getattr(self.plan, "buffers", None)

    @property
    def c_bytes(self) -> int:
        return (2 if self.out_dtype == "bfloat16" else 4) * self.out_shape[0] * self.out_shape[1]

    def for_stream(self, stream: int) -> Plan:
        if self.shared:
            return self.plan
        plan = self.by_stream.get(stream)
        if plan is None:
            if not self.by_stream:
                plan = self.plan
            else:  # a second stream: workspaces of its own
                from gemmlab import device

                with device.using(self.device):
                    plan = self.plan.spec.plan(self.plan.problem, self.plan.layout)
            self.by_stream[stream] = plan
        return plan

    def explain(self) -> str:
        lines = [self.plan.explain(), f"  chosen: {self.why}"]
        for name, copied in (("A", self.copy_a), ("B", self.copy_b)):
            if copied:
                lines.append(f"  {name} is copied into row-major order first: the kernel does not read its layout "
                             "in place")
        for name, copied in zip(("scale_a", "scale_b"), self.copy_scales):
            if copied:
                lines.append(f"  {name} is copied into the layout the kernel reads first (the transpose of a "
                             "row-major tensor: gemmlab.fp8)")
        if self.host_copy:
            lines.append("  host operands are copied to the GPU and the result back")
        return "\n".join(lines)


plans: dict[tuple, Prepared] = {}


def remember(key, prepared: Prepared) -> Prepared:
    if len(plans) >= MAX_PLANS:
        plans.pop(next(iter(plans)))
    plans[key] = prepared
    return prepared


# ---- operand facts, whatever their kind -----------------------------------------------------------------------------
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


def _kind(x) -> str:
    module = type(x).__module__
    if module.startswith("torch") and _torch() is not None and isinstance(x, _torch().Tensor):
        return "torch"
    if module.startswith("cupy"):
        return "cupy"
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        return "numpy"
    if hasattr(x, "__cuda_array_interface__"):
        return "cuda-interface"
    raise OperandTypeError(f"matmul takes NumPy, CuPy or PyTorch arrays (or objects with __cuda_array_interface__), "
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
    kind = _kind(x)
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


def _check_shapes(fa: Facts, fb: Facts) -> Problem | tuple:
    (m, k), (k2, n) = fa.shape, fb.shape
    if k != k2:
        raise ShapeError(f"inner dimensions differ: A is {m}×{k} (M×K) but B is {k2}×{n} (K×N); A's columns must "
                         "equal B's rows")
    for dim, size in (("M", m), ("K", k), ("N", n)):
        if size == 0:
            raise ShapeError(f"{dim}=0: zero-sized matrices have no product to compute; every dimension must be >= 1")
    return m, n, k


def scale_facts(x, name: str) -> Facts | None:
    """The facts of a scale argument (None stays None): any shape, its layout where it is 2-D."""
    if x is None:
        return None
    if isinstance(x, (int, float)):
        raise DTypeError(f"{name} must be a float32 array on the operands' device, not a Python {type(x).__name__}: "
                         "the kernel reads it by address, so a scale the GPU computed is never read back to the host")
    kind = _kind(x)
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
class _Scales:
    """What a call's scales are: the precision they make, and which must be copied per call."""

    precision: str
    copy: tuple = (False, False)


def _check_scales(m: int, n: int, k: int, fa: Facts, sa: Facts | None, sb: Facts | None,
                  precision: str | None) -> _Scales:
    """The precision FP8 operands compute with these scales (``precision`` if the caller named one), or the error
    that names what is wrong with them."""
    kb, nb = -(-k // 128), -(-n // 128)
    block_shapes = {"scale_a": (m, kb), "scale_b": (kb, nb)}
    given = {"scale_a": sa, "scale_b": sb}
    for name, f in given.items():
        if f is None:
            continue
        if f.kind != fa.kind or f.device != fa.device:
            where = "the host" if fa.device is None else f"cuda:{fa.device}"
            raise LayoutError(f"{name} must be a {fa.kind} array on {where}, with the operands; got a {f.kind} array "
                              f"on {'the host' if f.device is None else f'cuda:{f.device}'}")
        if f.dtype != "float32":
            raise DTypeError(f"{name} must be float32 (an FP32 dequantization factor), got {f.dtype}")
    per_tensor = all(f is None or int(np.prod(f.shape)) == 1 for f in given.values())
    block = all(f is not None and f.shape == block_shapes[name] for name, f in given.items())
    for p in PRECISIONS.values():  # per-tensor scaling first: a single block's scales fit both
        if p.scaling and (block if p.block_scaled else per_tensor) and precision in (None, p.name):
            copy = tuple(f.layout != COL for f in given.values()) if p.block_scaled else (False, False)
            return _Scales(p.name, copy)
    shapes = ", ".join(f"{name} {'None' if f is None else f.shape}" for name, f in given.items())
    raise ShapeError(f"FP8 scales: one per tensor (a 1-element float32 tensor, or None for 1) computes fp8, scale_a "
                     f"of shape {block_shapes['scale_a']} (M, ceil(K/128)) and scale_b of shape "
                     f"{block_shapes['scale_b']} (ceil(K/128), ceil(N/128)) compute fp8_block"
                     f"{'' if precision is None else f' (asked: {precision})'}; got {shapes}")


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


def _resolve(fa: Facts, fb: Facts, kernel, precision, on_gpu: bool, gpu, scales: tuple = (None, None),
             out_dtype: str | None = None):
    """(spec, problem, why, scales) for a call, or the error that names what is wrong."""
    from gemmlab.kernels.registry import get_kernel

    m, n, k = _check_shapes(fa, fb)
    fp8 = fa.dtype in FP8_DTYPES and fb.dtype in FP8_DTYPES
    if not fp8 and any(s is not None for s in scales):
        raise DTypeError(f"scale_a and scale_b scale FP8 operands; A is {fa.dtype} and B is {fb.dtype}")
    if kernel is not None and kernel != AUTO:
        if not isinstance(kernel, str):
            raise UnknownKernelError(f"kernel must be a kernel name such as 'cuda/v2_smem', or 'auto'; got "
                                     f"{type(kernel).__name__} {kernel!r}")
        spec = get_kernel(kernel)
        if precision is not None and precision != spec.precision:
            raise DTypeError(f"{spec.name} computes {spec.precision}, not precision={precision!r}")
        want = get_precision(spec.precision).input_dtype
        for name, f in (("A", fa), ("B", fb)):
            if f.dtype != want and not (fp8 and spec.precision in OUT_DTYPES):
                raise DTypeError(f"{spec.name} computes {spec.precision} and takes {want} operands; {name} is "
                                 f"{f.dtype} (convert it first, e.g. .astype({want}))")
        scaled = _check_scales(m, n, k, fa, *scales, spec.precision) if fp8 else None
        return _formats(spec, fa, fb, out_dtype), Problem(m, n, k, spec.precision), "named by the caller", scaled
    if fa.dtype != fb.dtype and not fp8:
        raise DTypeError(f"A is {fa.dtype} and B is {fb.dtype}: gemmlab multiplies two operands of one dtype (FP8: "
                         "e4m3 and e5m2 in any pair)")
    options = PRECISIONS_OF.get(fa.dtype)
    if options is None:
        raise DTypeError(f"gemmlab computes fp32 and tf32 on float32 operands, bf16 on bfloat16 operands and fp8 on "
                         f"float8_e4m3fn / float8_e5m2 operands; A and B are {fa.dtype} (convert them first, e.g. "
                         ".astype(float32))")
    if precision is not None and precision not in options:
        raise DTypeError(f"precision={precision!r} does not take {fa.dtype} operands; {fa.dtype} takes "
                         f"{', '.join(repr(p) for p in options)}")
    scaled = _check_scales(m, n, k, fa, *scales, precision) if fp8 else None
    problem = Problem(m, n, k, scaled.precision if fp8 else precision or options[0])
    if fp8 and out_dtype not in (None, *OUT_DTYPES[problem.precision]):
        raise DTypeError(f"out_dtype={out_dtype!r}: {problem.precision} writes bfloat16 or float32")
    if not fp8 and out_dtype not in (None, "float32"):
        raise DTypeError(f"out_dtype={out_dtype!r}: {problem.precision} writes float32")
    if not on_gpu:
        from gemmlab.dispatch import HOST_DEFAULT

        spec = get_kernel(HOST_DEFAULT)
        if spec.precision != problem.precision:
            raise DTypeError(f"on the host gemmlab computes fp32 ({HOST_DEFAULT}); {problem.precision} needs CUDA "
                             "operands (or a GPU kernel named with kernel=)")
        return spec, problem, "host operands run on the host peer, as torch and NumPy run them", None
    from gemmlab import dispatch

    layout = Layout(fa.layout or ROW, fb.layout or ROW)  # strided operands are copied into row-major order
    choice = dispatch.choose(problem, layout, gpu)
    spec = _formats(choice.spec, fa, fb, out_dtype) if fp8 else choice.spec
    return spec, problem, choice.why, scaled


def _formats(spec, fa: Facts, fb: Facts, out_dtype: str | None):
    """The FP8 spec for these operand formats and output type (each its own binary); others as they are."""
    if fa.dtype not in FP8_DTYPES or fb.dtype not in FP8_DTYPES:
        if out_dtype not in (None, "float32"):
            raise DTypeError(f"out_dtype={out_dtype!r}: {spec.precision} writes float32")
        return spec
    return spec.for_formats(fa.dtype, fb.dtype, out_dtype or "bfloat16")


def prepare(fa: Facts, fb: Facts, kernel, precision, device: int | None, scales: tuple = (None, None),
             out_dtype: str | None = None) -> Prepared:
    """Every check and the plan for one call's key; raises the GemmlabError that names what is wrong."""
    from gemmlab import device as dev

    gpu = None
    if device is not None:
        gpu = dev.gpu_info(device)
    spec, problem, why, scaled = _resolve(fa, fb, kernel, precision, device is not None, gpu, scales, out_dtype)
    refusal = spec.is_valid(problem)
    if refusal:
        raise refusal.exception() if hasattr(refusal, "exception") else GemmlabError(refusal)
    host_copy = False
    if spec.device == "cpu":
        if device is not None:
            raise LayoutError(f"{spec.name} runs on the host; A and B are on cuda:{device} (use a GPU kernel, or "
                              "move them to the host)")
        plan = spec.plan(problem, Layout(fa.layout or "strided", fb.layout or "strided"))  # read as they are
        return Prepared(plan, why, out_shape=(problem.m, problem.n))
    if device is None:  # host operands, a GPU kernel named: run it on GPU 0
        dev.require_gpu(spec.name)
        device, host_copy, gpu = 0, True, dev.gpu_info(0)
    reason = spec.unsupported(gpu)
    if reason:
        raise NoGPUError(reason)
    given = Layout(fa.layout or "strided", fb.layout or "strided")
    if host_copy:  # copied to the GPU anyway: in the layout the kernel reads (FP8: B as N×K)
        runs = spec.natural_layout(problem)
    else:
        runs = target_layout(given, spec.layouts)
        if runs is None:
            raise LayoutError(spec.layout_refusal(given))
        given = Layout(runs.a if given.a == ANY else given.a, runs.b if given.b == ANY else given.b)
    with dev.using(device):
        plan = spec.plan(problem, runs)
    elem = problem.prec.input_bytes
    prepared = Prepared(plan, why, device, copy_a=runs.a != given.a, copy_b=runs.b != given.b, host_copy=host_copy,
                        out_shape=(problem.m, problem.n), span_a=problem.m * problem.k * elem,
                        span_b=problem.k * problem.n * elem, out_dtype=str(spec.output_dtype(problem)))
    if scaled is not None:
        prepared.scaled, prepared.copy_scales = True, scaled.copy
    return prepared


def check_out(out, kind: str, shape: tuple, device, dtype: str = "float32") -> None:
    """The checks an ``out`` array gets once per key (shape, dtype, layout, device, writability)."""
    if _kind(out) != kind:  # a torch out for NumPy operands too: NumPy cannot write into a tensor
        raise LayoutError(f"out is a {_kind(out)} array; the operands are {kind} arrays: pass out of their kind")
    if kind == "torch":
        ok = (tuple(out.shape) == shape and str(out.dtype) == f"torch.{dtype}" and out.is_contiguous()
              and (out.device.index if out.is_cuda else None) == device)
        desc = f"{tuple(out.shape)} {str(out.dtype).removeprefix('torch.')} on {out.device}"
    else:
        ok = (tuple(out.shape) == shape and np.dtype(out.dtype).name == dtype and out.flags.c_contiguous
              and (out.device.id if kind == "cupy" else None) == device)
        desc = f"{tuple(out.shape)} {out.dtype}{'' if out.flags.c_contiguous else ' (not C-contiguous)'}"
        if kind == "numpy" and not out.flags.writeable:
            raise LayoutError(f"out is read-only; pass a writable {dtype} array")
    if not ok:
        where = "the host" if device is None else f"cuda:{device}"
        raise LayoutError(f"out must be a C-contiguous {shape} {dtype} array on {where} (the product's shape and "
                          f"dtype), got {desc}")
    if kind == "torch" and out.requires_grad:
        raise LayoutError("out requires grad; gemmlab writes out= in place outside autograd")


def overlaps(c: int, c_bytes: int, x: int, x_bytes: int) -> bool:
    return c < x + x_bytes and x < c + c_bytes


def devices_differ(fa: Facts, fb: Facts) -> str:
    def where(f):
        return "the host" if f.device is None else f"cuda:{f.device}"

    return f"A is on {where(fa)} and B on {where(fb)}: pass both on the host or both on one GPU"


def array_matmul(A, B, kernel, precision, out, scale_a=None, scale_b=None, out_dtype=None):
    """NumPy, CuPy and CUDA-array-interface operands (and CPU tensors through torch_op)."""
    fa, fb = facts(A, "A"), facts(B, "B")
    if fa.kind != fb.kind and {fa.kind, fb.kind} != {"cupy"}:
        raise LayoutError(f"A is a {fa.kind} array and B a {fb.kind} array: pass two arrays of one kind")
    if fa.device != fb.device:
        raise LayoutError(devices_differ(fa, fb))
    scales = (scale_facts(scale_a, "scale_a"), scale_facts(scale_b, "scale_b"))
    out_name = out_dtype_name(out_dtype)
    key = ("array", kernel, precision, fa, fb, _out_key(out), scales, out_name)
    prepared = plans.get(key)
    if prepared is None:
        prepared = prepare(fa, fb, kernel, precision, fa.device, scales, out_name)
        if out is not None:
            check_out(out, fa.kind, prepared.out_shape, fa.device, prepared.out_dtype)
        if prepared.scaled and fa.kind == "cupy" and None in (scale_a, scale_b):
            import cupy

            with cupy.cuda.Device(prepared.device):
                prepared.ones = cupy.ones(1, cupy.float32)
        remember(key, prepared)
    if fa.kind == "cupy":
        return _cupy_launch(prepared, A, B, out, (scale_a, scale_b))
    return host_launch(prepared, A, B, out, (scale_a, scale_b))


def _out_key(out):
    if out is None:
        return None
    if _kind(out) == "torch":
        return ("torch", tuple(out.shape), str(out.dtype), out.stride(), str(out.device))
    return (_kind(out), tuple(out.shape), str(out.dtype), out.strides, getattr(out.flags, "writeable", True),
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
    return cupy.asarray(x.view(np.uint8) if x.dtype.name in FP8_DTYPES else x)


def host_launch(prepared: Prepared, A, B, out, scales=(None, None)):
    plan = prepared.plan
    m, n = prepared.out_shape
    if prepared.host_copy:  # a GPU kernel on host operands
        import cupy

        a, b = _to_device(A, plan.layout.a), _to_device(B, plan.layout.b)
        if prepared.scaled:  # scales in the layouts the kernel reads (gemmlab.fp8)
            scales = tuple(None if s is None else cupy.asarray(np.ascontiguousarray(
                np.asarray(s, np.float32).reshape(1) if np.size(s) == 1 else np.asarray(s, np.float32).T))
                for s in scales)
            if None in scales:
                prepared.ones = cupy.ones(1, cupy.float32)
            prepared = dataclasses.replace(prepared, copy_scales=(False, False))
        c = cupy.empty(prepared.out_shape, np_dtype(prepared.out_dtype))
        _cupy_run(prepared, a.data.ptr, b.data.ptr, c.data.ptr, scales)
        result = c.get()
        if out is None:
            return result
        out[...] = result
        return out
    a, b = _host_array(A), _host_array(B)
    if out is None:
        c = _host_empty(m, n)
    else:
        c = out
        if np.shares_memory(c, a) or np.shares_memory(c, b):
            raise LayoutError("out overlaps A or B; gemmlab writes C while it reads them")
    plan.launch(a, b, c)
    return c


def _host_empty(m: int, n: int) -> np.ndarray:
    import os

    need = 4 * m * n
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        total = None
    if total and need > total:
        raise SizeLimitError(f"C ({m}×{n} float32) needs {need / 2**30:.1f} GiB; this machine has "
                             f"{total / 2**30:.1f} GiB of memory")
    try:
        return np.empty((m, n), np.float32)
    except MemoryError:
        raise SizeLimitError(f"C ({m}×{n} float32) needs {need / 2**30:.1f} GiB of host memory, which could not be "
                             "allocated") from None


def _cupy_launch(prepared: Prepared, A, B, out, scales=(None, None)):
    import cupy

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
    _cupy_run(prepared, A.data.ptr, B.data.ptr, cp, scales)
    return c


def _cupy_run(prepared: Prepared, a: int, b: int, c: int, scales) -> None:
    """Launch on CuPy's current stream, in the plan's device context; FP8 plans get their scales' addresses (a scale
    in a layout the kernel does not read is copied into one first, on the same stream)."""
    import cupy

    stream = cupy.cuda.get_current_stream().ptr
    plan = prepared.for_stream(stream)
    extra = ()
    if prepared.scaled:
        (sa, sb), (copy_a, copy_b) = scales, prepared.copy_scales
        sa = prepared.ones if sa is None else cupy.ascontiguousarray(sa.T).T if copy_a else sa
        sb = prepared.ones if sb is None else cupy.ascontiguousarray(sb.T).T if copy_b else sb
        extra = (sa.data.ptr, sb.data.ptr)
    if cupy.cuda.runtime.getDevice() == prepared.device:
        plan.launch(a, b, c, stream, *extra)
    else:  # the arrays' device is not the current one: launch in its context
        with cupy.cuda.Device(prepared.device):
            plan.launch(a, b, c, stream, *extra)


def gpu_memory_message(shape, dtype: str = "float32") -> str:
    m, n = shape
    size = (2 if dtype == "bfloat16" else 4) * m * n
    return f"C ({m}×{n} {dtype}, {size / 2**30:.1f} GiB) does not fit in the GPU memory left free"
