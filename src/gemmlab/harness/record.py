"""One kernel at one shape in a gemmlab bench run: the typed record the harness fills, and the JSON it becomes.

The JSON (results/<gpu>/*.json, what the report renders) keeps the field names and order it always had; fields a
run did not produce for a record (a compile report, an interleaved timing, the simulator's runs) are left out.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any


class Status(str, Enum):
    """What became of a record: its JSON ``status``."""

    OK = "ok"  # verified, then timed
    FAILED = "FAILED"  # verified wrong (or non-finite): never timed
    ERROR = "error"  # could not be built or run; the reason says why
    SKIPPED = "skipped"  # the kernel refused the problem, or the machine cannot run it
    COMPILED = "compiled"  # no GPU: NVRTC's report only
    SIMULATED = "simulated"  # no GPU: verified under numba's CUDA simulator


_OPTIONAL = ("registers", "spills", "smem_static", "smem_bytes", "call_host_us", "interleaved", "blocks", "prev_kernel",
             "simulator", "recipe_err", "recipe_tolerance", "peer_note", "variant_of", "variant_gain",
             "variant_interleaved", "out_dtype", "late")


@dataclass
class BenchRecord:
    kernel: str
    backend: str
    level: int | None
    precision: str
    title: str
    params: dict
    m: int
    n: int
    k: int
    status: Status | None = None
    reason: str = ""
    median_ms: float | None = None
    iqr_ms: float | None = None
    min_ms: float | None = None
    samples: int = 0
    tflops: float | None = None
    gflops: float | None = None
    rel_err: float | None = None
    max_abs_err: float | None = None
    tolerance: float | None = None
    verified: bool = False
    peer: str | None = None
    peer_ratio: float | None = None
    speedup_prev: float | None = None
    pct_peak: float | None = None
    model: dict = field(default_factory=dict)
    bw_util_model: float | None = None
    bw_util_compulsory: float | None = None
    clock: dict | None = None
    l2_mode: str | None = None
    # produced only by some runs: absent from the JSON when None
    late: int | None = None  # timed samples where the GPU waited on the host's launch (Timing.late)
    registers: int | None = None
    spills: int | None = None
    smem_static: int | None = None
    smem_bytes: int | None = None
    call_host_us: float | None = None  # host time of one gemmlab.matmul call with this kernel (small problems)
    interleaved: dict | None = None  # the kernel and its peer timed launch by launch
    blocks: dict | None = None  # ... and in alternating blocks at steady power (bench --blocks)
    prev_kernel: str | None = None
    simulator: list | None = None  # no GPU: each shape the simulator ran
    recipe_err: float | None = None  # block-scaled FP8: DeepGEMM's measure against the unquantized product
    recipe_tolerance: float | None = None
    peer_note: str | None = None  # the ratio is against another precision's peer (FALLBACK_PEERS), and why
    variant_of: str | None = None  # bench --variant: the registered kernel whose parameters this one changes
    variant_gain: float | None = None  # ... its speedup over the registered kernel in the same run
    out_dtype: str | None = None  # C's dtype as the kernel wrote it (the remodel's C bytes)
    variant_interleaved: dict | None = None  # ... the two timed launch by launch, which gives variant_gain
    extra: dict = field(default_factory=dict)  # what later commands added to a saved record (profile counters)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k

    def fail(self, status: Status, reason: str) -> None:
        self.status, self.reason = status, str(reason)

    def update(self, values: dict[str, Any]) -> None:
        """Fields from a summary (timing, verification), named as the record names them."""
        for name, value in values.items():
            setattr(self, name, value)

    def to_json(self) -> dict:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "extra" or (f.name in _OPTIONAL and value is None):
                continue
            out[f.name] = value.value if isinstance(value, Status) else value
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, data: dict) -> "BenchRecord":
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
        if known.get("status") is not None:
            known["status"] = Status(known["status"])
        return cls(**known, extra={k: v for k, v in data.items() if k not in names})
