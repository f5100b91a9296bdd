"""gemmlab bench --api: what a caller of gemmlab.matmul gets, against torch doing the same work on the same tensors.

For each precision and shape, gemmlab.matmul(a, b) with its default kernel="auto" and torch's own call are timed in
alternation over the same rotating CUDA tensors (cold L2: the sets together exceed twice the L2, and a read of a
buffer twice the L2's size evicts it before every call): FP32 against torch.matmul with TF32 off, TF32 against
torch.matmul with it on, BF16 (BF16 in, FP32 out) against torch.mm(a, b, out_dtype=torch.float32). Both sides
allocate their output from torch's caching allocator. Each timed call starts on an idle GPU (the stream is
synchronized before it), and CUDA events bracket the Python call, so a call's time holds its host overhead as well
as its kernels: the number a caller waits for. Host overhead alone is timed at 256³: the median wall time of a Python
call while the GPU is busy with earlier ones, so no call waits for the GPU.

Every result is checked against a float64 product of the same inputs before it is timed.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

from gemmlab.errors import GemmlabError

SHAPES = ((256, 256, 256), (1024, 1024, 1024), (2048, 3072, 4096), (4096, 4096, 4096), (8192, 8192, 8192),
          (4096, 14336, 4096))
PRECISIONS = ("fp32", "tf32", "bf16")
LINEAR_SHAPE = (4096, 4096, 4096)  # x @ w.T: B handed over as the transpose of w


@dataclass
class ApiBenchOptions:
    shapes: tuple = SHAPES
    precisions: tuple = PRECISIONS
    rounds: int = 100  # timed calls per side (cut back to max_seconds, never below min_rounds)
    max_seconds: float = 2.0  # per case, before rounds are cut back (never below min_rounds)
    min_rounds: int = 10
    overhead_calls: int = 300
    seed: int = 2026
    linear: bool = True  # also time x @ w.T
    notes: list = field(default_factory=list)


def _torch_call(torch, prec):
    """torch's call for this precision: torch.mm with out_dtype where C's dtype is not the operands'."""
    if prec.output_dtype != prec.input_dtype:
        return lambda a, b: torch.mm(a, b, out_dtype=getattr(torch, prec.output_dtype))
    return torch.matmul


def _tf32(torch, on: bool):
    torch.backends.cuda.matmul.allow_tf32 = on


def _inputs(torch, problem, n_sets, seed, linear):
    dtype = getattr(torch, problem.prec.input_dtype)  # torch names its dtypes as NumPy does
    gen = torch.Generator(device="cuda").manual_seed(seed)
    sets = []
    for _ in range(n_sets):
        a = torch.randn(problem.m, problem.k, device="cuda", generator=gen).to(dtype)
        if linear:  # w is N×K; the product reads w.T
            b = torch.randn(problem.n, problem.k, device="cuda", generator=gen).to(dtype).t()
        else:
            b = torch.randn(problem.k, problem.n, device="cuda", generator=gen).to(dtype)
        sets.append((a, b))
    return sets


def _verify(torch, c, a, b, tolerance) -> tuple[float, bool]:
    ref = a.double() @ b.double()
    err = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
    return err, bool(torch.isfinite(c).all()) and err <= tolerance


def _interleaved(torch, calls, sets, rounds, max_seconds, min_rounds, clean):
    """Median event time of each call, alternating which goes first each round, over the rotating sets."""
    stream = torch.cuda.current_stream()
    for fn in calls:  # warm-up: plans, cuBLAS heuristics, allocator pools
        for a, b in sets[:2]:
            fn(a, b)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    times = [[] for _ in calls]
    r = 0
    while r < rounds and (r < min_rounds or time.perf_counter() - t0 < max_seconds):
        order = range(len(calls)) if r % 2 == 0 else reversed(range(len(calls)))
        for i in order:
            a, b = sets[(r * len(calls) + i) % len(sets)]
            clean()
            stream.synchronize()  # an idle GPU: the call's host time lands inside its events
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(stream)
            calls[i](a, b)
            e1.record(stream)
            e1.synchronize()
            times[i].append(e0.elapsed_time(e1))
        r += 1
    return [statistics.median(t) for t in times], r


