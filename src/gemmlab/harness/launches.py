"""The kernels one call launches, as CUDA's profiler (CUPTI, through torch.profiler) sees them: name, grid, block,
duration. The suite records both sides' so that a row says what cuBLAS ran against what gemmlab ran (its tile,
stages, cluster and split-K, which cuBLASLt's nvjet kernels spell out in their names; a templated kernel keeps only
its name, its template arguments dropped) and where a call takes more than one kernel (cuBLASLt's split-K
reduction, a pre-pass)."""
from __future__ import annotations

import json
import os
import re
import tempfile

_TEMPLATE = re.compile(r"^(?:void\s+)?([^<(\s]+)")


def short_name(name: str) -> str:
    """A kernel's name without its return type, template arguments and parameters (``void
    cublasLt::splitKreduce_kernel<32, 16, ...>(...)`` -> ``cublasLt::splitKreduce_kernel``); a plain name as it is."""
    m = _TEMPLATE.match(name.strip())
    return m.group(1) if m else name.strip()


def from_trace(events: list[dict]) -> list[dict]:
    """The kernel events of a Chrome trace (torch.profiler's export), in launch order: short name, grid and block
    (each x, y, z) and duration in µs."""
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e.get("ts", 0))
    return [{"name": short_name(e.get("name", "")), "grid": list(e.get("args", {}).get("grid", [])),
             "block": list(e.get("args", {}).get("block", [])), "us": round(float(e.get("dur", 0.0)), 2)}
            for e in kernels]


def kernels(torch, call, args, clean=None) -> list[dict]:
    """The kernels ``call(*args)`` launches on the GPU, from one call under the profiler after the GPU is idle and
    after ``clean`` (the suite's L2 flush), as the timed calls run: without it the operands, just made and just read,
    sit in L2, and a decode row's weight read from there ran its kernel a third to a half shorter than cold."""
    if clean is not None:
        clean()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        call(*args)
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            return from_trace(json.load(f).get("traceEvents", []))


def brief(launched: list[dict] | None) -> str:
    """One line of a call's kernels for a Markdown table's cell: each name with its grid's dimensions other than 1
    (``nvjet_… [2×64] + cublasLt::splitKreduce_kernel [16×32]``), a ``|`` escaped."""
    if not launched:
        return "—"
    parts = []
    for k in launched:
        dims = [d for d in k.get("grid", []) if d != 1] or k.get("grid", [])[:1]
        parts.append(f"{k['name']} [{'×'.join(str(d) for d in dims)}]" if dims else k["name"])
    return " + ".join(parts).replace("|", "\\|")  # a Markdown table's cell
