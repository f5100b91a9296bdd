"""Saved records against the model: recompute a record's ``model`` from what it says ran (kernel, shape, parameters,
clock) under a set of ceilings, and check that no measurement passes its own roof.

Only ``model`` is rewritten, and bench's ``bw_util_model`` (the old model's bytes over that run's bandwidth) dropped
with the model it came from; every measured field (times, clocks, errors, counters) is left as it was. A record
whose kernel is not registered here (an optional peer whose library is missing, a renamed level) keeps its model,
and the summary says so.
"""
from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass

from gemmlab.analysis.ceilings import Ceilings
from gemmlab.analysis.roofline import model
from gemmlab.errors import GemmlabError
from gemmlab.dispatch_layout import parse_layout
from gemmlab.problem import Problem
from gemmlab.provenance import git_sha

RATIO_NAMED = 1.5  # measured time past this many predicted times: the spec names what the model leaves out


def resources_of(rec: dict) -> dict:
    """What a record knows of the kernel's resources: ptxas's registers and static shared memory (CUDA kernels),
    else the launch counters ncu read (every profiled kernel)."""
    prof = rec.get("profile") if isinstance(rec.get("profile"), dict) else {}
    out = {"registers": rec.get("registers") or prof.get("registers_per_thread"),
           "smem_static": rec.get("smem_static") or prof.get("smem_static_bytes"),
           "smem_dynamic": prof.get("smem_dynamic_bytes"), "threads": prof.get("block_size")}
    return {k: int(v) for k, v in out.items() if v}


def clock_of(rec: dict) -> float | None:
    clock = rec.get("clock") if isinstance(rec.get("clock"), dict) else {}
    return clock.get("median_mhz") or None


def remodel_record(rec: dict, ceilings: Ceilings, resources: dict | None = None) -> dict:
    """The record's model recomputed (a bench --variant record's from its registered kernel, at the record's
    parameters); raises GemmlabError when its kernel is not registered here."""
    from gemmlab.kernels.registry import get_kernel

    spec = get_kernel(rec.get("variant_of") or rec["kernel"])
    if rec.get("variant_of"):
        spec = dataclasses.replace(spec, params=dict(rec["params"]))
    precision = rec.get("precision") or spec.precision
    # C as the record's run wrote it; a record that does not say predates BF16's BF16 C, when BF16 wrote FP32 C
    out = rec.get("out_dtype") or ("float32" if precision == "bf16" else None)
    problem = Problem(int(rec["m"]), int(rec["n"]), int(rec["k"]), precision, out_dtype=out)
    params = rec.get("params") if rec.get("params") else None
    layout = _bench_layout(rec)
    return model(spec, problem, ceilings, clock_of(rec), resources or resources_of(rec), params,
                 layout).as_dict()


def _bench_layout(rec: dict):
    """The layout a bench --layout record's operands came in ("row,col"), None for the natural one; an API bench's
    record names its layout in words (the call's, not a model's), and is modelled in the natural one."""
    try:
        return parse_layout(rec["layout"]) if rec.get("layout") else None
    except GemmlabError:
        return None


def _binary(rec: dict) -> tuple:
    return rec["kernel"], json.dumps(rec.get("params") or {}, sort_keys=True)


def _kernel_resources(records: list[dict]) -> dict:
    """Per binary (kernel and parameters), the resources any of its records knows: a binary's registers do not
    depend on the shape, and only the profiled shape has ncu's counters for kernels that ptxas does not report on
    (numba, peers)."""
    known: dict = {}
    for rec in records:
        for key, value in resources_of(rec).items():
            known.setdefault(_binary(rec), {}).setdefault(key, value)
    return known


def remodel_results(results: dict, ceilings: Ceilings, note: str) -> tuple[dict, list[str]]:
    """A copy of ``results`` with every record's model recomputed, and env.remodel naming the remodel that wrote
    them (command, ceilings, the code's git sha, the records that kept their model): one entry, since an earlier
    remodel's models are gone once this one has run. Also the kernels left as they were, with why."""
    out = copy.deepcopy(results)
    shared = _kernel_resources(out.get("records", []))
    skipped = []
    for rec in out.get("records", []):
        if rec.get("backend") == "cpu" and not rec.get("model"):
            continue
        try:
            rec["model"] = remodel_record(rec, ceilings, {**shared.get(_binary(rec), {}), **resources_of(rec)})
            # bench's figure from the model just replaced: left, it would contradict the bytes beside it (the
            # report computes the utilization from the model the record holds)
            rec.pop("bw_util_model", None)
        except GemmlabError as exc:
            skipped.append(f"{rec['kernel']} {rec['m']}x{rec['n']}x{rec['k']}: {exc}")
    env = out.setdefault("env", {})
    env["remodel"] = [{"command": note, "ceilings": ceilings.as_dict(), "git_sha": git_sha(), "skipped": skipped}]
    return out, skipped


@dataclass(frozen=True)
class Check:
    """One verified GPU record against its own prediction."""

    kernel: str
    shape: str
    measured_tflops: float
    predicted_tflops: float
    bound: str
    clock_mhz: float | None
    unmodeled: str

    @property
    def above(self) -> bool:
        return self.measured_tflops > self.predicted_tflops

    @property
    def ratio(self) -> float:
        """Measured time over predicted time: 1 at the roof, above 1 below it."""
        return self.predicted_tflops / self.measured_tflops


def check_records(results: dict) -> list[Check]:
    """Every verified, timed GPU record with a hierarchical model, measured against its own predicted TFLOPS."""
    rows = []
    for rec in results.get("records", []):
        m = rec.get("model") or {}
        if rec.get("backend") == "cpu" or not rec.get("verified") or not rec.get("median_ms"):
            continue
        if "levels" not in m:  # a record of the seeds' model alone: its ceiling is the seeds' prediction
            m = {"predicted_tflops": m.get("predicted_tflops"), "bound": f"seeds' {m.get('bound')}"}
        if m.get("predicted_tflops") is None:
            continue
        rows.append(Check(rec["kernel"], f"{rec['m']}x{rec['n']}x{rec['k']}", float(rec["tflops"]),
                          float(m["predicted_tflops"]), str(m.get("bound")), clock_of(rec), m.get("unmodeled", "")))
    return rows


def remodel_file(path, ceilings_path: str | None, command: str) -> tuple[int, list[str], Ceilings]:
    """``remodel_results`` on a results file, written back in place under the roofs of the GPU it ran on (its own
    measurement, then ``ceilings_path``): the records remodeled, those that kept their model, and the roofs."""
    from pathlib import Path

    from gemmlab.analysis.roofline import DeviceSpec, device_spec, roofs_of
    from gemmlab.results import load_results

    path = Path(path)
    results = load_results(path)
    env = results.get("env") or {}
    gpu = (env.get("gpu") or {}).get("name") or "h200"
    spec = env.get("device_spec") or {}
    # a board without a datasheet entry ran on its driver's figures, which the file keeps
    dev = DeviceSpec.from_dict(spec) if spec.get("key") == "driver" else device_spec(gpu)
    roofs = roofs_of(dev, results, ceilings_path)
    out, skipped = remodel_results(results, roofs, command)
    path.write_text(json.dumps(out, indent=1, default=float))
    return len(out["records"]) - len(skipped), skipped, roofs
