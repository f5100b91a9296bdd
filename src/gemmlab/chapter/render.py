"""The chapter's claims as text: the console table (``gemmlab chapter``, ``--lang zh``) and the walk-through pages
(docs/chapter.md, docs/zh/chapter.md), both read from a chapter JSON, so the two languages carry the same claims
and the same numbers."""
from __future__ import annotations

from gemmlab.chapter.text import GLOSSARY, HEAD, INTRO, NAMES, SEED_NAMES, VERDICTS, source_text

# The walk-through, V0 to V2: (section key, its claims in order)
SECTIONS = [
    ("model", ["def.sum", "model.flops", "model.bytes", "model.intensity", "model.n_over_6"]),
    ("v0", ["v0.cubic", "v0.space", "cpu.loop", "cpu.pitfall"]),
    ("v1", ["v1.launch", "v1.comment_16x16", "v1.warp_friendly", "v1.block_choice", "v1.launch_args", "v1.kernel",
            "v1.naive_runs", "harness.shape", "harness.tolerance", "harness.timing", "harness.gflops",
            "v1.slower_than_cpu"]),
    ("traffic", ["v1.per_thread", "v1.rows_reread", "v1.read_global", "v1.redundancy", "v1.reread", "v1.billion",
                 "v1.five_hundred", "v1.ratio_one", "table.accesses", "table.reuse", "v1.quarter"]),
    ("coalescing", ["v1.coalescing", "table.coalescing", "next.coalesce"]),
    ("roofline", ["roofline.model", "roofline.ridge", "roofline.below_ridge", "roofline.bandwidth_bound",
                  "roofline.waiting", "v1.latency", "v1.fma_cycles", "summary.memory", "v1.needs_ten"]),
    ("table", ["table.v1", "table.v1_roof", "table.bw_util", "table.cublas", "table.pct_peak", "table.gap"]),
    ("v2", ["v2.heading", "v2.launch", "v2.fewer_loads", "v2.reuse", "v2.intensity", "v2.near_ridge", "v2.store_guard",
            "next.smem", "next.tens_of_times"]),
]

# the claims that real caches decide (the seeds count every load as DRAM traffic; V0's growth is the CPU's caches;
# an average of back-to-back launches runs on a warm L2)
CACHES = {"model.bytes", "v1.per_thread", "v1.rows_reread", "v1.read_global", "v1.redundancy", "v1.reread",
          "v1.five_hundred", "v1.quarter", "v1.ratio_one", "table.accesses", "table.reuse", "roofline.model",
          "roofline.below_ridge", "roofline.bandwidth_bound", "roofline.waiting", "v1.latency", "summary.memory",
          "table.v1_roof", "table.bw_util", "v2.fewer_loads", "v2.near_ridge", "next.smem", "next.tens_of_times",
          "v0.cubic", "harness.timing"}

SECTION_TEXT = {
    "model": {"en": ("The problem and its model", "C = A·B in FP32, A M×K and B K×N, row-major. The seeds count the "
                     "work and the least traffic; gemmlab computes the same formulas (`gemmlab roofline`)."),
              "zh": ("问题与模型", "FP32 下的 C = A·B，A 为 M×K，B 为 K×N，行主序。种子给出计算量与最小访存量；"
                     "gemmlab 用相同公式计算（`gemmlab roofline`）。")},
    "v0": {"en": ("V0: the CPU triple loop", "`cpu/v0_naive` is multi_cpu and matmul_cpu: loop order i, j, k, a "
                  "float32 accumulator, compiled by numba. It is timed where it finishes; the seed shape would take "
                  "minutes."),
           "zh": ("V0：CPU 三重循环", "`cpu/v0_naive` 即 multi_cpu 与 matmul_cpu：循环顺序 i、j、k，float32 累加，由 numba "
                  "编译。只在能跑完的规模上计时；种子形状需要数分钟。")},
    "v1": {"en": ("V1: one thread per element of C", "`cuda/v1_naive` and `numba/v1_naive` are sgemm_kernel1 and "
                  "matmul_naive. Variants of the same source measure the seeds' alternatives: "
                  "`cuda/v1_naive[BX=16,BY=16]` (the 16×16 block) and `cuda/v1_naive[ROWS_ON_X=1]` (threadIdx.x "
                  "along M)."),
           "zh": ("V1：每个线程计算 C 的一个元素", "`cuda/v1_naive` 与 `numba/v1_naive` 即 sgemm_kernel1 与 matmul_naive。"
                  "同一源码的变体用来测量种子提到的其他写法：`cuda/v1_naive[BX=16,BY=16]`（16×16 block）与 "
                  "`cuda/v1_naive[ROWS_ON_X=1]`（threadIdx.x 映射到 M）。")},
    "traffic": {"en": ("V1's memory traffic: what is issued, what arrives",
                       "The seeds count every load a thread issues as DRAM traffic. gemmlab counts it too, and "
                       "beneath it what L1, L2 and DRAM see (the model, and Nsight Compute's counters at 4096³)."),
                "zh": ("V1 的访存：发出了多少，实际到达多少", "种子把线程发出的每次加载都算作 DRAM 流量。gemmlab 同样计数，"
                       "并给出其下 L1、L2、DRAM 各自看到的量（模型，以及 4096³ 下 Nsight Compute 的计数器）。")},
    "coalescing": {"en": ("Coalescing", "The second seed says V1's loads cannot coalesce. The variant that maps "
                          "threadIdx.x to rows is the uncoalesced kernel; measured beside V1 it shows which one is."),
                   "zh": ("合并访问", "第二篇说 V1 的加载无法合并。把 threadIdx.x 映射到行的变体才是非合并的核函数；"
                          "与 V1 并列测量即可看出谁是。")},
    "roofline": {"en": ("The roofline", "The seeds draw one DRAM roof and one compute roof. gemmlab draws a roof per "
                        "memory level; the report of the chapter JSON has both pictures side by side."),
                 "zh": ("屋顶线模型", "种子只画一条 DRAM 屋顶与一条算力屋顶。gemmlab 为每级存储各画一条屋顶；"
                        "章节 JSON 的报告中两幅图并列。")},
    "table": {"en": ("The first seed's measured table (A100, 4096³)", "The seed's own figures are checked against each "
                     "other and against the seed's model, then beside the H200's."),
              "zh": ("第一篇的实测表（A100，4096³）", "先核对种子数据彼此之间以及与种子模型是否一致，再与 H200 的测量并列。")},
    "v2": {"en": ("V2: shared-memory tiling", "`cuda/v2_smem` and `numba/v2_smem` are sgemm_kernel2 with its store "
                  "guard fixed; `cuda/v2_smem[TILE=16]` is the 16×16 tile."),
           "zh": ("V2：共享内存分块", "`cuda/v2_smem` 与 `numba/v2_smem` 即修正了写回条件的 sgemm_kernel2；"
                  "`cuda/v2_smem[TILE=16]` 为 16×16 tile。")},
}

