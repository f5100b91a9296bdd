"""Every check of a call and the kernel it resolves to: the shapes, the dtypes and the precision they select, FP8's
scales, the output type, the dispatcher's choice for kernel="auto", then the plan (``prepare``) and an ``out``."""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from gemmlab.call.operands import Facts, kind_of
from gemmlab.call.cache import Prepared
from gemmlab.errors import (DTypeError, EpilogueError, GemmlabError, LayoutError, NoGPUError, ShapeError,
                            UnknownKernelError)
from gemmlab.kernels.plan import ANY, COL, ROW, Layout, target_layout
from gemmlab.problem import PRECISIONS, BatchedProblem, Problem, get_precision, precisions_of, scaled_dtype

AUTO = "auto"


def _sizes(a_shape: tuple, b_shape: tuple) -> tuple:
    """(M, N, K) of an M×K A and a K×N B, or the ShapeError for inner dimensions that differ."""
    (m, k), (k2, n) = a_shape, b_shape
    if k != k2:
        raise ShapeError(f"inner dimensions differ: A is {m}×{k} (M×K) but B is {k2}×{n} (K×N); A's columns must "
                         "equal B's rows")
    return m, n, k


def _check_shapes(fa: Facts, fb: Facts) -> Problem | tuple:
    m, n, k = _sizes(fa.shape, fb.shape)
    for dim, size in (("M", m), ("K", k), ("N", n)):
        if size == 0:
            raise ShapeError(f"{dim}=0: a product with a zero dimension runs no kernel, so it has no plan "
                             "(gemmlab.matmul, linear and addmm return torch's empty or zero result without one)")
    return m, n, k


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
        if p.scaled and (block if p.block_scaled else per_tensor) and precision in (None, p.name):
            copy = tuple(f.layout != COL for f in given.values()) if p.block_scaled else (False, False)
            return _Scales(p.name, copy)
    shapes = ", ".join(f"{name} {'None' if f is None else f.shape}" for name, f in given.items())
    raise ShapeError(f"FP8 scales: one per tensor (a 1-element float32 tensor, or None for 1) computes fp8, scale_a "
                     f"of shape {block_shapes['scale_a']} (M, ceil(K/128)) and scale_b of shape "
                     f"{block_shapes['scale_b']} (ceil(K/128), ceil(N/128)) compute fp8_block"
                     f"{'' if precision is None else f' (asked: {precision})'}; got {shapes}")


def _problem(m: int, n: int, k: int, precision: str, batch: tuple | None, out_dtype: str | None = None) -> Problem:
    """The call's problem, C in ``out_dtype``: with ``batch`` = (count, stride_a, stride_b), a BatchedProblem
    (gemmlab.call.batched)."""
    if batch is None:
        return Problem(m, n, k, precision, out_dtype=out_dtype)
    return BatchedProblem(m, n, k, precision, *batch, out_dtype=out_dtype)


def check_names(kernel, precision) -> str:
    """``kernel`` (None: "auto") and ``precision`` of the kinds a call takes: names, precision also None. Checked
    before a call goes through a torch operator, whose schema would refuse anything else with a RuntimeError.
    Returns the kernel's name."""
    if kernel is None:
        return AUTO
    if not isinstance(kernel, str):
        raise UnknownKernelError(f"kernel must be a kernel name such as 'cuda/v2_smem', or 'auto'; got "
                                 f"{type(kernel).__name__} {kernel!r}")
    if precision is not None and not isinstance(precision, str):
        raise DTypeError(f"precision must be a precision's name such as 'tf32' (or None); got "
                         f"{type(precision).__name__} {precision!r}")
    return kernel


def check_same_dtype(a: str, b: str, names: tuple = ("A", "B")) -> None:
    """Operands of one dtype (dtype names), or an FP8 pair (e4m3 and e5m2 in any pair): a DTypeError naming the
    operands as the caller passed them (``names``: linear's x and w)."""
    if a != b and not (scaled_dtype(a) and scaled_dtype(b)):
        raise DTypeError(f"{names[0]} is {a} and {names[1]} is {b}: gemmlab multiplies two operands of one dtype "
                         "(FP8: e4m3 and e5m2 in any pair)")


