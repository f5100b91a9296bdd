"""The first seed's claims judged: its measured table (the A100's figures beside the H200's) and V2, the shared-memory
tiling."""
from __future__ import annotations

from gemmlab.chapter.claim import (CUBLAS, CUBLAS_TF32, FAILS, HOLDS, ONLY_AS, PER_LOAD, SEED, SQ, V1, V2, Row,
                                   beside_model, bench_cmd, dram_intensity, fmt, judges, level_name, missing, ms_text,
                                   ridges, with_more)
from gemmlab.chapter.emulate import seed_guard_stores
from gemmlab.chapter.facts import A100, H200, PROFILED, S4096, Facts, label


@judges("table.v1")
def _v1_table(f: Facts) -> Row:
    seed_gflops = SQ.flops() / 0.120 / 1e9
    r = f.rec(V1, S4096)
    en, zh = with_more((f"the seed's 120 ms is {fmt(seed_gflops)} GFLOPS at 4096³",
                        f"种子的 120 ms 在 4096³ 对应 {fmt(seed_gflops)} GFLOPS"),
                       (f"; H200 cuda/v1_naive {ms_text(r['median_ms'])} ms, {fmt(r['gflops'])} GFLOPS",
                        f"；H200 上 cuda/v1_naive {ms_text(r['median_ms'])} ms，{fmt(r['gflops'])} GFLOPS") if r else None)
    return Row((en, zh), HOLDS, ("120 ms and 1150 GFLOPS agree with each other", "120 ms 与 1150 GFLOPS 彼此一致"),
               bench_cmd(V1, S4096), "this run" if r else "the seed's figures", values={"seed_gflops": seed_gflops})


@judges("table.v1_roof")
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


@judges("table.bw_util")
def _bw_util(f: Facts) -> Row:
    model_util = 8 * SQ.m * SQ.n * SQ.k / 0.120 / (A100.dram_gbs * 1e9) * 100
    comp_util = SQ.compulsory_bytes() / 0.120 / (A100.dram_gbs * 1e9) * 100
    r = f.rec(V1, S4096)
    en = (f"on the seed's own A100 figures: 8MNK bytes in 120 ms is {fmt(model_util)}% of 1555 GB/s; the compulsory "
          f"bytes {fmt(comp_util, 2)}%")
    zh = f"按种子自己的 A100 数据：120 ms 内 8MNK 字节为 1555 GB/s 的 {fmt(model_util)}%；必需字节为 {fmt(comp_util, 2)}%"
    values = {"seed_count_pct": model_util, "compulsory_pct": comp_util}
    h200 = None
    if r and f.copy_gbs:  # the H200's DRAM roof as every other H200 roof here: the measured copy bandwidth
        h200 = 8 * SQ.m * SQ.n * SQ.k / (r["median_ms"] * 1e-3) / (f.copy_gbs * 1e9) * 100
        values["h200_pct"] = h200
    en, zh = with_more((en, zh), (f"; H200 V1: {fmt(h200)}% of the measured {fmt(f.copy_gbs)} GB/s (seed's count)",
                                  f"；H200 上 V1：实测 {fmt(f.copy_gbs)} GB/s 的 {fmt(h200)}%（种子计数）")
                       if h200 is not None else None)
    return Row((en, zh), FAILS, ("neither count gives 8%; the seed's count passes 100% because caches serve the loads",
                                 "两种计数都得不到 8%；按种子计数超过 100%，因为缓存服务了这些加载"),
               bench_cmd(V1, S4096), "the seed's figures" + ("; this run" if h200 is not None else ""), values=values)


