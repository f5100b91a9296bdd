"""The first seed's claims judged: the matrix product's definition, the cost model, V0, V1's launch and code, its
reads, and the roofline."""
from __future__ import annotations

from gemmlab.chapter.claim import (CUBLAS, FAILS, HOLDS, LATENCY, NOT_MEASURED, NV1, NV2, ONLY_AS, PER_LOAD, SEED, V0,
                                   V1, V1_16, V2, Row, bench_cmd, block_16, dram_counters, dram_intensity, dram_reads, fmt, judges,
                                   level_name, missing, ms_text, ridges, roof_source)
from gemmlab.chapter.emulate import emulate_swapped
from gemmlab.chapter.facts import A100, H200, PROFILED, S1024, S4096, S512, Facts, committed_above_seed_roof, label
from gemmlab.problem import Problem


@judges("def.sum")
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
            return missing(("V0, V1 and V2 against float64", "V0、V1、V2 与 float64 的比较"), "gemmlab chapter")
        return Row(("; ".join(parts_en), "；".join(parts_zh)), HOLDS,
                   ("each kernel's C matches the float64 sum within FP32's tolerance",
                    "各核函数的 C 与 float64 求和结果在 FP32 容差内一致"),
                   "gemmlab chapter", "this run")
    en = "; ".join(f"{k} at {label(s)}: relative error {r['rel_err']:.1e}" for k, s, r in done)
    zh = "；".join(f"{k} 在 {label(s)}：相对误差 {r['rel_err']:.1e}" for k, s, r in done)
    return Row((en, zh), HOLDS, ("V0, V1 and V2 compute this sum: each matches float64 within FP32's tolerance",
                                 "V0、V1、V2 计算的就是这个求和：与 float64 参考结果在 FP32 容差内一致"),
               "gemmlab chapter (verification against float64)", "this run")


@judges("model.flops")
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


@judges("model.bytes")
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


@judges("model.intensity")
def _intensity(f: Facts) -> Row:
    p = Problem(*SEED)
    return Row((f"{fmt(p.intensity(), 1)} FLOP/byte at {label(SEED)}",
                f"{label(SEED)} 时 {fmt(p.intensity(), 1)} FLOP/byte"),
               HOLDS, ("2MNK over 4(MK+KN+MN), reduced", "2MNK 除以 4(MK+KN+MN) 化简所得"),
               "Problem.intensity (gemmlab roofline)", "model", values={"intensity": p.intensity()})


@judges("model.n_over_6")
def _n_over_6(f: Facts) -> Row:
    a, b = Problem(*S1024).intensity(), Problem(*S4096).intensity()
    return Row((f"{fmt(a, 1)} at N = 1024, {fmt(b, 1)} at N = 4096", f"N = 1024 时 {fmt(a, 1)}，N = 4096 时 {fmt(b, 1)}"),
               HOLDS, ("N³/(2·3N²) = N/6: the best intensity grows with N", "N³/(2·3N²) = N/6：最佳计算强度随 N 增长"),
               "gemmlab roofline --shape 1024 --shape 4096", "model", values={"n1024": a, "n4096": b})


@judges("v0.cubic")
def _v0_cubic(f: Facts) -> Row:
    small, big = f.ms(V0, S512), f.ms(V0, S1024)
    if small is None or big is None:
        return missing(("V0 at 512³ and 1024³", "V0 在 512³ 与 1024³"), "gemmlab chapter")
    r = big / small
    ok = 6 <= r <= 10
    return Row((f"V0 {ms_text(small)} ms at {label(S512)}, {ms_text(big)} ms at {label(S1024)}: "
                f"{fmt(r, 1)}× the time for twice N",
                f"V0 在 {label(S512)} 为 {ms_text(small)} ms，在 {label(S1024)} 为 {ms_text(big)} ms："
                f"N 翻倍时耗时增至 {fmt(r, 1)} 倍"),
               HOLDS if ok else ONLY_AS,
               ("N³ predicts 8×" + ("" if ok else "; the column walk of B misses the cache more at the larger N"),
                "N³ 预测 8×" + ("" if ok else "；N 更大时按列遍历 B 的缓存缺失更多")),
               f"{bench_cmd(V0, S512)}; {bench_cmd(V0, S1024)}", "this run",
               ("an order (cache misses add to N³)", "数量级（缓存缺失使增长超过 N³）") if not ok else ("", ""),
               {"ms_512": small, "ms_1024": big, "ratio": r})