def resolve(fa: Facts, fb: Facts, kernel, precision, on_gpu: bool, gpu, scales: tuple = (None, None),
             out_dtype: str | None = None, epilogue=None, batch: tuple | None = None):
    """(spec, problem, why, scales) for a call, or the error that names what is wrong; kernel="auto" picks among the
    kernels that fuse ``epilogue``; ``batch`` = (count, stride_a, stride_b) for a strided batch in one launch."""
    from gemmlab.kernels.registry import get_kernel

    m, n, k = _check_shapes(fa, fb)
    fp8 = scaled_dtype(fa.dtype) and scaled_dtype(fb.dtype)
    if not fp8 and any(s is not None for s in scales):
        raise DTypeError(f"scale_a and scale_b scale FP8 operands; A is {fa.dtype} and B is {fb.dtype}")
    if kernel is not None and kernel != AUTO:
        check_names(kernel, None)
        spec = get_kernel(kernel)
        widens = _host_widens(spec, fa, fb, on_gpu, precision)
        if widens:  # the host kernel, as kernel="auto" runs it on these operands
            problem = _problem(m, n, k, widens, batch, out_dtype)
            return dataclasses.replace(spec, precision=widens), problem, f"named by the caller: {widened(problem)}", \
                None
        if precision is not None and precision != spec.precision:
            raise DTypeError(f"{spec.name} computes {spec.precision}, not precision={precision!r}")
        want = get_precision(spec.precision).input_dtype
        for name, f in (("A", fa), ("B", fb)):
            if f.dtype != want and not (fp8 and get_precision(spec.precision).scaled):
                raise DTypeError(f"{spec.name} computes {spec.precision} and takes {want} operands; {name} is "
                                 f"{f.dtype} (convert it first, e.g. .astype({want}))")
        scaled = _check_scales(m, n, k, fa, *scales, spec.precision) if fp8 else None
        spec = _formats(spec, fa, fb, out_dtype)
        return spec, _problem(m, n, k, spec.precision, batch, out_dtype), "named by the caller", scaled
    check_same_dtype(fa.dtype, fb.dtype)
    options = precisions_of(fa.dtype)
    if not options:
        raise DTypeError(f"gemmlab computes {_what_takes_what()}; A and B are {fa.dtype} (convert them first, e.g. "
                         ".astype(float32))")
    if precision is not None and precision not in options:
        raise DTypeError(f"precision={precision!r} does not take {fa.dtype} operands; {fa.dtype} takes "
                         f"{', '.join(repr(p) for p in options)}")
    scaled = _check_scales(m, n, k, fa, *scales, precision) if fp8 else None
    # C's type is part of the problem (its bytes in the dispatcher's model); one the precision does not write is refused
    problem = _problem(m, n, k, scaled.precision if fp8 else precision or options[0], batch, out_dtype)
    if not on_gpu:
        from gemmlab.dispatch import HOST_DEFAULT, HOST_WIDENED

        spec = get_kernel(HOST_DEFAULT)
        why = "host operands run on the host peer, as torch and NumPy run them"
        if problem.precision in HOST_WIDENED:  # the same kernel, on the widened operands (HostPlan.launch)
            return dataclasses.replace(spec, precision=problem.precision), problem, f"{why}: {widened(problem)}", None
        if spec.precision != problem.precision:
            raise DTypeError(f"on the host gemmlab computes fp32 ({HOST_DEFAULT}), and {', '.join(HOST_WIDENED)} "
                             f"through it; {problem.precision} needs CUDA operands (or a GPU kernel named with "
                             "kernel=)")
        return spec, problem, why, None
    from gemmlab import dispatch

    layout = Layout(fa.layout or ROW, fb.layout or ROW)  # strided operands are copied into row-major order
    choice = dispatch.choose(problem, layout, gpu, epilogue, (fa.dtype, fb.dtype) if fp8 else None)
    return _formats(choice.spec, fa, fb, out_dtype), problem, choice.why, scaled


def _host_widens(spec, fa: Facts, fb: Facts, on_gpu: bool, precision) -> str | None:
    """The precision of dispatch.HOST_WIDENED that host operands of one dtype compute when ``spec`` is the host
    kernel (None otherwise, and where ``precision`` names another)."""
    from gemmlab.dispatch import HOST_DEFAULT, HOST_WIDENED

    if on_gpu or spec.name != HOST_DEFAULT:
        return None
    halves = [next((p for p in precisions_of(d) if p in HOST_WIDENED), None) for d in (fa.dtype, fb.dtype)]
    if any(halves):
        check_same_dtype(fa.dtype, fb.dtype)  # a 16-bit A with another B: the mismatch, not float32's want
    return halves[0] if halves[0] and precision in (None, halves[0]) else None


def widened(problem: Problem) -> str:
    """How a host problem of dispatch.HOST_WIDENED runs."""
    out = problem.output_dtype()
    return (f"{problem.precision} operands widened to float32 (exactly), "
            + ("C left in float32 (out_dtype)" if out == np.float32 else f"C rounded once to {out}"))


