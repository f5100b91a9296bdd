#!/usr/bin/env bash
# Issue 19 on the H200: TF32 rounded to nearest (tc4-tc6, TF32_ROUND) and the FP32-accurate tc7_3xtf32.
# Run from the repository root with PYTHONPATH=src; writes everything under $OUT, prints a short table last.
#   1. verify: tc4/tc5/tc6 TF32 and tc7 over the ragged sweep (NaN-poisoned C), then compute-sanitizer memcheck and
#      racecheck of tc7, tc5 and tc4 TF32 at gemmlab's sanitize shapes (the producer warps' pass and its `ready`
#      barriers are new; tc6 runs tc5's code)
#   2. candidates: every build that decides the design, checked on ragged shapes, its error on the same inputs
#      (4096³ and 4097x3001x2049) and its time interleaved with its cuBLAS peer at the three shapes:
#      TF32: tc5 truncated / B rounded in registers / A rounded by the producer's pass / A rounded by a pre-pass,
#      tc4 truncated / rounded;
#      FP32: tc7 promoted every 1, 2, 4 k-tiles, tc7 never promoted, the naive split (3 cuBLAS TF32 products)
#   3. bench: the shipped levels against their peers at 4096³, 8192³, 2048x3072x4096 (FP32 and TF32 tables)
#   4. the accuracy study at a reduced size (M = N = 1024), rendered to .md and .png
# Every step has a time limit (a hung kernel costs its step, not the run); rc 124 in the log means it ran out.
set -uo pipefail
OUT=${OUT:-/tmp/gemmlab-accuracy}
mkdir -p "$OUT"
export GEMMLAB_CACHE=${GEMMLAB_CACHE:-/tmp/gemmlab-cache}  # compiled cubins stay off $OUT
T0=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - T0 )) s)"; }
LEVELS='cuda/tc7_3xtf32,cuda/tc5_swap_ab_tf32,cuda/tc6_stream_k_tf32,cuda/tc4_persistent_tf32'

step "1. verify the shipped builds over ragged shapes"
timeout 90 python3 -m gemmlab verify --kernels "$LEVELS" --sample 8 --json "$OUT/verify.json" > "$OUT/verify.txt" 2>&1
echo "verify rc=$? ($(tail -1 "$OUT/verify.txt"))"; grep -E "FAILED|│ error" "$OUT/verify.txt" | head -5
step "1b. compute-sanitizer memcheck + racecheck (the pass and its barriers: tc7, tc5, tc4 TF32)"
SAN='cuda/tc7_3xtf32 cuda/tc5_swap_ab_tf32 cuda/tc4_persistent_tf32'
for tool in memcheck racecheck; do
  timeout --kill-after=10 45 compute-sanitizer --tool $tool --error-exitcode 3 --report-api-errors no \
    python3 -m gemmlab.harness.sweep $SAN > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$? (0 clean, 3 sanitizer errors, 4 wrong results, 124 timed out): $(grep -h 'SUMMARY' "$OUT/sanitize_$tool.txt" | tail -1)"
  grep -h '^FAILED' "$OUT/sanitize_$tool.txt" | head -5
done

step "2. candidates: correctness, errors on the same inputs, interleaved times"
timeout 150 python3 - "$OUT" <<'PY' 2>&1 | tee "$OUT/candidates.txt"
import dataclasses, json, sys
import cupy
from gemmlab import device
from gemmlab.harness.accuracy import naive_split
from gemmlab.harness.bench import _gpu_sets, _set_bytes
from gemmlab.harness.timing import TimingOptions, rotation_sets, time_interleaved
from gemmlab.harness.verify import check, run_once
from gemmlab.kernels.peers._cublas import gemm
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

out = sys.argv[1]
info = device.require_gpu("candidates")
def var(name, **p):
    s = get_kernel(name)
    return dataclasses.replace(s, params={**s.params, **p})