@judges("v0.space")
def _v0_space(f: Facts) -> Row:
    p = Problem(*S1024)
    return Row((f"at {label(S1024)}: A, B and C hold {fmt(p.compulsory_bytes() / 2**20)} MiB; twice N, four times that",
                f"{label(S1024)} 时 A、B、C 共 {fmt(p.compulsory_bytes() / 2**20)} MiB；N 加倍则为其四倍"), HOLDS,
               ("three N×N matrices, nothing else", "三个 N×N 矩阵，别无其他"), "Problem.compulsory_bytes", "model",
               values={"bytes": p.compulsory_bytes()})


@judges("v1.launch")
def _launch(f: Facts) -> Row:
    from gemmlab.kernels.registry import get_kernel

    geo = get_kernel(V1).launch_geometry(Problem(*SEED))
    g, b = geo.grid[:2], geo.block[:2]
    return Row((f"cuda/v1_naive at {label(SEED)}: grid {g}, block {b}",
                f"cuda/v1_naive 在 {label(SEED)}：grid {g}，block {b}"),
               HOLDS, ("gemmlab launches V1 as the seed does: x covers N's columns, y M's rows",
                       "gemmlab 的 V1 与种子的启动相同：x 覆盖 N 列，y 覆盖 M 行"), "gemmlab list --kernels cuda/v1_naive", "model",
               values={"grid": list(g), "block": list(b)})


@judges("v1.comment_16x16")
def _comment_16x16(f: Facts) -> Row:
    big, small = block_16(f)
    base = ("the comment says 16×16 = 256 threads; the code launches 32×32 = 1024",
            "注释写 16×16 = 256 线程，代码启动的是 32×32 = 1024")
    if big is None or small is None:
        row = missing(("the 16×16 variant beside 32×32", "16×16 变体与 32×32 并列"), bench_cmd(V1_16, SEED))
        row.verdict, row.reason = FAILS, base
        return row
    return Row((f"32×32 {ms_text(big)} ms, 16×16 {ms_text(small)} ms at {label(SEED)}",
                f"{label(SEED)} 时 32×32 为 {ms_text(big)} ms，16×16 为 {ms_text(small)} ms"), FAILS,
               (base[0] + f"; measured, 16×16 takes {fmt(small / big, 2)}× the time of 32×32",
                base[1] + f"；实测 16×16 耗时为 32×32 的 {fmt(small / big, 2)}×"),
               bench_cmd(V1_16, SEED), "this run", values={"ms_32": big, "ms_16": small})


@judges("v1.warp_friendly")
def _warp_friendly(f: Facts) -> Row:
    big, small = block_16(f)
    if big is None or small is None:
        return missing(("V1 with 16×16 and 32×32 blocks", "16×16 与 32×32 block 的 V1"), bench_cmd(V1_16, SEED))
    ratio = small / big
    ok = ratio >= 0.95
    return Row((f"32×32 {ms_text(big)} ms, 16×16 {ms_text(small)} ms at {label(SEED)}",
                f"{label(SEED)} 时 32×32 为 {ms_text(big)} ms，16×16 为 {ms_text(small)} ms"),
               HOLDS if ok else FAILS,
               (f"1024 threads are 32 warps and 2 blocks fill an SM's 64 warps; 16×16 takes {fmt(ratio, 2)}× the time",
                f"1024 线程即 32 个 warp，2 个 block 占满一个 SM 的 64 个 warp；16×16 耗时为其 {fmt(ratio, 2)}×"),
               bench_cmd(V1_16, SEED), "this run", values={"ms_32": big, "ms_16": small})


@judges("v1.launch_args")
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


@judges("v2.launch")
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


