"""The roofline model of the seeds, for every kernel, and the hierarchy beneath it that bounds each measurement.

The seeds' view (kept in every record as ``modeled_read_bytes``, ``modeled_intensity``, ``seed_bound``,
``seed_predicted_tflops``): attainable performance at intensity I is min(P_peak, BW × I), I = FLOPs over every
global byte a thread loads, as if no cache served any; the ridge point I = P_peak / BW separates memory-bound from
compute-bound. P_peak and BW come from one source (``seed_roof``): the datasheet's, or both measured where the
roofs measured both, never one of each. The seeds' worked example: A100, 1555 GB/s and 19.5 TFLOPS FP32, ridge ≈ 12.5
FLOP/byte. Each precision has its own compute roof: the seeds' cuBLAS line (4096³ in 0.8 ms, ≈172 TFLOPS) is nine
times the A100's FP32 peak and past its dense TF32 peak (156, DEVICES["a100"]): a half-precision (FP16/BF16)
tensor-core figure, not an FP32 or TF32 one. The seeds' own V1 figure (1150 GFLOPS) passes their own roof for it
(0.25 × 1555 GB/s): the A100's caches served V1's re-reads too (gemmlab chapter judges each of the seeds' claims).

The hierarchical view (``dram_bytes``, ``l2_bytes``, ``smem_bytes``, ``levels``, ``bound``, ``predicted_tflops``):
each level's bytes over its own roof, and the arithmetic over the precision's peak at the clock the record held;
the predicted time is the largest of them, and ``bound`` names it. L2 bytes are the tile re-reads the seeds count
(L1 serves the naive kernel's), DRAM bytes what the L2 cannot keep of them, in the kernel's own tile order
(analysis/hierarchy.py), shared memory what the warps read and the staging writes; ``dram_bytes_staggered`` the
same order where the CTAs that share an SM run out of step, which their scheduling, not the model, decides. A roof
is only a roof if no measurement passes it: ``gemmlab roofline --check`` says whether one does.
"""
from __future__ import annotations

import math

from dataclasses import dataclass, field

from gemmlab.analysis import hierarchy
from gemmlab.analysis.ceilings import Ceilings, datasheet, with_measured
from gemmlab.errors import GemmlabError, MissingDependencyError, SizeLimitError
from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.plan import Layout, copies_to
from gemmlab.kernels.spec import SM_COUNT
from gemmlab.problem import PRECISIONS, Problem, require_fits


