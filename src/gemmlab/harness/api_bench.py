"""gemmlab bench --api: what a caller of gemmlab.matmul gets, against torch doing the same work on the same tensors.

For each precision and shape, gemmlab.matmul(a, b) with its default kernel="auto" and torch's own call are timed in
alternation over the same rotating CUDA tensors (cold L2: the sets together exceed twice the L2, and a read of a
buffer twice the L2's size evicts it before every call): FP32 against torch.matmul with TF32 off, TF32 against
torch.matmul with it on, BF16 and FP16 (C in the operands' dtype on both sides, torch's rule) against torch.matmul,
and FP8 (e4m3, BF16 out, B as w.t() of an N×K w, the only layout FP8 tensor cores read) against torch._scaled_mm on
the same tensors and scales: per tensor ("fp8") with use_fast_accum=True, the tensor cores' own accumulation, as
tc4_persistent_fp8 keeps it; DeepGEMM's blocks ("fp8_block", scale_a M×K/128, scale_b K/128×N/128) with torch's
blockwise scaled matmul, where a torch without one leaves gemmlab timed alone and says why. Both sides
allocate their output from torch's caching allocator. Each timed call starts on an idle GPU (the stream is
synchronized before it), and CUDA events bracket the Python call, so a call's time holds its host overhead as well
as its kernels: the number a caller waits for; the Python call's own wall time in those samples is kept beside it
(``eager_host_us``: right after a synchronization a call's host code runs well below its speed in a loop). Host
overhead in a loop is timed at 256³: the median wall time of a Python call while the GPU is busy with earlier ones,
so no call waits for the GPU.

Every result is checked against a float64 product of the same inputs (FP8: of the dequantized operands, the values
both sides multiply) before it is timed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from gemmlab.errors import GemmlabError
from gemmlab.harness.suite_ops import check, error_line
from gemmlab.harness.torch_side import inputs, torch_call
from gemmlab.problem import PRECISIONS as RECORDS, get_precision

SHAPES = ((256, 256, 256), (1024, 1024, 1024), (2048, 3072, 4096), (4096, 4096, 4096), (8192, 8192, 8192),
          (4096, 14336, 4096))
PRECISIONS = tuple(RECORDS)
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


def cases(precisions, shapes, linear: bool) -> list[tuple[str, tuple, bool, bool]]:
    """(precision, shape, B as w.T, host overhead timed) per record: every precision at every shape, FP8 always as
    x @ w.T; with ``linear``, the other precisions' x @ w.T at LINEAR_SHAPE too. Host overhead at the first shape."""
    out = [(p, shape, get_precision(p).scaled, shape == shapes[0]) for p in precisions for shape in shapes]
    if linear:  # FP32 copies w.T first: measured
        out += [(p, LINEAR_SHAPE, True, False) for p in precisions if not get_precision(p).scaled]
    return out


def _tf32(torch, on: bool):
    torch.backends.cuda.matmul.allow_tf32 = on