def _what_takes_what() -> str:
    """Which precisions each operand dtype computes, from the records: "fp32 and tf32 on float32 operands, ..."."""
    dtypes: dict = {}
    for p in PRECISIONS.values():
        names = dtypes.setdefault(p.operand_dtypes, [])
        if not (p.scaled and names):  # the scales choose among FP8's: one name says them
            names.append(p.name)
    parts = [f"{' and '.join(names)} on {' / '.join(group)} operands" for group, names in dtypes.items()]
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def _formats(spec, fa: Facts, fb: Facts, out_dtype: str | None):
    """The spec for these operand formats (FP8's e4m3 / e5m2) and C's type (the precision's default where the call
    names none: BF16 C for BF16 operands, as torch): each its own binary."""
    prec = get_precision(spec.precision)
    if out_dtype not in (None, *prec.output_dtypes):
        raise DTypeError(f"out_dtype={out_dtype!r}: {spec.precision} writes {' or '.join(prec.output_dtypes)}")
    out = out_dtype or prec.output_dtype
    if not (scaled_dtype(fa.dtype) and scaled_dtype(fb.dtype)):
        if out == str(spec.output_dtype(Problem(1, 1, 1, spec.precision))):
            return spec
        return spec.for_formats(prec.input_dtype, prec.input_dtype, out)
    return spec.for_formats(fa.dtype, fb.dtype, out)


def check_epilogue(epilogue, addend, fa: Facts, m: int, n: int, out_dtype: str) -> None:
    """An epilogue and its addend (AddendFacts or None) that fit the call: the addend its epilogue names, of the
    operands' kind and device, of the right shape (bias: N; matrix: M×N) and dtype (C's, or float32)."""
    from gemmlab.epilogue import Epilogue

    if epilogue is not None and not isinstance(epilogue, Epilogue):
        raise EpilogueError(f"epilogue must be a gemmlab.epilogue.Epilogue, got {type(epilogue).__name__}")
    wants = None if epilogue is None else epilogue.addend
    if wants is None:
        if addend is not None:
            raise EpilogueError("an addend was given but the epilogue adds none: name it with "
                                "Epilogue(addend='bias') or Epilogue(addend='matrix', beta=...)")
        return
    if addend is None:
        raise EpilogueError(f"the epilogue {epilogue.describe()} adds a {wants}; pass it as addend=")
    if addend.kind != fa.kind or addend.device != fa.device:
        def where(f):
            return "the host" if f.device is None else f"cuda:{f.device}"

        raise LayoutError(f"the {wants} must be a {fa.kind} array on {where(fa)}, with the operands; got a "
                          f"{addend.kind} array on {where(addend)}")
    want = (n,) if wants == "bias" else (m, n)
    if addend.shape != want:
        what = f"N={n} elements (one per column of C)" if wants == "bias" else f"shape {want} (M×N, C's shape)"
        raise ShapeError(f"the {wants} must have {what}; got shape {addend.shape}")
    check_addend_dtype(wants, addend.dtype, out_dtype)


def check_addend_dtype(wants: str, dtype: str, out_dtype: str) -> None:
    """The bias or matrix an epilogue adds is of C's dtype or float32 (dtype names); addmm's c also with beta = 0,
    where it is not read, as torch.addmm refuses another dtype whatever beta is."""
    if dtype not in (out_dtype, "float32"):
        allowed = "float32" if out_dtype == "float32" else f"{out_dtype} (C's dtype) or float32"
        raise DTypeError(f"the {wants} must be {allowed}; got {dtype}")


