"""The child process ``gemmlab profile`` runs under Nsight Compute: one kernel, one problem, one profiled call.

    python -m gemmlab._profile_target KERNEL M N K [--seed S] [--warmup W]

It builds the kernel, draws inputs, runs ``W`` warm-up calls (compilation, module load, autotuning and cuBLAS
heuristics all happen there), then makes exactly one call inside the NVTX range ``gemmlab_profile``. ncu is
started with ``--nvtx --nvtx-include gemmlab_profile/`` so it profiles only the launches of that call: not
CuPy's random-number kernels, not the warm-ups. A call may launch more than one kernel (a library's split-K
reduction, say); every one of them is inside the range. The last line on stdout is a JSON summary.
"""
from __future__ import annotations

import argparse
import json
import sys

NVTX_RANGE = "gemmlab_profile"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gemmlab._profile_target")
    parser.add_argument("kernel")
    parser.add_argument("m", type=int)
    parser.add_argument("n", type=int)
    parser.add_argument("k", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)

    import cupy

    from gemmlab.kernels.registry import get_kernel
    from gemmlab.problem import Problem

    spec = get_kernel(args.kernel)
    problem = Problem(args.m, args.n, args.k, spec.precision)
    reason = spec.is_valid(problem)
    if reason:
        print(json.dumps({"ok": False, "reason": reason}))
        return 2
    run = spec.build(problem)
    a, b = problem.make_inputs(args.seed, cupy)
    c = cupy.empty((problem.m, problem.n), dtype=problem.output_dtype())
    stream = cupy.cuda.get_current_stream()
    for _ in range(max(args.warmup, 0)):
        run(a, b, c)
    stream.synchronize()

    nvtx = _nvtx()
    if nvtx is not None:
        nvtx.RangePush(NVTX_RANGE)
    run(a, b, c)
    stream.synchronize()
    if nvtx is not None:
        nvtx.RangePop()
    print(json.dumps({"ok": True, "kernel": spec.name, "shape": problem.shape, "nvtx": nvtx is not None}))
    return 0


def _nvtx():
    try:
        from cupy.cuda import nvtx

        if getattr(nvtx, "available", True):
            return nvtx
    except Exception:
        pass
    return None


if __name__ == "__main__":
    sys.exit(main())