@judges("table.cublas")
def _cublas_172(f: Facts) -> Row:
    t = SQ.flops() / 0.8e-3 / 1e12
    fp32, tf32 = f.rec(CUBLAS, S4096), f.rec(CUBLAS_TF32, S4096)
    dense_tf32, half = A100.tflops["tf32"], A100.tflops["bf16"]  # the A100's dense 16-bit peak: BF16's, FP16's the same
    en = (f"0.8 ms is {fmt(t, 1)} TFLOPS: {fmt(t / A100.tflops['fp32'], 1)}× the A100's FP32 peak and past its dense "
          f"TF32 peak of {fmt(dense_tf32)} (gemmlab's a100 spec); only the dense BF16/FP16 peak of {fmt(half)} TFLOPS "
          f"(or sparse TF32, 2 × {fmt(dense_tf32)}) has room for it")
    zh = (f"0.8 ms 即 {fmt(t, 1)} TFLOPS：为 A100 FP32 峰值的 {fmt(t / A100.tflops['fp32'], 1)}×，也超过其稠密 TF32 峰值 "
          f"{fmt(dense_tf32)}（gemmlab 的 a100 规格）；BF16/FP16 稠密峰值 {fmt(half)} TFLOPS（或稀疏 TF32，2 × {fmt(dense_tf32)}）"
          f"才容得下这一数值")
    values = {"seed_tflops": t}
    if fp32:
        en += f"; H200 cuBLAS FP32 {fmt(fp32['tflops'], 1)} TFLOPS"
        zh += f"；H200 上 cuBLAS FP32 {fmt(fp32['tflops'], 1)} TFLOPS"
        values["h200_fp32"] = fp32["tflops"]
    if tf32:
        en += f", TF32 {fmt(tf32['tflops'], 1)}"
        zh += f"，TF32 {fmt(tf32['tflops'], 1)}"
        values["h200_tf32"] = tf32["tflops"]
    return Row((en, zh), FAILS, ("not an FP32 figure, nor a dense TF32 one: 16-bit tensor cores, or sparse TF32",
                                 "既不是 FP32 数据，也不是稠密 TF32 数据：只能出自 16 位张量核心或稀疏 TF32"),
               bench_cmd(CUBLAS, S4096) + "; " + bench_cmd(CUBLAS_TF32, S4096),
               "the seed's figures" + ("; this run" if fp32 else ""), values=values)


@judges("table.pct_peak")
def _pct_peak(f: Facts) -> Row:
    r = f.rec(V1, S4096)
    en, zh = f"1150 / 19,500 = {fmt(1150 / 195, 1)}%", f"1150 / 19,500 = {fmt(1150 / 195, 1)}%"
    if r:
        pct = r["gflops"] / (H200.tflops["fp32"] * 1e3) * 100
        en += f"; H200 V1 at {label(S4096)}: {fmt(pct, 1)}% of the datasheet's {fmt(H200.tflops['fp32'], 1)} TFLOPS"
        zh += f"；H200 上 V1 在 {label(S4096)}：规格值 {fmt(H200.tflops['fp32'], 1)} TFLOPS 的 {fmt(pct, 1)}%"
    return Row((en, zh), HOLDS, ("the seed's arithmetic is right", "种子的算术正确"), bench_cmd(V1, S4096),
               "the seed's figures" + ("; this run" if r else ""))


@judges("table.gap")
def _gap_100x(f: Facts) -> Row:
    r, c = f.rec(V1, S4096), f.rec(CUBLAS, S4096)
    en = f"the seed's 172,000 / 1150 = {fmt(172000 / 1150)}×, a tensor-core figure against an FP32 kernel"
    zh = f"种子的 172,000 / 1150 = {fmt(172000 / 1150)}×，是张量核心数据与 FP32 核函数相比"
    if not (r and c):
        row = missing(("V1 and cuBLAS FP32 at 4096³", "4096³ 下的 V1 与 cuBLAS FP32"), bench_cmd(V1, S4096), (en, zh))
        return row
    gap = c["tflops"] / r["tflops"]
    return Row((en + f"; at the same precision on the H200 cuBLAS FP32 is {fmt(gap, 1)}× V1",
                zh + f"；H200 上同精度 cuBLAS FP32 是 V1 的 {fmt(gap, 1)}×"), ONLY_AS,
               ("at one precision the gap is an order smaller", "同精度下差距小一个数量级"),
               bench_cmd(CUBLAS, S4096), "this run",
               ("a tensor-core figure against an FP32 kernel", "张量核心数据与 FP32 核函数之比"),
               {"gap": gap})


# -- V2 --------------------------------------------------------------------------------------------------------
@judges("v2.heading")
def _v2_heading(f: Facts) -> Row:
    return Row(("gemmlab: cuda/v2_smem, numba/v2_smem (level 2)", "gemmlab：cuda/v2_smem、numba/v2_smem（第 2 级）"), FAILS,
               ("the heading says V1; the kernel is sgemm_kernel2, the V2 the text announced just before",
                "标题写作 V1；实际是 sgemm_kernel2，即前文预告的 V2"), "gemmlab list --kernels '*/v2_*'", "model")


