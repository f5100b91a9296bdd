"""Nsight Compute's target for the profiles here: per case, one gemmlab.matmul(x, w.t()) call and torch's call on
the same tensors (the suite's operands: gemmlab.harness.torch_side), after five warm-ups, between the profiler's
start and stop. Cases on the command line as precision:MxNxK replace the list below. From the repository root, with
gemmlab importable; details.csv and source.csv.gz at git 5c6e860:

    ncu --clock-control none --profile-from-start off --set full --import-source no -o prof \
        python3 results/h100/ncu_tc10_vs_cublas/profile_target.py
    ncu -i prof.ncu-rep --page details --csv > details.csv
    ncu -i prof.ncu-rep --page source --csv --print-source sass > source.csv

decode_details.csv and decode_source.csv.gz at git eef1e2a, the same commands with the target's arguments
bf16:128x4096x4096 bf16:64x4096x4096 fp8:64x4096x4096.
"""
import sys

import torch

import gemmlab
from gemmlab.harness import torch_side
from gemmlab.problem import Problem

CASES = [("fp8", 128, 4096, 4096), ("fp8", 64, 4096, 4096), ("fp8", 32, 4096, 4096), ("bf16", 256, 4096, 4096),
         ("bf16", 256, 4096, 14336), ("bf16", 512, 512, 16384), ("bf16", 1536, 1536, 1536), ("fp8", 512, 1024, 8192)]
if len(sys.argv) > 1:
    CASES = [(prec, *map(int, shape.split("x"))) for prec, shape in (a.split(":") for a in sys.argv[1:])]
for prec, m, n, k in CASES:
    p = Problem(m, n, k, prec)
    sets, _ = torch_side.inputs(torch, p, 1, 0, linear=True, reference=False)
    args = sets[0]
    tcall = torch_side.torch_call(torch, p.prec)
    if p.prec.scaled:
        ours = lambda a, b, sa, sb: gemmlab.matmul(a, b, scale_a=sa, scale_b=sb)  # noqa: E731
    else:
        ours = lambda a, b: gemmlab.matmul(a, b)  # noqa: E731
    for _ in range(5):
        ours(*args)
        tcall(*args)
    torch.cuda.synchronize()
    print("CASE", prec, m, n, k, flush=True)
    torch.cuda.profiler.start()
    ours(*args)
    torch.cuda.synchronize()
    tcall(*args)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
