"""The shape suite's report (gemmlab bench --api --suite --json): per op and precision, a table of every shape and a
figure of the ratios against M, and the summary the suite's bars are read from (harness.api_suite.summarize).

Ratios are torch's time over gemmlab's (above 1: gemmlab faster). A record whose torch result failed the float64
check is marked † and left out of the geomeans and minimum of the first summary columns, kept in the columns "with
†"; a record torch could not run has no ratio. Figures: GPU-time and eager ratio against M (log2) for each (N, K)
of the linear shapes, the squares (M = N = K) dashed, the long-K shapes as lone points; a line at 1.0 and one at the
bar every shape must clear where the row has one (harness.api_suite.bars_for); hollow markers where torch's result
is wrong. The fused ops' records also give gemmlab's plain GEMM of the same operands, timed in the same run, and a
table of what the epilogue costs. Records that hold the kernels each side launched (harness.launches) show them in a
last column.
"""
from __future__ import annotations

from gemmlab.harness.api_suite import (DECODE_M, OPS_RUN, OVER_PLAIN_BAR, OVER_PLAIN_M, REGIME_DECODE_M,
                                       REGIME_MID_M, bars_for, summarize)
from gemmlab.harness.launches import brief
from gemmlab.report import data as D


def _f(x, spec=".3f", none="—"):
    return none if x is None else format(x, spec)


def groups(records: list[dict]) -> list[tuple[str, str]]:
    """(op, precision) pairs in the order of the precisions, then of the suite's ops (OPS_RUN: mm first, whichever
    op a later run replaced), an op it does not know as it comes."""
    pairs = list(dict.fromkeys((r["op"], r["precision"]) for r in records))
    return sorted(pairs, key=lambda p: (D.PRECISION_ORDER.get(p[1], 9),
                                        OPS_RUN.index(p[0]) if p[0] in OPS_RUN else len(OPS_RUN), pairs.index(p)))


def figure_name(op: str, precision: str) -> str:
    return f"suite_{op}_{precision}.png"


