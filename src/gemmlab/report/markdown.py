"""The Markdown report: provenance, roofs, one table per shape and precision, the seeds' table, model vs counters.

Every number comes from the results JSON named at the top, and the top names the gemmlab command that wrote it
(``env.command``) and, per profiled kernel, the ``gemmlab profile`` command. Ratios are recomputed here (from the
interleaved timing of kernel and peer where the run made one, else from the medians), only against the peer of
the same precision timed in the same run.
"""
from __future__ import annotations

import os

from gemmlab.report import data as D

_STATUS_MARK = {"ok": "ok", "failed": "**FAILED**", "error": "error", "skipped": "skipped",
                "compiled": "compiled", "simulated": "simulated"}


def _table(header: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    align = align or "l" + "r" * (len(header) - 1)
    marks = {"l": ":---", "r": "---:", "c": ":---:"}
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(marks[a] for a in align) + "|"]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return out


def _ms(rec: dict) -> str:
    if not rec.get("median_ms"):
        return "—"
    text = D.fmt(rec["median_ms"])
    if rec.get("iqr_ms") is not None:
        text += f" ± {D.fmt(rec['iqr_ms'], 2)}"
    if rec.get("late"):  # the GPU waited on the host's launch in these samples: their time holds the host's too
        text += f" (host-bound in {rec['late']} of {rec.get('samples', '?')})"
    return text


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _pct(value) -> str:
    return "—" if value is None else f"{float(value):.1f}%"


def provenance(results: dict, source: str, link: str | None = None, out_dir: str = "<dir>") -> list[str]:
    env = results.get("env") or {}
    gpu = env.get("gpu") or {}
    lines = []
    commands = env.get("commands") or ([env["command"]] if env.get("command") else [])
    shown = f"[`{source}`]({link})" if link else f"`{source}`"
    lines.append(f"Source: {shown}, written by " + " then ".join(f"`{c}`" for c in commands) + "." if commands else
                 f"Source: {shown} (the JSON does not name the command that wrote it; `gemmlab bench --json` does).")
    lines.append(f"Re-render: `gemmlab report {source} --out {out_dir}`. Profiled counters were added by the "
                 "`gemmlab profile` commands listed under *Model against counters*.")
    lines.append("")
    facts = [
        ("GPU", f"{gpu.get('name', 'none')}" + (f", {gpu['sm_count']} SMs" if gpu.get("sm_count") else "")
         + (f", L2 {gpu['l2_bytes'] / 2**20:.0f} MiB" if gpu.get("l2_bytes") else "")
         + (f", max SM clock {gpu['max_sm_clock_mhz']:.0f} MHz" if gpu.get("max_sm_clock_mhz") else "")),
        ("mode", env.get("mode")),
        ("driver / CUDA", f"{env.get('driver') or '—'} / {env.get('cuda') or env.get('cuda_runtime') or '—'}"),
        ("git", env.get("git_sha")),
        ("time", env.get("time")),
        ("host", env.get("host")),
        ("libraries", ", ".join(f"{k} {v}" for k, v in sorted((env.get("libraries") or {}).items()))),
    ]
    opts = env.get("options")
    if isinstance(opts, dict) and opts:
        facts.append(("timing", ", ".join(f"{k}={v}" for k, v in opts.items())))
    lines += _table(["", ""], [[k, str(v) if v not in (None, "") else "—"] for k, v in facts], "ll")
    return lines


def roofs_section(results: dict, precs: list[str]) -> list[str]:
    lines = ["## Roofs", ""]
    rows = []
    for p in precs:
        r = D.roofs(results, p)
        rows.append([D.PRECISION_LABEL.get(p, p), D.fmt(r.peak_tflops), D.fmt(r.dram_gbs, 4), D.fmt(r.ridge),
                     D.fmt(r.measured_tflops), D.fmt(r.measured_bw_gbs, 4), D.fmt(r.measured_ridge)])
    lines += _table(["precision", "peak TFLOPS (datasheet)", "DRAM GB/s (datasheet)", "ridge FLOP/B",
                     "measured TFLOPS (cuBLAS FP32)", "measured copy GB/s", "measured ridge FLOP/B"], rows)
    lines += ["", "Ridge point = peak / bandwidth: below it a kernel is memory-bound (the seeds' A100 example: "
                  "19.5 TFLOPS / 1555 GB/s ≈ 12.5 FLOP/byte). Each precision has its own compute roof; the measured "
                  "compute ceiling is cuBLAS SGEMM and applies to FP32 only.", ""]
    return lines


