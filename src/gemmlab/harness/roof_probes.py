"""The roofs measured on the GPU in use: DRAM bandwidth (a copy's and a read stream's), L2 -> SM bandwidth,
shared-memory bandwidth and the dense arithmetic rate of each precision, from small probe kernels
(harness/probes/probe_*.cu, compiled by NVRTC), plus cuBLAS FP32 at 8192³ for reference (a result, not a roof).

Bandwidths through DRAM and L2 are bytes per second over event-timed launches; shared memory and arithmetic are
per SM and clock, from clock64 around each probe's loop, so they hold at any clock the SMs run at. Each probe
runs in a few configurations and keeps the best: a roof is what the hardware can do, and a probe that falls short
of it would let a kernel pass its roof. L2 -> SM is probed three ways, 16-byte loads past L1, 1-D bulk copies and
the wgmma levels' own TMA tensor loads, since the kernels it roofs move their bytes by the last two.
``gemmlab roofline --measure --json FILE`` writes them; the last measurement of each GPU is also kept in gemmlab's
cache, where the benchmark's records take their roofs from.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from gemmlab import driver
# the measurement stored here is read through analysis.ceilings (kernel="auto" reads it too); the benchmark and the
# roofline command import stored_ceilings from this module
from gemmlab.analysis.ceilings import stored_ceilings, stored_path  # noqa: F401
from gemmlab.cache import write_json
from gemmlab.problem import Problem, get_precision

L2_BUFFERS_MB = (8, 16, 24)  # well inside the half of the L2 that lines every SM reads stay in
LDG_UNROLL = (4, 8)  # loads in flight per thread
BULK = ((16384, 8), (32768, 6))  # (bytes per copy, ring slots)
# TMA tensor loads: tc4's tile (128x256) and tc5's (256x128), the levels' ring of 4 stages and grouped order
TMA_TILES = ((128, 256), (256, 128))
TMA_RING = {"STAGES": 4, "GROUP_M": 8}
TMA_THREADS = 128 + 8 * 32  # a producer warpgroup and 8 consumer warps (probe_l2_tma.cu)
TMA_SQUARE = 2048  # M = N of the walk whose panels the CTAs share: 128 tiles, about one per SM, as in a wave
TMA_ARGS = driver.Struct((("a", driver.MAP), ("b", driver.MAP), ("tiles_m", "i32"), ("tiles_n", "i32"),
                          ("KT", "i32"), ("units", "i32"), ("own", "i32")))  # probe_l2_tma.cu's ProbeTmaArgs
LAUNCH_BYTES = 512 << 20  # what one timed launch of an L2 probe moves, about
SMEM_UNROLL = (4, 8)
FFMA_CHAINS, FFMA_REPEAT = 16, 32  # 512 FFMA per loop iteration against its 3 instructions of loop control
TC_TILE = {"BM": 128, "BN": 256}  # tc4's tile: two consumer warpgroups of wgmma m64n256
WGMMA_PRECISIONS = ("bf16", "tf32")  # the tensor-core rates the wgmma probe measures
MAGIC = 0x9E3779B9  # a value the probes' running sums never take: their stores never happen


@dataclass(frozen=True)
class ClockProbe:
    """A probe timed by clock64 around its loop, one CTA per SM: ``figure`` is what it measures ("smem" or a
    precision), ``scalars`` the arguments it takes between the iteration count and its sink and cycle pointers, and
    ``work_per_iter`` the bytes (shared memory) or FLOPs one CTA's loop does per iteration, which the SASS test
    holds against the loop ptxas made."""

    figure: str
    source: str
    entry: str
    defines: dict
    threads: int
    smem: int
    scalars: tuple
    work_per_iter: float


def clock_probes(hopper: bool = True) -> list[ClockProbe]:
    """Shared-memory loads with UNROLL in flight, FFMA chains, and (``hopper``: wgmma exists on sm_90 alone) tc4's
    wgmma k-tile for each precision."""
    probes = [ClockProbe("smem", "probe_smem.cu", "probe_smem", {"UNROLL": u}, 1024, 1024 * 16 * u,
                         (np.uint32(MAGIC),), 1024 * 16 * u) for u in SMEM_UNROLL]
    probes.append(ClockProbe("fp32", "probe_ffma.cu", "probe_ffma", {"CHAINS": FFMA_CHAINS, "REPEAT": FFMA_REPEAT},
                             1024, 0, (np.float32(1.0), np.float32(0.0), np.float32(-1.0)),
                             2.0 * 1024 * FFMA_CHAINS * FFMA_REPEAT))
    bm, bn = TC_TILE["BM"], TC_TILE["BN"]
    for prec in map(get_precision, WGMMA_PRECISIONS if hopper else ()):  # one k-tile: a 128-byte swizzle row of K
        probes.append(ClockProbe(prec.name, "probe_wgmma.cu", "probe_wgmma", {**TC_TILE, **prec.tensor_core_defines},
                                 bm // 64 * 128, (bm + bn) * 128 + 1024, (np.float32(-1.0),),
                                 2.0 * bm * bn * prec.k_tile))
    return probes


def tma_builds() -> list[tuple[str, str, dict]]:
    return [("probe_l2_tma.cu", "probe_l2_tma", {"BM": bm, "BN": bn, **TMA_RING}) for bm, bn in TMA_TILES]


def probe_builds() -> list[tuple[str, str, dict]]:
    """(source, entry, defines) of every probe binary the measurement launches."""
    builds = [("probe_l2_ldg.cu", "probe_l2_ldg", {"UNROLL": u}) for u in LDG_UNROLL]
    # tc_layout.cuh's tile macros are unused by the bulk-copy probe but must be defined
    builds += [("probe_l2_bulk.cu", "probe_l2_bulk", {"CHUNK": c, "STAGES": n, **TC_TILE}) for c, n in BULK]
    builds += tma_builds()
    builds += [(p.source, p.entry, p.defines) for p in clock_probes()]
    return builds


def _launch(kernel, grid, block, args, smem: int = 0) -> None:
    """The launch of every probe whose arguments are scalars and pointers; the TMA probe's tensor maps go by value
    through gemmlab.driver, as the wgmma levels' do."""
    from gemmlab.kernels.cuda.launch.nvrtc import launch

    launch(kernel, grid, block, args, smem)


