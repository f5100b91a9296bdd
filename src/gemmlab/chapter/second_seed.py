"""The second seed's claims judged: the CPU loop, the naive GPU kernel, why it is slow (latency, re-reads, the
ratio of arithmetic to access) and the next steps it promises."""
from __future__ import annotations

from gemmlab.chapter.claim import (BLAS, CUBLAS, CUBLAS_TF32, FAILS, HOLDS, LATENCY, NOT_MEASURED, NV1, ONLY_AS,
                                   PER_LOAD, SEED, SQ, V0, V1, V1_16, V1_ROWS, V2, Row, beside_model, bench_cmd,
                                   block_16, dram_counters, dram_intensity, dram_reads, fmt, judges, level_name, missing, ms_text,
                                   ridges, with_more)
from gemmlab.chapter.facts import PROFILED, S1024, S4096, Facts, label


@judges("cpu.loop")
def _cpu_loop(f: Facts) -> Row:
    r = f.rec(V0, f.cpu_shape)
    if not r:
        return missing(("V0", "V0"), bench_cmd(V0, f.cpu_shape))
    return Row((f"cpu/v0_naive at {label(f.cpu_shape)}: {ms_text(r['median_ms'])} ms, {fmt(r['gflops'], 2)} GFLOPS",
                f"cpu/v0_naive 在 {label(f.cpu_shape)}：{ms_text(r['median_ms'])} ms，{fmt(r['gflops'], 2)} GFLOPS"),
               HOLDS,
               ("the same loop as multi_cpu with the arguments in another order; gemmlab's V0",
                "与 multi_cpu 相同的循环，仅参数顺序不同；即 gemmlab 的 V0"),
               bench_cmd(V0, f.cpu_shape), "this run", values={"ms": r["median_ms"]})


@judges("cpu.pitfall")
def _cpu_pitfall(f: Facts) -> Row:
    v0, blas = f.rec(V0, f.cpu_shape), f.rec(BLAS, f.cpu_shape)
    if not (v0 and blas):
        return missing(("V0 and the host BLAS", "V0 与主机 BLAS"), bench_cmd(BLAS, f.cpu_shape))
    r = v0["median_ms"] / blas["median_ms"]
    return Row((f"at {label(f.cpu_shape)} V0 takes {fmt(r)}× the host BLAS's time ({ms_text(blas['median_ms'])} ms)",
                f"{label(f.cpu_shape)} 时 V0 耗时为主机 BLAS（{ms_text(blas['median_ms'])} ms）的 {fmt(r)}×"), HOLDS,
               ("the inner loop walks B down a column, a cache miss per step once a column outgrows L1",
                "内层循环按列遍历 B，列超出 L1 后每步一次缓存缺失"),
               bench_cmd(BLAS, f.cpu_shape), "this run", values={"ratio": r})


@judges("v1.block_choice")
def _block_choice(f: Facts) -> Row:
    big, small = block_16(f, S1024)
    if big is None or small is None:
        return missing(("V1 with 16×16 and 32×32 blocks at 1024³", "1024³ 下 16×16 与 32×32 block 的 V1"),
                        bench_cmd(V1_16, S1024))
    return Row((f"at {label(S1024)}: 32×32 {ms_text(big)} ms, 16×16 {ms_text(small)} ms",
                f"{label(S1024)} 时：32×32 {ms_text(big)} ms，16×16 {ms_text(small)} ms"), HOLDS,
               (f"both verify; 16×16 takes {fmt(small / big, 2)}× the time",
                f"两者都通过验证；16×16 耗时为 {fmt(small / big, 2)}×"),
               bench_cmd(V1_16, S1024), "this run", values={"ms_32": big, "ms_16": small})


@judges("v1.naive_runs")
def _naive_kernel(f: Facts) -> Row:
    r, nr = f.rec(V1, S1024), f.rec(NV1, S1024)
    if not r:
        return missing(("V1 at 1024³", "1024³ 下的 V1"), bench_cmd(V1, S1024))
    en, zh = with_more((f"cuda/v1_naive {ms_text(r['median_ms'])} ms at {label(S1024)}",
                        f"cuda/v1_naive 在 {label(S1024)}：{ms_text(r['median_ms'])} ms"),
                       (f", numba/v1_naive {ms_text(nr['median_ms'])} ms",
                        f"，numba/v1_naive {ms_text(nr['median_ms'])} ms") if nr else None)
    return Row((en, zh), HOLDS, ("the same kernel as sgemm_kernel1; it runs", "与 sgemm_kernel1 相同；能跑"),
               bench_cmd(V1, S1024), "this run")