def run_api_bench(opts: ApiBenchOptions, say=print) -> dict:
    import torch

    import gemmlab
    from gemmlab import device
    from gemmlab.harness import env
    from gemmlab.harness.reference import tolerance_for
    from gemmlab.harness.timing import eager_times, host_us_per_call, rotation_sets
    from gemmlab.problem import Problem

    info = device.require_gpu("gemmlab bench --api")
    if not torch.cuda.is_available():
        raise GemmlabError("gemmlab bench --api times gemmlab against torch on CUDA tensors; this torch has no CUDA")
    scratch = torch.empty(2 * info.l2_bytes // 4, device="cuda")

    def clean():
        scratch.sum()

    records = []
    for precision, shape, linear, overhead in cases(opts.precisions, opts.shapes, opts.linear):
        problem = Problem(*shape, precision)
        per_set = problem.compulsory_bytes()
        n_sets = rotation_sets(per_set, info.l2_bytes, True, 8)
        sets, ref = inputs(torch, problem, n_sets, opts.seed, linear)
        _tf32(torch, problem.prec.tf32_multiply)
        if get_precision(precision).scaled:  # the scales say the precision
            ours = lambda a, b, sa, sb: gemmlab.matmul(a, b, scale_a=sa, scale_b=sb)  # noqa: E731
            chosen = gemmlab.plan(*sets[0][:2], scale_a=sets[0][2], scale_b=sets[0][3])
        else:
            ours = partial(gemmlab.matmul, precision=precision)  # torch's side is its function: no frame here either
            chosen = gemmlab.plan(*sets[0], precision=precision)
        theirs = torch_call(torch, problem.prec)
        err, ok = check(torch, ours(*sets[0]), ref, None, tolerance_for(problem))
        rec = {"kernel": chosen.plan.spec.name, "precision": precision, "m": problem.m, "n": problem.n,
               "k": problem.k, "layout": "x @ w.T (B column-major)" if linear else "row-major",
               "verified": ok, "rel_err": err, "why": chosen.why,
               "copies": [x for x, c in (("A", chosen.copy_a), ("B", chosen.copy_b)) if c]}
        try:
            rec["torch_rel_err"], rec["torch_verified"] = check(torch, theirs(*sets[0]), ref, None,
                                                                tolerance_for(problem))
        except RuntimeError as exc:  # this torch has no such call (blockwise scaled matmul): gemmlab alone
            rec["torch_error"] = error_line(exc)
            theirs = None
        if ok:
            calls = [ours] if theirs is None else [ours, theirs]
            e = eager_times(torch, calls, sets, opts.rounds, opts.max_seconds, opts.min_rounds, clean)
            times = e.median_ms
            rec.update(api_ms=times[0], rounds=e.rounds, api_tflops=problem.flops() / times[0] / 1e9,
                       eager_host_us=e.host_us[0])
            if theirs is not None:
                rec.update(torch_ms=times[1], api_ratio=times[1] / times[0],
                           torch_tflops=problem.flops() / times[1] / 1e9, torch_eager_host_us=e.host_us[1])
            if overhead:
                first = sets[0]
                rec["overhead_us"], *torch_us = (host_us_per_call(lambda f=f: f(*first), torch.cuda.synchronize,
                                                                  opts.overhead_calls) for f in calls)
                if torch_us:
                    rec["torch_overhead_us"] = torch_us[0]
        records.append(rec)
        say(_line(rec))
        del sets, ref
        torch.cuda.empty_cache()
    _tf32(torch, False)
    results = {"env": env.collect(info, "gpu"), "records": records, "notes": list(opts.notes)}
    results["env"]["torch_tf32_note"] = "torch.backends.cuda.matmul.allow_tf32 set per precision (off for FP32)"
    return results


def _line(r: dict) -> str:
    head = f"{r['precision']:>9} {r['m']}x{r['n']}x{r['k']:<6} {r['layout'][:10]:10} {r['kernel']:30}"
    if not r["verified"]:
        return f"{head} FAILED verification: rel err {r['rel_err']:.2e}"
    tail = f" api {r['api_ms']:.4f} ms"
    tail += f"  torch {r['torch_ms']:.4f} ms  ×{r['api_ratio']:.3f}" if "torch_ms" in r else f"  torch: {r['torch_error']}"
    if "eager_host_us" in r:
        tail += f"  host from idle {r['eager_host_us']:.1f} µs" + (
            f" vs torch {r['torch_eager_host_us']:.1f} µs" if "torch_eager_host_us" in r else "")
    if "overhead_us" in r:
        tail += f"  host in a loop {r['overhead_us']:.1f} µs" + (f" vs torch {r['torch_overhead_us']:.1f} µs"
                                                                if "torch_overhead_us" in r else "")
    return head + tail


def markdown(results: dict) -> str:
    env = results.get("env", {})
    gpu = (env.get("gpu") or {}).get("name", "no GPU")
    lines = [f"# gemmlab.matmul against torch: {gpu}", "",
             f"`{env.get('command', 'gemmlab bench --api')}` at git {env.get('git_sha', 'unknown')}. Each call timed "
             "with CUDA events from an idle GPU, host time included, gemmlab and torch alternating over the same "
             "rotating tensors, L2 evicted before every call; ratio = torch time / gemmlab time (above 1: gemmlab "
             "faster). Host from idle: the median wall time of the Python call itself in those samples, issued "
             "right after a synchronization. Host in a loop: the median wall time of one Python call at 256³, "
             "issued back to back. FP8: e4m3 in, BF16 out, against torch._scaled_mm with the same scales (per "
             "tensor with fast accumulation); errors against the float64 product of the dequantized operands.", "",
             "| precision | M×N×K | operands | kernel (auto) | gemmlab ms | torch ms | × torch | gemmlab TFLOPS | "
             "host from idle µs (gemmlab / torch) | host in a loop µs (gemmlab / torch) | rel err (gemmlab / torch) |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    missing, wrong = [], []
    for r in results.get("records", []):
        shape = f"{r['m']}×{r['n']}×{r['k']}"
        if not r.get("verified"):
            lines.append(f"| {r['precision']} | {shape} | {r['layout']} | `{r['kernel']}` | FAILED | | | | | | "
                         f"{r['rel_err']:.2e} |")
            continue
        host = (f"{r['overhead_us']:.1f} / {r.get('torch_overhead_us', float('nan')):.1f}"
                if "overhead_us" in r else "")
        idle = (f"{r['eager_host_us']:.1f} / {r.get('torch_eager_host_us', float('nan')):.1f}"
                if "eager_host_us" in r else "—")
        if "torch_ms" in r:
            theirs = f"{r['torch_ms']:.4f} | {r['api_ratio']:.3f}"
            errs = f"{r['rel_err']:.1e} / {r['torch_rel_err']:.1e}"
            if r.get("torch_verified") is False:  # torch's product is off the reference: timed all the same
                errs += " (torch wrong)"
                wrong.append(f"{r['precision']} {shape}: torch's rel err {r['torch_rel_err']:.2e} against the "
                             "float64 reference, past the precision's tolerance")
        else:
            theirs, errs = "— | —", f"{r['rel_err']:.1e} / —"
            missing.append(f"{r['precision']} {shape}: {r['torch_error']}")
        lines.append(f"| {r['precision']} | {shape} | {r['layout']} | `{r['kernel']}` | {r['api_ms']:.4f} | "
                     f"{theirs} | {r['api_tflops']:.1f} | {idle} | {host} | {errs} |")
    if wrong:
        lines += ["", "torch's result failed the check gemmlab's passed (both timed):", *(f"- {w}" for w in wrong)]
    if missing:
        lines += ["", "torch could not run these (gemmlab timed alone):", *(f"- {m}" for m in missing)]
    return "\n".join(lines) + "\n"
