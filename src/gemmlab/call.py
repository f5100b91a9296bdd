"""One call of gemmlab.matmul, below the public functions: the operands' facts, every check, the plan cache and
the launch for NumPy and CuPy operands (torch tensors take gemmlab.torch_op's path, which shares all of this).

The first call for a (kernel, shapes, dtypes, strides, device) makes a plan: every check, the dispatcher's choice,
compilation, tensor maps, workspaces. Later calls with the same key find it in memory and only launch it: no file
access, no compilation, no DLPack conversion, no synchronization. Operands whose layout the kernel does not read in
place (a view that is neither row-major nor the transpose of a row-major matrix, or a transpose the kernel cannot
take) are copied into row-major order first, as ``plan(...).explain()`` says.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np

from gemmlab.errors import (DTypeError, GemmlabError, LayoutError, NoGPUError, OperandTypeError, ShapeError,
                            SizeLimitError, UnknownKernelError)
from gemmlab.kernels.plan import COL, ROW, Layout, Plan, target_layout
from gemmlab.problem import Problem, get_precision

AUTO = "auto"
# the precisions each operand dtype can be computed in, the first one by default
PRECISIONS_OF = {"float32": ("fp32", "tf32"), "bfloat16": ("bf16",)}
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
    torch_template: object = None  # an empty FP32 tensor on the plan's device: outputs are its new_empty

    @property
    def on_device(self) -> bool:
        """The plan runs on the operands' GPU in place (not on the host, not through a host copy)."""
        return self.plan.on_gpu and not self.host_copy

    @property
    def shared(self) -> bool:
        """The plan holds no workspace, so one plan serves every stream."""
        return not getattr(self.plan, "buffers", None)

    @property
    def c_bytes(self) -> int:
        return 4 * self.out_shape[0] * self.out_shape[1]

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
    """ROW, COL or None from element strides (NumPy/CuPy byte strides divided by the item size)."""
    rows, cols = shape
    s0, s1 = strides
    if (s1 == 1 or cols == 1) and (s0 == cols or rows == 1):
        return ROW
    if (s0 == 1 or rows == 1) and (s1 == rows or cols == 1):
        return COL
    return None


def facts(x, name: str) -> Facts:
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


def _resolve(fa: Facts, fb: Facts, kernel, precision, on_gpu: bool, gpu):
    """(spec, problem, why) for a call, or the error that names what is wrong."""
    from gemmlab.kernels.registry import get_kernel

    m, n, k = _check_shapes(fa, fb)
    if kernel is not None and kernel != AUTO:
        if not isinstance(kernel, str):
            raise UnknownKernelError(f"kernel must be a kernel name such as 'cuda/v2_smem', or 'auto'; got "
                                     f"{type(kernel).__name__} {kernel!r}")
        spec = get_kernel(kernel)
        want = get_precision(spec.precision).input_dtype
        for name, f in (("A", fa), ("B", fb)):
            if f.dtype != want:
                raise DTypeError(f"{spec.name} computes {spec.precision} and takes {want} operands; {name} is "
                                 f"{f.dtype} (convert it first, e.g. .astype({want}))")
        if precision is not None and precision != spec.precision:
            raise DTypeError(f"{spec.name} computes {spec.precision}, not precision={precision!r}")
        return spec, Problem(m, n, k, spec.precision), "named by the caller"
    if fa.dtype != fb.dtype:
        raise DTypeError(f"A is {fa.dtype} and B is {fb.dtype}: gemmlab multiplies two operands of one dtype")
    options = PRECISIONS_OF.get(fa.dtype)
    if options is None:
        raise DTypeError(f"gemmlab computes fp32 and tf32 on float32 operands and bf16 on bfloat16 operands; A and B "
                         f"are {fa.dtype} (convert them first, e.g. .astype(float32))")
    if precision is not None and precision not in options:
        raise DTypeError(f"precision={precision!r} does not take {fa.dtype} operands; {fa.dtype} takes "
                         f"{', '.join(repr(p) for p in options)}")
    problem = Problem(m, n, k, precision or options[0])
    if not on_gpu:
        from gemmlab.dispatch import HOST_DEFAULT

        spec = get_kernel(HOST_DEFAULT)
        if spec.precision != problem.precision:
            raise DTypeError(f"on the host gemmlab computes fp32 ({HOST_DEFAULT}); {problem.precision} needs CUDA "
                             "operands (or a GPU kernel named with kernel=)")
        return spec, problem, "host operands run on the host peer, as torch and NumPy run them"
    from gemmlab import dispatch

    layout = Layout(fa.layout or ROW, fb.layout or ROW)
    choice = dispatch.choose(problem, layout, gpu)
    return choice.spec, problem, choice.why


