"""The roofs measured on the GPU in use: DRAM copy bandwidth, L2 -> SM bandwidth, shared-memory bandwidth and the
dense arithmetic rate of each precision, from small probe kernels (kernels/cuda/probe_*.cu, compiled by NVRTC),
plus cuBLAS FP32 at 8192³ for reference (a result, not a roof).

Bandwidths through DRAM and L2 are bytes per second over event-timed launches; shared memory and arithmetic are
per SM and clock, from clock64 around each probe's loop, so they hold at any clock the SMs run at. Each probe
runs in a few configurations and keeps the best: a roof is what the hardware can do, and a probe that falls short
of it would let a kernel pass its roof. ``gemmlab roofline --measure --json FILE`` writes them; the last
measurement of each GPU is also kept in gemmlab's cache, where the benchmark's records take their roofs from.
"""
from __future__ import annotations

import re
import statistics
from pathlib import Path

import numpy as np

from gemmlab.analysis.ceilings import LEVEL_KEYS, Ceilings, with_measured
from gemmlab.cache import cache_root, read_json, write_json
from gemmlab.problem import Problem

L2_BUFFERS_MB = (8, 16, 24)  # well inside the half of the L2 that lines every SM reads stay in
LDG_UNROLL = (4, 8)  # loads in flight per thread
BULK = ((16384, 8), (32768, 6))  # (bytes per copy, ring slots)
SMEM_UNROLL = (4, 8)
FFMA_CHAINS = 16
TC_TILE = {"BM": 128, "BN": 256}  # tc4's tile: two consumer warpgroups of wgmma m64n256
LEVEL_KEYS_BY_NAME = {key: level for level, key in LEVEL_KEYS.items()}
MAGIC = 0x9E3779B9  # a value the probes' running sums never take: their stores never happen


def probe_builds() -> list[tuple[str, str, dict]]:
    """(source, entry, defines) of every probe binary the measurement launches."""
    builds = [("probe_l2_ldg.cu", "probe_l2_ldg", {"UNROLL": u}) for u in LDG_UNROLL]
    # tc_common.cuh's tile macros are unused by the bulk-copy probe but must be defined
    builds += [("probe_l2_bulk.cu", "probe_l2_bulk", {"CHUNK": c, "STAGES": n, **TC_TILE}) for c, n in BULK]
    builds += [("probe_smem.cu", "probe_smem", {"UNROLL": u}) for u in SMEM_UNROLL]
    builds += [("probe_ffma.cu", "probe_ffma", {"CHAINS": FFMA_CHAINS})]
    builds += [("probe_wgmma.cu", "probe_wgmma", {**TC_TILE, "TC_BF16": int(p == "bf16")}) for p in ("bf16", "tf32")]
    return builds


def _launch(kernel, grid, block, args, smem: int = 0) -> None:
    """Every probe launch goes through here (one place to change the launch path)."""
    from gemmlab.kernels.cuda._nvrtc import launch

    launch(kernel, grid, block, args, smem)


def _kernel(source: str, entry: str, defines: dict, smem: int = 0):
    from gemmlab.device import require_gpu
    from gemmlab.kernels.cuda._nvrtc import compile_cuda, load_kernel

    return load_kernel(compile_cuda(source, entry, defines, require_gpu("the ceiling probes").arch), smem)


def _median_ms(fn, reps: int) -> float:
    """Median over ``reps`` event-timed calls of ``fn``, after one untimed call."""
    import cupy

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
    return statistics.median(times)


