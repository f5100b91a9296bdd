"""V1 naive: the seeds' first GPU kernel, one thread per element of C.

Each thread reads a full row of A and column of B from global memory: 2MNK loads, 8MNK bytes in FP32, for
2MNK FLOPs, an effective intensity of 0.25 FLOP/byte whatever the size (the seeds' analysis). That sits far
left of the ridge point, so the model predicts a memory-bound kernel. The model counts requests, not DRAM
bytes: L1 and L2 serve most of the re-reads (the warps of a block share rows of A and columns of B).
Block 32×32 = 1024 threads, as in the seeds.

Variants (bench --variant, gemmlab chapter): BX=16,BY=16, the 16×16 block the second seed offers beside 32×32 (and
the first seed's comment names above its 32×32 launch); ROWS_ON_X=1, threadIdx.x along M, so a warp reads 32 rows
of A at each k instead of 32 consecutive floats of B: the uncoalesced access the second seed describes, predicted
slower by the L1 sectors it asks for (33 per warp and k instead of 5).

Measured: docs/fp32_ladder.md (timings, counters), docs/seeds.md; results/h200/fp32.json.
"""
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.spec import SM_COUNT, naive_traffic


def _geometry(problem, p):
    x, y = (problem.m, problem.n) if p.get("ROWS_ON_X") else (problem.n, problem.m)
    return Geometry(grid=(ceil_div(x, p["BX"]), ceil_div(y, p["BY"]), 1), block=(p["BX"], p["BY"], 1))


def _traffic(problem, sm_count=SM_COUNT, params=None):
    p = params or {}
    return naive_traffic(problem, sm_count, p.get("BX", 32), p.get("BY", 32), bool(p.get("ROWS_ON_X", 0)))


def _constraints(p):
    errors = [f"{k}={p[k]}: a block has at least one thread along each side" for k in ("BX", "BY") if p[k] < 1]
    if p["BX"] * p["BY"] > 1024:
        errors.append(f"BX*BY={p['BX'] * p['BY']} threads exceeds the 1024-thread block limit")
    return errors


SPECS = [
    CudaKernel(
        name="cuda/v1_naive", level=1, precision="fp32", title="naive: one thread per C element",
        source="v1_naive.cu", entry="v1_naive", params={"BX": 32, "BY": 32},
        geometry=_geometry, constraints=_constraints, traffic_model=_traffic, varies=("BX", "BY", "ROWS_ON_X"),
        doc=__doc__,
        unmodeled="latency: each FFMA waits on its own two loads, with no other work in the thread to overlap them",
    )
]
