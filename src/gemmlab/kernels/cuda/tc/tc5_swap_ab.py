"""tc5 (TF32): swap A and B, B from registers, no transpose pre-pass.

What changed against tc4: tf32 wgmma reads shared-memory operands K-major only, and tc4 TF32 paid for that with
a second launch, a pre-pass writing Bᵀ (8·K·N bytes moved). tc5 computes Cᵀ = Bᵀ·Aᵀ
instead: A, K-major as given, is wgmma's shared-memory operand (its N = BM = 256 rows of C), and B, N-major as
given, is wgmma's register operand, which has no layout rule on shared memory: each consumer thread loads its
m64k8 fragment from the TMA tile with two ld.shared.v2 per k8 step. The column order of the fragment rows is
chosen so that these loads are bank-conflict-free on the 128B-swizzled box and the epilogue stores float2
pairs that fill whole 32-byte sectors of C (see tc5_swap_ab.cu). Tile 256 (M) × 128 (N): the same m64n256
wgmma and 48 KB stage as tc4, 4 stages, grouped persistent order. A wgmma may read its register operand until
it completes, so each consumer retires its previous k-tile (wait_group 0) before loading the next fragments; the
other consumer warpgroup's queued wgmmas cover the gap.
Why: one launch instead of two, and 8·K·N fewer bytes. Predicted gain: the pre-pass's 8-9% of tc4 TF32's time,
to about 0.97-1.0× cuBLAS TF32 at 4096³ and 8192³.
CN=1, BM=256: clusters of 2 along N multicasting A (CN=2), GROUP_M=16 and a 128×128 tile (BM=128), compared
outside results/, did not pay at the large shapes (docs/tensor_cores.md, "tc5").

TF32 rounded to nearest: the tensor cores truncate FP32 operands to TF32, a bias toward zero that adds up over K
where cuBLAS TF32 rounds to nearest (docs/accuracy.md). TF32_ROUND=3 (the default) rounds B's fragments in registers
(cvt.rna, 16 values per thread per k-tile) and A by a pre-pass before the kernel (tc_round_copy.cu: 8·M·K bytes
through DRAM into a workspace of M×K floats, which A's tensor map reads). Predicted: cuBLAS TF32's error; by the
roofline model the pre-pass costs 9% at 4096³, 4% at 8192³, 10% at 2048×3072×4096. TF32_ROUND=2 rounds A in place
instead, by producer warps 1-3 once each k-tile lands (tc_round.cuh, a `ready` barrier the consumers wait on): no
workspace, but the pass reads and writes A's 32 KB per k-tile beside the wgmmas' reads of shared memory (predicted
9-20% slower; measured far slower: docs/accuracy.md). TF32_ROUND=1 rounds B alone; TF32_ROUND=0 is the truncating
build. Up to ONE_LAUNCH_MNK multiply-adds (256³; K at most 512, rows of A 16-byte pitched: rounds_a_in_place) tc5
runs TF32_ROUND=2: at that size the pre-pass's two launches make a call wait on the host, and the second launch
costs the host about what the in-place pass costs the GPU (tc6, whose stream-K grid spreads the pass over more
SMs, keeps one launch up to 512³).
Measured: docs/tensor_cores.md, docs/accuracy.md, results/h200/tensor_cores.json.
"""
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

PARAMS = {"BM": 256, "BN": 128, "STAGES": 4, "CN": 1, "GROUP_M": 8, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232,
          "TF32_ROUND": 3}
ONE_LAUNCH_MNK = 256 ** 3
# what the roofline leaves out here: the register operand's wait, and at small problems what few tiles cannot overlap
REGISTER_OPERAND = ("latency: each consumer retires its previous k-tile's wgmma before it loads the next B "
                    "fragments into registers (wgmma reads a register operand until it completes), which only the "
                    "other warpgroup's queued wgmma cover; with few tiles (256³, 1024³) the ring's fill, the "
                    "rounding of A and the epilogue are not overlapped by other tiles' work either")


def traffic_model(one_launch_mnk: int):
    """tc5's traffic, A rounded in place up to ``one_launch_mnk`` multiply-adds (tc6 runs this kernel where it splits
    no tile, at its own limit)."""
    return wgmma_traffic("tf32", PARAMS["BM"], PARAMS["BN"], cn=PARAMS["CN"], prepass=False, persistent=True,
                         group_m=PARAMS["GROUP_M"], swap_ab=True, round_a=PARAMS["TF32_ROUND"] == 3,
                         one_launch_mnk=one_launch_mnk)


SPECS = [
    WgmmaKernel(
        name="cuda/tc5_swap_ab_tf32", level=5, precision="tf32", kind="persistent", swap_ab=True,
        title="tf32 Cᵀ = Bᵀ·Aᵀ: B fragments from registers (ld.shared, rounded there), A rounded by a pre-pass "
              "(in shared memory for small problems)",
        source="tc5_swap_ab.cu", entry="tc5_swap_ab", params=dict(PARAMS), one_launch_mnk=ONE_LAUNCH_MNK,
        constraints=lambda p: wgmma_constraints(p, specialized=True, swap_ab=True),
        traffic_model=traffic_model(ONE_LAUNCH_MNK),
        doc=__doc__, unmodeled=REGISTER_OPERAND,
    )
]