def kernel_table(group: list[dict], records: list[dict], results: dict) -> list[str]:
    """One row per record at a shape and precision. % of peak is against the peak of the units each kernel's
    arithmetic runs on (``D.own_peak_tflops``), marked with that peak's name where it is not the precision's own."""
    header = ["kernel", "level", "status", "time ms (median ± IQR)", "TFLOPS", "% of peak", "× peer", "× prev",
              "modeled intensity", "bound", "modeled bytes", "DRAM bytes (ncu)", "rel err"]
    rows = []
    for rec in group:
        peer = D.peer_record(rec, records)
        if rec.get("kernel") == rec.get("peer"):
            ratio = "peer"
        else:
            ratio = _ratio(D.peer_ratio(rec, records))
            own, blocks = D.peer_ratio_own_medians(rec, records), D.peer_ratio_blocks(rec)
            if own is not None:
                ratio += f" ({_ratio(own)}" + (f"; blocks {_ratio(blocks)})" if blocks is not None else ")")
            if peer is not None and ratio != "—":
                ratio += f" {peer['kernel'].split('/')[-1]}"
        st = D.status(rec)
        mark = _STATUS_MARK.get(st, st or "—")
        if st in ("failed", "error", "skipped", "compiled", "simulated") and rec.get("reason"):
            mark += f": {rec['reason']}"
        model = rec.get("model") or {}
        pct = None
        if D.is_gpu(rec) and D.is_timed(rec) and D.tflops(rec):
            peak = D.own_peak_tflops(results, rec)
            pct = 100 * D.tflops(rec) / peak if peak else None
        share = D.peak_share(rec)
        against = f" ({D.peak_label(*share)})" if pct is not None and share != (rec.get("precision"), 1) else ""
        rows.append([
            f"`{rec['kernel']}`", str(rec["level"]) if rec.get("level") is not None else "—", mark, _ms(rec),
            D.fmt(D.tflops(rec)) if D.is_timed(rec) else "—",
            _pct(pct) + against, ratio,
            (f"{_ratio(rec['variant_gain'])} reg." if rec.get("variant_gain") else _ratio(rec.get("speedup_prev")))
            if D.is_timed(rec) else "—",
            D.fmt(D.modeled_intensity(rec)), str(model.get("bound") or "—"), D.fmt_bytes(D.modeled_bytes(rec)),
            D.fmt_bytes(D.dram_bytes(rec)), D.fmt(rec.get("rel_err"), 2),
        ])
    return _table(header, rows, "lrlrrrrrrlrrr")


def _peak_basis(results: dict, group: list[dict], roofs: D.Roofs) -> str:
    """What each % of peak in ``group``'s table is against: the precision's datasheet peak, and for each kernel
    whose arithmetic runs on other units (tc7: the TF32 tensor cores) the peak of those, as its cell is marked."""
    own = D.PRECISION_LABEL.get(roofs.precision, roofs.precision)
    text = f"% of peak: against {D.fmt(roofs.peak_tflops)} TFLOPS {own} (datasheet)"
    others: dict = {}
    for rec in group:
        share = D.peak_share(rec)
        if D.is_gpu(rec) and D.is_timed(rec) and share != (rec.get("precision"), 1):
            others.setdefault(share, []).append(f"`{rec['kernel']}`")
    for (units, ops), names in others.items():
        peak = D.roofs(results, units).peak_tflops
        label = D.PRECISION_LABEL.get(units, units)
        text += (f"; {', '.join(names)} (marked {D.peak_label(units, ops)}) against "
                 f"{D.fmt(peak / ops if peak else None)} TFLOPS, the {label} peak {D.fmt(peak)}"
                 + (f" over the {ops} {label} products each of its multiply-adds takes" if ops > 1 else "")
                 + f": its arithmetic runs on the {label} units")
    return text + "."