TF32 = {"tc5 truncated (ROUND=0)": var("cuda/tc5_swap_ab_tf32", TF32_ROUND=0),
        "tc5 B rounded (ROUND=1)": var("cuda/tc5_swap_ab_tf32", TF32_ROUND=1),
        "tc5 rounded (ROUND=2)": get_kernel("cuda/tc5_swap_ab_tf32"),
        "tc5 A by pre-pass (ROUND=3)": var("cuda/tc5_swap_ab_tf32", TF32_ROUND=3),
        "tc6 rounded": get_kernel("cuda/tc6_stream_k_tf32"),
        "tc4 truncated (ROUND=0)": var("cuda/tc4_persistent_tf32", TF32_ROUND=0),
        "tc4 rounded (ROUND=2)": get_kernel("cuda/tc4_persistent_tf32")}
FP32 = {"tc7 PROMOTE=1": get_kernel("cuda/tc7_3xtf32"), "tc7 PROMOTE=2": var("cuda/tc7_3xtf32", PROMOTE=2),
        "tc7 PROMOTE=4": var("cuda/tc7_3xtf32", PROMOTE=4), "tc7 PROMOTE=0 (none)": var("cuda/tc7_3xtf32", PROMOTE=0)}
res = {"env": {"gpu": info.name, "registers": {}}, "verify": [], "errors": [], "timing": []}
def save():  # after every part, so a step cut short by its time limit keeps what it measured
    json.dump(res, open(f"{out}/candidates.json", "w"), indent=1, default=float)
for name, s in {**TF32, **FP32}.items():
    rep = s.compile(info.arch).report
    res["env"]["registers"][name] = {"registers": rep.registers, "spills": rep.spills}

# 2a. every candidate on ragged shapes, NaN-poisoned C, float64 reference
for shape in ((4097, 3001, 2049), (1023, 1025, 1027), (16384, 64, 4096), (2047, 3071, 4097), (33, 17, 65),
              (257, 255, 1), (1, 1, 4097), (300, 520, 200)):
    for name, s in {**TF32, **FP32}.items():
        r = check(s, Problem(*shape, s.precision), seed=sum(shape))
        res["verify"].append({"variant": name, "shape": shape, "status": r.status,
                              "rel_err": r.error.rel_err if r.error else None, "reason": r.reason})
        if not r.passed:
            print(f"VERIFY {r.status}: {name} {shape} {r.reason or r.error}")
print(f"verify: {sum(v['status'] == 'passed' for v in res['verify'])}/{len(res['verify'])} passed")
save()

# 2b. errors of every way on the same inputs
for shape in ((4096, 4096, 4096), (4097, 3001, 2049)):
    a, b = Problem(*shape).make_inputs(19, cupy)
    ref = cupy.matmul(a.astype(cupy.float64), b.astype(cupy.float64))
    norm = float(cupy.linalg.norm(ref))
    def err(c):
        return float(cupy.linalg.norm(c.astype(cupy.float64) - ref)) / norm
    row = {"shape": shape}
    for peer in ("fp32", "tf32"):
        c = cupy.empty(ref.shape, cupy.float32)
        gemm(a, b, c, peer)
        row[f"cublas_{peer}"] = err(c)
    row["naive split (3 cuBLAS TF32)"] = err(naive_split(a, b))
    for name, s in {**TF32, **FP32}.items():
        row[name] = err(run_once(s, Problem(*shape, s.precision), a, b))
    res["errors"].append(row)
    save()
    print(f"errors at {shape}: " + ", ".join(f"{k} {v:.3e}" for k, v in row.items() if k != "shape"))
    del a, b, ref
    cupy.get_default_memory_pool().free_all_blocks()