@judges("v1.slower_than_cpu")
def _slower_than_cpu(f: Facts) -> Row:
    v1, v0, blas = f.rec(V1, S1024), f.rec(V0, S1024), f.rec(BLAS, S1024)
    if not v1 or not v0:
        return missing(("V1 and V0 at 1024³", "1024³ 下的 V1 与 V0"), bench_cmd(V1, S1024) + "; " + bench_cmd(V0, S1024))
    t1, t0, slower = ms_text(v1["median_ms"]), ms_text(v0["median_ms"]), fmt(v0["median_ms"] / v1["median_ms"])
    en, zh = with_more((f"at {label(S1024)}: V1 {t1} ms, V0 {t0} ms ({slower}× slower)",
                        f"{label(S1024)} 时：V1 {t1} ms，V0 {t0} ms（慢 {slower}×）"),
                       (f"; the host BLAS {ms_text(blas['median_ms'])} ms",
                        f"；主机 BLAS {ms_text(blas['median_ms'])} ms") if blas else None)
    return Row((en, zh), FAILS if v1["median_ms"] < v0["median_ms"] else HOLDS,
               ("kernel time against kernel time, V1 is far faster than the CPU loop; a first run's context start, "
                "compilation and copies are not the kernel (not measured here)",
                "按核函数时间比较，V1 远快于 CPU 循环；首次运行的上下文初始化、编译与拷贝不属于核函数（此处未测量）"),
               bench_cmd(V1, S1024) + "; " + bench_cmd(V0, S1024), "this run",
               values={"v1_ms": v1["median_ms"], "v0_ms": v0["median_ms"]})


@judges("v1.latency")
def _latency(f: Facts) -> Row:
    r = f.rec(V1, S1024)
    if not r:
        return missing(("V1 against the bound its levels give", "V1 与其分级模型给出的下界"), bench_cmd(V1, S1024))
    mod = f.model(V1, S1024)
    ratio = r["median_ms"] / mod["predicted_ms"]
    bound = level_name(mod["bound"])
    en = (f"V1 at {label(S1024)} runs {fmt(ratio, 2)}× the bound its levels give ({bound[0]}, "
          f"{ms_text(mod['predicted_ms'])} ms)")
    zh = (f"V1 在 {label(S1024)} 的耗时为分级模型给出的下界（{bound[1]}，{ms_text(mod['predicted_ms'])} ms）的 "
          f"{fmt(ratio, 2)}×")
    values = {"ratio": ratio}
    got = dram_counters(f)
    if got:
        dram, l2, l1 = got
        en += (f"; at {label(S4096)} its loads ask L1 for {fmt(l1 / 1e9)} GB, {fmt(l2 / 1e9, 1)} GB go on through L2 "
               f"and {fmt(dram / 1e9, 2)} GB come from DRAM")
        zh += (f"；在 {label(S4096)}，其加载向 L1 请求 {fmt(l1 / 1e9)} GB，经 L2 的为 {fmt(l2 / 1e9, 1)} GB，"
               f"来自 DRAM 的为 {fmt(dram / 1e9, 2)} GB")
        values.update({"l1": l1, "l2": l2, "dram": dram})
    return Row((en, zh), ONLY_AS,
               ("no level's bandwidth binds it: each FFMA waits on its two loads with no other work to overlap, and "
                "those loads hit L1, not DRAM. The figure tests the waiting, not the seed's hundreds of cycles: no "
                "latency in cycles is measured here, and the latency V1 waits on is an L1 hit's, not global memory's",
                "没有哪一级带宽是瓶颈：每条 FFMA 都在等待两次加载，且没有其他工作可重叠，而这些加载命中 L1，而非来自 DRAM。"
                "这一数据检验的是“等待”，而非种子所说的几百个时钟周期：此处未测量以周期计的延迟，V1 等待的是 L1 命中的延迟，"
                "而非全局内存的延迟"),
               bench_cmd(V1, S1024) + ("; gemmlab profile cuda/v1_naive --shape 4096" if got else ""),
               "this run" + (f"; {PROFILED}" if got else ""), LATENCY, values)


