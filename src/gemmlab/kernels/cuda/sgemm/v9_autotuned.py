"""V9 autotuned: V8's kernel with its tile parameters chosen per shape by a measured search on the present GPU.

What changed against V8: nothing in the kernel source. ``gemmlab tune`` times every configuration of a small search
space (``SEARCH_SPACE`` in gemmlab/tune.py) per shape, drops those that spill or fail verification, and caches the
fastest per GPU and shape; this spec takes the cached choice for the shape (or the nearest cached shape), else the
H200's choice (TUNED below), else V8's configuration.
Why: the best tile depends on the shape (wave quantization, L2 reuse, registers per lane), and on Hopper every
non-FFMA instruction takes an FFMA issue slot, which a larger per-lane tile saves.
A batch (BATCHED=1, CudaKernel.batched): the same kernel, a product per gridDim.z index, each operand's matrices
its batch stride apart, 65535 a launch (gridDim.z's limit), at the tile chosen for one product.
Predicted gain: 1.1-1.2× V8 at the three bar shapes, toward 0.9× cuBLAS FP32. docs/fp32_ladder.md ("v9").
"""
from __future__ import annotations

from gemmlab.kernels.cuda.sgemm.common.sgemm import AutotunedKernel
from gemmlab.kernels.cuda.sgemm.v8_cp_async import PARAMS as V8_PARAMS
from gemmlab.kernels.cuda.sgemm.v8_cp_async import make_spec

# Winners of `gemmlab tune` measured on the named GPU, used when the local cache has nothing.
_T16x8 = {"BM": 256, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "RM": 4, "RN": 2, "STAGES": 3, "GROUP_M": 1,
          "MIN_BLOCKS": 1, "KUNROLL": 16}
_T8x8 = {"BM": 128, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "RM": 2, "RN": 2, "STAGES": 3, "GROUP_M": 1,
         "MIN_BLOCKS": 1, "KUNROLL": 16}
TUNED: dict[str, dict[str, dict]] = {
    "NVIDIA H200": {  # 2026-11-30, 17 candidates per shape
        "4096x4096x4096": {"params": _T16x8, "ms": 3.240},
        "2048x3072x4096": {"params": _T8x8, "ms": 1.303},
        "8192x8192x8192": {"params": _T16x8, "ms": 25.642},
    },
}


SPECS = [make_spec("cuda/v9_autotuned", 9, "v8 with tile parameters tuned per shape", dict(V8_PARAMS), __doc__,
                   cls=AutotunedKernel, family="cuda/v9_autotuned", tuned=TUNED, make=make_spec,
                   unmodeled="issue slots: V8's A path, four 4-byte LDGSTS per quad of A, at the tuned tile",
                   batches=True)]
