"""tc4: persistent grid, tile scheduler, clusters with TMA multicast, epilogue through shared memory and TMA.

What changed against tc3: one CTA per SM loops over the output tiles in grouped order (GROUP_M cluster-rows at a
time, column by column, so the tiles in flight share A rows and B columns in L2; every other group right to left
and every other tile's k-tiles last to first, so each round of tiles starts on what the last one read, still in
L2), and the mbarrier ring runs on across tiles: the producer loads the next tile's k-tiles while the consumers
store the last one, and no launch tail is paid per tile. CTAs come in clusters of CM=2 stacked along M that need
the same B tile; each loads half of B's boxes and multicasts them to both (consumers release a slot on both CTAs'
`empty` barriers), so B crosses L2->SM once per cluster: a third less L2->SM traffic per k-tile. The grid is as
many clusters as the occupancy query says fit at once, never a partial second wave. The consumers store C through
shared memory (EPI_TMA=1): each warpgroup writes its accumulator box by box (64 rows x 32 FP32, 128-byte swizzled,
two 8 KB staging boxes in turn, each half-warp's float2 stores on all 32 banks) and one thread hands each box to a
TMA store, so C leaves in whole lines while the warpgroup goes back to wgmma; where TMA cannot address C (N % 4, an
unaligned view) they store from registers.
The tile is 128x256, or 128x192 (NARROW_BN, wgmma n192) where the 256-wide tiles would take more rounds of the
grid than their work needs and the narrower ones fill the last round better (narrow_pays in tc_common.py; the
choice is made per problem on the host, and each width is its own binary).
Why: tc3 pays a launch tail and an un-overlapped epilogue per tile, reads every B tile once per CTA, and its
float2 stores touch 8 rows' lines per warp instruction. Predicted gain: 5-10% over tc3, to about 1.0x cuBLAS.

The settings (EPI_TMA=1, CM=2, the snake order, 128-byte L2 promotion in the tensor maps, GROUP_M=8, 4 stages,
NARROW_BN=192) were each compared outside results/ before being made the default, and so were the epilogue
designs that were not kept; `gemmlab timeline` shows where a tile's cycles go (mainloop, epilogue, the gap before
the next tile). At the GPU's power limit moving fewer bytes buys clock, so CM=2 is kept where it times like CM=1
(clusters of 4 would leave SMs idle: only 30 fit at once); and the epilogue costs what the SM takes to store 128 KB
of FP32, with or without other SMs storing.
Measured in results/h200/tensor_cores.json and results/h200/timeline.json (TF32: the truncating build), and the
comparisons: docs/tensor_cores.md ("tc4: clusters, ...", "Where tc4's cycles go", "BF16 comparisons outside
results/").

TF32 rounded to nearest is an option here (TF32_ROUND=2): the transpose pre-pass writes Bᵀ rounded (free: it copies
B anyway), and producer warps 1-3 round each landed A tile in shared memory (tc_round.cuh), and B's too where B is
handed over K-major (ROUND_B_SMEM, the plan's choice). Predicted: cuBLAS TF32's error at 0-10% of the time; measured
far slower (docs/accuracy.md), so tc4 TF32 truncates by default (TF32_ROUND=0) and tc5/tc6 carry the rounding.

FP8 (``cuda/tc4_persistent_fp8``, precision fp8: the same source with TC_FP8=1, what changed against tc4 BF16):
e4m3 operands (e5m2 for either, A_E5M2 / B_E5M2), both K-major (B handed over N×K, as cuBLASLt takes it), wgmma
m64n256k32 (QGMMA): a k-tile is 128 of K in the same 128-byte rows, so the 48 KB stages, the ring, the clusters and
the tile order are tc4's as they are, and the tensor cores' doubled rate runs a k-tile in the cycles BF16 took for
64 of K. The consumers multiply by the two per-tensor FP32 scales (device addresses per call: a host float would
need the caller's tensor read back) and store BF16 C (OUT_BF16=1; FP32 with 0) through the same staging boxes,
now 64 BF16 columns each. Accumulation is the tensor cores' own (about 14 bits kept, truncating), as cuBLASLt's
fast-accumulation mode, its peer; tc8 promotes into FP32 (tc8_promoted_fp8 at per-tensor scales).
Why: the mainloop halves in cycles while the epilogue does not, so the epilogue's share of a tile would double;
BF16 C halves its bytes and its shared-memory wavefronts.
EPI_BOXES (2, a variant's parameter): staging boxes per consumer warpgroup; 4 hold a warpgroup's whole 64×256 BF16
fragment, so a tile's stores drain under the next tile's mainloop, but fit beside only 3 stages of the ring.
EPI_LEND (0, a variant's parameter): the boxes past a warpgroup's own two go to the tile's last ring slot instead,
which warp 0 releases only once the stores have read it, at the next tile's first k-tile. Why: with two boxes a
warpgroup's third waits for its first's store to read it out, and every box pays a fence and a meeting; lent, the
four boxes are written without a wait and fenced once. Predicted: up to the epilogue's share of the waits (a few
percent of a 4096³ tile), with the ring a stage short for one k-tile of each tile, which 3 landed stages cover.
Predicted (before measuring): a k-tile at 1,024 cycles as in BF16 (the tensor cores' FP8 rate), the epilogue near
2,500 cycles, about 8% of a 4096³ tile: 1.7-1.8x tc4 BF16's TFLOPS, 1.05-1.15x cuBLASLt's fast-accumulation
FP8 at 4096³ and 8192³ where the GPU is not held at its power limit, level with it where it is (FP8 wgmma draws
more power per cycle, so the clock falls further). Measured: results/h200/fp8.json; docs/tensor_cores.md (FP8).
EPI_DEFER (3, registered for FP8): a warpgroup stores the first of its tile's four 64-column boxes of BF16 C at once
(at 128×192 none of three) and holds the others packed into BF16 words (48 registers) until it has issued the next
tile's first k-tile of wgmma; stored then, they and the waits for the staging boxes they reuse run under the tensor
cores' work. Why: both warpgroups of a tile store at once, so the tensor cores idle through the epilogue, which the
timeline put near a tenth of a 4096³ tile. Predicted: most of that share, less the shared-memory bandwidth the
stores take from that k-tile's wgmma; with all four held nothing is stored at the tile's end, but 64 words beside
the accumulators leave the compiler few registers for the rest. Each count is a variant's parameter. Measured:
results/h200/fp8_variants.json and timeline.json; docs/tensor_cores.md (FP8, "Where tc4's epilogue went").
"""
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.fp8 import fp8_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

