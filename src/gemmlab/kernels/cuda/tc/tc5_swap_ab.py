"""tc5 (TF32): swap A and B, B from registers, no transpose pre-pass.

What changed against tc4: Cᵀ = Bᵀ·Aᵀ: A, K-major as given, is wgmma's shared-memory operand; B, N-major as given, its
register operand, loaded from the TMA tile bank-conflict-free a k8 step ahead of its wgmma (two commit groups in
flight); 256×128 tiles. Why: tc4 TF32 pays a second launch writing Bᵀ (8·K·N bytes). Predicted gain: the pre-pass's
8-9% of tc4 TF32's time, 0.97-1.0× cuBLAS TF32. Both operands rounded to nearest by their TMA copies (TMA_ROUND=1 on
the truncating binary): cuBLAS TF32's error at the truncating build's time. B handed over as the N×K Bᵀ (x @ w.t())
is read in place (SWAP_B_KMAJOR=1, ``swap_kmajor_b``): one TMA box of 128 rows of Bᵀ per k-tile, four conflict-free
4-byte loads per k8 step. Predicted: within 2% of the row-major build, the call faster by the copy of w.
Variants (TMA_ROUND=0): TF32_ROUND=3 rounds B in registers and A by a pre-pass (in shared memory up to
ONE_LAUNCH_MNK, TF32_ROUND=2); with it A_IN_REGS=1 runs x @ w.t() as Cᵀ = w·xᵀ, the pre-pass rounding w.
Design and measurements: docs/tensor_cores/tc5.md, docs/accuracy.md.
"""
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

# TMA_ROUND = 1: both operands rounded to nearest by their tensor maps; TF32_ROUND = 3 (a --variant, with
# TMA_ROUND = 0): B in registers and A by a pre-pass
PARAMS = {"BM": 256, "BN": 128, "STAGES": 4, "CN": 1, "GROUP_M": 8, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232,
          "TF32_ROUND": 0, "A_IN_REGS": 0, "TMA_ROUND": 1}
ONE_LAUNCH_MNK = 256 ** 3
# what the roofline leaves out here: the register operand's wait, and at small problems what few tiles cannot overlap
REGISTER_OPERAND = ("latency: a k8 step's B fragments load into registers under the two steps before it (one "
                    "commit group a step, two in flight: wgmma reads a register operand until a wait covers it), a "
                    "shorter queue than a shared-memory operand's; with few tiles (256³, 1024³) the ring's fill and "
                    "the epilogue are not overlapped by other tiles' work either")


def traffic_model(one_launch_mnk: int):
    """tc5's traffic; a build rounding A by the pre-pass (TF32_ROUND=3) rounds it in place up to ``one_launch_mnk``
    multiply-adds (tc6 runs this kernel where it splits no tile, at its own limit)."""
    return wgmma_traffic("tf32", PARAMS["BM"], PARAMS["BN"], cn=PARAMS["CN"], prepass=False, persistent=True,
                         group_m=PARAMS["GROUP_M"], swap_ab=True, round_a=True, a_rounding=PARAMS["TF32_ROUND"],
                         one_launch_mnk=one_launch_mnk)


SPECS = [
    WgmmaKernel(
        name="cuda/tc5_swap_ab_tf32", level=5, precision="tf32", kind="persistent", swap_ab=True, swap_kmajor_b=True,
        fuses_epilogue=False,
        title="tf32 Cᵀ = Bᵀ·Aᵀ: B fragments from registers (ld.shared), A and B rounded to TF32 by their TMA copies",
        source="tc5_swap_ab.cu", entry="tc5_swap_ab", params=dict(PARAMS), one_launch_mnk=ONE_LAUNCH_MNK,
        constraints=lambda p: wgmma_constraints(p, specialized=True, swap_ab=True),
        traffic_model=traffic_model(ONE_LAUNCH_MNK),
        doc=__doc__, unmodeled=REGISTER_OPERAND,
    )
]
