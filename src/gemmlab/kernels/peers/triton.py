"""Triton's tiled, autotuned matmul: a second peer, compiled from Python like the numba kernels but tuned by search.

The kernel is the one in Triton's matrix-multiplication tutorial: each program computes a BLOCK_M×BLOCK_N tile
of C, walking K in BLOCK_K steps with ``tl.dot``, and programs are ordered in groups of GROUP_M tile rows so
neighbouring programs share panels of A and B in L2. Triton picks the instructions (FFMA for FP32 IEEE, wgmma
for BF16 on Hopper); ``triton.autotune`` times the (tile, warps, stages) configurations in ``_SHAPES`` per
(M, N, K) on first use and keeps the fastest.

- fp32: ``input_precision="ieee"``, so the product is a true FP32 FFMA matmul and its peer is cuBLAS FP32.
- bf16: BF16 operands, FP32 accumulation and FP32 output, like the cuBLAS BF16 peer.

Any M, N, K is valid: K is masked on every load, rows and columns past the edge read wrapped addresses, and
stores are masked. Registered only where Triton and PyTorch import (Triton launches on a PyTorch stream; the
launcher wraps the caller's stream so the harness's events see it).

Measured: results/h200/fp32.json, results/h200/tensor_cores.json (docs/fp32_ladder.md, docs/tensor_cores/).
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from gemmlab.kernels.plan import ROW_MAJOR, Plan
from gemmlab.kernels.spec import GPU, SM_COUNT, KernelSpec, tiled_traffic
from gemmlab.problem import Problem

# Triton is optional: the peer is registered where Triton and PyTorch are installed, and they load at its first
# launch (_triton_kernels), so that reading the registry (gemmlab list) imports neither
AVAILABLE = all(importlib.util.find_spec(name) is not None for name in ("triton", "torch"))


# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) the autotuner tries. FP32 IEEE runs on the FMA pipe: tiles stay at
# 128 and BK small so the accumulators and the staged tiles fit in registers and shared memory. BF16 runs on tensor
# cores: the tutorial's Hopper tiles, BK=64.
_SHAPES = {
    True: [(128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 128, 16, 8, 4)],
    False: [(128, 256, 64, 8, 3), (128, 128, 64, 8, 4), (128, 128, 64, 4, 4), (64, 128, 64, 4, 4)],
}


class _Pointer:
    """What Triton's launcher reads of a tensor argument: its address and element type."""

    def __init__(self, ptr: int, dtype):
        self.ptr, self.dtype = ptr, dtype

    def data_ptr(self) -> int:
        return self.ptr


_streams: dict[int, object] = {}


def _torch_stream(ptr: int):
    """PyTorch's handle on a CUstream, so Triton launches where the caller's events are."""
    import torch

    stream = _streams.get(ptr)
    if stream is None:
        stream = torch.cuda.default_stream() if ptr == 0 else torch.cuda.ExternalStream(ptr)
        _streams[ptr] = stream
    return stream


@dataclass
class TritonPlan(Plan):
    def launch(self, a, b, c, stream: int = 0) -> None:
        import torch
        import triton

        from gemmlab.kernels.peers._triton_kernels import KERNELS

        m, n, k = self.problem.shape
        dtype = getattr(torch, self.spec.prec.input_dtype)  # torch names its dtypes as NumPy does

        def grid(meta):
            return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

        with torch.cuda.stream(_torch_stream(stream)):
            out = getattr(torch, self.spec.prec.output_dtype)
            KERNELS[self.spec.precision][grid](_Pointer(a, dtype), _Pointer(b, dtype), _Pointer(c, out),
                                                m, n, k, k, 1, n, 1, n, 1, IEEE=self.spec.prec.fp32_multiply)


@dataclass(frozen=True, kw_only=True)
class TritonPeer(KernelSpec):
    backend: str = "peer"
    device: str = GPU

    def plan(self, problem: Problem, layout=ROW_MAJOR) -> TritonPlan:
        from gemmlab.device import require_gpu

        require_gpu(self.name)
        return TritonPlan(self, problem, layout, steps=["Triton's autotuned tiled matmul (tutorial kernel)"])


def _traffic(fp32: bool):
    # the autotuner's choice is unknown before the run: the model takes the config that moves the fewest bytes
    # (the largest tile), so the roof it sets holds whichever the autotuner picks
    bm, bn = max((shape[:2] for shape in _SHAPES[fp32]), key=lambda t: t[0] * t[1])

    def model(problem: Problem, sm_count: int = SM_COUNT):
        return tiled_traffic(problem, bm, bn, group_m=8, quantized=False)

    return model


SPECS = [] if not AVAILABLE else [
    TritonPeer(name="peers/triton_fp32", level=None, precision="fp32", title="Triton tiled matmul, FP32 IEEE (FFMA)",
               traffic_model=_traffic(fp32=True), doc=__doc__),
    TritonPeer(name="peers/triton_bf16", level=None, precision="bf16", title="Triton tiled matmul, BF16 in and out, FP32 accumulate",
               traffic_model=_traffic(fp32=False), doc=__doc__),
]