# 2c. interleaved times: each group with its peer in the same interval
opts = TimingOptions(repeat=30, min_repeat=20, max_seconds=1.5)
for shape in ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 3072, 4096)):
    for prec, group in (("tf32", TF32), ("fp32", FP32)):
        problem = Problem(*shape, prec)
        sb = _set_bytes(problem)
        sets = _gpu_sets(problem, rotation_sets(sb, info.l2_bytes, True, 16), 7)
        names = [n for n in group if not n.startswith("tc6") and "none" not in n]
        launches = [group[n].build(problem) for n in names] + [get_kernel(f"peers/cublas_{prec}").build(problem)]
        names.append(f"peers/cublas_{prec}")
        ts = time_interleaved(launches, sets, opts, info.max_sm_clock_mhz, sb, info.l2_bytes)
        peer_ms = ts[names.index(f"peers/cublas_{prec}")].median_ms
        for n, t in zip(names, ts):
            res["timing"].append({"shape": shape, "precision": prec, "variant": n, "median_ms": t.median_ms,
                                  "iqr_ms": t.iqr_ms, "x_peer": peer_ms / t.median_ms,
                                  "tflops": problem.flops() / t.median_ms / 1e9, "mhz": t.clock.get("median_mhz")})
            print(f"time {shape} {prec:4s} {n:32s} {t.median_ms:8.4f} ms  {peer_ms / t.median_ms:5.3f}x peer")
        save()
        del sets
        cupy.get_default_memory_pool().free_all_blocks()
PY
echo "candidates rc=${PIPESTATUS[0]}"

step "3. bench against cuBLAS at the three shapes"
timeout 150 python3 -m gemmlab bench --shape 4096 --shape 8192 --shape 2048x3072x4096 --kernels "$LEVELS" --repeat 20 --max-seconds 0.8 \
  --pause 0.1 --no-ceilings --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
echo "bench rc=$?"

step "4. the accuracy study, reduced: M = N = 1024, K up to 65536"
timeout 60 python3 -m gemmlab accuracy --mn 1024 --json "$OUT/accuracy.json" > "$OUT/accuracy.txt" 2>&1
echo "accuracy rc=$?"

step "summary"
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name)
    return json.load(open(p)) if os.path.exists(p) else None
bench, cand, acc = load("bench.json"), load("candidates.json"), load("accuracy.json")
if bench:
    print("bench (x peer = interleaved cuBLAS time / kernel time; err = verification rel err)")
    for r in bench["records"]:
        if r["kernel"].startswith(("cuda/tc7", "cuda/tc5", "cuda/tc6", "cuda/tc4", "peers/cublas")):
            ratio = f"{r['peer_ratio']:.2f}x" if r.get("peer_ratio") else "   - "
            ms = f"{r['median_ms']:.4f}" if r.get("median_ms") else "-"
            err = f"{r['rel_err']:.2e}" if r.get("rel_err") is not None else "-"
            print(f"  {r['m']}x{r['n']}x{r['k']:<5} {r['precision']:4s} {r['kernel']:28s} {r['status'] or '':8s} "
                  f"{ms:>9s} ms {ratio:>6s} err {err}")
if cand:
    print("errors on the same inputs (x = against the cuBLAS peer of the precision)")
    for row in cand["errors"]:
        f32, t32 = row["cublas_fp32"], row["cublas_tf32"]
        cells = [f"{k} {v:.2e} ({v / (f32 if ('tc7' in k or 'split' in k or k == 'cublas_fp32') else t32):.2f}x)"
                 for k, v in row.items() if k != "shape"]
        print(f"  {tuple(row['shape'])}:\n    " + "\n    ".join(cells))
    print("times interleaved with the peer (x peer)")
    for t in cand["timing"]:
        print(f"  {tuple(t['shape'])} {t['variant']:32s} {t['median_ms']:8.4f} ms {t['x_peer']:5.3f}x")
    bad = [v for v in cand["verify"] if v["status"] != "passed"]
    print(f"candidates verified: {len(cand['verify']) - len(bad)}/{len(cand['verify'])}" +
          "".join(f"\n  NOT PASSED {v['variant']} {v['shape']} {v['status']} {v['reason']}" for v in bad))
if acc:
    ks = sorted({r["k"] for r in acc["records"] if r["sweep"] == "k"})
    print("accuracy study (rel err against K, N(0,1), M = N = %d)" % acc["options"]["mn"])
    for s in acc["series"]:
        vals = {r["k"]: r["rel_err"] for r in acc["records"] if r["sweep"] == "k" and r["series"] == s}
        print(f"  {s:15s} " + " ".join(f"{vals.get(k) or float('nan'):.2e}" for k in ks))
PY
step "done"