@judges("v1.fma_cycles")
def _fma_cycles(f: Facts) -> Row:
    return Row(("not measured: gemmlab times whole kernels; neither this run nor the committed results give an FFMA's "
                "latency in cycles",
                "未测量：gemmlab 只对整个核函数计时；本次运行与已提交的结果都没有给出 FFMA 以周期计的延迟"),
               NOT_MEASURED,
               ("it would take a latency probe (a chain of dependent FFMAs timed by clock64), which gemmlab does not "
                "have; the roofs it measures are throughputs",
                "这需要延迟探针（用 clock64 计时一串相互依赖的 FFMA），gemmlab 没有；它测量的屋顶都是吞吐量"),
               "none: no gemmlab command measures an instruction's latency", "none")


@judges("v1.coalescing")
def _coalescing(f: Facts, shape=S1024) -> Row:
    base, rows = f.ms(V1, shape), f.ms(V1_ROWS, shape)
    l1 = f.model(V1_ROWS, shape)["levels"]["l1"]["bytes"] / f.model(V1, shape)["levels"]["l1"]["bytes"]
    why = ("threads (0,0) and (0,1) are lanes 0 and 1 of one warp: they read B[0] and B[1], adjacent, so a warp "
           "reads 128 contiguous bytes of B and one broadcast float of A: coalesced",
           "线程 (0,0) 与 (0,1) 是同一 warp 的第 0、1 号 lane：读 B[0] 与 B[1]，地址相邻，故一个 warp 读取 B 的连续 128 "
           "字节和 A 的一个广播值：是合并访问")
    if base is None or rows is None:
        row = missing(("V1 with threadIdx.x along M", "threadIdx.x 映射到 M 的 V1"), bench_cmd(V1_ROWS, shape),
                       (f"the model: {fmt(l1, 1)}× the L1 sectors", f"模型：L1 扇区数为 {fmt(l1, 1)}×"))
        row.verdict, row.reason = FAILS, why
        return row
    return Row((f"at {label(shape)}: as written {ms_text(base)} ms; threadIdx.x along M {ms_text(rows)} ms "
                f"({fmt(rows / base, 1)}×, {fmt(l1, 1)}× the L1 sectors)",
                f"{label(shape)} 时：原写法 {ms_text(base)} ms；threadIdx.x 映射到 M 为 {ms_text(rows)} ms"
                f"（{fmt(rows / base, 1)}×，L1 扇区数 {fmt(l1, 1)}×）"), FAILS,
               (why[0] + "; the uncoalesced mapping is the slow one", why[1] + "；非合并的映射才是慢的那个"),
               bench_cmd(V1_ROWS, shape), "this run", values={"ms": base, "ms_rows_on_x": rows, "l1_ratio": l1})


@judges("table.coalescing")
def _coalescing_table(f: Facts) -> Row:
    row = _coalescing(f, SEED)
    row.reason = (("B is walked down a column by each thread, but across a warp each k reads a row segment of B: "
                   "coalesced" + ("" if row.verdict == NOT_MEASURED else "; only threadIdx.x along M is uncoalesced")),
                  ("每个线程沿列访问 B，但在一个 warp 内每个 k 读取的是 B 的一段行：合并访问"
                   + ("" if row.verdict == NOT_MEASURED else "；只有 threadIdx.x 映射到 M 时才非合并")))
    return row


@judges("v1.reread")
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
               "gemmlab roofline --shape 1024", "model", PER_LOAD,
               {"issued": issued, "l2": mod["l2_bytes"], "dram": mod["dram_bytes"]})


@judges("v1.billion")
def _billion(f: Facts) -> Row:
    n = 1024
    a_loads, all_loads = n ** 3, 2 * n ** 3
    return Row((f"A's loads: {fmt(a_loads)}; with B's: {fmt(all_loads)}",
                f"A 的加载：{fmt(a_loads)}；加上 B：{fmt(all_loads)}"),
               ONLY_AS, ("each thread reads 2K values, K of A and K of B", "每个线程读取 2K 个值：A 的 K 个与 B 的 K 个"),
               "naive_traffic (gemmlab roofline --shape 1024)", "model", ("A's loads alone", "A 的加载"),
               {"a": a_loads, "all": all_loads})