def prepare(fa: Facts, fb: Facts, kernel, precision, device: int | None) -> Prepared:
    """Every check and the plan for one call's key; raises the GemmlabError that names what is wrong."""
    from gemmlab import device as dev

    gpu = None
    if device is not None:
        gpu = dev.gpu_info(device)
    spec, problem, why = _resolve(fa, fb, kernel, precision, device is not None, gpu)
    refusal = spec.is_valid(problem)
    if refusal:
        raise refusal.exception() if hasattr(refusal, "exception") else GemmlabError(refusal)
    host_copy = False
    if spec.device == "cpu":
        if device is not None:
            raise LayoutError(f"{spec.name} runs on the host; A and B are on cuda:{device} (use a GPU kernel, or "
                              "move them to the host)")
        plan = spec.plan(problem)
        return Prepared(plan, why, out_shape=(problem.m, problem.n))
    if device is None:  # host operands, a GPU kernel named: run it on GPU 0
        dev.require_gpu(spec.name)
        device, host_copy, gpu = 0, True, dev.gpu_info(0)
    reason = spec.unsupported(gpu)
    if reason:
        raise NoGPUError(reason)
    given = Layout(fa.layout or "strided", fb.layout or "strided")
    runs = target_layout(given, spec.layouts) if not host_copy else Layout()
    with dev.using(device):
        plan = spec.plan(problem, runs)
    elem = problem.prec.input_bytes
    return Prepared(plan, why, device, copy_a=runs.a != given.a, copy_b=runs.b != given.b, host_copy=host_copy,
                    out_shape=(problem.m, problem.n), span_a=problem.m * problem.k * elem,
                    span_b=problem.k * problem.n * elem)


def check_out(out, kind: str, shape: tuple, device) -> None:
    """The checks an ``out`` array gets once per key (shape, dtype, layout, device, writability)."""
    if _kind(out) != kind and not (kind == "numpy" and _kind(out) == "torch" and not out.is_cuda):
        raise LayoutError(f"out is a {_kind(out)} array; the operands are {kind} arrays")
    if kind == "torch":
        ok = (tuple(out.shape) == shape and str(out.dtype) == "torch.float32" and out.is_contiguous()
              and (out.device.index if out.is_cuda else None) == device)
        desc = f"{tuple(out.shape)} {str(out.dtype).removeprefix('torch.')} on {out.device}"
    else:
        ok = (tuple(out.shape) == shape and out.dtype == np.float32 and out.flags.c_contiguous
              and (out.device.id if kind == "cupy" else None) == device)
        desc = f"{tuple(out.shape)} {out.dtype}{'' if out.flags.c_contiguous else ' (not C-contiguous)'}"
        if kind == "numpy" and not out.flags.writeable:
            raise LayoutError("out is read-only; pass a writable float32 array")
    if not ok:
        where = "the host" if device is None else f"cuda:{device}"
        raise LayoutError(f"out must be a C-contiguous {shape} float32 array on {where} (the product's shape and "
                          f"dtype), got {desc}")
    if kind == "torch" and out.requires_grad:
        raise LayoutError("out requires grad; gemmlab writes out= in place outside autograd")


def overlaps(c: int, c_bytes: int, x: int, x_bytes: int) -> bool:
    return c < x + x_bytes and x < c + c_bytes


def devices_differ(fa: Facts, fb: Facts) -> str:
    def where(f):
        return "the host" if f.device is None else f"cuda:{f.device}"

    return f"A is on {where(fa)} and B on {where(fb)}: pass both on the host or both on one GPU"


def array_matmul(A, B, kernel, precision, out):
    """NumPy, CuPy and CUDA-array-interface operands (and CPU tensors through torch_op)."""
    fa, fb = facts(A, "A"), facts(B, "B")
    if fa.kind != fb.kind and {fa.kind, fb.kind} != {"cupy"}:
        raise LayoutError(f"A is a {fa.kind} array and B a {fb.kind} array: pass two arrays of one kind")
    if fa.device != fb.device:
        raise LayoutError(devices_differ(fa, fb))
    key = ("array", kernel, precision, fa, fb, _out_key(out))
    prepared = plans.get(key)
    if prepared is None:
        prepared = prepare(fa, fb, kernel, precision, fa.device)
        if out is not None:
            check_out(out, fa.kind, prepared.out_shape, fa.device)
        remember(key, prepared)
    if fa.kind == "cupy":
        return _cupy_launch(prepared, A, B, out)
    return host_launch(prepared, A, B, out)


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


def host_launch(prepared: Prepared, A, B, out):
    plan = prepared.plan
    m, n = prepared.out_shape
    if prepared.host_copy:  # a GPU kernel on host operands
        import cupy

        result = _cupy_launch(prepared, cupy.asarray(np.ascontiguousarray(A)), cupy.asarray(np.ascontiguousarray(B)),
                              None).get()
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


def _cupy_launch(prepared: Prepared, A, B, out):
    import cupy

    if prepared.copy_a:
        A = cupy.ascontiguousarray(A)
    if prepared.copy_b:
        B = cupy.ascontiguousarray(B)
    if out is None:
        try:
            c = cupy.empty(prepared.out_shape, cupy.float32)
        except cupy.cuda.memory.OutOfMemoryError:
            raise SizeLimitError(gpu_memory_message(prepared.out_shape)) from None
        cp = c.data.ptr
    else:
        c, cp = out, out.data.ptr
        if overlaps(cp, prepared.c_bytes, A.data.ptr, prepared.span_a) or \
                overlaps(cp, prepared.c_bytes, B.data.ptr, prepared.span_b):
            raise LayoutError("out overlaps A or B; gemmlab writes C while it reads them")
    stream = cupy.cuda.get_current_stream().ptr
    plan = prepared.for_stream(stream)
    if cupy.cuda.runtime.getDevice() == prepared.device:
        plan.launch(A.data.ptr, B.data.ptr, cp, stream)
    else:  # the arrays' device is not the current one: launch in its context
        with cupy.cuda.Device(prepared.device):
            plan.launch(A.data.ptr, B.data.ptr, cp, stream)
    return c


def gpu_memory_message(shape) -> str:
    m, n = shape
    return f"C ({m}×{n} float32, {4 * m * n / 2**30:.1f} GiB) does not fit in the GPU memory left free"