BASE = {"BM": 128, "BN": 256, "STAGES": 4, "GROUP_M": 8, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232, "EPI_TMA": 1,
        "NARROW_BN": 192}
CM = 2
BF16 = {**BASE, "CM": CM}
TF32 = {**BF16, "TF32_ROUND": 0}
FP8 = {**BF16, "EPI_BOXES": 2, "EPI_LEND": 0, "EPI_DEFER": 3, "A_E5M2": 0, "B_E5M2": 0, "OUT_BF16": 1}
# what the roofline leaves out here: its levels overlap, but a consumer warpgroup issues no wgmma while it stores
EPILOGUE = ("latency: each tile's epilogue (C through shared memory and TMA) keeps its warpgroups off the tensor "
            "cores; gemmlab timeline counts its cycles")

SPECS = [
    WgmmaKernel(
        name=f"cuda/tc4_persistent_{prec}", level=4, precision=prec, kind="persistent",
        title=f"{prec} persistent warp-specialized wgmma m64n256, grouped tile order, 2-CTA clusters with B "
              "multicast, TMA-store epilogue",
        source="tc4_persistent.cu", entry="tc4_persistent", params=dict(params),
        constraints=lambda p: wgmma_constraints(p, specialized=True),
        traffic_model=wgmma_traffic(prec, BASE["BM"], BASE["BN"], CM, narrow=params, persistent=True,
                                    group_m=BASE["GROUP_M"], epi_tma=True,
                                    a_pass=2 if params.get("TF32_ROUND") else 0),  # the rounding pass over A
        doc=__doc__, unmodeled=EPILOGUE,
    )
    for prec, params in (("bf16", BF16), ("tf32", TF32))
] + [
    WgmmaKernel(
        name="cuda/tc4_persistent_fp8", level=4, precision="fp8", kind="persistent",
        title="fp8 e4m3 tc4: wgmma m64n256k32 (QGMMA), per-tensor FP32 scales and BF16 C in the TMA-store epilogue",
        source="tc4_persistent.cu", entry="tc4_persistent", params=dict(FP8),
        constraints=lambda p: wgmma_constraints(p, specialized=True, options=("EPI_LEND",))
        + fp8_constraints(p, promoted=False),
        traffic_model=wgmma_traffic("fp8", BASE["BM"], BASE["BN"], CM, narrow=FP8, persistent=True,
                                    group_m=BASE["GROUP_M"], epi_tma=True), doc=__doc__, unmodeled=EPILOGUE,
    )
]