def run_api_bench(opts: ApiBenchOptions, say=print) -> dict:
    import torch

    import gemmlab
    from gemmlab import device
    from gemmlab.harness import env
    from gemmlab.harness.reference import tolerance_for
    from gemmlab.harness.timing import host_us_per_call, rotation_sets
    from gemmlab.problem import Problem

    info = device.require_gpu("gemmlab bench --api")
    if not torch.cuda.is_available():
        raise GemmlabError("gemmlab bench --api times gemmlab against torch on CUDA tensors; this torch has no CUDA")
    scratch = torch.empty(2 * info.l2_bytes // 4, device="cuda")

    def clean():
        scratch.sum()

    records = []
    cases = [(p, shape, False) for p in opts.precisions for shape in opts.shapes]
    if opts.linear:
        cases += [(p, LINEAR_SHAPE, True) for p in opts.precisions]  # FP32 copies w.T first: measured
    for precision, shape, linear in cases:
        problem = Problem(*shape, precision)
        per_set = problem.compulsory_bytes()
        n_sets = rotation_sets(per_set, info.l2_bytes, True, 8)
        sets = _inputs(torch, problem, n_sets, opts.seed, linear)
        _tf32(torch, problem.prec.tf32_multiply)
        ours = lambda a, b, p=precision: gemmlab.matmul(a, b, precision=p)  # noqa: E731
        theirs = _torch_call(torch, problem.prec)
        a, b = sets[0]
        chosen = gemmlab.plan(a, b, precision=precision)
        err, ok = _verify(torch, ours(a, b), a, b, tolerance_for(problem))
        torch_err, _ = _verify(torch, theirs(a, b), a, b, tolerance_for(problem))
        rec = {"kernel": chosen.plan.spec.name, "precision": precision, "m": problem.m, "n": problem.n,
               "k": problem.k, "layout": "x @ w.T (B column-major)" if linear else "row-major",
               "verified": ok, "rel_err": err, "torch_rel_err": torch_err, "why": chosen.why,
               "copies": [x for x, c in (("A", chosen.copy_a), ("B", chosen.copy_b)) if c]}
        if ok:
            (api_ms, torch_ms), rounds = _interleaved(torch, [ours, theirs], sets, opts.rounds, opts.max_seconds,
                                                      opts.min_rounds, clean)
            rec.update(api_ms=api_ms, torch_ms=torch_ms, api_ratio=torch_ms / api_ms, rounds=rounds,
                       api_tflops=problem.flops() / api_ms / 1e9, torch_tflops=problem.flops() / torch_ms / 1e9)
            if shape == (256, 256, 256) and not linear:
                rec["overhead_us"], rec["torch_overhead_us"] = (
                    host_us_per_call(lambda f=f: f(a, b), torch.cuda.synchronize, opts.overhead_calls)
                    for f in (ours, theirs))
        records.append(rec)
        say(_line(rec))
        del sets
        torch.cuda.empty_cache()
    _tf32(torch, False)
    results = {"env": env.collect(info, "gpu"), "records": records, "notes": list(opts.notes)}
    results["env"]["torch_tf32_note"] = "torch.backends.cuda.matmul.allow_tf32 set per precision (off for FP32)"
    return results


def _line(r: dict) -> str:
    head = f"{r['precision']:>4} {r['m']}x{r['n']}x{r['k']:<6} {r['layout'][:10]:10} {r['kernel']:30}"
    if not r["verified"]:
        return f"{head} FAILED verification: rel err {r['rel_err']:.2e}"
    tail = f" api {r['api_ms']:.4f} ms  torch {r['torch_ms']:.4f} ms  ×{r['api_ratio']:.3f}"
    if "overhead_us" in r:
        tail += f"  host {r['overhead_us']:.1f} µs vs torch {r['torch_overhead_us']:.1f} µs"
    return head + tail


def markdown(results: dict) -> str:
    env = results.get("env", {})
    gpu = (env.get("gpu") or {}).get("name", "no GPU")
    lines = [f"# gemmlab.matmul against torch: {gpu}", "",
             f"`{env.get('command', 'gemmlab bench --api')}` at git {env.get('git_sha', 'unknown')}. Each call timed "
             "with CUDA events from an idle GPU, host time included, gemmlab and torch alternating over the same "
             "rotating tensors, L2 evicted before every call; ratio = torch time / gemmlab time (above 1: gemmlab "
             "faster). Host overhead: median wall time of one Python call at 256³.", "",
             "| precision | M×N×K | operands | kernel (auto) | gemmlab ms | torch ms | × torch | gemmlab TFLOPS | "
             "host µs (gemmlab / torch) | rel err (gemmlab / torch) |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in results.get("records", []):
        shape = f"{r['m']}×{r['n']}×{r['k']}"
        if not r.get("verified"):
            lines.append(f"| {r['precision']} | {shape} | {r['layout']} | `{r['kernel']}` | FAILED | | | | | "
                         f"{r['rel_err']:.2e} |")
            continue
        host = (f"{r['overhead_us']:.1f} / {r['torch_overhead_us']:.1f}" if "overhead_us" in r else "")
        lines.append(f"| {r['precision']} | {shape} | {r['layout']} | `{r['kernel']}` | {r['api_ms']:.4f} | "
                     f"{r['torch_ms']:.4f} | {r['api_ratio']:.3f} | {r['api_tflops']:.1f} | {host} | "
                     f"{r['rel_err']:.1e} / {r['torch_rel_err']:.1e} |")
    return "\n".join(lines) + "\n"