@dataclass(frozen=True)
class DeviceSpec:
    key: str
    name: str
    dram_gbs: float  # datasheet DRAM bandwidth, GB/s
    # datasheet dense peak per peak key (a precision's ``peak_key``: the units that do its arithmetic), the seeds'
    # compute roof
    peak_tflops_of: dict
    note: str = ""
    sm_count: int = 0
    max_clock_mhz: float = 0.0
    l2_bytes: int = 0
    # dense FLOPs per SM and clock per peak key: FP32 two per FMA lane; the tensor cores' rates are the ones gemmlab
    # timeline measures tc4's k-tiles at (1,024 cycles for 128x256x64 BF16). Hopper's datasheet peaks are quoted at
    # a lower clock than the SMs' maximum.
    flop_per_clk_of: dict = field(default_factory=dict)
    smem_bytes_per_clk: float = 128.0  # per SM: 32 banks of 4 bytes
    # L2 -> SM bytes per clock for the whole GPU: the A100 whitepaper's figure; none is published for Hopper, so
    # there it is an assumption until `gemmlab roofline --measure` replaces it
    l2_bytes_per_clk: float = 5120.0
    memory_bytes: int = 0  # the datasheet's device memory: a problem whose operands exceed it has no model here
    # compute capability, as gemmlab.device.GPUInfo names it: what a kernel's unsupported() reads of a GPU (wgmma and
    # TMA exist on 9.0 alone), so the roofline of a device leaves out the kernels that cannot run on it
    cc: tuple[int, int] = (0, 0)

    @property
    def tflops(self) -> dict:
        """The datasheet dense peak of each precision this device has units for, from its peak key."""
        return _per_precision(self.peak_tflops_of)

    @property
    def flop_per_clk(self) -> dict:
        """Dense FLOPs per SM and clock of each precision this device has units for."""
        return _per_precision(self.flop_per_clk_of)

    def peak_tflops(self, precision: str) -> float:
        return self.tflops[precision]

    def ridge(self, precision: str = "fp32") -> float:
        """FLOP/byte where the memory roof meets the compute roof."""
        return self.peak_tflops(precision) * 1e12 / (self.dram_gbs * 1e9)

    def attainable_tflops(self, intensity: float, precision: str = "fp32", bw_gbs: float | None = None) -> float:
        bw = bw_gbs or self.dram_gbs
        return min(self.peak_tflops(precision), bw * 1e9 * intensity / 1e12)

    @classmethod
    def from_dict(cls, d: dict) -> "DeviceSpec":
        """The spec ``as_dict`` wrote (a results file's ``env.device_spec``), its per-precision figures back under
        their peak keys."""
        per_clk, peaks = {}, {}
        for p in PRECISIONS.values():
            if p.name in d.get("flop_per_clk", {}):
                per_clk[p.peak_key] = d["flop_per_clk"][p.name]
            if f"{p.name}_tflops" in d:
                peaks[p.peak_key] = d[f"{p.name}_tflops"]
        return cls(d["key"], d["name"], d["dram_gbs"], peaks, d.get("note", ""), d.get("sm_count", 0),
                   d.get("max_clock_mhz", 0.0), d.get("l2_bytes", 0), per_clk, d.get("smem_bytes_per_clk", 128.0),
                   d.get("l2_bytes_per_clk", 5120.0), d.get("memory_bytes", 0), tuple(d.get("cc", (0, 0))))

    def as_dict(self) -> dict:
        return {"key": self.key, "name": self.name, "dram_gbs": self.dram_gbs,
                **{f"{p}_tflops": v for p, v in self.tflops.items()}, "note": self.note,
                "sm_count": self.sm_count, "max_clock_mhz": self.max_clock_mhz, "l2_bytes": self.l2_bytes,
                "flop_per_clk": dict(self.flop_per_clk), "smem_bytes_per_clk": self.smem_bytes_per_clk,
                "l2_bytes_per_clk": self.l2_bytes_per_clk, "memory_bytes": self.memory_bytes, "cc": list(self.cc)}


def _per_precision(by_key: dict) -> dict:
    """{precision: by_key[its peak key]} over the precision records whose units ``by_key`` has, in their order."""
    return {p.name: by_key[p.peak_key] for p in PRECISIONS.values() if p.peak_key in by_key}