@judges("harness.timing")
def _timing_method(f: Facts) -> Row:
    r = f.rec(V1, SEED)
    if not r or r.get("iqr_ms") is None:
        return missing(("V1's launches at the seed shape", "种子形状下 V1 的各次启动"), bench_cmd(V1, SEED))
    spread = r["iqr_ms"] / r["median_ms"] * 100
    return Row((f"V1 at {label(SEED)}: median {ms_text(r['median_ms'])} ms of {r['samples']} launches, interquartile "
                f"range {fmt(spread, 2)}% of it",
                f"V1 在 {label(SEED)}：{r['samples']} 次启动的中位数 {ms_text(r['median_ms'])} ms，四分位距为其 "
                f"{fmt(spread, 2)}%"), ONLY_AS,
               ("gemmlab times each launch with its own events on rotating inputs (cold L2) and keeps the median; an "
                "average of back-to-back launches on one input set runs with a warm L2",
                "gemmlab 对每次启动单独计时（各自的事件，轮换输入以保持 L2 冷），取中位数；同一组输入上连续启动的平均值是在 L2 "
                "热的情况下测得"),
               bench_cmd(V1, SEED), "this run", ("an average over a warm L2", "L2 热状态下的平均值"),
               {"median_ms": r["median_ms"], "iqr_pct": spread})


@judges("harness.gflops")
def _gflops_formula(f: Facts) -> Row:
    r = f.rec(V1, SEED)
    if not r:
        return missing(("V1 at the seed shape", "种子形状下的 V1"), bench_cmd(V1, SEED))
    m, n, k = SEED
    seed_way = 2.0 * m * n * k / (r["median_ms"] * 1e6)
    same = abs(seed_way - r["gflops"]) <= 1e-6 * r["gflops"]
    return Row((f"V1 at {label(SEED)}: 2.0 × {m} × {n} × {k} / ({ms_text(r['median_ms'])} ms × 1e6) = "
                f"{fmt(seed_way)} GFLOPS; the record's GFLOPS {fmt(r['gflops'])}",
                f"V1 在 {label(SEED)}：2.0 × {m} × {n} × {k} / ({ms_text(r['median_ms'])} ms × 1e6) = "
                f"{fmt(seed_way)} GFLOPS；记录中的 GFLOPS 为 {fmt(r['gflops'])}"), HOLDS if same else FAILS,
               ("gemmlab's GFLOPS is the same formula, 2MNK FLOPs over the time (Problem.flops); it divides the median "
                "launch's time, the seed an average (harness.timing)",
                "gemmlab 的 GFLOPS 用的是同一公式：2MNK 次浮点运算除以时间（Problem.flops）；gemmlab 除以中位数启动时间，"
                "种子除以平均值（见 harness.timing）"),
               bench_cmd(V1, SEED), "this run", values={"seed_formula": seed_way, "record": r["gflops"]})


@judges("v1.kernel")
def _kernel1(f: Facts) -> Row:
    r = f.rec(V1, SEED)
    if not r:
        return missing(("V1 at the seed shape", "种子形状下的 V1"), bench_cmd(V1, SEED))
    return Row((f"cuda/v1_naive at {label(SEED)}: {ms_text(r['median_ms'])} ms, {fmt(r['gflops'])} GFLOPS, "
                f"relative error {r['rel_err']:.1e}",
                f"cuda/v1_naive 在 {label(SEED)}：{ms_text(r['median_ms'])} ms，{fmt(r['gflops'])} GFLOPS，"
                f"相对误差 {r['rel_err']:.1e}"), HOLDS,
               ("gemmlab's V1 is this kernel line for line", "gemmlab 的 V1 与此核函数逐行一致"),
               bench_cmd(V1, SEED), "this run", values={"ms": r["median_ms"], "gflops": r["gflops"]})


@judges("harness.shape")
def _harness_shape(f: Facts) -> Row:
    m, n, k = SEED
    timed = sorted({r["kernel"] for r in f.records if (r["m"], r["n"], r["k"]) == SEED and r.get("median_ms")
                    and r.get("verified")})
    en = f"gemmlab's seed shape {label(SEED)} (M×N×K): A {m}×{k}, B {k}×{n}, C {m}×{n}"
    zh = f"gemmlab 的种子形状 {label(SEED)}（M×N×K）：A 为 {m}×{k}，B 为 {k}×{n}，C 为 {m}×{n}"
    if timed:
        en += f"; {fmt(len(timed))} kernels timed and verified there in this run"
        zh += f"；本次运行在此形状上计时并验证了 {fmt(len(timed))} 个核函数"
    return Row((en, zh), HOLDS,
               ("the same problem; gemmlab writes shapes M×N×K, the seed declares M, K, N. N ≠ K here, which is why "
                "the swapped launch arguments (v1.launch_args) matter",
                "同一个问题；gemmlab 按 M×N×K 书写形状，种子按 M、K、N 的顺序声明。此处 N ≠ K，所以调用参数顺序颠倒"
                "（v1.launch_args）会出错"),
               bench_cmd(V1, SEED), "this run" if timed else "model",
               values={"m": m, "n": n, "k": k, "kernels_timed": len(timed)})