def seeds_table(group: list[dict], roofs: D.Roofs) -> list[str]:
    """The seeds' table, regenerated: version, time, GFLOPS, bandwidth utilization (plus the measured one)."""
    rows = []
    for rec in group:
        if not D.is_timed(rec) or not D.is_gpu(rec):
            continue
        rows.append([rec["kernel"], f"{rec['median_ms']:.3f} ms", f"{D.tflops(rec) * 1e3:,.0f}",
                     _pct(D.bw_util_model(rec, roofs.bw_for_util)),
                     _pct(D.dram_util_measured(rec, roofs.bw_for_util))])
    if not rows:
        return []
    return _table(["实现版本 version", "耗时 time", "GFLOPS", "带宽利用率 bandwidth utilization (model)",
                   "DRAM utilization (ncu)"], rows, "lrrrr")


def traffic_section(records: list[dict], roofs_by_prec: dict) -> list[str]:
    prof = [r for r in records if D.profile_of(r)]
    lines = ["## Model against counters", ""]
    if not prof:
        return lines + ["No record in this JSON was profiled; `gemmlab profile KERNEL --shape MxNxK --json "
                        "RESULTS.json` adds Nsight Compute counters to it.", ""]
    rows, unavailable, commands, notes = [], [], [], []
    for rec in sorted(prof, key=lambda r: (D.PRECISION_ORDER.get(r.get("precision"), 9), D.shape_of(r),
                                            D.sort_key(r))):
        p = D.profile_of(rec)
        if not D.profiled(rec):
            unavailable.append(f"- `{rec['kernel']}` at {D.shape_label(D.shape_of(rec))}: "
                               f"{p.get('reason', 'unavailable')}")
            continue
        model_read = (rec.get("model") or {}).get("modeled_read_bytes")
        dram_read = D.dram_read_bytes(rec)
        absorbed = model_read / dram_read if model_read and dram_read else None
        conflicts = sum(v for v in (p.get("smem_bank_conflicts_ld"), p.get("smem_bank_conflicts_st")) if v)
        rows.append([
            f"`{rec['kernel']}`", D.shape_label(D.shape_of(rec)), D.fmt_bytes(model_read), D.fmt_bytes(dram_read),
            D.fmt_bytes(D.dram_write_bytes(rec)), D.fmt_bytes(D.l2_bytes(rec)),
            "—" if absorbed is None else f"{D.fmt(absorbed)}×",
            D.fmt(D.modeled_intensity(rec)), D.fmt(D.measured_intensity(rec)),
            _pct(D.dram_util_measured(rec, roofs_by_prec[rec["precision"]].bw_for_util)),
            f"{conflicts:,.0f}", _pct(p.get("achieved_occupancy_pct")),
            "—" if p.get("registers_per_thread") is None else f"{p['registers_per_thread']:.0f}",
        ])
        if absorbed and absorbed > 1.5 and model_read:
            notes.append(f"- `{rec['kernel']}` at {D.shape_label(D.shape_of(rec))}: the model counts "
                         f"{D.fmt_bytes(model_read)} of global loads, DRAM served {D.fmt_bytes(dram_read)}: "
                         f"L1 and L2 absorbed {100 * (1 - dram_read / model_read):.1f}% of them "
                         f"({absorbed:.0f}× fewer bytes than modeled).")
        elif absorbed and absorbed < 0.9:
            notes.append(f"- `{rec['kernel']}` at {D.shape_label(D.shape_of(rec))}: DRAM read "
                         f"{D.fmt_bytes(dram_read)}, more than the {D.fmt_bytes(model_read)} the model counts: "
                         "the same tiles came from DRAM more than once (the operands exceed L2, or the model "
                         "counts too little).")
        if p.get("gemmlab_command") or p.get("command"):
            cmd = p.get("gemmlab_command") or p.get("command")
            commands.append(f"- `{rec['kernel']}` {D.shape_label(D.shape_of(rec))}: `{cmd}`"
                            + (f" (raw ncu CSV: `{p['csv']}`)" if p.get("csv") else ""))
    if rows:
        lines += _table(["kernel", "shape", "modeled global reads", "DRAM read (ncu)", "DRAM write (ncu)",
                         "L2 bytes (ncu)", "model / DRAM read", "modeled FLOP/B", "measured FLOP/B",
                         "DRAM util", "smem bank conflicts", "occupancy", "regs/thread"], rows,
                        "llrrrrrrrrrrr")
        lines += ["", "Measured intensity = FLOPs / DRAM bytes (read + write) of one cold-L2 launch under "
                      "`ncu --clock-control none`; DRAM util = those bytes over the benchmark's median time."]
    if notes:
        lines += [""] + notes
    if unavailable:
        lines += ["", "Counters unavailable:"] + unavailable
    if commands:
        lines += ["", "Commands that produced the counters:"] + commands
    return lines + [""]