def prepare(fa: Facts, fb: Facts, kernel, precision, device: int | None, scales: tuple = (None, None),
             out_dtype: str | None = None, epilogue=None, addend=None, batch: tuple | None = None) -> Prepared:
    """Every check and the plan for one call's key; raises the GemmlabError that names what is wrong. ``epilogue``
    (a gemmlab.epilogue.Epilogue, None: C = AB) is fused into the kernel's store, ``addend`` (AddendFacts) its bias
    or D; a kernel named that cannot fuse it is refused, kernel="auto" picks among those that can. ``batch``:
    (count, stride_a, stride_b) of a strided batch run in one launch (C then (count, M, N))."""
    from gemmlab import device as dev

    if epilogue is not None and getattr(epilogue, "is_identity", False) and addend is None:
        epilogue = None  # C = AB: every kernel's default build
    gpu = None
    if device is not None:
        gpu = dev.gpu_info(device)
    spec, problem, why, scaled = resolve(fa, fb, kernel, precision, device is not None, gpu, scales, out_dtype,
                                         epilogue, batch)
    refusal = spec.is_valid(problem)
    if refusal:
        raise refusal.exception() if hasattr(refusal, "exception") else GemmlabError(refusal)
    check_epilogue(epilogue, addend, fa, problem.m, problem.n, str(spec.output_dtype(problem)))
    if epilogue is not None:
        spec = spec.with_epilogue(epilogue, None if addend is None else addend.dtype)
    if spec.device == "cpu":
        _runs_where(spec, device, gpu)
        plan = spec.plan(problem, Layout(fa.layout or "strided", fb.layout or "strided"))  # read as they are
        return Prepared(plan, why, out_shape=(problem.m, problem.n), epilogue=epilogue,
                        out_dtype=str(spec.output_dtype(problem)))
    device, host_copy, gpu = _runs_where(spec, device, gpu)
    given = Layout(fa.layout or "strided", fb.layout or "strided")
    if host_copy:  # copied to the GPU anyway: in the layout the kernel reads (FP8: B as N×K)
        runs = spec.natural_layout(problem)
    else:
        runs = target_layout(given, spec.layouts)
        if runs is None:
            raise LayoutError(spec.layout_refusal(given))
        given = Layout(runs.a if given.a == ANY else given.a, runs.b if given.b == ANY else given.b)
    refusal = spec.in_place_refusal(problem, runs)
    if refusal:
        raise refusal.exception()
    strides = None  # the addend's (row, column) strides in elements; host operands' addend is copied contiguous
    if addend is not None and addend.shape == (problem.n,):
        strides = (0, 1 if host_copy else addend.strides[0])
    elif addend is not None:
        strides = (problem.n, 1) if host_copy else addend.strides
    with dev.using(device):
        plan = spec.plan(problem, runs)
        if epilogue is not None:
            plan.bind_epilogue(strides)
    elem = problem.prec.input_bytes
    prepared = Prepared(plan, why, device, copy_a=runs.a != given.a, copy_b=runs.b != given.b, host_copy=host_copy,
                        out_shape=(problem.m, problem.n), span_a=problem.m * problem.k * elem,
                        span_b=problem.k * problem.n * elem, out_dtype=str(spec.output_dtype(problem)),
                        epilogue=epilogue, addend_strides=strides)
    if scaled is not None:
        prepared.scaled, prepared.copy_scales = True, scaled.copy
    return prepared


def _runs_where(spec, device: int | None, gpu) -> tuple:
    """(device, host_copy, gpu) where ``spec`` runs for operands on ``device`` (None: the host), or the error: a host
    kernel for GPU operands, a GPU kernel without a usable GPU (host operands run a GPU kernel on GPU 0, copied
    there and back) or on a GPU it does not support."""
    from gemmlab import device as dev

    if spec.device == "cpu":
        if device is not None:
            raise LayoutError(f"{spec.name} runs on the host; A and B are on cuda:{device} (use a GPU kernel, or "
                              "move them to the host)")
        return None, False, None
    host_copy = device is None
    if host_copy:
        dev.require_gpu(spec.name)
        device, gpu = 0, dev.gpu_info(0)
    reason = spec.unsupported(gpu)
    if reason:
        raise NoGPUError(reason)
    return device, host_copy, gpu


def check_host_batch_kernel(kernel, precision) -> None:
    """A batch of host operands runs on the host by numpy.matmul (dispatch.HOST_DEFAULT): another kernel named for it
    is refused (an UnknownKernelError for a name of no kernel)."""
    if kernel in (None, AUTO):
        return
    from gemmlab.dispatch import HOST_DEFAULT
    from gemmlab.kernels.registry import get_kernel

    check_names(kernel, precision)
    if get_kernel(kernel).name != HOST_DEFAULT:
        raise LayoutError(f"a batch of host operands runs on the host, by numpy.matmul ({HOST_DEFAULT}); "
                          f"kernel={kernel!r} is another kernel: pass the operands on the GPU, or 2-D ones")