@judges("harness.tolerance")
def _tolerance(f: Facts) -> Row:
    r = f.rec(V1, SEED)
    if not r or r.get("max_abs_err") is None:
        return missing(("V1's largest error at the seed shape", "种子形状下 V1 的最大误差"), bench_cmd(V1, SEED))
    e = r["max_abs_err"]
    ok = e < 5e-4
    errs = {k: f.rec(k, SEED) for k in (V2, CUBLAS)}
    errs = {k: x["max_abs_err"] for k, x in errs.items() if x and x.get("max_abs_err") is not None}
    en = f"largest error against float64 at {label(SEED)}: V1 {e:.1e}"
    zh = f"{label(SEED)} 时相对 float64 的最大误差：V1 {e:.1e}"
    for k, name in ((V2, "V2"), (CUBLAS, "cuBLAS FP32")):
        if k in errs:
            en += f", {name} {errs[k]:.1e}"
            zh += f"，{name} {errs[k]:.1e}"
    values = {"max_abs_err": e, **({"v2_max_abs_err": errs[V2]} if V2 in errs else {}),
              **({"cublas_max_abs_err": errs[CUBLAS]} if CUBLAS in errs else {})}
    if ok:
        return Row((en, zh), HOLDS, ("within 5e-4 of float64, so of any FP32 sum near it",
                                     "与 float64 相差在 5e-4 之内，与接近它的任何 FP32 求和亦然"),
                   bench_cmd(V1, SEED) + "; " + bench_cmd(V2, SEED) + "; " + bench_cmd(CUBLAS, SEED), "this run",
                   values=values)
    # past 5e-4 against float64; the seed's own check compares with its FP32 CPU loop, whose sum runs in V1's and V2's
    # order and so errs alike: that comparison, the claim's, is not one this run makes
    within = CUBLAS in errs and errs[CUBLAS] < 5e-4
    reason = (f"the seed compares with its own FP32 CPU loop, which sums K = {SEED[2]} in V1's order; this run does not "
              f"make that comparison. Against float64, V1's sum, one FP32 add after another, errs by {e:.1e} (past "
              "5e-4)" + (f" and V2's by {errs[V2]:.1e}" if V2 in errs else "")
              + (f", while cuBLAS FP32 stays within 5e-4 ({errs[CUBLAS]:.1e})" if within else "")
              + ". gemmlab checks the relative Frobenius error against a tolerance that grows with K, and every "
                "element's error against ten of that tolerance in units of the reference's RMS",
              f"种子比较的对象是它自己的 FP32 CPU 循环，其对 K = {SEED[2]} 的求和顺序与 V1 相同；本次运行没有做这一比较。"
              f"相对 float64，V1 逐个累加的 FP32 求和误差为 {e:.1e}（超过 5e-4）"
              + (f"，V2 为 {errs[V2]:.1e}" if V2 in errs else "")
              + (f"，而 cuBLAS FP32 在 5e-4 之内（{errs[CUBLAS]:.1e}）" if within else "")
              + "。gemmlab 改用随 K 放宽容差的相对 Frobenius 误差，并要求每个元素的误差不超过以参考结果均方根为单位的"
                "十倍容差")
    return Row((en, zh), NOT_MEASURED, reason,
               bench_cmd(V1, SEED) + "; " + bench_cmd(V2, SEED) + "; " + bench_cmd(CUBLAS, SEED), "this run",
               values=values)