def hierarchy_section(records: list[dict]) -> list[str]:
    """The cache-aware roofline against Nsight Compute: for each profiled record, the DRAM and L2 bytes the model
    counts beside ncu's dram__bytes and lts__t_bytes, and the predicted time beside the measured one, with the
    level that binds and, past 1.5×, what the model says it leaves out."""
    lines = ["## The roofline's levels against counters", ""]
    modeled = [r for r in records if "levels" in (r.get("model") or {})]
    if not modeled:
        return lines + ["These records carry only the seeds' model; `gemmlab roofline --remodel RESULTS.json "
                        "--ceilings CEILINGS.json` adds the levels beneath it.", ""]
    rows = []
    for rec in sorted((r for r in modeled if D.profiled(r)),
                      key=lambda r: (D.PRECISION_ORDER.get(r.get("precision"), 9), D.shape_of(r), D.sort_key(r))):
        m = rec["model"]
        dram, l2 = D.dram_bytes(rec), D.l2_bytes(rec)
        ratio = rec["median_ms"] / m["predicted_ms"] if rec.get("median_ms") and m.get("predicted_ms") else None
        staggered, estimate = m.get("dram_bytes_staggered"), m.get("dram_bytes_estimate")
        rows.append([f"`{rec['kernel']}`", D.shape_label(D.shape_of(rec)), D.fmt_bytes(m["dram_bytes"]),
                     "=" if staggered == m["dram_bytes"] else D.fmt_bytes(staggered),
                     "=" if estimate == m["dram_bytes"] else D.fmt_bytes(estimate), D.fmt_bytes(dram),
                     _ratio(m["dram_bytes"] / dram if dram else None),
                     _ratio(staggered / dram if dram and staggered else None),
                     _ratio(estimate / dram if dram and estimate else None), D.fmt_bytes(m["l2_bytes"]),
                     D.fmt_bytes(l2), _ratio(m["l2_bytes"] / l2 if l2 else None), D.fmt(m["predicted_ms"]),
                     D.fmt(rec.get("median_ms")), _ratio(ratio), str(m.get("bound")),
                     m.get("unmodeled", "") if ratio and ratio > 1.5 else ""])
    if not rows:
        return lines + ["No record with the levels was profiled; `gemmlab profile KERNEL --json RESULTS.json` adds "
                        "Nsight Compute's counters.", ""]
    lines += _table(["kernel", "shape", "DRAM model", "DRAM staggered", "DRAM estimate", "DRAM (ncu)",
                     "model / ncu", "staggered / ncu", "estimate / ncu", "L2 model", "L2 (ncu lts)", "model / ncu",
                     "predicted ms", "measured ms", "measured / predicted", "bound", "what the model leaves out"],
                    rows, "llrrrrrrrrrrrrrll")
    roofs = next(r["model"] for r in modeled)
    lines += ["", f"DRAM model: what the L2 cannot keep of the tile re-reads, one wave of tiles at a time in the "
                  f"kernel's own order; staggered: the same order where the CTAs that share an SM run a fraction of "
                  f"a tile apart, one per SM in step (= where that is the same count: a persistent grid, one CTA per "
                  f"SM); estimate: the geometric mean of the two, since which one a launch runs is the GPU's choice "
                  f"at run time (the DRAM roof keeps the in-step count); L2 model: the tile re-reads between the SMs "
                  f"and L2 (dram__bytes, lts__t_bytes from one cold-L2 launch under ncu). Predicted: the largest of "
                  f"the levels' times, the arithmetic at the clock the timing held. Roofs: {roofs.get('ceilings')}.",
              ""]
    return lines