def _kernel(source: str, entry: str, defines: dict, smem: int = 0):
    from gemmlab.device import require_gpu
    from gemmlab.kernels.cuda.launch.nvrtc import compile_cuda, load_kernel

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


def dram_read_bandwidth(sm_count: int, read_bytes: int = 1 << 30) -> dict:
    """DRAM read bandwidth: probe_l2_ldg's 16-byte loads over a buffer many times the L2, one pass a launch, so
    every byte comes from DRAM; the best of its unrolls. A stream that only reads (a GEMV's weight) runs faster than
    a copy, whose writes turn the bus around: with the copy's figure alone as the DRAM roof, gemv1 ran above it."""
    import cupy

    buf = cupy.zeros(read_bytes // 4, cupy.uint32)
    sink = cupy.zeros(2 * sm_count * 1024, cupy.uint32)
    trials = {}
    for unroll in LDG_UNROLL:
        k = _kernel("probe_l2_ldg.cu", "probe_l2_ldg", {"UNROLL": unroll})
        args = (buf.data.ptr, np.uint64(read_bytes // 16), np.int32(1), np.uint32(MAGIC), sink.data.ptr)
        ms = _median_ms(lambda: _launch(k, (2 * sm_count, 1, 1), (1024, 1, 1), args), 20)
        trials[unroll] = read_bytes / (ms * 1e-3) / 1e9
    return {"dram_read_gbs": max(trials.values()), "dram_read_bytes": read_bytes, "dram_read_trials": trials}


def tma_walk(sm_count: int, bm: int, bn: int, nbytes: int, own: bool) -> dict:
    """The shapes probe_l2_tma walks over about ``nbytes`` of operands: A (m x k) and Bᵀ (n x k), fp32, K-major;
    with ``own``, one tile row of each per CTA. ``units`` is whole rounds of the grid, about LAUNCH_BYTES in all,
    and ``moved`` the bytes they copy into shared memory: every k-tile of a unit brings one stage."""
    stage = (bm + bn) * 128
    if own:
        m, n = sm_count * bm, sm_count * bn
    else:
        m = n = TMA_SQUARE
    kt = max(1, nbytes // ((m + n) * 128))
    rounds = max(1, -(-LAUNCH_BYTES // (sm_count * kt * stage)))
    return {"m": m, "n": n, "k": 32 * kt, "KT": kt, "tiles_m": m // bm, "tiles_n": n // bn,
            "units": sm_count * rounds, "stage": stage, "moved": sm_count * rounds * kt * stage}


def tma_launch(sm_count: int, bm: int, bn: int, nbytes: int, own: bool):
    """probe_l2_tma ready to launch over a walk of ``tma_walk``: (the driver.Launch, the walk, the operands' buffer,
    which must outlive the launches)."""
    import cupy

    from gemmlab.kernels.cuda.launch.tma import TiledMap

    w = tma_walk(sm_count, bm, bn, nbytes, own)
    m, n, k = w["m"], w["n"], w["k"]
    buf = cupy.empty((m + n) * k, cupy.float32)  # A, then Bᵀ
    params = driver.Params((("args", TMA_ARGS),))
    for name, rows, box, base in (("a", m, bm, buf.data.ptr), ("b", n, 64, buf.data.ptr + 4 * m * k)):
        enc = TiledMap("fp32", rows, k, k, box, 32).encode_args(base)
        driver.encode_tiled(params.map_address(name), enc["dtype"], enc["global_dim"], enc["global_strides"],
                            enc["box_dim"], base)
    params.tiles_m, params.tiles_n, params.KT, params.units, params.own = (w["tiles_m"], w["tiles_n"], w["KT"],
                                                                           w["units"], int(own))
    # the ring, a full and an empty mbarrier per stage, and the 1024 bytes the swizzle's alignment may take
    smem = TMA_RING["STAGES"] * (w["stage"] + 2 * 8) + 1024
    kernel = _kernel("probe_l2_tma.cu", "probe_l2_tma", {"BM": bm, "BN": bn, **TMA_RING}, smem)
    return driver.Launch(int(kernel.handle), (sm_count, 1, 1), (TMA_THREADS, 1, 1), smem, params), w, buf


def _tma_trial(sm_count: int, bm: int, bn: int, nbytes: int, own: bool) -> dict:
    import cupy

    launch, w, buf = tma_launch(sm_count, bm, bn, nbytes, own)
    ms = _median_ms(lambda: launch.launch(cupy.cuda.get_current_stream().ptr), 10)
    return {"probe": "cp.async.bulk.tensor.2d", "tile": f"{bm}x{bn}", "walk": "own rows" if own else "shared panels",
            "buffer_mb": round(buf.nbytes / 2**20, 1), "gbs": w["moved"] / (ms * 1e-3) / 1e9}


def l2_bandwidth(sm_count: int, hopper: bool = True) -> dict:
    """L2 -> SM read bandwidth: 16-byte loads past L1 (probe_l2_ldg) and, on sm_90 (``hopper``: the bulk copy
    engine), bulk copies into shared memory (probe_l2_bulk) and TMA tensor loads in the wgmma levels' ring
    (probe_l2_tma), each over buffers that stay in L2; the best of every configuration."""
    import cupy

    trials = []
    sink = cupy.zeros(sm_count * 2048, cupy.uint32)
    for mb in L2_BUFFERS_MB:
        nbytes = mb << 20
        buf = cupy.arange(nbytes // 4, dtype=cupy.uint32)
        passes = max(4, LAUNCH_BYTES // nbytes)
        for unroll in LDG_UNROLL:
            k = _kernel("probe_l2_ldg.cu", "probe_l2_ldg", {"UNROLL": unroll})
            args = (buf.data.ptr, np.uint64(nbytes // 16), np.int32(passes), np.uint32(MAGIC), sink.data.ptr)
            ms = _median_ms(lambda: _launch(k, (2 * sm_count, 1, 1), (1024, 1, 1), args), 10)
            trials.append({"probe": "ld.global.cg.v4", "buffer_mb": mb, "unroll": unroll,
                           "gbs": passes * nbytes / (ms * 1e-3) / 1e9})
        for chunk, stages in BULK if hopper else ():
            smem = stages * (chunk + 16) + 1024
            k = _kernel("probe_l2_bulk.cu", "probe_l2_bulk", {"CHUNK": chunk, "STAGES": stages, **TC_TILE}, smem)
            args = (buf.data.ptr, np.uint64(nbytes // chunk), np.int32(passes))
            ms = _median_ms(lambda: _launch(k, (sm_count, 1, 1), (32, 1, 1), args, smem), 10)
            trials.append({"probe": "cp.async.bulk", "buffer_mb": mb, "chunk": chunk, "stages": stages,
                           "gbs": passes * nbytes / (ms * 1e-3) / 1e9})
        for bm, bn in TMA_TILES if hopper else ():
            for own in (False, True):
                trials.append(_tma_trial(sm_count, bm, bn, nbytes, own))
    best = max(trials, key=lambda t: t["gbs"])
    return {"l2_gbs": best["gbs"], "l2_best": best, "l2_trials": trials}


ALONE_SMEM = 120 * 1024  # more than half a Hopper or A100 SM's shared memory: no two CTAs of a probe share an SM
HOPPER_BLOCK_SMEM = 232448  # the dynamic shared memory a Hopper block may take (its opt-in limit)


def clock_plan(hopper: bool = True, smem_limit: int = HOPPER_BLOCK_SMEM) -> list[tuple[ClockProbe, int]]:
    """(probe, dynamic shared memory it launches with) of each clock probe a GPU whose blocks may take at most
    ``smem_limit`` bytes runs: ALONE_SMEM or the limit, the smaller (a block of the most a GPU allows takes more than
    half its SM, so one CTA an SM either way: an RTX 4090's 99 KB of its SM's 100), or a probe's own need where
    larger; a probe that needs more than the limit (the 128 KB of eight loads in flight) is left out."""
    return [(p, max(p.smem, min(ALONE_SMEM, smem_limit))) for p in clock_probes(hopper) if p.smem <= smem_limit]


def per_clock(probe: ClockProbe, iters: int, sm_count: int, smem: int = ALONE_SMEM) -> float:
    """Work per SM and clock of ``probe`` run with one CTA per SM (``smem`` bytes of dynamic shared memory each, as
    clock_plan says): the median CTA's work over its clock64 span."""
    import cupy

    cycles = cupy.zeros(sm_count, cupy.int64)
    sink = cupy.zeros(sm_count * probe.threads, cupy.uint32)
    k = _kernel(probe.source, probe.entry, probe.defines, smem)
    args = (np.int32(iters), *probe.scalars, sink.data.ptr, cycles.data.ptr)
    for _ in range(3):  # the first launch warms the clocks; the last is read
        _launch(k, (sm_count, 1, 1), (probe.threads, 1, 1), args, smem)
    cupy.cuda.get_current_stream().synchronize()
    return probe.work_per_iter * iters / float(np.median(cycles.get()))


def clock_rates(sm_count: int, iters: int = 4096, hopper: bool = True, smem_limit: int = HOPPER_BLOCK_SMEM) -> dict:
    """Bytes per clock one SM reads from shared memory (probe_smem, the best over loads in flight) and dense FLOPs
    per SM and clock: FFMA chains (FP32, probe_ffma) and, ``hopper``, tc4's wgmma mainloop (TF32, BF16,
    probe_wgmma); the probes ``clock_plan`` keeps for a block of at most ``smem_limit`` bytes."""
    smem, flops = {}, {}
    for probe, dynamic in clock_plan(hopper, smem_limit):
        rate = per_clock(probe, iters, sm_count, dynamic)
        if probe.figure == "smem":
            smem[probe.defines["UNROLL"]] = rate
        else:
            flops[probe.figure] = rate
    return {"smem_bytes_per_clk": max(smem.values()), "smem_trials": smem, "flop_per_clk": flops}


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
        read = dram_read_bandwidth(info.sm_count, copy_bytes)
        # the DRAM roof is the faster of the two: a roof a probe falls short of lets a kernel pass it.
        # copy_bw_gbs: the copy's alone, the key older results carry and the suite's DRAM roof
        out.update(copy, **read, copy_bw_gbs=copy["dram_gbs"], dram_gbs=max(copy["dram_gbs"], read["dram_read_gbs"]))
        hopper = tuple(info.cc) == (9, 0)  # another architecture: the probes of its generic loads and FFMA alone
        out.update(l2_bandwidth(info.sm_count, hopper))
        out.update(clock_rates(info.sm_count, hopper=hopper, smem_limit=info.smem_per_block_optin))
        out.update(cublas_reference(gemm_size))
    out["clock"] = clock.summary()
    cupy.get_default_memory_pool().free_all_blocks()
    write_json(stored_path(info.name), out)
    from gemmlab import dispatch

    dispatch._roofs.cache_clear()  # kernel="auto" in this process scales by the new roofs from here on
    return out