_HOPPER_PEAKS = {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp8": 1979.0}
_HOPPER = {"fp32": 256, "tf32": 2048, "bf16": 4096, "fp8": 8192}
DEVICES: dict[str, DeviceSpec] = {
    "a100": DeviceSpec("a100", "NVIDIA A100 (the seeds' example)", 1555.0,
                       {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0}, "40 GB HBM2, the seeds' numbers",
                       108, 1410.0, 40 * 2**20, {"fp32": 128, "tf32": 1024, "bf16": 2048},
                       memory_bytes=40 * 2**30, cc=(8, 0)),
    "h100": DeviceSpec("h100", "NVIDIA H100 SXM", 3350.0, dict(_HOPPER_PEAKS), "80 GB HBM3", 132, 1980.0, 50 * 2**20,
                       dict(_HOPPER), memory_bytes=80 * 2**30, cc=(9, 0)),
    "h200": DeviceSpec("h200", "NVIDIA H200", 4800.0, dict(_HOPPER_PEAKS), "141 GB HBM3e; same SMs as H100 SXM", 132,
                       1980.0, 60 * 2**20, dict(_HOPPER), memory_bytes=141 * 2**30, cc=(9, 0)),
}


# The names the driver reports for the boards whose figures DEVICES holds. A name is matched whole: one that merely
# contains a key is often another board of the chip with other figures (an H100 PCIe: 114 SMs, 2,000 GB/s; an H100
# NVL, an H200 NVL: other clocks and bandwidths; an A100 80GB: about 2,000 GB/s, not the 40 GB's 1,555)
DRIVER_NAMES = {"NVIDIA H200": "h200", "NVIDIA H100 80GB HBM3": "h100",
                "NVIDIA A100-SXM4-40GB": "a100", "NVIDIA A100-PCIE-40GB": "a100"}


def device_spec(name: str) -> DeviceSpec:
    """Look a device up by key, by its own name or by the name the driver reports ('NVIDIA H200' -> h200); any other
    name, a board of a known chip included, has no roofline data here."""
    key = name.strip().lower()
    names = {**{n.lower(): k for n, k in DRIVER_NAMES.items()}, **{d.name.lower(): k for k, d in DEVICES.items()}}
    if key in DEVICES or key in names:
        return DEVICES[names.get(key, key)]
    kin = [k for k in DEVICES if k in key.replace(" ", "").replace("-", "")]
    other = (f" (not the {DEVICES[kin[0]].name}, whose figures gemmlab has: another board of that chip, with other "
             "SMs, clocks or bandwidth)") if kin else ""
    raise GemmlabError(f"no roofline data for GPU {name!r}{other}; known: {', '.join(DEVICES)}, as the driver names "
                       f"them {', '.join(DRIVER_NAMES)}")


# FP32 FMA lanes an SM has by compute capability (the CUDA C++ Programming Guide's table of arithmetic
# throughput): 64 on these, 128 on every other architecture since Maxwell
FP32_LANES_64 = {(6, 0), (7, 0), (7, 2), (7, 5), (8, 0)}
# the tensor cores' dense FLOPs per SM and clock of GA100 (the A100s, A800s and A30) and of GH100's full-rate boards,
# DEVICES' own figures; other architectures' boards differ (a GeForce part accumulates in FP32 at half its
# professional sibling's rate), so a board of theirs has no tensor roof here
TENSOR_FLOP_PER_CLK = {(8, 0): {p: DEVICES["a100"].flop_per_clk_of[p] for p in ("tf32", "bf16")},
                       (9, 0): {p: _HOPPER[p] for p in ("tf32", "bf16", "fp8")}}
# where a capability's boards do not all run at its rates, the names of those that do: an H20 is compute capability
# 9.0 with its tensor cores' rate cut to about a quarter of GH100's
TENSOR_BOARDS = {(9, 0): ("H100", "H800", "H200", "GH200")}


def _tensor_rates(info) -> dict:
    cc = tuple(info.cc)
    if cc in TENSOR_BOARDS and not any(board in info.name for board in TENSOR_BOARDS[cc]):
        return {}
    return dict(TENSOR_FLOP_PER_CLK.get(cc, {}))


def driver_spec(info) -> DeviceSpec:
    """The roofline device of a board DEVICES has no datasheet entry for (another board of a known chip included),
    from what its driver reports (a gemmlab.device.GPUInfo): its SMs, maximum SM clock, L2, memory and the memory's
    peak bandwidth; FP32 at two FLOPs a lane and clock over its SMs' lanes; the tensor cores only where its compute
    capability fixes their rates (TENSOR_FLOP_PER_CLK). The peaks are at the maximum clock, where a datasheet may
    quote a lower one."""
    if not info.memory_gbs:
        raise GemmlabError(f"no roofline data for GPU {info.name!r}: gemmlab has no datasheet entry for it, and "
                           "neither NVML nor the CUDA runtime reports its memory clock and bus width")
    per_clk = {"fp32": 2 * (64 if tuple(info.cc) in FP32_LANES_64 else 128), **_tensor_rates(info)}
    peaks = {p: info.sm_count * v * info.max_sm_clock_mhz * 1e6 / 1e12 for p, v in per_clk.items()}
    tensor = "" if len(per_clk) > 1 else "; no tensor-core roof (its rates vary among this architecture's boards)"
    note = (f"from the driver: {info.sm_count} SMs at {info.max_sm_clock_mhz:.0f} MHz, {info.memory_gbs:.0f} GB/s, "
            f"compute capability {info.cc[0]}.{info.cc[1]}{tensor}")
    return DeviceSpec("driver", info.name, info.memory_gbs, peaks, note, info.sm_count, info.max_sm_clock_mhz,
                      info.l2_bytes, per_clk, memory_bytes=info.total_mem_bytes, cc=tuple(info.cc))


def gpu_spec(info) -> DeviceSpec:
    """The roofline device of the GPU ``info`` describes: its datasheet entry, else its driver's figures."""
    try:
        return device_spec(info.name)
    except GemmlabError:
        return driver_spec(info)


def ceilings_for(dev: DeviceSpec, dram_gbs: float | None = None) -> Ceilings:
    """The datasheet roofs of ``dev``, with a DRAM bandwidth measured in the same run in place of its own."""
    base = datasheet(dev)
    if dram_gbs:
        base = with_measured(base, {"dram_gbs": dram_gbs}, "copy bandwidth measured in the same run")
    return base


@dataclass(frozen=True)
class KernelModel:
    """Both views of one kernel on one problem (see the module docstring); ``levels`` holds, per level, its
    bytes (FLOPs for compute), roof, source and time."""

    flops: int
    compulsory_bytes: int
    intensity: float  # FLOP per compulsory byte: the problem's best case
    # the seeds' cache-free view
    modeled_read_bytes: float
    modeled_write_bytes: float
    modeled_intensity: float  # FLOP per modeled global byte: this kernel's data reuse
    seed_ridge: float
    seed_roofs: str  # "datasheet" or "measured": where the seeds' peak and bandwidth both come from (seed_roof)
    seed_bound: str  # "memory" or "compute", at the modeled intensity
    seed_predicted_tflops: float  # the seeds' roofline ceiling at the modeled intensity
    basis: str
    # the hierarchical view
    dram_bytes: float  # the resident wave in step: the fewest the tile order allows, what the DRAM level counts
    # the CTAs that share an SM a fraction of a tile apart, one per SM in step (hierarchy.staggered_reads): the most
    # the wave's schedule costs; the same as dram_bytes for a persistent grid or one CTA per SM
    dram_bytes_staggered: float
    # which of the two a launch runs is the GPU's choice at run time, not in the kernel's tiles, order or occupancy
    # (docs/seeds.md), so the model's estimate of its DRAM bytes is their geometric mean: the one number off by at
    # most sqrt(staggered / in step) whichever schedule it runs (compared with ncu's dram__bytes; the DRAM roof
    # keeps the in-step count, the fewest bytes the order allows)
    dram_bytes_estimate: float
    l2_bytes: float
    smem_bytes: float  # the L1 / shared-memory data path: shared-memory bytes, or the naive kernel's L1 requests
    levels: dict
    bound: str  # "dram", "l2", "smem", "l1" or "compute": the level whose time is the largest
    predicted_ms: float
    predicted_tflops: float
    clock_mhz: float
    wave: int | None  # tiles resident at once
    ceilings: str  # where the roofs come from
    unmodeled: str = ""  # the spec's reason the kernel runs slower than this, where it names one

    def as_dict(self) -> dict:
        return dict(self.__dict__)


# The L2 model walks a launch's tiles in Python (hierarchy.dram_reads, about a microsecond and a hundred bytes a
# tile): past this many tiles a kernel's model would take seconds and hundreds of MB, so it is refused instead
MAX_WALK_TILES = 2**20


def runs_for(spec, problem: Problem, params: dict | None = None, sm_count: int = SM_COUNT):
    """The spec that runs ``problem`` on ``sm_count`` SMs: ``spec.for_problem``, or, for a record that names the
    parameters it ran with (a tuned level's tile; a wgmma or Gluon level's build from before a choice changed, such
    as tc4 FP8's clusters at short K or tc8's tile height), the spec of exactly those."""
    import dataclasses

    from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel

    runs = spec.for_problem(problem, sm_count)
    if params is None or dict(runs.params) == dict(params):
        return runs
    if getattr(spec, "make", None):
        return spec.make(spec.name, spec.level, spec.title, dict(params), spec.doc)
    if isinstance(runs, WgmmaKernel):
        return dataclasses.replace(runs, params=dict(params), whole_tiles=None, short_tile=None)
    if getattr(spec, "short_tile", None) is not None:  # a Gluon level's tile height, the record's
        return dataclasses.replace(runs, params=dict(params), short_tile=None)
    return runs


def resident_ctas(runs, problem: Problem, resources: dict | None = None) -> int:
    """CTAs one SM holds: threads and shared memory from the launch geometry, registers and static shared memory
    from ``resources`` (a record's ptxas report or ncu's launch counters), else from compiling the kernel. Limits
    not known are not applied (numba's registers before a GPU compiles it): more CTAs make larger waves and fewer
    DRAM bytes, so the DRAM roof stays a roof. A kernel without a geometry of its own (a peer) counts one."""
    resources = dict(resources or {})
    threads, smem = resources.get("threads"), resources.get("smem_dynamic", 0)
    try:
        geo = runs.launch_geometry(problem)
        threads, smem = geo.threads, geo.smem
    except Exception:  # a peer or CPU kernel: no geometry of its own
        pass
    if not threads:
        return 1
    if not resources.get("registers") and hasattr(runs, "compile"):
        try:
            report = runs.compile().report
            resources.setdefault("registers", report.registers)
            resources.setdefault("smem_static", report.smem_bytes)
        except Exception:  # no NVRTC here: the registers stay unknown
            pass
    return hierarchy.ctas_per_sm(int(threads), resources.get("registers"),
                                 int(smem or 0) + int(resources.get("smem_static") or 0))


def _per_sm_flops(walk, wave: int, sm_count: int, flops: float) -> float:
    """FLOPs of the busiest SM: whole tiles cannot be shared, so with T tiles over U places one takes ceil(T/U)."""
    if not walk.quantized:
        return flops / sm_count
    whole = walk.tiles - walk.split_tail
    if walk.wave is None:  # a grid of one CTA per tile: the SMs share the tiles, however many each holds
        return ceil_div(whole, sm_count) * walk.tile_flops
    per_unit = ceil_div(whole, wave) * walk.tile_flops + walk.split_tail * walk.tile_flops / wave
    return per_unit / walk.sms_per_tile


def seed_roof(ceilings: Ceilings, units: str, ops: int = 1) -> tuple[float, float, str]:
    """The seeds' single roof for arithmetic on the units of precision ``units`` (``ops`` of their operations a
    multiply-add): (peak TFLOPS, DRAM GB/s, their source). Both come from one source, so that their ridge is one:
    measured where ``ceilings`` measured this precision's arithmetic and DRAM both (the compute roof at the maximum
    clock), else the datasheet's dense peak over its DRAM bandwidth. A measured bandwidth under the datasheet's peak
    is neither ridge (H200 FP32: 16.4 FLOP/byte, where the datasheet's is 13.9 and the measured roofs' 16.2)."""
    if ceilings.source.get(units) == "measured" and ceilings.source.get("dram") == "measured":
        return ceilings.compute_tflops(units) / ops, ceilings.dram_gbs, "measured"
    return ceilings.seed_tflops[units] / ops, ceilings.seed_dram_gbs, "datasheet"


def model(spec, problem: Problem, ceilings: Ceilings | DeviceSpec, clock_mhz: float | None = None,
          resources: dict | None = None, params: dict | None = None, layout: Layout | None = None) -> KernelModel:
    """Both views of ``spec`` on ``problem`` under ``ceilings`` (a DeviceSpec: its datasheet's), at ``clock_mhz``
    (None: the maximum SM clock). ``resources`` (registers, static shared memory, threads) and ``params`` come from
    a saved record. ``layout``: the operands as handed over (bench --layout), None for the kernel's natural one; the
    kernel's bytes in the layout it reads them in, after the row-major copies of those it does not read in place."""
    if isinstance(ceilings, DeviceSpec):
        ceilings = ceilings_for(ceilings)
    if ceilings.memory_bytes:
        require_fits(problem, ceilings.memory_bytes, ceilings.gpu)
    runs = runs_for(spec, problem, params, ceilings.sm_count)
    copies, reads = (layout and copies_to(layout, runs.layouts)) or ((), None)
    traffic = runs.traffic(problem, ceilings.sm_count, reads).with_copies(problem, copies)
    if traffic.walk is not None and traffic.walk.tiles > MAX_WALK_TILES:
        raise SizeLimitError(f"{spec.name} at {problem.label()}: {traffic.walk.tiles:,} output tiles; the L2 model "
                             f"walks at most {MAX_WALK_TILES:,}")
    flops = problem.flops()
    intensity = traffic.intensity(problem)
    units, ops = spec.peak_share()  # tensor cores for an FP32 level built on TF32 products (tc7)
    if units not in ceilings.flop_per_clk:
        raise GemmlabError(f"{ceilings.gpu} has no {units} roof here, so {spec.name} has no model on it")
    seed_peak, seed_gbs, seed_roofs = seed_roof(ceilings, units, ops)
    ridge = seed_peak * 1e12 / (seed_gbs * 1e9)
    walk, wave = traffic.walk, None
    c_bytes = problem.output_bytes * problem.m * problem.n
    if walk is not None:
        wave = walk.wave or ceilings.sm_count * resident_ctas(runs, problem, resources)
        dram = hierarchy.dram_reads(walk, wave, ceilings.l2_bytes) + c_bytes
        staggered = hierarchy.staggered_reads(walk, ceilings.sm_count, ceilings.l2_bytes, wave) + c_bytes
        per_sm = _per_sm_flops(walk, wave, ceilings.sm_count, flops)
    else:  # each input once, C once; the pre-passes' bytes are a level of their own, below
        dram = staggered = traffic.total - traffic.prepass
        per_sm = flops / ceilings.sm_count
    l1_path = traffic.smem + traffic.l1
    levels = {
        "dram": {"bytes": dram, "gbs": ceilings.dram_gbs, "source": ceilings.source.get("dram")},
        # the pre-pass moves its DRAM bytes through L2 once, in its own launch
        "l2": {"bytes": traffic.l2 - traffic.prepass, "gbs": ceilings.l2_gbs, "source": ceilings.source.get("l2")},
        "l1" if traffic.l1 > traffic.smem else "smem": {
            "bytes": l1_path, "bytes_per_clk": ceilings.smem_bytes_per_clk * ceilings.sm_count,
            "source": ceilings.source.get("smem")},
        "compute": {"flops": flops, "per_sm_flops": per_sm, "flop_per_clk": ceilings.flop_per_clk[units] / ops,
                    "sm_count": ceilings.sm_count, "source": ceilings.source.get(units)},
    }
    in_step, most = dram + traffic.prepass, staggered + traffic.prepass
    if traffic.prepass:  # a launch of its own before the kernel: its time adds to the kernel's
        levels["prepass"] = {"bytes": traffic.prepass, "gbs": ceilings.dram_gbs, "source": ceilings.source.get("dram"),
                             "serial": True}
    body = dict(flops=flops, compulsory_bytes=problem.compulsory_bytes(), intensity=problem.intensity(),
                modeled_read_bytes=traffic.global_read, modeled_write_bytes=traffic.global_write,
                modeled_intensity=intensity, seed_ridge=ridge, seed_roofs=seed_roofs,
                seed_bound="memory" if intensity < ridge else "compute",
                seed_predicted_tflops=min(seed_peak, seed_gbs * 1e9 * intensity / 1e12),
                basis=traffic.basis, dram_bytes=in_step, dram_bytes_staggered=most,
                dram_bytes_estimate=in_step if most == in_step else math.sqrt(in_step * most),
                l2_bytes=traffic.l2, smem_bytes=l1_path,
                levels=levels, wave=wave, ceilings=ceilings.describe(), unmodeled=spec.unmodeled)
    return KernelModel(**at_clock(body, clock_mhz or ceilings.max_clock_mhz))


def at_clock(model: dict, clock_mhz: float) -> dict:
    """A model's levels timed at ``clock_mhz``: the bandwidths stay, the SM-side roofs (shared memory, arithmetic)
    scale with the clock. Returns the model with each level's ``ms``, ``bound``, ``predicted_ms`` and
    ``predicted_tflops`` filled in: what the harness calls once the timing says which clock the run held. The
    kernel's levels overlap, so the largest is its time; a ``serial`` level (a pre-pass launch) adds to it."""
    levels = {}
    for name, level in model["levels"].items():
        level = dict(level)
        if "gbs" in level:
            level["ms"] = level["bytes"] / (level["gbs"] * 1e9) * 1e3
        elif "bytes_per_clk" in level:
            level["ms"] = level["bytes"] / (level["bytes_per_clk"] * clock_mhz * 1e6) * 1e3
        else:
            level["ms"] = level["per_sm_flops"] / (level["flop_per_clk"] * clock_mhz * 1e6) * 1e3
            level["tflops"] = level["sm_count"] * level["flop_per_clk"] * clock_mhz * 1e6 / 1e12
        levels[name] = level
    overlapped = [name for name in levels if not levels[name].get("serial")]
    bound = max(overlapped, key=lambda name: levels[name]["ms"])
    predicted = levels[bound]["ms"] + sum(level["ms"] for level in levels.values() if level.get("serial"))
    return {**model, "levels": levels, "bound": bound, "predicted_ms": predicted,
            "predicted_tflops": model["flops"] / (predicted * 1e-3) / 1e12, "clock_mhz": clock_mhz}


def seed_examples() -> dict:
    """The seeds' worked numbers, computed: A100 ridge, naive intensity, square intensity N/6."""
    from gemmlab.kernels.spec import naive_traffic, tiled_traffic

    sq = Problem(4096, 4096, 4096)
    return {
        "a100_ridge": DEVICES["a100"].ridge("fp32"),
        "naive_intensity": sq.flops() / naive_traffic(sq).global_read,
        "square_intensity_4096": sq.intensity(),
        "tile32_intensity": sq.flops() / tiled_traffic(sq, 32, 32).global_read,
        "naive_redundancy_4096": naive_traffic(sq).global_read / (4 * (sq.m * sq.k + sq.k * sq.n)),
    }


def roofs_of(dev: DeviceSpec, results: dict | None = None, ceilings_path: str | None = None) -> Ceilings:
    """The roofs a kernel is modeled under: the datasheet of ``dev``, what a results file measured in its own run,
    then a ceilings JSON (``gemmlab roofline --measure --json``) on top."""
    from gemmlab.analysis.ceilings import load

    base = ceilings_for(dev)
    measured = ((results or {}).get("env") or {}).get("ceilings") or {}
    if measured:  # older runs measured the copy alone, as copy_bw_gbs
        base = with_measured(base, {**measured, "dram_gbs": measured.get("dram_gbs") or measured.get("copy_bw_gbs")},
                             "the run's own measurement (env.ceilings)")
    return load(ceilings_path, base) if ceilings_path else base


def listed_precisions() -> list:
    """The precisions any device has units for, in their order: the device table's columns (A100: — for FP8)."""
    return [p for p in PRECISIONS.values() if any(p.name in d.tflops for d in DEVICES.values())]


def refusal(spec, shape, dev: DeviceSpec) -> str | None:
    """Why ``dev`` runs no launch of GPU kernel ``spec`` at ``shape`` to model (None: it runs one): no units for its
    precision (an A100's FP8), an architecture the kernel cannot run on (wgmma and TMA on an A100), or a problem
    the kernel refuses (gemv2's and tc9's rows of A). A model of a launch that never runs would be a row of figures
    no measurement can check. A library this machine lacks (the Gluon levels' Triton) is no refusal: the roofline
    models the device, and the kernel runs there."""
    if spec.precision not in dev.tflops:
        if dev.key == "driver":  # its units may well exist: gemmlab does not know their rate on this board
            return f"{dev.name}: no {spec.precision} roof here (its tensor cores' rate is not known for this board)"
        return f"{dev.name} has no {spec.precision} arithmetic"
    why = spec.unsupported(dev) or spec.is_valid(Problem(*shape, spec.precision))
    return None if not why or getattr(why, "error", None) is MissingDependencyError else why


def models_at(specs, shape, dev: DeviceSpec, roofs: Ceilings) -> list:
    """(spec, KernelModel) of each GPU kernel that runs at ``shape`` on ``dev`` (``refusal``), under ``roofs``."""
    return [(s, model(s, Problem(*shape, s.precision), roofs)) for s in specs
            if s.device != "cpu" and not refusal(s, shape, dev)]