def render_markdown(results: dict, source: str, figures: dict | None = None, link: str | None = None,
                    out_dir: str = "<dir>") -> str:
    """The whole report. ``source`` is the JSON path as given on the command line, ``link`` the same file relative
    to the report; ``figures`` maps ("roofline", precision, shape) / ("ladder", shape) to relative paths."""
    figures = figures or {}
    records = D.attach_profiles(results)
    env = results.get("env") or {}
    modeled = D.device_spec(results).get("name")
    heading = (env.get("gpu") or {}).get("name") or (
        "no GPU" + (f" (the roofline model is for the {modeled})" if modeled else ""))
    precs = D.precisions(records)
    lines = [f"# gemmlab report: {heading}", ""]
    lines += provenance(results, source, link, out_dir) + [""]
    if results.get("notes"):
        lines += [f"> {note}" for note in results["notes"]] + [""]
    lines += roofs_section(results, precs)
    roofs_by_prec = {p: D.roofs(results, p) for p in precs}

    for shape in D.shapes(records):
        lines += [f"## {D.shape_label(shape)} (M×N×K)", ""]
        flops = 2 * shape[0] * shape[1] * shape[2]
        lines += [f"FLOPs 2MNK = {flops:.4g}. " + " ".join(
            f"{D.PRECISION_LABEL.get(p, p)}: compulsory bytes {D.fmt_bytes(g[0]['model'].get('compulsory_bytes'))}, "
            f"intensity {D.fmt(g[0]['model'].get('intensity'))} FLOP/B."
            for p in precs for g in [D.group(records, p, shape)] if g and g[0].get("model")), ""]
        if ("ladder", shape) in figures:
            lines += [f"![ladder {D.shape_label(shape)}]({figures[('ladder', shape)]})", ""]
        for p in precs:
            group = D.group(records, p, shape)
            if not group:
                continue
            roofs = roofs_by_prec[p]
            present = {r["kernel"] for r in group}
            peer_names = sorted({r["peer"] for r in group if r.get("peer") in present and r["peer"] != r["kernel"]})
            lines += [f"### {D.PRECISION_LABEL.get(p, p)}", ""]
            lines += kernel_table(group, records, results)
            lines += ["", f"× peer: {', '.join(f'`{n}`' for n in peer_names) or 'no peer'} time / kernel time at "
                          f"{D.PRECISION_LABEL.get(p, p)}, both in this run (above 1: faster than the peer), "
                          + ("from launches of the two interleaved one by one; in brackets from their own "
                             "medians, each timed alone (interleaving cancels drift, but each short launch starts in "
                             "the power state its predecessor left, so the two bracket the comparison). "
                             if any(r.get("interleaved") for r in group) else "from their own medians. ")
                          + ("Blocks: from the medians of blocks of launches of each alone, alternated, each long "
                             "enough to settle at its own clock and power. "
                             if any(r.get("blocks") for r in group) else "") +
                          "× prev: speedup over the previous level of the same backend"
                          + ("; for a kernel with changed parameters (`KERNEL[NAME=V]`, bench --variant), its "
                             "speedup over the registered kernel, the two interleaved (reg.)"
                             if any(r.get("variant_of") for r in group) else "")
                          + ". " + _peak_basis(results, group, roofs), ""]
            seeds = seeds_table(group, roofs)
            if seeds:
                lines += ["The seeds' table, regenerated:", ""] + seeds
                basis = ("measured copy" if roofs.measured_bw_gbs else "datasheet") + \
                    f" {D.fmt(roofs.bw_for_util, 4)} GB/s"
                lines += ["", f"Bandwidth utilization (model) = the bytes the kernel's traffic model counts / time / "
                              f"{basis}, the seeds' count of bytes (8MNK for V1): past 100% means caches served "
                              "re-reads the model counts. The seeds' own ~8% for V1 is not this count of their own figures, "
                              "which passes 100% (`gemmlab chapter`, claim table.bw_util). DRAM utilization "
                              "uses the bytes ncu measured instead.", ""]
            if ("roofline", p, shape) in figures:
                lines += [f"![roofline {p} {D.shape_label(shape)}]({figures[('roofline', p, shape)]})", ""]

    lines += traffic_section(records, roofs_by_prec)
    lines += hierarchy_section(records)

    noise = results.get("noise") or []
    if noise:
        lines += ["## Noise", ""]
        lines += _table(["kernel timed twice", "shape", "first ms", "second ms", "difference"],
                        [[f"`{n['kernel']}`", D.shape_label((n["m"], n["n"], n["k"])), D.fmt(n.get("first_ms")),
                          D.fmt(n.get("second_ms")), _pct(n.get("diff_pct"))] for n in noise], "llrrr")
        lines += ["", "A difference between two kernels smaller than this is noise.", ""]
    throttled = [r for r in records if isinstance(r.get("clock"), dict) and r["clock"].get("throttled")]
    clocked = [r for r in records if isinstance(r.get("clock"), dict) and r["clock"].get("median_mhz")]
    if clocked:
        lines += ["## Clocks", ""]
        lines += [f"SM clock sampled during timing: median of medians "
                  f"{sorted(r['clock']['median_mhz'] for r in clocked)[len(clocked) // 2]:.0f} MHz over "
                  f"{len(clocked)} timed kernels."]
        if throttled:
            lines += ["Throttled while timed (median clock below the set fraction of the maximum): "
                      + ", ".join(f"`{r['kernel']}` {D.shape_label(D.shape_of(r))} "
                                  f"({r['clock']['median_mhz']:.0f} MHz)" for r in throttled) + "."]
        else:
            lines += ["No kernel was timed below the throttle threshold."]
        lines += [""]
    bad = [r for r in records if D.status(r) in ("failed", "error")]
    if bad:
        lines += ["## Failures", ""] + [f"- `{r['kernel']}` at {D.shape_label(D.shape_of(r))}: {r.get('status')} "
                                        f"— {r.get('reason') or 'no reason recorded'}" for r in bad] + [""]
    return "\n".join(lines).rstrip() + "\n"