def v2_traffic(f: Facts) -> tuple[tuple[str, str], tuple[str, str], dict]:
    """V1's and V2's bytes at 4096³: the loads issued (the model), and through L2 and from DRAM (Nsight Compute's
    counters, where they are here): (figures, what they say, values), each text in English and Chinese."""
    m1, m2 = f.model(V1, S4096), f.model(V2, S4096)
    r = m1["modeled_read_bytes"] / m2["modeled_read_bytes"]
    p1, p2 = f.profile(V1), f.profile(V2)
    g1, g2 = fmt(m1["modeled_read_bytes"] / 1e9), fmt(m2["modeled_read_bytes"] / 1e9, 1)
    values = {"ratio": r, "issued_v1": m1["modeled_read_bytes"], "issued_v2": m2["modeled_read_bytes"]}
    en = f"loads issued at {label(S4096)}: V1 {g1} GB, V2 {g2} GB (1/{fmt(r)} as much)"
    zh = f"{label(S4096)} 时发出的加载：V1 {g1} GB，V2 {g2} GB（仅为其 1/{fmt(r)}）"
    says = ("V2 issues far fewer loads", "V2 发出的加载少得多")
    if p1 and p2:
        l1, l2 = fmt(p1["l2_bytes"] / 1e9, 1), fmt(p2["l2_bytes"] / 1e9, 1)
        d1, d2 = fmt(p1["dram_bytes"] / 1e9, 2), fmt(p2["dram_bytes"] / 1e9, 2)
        dr = p2["dram_bytes"] / p1["dram_bytes"]
        en += f"; through L2: V1 {l1} GB, V2 {l2} GB; from DRAM: V1 {d1} GB, V2 {d2} GB ({fmt(dr, 2)}×)"
        zh += f"；经 L2：V1 {l1} GB，V2 {l2} GB；来自 DRAM：V1 {d1} GB，V2 {d2} GB（{fmt(dr, 2)}×）"
        says = (f"L1 already served V1's re-reads: through L2 the two move about the same bytes ({l1} and {l2} GB), "
                f"and from DRAM V2 moves {fmt(dr, 2)}× V1's ({d2} against {d1} GB)",
                f"V1 的重复读取本已由 L1 提供：两者经 L2 的字节数相近（{l1} 与 {l2} GB），"
                f"而 V2 来自 DRAM 的字节数是 V1 的 {fmt(dr, 2)}×（{d2} 对 {d1} GB）")
        values.update({"l2_v1": p1["l2_bytes"], "l2_v2": p2["l2_bytes"], "dram_v1": p1["dram_bytes"],
                       "dram_v2": p2["dram_bytes"], "dram_ratio": dr})
    return (en, zh), says, values


@judges("v2.fewer_loads")
def _fewer_loads(f: Facts) -> Row:
    figures, says, values = v2_traffic(f)
    return Row(figures, ONLY_AS, says,
               "gemmlab roofline --shape 4096; gemmlab profile cuda/v1_naive,cuda/v2_smem --shape 4096",
               PROFILED if "dram_v1" in values else "model", PER_LOAD, values)


@judges("v2.reuse")
def _reuse(f: Facts) -> Row:
    m1, m2 = f.model(V1, S4096), f.model(V2, S4096)
    r = m1["modeled_read_bytes"] / m2["modeled_read_bytes"]
    return Row((f"V1's loads over V2's at {label(S4096)}: {fmt(r)}× (TILE = 32)",
                f"{label(S4096)} 时 V1 与 V2 加载量之比：{fmt(r)}×（TILE = 32）"),
               HOLDS, ("each staged value serves the tile's 32 threads", "每个暂存值服务 tile 中的 32 个线程"),
               "gemmlab roofline --shape 4096", "model", values={"ratio": r})


@judges("v2.intensity")
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


