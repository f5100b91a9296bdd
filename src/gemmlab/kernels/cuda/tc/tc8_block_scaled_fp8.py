"""tc8: block-scaled FP8 (DeepGEMM's recipe), the tensor cores' partial sums promoted into FP32 every 128 of K.

What changed against tc4_persistent_fp8: the scales are FP32 per 1×128 of A (a row, 128 of K) and per 128×128
block of B, not per tensor, so they change every k-tile and cannot wait for the epilogue. Each consumer warpgroup
runs a k-tile's 4 wgmma m64n128k32 from zero into a second accumulator set, waits for them, frees the ring slot and
adds them, times its two rows' A scales and the tile's B scale, into the FP32 accumulators with FFMA (64 per thread
per k-tile). Same producer, ring, grouped snake order and BF16 TMA-store epilogue as tc4.
The tile: 128 columns because the promotion needs two accumulator sets of BN/2 registers per thread beside each
other (at BN=256 they are 256 registers, past what a thread can have; at 128 a tile is exactly one B scale block,
one scale per k-tile), and 192 rows, three consumer warpgroups. At 128×128 each k-tile moves 160 bytes of shared
memory per clock at the FP8 rate against the 128 the SM has (both warpgroups read B again, and the tile's loads
land there), so the tensor cores cannot be fed; a third warpgroup reads A's extra 64 rows against the same B, to
about 149 bytes per clock, and its wgmma covers the other two's waits and promotions. It costs registers:
three consumer warpgroups and the producer share 64K, so a consumer thread has 160 (the producer 32), the two
accumulator sets take 128 of them, and 4 stages of 40 KB fill shared memory. Each consumer thread reads a
k-tile's three scales from shared memory just before it issues the k-tile's wgmma, so that nothing is loaded between
the wgmma's end and the promotion; TMA copies them there (SCALE_TMA, below). The build before that (SCALE_TMA=0, a
variant) loaded them from global memory one k-tile ahead; the promotion waited for those loads
(results/h200/fp8_variants.json).
No clusters: a 2-CTA cluster multicasting B measured no faster at 4096³ and slower at 8192³ and 2048×3072×4096 (with
no box of C held for the next tile; with one, and the gated scale ring, it is ``cuda/tc8_cluster_fp8_block`` below).
Predicted from the shared-memory bound: about 0.9× tc4_persistent_fp8's TFLOPS at most, less the promotions the
third warpgroup does not cover; against torch's blockwise scaled matmul (cuBLASLt), which pays the same promotion
on 128×128 tiles, 0.85-1.0×. With the scales copied into shared memory, predicted: a k-tile near
tc8_promoted_fp8's (the same loop with fixed scales), which the loads one ahead kept well above it.

SCALE_TMA=1 (the build before; tc6_stream_k_fp8_block's split launches): the producer copies a k-tile's scales with
TMA into its ring slot beside the operands, counted on the same barrier.
SCALE_TMA=2 (registered): the scales through a ring of their own, twice the stages deep, with its own barriers,
filled by producer warp 1 up to that many k-tiles ahead, so that each k-tile's operand barrier waits for its three
operand copies alone and the scales' copies are issued about STAGES k-tiles earlier. Why: in diagnostic builds
(timing only) the kernel without the per-k-tile scale copies ran faster than SCALE_TMA=1 by more than tc8 is short
of its bar, and without the consumers' scale reads it did not (docs/tensor_cores.md). Predicted: most of that
difference, if what costs is the copies' latency on the operands' barrier; nothing, if it is their issue.

SCALE_GATE=1 (registered): the consumers' wait on the scale ring moves to producer warp 0, which waits for a k-tile's
scales before it arms that k-tile's operand barrier; the barrier's arrive, a release, then carries the scales to the
consumers with the operands. Why: every shared-memory operation of a consumer waits behind the wgmma's reads of
shared memory, which keep it full, so each one costs the warpgroup time at its k-tile: diagnostic builds (timing
only, outside results/) without the consumers' scale reads, and without the scale ring's wait alone, both ran
faster than the registered build. Warp 0 waits far ahead of the consumers. Predicted: the diagnostic without the
wait's gain, a few percent.

``cuda/tc8_cluster_fp8_block``: the same kernel in 2-CTA clusters along M that multicast B (CM=2), each warpgroup
holding its last box of C for the next tile's first k-tile (EPI_DEFER=1). Why its own spec: clusters halve B's L2
reads and the held box overlaps part of the epilogue, but where tc8's tiles make whole waves of 132
(2048×3072×4096: two) the clustered build measured slower (fp8_variants.json; the cause is not measured);
kernel="auto" takes whichever its measurements favour per shape. Predicted: faster than tc8 at 4096³ and 8192³,
slower at 2048×3072×4096 (fp8_variants.json measured the same build without SCALE_GATE so).

HALVES (0, a variant's parameter): each k-tile's wgmma in two halves of 64 columns, committed apart, so that a
warpgroup promotes one while the other is on the tensor cores and always has wgmma of its own in flight, at the
same 128 registers. Why try it: the timeline puts the loop with fixed scales well over the tensor cores' cycles
per k-tile (docs/tensor_cores.md). Its price: m64n64 reads A again for each half, about 181 bytes of shared memory per clock
against 149, past the SM's 128 by more. Predicted: faster only if the promotion's exposure, not shared memory,
binds the loop.

EPI_DEFER (0, a variant's parameter): tc4's deferred epilogue, one box: each warpgroup stores the first of its tile's
two boxes of C at once and holds the other (16 registers) until it has issued the next tile's first k-tile of wgmma,
which is peeled off the loop and sets the accumulators rather than adding to them. Why: the three warpgroups of a
tile reach its end together, so the tensor cores wait out their epilogues. Predicted: up to a box's share of the
epilogue (the timeline's epilogue is a few percent of a tile); both boxes held spill at the consumers' 160
registers, and so does one beside the promoted build's scale loads (tc8_promoted_fp8). Measured level with the
registered build, within the runs' spread (fp8_variants.json), so it stays a variant.
``cuda/tc8_promoted_fp8`` (precision fp8): the same kernel with PER_TENSOR=1, one scale per operand, read once, so
per-tensor FP8 gets FP32 accumulation, as cuBLASLt's default (``use_fast_accum=False``) does, where
tc4_persistent_fp8 keeps the tensor cores' own. Why: that accumulation errs in proportion to K (a model of it in
docs/tensor_cores.md), so against a promoting peer tc4 may miss the bar of twice its error at long K. Predicted:
tc8's speed, below tc4_persistent_fp8's, with an error at BF16 rounding's whatever K.

Measured: results/h200/fp8.json; docs/tensor_cores.md (FP8).
"""
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.fp8 import fp8_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

PARAMS = {"BM": 192, "BN": 128, "STAGES": 4, "GROUP_M": 8, "PRODUCER_REGS": 32, "CONSUMER_REGS": 160, "EPI_TMA": 1,
          "CM": 1, "SCALE_TMA": 2, "SCALE_GATE": 1, "HALVES": 0, "EPI_DEFER": 0, "A_E5M2": 0, "B_E5M2": 0,
          "OUT_BF16": 1}
PER_TENSOR = {**PARAMS, "PER_TENSOR": 1, "SCALE_TMA": 0, "SCALE_GATE": 0}
CLUSTER = {**PARAMS, "CM": 2, "EPI_DEFER": 1}
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
                                    group_m=params["GROUP_M"], epi_tma=True, block_scales=precision == "fp8_block"),
        doc=__doc__, unmodeled=PROMOTION,
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
