"""What Nsight Compute's lts__t_bytes counts of TMA traffic, against bytes known exactly (docs/seeds.md). Not a recipe
of a committed file: a diagnostic of the L2 counters the committed profiles hold.

The TMA L2 probe (probe_l2_tma) copies a known number of bytes into shared memory (every k-tile's barrier waits for
its whole stage), with the CTAs sharing panels as a GEMM's wave does and with each CTA on rows of its own; tc5 and tc6
TF32, tc2-tc4 BF16 and tc3 TF32 at 4096³ move the bytes their model counts the same way. For each, the L2's sectors
by where their requests came from (the SMs, or the other L2 partition) beside the bytes delivered. Metrics this ncu
does not know are dropped and named. Usage, from the repository root with PYTHONPATH=src, on the GPU:
python3 results/h200/l2_counters.py OUT_DIR (writes OUT_DIR/l2_counters.json and the raw CSVs; a few minutes on an
H200)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from gemmlab.analysis.roofline import DEVICES, model
from gemmlab.harness import ceilings, profile
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
ncu = profile.find_ncu()
if ncu is None:
    sys.exit("no ncu")
metrics = ["lts__t_bytes.sum", "lts__t_sectors.sum", "lts__t_requests.sum", "lts__t_sectors_srcunit_tex.sum",
           "lts__t_requests_srcunit_tex.sum", "lts__t_sectors_srcunit_ltcfabric.sum",
           "lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum",
           "lts__t_sectors_srcnode_gpc.sum", "l1tex__m_xbar2l1tex_read_bytes.sum", "dram__bytes_read.sum",
           "gpu__time_duration.sum"]
env = dict(os.environ)  # the children import this same gemmlab
env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(profile.__file__).resolve().parents[2]),
                                                  env.get("PYTHONPATH")]))


def run(cmd_for, name):
    """ncu with every metric it knows of ``metrics``: (the rows, the metrics dropped)."""
    dropped = []
    while True:
        proc = subprocess.run(cmd_for([m for m in metrics if m not in dropped]), capture_output=True, text=True,
                              env=env)
        unknown = {u.strip("'\".,").split(".")[0] for u in
                   re.findall(r"Failed to find metric (\S+)", proc.stdout + proc.stderr)}
        new = [m for m in metrics if m.split(".")[0] in unknown and m not in dropped]
        if not new:
            break
        dropped += new
    (out / f"{name}.csv").write_text(proc.stdout)
    if proc.returncode:
        sys.exit(f"ncu failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return profile.parse_ncu_csv(proc.stdout), dropped


# the probe: each configuration launched twice (the first fills L2), the L2 left as it is between launches
configs = [(bm, bn, own) for bm, bn in ceilings.TMA_TILES for own in (False, True)]
child = ("import cupy\nfrom gemmlab.harness import ceilings\n"
         f"for bm, bn, own in {configs!r}:\n"
         "    launch, walk, buf = ceilings.tma_launch(132, bm, bn, 16 << 20, own)\n"
         "    for _ in range(2):\n"
         "        launch.launch(0)\n"
         "    cupy.cuda.Device().synchronize()\n")
rows, dropped = run(lambda ms: [ncu, "--cache-control", "none", "--clock-control", "none", "--kernel-name",
                                "probe_l2_tma", "--csv", "--page", "raw", "--print-units", "base", "--metrics",
                                ",".join(ms), sys.executable, "-c", child], "probe_l2_tma")
report = {"dropped": dropped, "probe": [], "kernels": []}
for (bm, bn, own), row in zip(configs, rows[1::2]):
    walk = ceilings.tma_walk(132, bm, bn, 16 << 20, own)
    report["probe"].append({"tile": f"{bm}x{bn}", "walk": "own rows" if own else "shared panels",
                            "delivered_bytes": walk["moved"], **{m: row.get(m) for m in metrics if m in row}})

# the kernels, as gemmlab profile runs them (cold L2), their pre-passes left out
names = ["cuda/tc5_swap_ab_tf32", "cuda/tc6_stream_k_tf32", "cuda/tc3_warp_specialized_tf32",
         "cuda/tc2_wgmma_tma_bf16", "cuda/tc3_warp_specialized_bf16", "cuda/tc4_persistent_bf16"]
problem = Problem(4096, 4096, 4096)
rows, _ = run(lambda ms: profile.ncu_command(ncu, names, problem, metrics=ms), "kernels")
for name, group in zip(names, profile.split_by_marker(rows)):
    main = [r for r in group if "transpose" not in str(r.get("Kernel Name"))]
    spec = get_kernel(name)
    m = model(spec, Problem(4096, 4096, 4096, spec.precision), DEVICES["h200"])
    report["kernels"].append({"kernel": name, "model_l2_bytes": m.levels["l2"]["bytes"],
                              **{k: sum(float(r.get(k) or 0) for r in main) for k in metrics if main and k in main[0]}})
(out / "l2_counters.json").write_text(json.dumps(report, indent=1))

print("dropped (unknown to this ncu):", ", ".join(dropped) or "none")
for entry in report["probe"] + report["kernels"]:
    known = entry.get("delivered_bytes") or entry.get("model_l2_bytes")
    label = entry.get("kernel") or f"probe {entry['tile']} {entry['walk']}"
    line = [f"{label:<34} delivered/model {known / 1e9:7.3f} GB"]
    for key, scale in (("lts__t_bytes.sum", 1), ("lts__t_sectors_srcunit_tex.sum", 32),
                       ("lts__t_sectors_srcunit_ltcfabric.sum", 32), ("l1tex__m_xbar2l1tex_read_bytes.sum", 1)):
        if entry.get(key) is not None:
            short = key.replace(".sum", "").replace("lts__t_sectors_srcunit_", "").replace("__m_xbar2l1tex_read", "")
            line.append(f"{short} {entry[key] * scale / 1e9:7.3f} GB ({entry[key] * scale / known:.2f}x)")
    print("  ".join(line))