@judges("v1.per_thread")
def _per_thread(f: Facts) -> Row:
    k = 1024
    read, flops = 8 * k + 4, 2 * k
    return Row((f"K = {k}: {fmt(read)} bytes and {fmt(flops)} FLOPs per thread, {fmt(flops / read, 4)} FLOP/byte",
                f"K = {k}：每线程 {fmt(read)} 字节、{fmt(flops)} FLOPs，{fmt(flops / read, 4)} FLOP/byte"),
               ONLY_AS, ("what a thread asks for; L1 serves most of it (the caches' rows below)",
                         "这是线程发出的请求量；大部分由 L1 提供（见下方缓存相关各行）"),
               "naive_traffic (gemmlab roofline)", "model",
               PER_LOAD, {"bytes": read, "flops": flops})


@judges("v1.rows_reread")
def _reread(f: Facts) -> Row:
    sq = Problem(*S4096)
    issued = 8 * sq.m * sq.n * sq.k
    got = dram_counters(f)
    if got is None:
        return Row((f"{fmt(issued / 1e9)} GB of loads at {label(S4096)}", f"{label(S4096)} 时加载 {fmt(issued / 1e9)} GB"),
                   ONLY_AS, ("the count of loads issued", "按发出的加载计数"), "naive_traffic", "model", PER_LOAD)
    dram, l2, l1 = got
    return Row((f"V1 at {label(S4096)}: {fmt(issued / 1e9)} GB of loads issued, {fmt(l1 / 1e9)} GB of L1 requests, "
                f"{fmt(l2 / 1e9, 1)} GB through L2, {fmt(dram / 1e9, 2)} GB from DRAM",
                f"V1 在 {label(S4096)}：发出加载 {fmt(issued / 1e9)} GB，L1 请求 {fmt(l1 / 1e9)} GB，"
                f"经 L2 {fmt(l2 / 1e9, 1)} GB，来自 DRAM {fmt(dram / 1e9, 2)} GB"), ONLY_AS,
               ("the re-reads are issued, but L1 and L2 serve all but a fraction of them",
                "重复读取确实发出了，但 L1 和 L2 服务了其中绝大部分"),
               "gemmlab profile cuda/v1_naive --shape 4096", PROFILED,
               PER_LOAD, {"issued": issued, "l1": l1, "l2": l2, "dram": dram})


@judges("v1.read_global")
def _read_global(f: Facts) -> Row:
    row = _reread(f)
    sq = Problem(*S4096)
    row.reason = ((f"8MNK = {fmt(8 * sq.m * sq.n * sq.k / 1e9)} GB is what the threads ask for; DRAM delivers "
                   f"{fmt(row.values['dram'] / 1e9, 2)} GB") if "dram" in row.values else row.reason[0],
                  (f"8MNK = {fmt(8 * sq.m * sq.n * sq.k / 1e9)} GB 是线程请求量；DRAM 实际提供 "
                   f"{fmt(row.values['dram'] / 1e9, 2)} GB") if "dram" in row.values else row.reason[1])
    return row


@judges("v1.redundancy")
def _redundancy(f: Facts) -> Row:
    n = 1024
    dram = dram_reads(f)
    model_en, model_zh = f"{fmt(n)}× at N = {n} (8N³ / 8N²)", f"N = {n} 时 {fmt(n)}×（8N³ / 8N²）"
    if dram is None:
        return Row((model_en, model_zh), ONLY_AS, ("the count of loads issued", "按发出的加载计数"), "naive_traffic",
                   "model", PER_LOAD)
    ideal = 8 * 4096 ** 2
    return Row((f"{model_en}; at N = 4096 DRAM reads {fmt(dram / ideal, 1)}× the 8N² bytes, not 4,096×",
                f"{model_zh}；N = 4096 时 DRAM 读取量为 8N² 的 {fmt(dram / ideal, 1)}×，而非 4,096×"), ONLY_AS,
               ("the caches keep all but a few of the re-reads from DRAM", "缓存使几乎全部重复读取无需访问 DRAM"),
               "gemmlab profile cuda/v1_naive --shape 4096", PROFILED, PER_LOAD,
               {"dram_over_ideal": dram / ideal})