def relpath(path: str, start: str) -> str:
    try:
        return os.path.relpath(path, start)
    except ValueError:  # another drive on Windows
        return str(path)


def summary_markdown(results: dict) -> str:
    """The README's ladder: one row per kernel, one column per shape, TFLOPS and × peer of the same precision
    (interleaved / own medians, where the run timed both; / blocks, where it also timed alternating blocks).

    Only verified, timed records appear; a kernel that failed or was skipped at a shape shows its status. The CPU
    kernels (V0 and the host BLAS, × cpu/blas) are rows of their precision's table too, the seeds' V0 beside V1."""
    records = D.attach_profiles(results)
    shapes = D.shapes(records)
    lines: list[str] = []
    for precision in D.precisions(records):
        mine = sorted({r["kernel"]: r for r in records if r.get("precision") == precision}.values(),
                      key=D.sort_key)
        if not mine:
            continue
        header = ["kernel", "what it does"] + [f"{D.shape_label(s)} TFLOPS (× peer)" for s in shapes]
        rows = []
        for first in mine:
            row = [f"`{first['kernel']}`", first.get("title", "")]
            for shape in shapes:
                rec = next((r for r in records if r["kernel"] == first["kernel"] and D.shape_of(r) == shape), None)
                if rec is None:
                    row.append("")
                elif D.is_timed(rec):
                    ratio, own = D.peer_ratio(rec, records), D.peer_ratio_own_medians(rec, records)
                    blocks = D.peer_ratio_blocks(rec)
                    cell = f"{D.tflops(rec):.1f}" if D.tflops(rec) >= 1 else f"{D.tflops(rec):.2g}"  # a CPU's rate
                    if ratio is not None:
                        cell += (f" ({ratio:.2f}×" + (f" / {own:.2f}×" if own is not None else "")
                                 + (f" / {blocks:.2f}×" if blocks is not None else "") + ")")
                    row.append(cell)
                else:
                    row.append(D.status(rec) or "—")
            rows.append(row)
        lines += [f"**{D.PRECISION_LABEL.get(precision, precision)}**", ""] + _table(header, rows, "ll" + "r" * len(shapes)) + [""]
    return "\n".join(lines)


# -- verify and timeline results ------------------------------------------------------------------------------
_CHECKED = ("passed", "FAILED", "error", "skipped")  # the results of a launch against the reference


