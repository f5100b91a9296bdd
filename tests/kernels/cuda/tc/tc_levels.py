"""What the tensor-core level tests share: the levels under test, the PTX NVRTC makes of one, and host builds of the
device headers' plain arithmetic."""
from __future__ import annotations

from gemmlab.kernels.cuda.launch.nvrtc import SOURCE_DIRS, _read_source, source_path
from gemmlab.kernels.registry import list_kernels

# FP8: test_cuda_fp8.py. tc9 wraps the wgmma level that computes its transposed product (NarrowSwap.inner): that
# level takes the checks every wgmma level takes; the swap itself is test_tc9_narrow_swap.py's
TC = [getattr(s, "inner", s) for s in list_kernels("cuda/tc*") if s.precision not in ("fp8", "fp8_block")]
WGMMA = [s for s in TC if s.level >= 2]
TC5 = next(s for s in TC if s.level == 5)
HOST_SHIM = ["-D__host__=", "-D__device__=", "-D__forceinline__=inline"]  # device qualifiers, gone on the host
INCLUDES = [f"-I{d}" for d in SOURCE_DIRS]  # the folders NVRTC finds the headers in


def ptx_of(spec) -> str:
    """The PTX NVRTC makes of the level (through the nvrtc bindings: no driver needed)."""
    from cuda.bindings import nvrtc

    src = _read_source(spec.source).encode()
    err, prog = nvrtc.nvrtcCreateProgram(src, spec.source.encode(), 0, [], [])
    opts = [b"--gpu-architecture=compute_90a", b"--std=c++17"]
    opts += [f"-D{k}={v}".encode() for k, v in spec.defines().items()]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    err, size = nvrtc.nvrtcGetPTXSize(prog)
    buf = b" " * size
    (err,) = nvrtc.nvrtcGetPTX(prog, buf)
    nvrtc.nvrtcDestroyProgram(prog)
    return buf.decode(errors="replace")



def host_block(header: str, name: str) -> str:
    text = source_path(header).read_text()
    begin, end = f"// begin {name} arithmetic", f"// end {name} arithmetic"
    return text[text.index(begin):text.index(end)]


def assert_rounded_not_truncated(c, a, b) -> None:
    """C (a GPU level's TF32 product of the host arrays ``a``, ``b``) errs against float64 as both operands rounded to
    nearest do (within 20%), far from truncating them (below 0.6 of that error)."""
    import numpy as np

    from gemmlab import numerics as nm

    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    ref = a.astype(np.float64) @ b.astype(np.float64)

    def rel(x):
        return np.linalg.norm(x - ref) / np.linalg.norm(ref)

    rounded = rel(nm.tf32_rna(a).astype(np.float64) @ nm.tf32_rna(b).astype(np.float64))
    truncated = rel(nm.tf32_trunc(a).astype(np.float64) @ nm.tf32_trunc(b).astype(np.float64))
    err = rel(np.asarray(c, np.float64))
    assert err <= 1.2 * rounded and err < 0.6 * truncated, (err, rounded, truncated)
