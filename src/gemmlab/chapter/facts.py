"""What the claims are judged on: this run's records, the roofline model, and the committed H200 results they name.

Every number a claim shows comes from here or from the seeds' own text (claims.py quotes it): a record this run
measured (``rec``), gemmlab's model of a kernel at a shape (``model``), or a committed results file read now
(``profile``: Nsight Compute's counters in results/h200/fp32.json; ``ceilings``: the measured roofs, this run's or
results/h200/ceilings.json).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from gemmlab.analysis.ceilings import datasheet, with_measured
from gemmlab.analysis.roofline import DEVICES, model
from gemmlab.problem import SEED_SHAPE, Problem

S1024 = (1024, 1024, 1024)  # the second seed's example, and where V0 finishes
S512 = (512, 512, 512)  # V0's second size: the O(N³) growth between the two
S4096 = (4096, 4096, 4096)  # the first seed's measured table
SHAPES = (S1024, SEED_SHAPE, S4096)  # the GPU kernels' shapes, in the order they run

A100 = DEVICES["a100"]
H200 = DEVICES["h200"]
RESULTS = Path(__file__).resolve().parents[3] / "results" / "h200"  # the committed H200 results, in a checkout
PROFILED = "results/h200/fp32.json"  # Nsight Compute's counters at 4096³, one cold-L2 launch per kernel
CEILINGS = "results/h200/ceilings.json"  # the measured roofs, where this run measured none


def label(shape) -> str:
    return "x".join(map(str, shape))


@dataclass
class Facts:
    """A chapter run's measurements, looked up by kernel and shape."""

    records: list[dict]
    gpu: bool  # this run timed the GPU kernels
    ceilings: dict = field(default_factory=dict)  # copy_bw_gbs, ... : this run's or the committed ones
    ceilings_source: str = ""
    profiles: dict = field(default_factory=dict)  # kernel -> ncu profile at 4096³ (committed)
    profiles_source: str = ""
    cpu_shape: tuple = S1024  # where V0 and the host BLAS ran (the second seed's 1024³ unless told otherwise)

    def rec(self, kernel: str, shape) -> dict | None:
        """The verified, timed record of ``kernel`` at ``shape`` (FP32 unless the kernel is TF32's peer)."""
        for r in self.records:
            if r["kernel"] == kernel and (r["m"], r["n"], r["k"]) == tuple(shape) and r.get("median_ms") \
                    and r.get("verified"):
                return r
        return None

    def any_rec(self, kernel: str, shape=None) -> dict | None:
        """A record of ``kernel`` in any state (compiled, simulated, failed), at ``shape`` if given."""
        for r in self.records:
            if r["kernel"] == kernel and (shape is None or (r["m"], r["n"], r["k"]) == tuple(shape)):
                return r
        return None

    def ms(self, kernel: str, shape) -> float | None:
        r = self.rec(kernel, shape)
        return r["median_ms"] if r else None

    def gflops(self, kernel: str, shape) -> float | None:
        r = self.rec(kernel, shape)
        return r["gflops"] if r else None

    def model(self, kernel: str, shape) -> dict:
        """gemmlab's model of ``kernel`` at ``shape`` on the H200 under this run's roofs: both views, the seeds'
        single roof and the levels beneath it."""
        from gemmlab.harness import bench
        from gemmlab.kernels.registry import get_kernel

        name, _, changes = kernel.partition("[")
        spec = get_kernel(name)
        if changes:
            spec = bench.variant(name, dict((k, int(v)) for k, v in (c.split("=") for c in changes[:-1].split(","))))
        return model(spec, Problem(*shape, spec.precision), self.roofs()).as_dict()

    def roofs(self):
        """The H200's roofs: the datasheet's, with every figure ``ceilings`` measured in its place."""
        if not self.ceilings:
            return datasheet(H200)
        return with_measured(datasheet(H200), self.ceilings, self.ceilings_source)

    @property
    def copy_gbs(self) -> float | None:
        """The measured DRAM (copy) bandwidth, GB/s."""
        return self.ceilings.get("dram_gbs")

    def profile(self, kernel: str) -> dict | None:
        return self.profiles.get(kernel)


def committed_profiles() -> tuple[dict, str]:
    """Nsight Compute's counters at 4096³ for the seed levels and cuBLAS, from the committed FP32 results."""
    path = RESULTS / "fp32.json"
    if not path.exists():
        return {}, ""
    out = {}
    for r in json.loads(path.read_text())["records"]:
        prof = r.get("profile")
        if (r["m"], r["n"], r["k"]) == S4096 and prof and prof.get("status") == "ok" and r["kernel"] not in out:
            out[r["kernel"]] = prof
    return out, PROFILED


def committed_ceilings() -> tuple[dict, str]:
    path = RESULTS / "ceilings.json"
    if not path.exists():
        return {}, ""
    return json.loads(path.read_text()), CEILINGS



COMMITTED_BENCH = ("fp32", "tensor_cores", "fp8", "blocks", "seed_1024")  # the committed H200 bench results


def committed_above_seed_roof() -> tuple[int, int, list[str]] | None:
    """(records above, records carrying the seeds' single roof, files read): the verified GPU records of the committed
    H200 bench results that ran faster than ``seed_predicted_tflops``, the roof that takes every load for DRAM
    traffic; None where the files are not here."""
    files = [RESULTS / f"{name}.json" for name in COMMITTED_BENCH]
    if not all(f.exists() for f in files):
        return None
    above = carrying = 0
    for f in files:
        for r in json.loads(f.read_text())["records"]:
            roof = (r.get("model") or {}).get("seed_predicted_tflops")
            if r.get("backend") == "cpu" or not r.get("verified") or not r.get("tflops") or roof is None:
                continue
            carrying += 1
            above += r["tflops"] > roof
    return above, carrying, [f"results/h200/{name}.json" for name in COMMITTED_BENCH]