@judges("v2.near_ridge")
def _near_ridge(f: Facts) -> Row:
    m2 = f.model(V2, SEED)
    r = f.rec(V2, SEED)
    rg = ridges(f)
    d = dram_intensity(f, V2)
    bound = level_name(m2["bound"])
    en = (f"32×32 tiles: {fmt(m2['modeled_intensity'], 2)} FLOP per byte issued, left of the H200's ridge "
          f"({fmt(rg['measured'], 1)} on the measured roofs, {fmt(rg['datasheet'], 1)} on the datasheet)")
    zh = (f"32×32 tile：按发出的字节计为 {fmt(m2['modeled_intensity'], 2)} FLOP/byte，位于 H200 脊点左侧"
          f"（按实测屋顶为 {fmt(rg['measured'], 1)}，按规格为 {fmt(rg['datasheet'], 1)}）")
    values = {"intensity": m2["modeled_intensity"], "ridge": rg["measured"], "ridge_datasheet": rg["datasheet"]}
    if d is not None:
        en += f"; per DRAM byte V2 does {fmt(d, 1)} at {label(S4096)}"
        zh += f"；按 DRAM 字节计，V2 在 {label(S4096)} 为 {fmt(d, 1)}"
        values["dram_intensity"] = d
    en += f"; gemmlab's levels bound V2 by {bound[0]}"
    zh += f"；按 gemmlab 的分级模型，V2 的瓶颈在{bound[1]}"
    measured = (f"; V2 runs {fmt(r['gflops'])} GFLOPS at {label(SEED)} against the seeds' single roof of "
                f"{fmt(m2['seed_predicted_tflops'] * 1e3)} ({fmt(m2['modeled_intensity'], 2)} × the measured "
                f"{fmt(rg['dram_gbs'])} GB/s)",
                f"；V2 在 {label(SEED)} 实测 {fmt(r['gflops'])} GFLOPS，种子的单屋顶为 "
                f"{fmt(m2['seed_predicted_tflops'] * 1e3)}（{fmt(m2['modeled_intensity'], 2)} × 实测 "
                f"{fmt(rg['dram_gbs'])} GB/s）") if r else None
    reached = d is not None and d >= rg["measured"]
    reason = ("in the seed's count 32×32 tiles stay left of the ridge and larger tiles move past it"
              + ("; per DRAM byte V2 already reaches the measured ridge, and what binds it is shared memory and issue, "
                 "not DRAM" if reached else "; what then binds is shared memory and issue, not DRAM"),
              "按种子的计数，32×32 tile 仍在脊点左侧，更大的 tile 才能越过"
              + ("；按 DRAM 字节计 V2 已到达实测脊点，约束它的是共享内存与指令发射，而非 DRAM" if reached
                 else "；此后的瓶颈是共享内存与指令发射，而非 DRAM"))
    return beside_model((en, zh), measured, reason, bench_cmd(V2, SEED) + "; gemmlab profile cuda/v2_smem --shape 4096",
                        ("a direction (in the seed's count 32×32 tiles fall short)", "方向（按种子的计数 32×32 tile 还不够）"),
                        values)


@judges("v2.store_guard")
def _store_guard(f: Facts) -> Row:
    seed, ragged = seed_guard_stores(*SEED[:2]), seed_guard_stores(1000, 1000)
    return Row((f"stray stores (threads past C's rows or columns): {fmt(seed['stray'])} at {label(SEED)}; "
                f"{fmt(ragged['stray'])} at 1000×1000, {fmt(ragged['inside'])} of them onto valid elements of C "
                f"(C[row + 1][col − N]) and {fmt(ragged['outside'])} past its end",
                f"越界线程（超出 C 的行或列）的写入：{label(SEED)} 时 {fmt(seed['stray'])} 次；1000×1000 时 "
                f"{fmt(ragged['stray'])} 次，其中 {fmt(ragged['inside'])} 次落在 C 的有效元素上（C[row + 1][col − N]），"
                f"{fmt(ragged['outside'])} 次写到 C 的末尾之外"), FAILS,
               ("`||` lets a thread past one edge store: one past N's edge (col ≥ N, row < M) wraps to "
                "C[row + 1][col − N], races that valid element's own store and can overwrite it with 0, its Bs tile "
                "being zeros; one past M's edge writes past C. gemmlab's V2 stores only when both hold, and verifies "
                "on ragged shapes",
                "`||` 让越过一条边界的线程也写入：越过 N 边界的线程（col ≥ N，row < M）回绕到 C[row + 1][col − N]，"
                "与该有效元素自身的写入竞争，可能以 0 覆盖它（它的 Bs tile 全为零）；越过 M 边界的线程写到 C 之外。"
                "gemmlab 的 V2 要求两者同时成立，并在非整块形状上验证"),
               "pytest tests/kernels/cuda/sgemm/test_cuda_host.py -k v2_seed_store_guard; "
               "gemmlab.chapter.emulate.seed_guard_stores", "model",
               values={"seed": seed["stray"], "ragged": ragged["stray"], "ragged_inside": ragged["inside"],
                       "ragged_outside": ragged["outside"]})
