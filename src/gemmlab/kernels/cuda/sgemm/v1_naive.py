"""V1 naive: the seeds' first GPU kernel, one thread per element of C.

Each thread reads a full row of A and column of B from global memory: 2MNK loads, 8MNK bytes in FP32, for
2MNK FLOPs, an effective intensity of 0.25 FLOP/byte whatever the size (the seeds' analysis). That sits far
left of the ridge point, so the model predicts a memory-bound kernel. The model counts requests, not DRAM
bytes: L1 and L2 serve most of the re-reads (the warps of a block share rows of A and columns of B).
Block 32×32 = 1024 threads, as in the seeds.

Measured: docs/fp32_ladder.md (timings, counters), docs/seeds.md; results/h200/fp32.json.
"""
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.spec import naive_traffic


def _geometry(problem, p):
    return Geometry(grid=(ceil_div(problem.n, p["BX"]), ceil_div(problem.m, p["BY"]), 1), block=(p["BX"], p["BY"], 1))


def _constraints(p):
    errors = []
    if p["BX"] * p["BY"] > 1024:
        errors.append(f"BX*BY={p['BX'] * p['BY']} threads exceeds the 1024-thread block limit")
    return errors


SPECS = [
    CudaKernel(
        name="cuda/v1_naive", level=1, precision="fp32", title="naive: one thread per C element",
        source="v1_naive.cu", entry="v1_naive", params={"BX": 32, "BY": 32},
        geometry=_geometry, constraints=_constraints, traffic_model=naive_traffic, doc=__doc__,
        unmodeled="latency: each FFMA waits on its own two loads, with no other work in the thread to overlap them",
    )
]
