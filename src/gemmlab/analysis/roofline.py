"""The roofline model of the seeds, for every kernel: device ceilings, intensity, ridge point, predicted bound.

Attainable performance at intensity I is min(P_peak, BW × I); the ridge point I = P_peak / BW separates
memory-bound from compute-bound. The seeds' worked example: A100, 1555 GB/s and 19.5 TFLOPS FP32, ridge ≈ 12.5
FLOP/byte. Peaks here are the datasheets' dense numbers; ``measure_ceilings`` adds what the present GPU actually
reaches (device-to-device copy bandwidth, cuBLAS FP32 at 8192³), which are the honest roofs.

Each precision has its own compute roof. An FP32 kernel is never placed under a tensor-core roof: the seeds'
cuBLAS line (4096³ in 0.8 ms, ≈172 TFLOPS) is a tensor-core (TF32) result, nine times the A100's FP32 peak.
"""
from __future__ import annotations

from dataclasses import dataclass

from gemmlab.problem import Problem


@dataclass(frozen=True)
class DeviceSpec:
    key: str
    name: str
    dram_gbs: float  # datasheet DRAM bandwidth, GB/s
    tflops: dict  # dense peak per precision
    note: str = ""

    def peak_tflops(self, precision: str) -> float:
        return self.tflops[precision]

    def ridge(self, precision: str = "fp32") -> float:
        """FLOP/byte where the memory roof meets the compute roof."""
        return self.peak_tflops(precision) * 1e12 / (self.dram_gbs * 1e9)

    def attainable_tflops(self, intensity: float, precision: str = "fp32", bw_gbs: float | None = None) -> float:
        bw = bw_gbs or self.dram_gbs
        return min(self.peak_tflops(precision), bw * 1e9 * intensity / 1e12)

    def as_dict(self) -> dict:
        return {"key": self.key, "name": self.name, "dram_gbs": self.dram_gbs,
                **{f"{p}_tflops": v for p, v in self.tflops.items()}, "note": self.note}


DEVICES: dict[str, DeviceSpec] = {
    "a100": DeviceSpec("a100", "NVIDIA A100 (the seeds' example)", 1555.0,
                       {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0}, "40 GB HBM2, the seeds' numbers"),
    "h100": DeviceSpec("h100", "NVIDIA H100 SXM", 3350.0, {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4,
                                                           "fp8": 1979.0, "fp8_block": 1979.0}, "80 GB HBM3"),
    "h200": DeviceSpec("h200", "NVIDIA H200", 4800.0, {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp8": 1979.0,
                                                       "fp8_block": 1979.0}, "141 GB HBM3e; same SMs as H100 SXM"),
}


def device_spec(name: str) -> DeviceSpec:
    """Look a device up by key or by the name the driver reports ('NVIDIA H200' -> h200)."""
    key = name.lower()
    if key in DEVICES:
        return DEVICES[key]
    for k, spec in DEVICES.items():
        if k in key.replace(" ", "").replace("-", ""):
            return spec
    from gemmlab.errors import GemmlabError

    raise GemmlabError(f"no roofline data for GPU {name!r}; known: {', '.join(DEVICES)}")


@dataclass(frozen=True)
class KernelModel:
    """The seeds' analysis for one kernel on one problem."""

    flops: int
    compulsory_bytes: int
    intensity: float  # FLOP per compulsory byte: the problem's best case
    modeled_read_bytes: float
    modeled_write_bytes: float
    modeled_intensity: float  # FLOP per modeled global byte: this kernel's data reuse
    bound: str  # "memory" or "compute", at the modeled intensity
    predicted_tflops: float  # roofline ceiling at the modeled intensity
    basis: str

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def model(spec, problem: Problem, device: DeviceSpec, bw_gbs: float | None = None) -> KernelModel:
    traffic = spec.traffic(problem)
    intensity = traffic.intensity(problem)
    ridge = device.peak_tflops(problem.precision) * 1e12 / ((bw_gbs or device.dram_gbs) * 1e9)
    return KernelModel(
        flops=problem.flops(), compulsory_bytes=problem.compulsory_bytes(), intensity=problem.intensity(),
        modeled_read_bytes=traffic.global_read, modeled_write_bytes=traffic.global_write,
        modeled_intensity=intensity, bound="memory" if intensity < ridge else "compute",
        predicted_tflops=device.attainable_tflops(intensity, problem.precision, bw_gbs), basis=traffic.basis)


def measure_ceilings(copy_bytes: int = 1 << 30, gemm_size: int = 8192) -> dict:
    """What the present GPU reaches: device-to-device copy bandwidth (bytes read + written over time) and
    cuBLAS FP32 TFLOPS at gemm_size³. Medians of several event-timed runs."""
    import cupy

    from gemmlab.kernels.peers._cublas import gemm

    def median_ms(fn, reps):
        fn()
        cupy.cuda.get_current_stream().synchronize()
        times = []
        for _ in range(reps):
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            times.append(cupy.cuda.get_elapsed_time(e0, e1))
        return sorted(times)[len(times) // 2]

    buffers = [cupy.empty(copy_bytes // 4, cupy.float32) for _ in range(2)]
    copy_ms = median_ms(lambda: cupy.copyto(buffers[1], buffers[0]), 20)
    buffers.clear()
    p = Problem(gemm_size, gemm_size, gemm_size)
    a, b = p.make_inputs(0, cupy)
    c = cupy.empty((gemm_size, gemm_size), cupy.float32)
    gemm_ms = median_ms(lambda: gemm(a, b, c, "fp32"), 10)
    return {"copy_bw_gbs": 2 * copy_bytes / (copy_ms * 1e-3) / 1e9, "copy_bytes": copy_bytes,
            "cublas_fp32_tflops": p.flops() / (gemm_ms * 1e-3) / 1e12, "cublas_fp32_shape": gemm_size}


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