@judges("v1.quarter")
def _quarter(f: Facts) -> Row:
    i = dram_intensity(f)
    r = f.rec(V1, S4096)
    parts_en, parts_zh, values = ["2MNK / 8MNK = 0.25 FLOP per byte issued at any size"], \
        ["2MNK / 8MNK = 0.25：按发出的字节计，与规模无关"], {"issued_intensity": 0.25}
    if i is not None:
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
    if len(parts_en) == 1:
        return missing(("V1's FLOPs per DRAM byte", "V1 每 DRAM 字节的 FLOPs"), bench_cmd(V1, S4096))
    return Row(("; ".join(parts_en), "；".join(parts_zh)), ONLY_AS,
               ("0.25 is FLOPs per byte a thread loads, and that count is size-independent; it counts every load as "
                "DRAM traffic, and on the H200 the caches raise the intensity that DRAM sees far past it",
                "0.25 是按线程加载的字节计的 FLOPs，这一计数与规模无关；但它把每次加载都算作 DRAM 流量，"
                "H200 的缓存使 DRAM 所见计算强度远高于此"),
               "gemmlab profile cuda/v1_naive --shape 4096; " + bench_cmd(V1, S4096),
               "this run; " + PROFILED if r else PROFILED, PER_LOAD, values)


@judges("roofline.model")
def _roofline(f: Facts) -> Row:
    roofs = f.roofs()
    fp32 = roofs.compute_tflops("fp32")
    dram, l2, flop = (roof_source(roofs.source.get(k)) for k in ("dram", "l2", "fp32"))
    return Row((f"H200: {fmt(roofs.dram_gbs)} GB/s DRAM ({dram[0]}), {fmt(roofs.l2_gbs)} GB/s L2 "
                f"({l2[0]}), FP32 {fmt(fp32, 1)} TFLOPS ({flop[0]})",
                f"H200：DRAM {fmt(roofs.dram_gbs)} GB/s（{dram[1]}），L2 {fmt(roofs.l2_gbs)} GB/s"
                f"（{l2[1]}），FP32 {fmt(fp32, 1)} TFLOPS（{flop[1]}）"), ONLY_AS,
               ("one roof per memory level: gemmlab bounds a kernel by each level's bytes over its own bandwidth",
                "每级存储一条屋顶：gemmlab 用每级的字节数除以该级带宽来约束核函数"),
               "gemmlab roofline --measure", f.ceilings_source or "datasheet",
               ("one roof of many (DRAM's; L2 and L1 have their own)", "多条屋顶中 DRAM 的那一条（L2 与 L1 各有屋顶）"),
               {"dram_gbs": roofs.dram_gbs, "fp32_tflops": fp32})


def ridge_text(f: Facts) -> tuple[tuple[str, str], dict]:
    """The H200's FP32 ridge, labelled: the datasheet's and the measured roofs' (the convention every claim uses)."""
    rg = ridges(f)
    en = (f"{fmt(rg['datasheet'], 1)} on the datasheet ({fmt(H200.tflops['fp32'], 1)} TFLOPS, "
          f"{fmt(H200.dram_gbs)} GB/s), {fmt(rg['measured'], 1)} on the measured roofs ({fmt(rg['fp32_tflops'], 1)} "
          f"TFLOPS, {fmt(rg['dram_gbs'])} GB/s)")
    zh = (f"按规格为 {fmt(rg['datasheet'], 1)}（{fmt(H200.tflops['fp32'], 1)} TFLOPS，{fmt(H200.dram_gbs)} GB/s），"
          f"按实测屋顶为 {fmt(rg['measured'], 1)}（{fmt(rg['fp32_tflops'], 1)} TFLOPS，{fmt(rg['dram_gbs'])} GB/s）")
    return (en, zh), rg


@judges("roofline.ridge")
def _ridge(f: Facts) -> Row:
    a = A100.ridge("fp32")
    (en, zh), rg = ridge_text(f)
    return Row((f"A100 {fmt(a, 2)} FLOP/byte; H200 {en}", f"A100 {fmt(a, 2)} FLOP/byte；H200 {zh}"), HOLDS,
               ("19.5e12 / 1555e9, as the seed computes; the H200's ridge is labelled by its roofs wherever the "
                "chapter gives it", "19.5e12 / 1555e9，与种子计算一致；本章凡给出 H200 的脊点，都注明所用屋顶（规格或实测）"),
               "gemmlab roofline --gpu a100; gemmlab roofline --measure", "model",
               values={"a100": a, "h200": rg["datasheet"], "h200_measured": rg["measured"]})