@judges("v1.five_hundred")
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


@judges("v1.ratio_one")
def _ratio_one(f: Facts) -> Row:
    mod = f.model(V1, S1024)
    per_elem = mod["modeled_intensity"] * 4
    en = f"{fmt(per_elem, 2)} FLOP per element loaded ({fmt(mod['modeled_intensity'], 2)} FLOP/byte)"
    zh = f"每个加载元素 {fmt(per_elem, 2)} FLOP（{fmt(mod['modeled_intensity'], 2)} FLOP/byte）"
    values = {"per_element": per_elem}
    i = dram_intensity(f)
    if i is not None:
        en += f"; per element from DRAM at {label(S4096)}: {fmt(4 * i, 1)} ({fmt(i, 1)} FLOP/byte)"
        zh += f"；在 {label(S4096)} 按来自 DRAM 的元素计：{fmt(4 * i, 1)}（{fmt(i, 1)} FLOP/byte）"
        values["per_dram_element"] = 4 * i
    return Row((en, zh), ONLY_AS,
               ("the first seed's 0.25 FLOP/byte counted in elements: one FLOP per element a thread loads; the caches "
                "keep most loads from DRAM, which sees far more FLOPs per element",
                "即第一篇的 0.25 FLOP/byte 按元素计：线程每加载一个元素做一次运算；缓存使大部分加载无需访问 DRAM，"
                "按来自 DRAM 的元素计运算要多得多"),
               "gemmlab roofline --shape 1024" + ("; gemmlab profile cuda/v1_naive --shape 4096" if i else ""),
               PROFILED if i is not None else "model", PER_LOAD, values)


@judges("v1.needs_ten")
def _needs_ten(f: Facts) -> Row:
    rg = ridges(f)
    per_elem, sheet = rg["measured"] * 4, rg["datasheet"] * 4
    return Row((f"the H200's ridge in FLOP per element from DRAM: {fmt(per_elem, 1)} on the measured roofs "
                f"({fmt(rg['measured'], 1)} FLOP/byte × 4), {fmt(sheet, 1)} on the datasheet "
                f"({fmt(rg['datasheet'], 1)} × 4)",
                f"H200 按来自 DRAM 的元素计的脊点：按实测屋顶为 {fmt(per_elem, 1)}（{fmt(rg['measured'], 1)} FLOP/byte × 4），"
                f"按规格为 {fmt(sheet, 1)}（{fmt(rg['datasheet'], 1)} × 4）"), ONLY_AS,
               ("the ridge in FLOP per element is four times the ridge in FLOP per byte; the H200 needs more than 10, "
                "as the seed says, but several times more",
                "按元素计的脊点是按字节计的四倍；H200 需要的确实在 10 以上，但要高出数倍"),
               "gemmlab roofline --measure", f.ceilings_source or "datasheet",
               ("a loose lower bound", "宽松的下限"),
               {"per_element": per_elem, "per_element_datasheet": sheet})


@judges("table.accesses")
def _table_counts(f: Facts) -> Row:
    n = 1024
    return Row((f"at N = {n}: {fmt(2 * n ** 3)} loads against {fmt(2 * n * n)}; the least traffic also writes C's "
                f"{fmt(n * n)} elements",
                f"N = {n} 时：{fmt(2 * n ** 3)} 次加载对比 {fmt(2 * n * n)} 次；最小流量还包括写 C 的 {fmt(n * n)} 个元素"),
               ONLY_AS, ("counts of loads issued, as the first seed's 8MNK and 4(MK+KN); the caches keep most of the "
                         "2MNK from global memory (v1.reread, v1.read_global)",
                         "发出的加载次数，与第一篇的 8MNK 和 4(MK+KN) 相同；缓存使 2MNK 次加载中的大部分无需访问全局内存"
                         "（见 v1.reread、v1.read_global）"),
               "naive_traffic, Problem.compulsory_bytes", "model", PER_LOAD)


