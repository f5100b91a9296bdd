"""The child process ``gemmlab profile`` runs under Nsight Compute: one problem, one profiled call per kernel.

    python -m gemmlab._profile_target --shape MxNxK [--seed S] [--warmup W] KERNEL [KERNEL ...]

For each kernel it builds it, draws inputs, runs ``W`` warm-up calls (compilation, module load, autotuning and
cuBLAS heuristics all happen there), then makes exactly one call inside the NVTX range ``gemmlab_profile``. ncu
is started with ``--nvtx --nvtx-include gemmlab_profile/`` so it profiles only the launches of those calls: not
CuPy's random-number kernels, not the warm-ups. A call may launch more than one kernel (a transpose pre-pass, a
library's split-K reduction); every one of them is inside the range. Each call is preceded, inside the range, by
a one-thread marker kernel (``gemmlab_profile_marker``), so the profiled launches split into one group per kernel
in the order printed on the last line of stdout (a JSON summary): one ncu process profiles a whole ladder.
"""
from __future__ import annotations

import argparse
import json
import sys

NVTX_RANGE = "gemmlab_profile"
MARKER = "gemmlab_profile_marker"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gemmlab._profile_target")
    parser.add_argument("kernels", nargs="+")
    parser.add_argument("--shape", required=True, help="MxNxK")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)

    import cupy

    from gemmlab.kernels.registry import get_kernel
    from gemmlab.problem import Problem, parse_shape

    marker = cupy.ElementwiseKernel("", "int32 x", "x = 1", MARKER)
    flag = cupy.zeros(1, cupy.int32)
    nvtx = _nvtx()
    profiled, skipped = [], {}
    for name in args.kernels:
        spec = get_kernel(name)
        problem = Problem(*parse_shape(args.shape), spec.precision)
        reason = spec.is_valid(problem)
        if reason:
            skipped[name] = reason
            continue
        run = spec.build(problem)
        a, b = spec.make_inputs(problem, args.seed, cupy)
        c = cupy.empty((problem.m, problem.n), dtype=spec.output_dtype(problem))
        stream = cupy.cuda.get_current_stream()
        for _ in range(max(args.warmup, 0)):
            run(a, b, c)
        marker(flag)  # compiled and loaded outside the range
        stream.synchronize()
        if nvtx is not None:
            nvtx.RangePush(NVTX_RANGE)
        marker(flag)
        run(a, b, c)
        stream.synchronize()
        if nvtx is not None:
            nvtx.RangePop()
        profiled.append(spec.name)
        del a, b, c, run
        cupy.get_default_memory_pool().free_all_blocks()
    print(json.dumps({"ok": bool(profiled), "kernels": profiled, "skipped": skipped, "nvtx": nvtx is not None,
                      **({} if profiled else {"reason": "; ".join(f"{k}: {v}" for k, v in skipped.items())})}))
    return 0 if profiled else 2


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