def markdown(results: dict, figures: dict | None = None) -> str:
    """The report: how it was measured, the summary against the bars, then a section per op and precision;
    ``figures`` maps (op, precision) to the file name of its figure."""
    env, records = results.get("env", {}), results["records"]
    gpu = (env.get("gpu") or {}).get("name", "no GPU")
    lines = [f"# gemmlab.matmul against torch: the shape suite on {gpu}", "",
             "Each op and precision over the suite's shapes, gemmlab (`kernel=\"auto\"`) and torch on the same "
             "tensors, alternating call by call, the L2 evicted before each call, both writing C in the same dtype. "
             "**GPU time**: CUDA events around the call, issued while the GPU spins after the flush, so every kernel "
             "of the call counts and host time does not. **Eager time**: events around the call from an idle GPU, "
             "host time included. Ratio = torch / gemmlab (above 1: gemmlab faster). DRAM = (A, B, C bytes at the "
             "measured copy bandwidth) / gemmlab's GPU time. Every result checked against float64 (FP8: of the "
             "dequantized operands) before it is timed, torch's too. torch's calls: `torch.matmul` with TF32 off "
             "(FP32) and on (TF32), `torch.mm` with `out_dtype` where C's dtype is not the operands' (FP32 C of 16-bit operands), "
             "`torch._scaled_mm` with the same scales (FP8: per tensor with fast accumulation; block-scaled: its "
             "blockwise scaling); for bmm (a batch of squares in one call, `gemmlab.call.batched_matmul`), "
             "`torch.bmm` on the same tensors; for linear_bias and linear_bias_gelu (`gemmlab.linear` with the bias "
             "and gelu fused into its one launch), `F.linear` (its bias in cuBLASLt's epilogue), then `F.gelu`.", ""]
    for run in env.get("runs", []):
        state = "finished" if run.get("finished") else "**not finished** (its completed records are here)"
        lines.append(f"- `{run.get('command')}` at git {run.get('git_sha', 'unknown')}, {run.get('started')}: "
                     f"{', '.join(run.get('precisions', []))}; copy bandwidth {_f(run.get('copy_gbs'), '.0f')} GB/s; "
                     f"{state}")
    if results.get("partial"):
        lines += ["", "**Partial**: a run above did not finish."]
    lines += [line for note in results.get("notes") or () for line in ("", f"> {note}")]
    lines += ["", "## Summary", "",
              "Each row is held to its own bars, the last column's (each with its threshold, then whether it is "
              "met), read over the records whose peer is correct: the GPU-time geomean, the lowest shape (no "
              f"failed record), the eager geomean, the decode rows' (M ≤ {DECODE_M}) lowest share of the DRAM roof; "
              "a bar not named does not apply to that row. Eager host µs: the median over the records of a call's "
              "own host time in the eager samples (issued right after a synchronization, the GPU idle until it "
              "launches), gemmlab's and torch's.", "",
              "| op | precision | records | GPU geomean | GPU min (at) | eager geomean | eager host µs (gemmlab / "
              "torch) | decode DRAM min (at) | with †: GPU geomean / min | † | failed | no peer | bars met |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    summary = summarize(records)
    for op, precision in groups(records):
        s = summary[f"{op} {precision}"]
        p, a = s["peer_ok"], s["all"]
        met = _bars_met(s["bars"], bars_for(op, precision))
        lines.append(f"| {op} | {D.PRECISION_LABEL.get(precision, precision)} | {s['records']} | "
                     f"{_f(p['gpu_geomean'])} | {_f(p['gpu_min'])} ({p['gpu_min_at'] or '—'}) | "
                     f"{_f(p['eager_geomean'])} | {_host(s.get('eager_host_us'))} | {_f(s['decode_dram_min'], '.0%')} "
                     f"({s['decode_dram_min_at'] or '—'}) | {_f(a['gpu_geomean'])} / {_f(a['gpu_min'])} | {s['peer_wrong']} | {s['failed']} | "
                     f"{s['no_peer']} | {met} |")
    lines += _regimes(summary, groups(records))
    lines += _epilogue_cost(summary, groups(records))
    for op, precision in groups(records):
        lines += ["", f"## {op}, {D.PRECISION_LABEL.get(precision, precision)}", ""]
        if figures and (op, precision) in figures:
            lines += [f"![ratio against M: {op} {precision}]({figures[(op, precision)]})", ""]
        lines += _table(sorted((r for r in records if r["op"] == op and r["precision"] == precision), key=_order))
    return "\n".join(lines) + "\n"


def _bars_met(met: dict, bars: dict) -> str:
    """Each bar of a row with its threshold, and yes or no."""
    thresholds = {**{name: f"≥ {bar}×" for name, bar in bars.items()}, "over_plain": f"≤ {OVER_PLAIN_BAR}×"}
    if "decode_dram" in bars:
        thresholds["decode_dram"] = f"≥ {bars['decode_dram']:.0%}"
    return ", ".join(f"{name} {thresholds[name]} {'yes' if ok else 'no'}" for name, ok in met.items()) or "—"


REGIME_LABEL = {"decode": f"decode (M ≤ {REGIME_DECODE_M})",
                "mid": f"mid sizes ({REGIME_DECODE_M} < M ≤ {REGIME_MID_M})", "large": f"large (M > {REGIME_MID_M})",
                "square": "squares", "long_k": "long K", "bmm": "batches", "given": "shapes given"}


def _regimes(summary: dict, pairs) -> list[str]:
    """Each op and precision of more than one regime, regime by regime (harness.api_suite.regime): the same columns
    as the summary's first, over the records whose peer is correct."""
    rows = []
    for op, precision in pairs:
        regimes = summary[f"{op} {precision}"].get("regimes") or {}
        if len(regimes) > 1:
            rows += [(op, precision, name, g) for name, g in regimes.items()]
    if not rows:
        return []
    lines = ["", "### By regime", "",
             f"The summary's first columns over each regime's records: the linear rows by M (decode up to "
             f"{REGIME_DECODE_M} rows, mid sizes up to {REGIME_MID_M}, large past it), the squares, long K.", "",
             "| op | precision | regime | records | GPU geomean | GPU min (at) | eager geomean |",
             "|---|---|---|---:|---:|---:|---:|"]
    for op, precision, name, g in rows:
        lines.append(f"| {op} | {D.PRECISION_LABEL.get(precision, precision)} | {REGIME_LABEL.get(name, name)} | "
                     f"{g['n']} | {_f(g['gpu_geomean'])} | {_f(g['gpu_min'])} ({g['gpu_min_at'] or '—'}) | "
                     f"{_f(g['eager_geomean'])} |")
    return lines


def _epilogue_cost(summary: dict, pairs) -> list[str]:
    """The fused ops against gemmlab's own plain GEMM of the same operands, timed in the same run: what the
    epilogue costs, with its bar."""
    rows = [(op, precision, summary[f"{op} {precision}"]["over_plain"]) for op, precision in pairs
            if summary[f"{op} {precision}"].get("over_plain")]
    if not rows:
        return []
    lines = ["", "### The fused epilogue's cost", "",
             "GPU time of the fused call over gemmlab's plain `gemmlab.matmul(x, w.t())` on the same operands, "
             f"timed in the same interleaved run. Bar: the geomean at M ≥ {OVER_PLAIN_M} at most {OVER_PLAIN_BAR}×. "
             "Beside it, the same for torch's own fused call (cuBLASLt's epilogue: `torch.addmm` for the bias, "
             "`torch._addmm_activation(..., use_gelu=True)`, a tanh GELU, for the bias and GELU) over `torch.mm`, at "
             "the same rows, where the run timed it.",
             "",
             f"| op | precision | geomean at M ≥ {OVER_PLAIN_M} (records) | max (at) | geomean, every M | bar met | "
             f"torch's fused over torch.mm, M ≥ {OVER_PLAIN_M} |",
             "|---|---|---:|---:|---:|---|---:|"]
    for op, precision, o in rows:
        met = "yes" if o["geomean"] is not None and o["geomean"] <= OVER_PLAIN_BAR else "no"
        lines.append(f"| {op} | {D.PRECISION_LABEL.get(precision, precision)} | {_f(o['geomean'])} ({o['n']}) | "
                     f"{_f(o['max'])} ({o['max_at'] or '—'}) | {_f(o['all_geomean'])} | {met} | "
                     f"{_f(o.get('torch_geomean'))} |")
    return lines


def _host(h: dict | None) -> str:
    return "—" if not h else f"{h['gemmlab']:.1f} / {h['torch']:.1f}"


_GROUP_ORDER = {"linear": 0, "square": 1, "long_k": 2, "bmm": 3}


def _order(r: dict) -> tuple:
    """Table order: the linear shapes by (K, N) then M, the squares, the long-K shapes, bmm's by size then batch,
    given shapes."""
    return (_GROUP_ORDER.get(r.get("group"), 4), r["k"] if r.get("group") == "linear" else 0,
            r["n"] if r.get("group") == "linear" else 0, r["m"], r["k"], r.get("batch", 1))


def _table(records: list[dict]) -> list[str]:
    """A row per record; records timed beside gemmlab's plain GEMM (a fused op's) get its time and kernel too."""
    plain = any("plain_gpu_us" in r for r in records)
    launched = any("kernels" in r for r in records)
    lines = ["| shapes | M×N×K | kernel (auto) | GPU µs (gemmlab / torch) | × GPU | eager µs (gemmlab / torch) | "
             "× eager | DRAM | rel err (gemmlab / torch) | C |" + (" plain GEMM µs (kernel) | fused / plain | "
                                                                   "torch's fused / torch.mm |" if plain else "")
             + (" kernels launched [grid]: gemmlab / torch |" if launched else ""),
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|" + ("---:|---:|---:|" if plain else "")
             + ("---|" if launched else "")]
    notes = []
    for r in records:
        shape = f"{r['batch']} × " if r.get("batch") else ""
        shape += f"{r['m']}×{r['n']}×{r['k']}"
        head = f"| {r.get('group', '')} | {shape} | `{r.get('kernel')}` |"
        if r.get("error"):
            lines.append(f"{head} ERROR | | | | | | |")
            notes.append(f"- {shape}: {r['error']}")
            continue
        if not r.get("verified"):
            lines.append(f"{head} FAILED | | | | | {_f(r.get('rel_err'), '.1e')} | |")
            continue
        mark = " †" if r.get("peer_wrong") else ""
        if r.get("peer_wrong"):
            notes.append(f"- † {shape}: {r.get('peer_note')} (torch's rel err {_f(r.get('torch_rel_err'), '.2e')})")
        if "torch_error" in r:
            notes.append(f"- {shape}: torch could not run it: {r['torch_error']}")
        if r.get("gpu_late") or r.get("torch_gpu_late"):
            notes.append(f"- {shape}: host-bound GPU-time samples (gemmlab / torch): {r.get('gpu_late', 0)} / "
                         f"{r.get('torch_gpu_late', 0)} of {r.get('gpu_calls')}")
        sampled = "" if r.get("verify", "full") == "full" else " (rows sampled)"
        c = r.get("out_dtype", "")
        if r.get("torch_out_dtype") not in (None, c):
            c += f" / {r['torch_out_dtype']}"
        lines.append(f"{head} {_f(r.get('gpu_us'), '.1f')} / {_f(r.get('torch_gpu_us'), '.1f')} | "
                     f"{_f(r.get('gpu_ratio'))}{mark} | {_f(r.get('eager_us'), '.1f')} / "
                     f"{_f(r.get('torch_eager_us'), '.1f')} | {_f(r.get('eager_ratio'))}{mark} | "
                     f"{_f(r.get('dram_fraction'), '.0%')} | {_f(r.get('rel_err'), '.1e')} / "
                     f"{_f(r.get('torch_rel_err'), '.1e')}{sampled} | {c} |"
                     + (f" {_f(r.get('plain_gpu_us'), '.1f')} (`{r.get('plain_kernel')}`) | "
                        f"{_f(r.get('over_plain'))} | {_f(r.get('torch_over_plain'))} |" if plain else "")
                     + (f" {brief(r.get('kernels'))} / {brief(r.get('torch_kernels'))} |" if launched else ""))
    return lines + ([""] + notes if notes else [])


def series(records: list[dict]) -> list[tuple[str, dict, list[dict]]]:
    """(label, style, records sorted by M) of each line a figure draws: one per (N, K) of the linear shapes, the
    squares, the long-K shapes, one per batch of the bmm records, any given shapes."""
    from gemmlab.report import plots  # matplotlib (gemmlab[plots]) for the figures only: the tables need none

    out = []
    linear = [r for r in records if r.get("group") == "linear"]
    colors = plots._palette(len({(r["n"], r["k"]) for r in linear}))
    for (n, k), color in zip(sorted({(r["n"], r["k"]) for r in linear}, key=lambda nk: (nk[1], nk[0])), colors):
        mine = sorted((r for r in linear if (r["n"], r["k"]) == (n, k)), key=lambda r: r["m"])
        out.append((f"N={n}, K={k}", dict(ls="-", marker="o", color=color), mine))
    square = sorted((r for r in records if r.get("group") == "square"), key=lambda r: r["m"])
    if square:
        out.append(("M=N=K", dict(ls="--", marker="s", color="dimgray"), square))
    for k, marker in zip(sorted({r["k"] for r in records if r.get("group") == "long_k"}), "D*PX"):
        mine = sorted((r for r in records if r.get("group") == "long_k" and r["k"] == k), key=lambda r: r["m"])
        out.append((f"long K: N=M, K={k}", dict(ls=":", marker=marker, color="black"), mine))
    for batch, marker in zip(sorted({r["batch"] for r in records if r.get("group") == "bmm"}), "v<>^h"):
        mine = sorted((r for r in records if r.get("group") == "bmm" and r["batch"] == batch), key=lambda r: r["m"])
        out.append((f"bmm: batch {batch} of M=N=K", dict(ls="-.", marker=marker, color="tab:purple"), mine))
    given = sorted((r for r in records if r.get("group") == "given"), key=lambda r: (r["m"], r["n"], r["k"]))
    if given:
        out.append(("given shapes", dict(ls="none", marker="^", color="tab:brown"), given))
    return out


def figure(records: list[dict], op: str, precision: str, gpu: str = ""):
    """GPU-time and eager ratio against M, side by side, one line per series; the legend below both panels."""
    from gemmlab.report import plots  # first: without matplotlib it stops with the extra to install
    from matplotlib.lines import Line2D

    fig = plots._new_figure(12.5, 5.4)
    axes = fig.subplots(1, 2, sharey=True)
    mine = [r for r in records if r["op"] == op and r["precision"] == precision and r.get("gpu_ratio")]
    label = D.PRECISION_LABEL.get(precision, precision)
    floor = bars_for(op, precision).get("gpu_min")
    handles = []
    for ax, field, title in zip(axes, ("gpu_ratio", "eager_ratio"), ("GPU time", "eager time (host included)")):
        for name, style, rows in series(mine):
            rows = [r for r in rows if r.get(field)]
            if not rows:
                continue
            line, = ax.plot([r["m"] for r in rows], [r[field] for r in rows], lw=1.4, ms=5, label=name,
                            gid=f"{field}:{name}", **style)
            wrong = [r for r in rows if r.get("peer_wrong")]
            if wrong:  # ringed: torch's result is wrong there
                ax.plot([r["m"] for r in wrong], [r[field] for r in wrong], ls="none", marker="o", ms=11,
                        mfc="none", mec="red", gid=f"{field}:wrong")
            if ax is axes[0]:
                handles.append(line)
        ax.axhline(1.0, color="black", lw=1.0, gid="parity")
        if floor is not None and field == "gpu_ratio":  # a bar on GPU time: eager time has a geomean bar only
            ax.axhline(floor, color="red", lw=1.0, ls=":", gid="bar")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("M (rows of x)")
        ax.set_title(f"{title}: torch / gemmlab", fontsize=10)
        ax.grid(True, which="both", lw=0.3, alpha=0.5)
    axes[0].set_ylabel("ratio (above 1: gemmlab faster)")
    ys = [r[f] for r in mine for f in ("gpu_ratio", "eager_ratio") if r.get(f)] + [floor or 1.0, 1.0]
    axes[0].set_ylim(min(ys) * 0.95, max(ys) * 1.05)
    handles.append(Line2D([], [], color="black", lw=1.0, label="parity (1.0)"))
    if floor is not None:
        handles.append(Line2D([], [], color="red", lw=1.0, ls=":", label=f"bar: no shape below {floor} (GPU time)"))
    if any(r.get("peer_wrong") for r in mine):
        handles.append(Line2D([], [], ls="none", marker="o", ms=11, mfc="none", mec="red",
                              label="torch's result wrong (†)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 4), fontsize=8, frameon=False)
    what = {"bmm": "gemmlab's batched matmul", "linear_bias": "gemmlab.linear(x, w, bias)",
            "linear_bias_gelu": "gemmlab.linear(x, w, bias, 'gelu')"}.get(op, "gemmlab.matmul(x, w.t())")
    fig.suptitle(f"{what} against torch, {op} {label}{' on ' + gpu if gpu else ''}", fontsize=11)
    return fig


def figures(results: dict) -> tuple[list, dict]:
    """(file name, figure) of each op and precision with a ratio, and the names by (op, precision)."""
    gpu = ((results.get("env") or {}).get("gpu") or {}).get("name", "")
    out, names = [], {}
    for op, precision in groups(results["records"]):
        if any(r.get("gpu_ratio") for r in results["records"] if (r["op"], r["precision"]) == (op, precision)):
            names[(op, precision)] = figure_name(op, precision)
            out.append((names[(op, precision)], figure(results["records"], op, precision, gpu)))
    return out, names


def summary_markdown(results: dict) -> str:
    """The summary table alone (gemmlab report --summary)."""
    text = markdown(results)
    start = text.index("## Summary")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end + 1]