def copy_bandwidth(copy_bytes: int = 1 << 30) -> dict:
    """Device-to-device copy: bytes read plus bytes written over the time."""
    import cupy

    buffers = [cupy.empty(copy_bytes // 4, cupy.float32) for _ in range(2)]
    ms = _median_ms(lambda: cupy.copyto(buffers[1], buffers[0]), 20)
    return {"dram_gbs": 2 * copy_bytes / (ms * 1e-3) / 1e9, "copy_bytes": copy_bytes, "copy_ms": ms}


def l2_bandwidth(sm_count: int) -> dict:
    """L2 -> SM read bandwidth: 16-byte loads past L1 (probe_l2_ldg) and bulk copies into shared memory
    (probe_l2_bulk), each over buffers that stay in L2; the best of every configuration."""
    import cupy

    trials = []
    sink = cupy.zeros(sm_count * 2048, cupy.uint32)
    for mb in L2_BUFFERS_MB:
        nbytes = mb << 20
        buf = cupy.arange(nbytes // 4, dtype=cupy.uint32)
        passes = max(4, (512 << 20) // nbytes)  # about half a GB per launch
        for unroll in LDG_UNROLL:
            k = _kernel("probe_l2_ldg.cu", "probe_l2_ldg", {"UNROLL": unroll})
            args = (buf.data.ptr, np.uint64(nbytes // 16), np.int32(passes), np.uint32(MAGIC), sink.data.ptr)
            ms = _median_ms(lambda: _launch(k, (2 * sm_count, 1, 1), (1024, 1, 1), args), 10)
            trials.append({"probe": "ld.global.cg.v4", "buffer_mb": mb, "unroll": unroll,
                           "gbs": passes * nbytes / (ms * 1e-3) / 1e9})
        for chunk, stages in BULK:
            smem = stages * (chunk + 16) + 1024
            k = _kernel("probe_l2_bulk.cu", "probe_l2_bulk", {"CHUNK": chunk, "STAGES": stages, **TC_TILE}, smem)
            args = (buf.data.ptr, np.uint64(nbytes // chunk), np.int32(passes))
            ms = _median_ms(lambda: _launch(k, (sm_count, 1, 1), (32, 1, 1), args, smem), 10)
            trials.append({"probe": "cp.async.bulk", "buffer_mb": mb, "chunk": chunk, "stages": stages,
                           "gbs": passes * nbytes / (ms * 1e-3) / 1e9})
    best = max(trials, key=lambda t: t["gbs"])
    return {"l2_gbs": best["gbs"], "l2_best": best, "l2_trials": trials}


ALONE_SMEM = 120 * 1024  # more than half an SM's shared memory: no two CTAs of a probe share an SM


def _per_clock(source: str, entry: str, defines: dict, block: int, smem: int, args, work_per_cta: float,
               sm_count: int) -> float:
    """Work per SM and clock of a probe run with one CTA per SM: the median CTA's work over its clock64 span."""
    import cupy

    cycles = cupy.zeros(sm_count, cupy.int64)
    smem = max(smem, ALONE_SMEM)
    k = _kernel(source, entry, defines, smem)
    for _ in range(3):  # the first launch warms the clocks; the last is read
        _launch(k, (sm_count, 1, 1), (block, 1, 1), args + (cycles.data.ptr,), smem)
    cupy.cuda.get_current_stream().synchronize()
    return work_per_cta / float(np.median(cycles.get()))


def smem_bandwidth(sm_count: int, iters: int = 4096) -> dict:
    """Bytes per clock one SM reads from shared memory (probe_smem), the best over loads in flight."""
    import cupy

    sink = cupy.zeros(sm_count * 1024, cupy.uint32)
    trials = {}
    for unroll in SMEM_UNROLL:
        smem = 1024 * unroll * 16
        trials[unroll] = _per_clock("probe_smem.cu", "probe_smem", {"UNROLL": unroll}, 1024, smem,
                                    (np.int32(iters), np.uint32(MAGIC), sink.data.ptr), 1024 * 16 * unroll * iters,
                                    sm_count)
    return {"smem_bytes_per_clk": max(trials.values()), "smem_trials": trials}


def flop_rates(sm_count: int, iters: int = 4096) -> dict:
    """Dense FLOPs per SM and clock: FFMA chains (FP32, probe_ffma) and tc4's wgmma mainloop (TF32, BF16,
    probe_wgmma)."""
    import cupy

    sink = cupy.zeros(sm_count * 1024, cupy.float32)
    rates = {"fp32": _per_clock("probe_ffma.cu", "probe_ffma", {"CHAINS": FFMA_CHAINS}, 1024, 0,
                                (np.int32(iters), np.float32(1.0), np.float32(0.0), np.float32(-1.0), sink.data.ptr),
                                2.0 * 1024 * FFMA_CHAINS * 4 * iters, sm_count)}
    bk = {"bf16": 64, "tf32": 32}  # one 128-byte swizzle row of K
    stage = (TC_TILE["BM"] + TC_TILE["BN"]) * 128 + 1024
    for precision, k in bk.items():
        defines = {**TC_TILE, "TC_BF16": int(precision == "bf16")}
        rates[precision] = _per_clock("probe_wgmma.cu", "probe_wgmma", defines, TC_TILE["BM"] // 64 * 128, stage,
                                      (np.int32(iters), np.float32(-1.0), sink.data.ptr),
                                      2.0 * TC_TILE["BM"] * TC_TILE["BN"] * k * iters, sm_count)
    return {"flop_per_clk": rates}


def cublas_reference(gemm_size: int = 8192) -> dict:
    """cuBLAS FP32 TFLOPS at gemm_size³: what the best FP32 library reaches, beside the FFMA roof."""
    import cupy

    from gemmlab.kernels.peers._cublas import gemm

    p = Problem(gemm_size, gemm_size, gemm_size)
    a, b = p.make_inputs(0, cupy)
    c = cupy.empty((gemm_size, gemm_size), cupy.float32)
    ms = _median_ms(lambda: gemm(a, b, c, "fp32"), 10)
    return {"cublas_fp32_tflops": p.flops() / (ms * 1e-3) / 1e12, "cublas_fp32_shape": gemm_size}


def measure_ceilings(copy_bytes: int = 1 << 30, gemm_size: int = 8192) -> dict:
    """Every roof of the present GPU (see the module docstring), the SM clock sampled while the probes ran, and
    the environment; stored as this GPU's last measurement."""
    import cupy

    from gemmlab.device import require_gpu
    from gemmlab.harness import env
    from gemmlab.harness.timing import ClockSampler

    info = require_gpu("measuring the ceilings")
    out = {"gpu": info.name, "sm_count": info.sm_count, "max_clock_mhz": info.max_sm_clock_mhz,
           "l2_bytes": info.l2_bytes, **{k: v for k, v in env.collect(info, "gpu").items() if k in ("git_sha", "time")}}
    with ClockSampler(info.max_sm_clock_mhz) as clock:
        copy = copy_bandwidth(copy_bytes)
        out.update(copy, copy_bw_gbs=copy["dram_gbs"])  # copy_bw_gbs: the key older results carry
        out.update(l2_bandwidth(info.sm_count))
        out.update(smem_bandwidth(info.sm_count))
        out.update(flop_rates(info.sm_count))
        out.update(cublas_reference(gemm_size))
    out["clock"] = clock.summary()
    cupy.get_default_memory_pool().free_all_blocks()
    write_json(stored_path(info.name), out)
    return out


def stored_path(gpu_name: str) -> Path:
    return cache_root() / "ceilings" / (re.sub(r"[^A-Za-z0-9]+", "_", gpu_name).strip("_") + ".json")


def stored_ceilings(base: Ceilings) -> Ceilings:
    """``base`` with the figures of this GPU's last stored measurement in place of those ``base`` did not measure
    itself (a copy bandwidth measured in the same run stays)."""
    stored = read_json(stored_path(base.gpu))
    if not stored:
        return base
    own = {level for level, source in base.source.items() if source == "measured"}
    keep = {k: v for k, v in stored.items() if LEVEL_KEYS_BY_NAME.get(k) not in own}
    origin = f"{stored_path(base.gpu)} ({stored.get('time', 'undated')})"
    return with_measured(base, keep, origin if base.origin == "datasheet" else f"{base.origin}; {origin}")
