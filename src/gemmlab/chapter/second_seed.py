"""The second seed's claims judged: the CPU loop, the naive GPU kernel, why it is slow (latency, re-reads, the
ratio of arithmetic to access) and the next steps it promises."""
from __future__ import annotations

from gemmlab.chapter.claim import (BLAS, FAILS, HOLDS, NOT_MEASURED, NV1, ONLY_AS, SEED, SQ, V0, V1, V1_16, V1_ROWS, V2,
                                   Row, beside_model, bench_cmd, block_16, dram_counters, fmt, judges, missing,
                                   ms_text, with_more)
from gemmlab.chapter.facts import H200, PROFILED, S1024, S4096, Facts, label


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
        return missing(("V1 against its levels' bound", "V1 与其分级模型界"), bench_cmd(V1, S1024))
    mod = f.model(V1, S1024)
    ratio = r["median_ms"] / mod["predicted_ms"]
    return Row((f"V1 at {label(S1024)} runs {fmt(ratio, 2)}× its levels' bound ({mod['bound']}, "
                f"{ms_text(mod['predicted_ms'])} ms)",
                f"V1 在 {label(S1024)} 的耗时为其分级模型界（{mod['bound']}，{ms_text(mod['predicted_ms'])} ms）的 {fmt(ratio, 2)}×"),
               HOLDS, ("no level's bandwidth binds it; each FFMA waits on its two loads with no other work to overlap",
                       "没有哪一级带宽是瓶颈；每条 FFMA 都在等待两次加载，且没有其他工作可重叠"),
               bench_cmd(V1, S1024), "this run", values={"ratio": ratio})


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
               "gemmlab roofline --shape 1024", "model", ("loads issued", "发出的加载"),
               {"issued": issued, "l2": mod["l2_bytes"], "dram": mod["dram_bytes"]})


@judges("v1.billion")
def _billion(f: Facts) -> Row:
    n = 1024
    a_loads, all_loads = n ** 3, 2 * n ** 3
    return Row((f"A's loads: {fmt(a_loads)}; with B's: {fmt(all_loads)}",
                f"A 的加载：{fmt(a_loads)}；加上 B：{fmt(all_loads)}"),
               ONLY_AS, ("each thread reads 2K values, K of A and K of B", "每个线程读取 2K 个值：A 的 K 个与 B 的 K 个"),
               "naive_traffic (gemmlab roofline --shape 1024)", "model", ("A's loads alone", "仅 A 的加载"),
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
    return Row((f"{fmt(per_elem, 2)} FLOP per element loaded ({fmt(mod['modeled_intensity'], 2)} FLOP/byte)",
                f"每个加载元素 {fmt(per_elem, 2)} FLOP（{fmt(mod['modeled_intensity'], 2)} FLOP/byte）"), HOLDS,
               ("the first seed's 0.25 FLOP/byte, counted in elements", "即第一篇的 0.25 FLOP/byte，按元素计"),
               "gemmlab roofline --shape 1024", "model", values={"per_element": per_elem})


@judges("v1.needs_ten")
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


@judges("table.accesses")
def _table_counts(f: Facts) -> Row:
    n = 1024
    return Row((f"at N = {n}: {fmt(2 * n ** 3)} loads against {fmt(2 * n * n)}; the least traffic also writes C's "
                f"{fmt(n * n)} elements",
                f"N = {n} 时：{fmt(2 * n ** 3)} 次加载对比 {fmt(2 * n * n)} 次；最小流量还包括写 C 的 {fmt(n * n)} 个元素"),
               HOLDS, ("counts of loads, as the first seed's 8MNK and 4(MK+KN)", "加载次数，与第一篇的 8MNK 和 4(MK+KN) 相同"),
               "naive_traffic, Problem.compulsory_bytes", "model")


@judges("table.reuse")
def _no_reuse(f: Facts) -> Row:
    got = dram_counters(f)
    if not got:
        return missing(("V1's DRAM bytes", "V1 的 DRAM 字节数"), "gemmlab profile cuda/v1_naive --shape 4096")
    issued = 8 * SQ.m * SQ.n * SQ.k
    return Row((f"V1 at {label(S4096)}: {fmt(issued / got[0])} bytes issued per byte read from DRAM",
                f"V1 在 {label(S4096)}：每从 DRAM 读一个字节，发出 {fmt(issued / got[0])} 字节的加载"), FAILS,
               ("the code has none; the hardware's L1 and L2 reuse each value many times",
                "代码层面没有复用；硬件的 L1 与 L2 让每个值被复用了很多次"),
               "gemmlab profile cuda/v1_naive --shape 4096", PROFILED, values={"reuse": issued / got[0]})


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
                        bench_cmd(V1, S1024), ("the memory pipeline, not DRAM", "存储流水线，而非 DRAM"))


@judges("next.smem")
def _smem_next(f: Facts, shape=S1024) -> Row:
    v1, v2 = f.ms(V1, shape), f.ms(V2, shape)
    if v1 is None or v2 is None:
        return missing((f"V1 and V2 at {label(shape)}", f"{label(shape)} 下的 V1 与 V2"), bench_cmd(V2, shape))
    gain = v1 / v2
    return Row((f"at {label(shape)}: V1 {ms_text(v1)} ms, V2 {ms_text(v2)} ms, {fmt(gain, 2)}×",
                f"{label(shape)} 时：V1 {ms_text(v1)} ms，V2 {ms_text(v2)} ms，{fmt(gain, 2)}×"),
               HOLDS if gain > 1 else FAILS,
               ("fewer loads issued; the global bytes the caches let through change little",
                "发出的加载更少；但经缓存后的全局字节数变化不大"), bench_cmd(V2, shape), "this run", values={"gain": gain})


@judges("next.coalesce")
def _coalesce_next(f: Facts) -> Row:
    row = _coalescing(f, S1024)
    row.verdict = ONLY_AS if row.verdict != NOT_MEASURED else NOT_MEASURED
    row.only_as = ("advice for a kernel that does not coalesce; V1 as written already does",
                   "针对未合并访问的核函数的建议；原写法的 V1 已经是合并访问")
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
    return Row((en, zh), FAILS if v1 / v2 < 10 else HOLDS,
               ("on the H200 the caches already give V1 most of what tiling gives; tens of times is the gap to cuBLAS, "
                "not to V2", "在 H200 上缓存已经给了 V1 分块所能带来的大部分收益；几十倍是与 cuBLAS 的差距，而不是与 V2"),
               bench_cmd(V2, S1024), "this run", values=values)
