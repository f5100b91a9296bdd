"""Nsight Compute's target for decode_details.csv and decode_source.csv.gz here: per case, one
gemmlab.matmul(x, w.t()) call and torch's call on the same tensors (the suite's operands:
gemmlab.harness.torch_side), after five warm-ups, between the profiler's start and stop. From the repository root,
with gemmlab importable (git eef1e2a):

    ncu --clock-control none --profile-from-start off --set full --import-source no -o prof \
        python3 results/h100/ncu_tc10_vs_cublas/profile_decode.py
    ncu -i prof.ncu-rep --page details --csv > decode_details.csv
    ncu -i prof.ncu-rep --page source --csv --print-source sass > decode_source.csv
"""
import sys

import torch

import gemmlab
from gemmlab.harness import torch_side
from gemmlab.problem import Problem

CASES = [("bf16", 128, 4096, 4096), ("bf16", 64, 4096, 4096), ("fp8", 64, 4096, 4096)]
if len(sys.argv) > 1:
    CASES = [c for c in CASES if f"{c[0]}:{c[1]}x{c[2]}x{c[3]}" in sys.argv[1:]]
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
