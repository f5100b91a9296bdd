"""Reading a saved results JSON: grouping, the roofs of each precision, peers, and measured traffic.

Everything the report shows is computed here from the JSON alone, so the Markdown tables and the figures agree
and a report can be re-rendered on any machine. The one rule that matters: a kernel is compared only with the
peer of its own precision, found in the same results at the same shape. A stored ``peer_ratio`` whose peer is
missing or computes another precision is not shown: an FP32 kernel against a tensor-core peer says nothing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from gemmlab.problem import PRECISIONS
from gemmlab.results import RECORD_FIELDS, load, load_results  # noqa: F401 (the report's readers)

PRECISION_ORDER = {name: p.order for name, p in PRECISIONS.items()}
PRECISION_LABEL = {name: p.label for name, p in PRECISIONS.items()}
_BACKEND_ORDER = {"cpu": 0, "numba": 1, "cuda": 2, "peer": 3}

Shape = tuple[int, int, int]


def shape_of(rec: dict) -> Shape:
    return (int(rec["m"]), int(rec["n"]), int(rec["k"]))


def shape_label(shape: Shape) -> str:
    return "x".join(str(d) for d in shape)


def status(rec: dict) -> str:
    return str(rec.get("status") or "").lower()


def is_timed(rec: dict) -> bool:
    """A record with a trustworthy time: verified and measured. A failed kernel is never timed."""
    return status(rec) == "ok" and bool(rec.get("median_ms"))


def is_gpu(rec: dict) -> bool:
    return rec.get("backend") != "cpu"


def sort_key(rec: dict):
    level = rec.get("level")
    return (_BACKEND_ORDER.get(rec.get("backend"), 9), level if level is not None else 99, rec.get("kernel", ""))


def precisions(records: Iterable[dict]) -> list[str]:
    return sorted({r.get("precision", "fp32") for r in records}, key=lambda p: PRECISION_ORDER.get(p, 9))


def shapes(records: Iterable[dict]) -> list[Shape]:
    return sorted({shape_of(r) for r in records})


def group(records: Iterable[dict], precision: str, shape: Shape) -> list[dict]:
    return sorted((r for r in records if r.get("precision") == precision and shape_of(r) == shape), key=sort_key)


def tflops(rec: dict) -> float | None:
    if rec.get("tflops") is not None:
        return float(rec["tflops"])
    if rec.get("median_ms") and rec.get("model", {}).get("flops"):
        return rec["model"]["flops"] / (rec["median_ms"] * 1e-3) / 1e12
    return None


def flops(rec: dict) -> float:
    model = rec.get("model") or {}
    return float(model.get("flops") or 2 * rec["m"] * rec["n"] * rec["k"])


# -- peers ----------------------------------------------------------------------------------------------------
def peer_record(rec: dict, records: Iterable[dict], same_run: bool = False) -> dict | None:
    """The record of ``rec``'s peer at the same shape and the same precision, in the same layout, or None; with
    ``same_run``, only from the run that timed ``rec`` (a file of runs merged by --append: each record's ``run``)."""
    name = rec.get("peer")
    if not name or name == rec.get("kernel"):
        return None
    for other in records:
        if other.get("kernel") == name and shape_of(other) == shape_of(rec) and \
                other.get("layout") == rec.get("layout") and (not same_run or other.get("run") == rec.get("run")):
            return other if other.get("precision") == rec.get("precision") else None
    return None


def peer_ratio_own_medians(rec: dict, records: list[dict]) -> float | None:
    """Peer median / kernel median, each from its own timing, where the record also has an interleaved timing
    (otherwise peer_ratio already is this). Interleaving cancels drift, but at sub-millisecond launches each one
    starts in the power state its predecessor left: the two ratios bracket the comparison."""
    peer = peer_record(rec, records, same_run=True)
    if peer is None or not is_timed(peer) or not is_timed(rec) or not rec.get("interleaved"):
        return None
    return peer["median_ms"] / rec["median_ms"]


def peer_ratio_blocks(rec: dict) -> float | None:
    """Peer / kernel median of block medians, where the run timed the two in alternating blocks (bench --blocks):
    each block settles at the clock and power its own launches set, so this ratio compares steady states."""
    blocks = rec.get("blocks")
    return blocks["ratio"] if blocks and blocks.get("ratio") else None


def peer_ratio(rec: dict, records: list[dict]) -> float | None:
    """Peer time / kernel time (above 1: faster than the peer), only against a timed peer of the same precision:
    from the two's interleaved timing where the run made one (both sampled through the same interval, so clock
    drift cancels: the record's own, whichever run its peer's record is of now), else from their own medians, the
    peer's of the same run."""
    peer = peer_record(rec, records)
    if peer is None or not is_timed(peer) or not is_timed(rec):
        return None
    paired = rec.get("interleaved")
    if paired and paired.get("kernel_ms") and paired.get("peer_ms"):
        return paired["peer_ms"] / paired["kernel_ms"]
    peer = peer_record(rec, records, same_run=True)
    return peer["median_ms"] / rec["median_ms"] if peer is not None and is_timed(peer) else None


# -- roofs ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Roofs:
    """The ceilings of one precision: datasheet and, where the run measured them, measured."""

    precision: str
    device: str
    peak_tflops: float | None  # datasheet dense peak of this precision
    dram_gbs: float | None  # datasheet DRAM bandwidth
    measured_bw_gbs: float | None  # device-to-device copy in the same run
    measured_tflops: float | None  # cuBLAS FP32 at its ceiling shape; FP32 only

    @property
    def ridge(self) -> float | None:
        """FLOP/byte where the datasheet memory roof meets the datasheet compute roof."""
        if self.peak_tflops and self.dram_gbs:
            return self.peak_tflops * 1e12 / (self.dram_gbs * 1e9)
        return None

    @property
    def measured_ridge(self) -> float | None:
        if self.measured_tflops and self.measured_bw_gbs:
            return self.measured_tflops * 1e12 / (self.measured_bw_gbs * 1e9)
        return None

    @property
    def bw_for_util(self) -> float | None:
        """The bandwidth utilization is taken against: the measured copy if the run has one, else the datasheet."""
        return self.measured_bw_gbs or self.dram_gbs

    def attainable(self, intensity: float) -> float | None:
        if not (self.peak_tflops and self.dram_gbs):
            return None
        return min(self.peak_tflops, self.dram_gbs * 1e9 * intensity / 1e12)


def device_spec(results: dict) -> dict:
    env = results.get("env") or {}
    spec = env.get("device_spec")
    if spec:
        return spec
    gpu = env.get("gpu") or {}
    if gpu.get("name"):
        try:
            from gemmlab.analysis.roofline import device_spec as lookup

            return lookup(gpu["name"]).as_dict()
        except Exception:
            pass
    return {}


def roofs(results: dict, precision: str) -> Roofs:
    spec = device_spec(results)
    ceilings = (results.get("env") or {}).get("ceilings") or {}
    # the measured compute ceiling is cuBLAS SGEMM: FP32 FFMA, never a roof for the tensor-core precisions
    sgemm_roof = precision in PRECISIONS and PRECISIONS[precision].fp32_multiply
    peak = spec.get(f"{precision}_tflops")
    if peak is None and isinstance(spec.get("tflops"), dict):
        peak = spec["tflops"].get(precision)
    return Roofs(
        precision=precision,
        device=str(spec.get("name") or ((results.get("env") or {}).get("gpu") or {}).get("name") or "unknown GPU"),
        peak_tflops=float(peak) if peak else None,
        dram_gbs=float(spec["dram_gbs"]) if spec.get("dram_gbs") else None,
        measured_bw_gbs=float(ceilings["copy_bw_gbs"]) if ceilings.get("copy_bw_gbs") else None,
        measured_tflops=float(ceilings["cublas_fp32_tflops"]) if sgemm_roof and ceilings.get(
            "cublas_fp32_tflops") else None,
    )


def peak_share(rec: dict) -> tuple[str, int]:
    """The precision whose units do a record's arithmetic and how many of their operations one multiply-add takes:
    its kernel's (tc7's FP32 multiply-adds are three TF32 products each), else, for a kernel not registered here (a
    renamed level), the record's own precision. The model's compute level holds the resulting rate but not the
    units it came from, so the registry names them."""
    from gemmlab.errors import UnknownKernelError
    from gemmlab.kernels.registry import get_kernel

    try:
        return get_kernel(rec.get("variant_of") or rec["kernel"]).peak_share()
    except UnknownKernelError:
        return str(rec.get("precision") or "fp32"), 1


def peak_label(units: str, ops: int) -> str:
    """A peak's name: its units' precision ('TF32'), over the operations a multiply-add takes where that is more
    than one ('TF32 / 3')."""
    return PRECISION_LABEL.get(units, units) + (f" / {ops}" if ops > 1 else "")


def own_peak_tflops(results: dict, rec: dict) -> float | None:
    """The datasheet dense peak a record's % of peak is against, as bench's ``pct_peak`` takes it: the peak of the
    units its arithmetic runs on over the operations one multiply-add takes there (tc7: TF32's / 3)."""
    units, ops = peak_share(rec)
    peak = roofs(results, units).peak_tflops
    return peak / ops if peak else None


def bw_util_model(rec: dict, bw_gbs: float | None) -> float | None:
    """The seeds' bandwidth utilization: the bytes the record's model counts over its median time, as a percentage
    of ``bw_gbs``. Taken from the model the record holds now, never bench's stored ``bw_util_model``: that one was
    of the model at bench time (a remodel rewrites the model) and of that run's bandwidth (the datasheet's, for a run
    appended with --no-ceilings)."""
    total = modeled_bytes(rec)
    if not total or not bw_gbs or not rec.get("median_ms"):
        return None
    return 100 * total / (rec["median_ms"] * 1e-3) / (bw_gbs * 1e9)


# -- measured traffic -----------------------------------------------------------------------------------------
def profile_of(rec: dict) -> dict | None:
    prof = rec.get("profile")
    return prof if isinstance(prof, dict) else None


def profiled(rec: dict) -> bool:
    prof = profile_of(rec)
    return bool(prof) and prof.get("status", "ok") == "ok" and dram_bytes(rec) is not None


def _metric(prof: dict, key: str, metric: str) -> float | None:
    if prof.get(key) is not None:
        return float(prof[key])
    raw = prof.get("metrics") or {}
    return float(raw[metric]) if raw.get(metric) is not None else None


def dram_read_bytes(rec: dict) -> float | None:
    prof = profile_of(rec)
    return _metric(prof, "dram_read_bytes", "dram__bytes_read.sum") if prof else None


def dram_write_bytes(rec: dict) -> float | None:
    prof = profile_of(rec)
    return _metric(prof, "dram_write_bytes", "dram__bytes_write.sum") if prof else None


def dram_bytes(rec: dict) -> float | None:
    prof = profile_of(rec)
    if not prof or prof.get("status", "ok") != "ok":
        return None
    if prof.get("dram_bytes") is not None:
        return float(prof["dram_bytes"])
    read, write = dram_read_bytes(rec), dram_write_bytes(rec)
    if read is None and write is None:
        return None
    return (read or 0.0) + (write or 0.0)


def l2_bytes(rec: dict) -> float | None:
    prof = profile_of(rec)
    return _metric(prof, "l2_bytes", "lts__t_bytes.sum") if prof else None


def modeled_bytes(rec: dict) -> float | None:
    model = rec.get("model") or {}
    read, write = model.get("modeled_read_bytes"), model.get("modeled_write_bytes")
    if read is None and write is None:
        return None
    return float(read or 0.0) + float(write or 0.0)


def modeled_intensity(rec: dict) -> float | None:
    model = rec.get("model") or {}
    if model.get("modeled_intensity"):
        return float(model["modeled_intensity"])
    total = modeled_bytes(rec)
    return flops(rec) / total if total else None


def measured_intensity(rec: dict) -> float | None:
    """FLOPs over the DRAM bytes ncu measured for one launch."""
    total = dram_bytes(rec)
    return flops(rec) / total if total else None


def dram_util_measured(rec: dict, bw_gbs: float | None) -> float | None:
    """Measured DRAM bytes over the benchmark's median time, as a percentage of ``bw_gbs``."""
    total = dram_bytes(rec)
    if total is None or not bw_gbs or not rec.get("median_ms"):
        return None
    return 100 * total / (rec["median_ms"] * 1e-3) / (bw_gbs * 1e9)


def attach_profiles(results: dict) -> list[dict]:
    """Records with any unattached profiles (``results["profiles"]``, from ``gemmlab profile --json`` on a
    kernel the run did not time) merged in, so the traffic table shows them too."""
    records = [dict(r) for r in results.get("records", [])]
    index = {(r.get("kernel"), shape_of(r)): r for r in records}
    for prof in results.get("profiles") or []:
        key = (prof.get("kernel"), (prof["problem"]["m"], prof["problem"]["n"], prof["problem"]["k"])
               if prof.get("problem") else None)
        rec = index.get(key)
        if rec is not None and not profile_of(rec):
            rec["profile"] = prof
    return records


def fmt(value: Any, digits: int = 3) -> str:
    """A number with ``digits`` significant figures, or an em dash for nothing."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    v = float(value)
    if v == 0:
        return "0"
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    return f"{v:#.{digits}g}".rstrip(".")


def fmt_bytes(value: float | None) -> str:
    if value is None:
        return "—"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(value) >= scale:
            return f"{fmt(value / scale)} {unit}"
    return f"{value:.0f} B"


# -- verify results -------------------------------------------------------------------------------------------
_CHECK_DETAIL = re.compile(r"rel err (\S+) \(tol (\S+)\), (\w+)$")


def verify_records(results: dict) -> list[dict]:
    """Verify records with rel_err, tolerance and where filled in: files written before verify kept those fields
    have them only in the detail text ("rel err 2.0e-07 (tol 1e-05), gpu")."""
    out = []
    for rec in results.get("records", []):
        rec = dict(rec)
        match = _CHECK_DETAIL.match(str(rec.get("detail") or ""))
        if match and rec.get("rel_err") is None:
            rec.update(rel_err=float(match[1]), tolerance=float(match[2]), where=match[3])
        if rec.get("where") is None and rec["shape"] == "sanitize":
            rec["where"] = "compute-sanitizer"
        out.append(rec)
    return out
