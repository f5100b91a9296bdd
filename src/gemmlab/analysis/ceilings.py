"""The roofs of each memory level and of each precision's arithmetic, for the GPU a record ran on.

Where a ceilings JSON measured on that GPU is given (``gemmlab roofline --measure --json``), its figures are the
roofs; every figure it lacks, and every figure of a GPU never measured, comes from the datasheet, and the record
says which (``source``). Bandwidths are bytes per second; the SM-side roofs (shared memory, arithmetic) are per SM
and clock, so a record's own clock scales them: a kernel timed at 1500 MHz is held to the roofs of 1500 MHz.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from gemmlab.cache import cache_root, read_json
from gemmlab.device import SHIPPED_GPU
from gemmlab.errors import GemmlabError

# the figures a ceilings JSON may carry, and the level each one roofs
LEVEL_KEYS = {"dram": "dram_gbs", "l2": "l2_gbs", "smem": "smem_bytes_per_clk"}


class CeilingsError(GemmlabError):
    """A ceilings file that cannot be read or is for another GPU."""


@dataclass(frozen=True)
class Ceilings:
    gpu: str
    sm_count: int
    max_clock_mhz: float
    l2_bytes: int
    dram_gbs: float  # DRAM read + write bandwidth
    l2_gbs: float  # L2 -> SM read bandwidth
    smem_bytes_per_clk: float  # per SM: the L1 / shared-memory data path
    flop_per_clk: dict  # per SM, per precision
    seed_tflops: dict  # the datasheet's dense peaks: the seeds' compute roof
    source: dict = field(default_factory=dict)  # level or precision -> "datasheet", "assumed" or "measured"
    origin: str = "datasheet"  # where the measured figures come from (a file and when it was measured)
    memory_bytes: int = 0  # device memory (0: unknown): the largest problem a model is made for
    seed_dram_gbs: float = 0.0  # the datasheet's DRAM bandwidth, which a measured dram_gbs replaces: the seeds' roof

    def compute_tflops(self, precision: str, clock_mhz: float | None = None) -> float:
        clock = clock_mhz or self.max_clock_mhz
        return self.sm_count * self.flop_per_clk[precision] * clock * 1e6 / 1e12

    def smem_gbs(self, clock_mhz: float | None = None) -> float:
        return self.sm_count * self.smem_bytes_per_clk * (clock_mhz or self.max_clock_mhz) * 1e6 / 1e9

    def describe(self) -> str:
        """One line: each roof and where it comes from."""
        parts = [f"DRAM {self.dram_gbs:,.0f} GB/s ({self.source.get('dram')})",
                 f"L2 {self.l2_gbs:,.0f} GB/s ({self.source.get('l2')})",
                 f"shared memory {self.smem_bytes_per_clk:.0f} B/clk/SM ({self.source.get('smem')})"]
        parts += [f"{p.upper()} {v:g} FLOP/clk/SM ({self.source.get(p)})" for p, v in self.flop_per_clk.items()]
        return f"{self.gpu}: " + ", ".join(parts) + (f"; measured: {self.origin}" if self.origin != "datasheet" else "")

    def as_dict(self) -> dict:
        return {"gpu": self.gpu, "sm_count": self.sm_count, "max_clock_mhz": self.max_clock_mhz,
                "l2_bytes": self.l2_bytes, "dram_gbs": self.dram_gbs, "l2_gbs": self.l2_gbs,
                "smem_bytes_per_clk": self.smem_bytes_per_clk, "flop_per_clk": dict(self.flop_per_clk),
                "seed_tflops": dict(self.seed_tflops), "source": dict(self.source), "origin": self.origin}


def datasheet(dev) -> Ceilings:
    """The roofs of a DeviceSpec from its datasheet figures (the L2's is an assumption: see DeviceSpec)."""
    source = {"dram": "datasheet", "l2": "assumed", "smem": "datasheet", **{p: "datasheet" for p in dev.flop_per_clk}}
    return Ceilings(dev.name, dev.sm_count, dev.max_clock_mhz, dev.l2_bytes, dev.dram_gbs,
                    dev.l2_bytes_per_clk * dev.max_clock_mhz * 1e6 / 1e9, dev.smem_bytes_per_clk,
                    dict(dev.flop_per_clk), dict(dev.tflops), source, memory_bytes=dev.memory_bytes,
                    seed_dram_gbs=dev.dram_gbs)


def with_measured(base: Ceilings, measured: dict, origin: str) -> Ceilings:
    """``base`` with every figure ``measured`` carries (the keys of a ceilings JSON) in its place."""
    source, values = dict(base.source), {}
    for level, key in LEVEL_KEYS.items():
        if measured.get(key):
            values[key] = float(measured[key])
            source[level] = "measured"
    flops = dict(base.flop_per_clk)
    for p, v in (measured.get("flop_per_clk") or {}).items():
        if v:
            flops[p] = float(v)
            source[p] = "measured"
    for key in ("sm_count", "max_clock_mhz", "l2_bytes"):
        if measured.get(key):
            values[key] = type(getattr(base, key))(measured[key])
    return replace(base, **values, flop_per_clk=flops, source=source, origin=origin)


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _check_figures(measured, path) -> None:
    """Refuse a file that is not a ceilings JSON, or whose figures are not positive numbers: taken on trust, any
    JSON (a results file, ``{}``) printed as "measured" while every roof stayed the datasheet's."""
    wanted = ", ".join([*LEVEL_KEYS.values(), "flop_per_clk"])
    if not isinstance(measured, dict):
        raise CeilingsError(f"{path} is not a ceilings file: a JSON object with {wanted} (gemmlab roofline --measure "
                            "--json writes one)")
    if "records" in measured:
        raise CeilingsError(f"{path} is a results file, not ceilings: give --ceilings the JSON that gemmlab roofline "
                            "--measure --json writes")
    flops = measured.get("flop_per_clk")
    if flops is not None and not isinstance(flops, dict):
        raise CeilingsError(f"{path}: flop_per_clk must map precisions to FLOP per clock, got {flops!r}")
    figures = {key: measured[key] for key in LEVEL_KEYS.values() if key in measured}
    figures.update({f"flop_per_clk.{p}": v for p, v in (flops or {}).items()})
    if not figures:
        raise CeilingsError(f"{path} holds none of the figures a ceilings file carries ({wanted}): nothing to measure "
                            "the roofs by")
    figures.update({key: measured[key] for key in ("sm_count", "max_clock_mhz", "l2_bytes") if key in measured})
    bad = [f"{key}={value!r}" for key, value in figures.items() if not _positive(value)]
    if bad:
        raise CeilingsError(f"{path}: {', '.join(bad)}: every figure must be a positive number")


def load(path: str | os.PathLike, base: Ceilings) -> Ceilings:
    """``base`` (the datasheet of the GPU the records ran on) with the figures of the ceilings JSON at ``path``."""
    from gemmlab.errors import ResultsFileError
    from gemmlab.results import read_text

    try:
        measured = json.loads(read_text(path))
    except (ResultsFileError, ValueError) as exc:
        raise CeilingsError(f"cannot read ceilings {path}: {exc}") from None
    _check_figures(measured, path)
    gpu = measured.get("gpu")
    if gpu and base.gpu and _board(gpu) != _board(base.gpu):
        raise CeilingsError(f"{path} holds ceilings measured on {gpu}, the records ran on {base.gpu}")
    when = measured.get("time") or "undated"
    return with_measured(base, measured, f"{path} ({when}, git {measured.get('git_sha') or '?'})")


def _board(name: str) -> str:
    """The devices table's key of a GPU named as the driver or the table names it (the H100's driver name and its
    table name share no word but "H100"); a board the table lacks is its own name, matched whole."""
    from gemmlab.analysis.roofline import device_spec

    try:
        return device_spec(name).key
    except GemmlabError:
        return name.strip().lower()


LEVEL_KEYS_BY_NAME = {key: level for level, key in LEVEL_KEYS.items()}


def stored_path(gpu_name: str) -> Path:
    """Where ``gemmlab roofline --measure`` keeps the last measurement of a GPU in gemmlab's cache: one file per board
    (_board), so the driver's name that measured it and the devices table's name that reads it find the same file."""
    return _cache_file(_board(gpu_name))


def _cache_file(name: str) -> Path:
    return cache_root() / "ceilings" / (re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_") + ".json")


# The roofs measured on the GPU whose dispatch table ships with gemmlab (results/h200/ceilings.json, `gemmlab roofline
# --measure`): what that GPU reads where its machine stores no measurement of its own. The datasheet's L2 bandwidth is
# an assumption, two thirds of the measured one
SHIPPED = Path(__file__).resolve().parents[1] / "data" / "ceilings-h200.json"


def stored_ceilings(base: Ceilings) -> Ceilings:
    """``base`` with the figures of this GPU's last stored measurement in place of those ``base`` did not measure
    itself (a copy bandwidth measured in the same run stays); for the H200 without one, the measurement shipped with
    gemmlab (SHIPPED)."""
    where = stored_path(base.gpu)
    stored = read_json(where)
    if not stored:  # where a measurement before the files were keyed by board kept it: under the name it was read by
        where = _cache_file(base.gpu)
        stored = read_json(where)
    if not stored and base.gpu == SHIPPED_GPU.name:
        stored, where = read_json(SHIPPED), f"gemmlab's data/{SHIPPED.name}"
    if not stored:
        return base
    own = {level for level, source in base.source.items() if source == "measured"}
    keep = {k: v for k, v in stored.items() if LEVEL_KEYS_BY_NAME.get(k) not in own}
    origin = f"{where} ({stored.get('time', 'undated')})"
    return with_measured(base, keep, origin if base.origin == "datasheet" else f"{base.origin}; {origin}")
