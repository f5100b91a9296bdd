"""tc7 (FP32): FP32 accuracy from the TF32 tensor cores, 3xTF32 with the partial sums promoted to FP32.

What changed against tc5: FP32 in and out, verified with FP32's tolerance and timed against cuBLAS SGEMM (level 11,
after v10 in the FP32 table). Each operand is split into a big and a small TF32 part and the tensor cores add three
products per k8 step (B's parts made in registers, A's small part by producer warps 1-3 in shared memory); every
PROMOTE k-tiles (2) the wgmma accumulator restarts from zero and is added into FP32 registers on the CUDA cores.
128×128 tiles. Why: TF32 on the tensor cores peaks at 495 TFLOPS against FP32's 67, and promoting every short run of
K keeps the tensor cores' accumulation error from growing with K.
Predicted (before measuring): 2.2-2.7x cuBLAS FP32 (1.0-1.2 ms at 4096³), error about 4e-7 at K=4096.

Design choices and measurements: docs/tensor_cores/tc7.md, docs/accuracy.md ("FP32 from the TF32 tensor cores").
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
        fuses_epilogue=False,
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
