"""cuBLASLt FP8 through ``torch._scaled_mm``: the peers of the FP8 levels, timed in the same run.

torch._scaled_mm takes A row-major (M×K), B column-major (the transpose of an N×K row-major matrix) and FP32
scales, and calls cuBLASLt; C is BF16. The operands arrive as the harness makes them (gemmlab.fp8.Scaled of CuPy
arrays, B stored N×K), or as device addresses through ``launch``; the plan wraps each address once in a torch tensor
(through the CUDA array interface, no copy) and runs on the caller's stream.

- ``peers/cublaslt_fp8``: per-tensor scales, ``use_fast_accum=True``: the tensor cores' own FP8 accumulation, the
  arithmetic of tc4_persistent_fp8, so the pair compares like for like (fp8's peer).
- ``peers/cublaslt_fp8_promoted``: per-tensor scales, torch's default ``use_fast_accum=False``: cuBLASLt promotes
  partial sums into FP32 as it goes, more accurate over long K, and slower where it pays for that.
- ``peers/cublaslt_fp8_block``: DeepGEMM's scales, scale_a (M, K/128) as the transpose of a (K/128, M) tensor and
  scale_b (K/128, N/128) as the transpose of an (N/128, K/128) tensor, exactly gemmlab.fp8's stored layouts
  (fp8_block's peer). A torch that has no blockwise scaled matmul refuses it at plan time with torch's reason; the
  benchmark then takes the per-tensor peer's time as fp8_block's reference and says so.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gemmlab.errors import GemmlabError, NoGPUError
from gemmlab.fp8 import BLOCK, E4M3, E5M2
from gemmlab.kernels.plan import COL, Layout, Plan
from gemmlab.kernels.peers.cublas import persistent_traffic
from gemmlab.kernels.spec import GPU, KernelSpec
from gemmlab.problem import Problem

_TYPESTR = {"bf16": "<i2", "float32": "<f4"}  # FP8 as uint8 ("|u1"); each viewed as its torch dtype


class _Interface:
    """A device buffer described by the CUDA array interface (no stream: the caller orders the work)."""

    def __init__(self, ptr: int, shape: tuple, typestr: str):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False), "version": 3,
                                         "strides": None}


@dataclass
class ScaledMmPlan(Plan):
    views: dict = field(default_factory=dict)  # (address, shape, kind) -> the torch tensor at it
    streams: dict = field(default_factory=dict)

    def _tensor(self, ptr: int, shape: tuple, kind: str):
        key = (ptr, shape, kind)
        view = self.views.get(key)
        if view is None:
            import torch

            if len(self.views) >= 256:  # a caller cycling through many buffers: start over
                self.views.clear()
            raw = torch.as_tensor(_Interface(ptr, shape, _TYPESTR.get(kind, "|u1")), device="cuda")
            view = raw.view({"bf16": torch.bfloat16, E4M3: torch.float8_e4m3fn,
                             E5M2: torch.float8_e5m2}.get(kind, raw.dtype))
            self.views[key] = view
        return view

    def _stream(self, ptr: int):
        import torch

        stream = self.streams.get(ptr)
        if stream is None:
            stream = torch.cuda.default_stream() if ptr == 0 else torch.cuda.ExternalStream(ptr)
            self.streams[ptr] = stream
        return stream

    def launch(self, a, b, c, stream: int, scale_a: int, scale_b: int) -> None:
        import torch

        m, n, k = self.problem.shape
        fa, fb = self.spec.formats
        A = self._tensor(a, (m, k), fa)
        B = self._tensor(b, (n, k), fb).t()  # column-major K×N
        C = self._tensor(c, (m, n), "bf16")
        if self.spec.blockwise:
            kb, nb = -(-k // BLOCK), -(-n // BLOCK)
            sa = self._tensor(scale_a, (kb, m), "float32").t()
            sb = self._tensor(scale_b, (nb, kb), "float32").t()
        else:
            sa = self._tensor(scale_a, (1,), "float32").reshape(())
            sb = self._tensor(scale_b, (1,), "float32").reshape(())
        with torch.cuda.stream(self._stream(stream)):
            torch._scaled_mm(A, B, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                             use_fast_accum=self.spec.fast_accum, out=C)

    def run(self, a, b, c) -> None:
        import cupy

        self.launch(a.data.data.ptr, b.data.data.ptr, c.data.ptr, cupy.cuda.get_current_stream().ptr,
                    a.scale.data.ptr, b.scale.data.ptr)


@dataclass(frozen=True, kw_only=True)
class ScaledMmPeer(KernelSpec):
    backend: str = "peer"
    device: str = GPU
    int32_indices: bool = False
    fast_accum: bool = False
    blockwise: bool = False

    formats = (E4M3, E4M3)

    @property
    def layouts(self) -> frozenset:
        return frozenset({Layout(b=COL)})

    def is_valid(self, problem: Problem):
        why = super().is_valid(problem)
        if why:
            return why
        from gemmlab.errors import Refusal, ShapeError

        if problem.k % 16 or problem.n % 16:
            return Refusal(f"{problem.label()}: torch._scaled_mm needs K and N to be multiples of 16", ShapeError)
        if self.blockwise and -(-problem.k // BLOCK) % 4:
            return Refusal(f"{problem.label()}: torch._scaled_mm's blockwise scales give a wrong product where "
                           "ceil(K/128) is not a multiple of 4 (torch 2.11 with CUDA 13, at K = 256, 384 and 640), "
                           "and it refuses scale_b rows padded to 16 bytes (docs/tensor_cores/peers.md)", ShapeError)
        return None

    def plan(self, problem: Problem, layout=Layout(b=COL)) -> ScaledMmPlan:
        from gemmlab.device import require_gpu

        require_gpu(self.name)
        try:
            import torch
        except ImportError:
            raise NoGPUError(f"{self.name} needs PyTorch") from None
        if not torch.cuda.is_available():
            raise NoGPUError(f"{self.name}: this PyTorch ({torch.__version__}) has no CUDA")
        if self.blockwise:
            self._probe(torch)
        recipe = "blockwise 1x128 / 128x128" if self.blockwise else "per-tensor"
        return ScaledMmPlan(self, problem, Layout(b=COL), steps=[
            f"torch._scaled_mm (cuBLASLt), {recipe} FP32 scales, BF16 out, use_fast_accum={self.fast_accum}"])

    @staticmethod
    def _probe(torch) -> None:
        """One small blockwise call, so a torch without the recipe is refused with its own reason."""
        m = n = k = 256
        a = torch.zeros(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.zeros(n, k, device="cuda").to(torch.float8_e4m3fn)
        sa = torch.ones(k // BLOCK, m, device="cuda").t()
        sb = torch.ones(n // BLOCK, k // BLOCK, device="cuda").t()
        try:
            torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        except Exception as exc:
            raise GemmlabError(f"torch {torch.__version__} has no blockwise scaled matmul here "
                               f"({type(exc).__name__}: {exc})") from None


# The tiles of the kernels Nsight Compute saw at 4096³ (results/h200/fp8.json, "profile"): per tensor with fast
# accumulation nvjet ..._256x128_128x4_1x2_..., promoted and block-scaled ..._128x128_128x6_2x1_...
SPECS = [
    ScaledMmPeer(name="peers/cublaslt_fp8", level=None, precision="fp8", fast_accum=True,
                 title="cuBLASLt FP8 e4m3 (torch._scaled_mm), per-tensor scales, fast accumulation, BF16 out",
                 traffic_model=persistent_traffic(256, 128, (1, 2)), doc=__doc__),
    ScaledMmPeer(name="peers/cublaslt_fp8_promoted", level=None, precision="fp8",
                 title="cuBLASLt FP8 e4m3 (torch._scaled_mm), per-tensor scales, FP32 promotion, BF16 out",
                 traffic_model=persistent_traffic(128, 128, (2, 1)), doc=__doc__),
    ScaledMmPeer(name="peers/cublaslt_fp8_block", level=None, precision="fp8_block", blockwise=True,
                 title="cuBLASLt FP8 e4m3 (torch._scaled_mm), 1x128 / 128x128 FP32 scales, BF16 out",
                 traffic_model=persistent_traffic(128, 128, (2, 1)), doc=__doc__),
]