@judges("roofline.below_ridge")
def _below_ridge(f: Facts) -> Row:
    a = A100.ridge("fp32")
    (en, zh), rg = ridge_text(f)
    i = dram_intensity(f)
    r = f.rec(V1, S4096)
    en = f"V1 does 0.25 FLOP per byte issued: below the A100's ridge {fmt(a, 2)} and the H200's: {en}"
    zh = f"V1 按发出的字节计为 0.25 FLOP/byte：低于 A100 的脊点 {fmt(a, 2)}，也低于 H200 的脊点：{zh}"
    values = {"a100": a, "h200": rg["datasheet"], "h200_measured": rg["measured"]}
    if i is not None:
        en += f"; per DRAM byte V1 does {fmt(i, 1)} at {label(S4096)}, past both"
        zh += f"；按 DRAM 字节计，V1 在 {label(S4096)} 为 {fmt(i, 1)}，超过两者"
        values["dram_intensity"] = i
        if r:
            en += f", and runs {fmt(r['gflops'])} GFLOPS"
            zh += f"，实测 {fmt(r['gflops'])} GFLOPS"
            values["gflops"] = r["gflops"]
    return Row((en, zh), ONLY_AS,
               ("below the ridge per load issued; per DRAM byte V1 sits right of the H200's ridge and still runs far "
                "under the compute roof: what holds it back is L1 and its loads' latency (roofline.waiting), not DRAM",
                "按发出的加载计低于脊点；按 DRAM 字节计 V1 位于 H200 脊点右侧，却仍远低于算力屋顶："
                "限制它的是 L1 与加载延迟（见 roofline.waiting），而非 DRAM"),
               "gemmlab roofline --gpu a100; gemmlab profile cuda/v1_naive --shape 4096; " + bench_cmd(V1, S4096),
               ("this run; " + PROFILED) if r and i is not None else PROFILED if i is not None else "model",
               PER_LOAD, values)


@judges("roofline.bandwidth_bound")
def _single_roof(f: Facts) -> Row:
    r = f.rec(V1, S4096)
    committed = committed_above_seed_roof()
    extra = ("", "")
    if committed:
        above, carrying, _ = committed
        extra = (f"; in the committed H200 results {fmt(above)} of {fmt(carrying)} verified GPU records run above "
                 "their seeds' roof", f"；在已提交的 H200 结果中，{fmt(carrying)} 条已验证 GPU 记录里有 {fmt(above)} 条超过种子屋顶")
    if not r or not f.copy_gbs:
        row = missing(("V1 against its single DRAM roof", "V1 与其单一 DRAM 屋顶"), bench_cmd(V1, S4096))
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


@judges("roofline.waiting")
def _waits_on_bandwidth(f: Facts) -> Row:
    r = f.rec(V1, S4096)
    if not r:
        return missing(("V1's bandwidth in the seed's count", "按种子计数的 V1 带宽"), bench_cmd(V1, S4096))
    sq = Problem(*S4096)
    gbs = 8 * sq.m * sq.n * sq.k / (r["median_ms"] * 1e-3) / 1e9
    mod = f.model(V1, S4096)
    bound = level_name(mod["bound"])
    return Row((f"V1's loads at {label(S4096)} arrive at {fmt(gbs)} GB/s in the seed's count; gemmlab's levels bound "
                f"it by {bound[0]} at {ms_text(mod['predicted_ms'])} ms, it runs {ms_text(r['median_ms'])} ms",
                f"V1 在 {label(S4096)} 按种子计数的加载速率为 {fmt(gbs)} GB/s；按 gemmlab 的分级模型，瓶颈在 "
                f"{bound[1]}，预测 {ms_text(mod['predicted_ms'])} ms，实测 {ms_text(r['median_ms'])} ms"), ONLY_AS,
               ("no DRAM delivers that: L1 serves the loads, and each FFMA waits on its own loads' latency",
                "没有 DRAM 能提供这一速率：加载由 L1 提供，每条 FFMA 都在等待自身加载的延迟"),
               bench_cmd(V1, S4096), "this run", LATENCY,
               {"gbs": gbs, "predicted_ms": mod["predicted_ms"], "ms": r["median_ms"]})
