"""tc4: persistent grid, tile scheduler, clusters with TMA multicast, epilogue through shared memory and TMA.

What changed against tc3: one CTA per SM walks the tiles in a grouped snake order with the mbarrier ring running on
across tiles (the next tile's loads overlap this one's epilogue); 2-CTA clusters along M multicast B (a third less
L2->SM traffic per k-tile); C leaves through shared-memory staging boxes and TMA stores (EPI_TMA=1); a 128x192 tile
where it fills the last wave better (NARROW_BN, chosen per problem on the host). Why: tc3 pays a launch tail and an
un-overlapped epilogue per tile and reads every B tile once per CTA. Predicted gain: 5-10% over tc3, about 1.0x
cuBLAS. TF32 truncates here (TF32_ROUND=0; rounding in the kernel is an option, measured far slower, and by the
tensor maps another, TMA_ROUND=1: docs/accuracy.md).

EPI_DEFER=3 (16-bit C; not FP32 C, a batch or an activation): three of a tile's four boxes held, one stored under
each of the next tile's first k-tiles, as the tensor cores idle while both warpgroups store. Predicted: level or 1-2%.

EPI_ASYNC=1 (a fused bias or alpha on those held boxes): producer warps 1-2 apply it and store each box, so the
consumers leave C as the plain GEMM does. Predicted: a fused bias within 1% of the plain GEMM (it cost 1-4%).

``cuda/tc4_persistent_fp8`` (TC_FP8=1), against tc4 BF16: e4m3/e5m2 operands, both K-major, wgmma m64n256k32 on the
same 48 KB stages, the per-tensor scales applied in the epilogue, BF16 C. Why: the tensor cores' doubled rate.
Predicted: 1.7-1.8x tc4 BF16's TFLOPS, 1.05-1.15x cuBLASLt's fast-accumulation FP8 off the power limit.

BN=144, 224 (pinned: tiles.OFF_ATOM_WIDTHS): off the atom, C from registers; predicted 1.1-1.25×, never chosen (tc4.md).

BATCHED=1 (BF16, FP16; SHORT_BATCH below): one launch walks batch x tiles, A and B through rank-3 maps. Why: no launch and tail
per product. Predicted: the flattened (batch·M)×N×K problem's time, about 1.0x torch.bmm. Design, variants
(EPI_BOXES, EPI_LEND, EPI_DEFER, EPI_ASYNC) and measurements: docs/tensor_cores/tc4.md, docs/tensor_cores/fp8.md.
"""
import functools

from gemmlab.kernels.cuda.launch.kernel import output_params
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.fp8 import fp8_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.tiles import OFF_ATOM_WIDTHS
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

BASE = {"BM": 128, "BN": 256, "STAGES": 4, "GROUP_M": 8, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232, "EPI_TMA": 1,
        "NARROW_BN": 192}
CM = 2
# none held for FP32 C, a batch or an activation (WgmmaKernel.defines); a fused bias's pass in producer warps 1-2
# (EPI_ASYNC), its held boxes EPI_GAP k-tiles apart
BF16 = {**BASE, "CM": CM, "EPI_DEFER": 3, "EPI_ASYNC": 1, "EPI_GAP": 4}
TF32 = {**BASE, "CM": CM, "TF32_ROUND": 0, "TMA_ROUND": 0}
# A batch of products of K <= 1024 (16 k-tiles a tile): clusters off, tiles 128 wide where they fill the SMs better.
# Each k-tile of a cluster waits for both CTAs' slots; over few k-tiles that costs more than the multicast saves
# (docs/tensor_cores/tc4.md, "A batch of short products").
SHORT_BATCH = (1024, {"CM": 1, "NARROW_BN": 128})
# FP8 products of K <= 2048 (16 k-tiles of 128) in one wave of tiles: clusters off (WgmmaKernel._short_k), as a short
# batch's; measured 1.10x and 1.08x the clustered build at 1536³ and 2048³, 1.02-1.03x at K = 4096 (tc4.md)
FP8 = {**BF16, "EPI_BOXES": 2, "EPI_LEND": 0, "A_E5M2": 0, "B_E5M2": 0, "OUT_BF16": 1, "SHORT_K": 2048}
# what the roofline leaves out here: its levels overlap, but a consumer warpgroup issues no wgmma while it stores
EPILOGUE = ("latency: each tile's epilogue (C through shared memory and TMA) keeps its warpgroups off the tensor "
            "cores; gemmlab timeline counts its cycles")

SPECS = [
    WgmmaKernel(
        name=f"cuda/tc4_persistent_{prec}", level=4, precision=prec, kind="persistent",
        title=f"{prec} persistent warp-specialized wgmma m64n256, grouped tile order, 2-CTA clusters with B "
              "multicast, TMA-store epilogue",
        source="tc4_persistent.cu", entry="tc4_persistent", params={**params, **output_params(prec)},
        constraints=functools.partial(wgmma_constraints, specialized=True,
                                      off_atom=OFF_ATOM_WIDTHS if prec != "tf32" else ()),
        traffic_model=wgmma_traffic(prec, BASE["BM"], BASE["BN"], CM, narrow=params, persistent=True,
                                    group_m=BASE["GROUP_M"], epi_tma=True,
                                    a_pass=2 if params.get("TF32_ROUND") else 0),  # the rounding pass over A
        doc=__doc__, unmodeled=EPILOGUE, batches=prec != "tf32",  # TF32's row-major B goes through a pre-pass of one matrix
        short_batch=SHORT_BATCH if prec != "tf32" else None,
    )
    for prec, params in (("bf16", BF16), ("fp16", BF16), ("tf32", TF32))
] + [
    WgmmaKernel(
        name="cuda/tc4_persistent_fp8", level=4, precision="fp8", kind="persistent",
        title="fp8 e4m3 tc4: wgmma m64n256k32 (QGMMA), per-tensor FP32 scales and BF16 C in the TMA-store epilogue",
        source="tc4_persistent.cu", entry="tc4_persistent", params=dict(FP8),
        constraints=lambda p: wgmma_constraints(p, specialized=True, options=("EPI_LEND",), off_atom=OFF_ATOM_WIDTHS)
        + fp8_constraints(p, promoted=False),
        traffic_model=wgmma_traffic("fp8", BASE["BM"], BASE["BN"], CM, narrow=FP8, persistent=True,
                                    group_m=BASE["GROUP_M"], epi_tma=True), doc=__doc__, unmodeled=EPILOGUE,
    )
]