def _verify_per_kernel(records: list[dict]) -> list[str]:
    rows = []
    for kernel in dict.fromkeys(r["kernel"] for r in records):
        mine = [r for r in records if r["kernel"] == kernel]
        checks = [r for r in mine if r["result"] in _CHECKED]
        not_run = [r for r in mine if r["shape"] != "sanitize" and r["result"] not in _CHECKED]  # compiled only
        worst = max((r for r in checks if r.get("rel_err") is not None), key=lambda r: r["rel_err"], default=None)
        tools = {r["result"].split()[0]: r["result"].split(" ", 1)[-1] for r in mine if r["shape"] == "sanitize"}
        where = sorted({str(r["where"]) for r in checks + not_run if r.get("where") and r["result"] != "skipped"})
        rows.append([f"`{kernel}`", *(str(sum(r["result"] in results for r in checks))
                                      for results in (("passed",), ("FAILED", "error"), ("skipped",))),
                     f"{worst['rel_err']:.1e} at {worst['shape']}" if worst else
                     ", ".join(sorted({r["result"] for r in not_run})) or "—",
                     f"{worst['tolerance']:.0e}" if worst and worst.get("tolerance") else "—",
                     ", ".join(where) or "—", tools.get("memcheck", "—"), tools.get("racecheck", "—")])
    return _table(["kernel", "passed", "failed", "skipped", "worst rel err", "tolerance", "ran on", "memcheck",
                   "racecheck"], rows, "lrrrrrlll")


def verify_summary(results: dict) -> str:
    """One row per kernel: checks passed, failed and skipped, the worst error, where they ran, the sanitizers."""
    return "\n".join(_verify_per_kernel(D.verify_records(results))) + "\n"


def verify_markdown(results: dict, source: str, link: str | None = None, out_dir: str = "<dir>") -> str:
    """The verify report: where the file came from, the per-kernel summary, then every check."""
    env = results.get("env") or {}
    records = D.verify_records(results)
    shown = f"[`{source}`]({link})" if link else f"`{source}`"
    command = (f", written by `{env['command']}`" if env.get("command") else
               " (the JSON does not name the command that wrote it; `gemmlab verify --json` does now)")
    gpu = (env.get("gpu") or {}).get("name") or ("no GPU" if env.get("mode") == "cpu-only" else None)
    checks = [r for r in records if r["result"] in _CHECKED]
    lines = [f"# gemmlab verify: {gpu or 'GPU not recorded'}", "",
             f"Source: {shown}{command}. Re-render: `gemmlab report {source} --out {out_dir}`.", ""]
    if env.get("git_sha"):
        lines += [f"git {env['git_sha']}, {env.get('time', 'time not recorded')}, host {env.get('host', '—')}.", ""]
    lines += [f"{len(checks)} checks: {sum(r['result'] == 'passed' for r in checks)} passed, "
              f"{sum(r['result'] in ('FAILED', 'error') for r in checks)} failed, "
              f"{sum(r['result'] == 'skipped' for r in checks)} skipped. Each is one launch on fresh N(0,1) inputs "
              "into a NaN-poisoned C, against the float64 reference.", "", "## Per kernel", ""]
    lines += _verify_per_kernel(records)
    lines += ["", "## Every check", ""]
    lines += _table(["kernel", "shape", "result", "rel err", "tolerance", "ran on", "detail"],
                    [[f"`{r['kernel']}`", r["shape"], r["result"],
                      "—" if r.get("rel_err") is None else f"{r['rel_err']:.1e}",
                      "—" if r.get("tolerance") is None else f"{r['tolerance']:.0e}", str(r.get("where") or "—"),
                      "" if r.get("rel_err") is not None else str(r.get("detail") or "")] for r in records],
                    "lllrrll")
    return "\n".join(lines) + "\n"


def timeline_summary(results: dict) -> str:
    """The timeline's table alone (``gemmlab timeline --json`` writes it with its heading beside the JSON)."""
    from gemmlab.harness import timeline

    return "\n".join(_table(list(timeline.COLUMNS), timeline.table_rows(results["records"]),
                             "ll" + "r" * (len(timeline.COLUMNS) - 2))) + "\n"
