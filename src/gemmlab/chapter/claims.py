"""Every claim of the two seed texts, each with the seed's words and figure, and how gemmlab judges it.

A claim is one formula, launch configuration, numeric claim, analysis step or promised next step of a seed. Its
``judge`` reads the run's facts (facts.Facts) and returns a Row: what gemmlab measured or computed, the command
behind it, a verdict and the reason, in English and in Chinese with the same numbers (each number is formatted
once and placed in both texts). Where a judgment needs a GPU measurement that the run has not got, the row says
"not measured" and what it would take; the formulas, the model and the seeds' own arithmetic need no GPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from gemmlab.chapter.facts import (A100, H200, PROFILED, S512, S1024, S4096, Facts, committed_above_seed_roof,
                                   label)
from gemmlab.problem import SEED_SHAPE, Problem

FIRST = "000"  # CUDA算子优化(4)：矩阵乘法
SECOND = "002"  # 4、矩阵乘法基础
SEED_TITLES = {FIRST: "CUDA算子优化(4)：矩阵乘法", SECOND: "4、矩阵乘法基础：CPU矩阵乘法实现、GPU朴素矩阵乘法、性能瓶颈分析"}

HOLDS, FAILS, ONLY_AS, NOT_MEASURED = "holds", "does not hold", "holds only as", "not measured"

V1, NV1, V2, NV2 = "cuda/v1_naive", "numba/v1_naive", "cuda/v2_smem", "numba/v2_smem"
V0, BLAS = "cpu/v0_naive", "cpu/blas"
CUBLAS, CUBLAS_TF32 = "peers/cublas_fp32", "peers/cublas_tf32"
V1_ROWS = "cuda/v1_naive[ROWS_ON_X=1]"  # threadIdx.x along M: the uncoalesced V1 of the second seed
V1_16 = "cuda/v1_naive[BX=16,BY=16]"  # the 16×16 block
NV1_16 = "numba/v1_naive[BX=16,BY=16]"
V2_16 = "cuda/v2_smem[TILE=16]"
SEED = SEED_SHAPE


def fmt(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def bench_cmd(kernel: str, shape) -> str:
    """The gemmlab command that measures ``kernel`` at ``shape`` alone, as the chapter run does."""
    name, _, changes = kernel.partition("[")
    if changes:
        return f"gemmlab bench --variant {name}:{changes[:-1]} --shape {label(shape)}"
    return f"gemmlab bench --kernels {name} --shape {label(shape)}"


@dataclass
class Row:
    measured: tuple[str, str]  # (en, zh): gemmlab's figure, or "not measured" and why
    verdict: str
    reason: tuple[str, str]
    command: str  # what produced the figure
    source: str  # "this run", a committed file, "model" (gemmlab's functions) or "the seed's figures"
    only_as: tuple[str, str] = ("", "")  # with ONLY_AS: as what it holds
    values: dict = field(default_factory=dict)  # the numbers, for the JSON


@dataclass(frozen=True)
class Claim:
    id: str
    seed: str
    section: str  # the seed's section heading, as the seed writes it
    quote: str  # the seed's words
    claim: tuple[str, str]  # (en, zh): what it says, in a line
    seed_figure: str  # the seed's number or formula, as quoted
    judge: Callable[[Facts], Row]
    needs_gpu: bool = False  # its measurement is a GPU run's


def _missing(what: tuple[str, str], command: str, model: tuple[str, str] | None = None) -> Row:
    """A row whose measurement (``what``, in English and Chinese) needs a GPU this run does not have; ``model`` says
    what gemmlab predicts meanwhile."""
    en = f"not measured in this run: {what[0]}"
    zh = f"本次运行未测量：{what[1]}"
    if model:
        en, zh = f"{en}; {model[0]}", f"{zh}；{model[1]}"
    return Row((en, zh), NOT_MEASURED, ("needs the H200 run", "需要在 H200 上运行"), command, "none")


def _ms_text(ms: float) -> str:
    return fmt(ms, 3) if ms < 10 else fmt(ms, 1) if ms < 1000 else fmt(ms, 0)


# -- the first seed: definitions and the model ----------------------------------------------------------------
def _definition(f: Facts) -> Row:
    rows = [(k, s, f.rec(k, s)) for k, s in ((V0, f.cpu_shape), (V1, SEED), (V2, SEED), (NV1, SEED), (NV2, SEED))]
    done = [(k, s, r) for k, s, r in rows if r]
    if not any(k != V0 for k, _, _ in done):
        sim = [f.any_rec(k) for k in (NV1, NV2)]
        ok = [r for r in sim if r and r.get("status") == "simulated"]
        v0 = f.rec(V0, f.cpu_shape)
        parts_en = ([f"{V0} at {label(f.cpu_shape)}: relative error {v0['rel_err']:.1e}"] if v0 else []) + \
            [f"{r['kernel']} verified on the CUDA simulator" for r in ok]
        parts_zh = ([f"{V0} 在 {label(f.cpu_shape)}：相对误差 {v0['rel_err']:.1e}"] if v0 else []) + \
            [f"{r['kernel']} 在 CUDA 模拟器上验证通过" for r in ok]
        if not parts_en:
            return _missing(("V0, V1 and V2 against float64", "V0、V1、V2 与 float64 的比较"), "gemmlab chapter")
        return Row(("; ".join(parts_en), "；".join(parts_zh)), HOLDS,
                   ("each kernel's C matches the float64 sum within FP32's tolerance",
                    "各核函数的 C 与 float64 求和结果在 FP32 容差内一致"),
                   "gemmlab chapter", "this run")
    en = "; ".join(f"{k} at {label(s)}: relative error {r['rel_err']:.1e}" for k, s, r in done)
    zh = "；".join(f"{k} 在 {label(s)}：相对误差 {r['rel_err']:.1e}" for k, s, r in done)
    return Row((en, zh), HOLDS, ("V0, V1 and V2 compute this sum: each matches float64 within FP32's tolerance",
                                 "V0、V1、V2 计算的就是这个求和：与 float64 参考结果在 FP32 容差内一致"),
               "gemmlab chapter (verification against float64)", "this run")


def _flops(f: Facts) -> Row:
    m, n, k = SEED
    p = Problem(*SEED)
    exact = m * n * (2 * k - 1)
    v = {"flops": p.flops(), "exact": exact}
    return Row((f"{fmt(p.flops() / 1e9, 2)} GFLOP at {label(SEED)}; exactly M·N·(2K−1) = {fmt(exact / 1e9, 2)} GFLOP",
                f"{label(SEED)} 时 {fmt(p.flops() / 1e9, 2)} GFLOP；精确值 M·N·(2K−1) = {fmt(exact / 1e9, 2)} GFLOP"),
               HOLDS, (f"the rounding of 2K−1 to 2K is 1/(2K), {fmt(100 / (2 * k), 3)}% at K = {k}",
                       f"把 2K−1 记为 2K 的误差为 1/(2K)，K = {k} 时为 {fmt(100 / (2 * k), 3)}%"),
               "Problem.flops (gemmlab roofline)", "model", values=v)


def _bytes(f: Facts) -> Row:
    sq = Problem(*S4096)
    prof = f.profile(CUBLAS)
    comp = sq.compulsory_bytes()
    if not prof:
        return Row((f"{fmt(comp / 1e6)} MB at {label(S4096)}", f"{label(S4096)} 时 {fmt(comp / 1e6)} MB"), HOLDS,
                   ("each input read once and C written once: the least any kernel moves",
                    "每个输入读一次、C 写一次：任何核函数的最小访存量"), "Problem.compulsory_bytes", "model")
    dram = prof["dram_bytes"]
    return Row((f"{fmt(comp / 1e6)} MB at {label(S4096)}; cuBLAS FP32 moves {fmt(dram / 1e6)} MB of DRAM "
                f"({fmt(dram / comp, 2)}×)",
                f"{label(S4096)} 时 {fmt(comp / 1e6)} MB；cuBLAS FP32 实际 DRAM 流量 {fmt(dram / 1e6)} MB"
                f"（{fmt(dram / comp, 2)}×）"), ONLY_AS,
               ("a kernel reads A or B again where its working set outgrows the L2; the formula is the floor",
                "工作集超出 L2 时核函数会重读 A 或 B；该公式是下限"),
               "gemmlab profile peers/cublas_fp32 --shape 4096", PROFILED,
               ("the least DRAM traffic (compulsory bytes)", "最小 DRAM 流量（必需字节）"),
               {"compulsory": comp, "cublas_dram": dram})


def _intensity(f: Facts) -> Row:
    p = Problem(*SEED)
    return Row((f"{fmt(p.intensity(), 1)} FLOP/byte at {label(SEED)}",
                f"{label(SEED)} 时 {fmt(p.intensity(), 1)} FLOP/byte"),
               HOLDS, ("2MNK over 4(MK+KN+MN), reduced", "2MNK 除以 4(MK+KN+MN) 化简所得"),
               "Problem.intensity (gemmlab roofline)", "model", values={"intensity": p.intensity()})


def _n_over_6(f: Facts) -> Row:
    a, b = Problem(*S1024).intensity(), Problem(*S4096).intensity()
    return Row((f"{fmt(a, 1)} at N = 1024, {fmt(b, 1)} at N = 4096", f"N = 1024 时 {fmt(a, 1)}，N = 4096 时 {fmt(b, 1)}"),
               HOLDS, ("N³/(2·3N²) = N/6: the best intensity grows with N", "N³/(2·3N²) = N/6：最佳计算强度随 N 增长"),
               "gemmlab roofline --shape 1024 --shape 4096", "model", values={"n1024": a, "n4096": b})


def _v0_cubic(f: Facts) -> Row:
    small, big = f.ms(V0, S512), f.ms(V0, S1024)
    if small is None or big is None:
        return _missing(("V0 at 512³ and 1024³", "V0 在 512³ 与 1024³"), "gemmlab chapter")
    r = big / small
    ok = 6 <= r <= 10
    return Row((f"V0 {_ms_text(small)} ms at {label(S512)}, {_ms_text(big)} ms at {label(S1024)}: "
                f"{fmt(r, 1)}× for 2× N",
                f"V0 在 {label(S512)} 为 {_ms_text(small)} ms，在 {label(S1024)} 为 {_ms_text(big)} ms："
                f"N 增至 2× 时耗时 {fmt(r, 1)}×"),
               HOLDS if ok else ONLY_AS,
               ("N³ predicts 8×" + ("" if ok else "; the column walk of B misses the cache more at the larger N"),
                "N³ 预测 8×" + ("" if ok else "；N 更大时按列遍历 B 的缓存缺失更多")),
               f"{bench_cmd(V0, S512)}; {bench_cmd(V0, S1024)}", "this run",
               ("an order: cache misses add to N³", "数量级：缓存缺失使增长超过 N³") if not ok else ("", ""),
               {"ms_512": small, "ms_1024": big, "ratio": r})


def _v0_space(f: Facts) -> Row:
    p = Problem(*S1024)
    return Row((f"at {label(S1024)}: A, B and C hold {fmt(p.compulsory_bytes() / 2**20)} MiB; twice N, four times that",
                f"{label(S1024)} 时 A、B、C 共 {fmt(p.compulsory_bytes() / 2**20)} MiB；N 加倍则为其四倍"), HOLDS,
               ("three N×N matrices, nothing else", "三个 N×N 矩阵，别无其他"), "Problem.compulsory_bytes", "model",
               values={"bytes": p.compulsory_bytes()})


def _launch(f: Facts) -> Row:
    from gemmlab.kernels.registry import get_kernel

    geo = get_kernel(V1).launch_geometry(Problem(*SEED))
    g, b = geo.grid[:2], geo.block[:2]
    return Row((f"cuda/v1_naive at {label(SEED)}: grid {g}, block {b}",
                f"cuda/v1_naive 在 {label(SEED)}：grid {g}，block {b}"),
               HOLDS, ("gemmlab launches V1 as the seed does: x covers N's columns, y M's rows",
                       "gemmlab 的 V1 与种子的启动相同：x 覆盖 N 列，y 覆盖 M 行"), "gemmlab list --kernels cuda/v1_naive", "model",
               values={"grid": list(g), "block": list(b)})


def _block_16(f: Facts, shape=SEED) -> tuple:
    return f.ms(V1, shape), f.ms(V1_16, shape)


def _comment_16x16(f: Facts) -> Row:
    big, small = _block_16(f)
    base = ("the comment says 16×16 = 256 threads; the code launches 32×32 = 1024",
            "注释写 16×16 = 256 线程，代码启动的是 32×32 = 1024")
    if big is None or small is None:
        row = _missing(("the 16×16 variant beside 32×32", "16×16 变体与 32×32 并列"), bench_cmd(V1_16, SEED))
        row.verdict, row.reason = FAILS, base
        return row
    return Row((f"32×32 {_ms_text(big)} ms, 16×16 {_ms_text(small)} ms at {label(SEED)}",
                f"{label(SEED)} 时 32×32 为 {_ms_text(big)} ms，16×16 为 {_ms_text(small)} ms"), FAILS,
               (base[0] + f"; measured, 16×16 takes {fmt(small / big, 2)}× the time of 32×32",
                base[1] + f"；实测 16×16 耗时为 32×32 的 {fmt(small / big, 2)}×"),
               bench_cmd(V1_16, SEED), "this run", values={"ms_32": big, "ms_16": small})


def _warp_friendly(f: Facts) -> Row:
    big, small = _block_16(f)
    if big is None or small is None:
        return _missing(("V1 with 16×16 and 32×32 blocks", "16×16 与 32×32 block 的 V1"), bench_cmd(V1_16, SEED))
    ratio = small / big
    ok = ratio >= 0.95
    return Row((f"32×32 {_ms_text(big)} ms, 16×16 {_ms_text(small)} ms at {label(SEED)}",
                f"{label(SEED)} 时 32×32 为 {_ms_text(big)} ms，16×16 为 {_ms_text(small)} ms"),
               HOLDS if ok else FAILS,
               (f"1024 threads are 32 warps and 2 blocks fill an SM's 64 warps; 16×16 takes {fmt(ratio, 2)}× the time",
                f"1024 线程即 32 个 warp，2 个 block 占满一个 SM 的 64 个 warp；16×16 耗时为其 {fmt(ratio, 2)}×"),
               bench_cmd(V1_16, SEED), "this run", values={"ms_32": big, "ms_16": small})


def emulate_swapped(m: int, n: int, k: int, seed: int = 0) -> float:
    """Relative error of the seed's launch, sgemm_kernel1(C, A, B, M, K, N) for a kernel declared (C, A, B, M, N,
    K): its index math emulated in NumPy (the kernel's N is the caller's K and its K the caller's N)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(m * k).astype(np.float32)
    b = rng.standard_normal(k * n).astype(np.float32)
    kn, kk = k, n  # what the kernel believes N and K are
    c = np.full(m * n, np.nan, np.float32)
    rows, cols = np.meshgrid(np.arange(m), np.arange(kn), indexing="ij")
    acc = np.zeros((m, kn), np.float64)
    for kx in range(kk):
        ai, bi = rows * kk + kx, kx * kn + cols
        ok = (ai < a.size) & (bi < b.size)  # past the end the GPU reads other memory; here it stops
        acc += np.where(ok, a[np.minimum(ai, a.size - 1)] * b[np.minimum(bi, b.size - 1)], np.nan)
    idx = (rows * kn + cols).ravel()
    inside = idx < c.size
    c[idx[inside]] = acc.ravel()[inside]
    ref = a.reshape(m, k).astype(np.float64) @ b.reshape(k, n).astype(np.float64)
    err = np.linalg.norm(np.nan_to_num(c.reshape(m, n), nan=1e30) - ref) / np.linalg.norm(ref)
    return float(min(err, 1e30))


def _swapped_args(f: Facts) -> Row:
    shape = (64, 96, 128)  # M, N, K: the seed shape's proportions, small
    err = emulate_swapped(*shape)
    return Row((f"the seed's call emulated at {label(shape)}: relative error {err:.1e}",
                f"在 {label(shape)} 上模拟种子的调用：相对误差 {err:.1e}"), FAILS,
               ("the kernel is declared (…, M, N, K) and called with (…, M, K, N): wrong wherever N ≠ K, as at the "
                "seed's 2048×3072×4096; the harness's own launch passes M, N, K",
                "核函数声明为 (…, M, N, K)，调用却传 (…, M, K, N)：只要 N ≠ K（如种子的 2048×3072×4096）就出错；"
                "种子 main 中的调用传的是 M, N, K"),
               "gemmlab.chapter.claims.emulate_swapped", "model", values={"rel_err": err})


def _v2_launch(f: Facts) -> Row:
    from gemmlab.kernels.registry import get_kernel

    spec = get_kernel(V2)
    geo = spec.launch_geometry(Problem(*SEED))
    smem = spec.compile().report.smem_bytes
    g, b = geo.grid[:2], geo.block[:2]
    return Row((f"cuda/v2_smem at {label(SEED)}: grid {g}, block {b}, {fmt(smem)} bytes of shared memory (ptxas)",
                f"cuda/v2_smem 在 {label(SEED)}：grid {g}，block {b}，共享内存 {fmt(smem)} 字节（ptxas）"), HOLDS,
               ("two WS×WS float tiles per block, WS = 32, as the seed declares them",
                "每个 block 两个 WS×WS 的 float tile，WS = 32，与种子的声明一致"),
               "gemmlab bench --kernels cuda/v2_smem (compiled by NVRTC)", "model",
               values={"grid": list(g), "block": list(b), "smem": smem})


def _timing_method(f: Facts) -> Row:
    r = f.rec(V1, SEED)
    if not r or r.get("iqr_ms") is None:
        return _missing(("V1's launches at the seed shape", "种子形状下 V1 的各次启动"), bench_cmd(V1, SEED))
    spread = r["iqr_ms"] / r["median_ms"] * 100
    return Row((f"V1 at {label(SEED)}: median {_ms_text(r['median_ms'])} ms of {r['samples']} launches, interquartile "
                f"range {fmt(spread, 2)}% of it",
                f"V1 在 {label(SEED)}：{r['samples']} 次启动的中位数 {_ms_text(r['median_ms'])} ms，四分位距为其 "
                f"{fmt(spread, 2)}%"), ONLY_AS,
               ("gemmlab times each launch with its own events on rotating inputs (cold L2) and keeps the median; an "
                "average of back-to-back launches on one input set runs with a warm L2",
                "gemmlab 对每次启动单独计时（各自的事件，轮换输入以保持 L2 冷），取中位数；同一组输入上连续启动的平均值是在 L2 "
                "热的情况下测得"),
               bench_cmd(V1, SEED), "this run", ("an average over a warm L2", "L2 热状态下的平均值"),
               {"median_ms": r["median_ms"], "iqr_pct": spread})


def _kernel1(f: Facts) -> Row:
    r = f.rec(V1, SEED)
    if not r:
        return _missing(("V1 at the seed shape", "种子形状下的 V1"), bench_cmd(V1, SEED))
    return Row((f"cuda/v1_naive at {label(SEED)}: {_ms_text(r['median_ms'])} ms, {fmt(r['gflops'])} GFLOPS, "
                f"relative error {r['rel_err']:.1e}",
                f"cuda/v1_naive 在 {label(SEED)}：{_ms_text(r['median_ms'])} ms，{fmt(r['gflops'])} GFLOPS，"
                f"相对误差 {r['rel_err']:.1e}"), HOLDS,
               ("gemmlab's V1 is this kernel line for line", "gemmlab 的 V1 与此核函数逐行一致"),
               bench_cmd(V1, SEED), "this run", values={"ms": r["median_ms"], "gflops": r["gflops"]})


def _tolerance(f: Facts) -> Row:
    r = f.rec(V1, SEED)
    if not r or r.get("max_abs_err") is None:
        return _missing(("V1's largest error at the seed shape", "种子形状下 V1 的最大误差"), bench_cmd(V1, SEED))
    e = r["max_abs_err"]
    ok = e < 5e-4
    return Row((f"V1's largest error against float64 at {label(SEED)}: {e:.1e}",
                f"V1 在 {label(SEED)} 相对 float64 的最大误差：{e:.1e}"), HOLDS if ok else FAILS,
               (("within 5e-4" if ok else "past 5e-4: a correct FP32 sum over K = 4096 of N(0,1) products errs by "
                 "more; gemmlab checks the relative Frobenius error against a tolerance that grows with K"),
                ("在 5e-4 之内" if ok else "超过 5e-4：K = 4096 个 N(0,1) 乘积的正确 FP32 求和误差就会更大；"
                 "gemmlab 改用随 K 放宽容差的相对 Frobenius 误差")),
               bench_cmd(V1, SEED), "this run", values={"max_abs_err": e})


def _per_thread(f: Facts) -> Row:
    k = 1024
    read, flops = 8 * k + 4, 2 * k
    return Row((f"K = {k}: {fmt(read)} bytes and {fmt(flops)} FLOPs per thread, {fmt(flops / read, 4)} FLOP/byte",
                f"K = {k}：每线程 {fmt(read)} 字节、{fmt(flops)} FLOPs，{fmt(flops / read, 4)} FLOP/byte"),
               ONLY_AS, ("what a thread asks for; L1 serves most of it (the caches' rows below)",
                         "这是线程发出的请求量；大部分由 L1 提供（见下方缓存相关各行）"),
               "naive_traffic (gemmlab roofline)", "model",
               ("loads a thread issues", "线程发出的加载量"), {"bytes": read, "flops": flops})


def _dram_counters(f: Facts, kernel: str = V1) -> tuple | None:
    prof = f.profile(kernel)
    if not prof:
        return None
    return prof["dram_bytes"], prof["l2_bytes"], prof["l1_bytes"]


def _reread(f: Facts) -> Row:
    sq = Problem(*S4096)
    issued = 8 * sq.m * sq.n * sq.k
    got = _dram_counters(f)
    if got is None:
        return Row((f"{fmt(issued / 1e9)} GB of loads at {label(S4096)}", f"{label(S4096)} 时加载 {fmt(issued / 1e9)} GB"),
                   ONLY_AS, ("the count of loads issued", "按发出的加载计数"), "naive_traffic", "model",
                   ("loads issued", "发出的加载"))
    dram, l2, l1 = got
    return Row((f"V1 at {label(S4096)}: {fmt(issued / 1e9)} GB of loads issued, {fmt(l1 / 1e9)} GB of L1 requests, "
                f"{fmt(l2 / 1e9, 1)} GB through L2, {fmt(dram / 1e9, 2)} GB from DRAM",
                f"V1 在 {label(S4096)}：发出加载 {fmt(issued / 1e9)} GB，L1 请求 {fmt(l1 / 1e9)} GB，"
                f"经 L2 {fmt(l2 / 1e9, 1)} GB，来自 DRAM {fmt(dram / 1e9, 2)} GB"), ONLY_AS,
               ("the re-reads are issued, but L1 and L2 serve all but a fraction of them",
                "重复读取确实发出了，但 L1 和 L2 服务了其中绝大部分"),
               "gemmlab profile cuda/v1_naive --shape 4096", PROFILED,
               ("loads issued, not DRAM traffic", "发出的加载，而非 DRAM 流量"),
               {"issued": issued, "l1": l1, "l2": l2, "dram": dram})


def _read_global(f: Facts) -> Row:
    row = _reread(f)
    sq = Problem(*S4096)
    row.reason = ((f"8MNK = {fmt(8 * sq.m * sq.n * sq.k / 1e9)} GB is what the threads ask for; DRAM delivers "
                   f"{fmt(row.values['dram'] / 1e9, 2)} GB") if "dram" in row.values else row.reason[0],
                  (f"8MNK = {fmt(8 * sq.m * sq.n * sq.k / 1e9)} GB 是线程请求量；DRAM 实际提供 "
                   f"{fmt(row.values['dram'] / 1e9, 2)} GB") if "dram" in row.values else row.reason[1])
    return row


def _redundancy(f: Facts) -> Row:
    n = 1024
    got = _dram_counters(f)
    model_en, model_zh = f"{fmt(n)}× at N = {n} (8N³ / 8N²)", f"N = {n} 时 {fmt(n)}×（8N³ / 8N²）"
    if got is None:
        return Row((model_en, model_zh), ONLY_AS, ("the count of loads issued", "按发出的加载计数"), "naive_traffic",
                   "model", ("loads issued", "发出的加载"))
    dram = got[0]
    ideal = 8 * 4096 ** 2
    return Row((f"{model_en}; at N = 4096 DRAM reads {fmt(dram / ideal, 1)}× the 8N² bytes, not 4,096×",
                f"{model_zh}；N = 4096 时 DRAM 读取量为 8N² 的 {fmt(dram / ideal, 1)}×，而非 4,096×"), ONLY_AS,
               ("the caches keep all but a few of the re-reads from DRAM", "缓存挡住了几乎全部重复读取"),
               "gemmlab profile cuda/v1_naive --shape 4096", PROFILED, ("loads issued", "发出的加载"),
               {"dram_over_ideal": dram / ideal})


def _quarter(f: Facts) -> Row:
    sq = Problem(*S4096)
    got = _dram_counters(f)
    r = f.rec(V1, S4096)
    parts_en, parts_zh, values = [], [], {}
    if got:
        i = sq.flops() / got[0]
        parts_en.append(f"{fmt(i, 1)} FLOP per DRAM byte at {label(S4096)} ({PROFILED})")
        parts_zh.append(f"{label(S4096)} 时每 DRAM 字节 {fmt(i, 1)} FLOP（{PROFILED}）")
        values["dram_intensity"] = i
    if r and f.copy_gbs:
        need = r["gflops"] / f.copy_gbs
        parts_en.append(f"to run at the measured {fmt(r['gflops'])} GFLOPS from DRAM alone ({fmt(f.copy_gbs)} GB/s) "
                        f"V1 needs {fmt(need, 2)} FLOP/byte")
        parts_zh.append(f"若只靠 DRAM（{fmt(f.copy_gbs)} GB/s）达到实测 {fmt(r['gflops'])} GFLOPS，V1 需要 "
                        f"{fmt(need, 2)} FLOP/byte")
        values["needed"] = need
    if not parts_en:
        return _missing(("V1's FLOPs per DRAM byte", "V1 每 DRAM 字节的 FLOPs"), bench_cmd(V1, S4096))
    return Row(("; ".join(parts_en), "；".join(parts_zh)), FAILS,
               ("0.25 counts every load as DRAM traffic; on the H200 the caches raise the intensity that DRAM sees "
                "far past it", "0.25 把每次加载都算作 DRAM 流量；H200 的缓存使 DRAM 所见计算强度远高于此"),
               "gemmlab profile cuda/v1_naive --shape 4096; " + bench_cmd(V1, S4096),
               "this run; " + PROFILED if r else PROFILED, values=values)


def _roofline(f: Facts) -> Row:
    roofs = f.roofs()
    fp32 = roofs.flop_per_clk["fp32"] * roofs.sm_count * roofs.max_clock_mhz * 1e6 / 1e12
    return Row((f"H200: {fmt(roofs.dram_gbs)} GB/s DRAM ({roofs.source.get('dram')}), {fmt(roofs.l2_gbs)} GB/s L2 "
                f"({roofs.source.get('l2')}), FP32 {fmt(fp32, 1)} TFLOPS ({roofs.source.get('fp32')})",
                f"H200：DRAM {fmt(roofs.dram_gbs)} GB/s（{roofs.source.get('dram')}），L2 {fmt(roofs.l2_gbs)} GB/s"
                f"（{roofs.source.get('l2')}），FP32 {fmt(fp32, 1)} TFLOPS（{roofs.source.get('fp32')}）"), ONLY_AS,
               ("one roof per memory level: gemmlab bounds a kernel by each level's bytes over its own bandwidth",
                "每级存储一条屋顶：gemmlab 用每级的字节数除以该级带宽来约束核函数"),
               "gemmlab roofline --measure", f.ceilings_source or "datasheet",
               ("one roof of many: DRAM's; L2 and L1 have their own", "多条屋顶之一（DRAM）；L2 与 L1 各有屋顶"),
               {"dram_gbs": roofs.dram_gbs, "fp32_tflops": fp32})


def _ridge(f: Facts) -> Row:
    a = A100.ridge("fp32")
    h = H200.ridge("fp32")
    return Row((f"A100 {fmt(a, 2)} FLOP/byte; H200 {fmt(h, 1)} (datasheet {fmt(H200.tflops['fp32'], 1)} TFLOPS, "
                f"{fmt(H200.dram_gbs)} GB/s)",
                f"A100 {fmt(a, 2)} FLOP/byte；H200 {fmt(h, 1)}（规格 {fmt(H200.tflops['fp32'], 1)} TFLOPS，"
                f"{fmt(H200.dram_gbs)} GB/s）"), HOLDS,
               ("19.5e12 / 1555e9, as the seed computes", "19.5e12 / 1555e9，与种子计算一致"),
               "gemmlab roofline --gpu a100", "model", values={"a100": a, "h200": h})


def _single_roof(f: Facts) -> Row:
    r = f.rec(V1, S4096)
    committed = committed_above_seed_roof()
    extra = ("", "")
    if committed:
        above, carrying, _ = committed
        extra = (f"; in the committed H200 results {fmt(above)} of {fmt(carrying)} verified GPU records run above "
                 "their seeds' roof", f"；在已提交的 H200 结果中，{fmt(carrying)} 条已验证 GPU 记录里有 {fmt(above)} 条超过种子屋顶")
    if not r or not f.copy_gbs:
        row = _missing(("V1 against its single DRAM roof", "V1 与其单一 DRAM 屋顶"), bench_cmd(V1, S4096))
        row.measured = (row.measured[0] + extra[0], row.measured[1] + extra[1])
        return row
    roof = f.copy_gbs * 0.25
    return Row((f"V1 at {label(S4096)}: {fmt(r['gflops'])} GFLOPS; its single roof {fmt(f.copy_gbs)} GB/s × 0.25 = "
                f"{fmt(roof)} GFLOPS" + extra[0],
                f"V1 在 {label(S4096)}：{fmt(r['gflops'])} GFLOPS；单屋顶 {fmt(f.copy_gbs)} GB/s × 0.25 = {fmt(roof)} GFLOPS"
                + extra[1]),
               FAILS if r["gflops"] > roof else HOLDS,
               (f"V1 runs {fmt(r['gflops'] / roof, 1)}× above the roof that would hold if every load came from DRAM",
                f"V1 的速度是“每次加载都来自 DRAM”时屋顶的 {fmt(r['gflops'] / roof, 1)}×"),
               bench_cmd(V1, S4096) + "; " + ", ".join(committed[2]) if committed else bench_cmd(V1, S4096),
               "this run" + ("; committed results" if committed else ""), values={"gflops": r["gflops"], "roof": roof})


def _waits_on_bandwidth(f: Facts) -> Row:
    r = f.rec(V1, S4096)
    if not r:
        return _missing(("V1's bandwidth in the seed's count", "按种子计数的 V1 带宽"), bench_cmd(V1, S4096))
    sq = Problem(*S4096)
    gbs = 8 * sq.m * sq.n * sq.k / (r["median_ms"] * 1e-3) / 1e9
    mod = f.model(V1, S4096)
    return Row((f"V1's loads at {label(S4096)} arrive at {fmt(gbs)} GB/s in the seed's count; gemmlab's levels bound "
                f"it by {mod['bound']} at {_ms_text(mod['predicted_ms'])} ms, it runs {_ms_text(r['median_ms'])} ms",
                f"V1 在 {label(S4096)} 按种子计数的加载速率为 {fmt(gbs)} GB/s；gemmlab 的分级模型其瓶颈为 {mod['bound']}，"
                f"预测 {_ms_text(mod['predicted_ms'])} ms，实测 {_ms_text(r['median_ms'])} ms"), ONLY_AS,
               ("no DRAM delivers that: L1 serves the loads, and each FFMA waits on its own loads' latency",
                "没有 DRAM 能提供这一速率：加载由 L1 提供，每条 FFMA 都在等待自身加载的延迟"),
               bench_cmd(V1, S4096), "this run", ("a memory-pipeline (L1, latency) bound, not DRAM bandwidth",
                                                  "存储流水线（L1、延迟）受限，而非 DRAM 带宽受限"),
               {"gbs": gbs, "predicted_ms": mod["predicted_ms"], "ms": r["median_ms"]})


# -- the first seed's measured table ---------------------------------------------------------------------------
SQ = Problem(*S4096)


def _v1_table(f: Facts) -> Row:
    seed_gflops = SQ.flops() / 0.120 / 1e9
    r = f.rec(V1, S4096)
    en = f"the seed's 120 ms is {fmt(seed_gflops)} GFLOPS at 4096³"
    zh = f"种子的 120 ms 在 4096³ 对应 {fmt(seed_gflops)} GFLOPS"
    if r:
        en += f"; H200 cuda/v1_naive {_ms_text(r['median_ms'])} ms, {fmt(r['gflops'])} GFLOPS"
        zh += f"；H200 上 cuda/v1_naive {_ms_text(r['median_ms'])} ms，{fmt(r['gflops'])} GFLOPS"
    return Row((en, zh), HOLDS, ("120 ms and 1150 GFLOPS agree with each other", "120 ms 与 1150 GFLOPS 彼此一致"),
               bench_cmd(V1, S4096), "this run" if r else "the seed's figures", values={"seed_gflops": seed_gflops})


def _v1_over_own_roof(f: Facts) -> Row:
    roof = A100.dram_gbs * 0.25
    return Row((f"the seed's roof for V1: {fmt(A100.dram_gbs)} GB/s × 0.25 = {fmt(roof)} GFLOPS; its V1 runs 1150, "
                f"{fmt(1150 / roof, 2)}× that",
                f"种子给 V1 的屋顶：{fmt(A100.dram_gbs)} GB/s × 0.25 = {fmt(roof)} GFLOPS；其 V1 为 1150，是屋顶的 "
                f"{fmt(1150 / roof, 2)}×"), FAILS,
               ("the seed's own measurement passes its own roof: the A100's caches serve V1's re-reads too",
                "种子自己的测量超过了它自己的屋顶：A100 的缓存同样服务了 V1 的重复读取"),
               "arithmetic on the seed's figures (gemmlab roofline --gpu a100)", "the seed's figures",
               values={"roof": roof})


def _bw_util(f: Facts) -> Row:
    model_util = 8 * SQ.m * SQ.n * SQ.k / 0.120 / (A100.dram_gbs * 1e9) * 100
    comp_util = SQ.compulsory_bytes() / 0.120 / (A100.dram_gbs * 1e9) * 100
    r = f.rec(V1, S4096)
    en = (f"on the seed's own A100 figures: 8MNK bytes in 120 ms is {fmt(model_util)}% of 1555 GB/s; the compulsory "
          f"bytes {fmt(comp_util, 2)}%")
    zh = f"按种子自己的 A100 数据：120 ms 内 8MNK 字节为 1555 GB/s 的 {fmt(model_util)}%；必需字节为 {fmt(comp_util, 2)}%"
    if r and r.get("bw_util_model") is not None:
        en += f"; H200 V1: {fmt(r['bw_util_model'])}% (seed's count)"
        zh += f"；H200 上 V1：{fmt(r['bw_util_model'])}%（种子计数）"
    return Row((en, zh), FAILS, ("neither count gives 8%; the seed's count passes 100% because caches serve the loads",
                                 "两种计数都得不到 8%；按种子计数超过 100%，因为缓存服务了这些加载"),
               bench_cmd(V1, S4096), "the seed's figures" + ("; this run" if r else ""),
               values={"seed_count_pct": model_util, "compulsory_pct": comp_util})


def _cublas_172(f: Facts) -> Row:
    t = SQ.flops() / 0.8e-3 / 1e12
    fp32, tf32 = f.rec(CUBLAS, S4096), f.rec(CUBLAS_TF32, S4096)
    en = (f"0.8 ms is {fmt(t, 1)} TFLOPS: {fmt(t / A100.tflops['fp32'], 1)}× the A100's FP32 peak and past its dense "
          f"TF32 peak of {fmt(A100.tflops['tf32'])} (gemmlab's a100 spec); BF16's {fmt(A100.tflops['bf16'])} allows it")
    zh = (f"0.8 ms 即 {fmt(t, 1)} TFLOPS：为 A100 FP32 峰值的 {fmt(t / A100.tflops['fp32'], 1)}×，也超过其稠密 TF32 峰值 "
          f"{fmt(A100.tflops['tf32'])}（gemmlab 的 a100 规格）；只有 BF16 的 {fmt(A100.tflops['bf16'])} 能达到")
    values = {"seed_tflops": t}
    if fp32:
        en += f"; H200 cuBLAS FP32 {fmt(fp32['tflops'], 1)} TFLOPS"
        zh += f"；H200 上 cuBLAS FP32 {fmt(fp32['tflops'], 1)} TFLOPS"
        values["h200_fp32"] = fp32["tflops"]
    if tf32:
        en += f", TF32 {fmt(tf32['tflops'], 1)}"
        zh += f"，TF32 {fmt(tf32['tflops'], 1)}"
        values["h200_tf32"] = tf32["tflops"]
    return Row((en, zh), FAILS, ("not an FP32 figure, nor a dense TF32 one: a half-precision tensor-core result",
                                 "既不是 FP32 数据，也不是稠密 TF32 数据：是半精度张量核心的结果"),
               bench_cmd(CUBLAS, S4096) + "; " + bench_cmd(CUBLAS_TF32, S4096),
               "the seed's figures" + ("; this run" if fp32 else ""), values=values)


def _pct_peak(f: Facts) -> Row:
    r = f.rec(V1, S4096)
    en, zh = f"1150 / 19,500 = {fmt(1150 / 195, 1)}%", f"1150 / 19,500 = {fmt(1150 / 195, 1)}%"
    if r:
        pct = r["gflops"] / (H200.tflops["fp32"] * 1e3) * 100
        en += f"; H200 V1 at {label(S4096)}: {fmt(pct, 1)}% of {fmt(H200.tflops['fp32'], 1)} TFLOPS"
        zh += f"；H200 上 V1 在 {label(S4096)}：{fmt(H200.tflops['fp32'], 1)} TFLOPS 的 {fmt(pct, 1)}%"
    return Row((en, zh), HOLDS, ("the seed's arithmetic is right", "种子的算术正确"), bench_cmd(V1, S4096),
               "the seed's figures" + ("; this run" if r else ""))


def _gap_100x(f: Facts) -> Row:
    r, c = f.rec(V1, S4096), f.rec(CUBLAS, S4096)
    en = f"the seed's 172,000 / 1150 = {fmt(172000 / 1150)}×, a tensor-core figure against an FP32 kernel"
    zh = f"种子的 172,000 / 1150 = {fmt(172000 / 1150)}×，是张量核心数据与 FP32 核函数相比"
    if not (r and c):
        row = _missing(("V1 and cuBLAS FP32 at 4096³", "4096³ 下的 V1 与 cuBLAS FP32"), bench_cmd(V1, S4096), (en, zh))
        return row
    gap = c["tflops"] / r["tflops"]
    return Row((en + f"; at the same precision on the H200 cuBLAS FP32 is {fmt(gap, 1)}× V1",
                zh + f"；H200 上同精度 cuBLAS FP32 是 V1 的 {fmt(gap, 1)}×"), ONLY_AS,
               ("at one precision the gap is an order smaller", "同精度下差距小一个数量级"),
               bench_cmd(CUBLAS, S4096), "this run", ("FP32 against half-precision tensor cores", "FP32 对比半精度张量核心"),
               {"gap": gap})


# -- V2 --------------------------------------------------------------------------------------------------------
def _v2_heading(f: Facts) -> Row:
    return Row(("gemmlab: cuda/v2_smem, numba/v2_smem (level 2)", "gemmlab：cuda/v2_smem、numba/v2_smem（第 2 级）"), FAILS,
               ("the heading says V1; the kernel is sgemm_kernel2, the V2 the text announced just before",
                "标题写作 V1；实际是 sgemm_kernel2，即前文预告的 V2"), "gemmlab list --kernels '*/v2_*'", "model")


def _fewer_loads(f: Facts) -> Row:
    m1, m2 = f.model(V1, S4096), f.model(V2, S4096)
    r = m1["modeled_read_bytes"] / m2["modeled_read_bytes"]
    p1, p2 = f.profile(V1), f.profile(V2)
    g1, g2 = fmt(m1["modeled_read_bytes"] / 1e9), fmt(m2["modeled_read_bytes"] / 1e9, 1)
    en = f"loads issued at {label(S4096)}: V1 {g1} GB, V2 {g2} GB ({fmt(r)}× fewer)"
    zh = f"{label(S4096)} 时发出的加载：V1 {g1} GB，V2 {g2} GB（少 {fmt(r)}×）"
    if p1 and p2:
        en += f"; through L2: V1 {fmt(p1['l2_bytes'] / 1e9, 1)} GB, V2 {fmt(p2['l2_bytes'] / 1e9, 1)} GB"
        zh += f"；经 L2：V1 {fmt(p1['l2_bytes'] / 1e9, 1)} GB，V2 {fmt(p2['l2_bytes'] / 1e9, 1)} GB"
    return Row((en, zh), ONLY_AS, ("L1 already served V1's re-reads, so L2 and DRAM see about the same bytes",
                                   "V1 的重复读取本已由 L1 提供，因此 L2 与 DRAM 看到的字节数相近"),
               "gemmlab roofline --shape 4096; gemmlab profile cuda/v1_naive,cuda/v2_smem --shape 4096",
               PROFILED if p1 else "model", ("loads issued", "发出的加载"), {"ratio": r})


def _reuse(f: Facts) -> Row:
    m1, m2 = f.model(V1, S4096), f.model(V2, S4096)
    r = m1["modeled_read_bytes"] / m2["modeled_read_bytes"]
    return Row((f"V1's loads over V2's at {label(S4096)}: {fmt(r)}× (TILE = 32)",
                f"{label(S4096)} 时 V1 与 V2 加载量之比：{fmt(r)}×（TILE = 32）"),
               HOLDS, ("each staged value serves the tile's 32 threads", "每个暂存值服务 tile 中的 32 个线程"),
               "gemmlab roofline --shape 4096", "model", values={"ratio": r})


def _tile_intensity(f: Facts) -> Row:
    m2 = f.model(V2, S4096)
    i = m2["modeled_intensity"]
    en = f"{fmt(i, 2)} FLOP/byte for 32×32 tiles at {label(S4096)} (8 in the limit)"
    zh = f"{label(S4096)} 时 32×32 tile 为 {fmt(i, 2)} FLOP/byte（极限为 8）"
    prof = f.profile(V2)
    values = {"intensity": i}
    if prof:
        d = SQ.flops() / prof["dram_bytes"]
        en += f"; per DRAM byte {fmt(d, 1)}"
        zh += f"；按 DRAM 字节为 {fmt(d, 1)}"
        values["dram_intensity"] = d
    return Row((en, zh), HOLDS, ("the formula is gemmlab's tiled_traffic; C's write makes it slightly less than 8",
                                 "该公式即 gemmlab 的 tiled_traffic；写 C 使其略低于 8"),
               "gemmlab roofline --shape 4096", PROFILED if prof else "model", values=values)


def _near_ridge(f: Facts) -> Row:
    m2 = f.model(V2, SEED)
    r = f.rec(V2, SEED)
    en = (f"32×32 tiles: {fmt(m2['modeled_intensity'], 2)} FLOP/byte, left of the H200's ridge "
          f"{fmt(m2['seed_ridge'], 1)}; gemmlab's levels bound V2 by {m2['bound']}")
    zh = (f"32×32 tile：{fmt(m2['modeled_intensity'], 2)} FLOP/byte，位于 H200 脊点 {fmt(m2['seed_ridge'], 1)} 左侧；"
          f"gemmlab 的分级模型中 V2 的瓶颈为 {m2['bound']}")
    if r:
        en += f"; V2 runs {fmt(r['gflops'])} GFLOPS against a single roof of {fmt(m2['seed_predicted_tflops'] * 1e3)}"
        zh += f"；V2 实测 {fmt(r['gflops'])} GFLOPS，单屋顶为 {fmt(m2['seed_predicted_tflops'] * 1e3)}"
    return Row((en, zh), ONLY_AS, ("larger tiles move the seed's intensity past the ridge; what then binds is shared "
                                   "memory and issue, not DRAM",
                                   "更大的 tile 才能越过脊点；此后的瓶颈是共享内存与指令发射，而非 DRAM"),
               bench_cmd(V2, SEED), "this run" if r else "model",
               ("a direction: 32×32 is not enough", "方向正确：32×32 还不够"),
               {"intensity": m2["modeled_intensity"], "ridge": m2["seed_ridge"]})


def seed_guard_strays(m: int, n: int, tile: int = 32) -> int:
    """Threads of the seed's V2 grid that store past C's bounds under its guard ``row < M || col < N``."""
    rows = np.arange(-(-m // tile) * tile)[:, None]
    cols = np.arange(-(-n // tile) * tile)[None, :]
    return int(np.count_nonzero(((rows < m) | (cols < n)) & ~((rows < m) & (cols < n))))


def _store_guard(f: Facts) -> Row:
    seed, ragged = seed_guard_strays(*SEED[:2]), seed_guard_strays(1000, 1000)
    return Row((f"stores outside C: {fmt(seed)} at {label(SEED)}, {fmt(ragged)} at 1000×1000",
                f"越界写入 C 的次数：{label(SEED)} 时 {fmt(seed)}，1000×1000 时 {fmt(ragged)}"), FAILS,
               ("`||` stores from threads past one edge; gemmlab's V2 stores only when both hold, and verifies on "
                "ragged shapes", "`||` 让越过一条边界的线程也写入；gemmlab 的 V2 要求两者同时成立，并在非整块形状上验证"),
               "pytest tests/kernels/cuda/sgemm/test_cuda_host.py -k v2_seed_store_guard", "model",
               values={"seed": seed, "ragged": ragged})


# -- the second seed -------------------------------------------------------------------------------------------
def _cpu_loop(f: Facts) -> Row:
    r = f.rec(V0, f.cpu_shape)
    if not r:
        return _missing(("V0", "V0"), bench_cmd(V0, f.cpu_shape))
    return Row((f"cpu/v0_naive at {label(f.cpu_shape)}: {_ms_text(r['median_ms'])} ms, {fmt(r['gflops'], 2)} GFLOPS",
                f"cpu/v0_naive 在 {label(f.cpu_shape)}：{_ms_text(r['median_ms'])} ms，{fmt(r['gflops'], 2)} GFLOPS"),
               HOLDS,
               ("the same loop as multi_cpu with the arguments in another order; gemmlab's V0",
                "与 multi_cpu 相同的循环，仅参数顺序不同；即 gemmlab 的 V0"),
               bench_cmd(V0, f.cpu_shape), "this run", values={"ms": r["median_ms"]})


def _cpu_pitfall(f: Facts) -> Row:
    v0, blas = f.rec(V0, f.cpu_shape), f.rec(BLAS, f.cpu_shape)
    if not (v0 and blas):
        return _missing(("V0 and the host BLAS", "V0 与主机 BLAS"), bench_cmd(BLAS, f.cpu_shape))
    r = v0["median_ms"] / blas["median_ms"]
    return Row((f"at {label(f.cpu_shape)} V0 takes {fmt(r)}× the host BLAS's time ({_ms_text(blas['median_ms'])} ms)",
                f"{label(f.cpu_shape)} 时 V0 耗时为主机 BLAS（{_ms_text(blas['median_ms'])} ms）的 {fmt(r)}×"), HOLDS,
               ("the inner loop walks B down a column, a cache miss per step once a column outgrows L1",
                "内层循环按列遍历 B，列超出 L1 后每步一次缓存缺失"),
               bench_cmd(BLAS, f.cpu_shape), "this run", values={"ratio": r})


def _block_choice(f: Facts) -> Row:
    big, small = _block_16(f, S1024)
    if big is None or small is None:
        return _missing(("V1 with 16×16 and 32×32 blocks at 1024³", "1024³ 下 16×16 与 32×32 block 的 V1"),
                        bench_cmd(V1_16, S1024))
    return Row((f"at {label(S1024)}: 32×32 {_ms_text(big)} ms, 16×16 {_ms_text(small)} ms",
                f"{label(S1024)} 时：32×32 {_ms_text(big)} ms，16×16 {_ms_text(small)} ms"), HOLDS,
               (f"both verify; 16×16 takes {fmt(small / big, 2)}× the time",
                f"两者都通过验证；16×16 耗时为 {fmt(small / big, 2)}×"),
               bench_cmd(V1_16, S1024), "this run", values={"ms_32": big, "ms_16": small})


def _naive_kernel(f: Facts) -> Row:
    r, nr = f.rec(V1, S1024), f.rec(NV1, S1024)
    if not r:
        return _missing(("V1 at 1024³", "1024³ 下的 V1"), bench_cmd(V1, S1024))
    en = f"cuda/v1_naive {_ms_text(r['median_ms'])} ms at {label(S1024)}"
    zh = f"cuda/v1_naive 在 {label(S1024)}：{_ms_text(r['median_ms'])} ms"
    if nr:
        en += f", numba/v1_naive {_ms_text(nr['median_ms'])} ms"
        zh += f"，numba/v1_naive {_ms_text(nr['median_ms'])} ms"
    return Row((en, zh), HOLDS, ("the same kernel as sgemm_kernel1; it runs", "与 sgemm_kernel1 相同；能跑"),
               bench_cmd(V1, S1024), "this run")


def _slower_than_cpu(f: Facts) -> Row:
    v1, v0, blas = f.rec(V1, S1024), f.rec(V0, S1024), f.rec(BLAS, S1024)
    if not v1 or not v0:
        return _missing(("V1 and V0 at 1024³", "1024³ 下的 V1 与 V0"), bench_cmd(V1, S1024) + "; " + bench_cmd(V0, S1024))
    t1, t0, slower = _ms_text(v1["median_ms"]), _ms_text(v0["median_ms"]), fmt(v0["median_ms"] / v1["median_ms"])
    en = f"at {label(S1024)}: V1 {t1} ms, V0 {t0} ms ({slower}× slower)"
    zh = f"{label(S1024)} 时：V1 {t1} ms，V0 {t0} ms（慢 {slower}×）"
    if blas:
        en += f"; the host BLAS {_ms_text(blas['median_ms'])} ms"
        zh += f"；主机 BLAS {_ms_text(blas['median_ms'])} ms"
    return Row((en, zh), FAILS if v1["median_ms"] < v0["median_ms"] else HOLDS,
               ("kernel time against kernel time, V1 is far faster than the CPU loop; a first run's context start, "
                "compilation and copies are not the kernel (not measured here)",
                "按核函数时间比较，V1 远快于 CPU 循环；首次运行的上下文初始化、编译与拷贝不属于核函数（此处未测量）"),
               bench_cmd(V1, S1024) + "; " + bench_cmd(V0, S1024), "this run",
               values={"v1_ms": v1["median_ms"], "v0_ms": v0["median_ms"]})


def _latency(f: Facts) -> Row:
    r = f.rec(V1, S1024)
    if not r:
        return _missing(("V1 against its levels' bound", "V1 与其分级模型界"), bench_cmd(V1, S1024))
    mod = f.model(V1, S1024)
    ratio = r["median_ms"] / mod["predicted_ms"]
    return Row((f"V1 at {label(S1024)} runs {fmt(ratio, 2)}× its levels' bound ({mod['bound']}, "
                f"{_ms_text(mod['predicted_ms'])} ms)",
                f"V1 在 {label(S1024)} 的耗时为其分级模型界（{mod['bound']}，{_ms_text(mod['predicted_ms'])} ms）的 {fmt(ratio, 2)}×"),
               HOLDS, ("no level's bandwidth binds it; each FFMA waits on its two loads with no other work to overlap",
                       "没有哪一级带宽是瓶颈；每条 FFMA 都在等待两次加载，且没有其他工作可重叠"),
               bench_cmd(V1, S1024), "this run", values={"ratio": ratio})


def _coalescing(f: Facts, shape=S1024) -> Row:
    base, rows = f.ms(V1, shape), f.ms(V1_ROWS, shape)
    l1 = f.model(V1_ROWS, shape)["levels"]["l1"]["bytes"] / f.model(V1, shape)["levels"]["l1"]["bytes"]
    why = ("threads (0,0) and (0,1) are lanes 0 and 1 of one warp: they read B[0] and B[1], adjacent, so a warp "
           "reads 128 contiguous bytes of B and one broadcast float of A: coalesced",
           "线程 (0,0) 与 (0,1) 是同一 warp 的第 0、1 号 lane：读 B[0] 与 B[1]，地址相邻，故一个 warp 读取 B 的连续 128 "
           "字节和 A 的一个广播值：是合并访问")
    if base is None or rows is None:
        row = _missing(("V1 with threadIdx.x along M", "threadIdx.x 映射到 M 的 V1"), bench_cmd(V1_ROWS, shape),
                       (f"the model: {fmt(l1, 1)}× the L1 sectors", f"模型：L1 扇区数为 {fmt(l1, 1)}×"))
        row.verdict, row.reason = FAILS, why
        return row
    return Row((f"at {label(shape)}: as written {_ms_text(base)} ms; threadIdx.x along M {_ms_text(rows)} ms "
                f"({fmt(rows / base, 1)}×, {fmt(l1, 1)}× the L1 sectors)",
                f"{label(shape)} 时：原写法 {_ms_text(base)} ms；threadIdx.x 映射到 M 为 {_ms_text(rows)} ms"
                f"（{fmt(rows / base, 1)}×，L1 扇区数 {fmt(l1, 1)}×）"), FAILS,
               (why[0] + "; the uncoalesced mapping is the slow one", why[1] + "；非合并的映射才是慢的那个"),
               bench_cmd(V1_ROWS, shape), "this run", values={"ms": base, "ms_rows_on_x": rows, "l1_ratio": l1})


def _coalescing_table(f: Facts) -> Row:
    row = _coalescing(f, SEED)
    row.reason = (("B is walked down a column by each thread, but across a warp each k reads a row segment of B: "
                   "coalesced" + ("" if row.verdict == NOT_MEASURED else "; only threadIdx.x along M is uncoalesced")),
                  ("每个线程沿列访问 B，但在一个 warp 内每个 k 读取的是 B 的一段行：合并访问"
                   + ("" if row.verdict == NOT_MEASURED else "；只有 threadIdx.x 映射到 M 时才非合并")))
    return row


def _reread_counts(f: Facts) -> Row:
    mod = f.model(V1, S1024)
    issued = mod["modeled_read_bytes"]
    l1 = fmt(mod["levels"]["l1"]["bytes"] / 1e9, 2)
    return Row((f"at {label(S1024)} the model: {fmt(issued / 1e9, 2)} GB issued, {l1} GB "
                f"of L1 requests, {fmt(mod['l2_bytes'] / 1e9, 3)} GB through L2, {fmt(mod['dram_bytes'] / 1e9, 3)} GB "
                "from DRAM",
                f"{label(S1024)} 时模型：发出 {fmt(issued / 1e9, 2)} GB，L1 请求 {l1} GB，"
                f"经 L2 {fmt(mod['l2_bytes'] / 1e9, 3)} GB，来自 DRAM {fmt(mod['dram_bytes'] / 1e9, 3)} GB"), ONLY_AS,
               ("the re-reads are issued; a block's 32 rows and columns reach L2 once, and DRAM once",
                "重复读取确实发出；一个 block 的 32 行与列只经过 L2 一次、DRAM 一次"),
               "gemmlab roofline --shape 1024", "model", ("loads issued", "发出的加载"),
               {"issued": issued, "l2": mod["l2_bytes"], "dram": mod["dram_bytes"]})


def _billion(f: Facts) -> Row:
    n = 1024
    a_loads, all_loads = n ** 3, 2 * n ** 3
    return Row((f"A's loads: {fmt(a_loads)}; with B's: {fmt(all_loads)}",
                f"A 的加载：{fmt(a_loads)}；加上 B：{fmt(all_loads)}"),
               ONLY_AS, ("each thread reads 2K values, K of A and K of B", "每个线程读取 2K 个值：A 的 K 个与 B 的 K 个"),
               "naive_traffic (gemmlab roofline --shape 1024)", "model", ("A's loads alone", "仅 A 的加载"),
               {"a": a_loads, "all": all_loads})


def _five_hundred(f: Facts) -> Row:
    n = 1024
    half = n ** 3 / (2 * n * n)
    each = 2 * n ** 3 / (2 * n * n)
    mod = f.model(V1, S1024)
    l2 = (mod["l2_bytes"] - 4 * n * n) / (4 * 2 * n * n)  # the reads: C's write is the rest
    return Row((f"{fmt(n ** 3)} / {fmt(2 * n * n)} = {fmt(half)}; counting B's loads too, each element is loaded "
                f"{fmt(each)} times; through L2 (model) {fmt(l2, 1)} times",
                f"{fmt(n ** 3)} / {fmt(2 * n * n)} = {fmt(half)}；算上 B 的加载，每个元素被加载 {fmt(each)} 次；"
                f"经 L2（模型）为 {fmt(l2, 1)} 次"), ONLY_AS,
               ("the seed divides A's loads by both matrices' elements; each element is loaded N times, and "
                "the caches reduce that to one load per block row or column through L2",
                "种子用 A 的加载数除以两个矩阵的元素数；实际每个元素被加载 N 次，而缓存使其经 L2 时降为每个 block 行或列一次"),
               "gemmlab roofline --shape 1024", "model", ("half the count (512, rounded to 500)", "一半的计数（512，取整为 500）"),
               {"seed": half, "each": each, "l2": l2})


def _ratio_one(f: Facts) -> Row:
    mod = f.model(V1, S1024)
    per_elem = mod["modeled_intensity"] * 4
    return Row((f"{fmt(per_elem, 2)} FLOP per element loaded ({fmt(mod['modeled_intensity'], 2)} FLOP/byte)",
                f"每个加载元素 {fmt(per_elem, 2)} FLOP（{fmt(mod['modeled_intensity'], 2)} FLOP/byte）"), HOLDS,
               ("the first seed's 0.25 FLOP/byte, counted in elements", "即第一篇的 0.25 FLOP/byte，按元素计"),
               "gemmlab roofline --shape 1024", "model", values={"per_element": per_elem})


def _needs_ten(f: Facts) -> Row:
    roofs = f.roofs()
    fp32 = roofs.flop_per_clk["fp32"] * roofs.sm_count * roofs.max_clock_mhz * 1e6
    per_elem = fp32 / (roofs.dram_gbs * 1e9 / 4)
    sheet = H200.ridge("fp32") * 4
    return Row((f"H200: {fmt(per_elem, 1)} FLOP per element from DRAM at the roofs gemmlab uses "
                f"(datasheet: {fmt(sheet, 1)})",
                f"H200：按 gemmlab 所用屋顶，每个来自 DRAM 的元素需 {fmt(per_elem, 1)} FLOP（规格值：{fmt(sheet, 1)}）"), FAILS,
               ("the ridge in FLOP per element is four times the ridge in FLOP per byte; 10 is too few for the H200",
                "按元素计的脊点是按字节计的四倍；对 H200 而言 10 太少"),
               "gemmlab roofline --measure", f.ceilings_source or "datasheet", values={"per_element": per_elem})


def _table_counts(f: Facts) -> Row:
    n = 1024
    return Row((f"at N = {n}: {fmt(2 * n ** 3)} loads against {fmt(2 * n * n)}; the least traffic also writes C's "
                f"{fmt(n * n)} elements",
                f"N = {n} 时：{fmt(2 * n ** 3)} 次加载对比 {fmt(2 * n * n)} 次；最小流量还包括写 C 的 {fmt(n * n)} 个元素"),
               HOLDS, ("counts of loads, as the first seed's 8MNK and 4(MK+KN)", "加载次数，与第一篇的 8MNK 和 4(MK+KN) 相同"),
               "naive_traffic, Problem.compulsory_bytes", "model")


def _no_reuse(f: Facts) -> Row:
    got = _dram_counters(f)
    if not got:
        return _missing(("V1's DRAM bytes", "V1 的 DRAM 字节数"), "gemmlab profile cuda/v1_naive --shape 4096")
    issued = 8 * SQ.m * SQ.n * SQ.k
    return Row((f"V1 at {label(S4096)}: {fmt(issued / got[0])} bytes issued per byte read from DRAM",
                f"V1 在 {label(S4096)}：每从 DRAM 读一个字节，发出 {fmt(issued / got[0])} 字节的加载"), FAILS,
               ("the code has none; the hardware's L1 and L2 reuse each value many times",
                "代码层面没有复用；硬件的 L1 与 L2 让每个值被复用了很多次"),
               "gemmlab profile cuda/v1_naive --shape 4096", PROFILED, values={"reuse": issued / got[0]})


def _memory_bound(f: Facts) -> Row:
    r = f.rec(V1, S1024)
    mod = f.model(V1, S1024)
    lv = mod["levels"]
    en = (f"model at {label(S1024)}: DRAM {_ms_text(lv['dram']['ms'])} ms, L2 {_ms_text(lv['l2']['ms'])} ms, L1 "
          f"{_ms_text(lv['l1']['ms'])} ms, arithmetic {_ms_text(lv['compute']['ms'])} ms")
    zh = (f"{label(S1024)} 时模型：DRAM {_ms_text(lv['dram']['ms'])} ms，L2 {_ms_text(lv['l2']['ms'])} ms，L1 "
          f"{_ms_text(lv['l1']['ms'])} ms，计算 {_ms_text(lv['compute']['ms'])} ms")
    if r:
        en += f"; measured {_ms_text(r['median_ms'])} ms"
        zh += f"；实测 {_ms_text(r['median_ms'])} ms"
    return Row((en, zh), ONLY_AS, ("the memory that binds is L1 and the loads' latency, not DRAM",
                                   "起约束作用的是 L1 与加载延迟，而非 DRAM"),
               bench_cmd(V1, S1024), "this run" if r else "model", ("the memory pipeline, not DRAM", "存储流水线，而非 DRAM"))


def _smem_next(f: Facts, shape=S1024) -> Row:
    v1, v2 = f.ms(V1, shape), f.ms(V2, shape)
    if v1 is None or v2 is None:
        return _missing((f"V1 and V2 at {label(shape)}", f"{label(shape)} 下的 V1 与 V2"), bench_cmd(V2, shape))
    gain = v1 / v2
    return Row((f"at {label(shape)}: V1 {_ms_text(v1)} ms, V2 {_ms_text(v2)} ms, {fmt(gain, 2)}×",
                f"{label(shape)} 时：V1 {_ms_text(v1)} ms，V2 {_ms_text(v2)} ms，{fmt(gain, 2)}×"),
               HOLDS if gain > 1 else FAILS,
               ("fewer loads issued; the global bytes the caches let through change little",
                "发出的加载更少；但经缓存后的全局字节数变化不大"), bench_cmd(V2, shape), "this run", values={"gain": gain})


def _coalesce_next(f: Facts) -> Row:
    row = _coalescing(f, S1024)
    row.verdict = ONLY_AS if row.verdict != NOT_MEASURED else NOT_MEASURED
    row.only_as = ("advice for a kernel that does not coalesce; V1 as written already does",
                   "针对未合并访问的核函数的建议；原写法的 V1 已经是合并访问")
    row.reason = ("a warp's loads of B are contiguous already; mapping threadIdx.x to rows is what costs",
                  "一个 warp 对 B 的加载本已连续；把 threadIdx.x 映射到行才会付出代价")
    return row


def _tens_of_times(f: Facts) -> Row:
    v1, v2, rows = f.ms(V1, S1024), f.ms(V2, S1024), f.ms(V1_ROWS, S1024)
    if v1 is None or v2 is None:
        return _missing(("V2 over V1 at 1024³", "1024³ 下 V2 相对 V1"), bench_cmd(V2, S1024))
    en = f"V2 over V1 at {label(S1024)}: {fmt(v1 / v2, 2)}×"
    zh = f"{label(S1024)} 时 V2 相对 V1：{fmt(v1 / v2, 2)}×"
    values = {"gain": v1 / v2}
    if rows is not None:
        en += f"; over the uncoalesced V1: {fmt(rows / v2, 1)}×"
        zh += f"；相对非合并 V1：{fmt(rows / v2, 1)}×"
        values["gain_over_uncoalesced"] = rows / v2
    return Row((en, zh), FAILS if v1 / v2 < 10 else HOLDS,
               ("on the H200 the caches already give V1 most of what tiling gives; tens of times is the gap to cuBLAS, "
                "not to V2", "在 H200 上缓存已经给了 V1 分块所能带来的大部分收益；几十倍是与 cuBLAS 的差距，而不是与 V2"),
               bench_cmd(V2, S1024), "this run", values=values)


def _c(id, seed, section, quote, claim, figure, judge, gpu=False):
    return Claim(id, seed, section, quote, claim, figure, judge, gpu)


CLAIMS: list[Claim] = [
    _c("def.sum", FIRST, "矩阵乘法的数学定义", "C[i][j] = Σ A[i][k] * B[k][j]",
       ("each element of C is a row of A dotted with a column of B", "C 的每个元素是 A 的一行与 B 的一列的点积"),
       "C[i][j] = Σ_k A[i][k]·B[k][j]", _definition),
    _c("model.flops", FIRST, "计算强度", "总的FLOPs=M x N x 2K = 2MNK",
       ("the product takes 2MNK floating-point operations", "总浮点运算量为 2MNK"), "2MNK", _flops),
    _c("model.bytes", FIRST, "计算强度", "总字节数=4(MK + KN + MN)",
       ("main memory moves 4(MK+KN+MN) bytes", "主存访问量为 4(MK+KN+MN) 字节"), "4(MK + KN + MN)", _bytes),
    _c("model.intensity", FIRST, "计算强度", "I = MNK / 2(MK + KN + MN)",
       ("the intensity is MNK / (2(MK+KN+MN))", "计算强度为 MNK / (2(MK+KN+MN))"), "MNK / 2(MK+KN+MN)", _intensity),
    _c("model.n_over_6", FIRST, "计算强度", "当M=K=N时，I = N / 6（FLOPs/byte）",
       ("for square matrices the intensity is N/6", "方阵时计算强度为 N/6"), "N/6", _n_over_6),
    _c("v0.cubic", FIRST, "版本V0矩阵乘法cpu实现", "当M=N=K时，时间复杂度为O(MNK)=O(N^3)",
       ("V0 takes O(N³) time", "V0 的时间复杂度为 O(N³)"), "O(N³)", _v0_cubic),
    _c("v0.space", FIRST, "版本V0矩阵乘法cpu实现", "空间复杂度为O(MK+KN+MN)=O(N^2)",
       ("V0 needs O(N²) memory", "V0 的空间复杂度为 O(N²)"), "O(N²)", _v0_space),
    _c("v1.launch", FIRST, "核函数启动配置", "dim3 blockDim(32, 32); dim3 gridDim((N + 32 - 1) / 32, (M + 32 - 1) / 32);",
       ("V1 launches 32×32 blocks on a ⌈N/32⌉×⌈M/32⌉ grid", "V1 以 32×32 的 block、⌈N/32⌉×⌈M/32⌉ 的 grid 启动"),
       "blockDim(32, 32)", _launch),
    _c("v1.comment_16x16", FIRST, "核函数启动配置", "// 线程块大小：16x16 = 256 线程/block（GPU warp 友好的选择）",
       ("the block is 16×16 = 256 threads", "线程块为 16×16 = 256 线程"), "16x16 = 256", _comment_16x16, True),
    _c("v1.warp_friendly", FIRST, "核函数启动配置", "每个线程块包含 32×32 = 1024 个线程，正好是 32 个 warp，对 GPU 调度友好",
       ("1024-thread blocks (32 warps) suit the GPU's scheduler", "1024 线程（32 个 warp）的 block 对 GPU 调度友好"),
       "32×32 = 1024", _warp_friendly, True),
    _c("v1.launch_args", FIRST, "核函数启动配置", "matmul_v1_naive<<<gridDim, blockDim>>>(d_C, d_A, d_B, M, K, N);",
       ("the launch passes M, K, N to a kernel declared (…, M, N, K)", "调用传入 M, K, N，而核函数声明为 (…, M, N, K)"),
       "(…, M, K, N)", _swapped_args),
    _c("v1.kernel", FIRST, "CUDA Kernel 代码实现",
       "int col = threadIdx.x + blockDim.x * blockIdx.x; int row = threadIdx.y + blockDim.y * blockIdx.y;",
       ("sgemm_kernel1: one thread per element of C", "sgemm_kernel1：每个线程计算 C 的一个元素"), "sgemm_kernel1", _kernel1, True),
    _c("harness.tolerance", FIRST, "CUDA Kernel 代码实现", "check_results(h_C, h_ref, M * N, 5e-4f);",
       ("a correct result is within 5e-4 of the CPU's, element by element", "正确结果与 CPU 结果逐元素相差不超过 5e-4"),
       "5e-4", _tolerance, True),
    _c("harness.timing", FIRST, "CUDA Kernel 代码实现",
       "int repeat = argc > 1 ? atoi(argv[1]) : 20; … float avg_ms = ms / repeat;",
       ("time 20 launches after one warm-up and average them", "预热一次后连续计时 20 次取平均"), "20, avg",
       _timing_method, True),
    _c("v1.per_thread", FIRST, "单线程视角", "单线程总访存量 = 8K + 4 字节，计算量为 2K FLOPs。",
       ("each thread moves 8K+4 bytes for 2K FLOPs", "每个线程访存 8K+4 字节，计算 2K FLOPs"), "8K + 4 bytes, 2K FLOPs",
       _per_thread),
    _c("v1.rows_reread", FIRST, "全局视角：重复读取问题", "同一行数据被重复读取 N 次 … 同一列数据被重复读取 M 次",
       ("A's rows are read N times and B's columns M times", "A 的每行被读 N 次，B 的每列被读 M 次"), "N, M times", _reread),
    _c("v1.read_global", FIRST, "全局视角：重复读取问题", "Read_global = M × N × (K + K) × 4 = 8MNK 字节",
       ("V1 reads 8MNK bytes of global memory", "V1 读取全局内存 8MNK 字节"), "8MNK", _read_global),
    _c("v1.redundancy", FIRST, "全局视角：重复读取问题", "冗余比 = N … 全局内存读取量是理论最小值的 1024 倍",
       ("at N = 1024 V1 reads 1024 times the minimum", "N = 1024 时读取量是理论最小值的 1024 倍"), "1024×", _redundancy),
    _c("v1.quarter", FIRST, "有效计算强度", "I_effective = 2MNK / 8MNK = 1/4 FLOPs/byte … 与矩阵规模 N 无关",
       ("V1's effective intensity is 0.25 FLOP/byte at any size", "V1 的有效计算强度恒为 0.25 FLOP/byte"), "0.25", _quarter),
    _c("roofline.model", FIRST, "性能瓶颈与 Roofline 模型", "内存带宽边界（斜线）：P = bs × I … 计算峰值边界（水平线）：P = P_peak",
       ("a DRAM slope and a compute ceiling bound performance", "一条带宽斜线与一条算力水平线约束性能"), "P = min(P_peak, bs × I)",
       _roofline),
    _c("roofline.ridge", FIRST, "性能瓶颈与 Roofline 模型", "I_ridge = 19.5×10¹² / 1555×10⁹ ≈ 12.5 FLOPs/byte",
       ("the A100's ridge point is 12.5 FLOP/byte", "A100 的脊点约为 12.5 FLOP/byte"), "12.5", _ridge),
    _c("roofline.bandwidth_bound", FIRST, "性能瓶颈与 Roofline 模型", "朴素实现处于 Roofline 模型的陡峭斜线区域，性能完全由内存带宽决定。",
       ("V1 sits on the DRAM slope: bandwidth alone sets its speed", "V1 位于带宽斜线区，性能完全由内存带宽决定"),
       "0.25 × bs", _single_roof, True),
    _c("roofline.waiting", FIRST, "性能瓶颈与 Roofline 模型", "绝大部分时间也在等待数据从全局内存加载。",
       ("V1 spends its time waiting on global memory", "V1 绝大部分时间在等待全局内存"), "—", _waits_on_bandwidth, True),
    _c("table.v1", FIRST, "实测性能参考", "V1 Naive	~120 ms	~1150",
       ("V1 at 4096³ on the A100: 120 ms, 1150 GFLOPS", "V1 在 A100 上 4096³：120 ms，1150 GFLOPS"),
       "~120 ms, ~1150 GFLOPS",
       _v1_table),
    _c("table.v1_roof", FIRST, "实测性能参考", "V1 Naive … ~1150 (GFLOPS)；I_effective = 0.25；显存带宽约 1555 GB/s",
       ("V1's 1150 GFLOPS under the seed's own 0.25 × 1555 GB/s roof", "V1 的 1150 GFLOPS 与种子自己的 0.25 × 1555 GB/s 屋顶"),
       "1150 vs 0.25 × 1555", _v1_over_own_roof),
    _c("table.bw_util", FIRST, "实测性能参考", "带宽利用率 ~8%",
       ("V1 uses 8% of the A100's bandwidth", "V1 的带宽利用率约 8%"), "~8%", _bw_util),
    _c("table.cublas", FIRST, "实测性能参考", "cuBLAS	~0.8 ms	~172000",
       ("cuBLAS at 4096³: 0.8 ms, 172,000 GFLOPS", "cuBLAS 在 4096³：0.8 ms，172,000 GFLOPS"), "~172000 GFLOPS",
       _cublas_172),
    _c("table.pct_peak", FIRST, "实测性能参考", "朴素实现仅达到理论峰值的约 5.9%",
       ("V1 reaches 5.9% of the FP32 peak", "V1 仅达到 FP32 峰值的约 5.9%"), "5.9%", _pct_peak),
    _c("table.gap", FIRST, "实测性能参考", "与高度优化的 cuBLAS 相比差距超过 100 倍",
       ("cuBLAS is more than 100 times faster than V1", "cuBLAS 比 V1 快 100 倍以上"), ">100×", _gap_100x, True),
    _c("v2.heading", FIRST, "版本V1共享内存分块", "版本V1共享内存分块",
       ("the tiled kernel is titled V1", "分块核函数的标题为 V1"), "V1", _v2_heading),
    _c("v2.launch", FIRST, "CUDA Kernel 代码实现",
       "__shared__ float As[WS][WS]; __shared__ float Bs[WS][WS]; dim3 blockDim(WS, WS);",
       ("V2: WS×WS blocks, two WS×WS tiles in shared memory", "V2：WS×WS 的 block，共享内存中两个 WS×WS 的 tile"),
       "WS = 32", _v2_launch),
    _c("v2.fewer_loads", FIRST, "优化方向", "V2：共享内存分块 … 大幅减少全局内存访问",
       ("tiling cuts global memory traffic sharply", "分块大幅减少全局内存访问"), "—", _fewer_loads),
    _c("v2.reuse", FIRST, "具体做法", "每个 A 元素被 TILE_N 次复用，每个 B 元素被 TILE_M 次复用",
       ("each staged value is reused TILE times", "每个暂存值被复用 TILE 次"), "TILE_N, TILE_M", _reuse),
    _c("v2.intensity", FIRST, "具体做法", "I_effective 提升至 2·TILE_M·TILE_N·TILE_K / ((TILE_M·TILE_K + TILE_N·TILE_K)·4)",
       ("tiles raise the intensity to 2·TM·TN·TK / ((TM+TN)·TK·4)", "分块使计算强度提升到 2·TM·TN·TK / ((TM+TN)·TK·4)"),
       "8 at TILE = 32", _tile_intensity),
    _c("v2.near_ridge", FIRST, "具体做法", "只要分块尺寸选择得当，就能使 I_effective 接近 ridge point 甚至进入计算密集区域",
       ("well-chosen tiles bring the intensity to the ridge or past it", "分块尺寸得当即可接近甚至越过脊点"), "—", _near_ridge),
    _c("v2.store_guard", FIRST, "CUDA Kernel 代码实现", "if (row < M || col < N) C[col + row * N] = val;",
       ("sgemm_kernel2 stores C under row < M || col < N", "sgemm_kernel2 在 row < M || col < N 时写 C"), "||",
       _store_guard),
    _c("cpu.loop", SECOND, "4.1 CPU上的矩阵乘法实现", "void matmul_cpu(float* A, float* B, float* C, int M, int N, int K)",
       ("the CPU triple loop", "CPU 上的三重循环"), "matmul_cpu", _cpu_loop),
    _c("cpu.pitfall", SECOND, "4.1 CPU上的矩阵乘法实现", "这里有个隐藏的坑——内存访问模式。",
       ("the CPU loop's memory access pattern is a hidden trap", "CPU 循环的内存访问模式是个隐藏的坑"), "—", _cpu_pitfall),
    _c("v1.block_choice", SECOND, "4.2 GPU朴素矩阵乘法：第一版尝试", "线程块大小用16×16或者32×32",
       ("a 16×16 or a 32×32 block", "线程块用 16×16 或 32×32"), "16×16 / 32×32", _block_choice, True),
    _c("v1.naive_runs", SECOND, "4.2 GPU朴素矩阵乘法：第一版尝试",
       "__global__ void matmul_naive(float* A, float* B, float* C, int M, int N, int K)",
       ("matmul_naive: one thread per element, it runs", "matmul_naive：每线程一个元素，能跑"), "matmul_naive",
       _naive_kernel, True),
    _c("v1.slower_than_cpu", SECOND, "4.2 GPU朴素矩阵乘法：第一版尝试", "拿一个1024×1024的矩阵测试，结果比CPU还慢。",
       ("at 1024×1024 the naive GPU kernel is slower than the CPU", "1024×1024 时朴素 GPU 实现比 CPU 还慢"), "slower than CPU",
       _slower_than_cpu, True),
    _c("v1.latency", SECOND, "4.3.1 全局内存访问延迟", "全局内存的延迟是几百个时钟周期 … 计算单元大部分时间在等数据。",
       ("global memory latency leaves the ALUs waiting", "全局内存延迟让计算单元大部分时间在等数据"), "hundreds of cycles",
       _latency, True),
    _c("v1.coalescing", SECOND, "4.3.1 全局内存访问延迟", "比如线程(0,0)读A[0]和B[0]，线程(0,1)读A[0]和B[1]……这导致全局内存的访问无法合并（coalesced）",
       ("V1's global loads cannot coalesce", "V1 的全局内存访问无法合并"), "not coalesced", _coalescing, True),
    _c("v1.reread", SECOND, "4.3.2 重复读取数据", "A矩阵的同一行数据，会被N个不同的线程重复读取 … B矩阵的同一列数据，会被M个线程重复读取。",
       ("rows of A are re-read by N threads, columns of B by M", "A 的行被 N 个线程重复读取，B 的列被 M 个线程重复读取"),
       "N, M", _reread_counts),
    _c("v1.billion", SECOND, "4.3.2 重复读取数据", "每个线程要读K=1024次全局内存，总共1024×1024个线程，就是10亿次全局内存读取。",
       ("a billion global reads at 1024³", "1024³ 时共 10 亿次全局内存读取"), "10亿 (10⁹)", _billion),
    _c("v1.five_hundred", SECOND, "4.3.2 重复读取数据", "也就是说，每个数据被读了500次！",
       ("each element is read 500 times", "每个数据被读了 500 次"), "500", _five_hundred),
    _c("v1.ratio_one", SECOND, "4.3.3 计算与访存比太低", "计算访存比大约是1（每读一个数做一次运算）",
       ("one operation per element read", "每读一个数做一次运算"), "≈ 1", _ratio_one),
    _c("v1.needs_ten", SECOND, "4.3.3 计算与访存比太低", "GPU要发挥峰值性能，这个比值通常需要10以上。",
       ("a GPU needs a ratio of 10 or more for its peak", "GPU 要发挥峰值性能比值通常需要 10 以上"), "≥ 10", _needs_ten),
    _c("table.accesses", SECOND, "4.3.3 计算与访存比太低", "全局内存访问次数	2 × M × N × K	M×K + K×N（仅一次）",
       ("2MNK accesses against MK + KN", "2MNK 次访问对比 MK + KN 次"), "2MNK vs MK + KN", _table_counts),
    _c("table.coalescing", SECOND, "4.3.3 计算与访存比太低", "内存合并效率	低（B矩阵按列访问）",
       ("coalescing is poor: B is accessed by column", "合并效率低（B 矩阵按列访问）"), "低 (low)", _coalescing_table, True),
    _c("table.reuse", SECOND, "4.3.3 计算与访存比太低", "数据复用	无",
       ("the naive kernel reuses nothing", "朴素实现没有数据复用"), "无 (none)", _no_reuse),
    _c("summary.memory", SECOND, "4.4 小结：下一步怎么走？", "朴素矩阵乘法的瓶颈不在计算，而在内存。",
       ("the bottleneck is memory, not arithmetic", "瓶颈不在计算，而在内存"), "—", _memory_bound),
    _c("next.smem", SECOND, "4.4 小结：下一步怎么走？", "利用共享内存：把A和B的块数据搬到片上共享内存 … 减少全局内存访问。",
       ("shared memory tiles cut global accesses", "用共享内存分块减少全局内存访问"), "—", _smem_next, True),
    _c("next.coalesce", SECOND, "4.4 小结：下一步怎么走？", "优化内存合并：调整数据布局或访问模式，让同一warp的线程访问连续地址。",
       ("make a warp's threads access consecutive addresses", "让同一 warp 的线程访问连续地址"), "—", _coalesce_next, True),
    _c("next.tens_of_times", SECOND, "4.4 小结：下一步怎么走？", "下一章，我会带你实现一个基于共享内存的分块矩阵乘法，性能直接翻几十倍。",
       ("shared-memory tiling makes it tens of times faster", "共享内存分块让性能直接翻几十倍"), "几十倍 (tens of times)",
       _tens_of_times, True),
]