@judges("table.reuse")
def _no_reuse(f: Facts) -> Row:
    reads = dram_reads(f)
    if not reads:
        return missing(("V1's DRAM reads", "V1 的 DRAM 读取字节数"), "gemmlab profile cuda/v1_naive --shape 4096")
    issued = 8 * SQ.m * SQ.n * SQ.k
    return Row((f"V1 at {label(S4096)}: {fmt(issued / reads)} bytes issued per byte read from DRAM",
                f"V1 在 {label(S4096)}：每从 DRAM 读一个字节，发出 {fmt(issued / reads)} 字节的加载"), FAILS,
               ("the code has none; the hardware's L1 and L2 reuse each value many times",
                "代码层面没有复用；硬件的 L1 与 L2 让每个值被复用了很多次"),
               "gemmlab profile cuda/v1_naive --shape 4096", PROFILED, values={"reuse": issued / reads})


@judges("summary.memory")
def _memory_bound(f: Facts) -> Row:
    r = f.rec(V1, S1024)
    mod = f.model(V1, S1024)
    lv = mod["levels"]
    en = (f"model at {label(S1024)}: DRAM {ms_text(lv['dram']['ms'])} ms, L2 {ms_text(lv['l2']['ms'])} ms, L1 "
          f"{ms_text(lv['l1']['ms'])} ms, arithmetic {ms_text(lv['compute']['ms'])} ms")
    zh = (f"{label(S1024)} 时模型：DRAM {ms_text(lv['dram']['ms'])} ms，L2 {ms_text(lv['l2']['ms'])} ms，L1 "
          f"{ms_text(lv['l1']['ms'])} ms，计算 {ms_text(lv['compute']['ms'])} ms")
    measured = (f"; measured {ms_text(r['median_ms'])} ms", f"；实测 {ms_text(r['median_ms'])} ms") if r else None
    return beside_model((en, zh), measured, ("the memory that binds is L1 and the loads' latency, not DRAM",
                                             "起约束作用的是 L1 与加载延迟，而非 DRAM"),
                        bench_cmd(V1, S1024), ("the memory pipeline (L1 and the loads' latency), not DRAM",
                                               "存储流水线（L1 与加载延迟，而非 DRAM）"))


@judges("next.smem")
def _smem_next(f: Facts, shape=S1024) -> Row:
    from gemmlab.chapter.first_seed_table import v2_traffic

    v1, v2 = f.ms(V1, shape), f.ms(V2, shape)
    if v1 is None or v2 is None:
        return missing((f"V1 and V2 at {label(shape)}", f"{label(shape)} 下的 V1 与 V2"), bench_cmd(V2, shape))
    gain = v1 / v2
    _, says, traffic = v2_traffic(f)
    more_dram = traffic.get("dram_v2", 0) > traffic.get("dram_v1", float("inf"))
    verdict = FAILS if gain <= 1 else ONLY_AS if more_dram else HOLDS
    issued = (f"V2 issues 1/{fmt(traffic['ratio'])} of V1's loads", f"V2 发出的加载仅为 V1 的 1/{fmt(traffic['ratio'])}")
    return Row((f"at {label(shape)}: V1 {ms_text(v1)} ms, V2 {ms_text(v2)} ms, {fmt(gain, 2)}×",
                f"{label(shape)} 时：V1 {ms_text(v1)} ms，V2 {ms_text(v2)} ms，{fmt(gain, 2)}×"), verdict,
               (f"{issued[0]} at {label(S4096)}; {says[0]}" if more_dram else f"{issued[0]} at {label(S4096)}",
                f"{label(S4096)} 时 {issued[1]}；{says[1]}" if more_dram else f"{label(S4096)} 时 {issued[1]}"),
               bench_cmd(V2, shape) + "; gemmlab profile cuda/v1_naive,cuda/v2_smem --shape 4096",
               "this run" + (f"; {PROFILED}" if "dram_v1" in traffic else ""),
               PER_LOAD if verdict == ONLY_AS else ("", ""), {"gain": gain, **traffic})