# The page's own words: a term, in English and in Chinese
PAGE_TERMS = {
    "title": ("The seed chapter, claim by claim", "种子章节逐条核对"),
    "source": ("Generated by `gemmlab chapter --docs` from", "由 `gemmlab chapter --docs` 生成，数据来自"),
    "right": ("Where the seeds are right", "种子说对了什么"),
    "caches": ("Where real caches change the story", "真实缓存如何改变结论"),
    "text": ("Where the seeds' text is wrong on its own terms", "种子文本自身的错误"),
    "glossary": ("Glossary of the seeds' terms", "种子术语表"),
    "names": ("The seeds' names in gemmlab", "种子中的名称与 gemmlab 的对应"),
    "term": ("term", "术语"),
    "meaning": ("in gemmlab", "在 gemmlab 中"),
    "seed_name": ("the seed's name", "种子中的名称"),
    "gemmlab_name": ("gemmlab", "gemmlab"),
    "level": ("level", "级别"),
    "run": ("Run it", "运行"),
    "other": ("Chinese: [zh/chapter.md](zh/chapter.md)", "English: [../chapter.md](../chapter.md)"),
    "not_measured": ("Not measured in this run", "本次运行未测量"),
    "counts": ("verdicts", "结论统计"),
}
PAGE = {lang: {term: words[i] for term, words in PAGE_TERMS.items()} for i, lang in enumerate(("en", "zh"))}


def verdict_text(row: dict, lang: str) -> str:
    """The verdict in ``lang``; "holds only as" with what it holds as: "holds only as: X", "仅就X而言成立"."""
    v = VERDICTS[row["verdict"]][lang]
    what = row["only_as"][lang] if row["verdict"] == "holds only as" else ""
    if not what:
        return v
    if lang == "en":
        return f"{v}: {what}"
    before = " " if what[0].isascii() and what[0].isalnum() else ""  # a space between Chinese and Latin text
    after = " " if what[-1].isascii() and what[-1].isalnum() else ""
    return f"仅就{before}{what}{after}而言成立"


def seed_figure(row: dict, lang: str) -> str:
    """The seed's figure in ``lang``: the seed's own Chinese words on the Chinese page (a chapter JSON before both
    languages were kept has one string)."""
    figure = row["seed_figure"]
    return figure.get(lang) or figure["zh"] if isinstance(figure, dict) else figure


def seed_ref(row: dict, lang: str) -> str:
    return f"{SEED_NAMES[row['seed']][lang]} §{row['section']}"


