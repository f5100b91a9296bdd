"""tc6: a stream-K tail (data-parallel waves + stream-K hybrid, deterministic fixup), BF16 on tc4, TF32 on tc5.

What changed against tc4 (BF16) and tc5 (TF32): the same kernels with STREAM_K=1 (clusters off). Whole tiles for the
full waves; the last partial wave's (tile, k-tile) iterations are cut into equal ranges, one per CTA, and a split
tile's owner (the CTA holding k = 0) adds the others' FP32 partials in k order (bitwise reproducible). Where no tile
would be split (whole waves, a last wave at least SK_SKIP_FILL = 70% full, or tc4's narrower tiles filling it) it
launches the base level's binary. Why: a persistent grid pays for its last partial wave in full (2048x3072x4096:
2 tiles of makespan for 1.45 of work). Predicted gain: up to 25-30% at 2048x3072x4096, 1-2.5% at 4096³ and 8192³.
TF32 rounds both operands by their TMA copies, as tc5 does (its pre-pass variant, TF32_ROUND=3, rounds A in shared
memory up to ONE_LAUNCH_MNK, 512³: one launch). TF32 at M <= 64: tiles 64 rows of A tall (NARROW_BM; where A is not
rounded in shared memory), where the 256-row tile's wgmma (n256) spends three quarters of its k-tile on zero rows;
its ring holds the base tile's bytes (8 stages: narrow_m), as the weight's stream at those rows is paced by the
bytes a CTA has in flight.
Predicted: about the weight's bytes at tc10 TF32's rate there (both stream the same w tile a k-tile), faster where
tc10 splits few tiles (14336×4096: S = 1).
TF32 reads B handed over as w.t() in place, as tc5 does (SWAP_B_KMAJOR).

``cuda/tc6_stream_k_fp8_block``: the same tail on tc8_block_scaled_fp8, its split launches with the scales beside
each k-tile (SCALE_TMA=1). Why: tc8's 192-row tiles make 4096³ 5.33 waves. Predicted: up to 12% faster at 4096³,
less the fixup; elsewhere tc8 itself.

Design and measurements: docs/tensor_cores/tc6.md.
"""
from gemmlab.kernels.cuda.launch.kernel import output_params
from gemmlab.kernels.cuda.tc import tc4_persistent, tc5_swap_ab, tc8_block_scaled_fp8 as tc8
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.fp8 import fp8_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.stream_k import SK_FILL, SK_SKIP_FILL
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

SK = {"STREAM_K": 1, "SK_FILL": SK_FILL, "SK_SKIP_FILL": SK_SKIP_FILL}
BF16 = {**{k: v for k, v in tc4_persistent.BASE.items() if k != "NARROW_BN"}, "CM": 1, **SK}
# NARROW_BM: at M <= 64 the swapped tile is 64 rows of A tall (wgmma n64), not 256 (n256 on 16 rows of x @ w.t()
# multiplies zeros: four times the tensor cores' work a k-tile on the same w tile)
TF32 = {**tc5_swap_ab.PARAMS, "CN": 1, "NARROW_BM": 64, **SK}
FP8_BLOCK = {**tc8.PARAMS, "SCALE_TMA": 1, "SCALE_GATE": 0, **SK}
ONE_LAUNCH_MNK = 512 ** 3


def _tc4(precision: str) -> WgmmaKernel:
    return next(s for s in tc4_persistent.SPECS if s.precision == precision)


SPECS = [
    WgmmaKernel(
        name=f"cuda/tc6_stream_k_{prec}", level=6, precision=prec, kind="persistent",
        title=f"{prec} tc4 (persistent wgmma m64n256, clusters off) with a stream-K tail, deterministic fixup",
        source="tc4_persistent.cu", entry="tc4_persistent", params={**BF16, **output_params(prec)},
        whole_tiles=dict(_tc4(prec).params), constraints=lambda p: wgmma_constraints(p, specialized=True),
        traffic_model=wgmma_traffic(prec, BF16["BM"], BF16["BN"], stream_k=True, group_m=BF16["GROUP_M"],
                                    epi_tma=True, whole=_tc4(prec).traffic_model, narrow=tc4_persistent.BF16),
        doc=__doc__, unmodeled=tc4_persistent.EPILOGUE,
    )
    for prec in ("bf16", "fp16")
] + [
    WgmmaKernel(
        name="cuda/tc6_stream_k_tf32", level=6, precision="tf32", kind="persistent", swap_ab=True, swap_kmajor_b=True,
        title="tf32 tc5 (Cᵀ = Bᵀ·Aᵀ, B fragments from registers) with a stream-K tail, deterministic fixup",
        source="tc5_swap_ab.cu", entry="tc5_swap_ab", params=dict(TF32), whole_tiles=dict(tc5_swap_ab.PARAMS),
        one_launch_mnk=ONE_LAUNCH_MNK,
        constraints=lambda p: wgmma_constraints(p, specialized=True, swap_ab=True),
        traffic_model=wgmma_traffic("tf32", TF32["BM"], TF32["BN"], prepass=False, stream_k=True,
                                    group_m=TF32["GROUP_M"], swap_ab=True, round_a=True, a_rounding=TF32["TF32_ROUND"],
                                    one_launch_mnk=ONE_LAUNCH_MNK, whole=tc5_swap_ab.traffic_model(ONE_LAUNCH_MNK)),
        doc=__doc__, unmodeled=tc5_swap_ab.REGISTER_OPERAND + "; and a split tile's owner waits for its partials",
        fuses_epilogue=False,  # tc5_swap_ab.cu's transposed store (store_acc_t) applies no epilogue
    ),
    WgmmaKernel(
        name="cuda/tc6_stream_k_fp8_block", level=6, precision="fp8_block", kind="persistent",
        title="fp8 block-scaled tc8 (192x128 tiles, promoted every 128 of K) with a stream-K tail, deterministic "
              "fixup, BF16 C",
        source="tc8_block_scaled_fp8.cu", entry="tc8_block_scaled_fp8", params=dict(FP8_BLOCK),
        whole_tiles=dict(tc8.PARAMS),
        constraints=lambda p: wgmma_constraints(p, specialized=True, options=("HALVES",))
        + fp8_constraints(p, promoted=True),
        traffic_model=wgmma_traffic("fp8_block", FP8_BLOCK["BM"], FP8_BLOCK["BN"], stream_k=True,
                                    group_m=FP8_BLOCK["GROUP_M"], epi_tma=True, block_scales=True,
                                    whole=tc8.SPECS[0].traffic_model),
        doc=__doc__, unmodeled=tc8.PROMOTION + "; and a split tile's owner waits for its partials",
    ),
]
