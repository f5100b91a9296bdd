"""gemmlab.matmul: run any registered kernel on NumPy, CuPy or PyTorch arrays.

The result is the same kind of array as the inputs. CuPy arrays and CUDA PyTorch tensors are used in place
(DLPack, no copy) and the kernel writes straight into the returned array. NumPy arrays and CPU tensors given to
a GPU kernel are copied to the GPU and the result copied back. Non-contiguous or transposed operands are
accepted and copied once into row-major order (the kernels read row-major only); that copy is the only one.
"""
from __future__ import annotations

import numpy as np

from gemmlab.errors import DTypeError, GemmlabError, LayoutError, ShapeError, SizeLimitError
from gemmlab.kernels.registry import get_kernel
from gemmlab.kernels.spec import CPU
from gemmlab.problem import Problem

DEFAULT_KERNEL = "cuda/v2_smem"


def _kind(x) -> str:
    module = type(x).__module__
    if module.startswith("torch"):
        return "torch-cuda" if x.is_cuda else "torch-cpu"
    if module.startswith("cupy"):
        return "cupy"
    if isinstance(x, np.ndarray):
        return "numpy"
    if hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__"):
        return "cuda-interface"
    raise DTypeError(f"matmul takes NumPy, CuPy or PyTorch arrays (or objects with __cuda_array_interface__ / "
                     f"__dlpack__), got {type(x).__name__}")


def _to_host(x, kind):
    if kind == "torch-cpu":
        return x.detach().numpy()
    if kind in ("cupy", "cuda-interface", "torch-cuda"):
        return _to_cupy(x, kind).get()
    return x


def _to_cupy(x, kind):
    import cupy

    if kind == "cupy":
        return x
    if kind == "torch-cuda":
        return cupy.from_dlpack(x.detach())
    if kind == "cuda-interface":
        return cupy.asarray(x)
    return cupy.asarray(_to_host(x, kind))  # host -> device copy


def _expected_dtype(precision: str):
    return Problem(1, 1, 1, precision).input_dtype()


def _check_operands(a, b):
    for name, x in (("A", a), ("B", b)):
        if x.ndim != 2:
            raise ShapeError(f"{name} must be a 2-D matrix, got {x.ndim}-D with shape {tuple(x.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ShapeError(f"inner dimensions differ: A is {a.shape[0]}×{a.shape[1]} (M×K) but B is "
                         f"{b.shape[0]}×{b.shape[1]} (K×N); A's columns must equal B's rows")
    for name, size in (("M", a.shape[0]), ("K", a.shape[1]), ("N", b.shape[1])):
        if size == 0:
            raise ShapeError(f"{name}=0: zero-sized matrices have no product to compute; every dimension must be >= 1")


def _dtype_name(x) -> str:
    text = str(x.dtype)
    return text.removeprefix("torch.") if text.startswith("torch.") else np.dtype(x.dtype).name


def _contiguous(x, xp):
    if x.flags.c_contiguous:
        return x
    # documented: transposed or strided views are copied once into row-major order
    return xp.ascontiguousarray(x)


def matmul(A, B, kernel: str = DEFAULT_KERNEL, out=None):
    """C = A @ B with the named kernel (see ``gemmlab list``); A is M×K, B is K×N.

    Raises ShapeError (not 2-D, inner dimensions differ, a zero dimension), DTypeError (a dtype the kernel's
    precision does not take: float32 for fp32/tf32 kernels, bfloat16 for bf16), SizeLimitError (past the kernel's
    32-bit index range or GPU memory), NoGPUError (a GPU kernel without a GPU), UnknownKernelError.
    """
    spec = get_kernel(kernel)
    kind_a, kind_b = _kind(A), _kind(B)
    if {kind_a, kind_b} - {"numpy", "torch-cpu"} and {kind_a, kind_b} & {"numpy", "torch-cpu"}:
        raise LayoutError(f"A is a {kind_a} array and B a {kind_b} array: pass both on the host or both on the GPU")
    _check_operands(A, B)
    want = np.dtype(_expected_dtype(spec.precision)).name
    for name, x in (("A", A), ("B", B)):
        if _dtype_name(x) != want:
            raise DTypeError(f"{spec.name} computes {spec.precision} and takes {want} operands; {name} is "
                             f"{_dtype_name(x)} (convert it first, e.g. .astype({want}))")
    problem = Problem(A.shape[0], B.shape[1], A.shape[1], spec.precision)
    reason = spec.is_valid(problem)
    if reason:
        raise (SizeLimitError if "range" in reason or "limit" in reason else GemmlabError)(reason)

    if spec.device == CPU:
        a = np.ascontiguousarray(_to_host(A, kind_a))
        b = np.ascontiguousarray(_to_host(B, kind_b))
        c = np.empty((problem.m, problem.n), problem.output_dtype())
        spec.build(problem)(a, b, c)
        return _wrap_result(c, kind_a, A, out)

    from gemmlab.device import require_gpu

    require_gpu(spec.name)
    import cupy

    a = _contiguous(_to_cupy(A, kind_a), cupy)
    b = _contiguous(_to_cupy(B, kind_b), cupy)
    c, result = _output(problem, kind_a, A, out)
    stream = cupy.cuda.ExternalStream(_torch_stream()) if kind_a == "torch-cuda" else cupy.cuda.get_current_stream()
    with stream:
        spec.build(problem)(a, b, c)
    if result is None:  # host caller: copy back
        stream.synchronize()
        return _wrap_result(c.get(), kind_a, A, out)
    return result


def _torch_stream() -> int:
    import torch

    return torch.cuda.current_stream().cuda_stream


def _output(problem: Problem, kind: str, like, out):
    """(CuPy view to write, object to return) — writing into ``out`` or a fresh array of the caller's kind."""
    import cupy

    shape = (problem.m, problem.n)
    if out is not None:
        view = _to_cupy(out, _kind(out))
        if tuple(view.shape) != shape or view.dtype != problem.output_dtype() or not view.flags.c_contiguous:
            raise LayoutError(f"out must be a C-contiguous {shape} {np.dtype(problem.output_dtype())} array, got "
                              f"{tuple(view.shape)} {view.dtype}{'' if view.flags.c_contiguous else ' (not contiguous)'}")
        return view, (out if _kind(out) not in ("numpy", "torch-cpu") else None)
    if kind == "torch-cuda":
        import torch

        t = torch.empty(shape, dtype=torch.float32, device=like.device)
        return cupy.from_dlpack(t), t
    c = cupy.empty(shape, problem.output_dtype())
    return c, (c if kind in ("cupy", "cuda-interface") else None)


def _wrap_result(c: np.ndarray, kind: str, like, out):
    if out is not None:
        target = out.detach().numpy() if _kind(out) == "torch-cpu" else out
        if tuple(target.shape) != c.shape:
            raise LayoutError(f"out has shape {tuple(target.shape)}, the product is {c.shape}")
        target[...] = c
        return out
    if kind == "torch-cpu":
        import torch

        return torch.from_numpy(c)
    if kind in ("cupy", "cuda-interface", "torch-cuda"):
        import cupy

        g = cupy.asarray(c)
        if kind == "torch-cuda":
            import torch

            return torch.from_dlpack(g)
        return g
    return c