def console_table(results: dict, lang: str = "en"):
    """The rich Table ``gemmlab chapter`` prints: one row per claim."""
    from rich.markup import escape
    from rich.table import Table

    h = HEAD[lang]
    t = Table(title=h["title"], header_style="bold", title_justify="left", show_lines=True)
    for col, ratio in (("id", 1), ("quote", 3), ("measured", 4), ("verdict", 2), ("reason", 3)):
        t.add_column(h[col], ratio=ratio, overflow="fold")
    for row in results["claims"]:
        style = {"holds": "green", "does not hold": "red", "holds only as": "yellow"}.get(row["verdict"], "dim")
        t.add_row(escape(f"{row['id']}\n{seed_ref(row, lang)}"),
                  f"{escape(row['quote'])}\n[dim]{h['figure']}: {escape(seed_figure(row, lang))}[/]",
                  f"{escape(row['measured'][lang])}\n[dim]$ {escape(row['command'])}\n{h['source']}: "
                  f"{escape(source_text(row['source'], lang))}[/]",
                  f"[{style}]{escape(verdict_text(row, lang))}[/]", escape(row["reason"][lang]))
    return t


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def summary(results: dict, lang: str = "en") -> str:
    """The compact table of a chapter JSON (gemmlab report --summary): one row per claim, the seed's words and
    figure, gemmlab's figure, the verdict."""
    h = HEAD[lang]
    out = [f"# {h['title']}", "", f"| {h['seed']} | {h['quote']} | {h['figure']} | {h['measured']} | {h['verdict']} |",
           "|---|---|---|---|---|"]
    for row in results["claims"]:
        out.append("| " + " | ".join(_cell(x) for x in (seed_ref(row, lang), row["quote"], seed_figure(row, lang),
                                                          row["measured"][lang], verdict_text(row, lang))) + " |")
    return "\n".join(out) + "\n"


def page(results: dict, lang: str, source: str, figures: str | None = None) -> str:
    """The walk-through in ``lang``: the sections V0 to V2, each claim with the seed's words, gemmlab's figure, the
    verdict and why; then where the seeds are right, where caches change the story, the glossary and the names."""
    p = PAGE[lang]
    by_id = {row["id"]: row for row in results["claims"]}
    stop = "。" if lang == "zh" else "."
    out = [f"# {p['title']}", "", f"{p['source']} `{source}`{stop} {p['other']}", "", INTRO[lang], ""]
    if results.get("not_measured"):
        out += [f"**{p['not_measured']}:** {results['not_measured'][lang]}", ""]
    if figures:
        out += [f"![]({figures}/roofline_single.png)", "", f"![]({figures}/roofline_levels.png)", ""]
    h = HEAD[lang]
    for key, ids in SECTIONS:
        title, intro = SECTION_TEXT[key][lang]
        out += [f"## {title}", "", intro, "",
                f"| {h['seed']} | {h['quote']} | {h['figure']} | {h['measured']} | {h['verdict']} | {h['reason']} | "
                f"{h['command']} |", "|---|---|---|---|---|---|---|"]
        for cid in ids:
            row = by_id[cid]
            out.append("| " + " | ".join(_cell(x) for x in (
                seed_ref(row, lang), row["quote"], seed_figure(row, lang), row["measured"][lang],
                verdict_text(row, lang), row["reason"][lang], f"`{row['command']}`")) + " |")
        out.append("")
    right = [r for r in results["claims"] if r["verdict"] == "holds"]
    changed = [r for r in results["claims"] if r["verdict"] in ("does not hold", "holds only as")]
    stop = "。" if lang == "zh" else "."

    def item(r):
        return f"- {r['claim'][lang]}（{verdict_text(r, lang)}）：{r['reason'][lang]}{stop}" if lang == "zh" else \
            f"- {r['claim'][lang]} ({verdict_text(r, lang)}): {r['reason'][lang]}{stop}"

    out += [f"## {p['right']}", ""] + [f"- {r['claim'][lang]}（{seed_ref(r, lang)}）" if lang == "zh" else
                                       f"- {r['claim'][lang]} ({seed_ref(r, lang)})" for r in right] + [""]
    out += [f"## {p['caches']}", ""] + [item(r) for r in changed if r["id"] in CACHES] + [""]
    out += [f"## {p['text']}", ""] + [item(r) for r in changed if r["id"] not in CACHES] + [""]
    out += [f"## {p['glossary']}", "", f"| 中文 | English | {p['meaning']} |", "|---|---|---|"]
    out += [f"| {zh} | {en} | {_cell(meaning if lang == 'en' else meaning_zh)} |"
            for zh, en, meaning, meaning_zh in GLOSSARY] + [""]
    out += [f"## {p['names']}", "", f"| {p['seed_name']} | {p['gemmlab_name']} | {p['level']} |", "|---|---|---|"]
    for en, zh, level in NAMES:
        seed_name, ours = zh if lang == "zh" else en
        out.append(f"| {_cell(seed_name)} | {_cell(ours)} | {level} |")
    out.append("")
    out += [f"## {p['run']}", "", "```", "gemmlab chapter --json results/h200/chapter.json" +
            (" --lang zh" if lang == "zh" else ""),
            "gemmlab report results/h200/chapter.json --out results/h200/chapter",
            "gemmlab chapter --from results/h200/chapter.json --docs docs", "```", ""]
    return "\n".join(out)
