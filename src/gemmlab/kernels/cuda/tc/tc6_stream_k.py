"""tc6: a stream-K tail (data-parallel waves + stream-K hybrid, deterministic fixup), BF16 on tc4, TF32 on tc5.

What changed against tc4 (BF16) and tc5 (TF32): the same kernels, compiled with STREAM_K=1 (clusters off). The
persistent grid of G CTAs still takes whole tiles c, c + G, ..., but the T tiles' last partial wave of R = T % G
tiles no longer leaves G - R SMs idle: those tiles (when R >= SK_FILL = 50% of G; else the last G + R tiles, so that
every CTA's share holds at least one tile) form the stream-K region, whose (tile, k-tile) iterations, in schedule
order, are cut into G contiguous, equal ranges, one per CTA after its whole tiles. A range cuts into units (tile,
k-tiles [kb, ke)); producer and consumers walk the same units, and a unit starts its accumulator from zero. The
unit holding k = 0 of a split tile owns it and is the last unit of its CTA; the CTAs holding the rest of the tile
write their FP32 accumulator to their workspace slot (fragment order, float4, coalesced), fence, and count it on
the tile's flag (release). The owner waits on the flag (acquire, guarded against hangs like the mbarrier waits),
adds the partials in k order, so results are bitwise the same run to run, stores C and resets the flag for the
next launch. Every CTA is resident at once (one per SM, checked against the occupancy query), so the spin cannot
deadlock. With fewer tiles than SMs the grid grows to one CTA per 4 k-tiles of work (SK_MIN_KTILES), at most one
per SM, so small problems split K too. When no tile would be split (whole waves, or a last wave at least
SK_SKIP_FILL = 70% full, where the fixup costs more than the idle SMs, as measured at 4096³) tc6 launches the
base level's kernel with the base level's parameters (`whole_tiles`, clusters included), the same binary; so
it does where the base level's narrower tiles already fill the last wave (tc4's NARROW_BN: BF16 at 2048x3072x4096).
Why: a persistent grid pays for its last partial wave in full. 2048x3072x4096 has 192 tiles for 132 SMs: every
CTA's makespan is 2 tiles for 1.45 tiles of work; 8192³ (2048 tiles, 15.5 waves) loses about 3% to the same tail.
Predicted gain (before measuring): at 2048x3072x4096 the makespan falls from 2 to 1.45 tiles plus one 128 KB
partial written and read per split tile, up to 25-30% faster; at 4096³ and 8192³ 1-2.5% (3% of tail, less the
fixup traffic and the owners' waits).
TF32 up to ONE_LAUNCH_MNK multiply-adds (512³, where tc5 stops at 256³): one launch, A rounded in shared memory by
the producer warps (TF32_ROUND=2) instead of by tc5's pre-pass (K at most 512, rows of A 16-byte pitched:
rounds_a_in_place). Why: at that size two launches make a call wait on the host rather than the GPU, and the
second launch costs the host more than the in-place pass costs the GPU, which stream-K's grid spreads over many SMs
where tc5 has a few CTAs for the few tiles (docs/tensor_cores.md, "One launch for small TF32").
Measured: results/h200/tensor_cores.json. It gained far less than predicted; docs/tensor_cores.md ("tc6: a
stream-K tail") has the figures, the likely causes, and the runs behind SK_SKIP_FILL.

``cuda/tc6_stream_k_fp8_block``: the same tail on tc8_block_scaled_fp8 (block-scaled FP8), whose promoted FP32
accumulators add across a split tile like tc4's. Its split launches copy the scales beside each k-tile
(SCALE_TMA=1): tc8's own scale ring (SCALE_TMA=2) has producer warp 1 walk the units too, and a second stream-K walk
spills at the producer's 32 registers (so do tc8's held boxes of C, EPI_DEFER, beside the consumers' copy).
Why: tc8's 192-row tiles leave 4096³ 704 tiles, 5.33 waves, so each CTA's makespan is 6 tiles for 5.33 of work.
Predicted: up to 12% faster at 4096³ less the fixup (a 96 KB partial written and read per split tile) and the scale
ring's gain, which the split launches give up; elsewhere tc8 itself (8192³ and 2048×3072×4096 fill their last
waves).
Measured: results/h200/fp8.json.
"""
from gemmlab.kernels.cuda.tc import tc4_persistent, tc5_swap_ab, tc8_block_scaled_fp8 as tc8
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.fp8 import fp8_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.stream_k import SK_FILL, SK_SKIP_FILL
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

SK = {"STREAM_K": 1, "SK_FILL": SK_FILL, "SK_SKIP_FILL": SK_SKIP_FILL}
BF16 = {**{k: v for k, v in tc4_persistent.BASE.items() if k != "NARROW_BN"}, "CM": 1, **SK}
TF32 = {**tc5_swap_ab.PARAMS, "CN": 1, **SK}
FP8_BLOCK = {**tc8.PARAMS, "SCALE_TMA": 1, "SCALE_GATE": 0, **SK}
ONE_LAUNCH_MNK = 512 ** 3

SPECS = [
    WgmmaKernel(
        name="cuda/tc6_stream_k_bf16", level=6, precision="bf16", kind="persistent",
        title="bf16 tc4 (persistent wgmma m64n256, clusters off) with a stream-K tail, deterministic fixup",
        source="tc4_persistent.cu", entry="tc4_persistent", params=dict(BF16), whole_tiles=dict(tc4_persistent.BF16),
        constraints=lambda p: wgmma_constraints(p, specialized=True),
        traffic_model=wgmma_traffic("bf16", BF16["BM"], BF16["BN"], stream_k=True, group_m=BF16["GROUP_M"],
                                    epi_tma=True, whole=tc4_persistent.SPECS[0].traffic_model,
                                    narrow=tc4_persistent.BF16),
        doc=__doc__, unmodeled=tc4_persistent.EPILOGUE,
    ),
    WgmmaKernel(
        name="cuda/tc6_stream_k_tf32", level=6, precision="tf32", kind="persistent", swap_ab=True,
        title="tf32 tc5 (Cᵀ = Bᵀ·Aᵀ, B fragments from registers) with a stream-K tail, deterministic fixup",
        source="tc5_swap_ab.cu", entry="tc5_swap_ab", params=dict(TF32), whole_tiles=dict(tc5_swap_ab.PARAMS),
        one_launch_mnk=ONE_LAUNCH_MNK,
        constraints=lambda p: wgmma_constraints(p, specialized=True, swap_ab=True),
        traffic_model=wgmma_traffic("tf32", TF32["BM"], TF32["BN"], prepass=False, stream_k=True,
                                    group_m=TF32["GROUP_M"], swap_ab=True, round_a=TF32["TF32_ROUND"] == 3,
                                    one_launch_mnk=ONE_LAUNCH_MNK, whole=tc5_swap_ab.traffic_model(ONE_LAUNCH_MNK)),
        doc=__doc__, unmodeled=tc5_swap_ab.REGISTER_OPERAND + "; and a split tile's owner waits for its partials",
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