@functools.lru_cache(maxsize=256)
def empty_dtype(kind: str, dtypes: tuple, device: int | None, shapes: tuple, kernel, precision,
                scales: tuple = (None, None), out_dtype: str | None = None, epilogue=None, addend=None,
                batched: bool = False) -> str:
    """C's dtype for a product with a zero dimension (M, N or K of the matrices' ``shapes``, (M, K) and (K, N), or a
    batch's), after every check a call of these operands gets but its size's: ``resolve`` on the call one element
    long where a dimension is 0 (dtypes, precision, kernel name, out_dtype, the scales' kinds, the dispatcher's choice
    among the kernels that fuse the epilogue), the kernel's device, the epilogue's addend against the real M and N,
    and a named kernel's epilogue. Such a call runs no kernel (torch's result is empty, or for K = 0 the epilogue of a
    zero product), so nothing is compiled and no plan is made; ``prepare`` still refuses it, as ``gemmlab.plan`` and
    the command line do. Layouts are not checked: there is nothing to read. ``batched``: the product of a batch (the
    batch's checks too: on the host numpy.matmul's kernel alone, on a GPU a kernel that takes a batch). Cached by its
    arguments, a call's facts."""
    from gemmlab import device as dev

    m, n, k = _sizes(*shapes)
    m1, n1, k1 = max(m, 1), max(n, 1), max(k, 1)
    b_layout = COL if scaled_dtype(dtypes[0]) and scaled_dtype(dtypes[1]) else ROW  # as FP8 tensor cores read B
    fa = Facts(kind, (m1, k1), dtypes[0], ROW, device)
    fb = Facts(kind, (k1, n1), dtypes[1], b_layout, device)
    # block scales of the real shapes ((M, ceil(K/128)), (ceil(K/128), ceil(N/128))) stand in for the larger call's
    blocks = (((m, -(-k // 128)), (m1, -(-k1 // 128))), ((-(-k // 128), -(-n // 128)), (-(-k1 // 128), -(-n1 // 128))))
    scales = tuple(dataclasses.replace(f, shape=larger) if f is not None and f.shape == real else f
                   for f, (real, larger) in zip(scales, blocks))
    if epilogue is not None and getattr(epilogue, "is_identity", False) and addend is None:
        epilogue = None
    gpu = None if device is None else dev.gpu_info(device)
    if batched and device is None:
        check_host_batch_kernel(kernel, precision)
    batch = (2, m1 * k1, k1 * n1) if batched and device is not None else None  # a batch of the 1-element stand-ins
    spec, problem, _, _ = resolve(fa, fb, kernel, precision, device is not None, gpu, scales, out_dtype, epilogue,
                                  batch)
    if batch is not None and spec.is_valid(problem):  # a named kernel that runs one product a launch
        raise spec.is_valid(problem).exception()
    _runs_where(spec, device, gpu)
    out = str(spec.output_dtype(problem))
    check_epilogue(epilogue, addend, fa, m, n, out)
    spec.with_epilogue(epilogue)  # a named kernel that cannot fuse it
    return out


def check_out_kind(out, kind: str) -> None:
    """``out`` is an array of the operands' ``kind`` (a torch out for NumPy operands too: NumPy cannot write into a
    tensor); an OperandTypeError for what is no array, a LayoutError for a NumPy scalar (no memory to write)."""
    if isinstance(out, np.generic):
        raise LayoutError(f"out is a NumPy scalar ({type(out).__name__}), which cannot be written in place: pass a "
                          "writable 0-D or larger ndarray")
    if kind_of(out) != kind:
        raise LayoutError(f"out is a {kind_of(out)} array; the operands are {kind} arrays: pass out of their kind")


def check_out(out, kind: str, shape: tuple, device, dtype: str = "float32") -> None:
    """The checks an ``out`` array gets once per key (shape, dtype, layout, device, writability)."""
    check_out_kind(out, kind)
    if kind == "torch":
        ok = (tuple(out.shape) == shape and str(out.dtype) == f"torch.{dtype}" and out.is_contiguous()
              and (out.device.index if out.is_cuda else None) == device)
        desc = (f"{tuple(out.shape)} {str(out.dtype).removeprefix('torch.')}"
                f"{'' if out.is_contiguous() else ' (not contiguous)'} on {out.device}")
    else:  # a non-native byte order has its dtype's name, but a kernel would write native floats into it
        ok = (tuple(out.shape) == shape and np.dtype(out.dtype).name == dtype and out.dtype.isnative
              and out.flags.c_contiguous and (out.device.id if kind == "cupy" else None) == device)
        desc = (f"{tuple(out.shape)} {out.dtype}{'' if out.flags.c_contiguous else ' (not C-contiguous)'}"
                f"{'' if out.dtype.isnative else ' (not in native byte order)'}")
        if kind == "numpy" and not out.flags.writeable:
            raise LayoutError(f"out is read-only; pass a writable {dtype} array")
    if not ok:
        where = "the host" if device is None else f"cuda:{device}"
        raise LayoutError(f"out must be a C-contiguous {shape} {dtype} array on {where} (the product's shape and "
                          f"dtype), got {desc}")
    if kind == "torch" and out.requires_grad:
        raise LayoutError("out requires grad; gemmlab writes out= in place outside autograd")
