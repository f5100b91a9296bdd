"""tc8: block-scaled FP8 (DeepGEMM's recipe), the tensor cores' partial sums promoted into FP32 every 128 of K.

What changed against tc4_persistent_fp8: FP32 scales per 1×128 of A and per 128×128 block of B change every k-tile,
so each consumer warpgroup runs a k-tile's 4 wgmma m64n128k32 from zero into a second accumulator set, waits, and
adds them, scaled, into FP32 accumulators (FFMA). 192×128 tiles: three consumer warpgroups at 160 registers, one B
scale per k-tile. The scales go through a TMA-filled ring of their own (SCALE_TMA=2), which producer warp 0 waits for
before it arms the operands' barrier (SCALE_GATE=1). Why: per-block scales keep FP8's error at BF16 rounding's, and
the tensor cores' own accumulation errs in proportion to K. Predicted: about 0.9x tc4_persistent_fp8's TFLOPS at
most (shared memory, about 149 bytes per clock against the SM's 128), 0.85-1.0x torch's blockwise scaled matmul.

``cuda/tc8_cluster_fp8_block``: 2-CTA clusters multicasting B (CM=2), one box of C held (EPI_DEFER=1); predicted
faster than tc8 at 4096³ and 8192³, slower at 2048×3072×4096. ``cuda/tc8_promoted_fp8``: per-tensor scales
(PER_TENSOR=1), FP32 accumulation as cuBLASLt's default; predicted tc8's speed, error at BF16 rounding's at any K.

Design, variants (SCALE_TMA, HALVES, EPI_DEFER) and measurements: docs/tensor_cores/tc8.md, docs/tensor_cores/fp8.md.
"""
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.fp8 import fp8_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic
from gemmlab.problem import get_precision

PARAMS = {"BM": 192, "BN": 128, "STAGES": 4, "GROUP_M": 8, "PRODUCER_REGS": 32, "CONSUMER_REGS": 160, "EPI_TMA": 1,
          "CM": 1, "SCALE_TMA": 2, "SCALE_GATE": 1, "HALVES": 0, "EPI_DEFER": 0, "A_E5M2": 0, "B_E5M2": 0,
          "OUT_BF16": 1}
PER_TENSOR = {**PARAMS, "PER_TENSOR": 1, "SCALE_TMA": 0, "SCALE_GATE": 0}
CLUSTER = {**PARAMS, "CM": 2, "EPI_DEFER": 1}
# the block-scaled specs' short tile (WgmmaKernel.short_tile): 128 rows, two consumer warpgroups at 232 registers, 5
# stages of the ring's bytes, where it runs a problem sooner (tiles.short_pays: M = 256-1024, most of them)
SHORT_TILE = {"BM": 128, "CONSUMER_REGS": 232, "PRODUCER_REGS": 40}
# what the roofline leaves out here: besides tc4's epilogue, each k-tile's wait and promotion keep that warpgroup off
# the tensor cores, which only the other warpgroups' wgmma cover
PROMOTION = ("latency: each k-tile waits for its wgmma and promotes on the CUDA cores, and each tile's epilogue "
             "keeps its warpgroups off the tensor cores; gemmlab timeline counts the cycles")


def _spec(name: str, precision: str, title: str, params: dict) -> WgmmaKernel:
    """A spec of this source: its parameters, its precision's traffic at their tile (block scales for fp8_block)."""
    return WgmmaKernel(
        name=name, level=8, precision=precision, kind="persistent", title=title, source="tc8_block_scaled_fp8.cu",
        entry="tc8_block_scaled_fp8", params=dict(params),
        constraints=lambda p: wgmma_constraints(p, specialized=True, options=("HALVES",))
        + fp8_constraints(p, promoted=True),
        traffic_model=wgmma_traffic(precision, params["BM"], params["BN"], params["CM"], persistent=True,
                                    group_m=params["GROUP_M"], epi_tma=True,
                                    block_scales=get_precision(precision).block_scaled),
        doc=__doc__, unmodeled=PROMOTION, short_tile=SHORT_TILE if get_precision(precision).block_scaled else None,
    )


SPECS = [
    _spec("cuda/tc8_block_scaled_fp8", "fp8_block",
          "fp8 e4m3 with FP32 scales per 1x128 of A and 128x128 of B, wgmma m64n128k32 promoted into FP32 every 128 "
          "of K, three consumer warpgroups on 192x128 tiles, tc4's persistent skeleton, BF16 C", PARAMS),
    _spec("cuda/tc8_cluster_fp8_block", "fp8_block",
          "fp8 block-scaled tc8 in 2-CTA clusters multicasting B, each warpgroup's last box of C stored under the "
          "next tile's first k-tile, BF16 C", CLUSTER),
    _spec("cuda/tc8_promoted_fp8", "fp8",
          "fp8 e4m3, per-tensor scales, tc8's promotion into FP32 every 128 of K (FP32 accumulation), BF16 C",
          PER_TENSOR),
]
