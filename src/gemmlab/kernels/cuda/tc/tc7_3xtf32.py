"""tc7 (FP32): FP32 accuracy from the TF32 tensor cores, 3xTF32 with the partial sums promoted to FP32.

What changed against tc5: the inputs are FP32 and so is the answer, verified with FP32's tolerance and timed
against cuBLAS SGEMM (level 11: in the FP32 table it follows v10_register_prefetch, the best FFMA level). Each
operand is split into a big and a small TF32 part and the tensor cores add three products per k8 step
(b_small·a_big, b_big·a_small, b_big·a_big); B's parts are made in registers from its fragments, A's small part by
producer warps 1-3 beside each landed tile in shared memory (A's big part is the tile itself, which the tensor
cores read truncated). Every PROMOTE k-tiles (2: 64 of K, the default; 1 and 4 measured beside it) the wgmma
accumulator restarts from zero and its partial is added into a second FP32 register set on the CUDA cores.
Why: FP32 on the CUDA cores peaks at 67 TFLOPS on the H200, TF32 on the tensor cores at 495 (datasheet). Three
TF32 products cost a third of that rate, and the split itself carries 22 bits of each operand; but the tensor
cores' FP32 accumulation drops bits at every instruction, and over all of K that sets the error: three cuBLAS TF32
products of split operands err several times more than SGEMM (measured: docs/accuracy.md). Promoted every short
run of K, the tensor cores' error depends on the run, not on K.
The choices:
- where A's small part is made: in the kernel, by the producer warps, from the tile TMA landed: a shared-memory
  read and write of 16 KB per k-tile beside TMA's 32 KB and the wgmmas' 96 KB, about 115 of the 128 bytes per
  cycle an SM's shared memory serves at the tensor cores' full rate. A pre-pass writing A's parts to global memory
  would read 4MK and write 8MK bytes (about 47 µs at 4096³ at 4.3 TB/s, 4-5% of the predicted kernel) and load
  A twice per tile.
- the tile: 128×128, two consumer warpgroups of m64n128k8: two accumulator sets are 128 registers per thread, plus
  32 for the split fragments; m64n256 (256 registers of accumulators) does not fit.
- promotion every k-tile: the consumers retire their wgmmas before each k-tile anyway (the register operand), so
  a promotion is 64 FADDs per thread and no wait.
- 3xTF32 over BF16 splits: FP32 needs three BF16 parts per operand and six products at twice the rate, the same
  tensor-core time, with a third part of A to make in shared memory and twice the wgmmas to issue.
Predicted (before measuring): gemmlab's roofline model puts it at its compute roof, a third of TF32's rate
(0.794 ms at 4096³ and 1980 MHz; shared memory at 89% of that, L2 at 54%); at the share of their roofs that tc5
and SGEMM reach (docs/accuracy.md), 1.0-1.2 ms at 4096³ and 8-9.5 ms at 8192³:
2.2-2.7x cuBLAS FP32. Error at K=4096 about 4e-7 (tensor-core truncation within a run of 32 about 2.6e-7, the
FP32 adds of 128 promotions about 2e-7, the split about 1.5e-7), a third of SGEMM's by the same error model, and
growing more slowly than SGEMM's with K. Without promotion (PROMOTE=0) about 1e-5, the naive split's.
Measured: docs/accuracy.md ("FP32 from the TF32 tensor cores").
"""
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

PARAMS = {"BM": 128, "BN": 128, "STAGES": 4, "CN": 1, "GROUP_M": 8, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232,
          "PROMOTE": 2}
FRAGMENT_REGS = 32  # B's big and small fragments of one k-tile: 2 x 4 k8 steps x 4 registers


def constraints(p: dict) -> list[str]:
    e = wgmma_constraints(p, specialized=True, swap_ab=True)
    if p.get("CN", 1) != 1 or p.get("STREAM_K", 0):
        e.append("tc7 runs clusters and stream-K off (CN=1, STREAM_K=0)")
    if not isinstance(p.get("PROMOTE"), int) or p["PROMOTE"] < 0:
        e.append(f"PROMOTE={p.get('PROMOTE')}: k-tiles per run of the tensor cores' accumulation (0: all of K)")
    if p["BM"] + FRAGMENT_REGS + 24 > p.get("CONSUMER_REGS", 232):
        e.append(f"BM={p['BM']}: two accumulator sets of {p['BM'] // 2} registers and {FRAGMENT_REGS} for the split "
                 f"fragments do not fit {p.get('CONSUMER_REGS', 232)} registers per consumer thread")
    if p.get("TF32_ROUND", 0):
        e.append("TF32_ROUND is an option of the TF32 levels; tc7 splits its operands")
    return e


SPECS = [
    WgmmaKernel(
        name="cuda/tc7_3xtf32", level=11, precision="fp32", kind="persistent", swap_ab=True,
        title="fp32 on tf32 tensor cores: 3xTF32 splits (B in registers, A's small part by the producer), "
              "promoted to FP32 every 64 of K",
        source="tc7_3xtf32.cu", entry="tc7_3xtf32", params=dict(PARAMS), constraints=constraints, math=("tf32", 3),
        not_auto="an infinite input becomes NaN (its split subtracts Inf from Inf, and a product takes Inf times 0), "
                 "where FP32 FFMA keeps Inf: name it for FP32 accuracy on the tensor cores",
        traffic_model=wgmma_traffic("fp32", PARAMS["BM"], PARAMS["BN"], prepass=False, persistent=True,
                                    group_m=PARAMS["GROUP_M"], swap_ab=True, a_reads=3, a_pass=2), doc=__doc__,
        unmodeled=("latency: tc5's register operand, three products' worth of it (B's two parts made in registers "
                   "each k-tile), and the producer warps' pass making A's small part between TMA and the consumers; "
                   "with few tiles (256³, 1024³) the ring's fill and the epilogue are not overlapped either"),
    )
]