@judges("next.coalesce")
def _coalesce_next(f: Facts) -> Row:
    row = _coalescing(f, S1024)
    row.verdict = ONLY_AS if row.verdict != NOT_MEASURED else NOT_MEASURED
    row.only_as = ("advice for a kernel that does not coalesce (V1 as written already does)",
                   "对未合并访问的核函数的建议（原写法的 V1 已经是合并访问）")
    row.reason = ("a warp's loads of B are contiguous already; mapping threadIdx.x to rows is what costs",
                  "一个 warp 对 B 的加载本已连续；把 threadIdx.x 映射到行才会付出代价")
    return row


@judges("next.tens_of_times")
def _tens_of_times(f: Facts) -> Row:
    v1, v2, rows = f.ms(V1, S1024), f.ms(V2, S1024), f.ms(V1_ROWS, S1024)
    if v1 is None or v2 is None:
        return missing(("V2 over V1 at 1024³", "1024³ 下 V2 相对 V1"), bench_cmd(V2, S1024))
    en = f"V2 over V1 at {label(S1024)}: {fmt(v1 / v2, 2)}×"
    zh = f"{label(S1024)} 时 V2 相对 V1：{fmt(v1 / v2, 2)}×"
    values = {"gain": v1 / v2}
    if rows is not None:
        en += f"; over the uncoalesced V1: {fmt(rows / v2, 1)}×"
        zh += f"；相对非合并 V1：{fmt(rows / v2, 1)}×"
        values["gain_over_uncoalesced"] = rows / v2
    fp32, tf32 = f.ms(CUBLAS, S1024), f.ms(CUBLAS_TF32, S1024)
    gap_en, gap_zh = "", ""
    if fp32 is not None and tf32 is not None:
        g32, gtf = v1 / fp32, v1 / tf32
        values.update({"cublas_fp32_gain": g32, "cublas_tf32_gain": gtf})
        en += (f"; cuBLAS over V1 ({ms_text(v1)} ms): FP32 {fmt(fp32, 4)} ms, {fmt(g32, 1)}×; TF32 {fmt(tf32, 4)} "
               f"ms, {fmt(gtf, 1)}×")
        zh += (f"；cuBLAS 相对 V1（{ms_text(v1)} ms）：FP32 {fmt(fp32, 4)} ms，{fmt(g32, 1)}×；TF32 {fmt(tf32, 4)} ms，"
               f"{fmt(gtf, 1)}×")
        big = [name for name, g in (("FP32", g32), ("TF32", gtf)) if g >= 10]
        v1_sq, fp32_sq = f.ms(V1, S4096), f.ms(CUBLAS, S4096)
        at_sq = (f", {fmt(v1_sq / fp32_sq, 1)}× at {label(S4096)}", f"，{label(S4096)} 时为 {fmt(v1_sq / fp32_sq, 1)}×") \
            if v1_sq and fp32_sq else ("", "")
        if at_sq[0]:
            values["cublas_fp32_gain_4096"] = v1_sq / fp32_sq
        gap_en = ("; tens of times is not even the gap to cuBLAS at the same precision (FP32: "
                  f"{fmt(g32, 1)}× at {label(S1024)}{at_sq[0]})"
                  + (f"; only TF32's tensor cores reach it ({fmt(gtf, 1)}×)" if "TF32" in big else ""))
        gap_zh = (f"；几十倍甚至也不是同精度下与 cuBLAS 的差距（FP32：{label(S1024)} 时 {fmt(g32, 1)}×{at_sq[1]}）"
                  + (f"；只有 TF32 张量核心达到这一量级（{fmt(gtf, 1)}×）" if "TF32" in big else ""))
        if "FP32" in big:
            gap_en = f"; tens of times is the gap to cuBLAS FP32 ({fmt(g32, 1)}×), not to V2"
            gap_zh = f"；几十倍是与 cuBLAS FP32 的差距（{fmt(g32, 1)}×），而不是与 V2"
    return Row((en, zh), FAILS if v1 / v2 < 10 else HOLDS,
               ("on the H200 the caches already give V1 most of what tiling gives" + gap_en,
                "在 H200 上缓存已经给了 V1 分块所能带来的大部分收益" + gap_zh),
               bench_cmd(V2, S1024) + "; " + bench_cmd(CUBLAS, S1024) + "; " + bench_cmd(CUBLAS_TF32, S1024),
               "this run", values=values)
