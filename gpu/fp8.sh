#!/usr/bin/env bash
# The FP8 levels on the H200 (issue 17): compile, verify, time against cuBLASLt, compare parameters, stamp.
# Run from the repository root with PYTHONPATH at src. Everything big goes under $OUT; the last lines are a table.
#   1 compile    every configuration of the FP8 levels: registers, spills, shared memory
#   2 checks     gemmlab.matmul on torch FP8 tensors (quantized by torch, not gemmlab) at ragged M and N (1, 17,
#                127, 4097) and K off the tile, both recipes, e5m2 operands, FP32 C, NaN-poisoned out=, scale
#                layouts, against the float64 product of the dequantized operands and beside torch._scaled_mm on
#                the same inputs; NumPy and CuPy operands; gemmlab's GPU rounding against ml_dtypes'
#   3 verify     gemmlab verify over the ragged sweep
#   4 bench      gemmlab bench at 4096³, 8192³, 2048x3072x4096: the FP8 levels (tc4 per tensor, tc8 block-scaled and
#                per tensor promoted), their peers, tc4 BF16 and cuBLAS BF16
#   5 variants   tile width, clusters, stages, output type, epilogue: each verified, then timed interleaved with
#                its peer
#   6 timeline   gemmlab timeline: cycles per k-tile against the tensor cores' own, the epilogue, the gaps
#   7 sanitize   compute-sanitizer memcheck and racecheck on every configuration at small ragged shapes
#   8 profile    Nsight Compute counters at 4096³ (merged into fp8.json)
# Steps 6-8 run only while the whole script is under its budget (BUDGET_S, default 330 s).
set -uo pipefail
export OUT=${OUT:-/tmp/gemmlab-fp8}
mkdir -p "$OUT"
: > "$OUT/steps.txt"
BUDGET_S=${BUDGET_S:-330}
START=$(date +%s)
LEVELS='cuda/tc4_persistent_fp8,cuda/tc8_block_scaled_fp8,cuda/tc8_promoted_fp8'
PEERS='peers/cublaslt_fp8,peers/cublaslt_fp8_promoted,peers/cublaslt_fp8_block'

step() {  # step NAME SECONDS COMMAND...: run with a time limit, log under $OUT, never stop the script
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET_S - $(date +%s) + START))
  if [ "$left" -lt 20 ]; then
    echo "== $name: skipped, $((BUDGET_S - left)) s of the ${BUDGET_S} s budget used" | tee -a "$OUT/steps.txt"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (limit ${limit} s)"
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  tail -n 40 "$OUT/$name.log"
  echo "== $name: rc $rc, $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"
}

python3 - <<'EOF' | tee "$OUT/env.txt"
import torch, cupy, gemmlab, subprocess
print("torch", torch.__version__, "cupy", cupy.__version__, "gpu", torch.cuda.get_device_name(0))
print(subprocess.run(["git", "log", "-1", "--format=%H %s"], capture_output=True, text=True).stdout.strip())
EOF

step compile 90 python3 - <<'EOF'
from gemmlab.kernels.registry import get_kernel
from gemmlab.kernels.cuda.tc.model.budget import smem_bytes
for name in ("cuda/tc4_persistent_fp8", "cuda/tc8_block_scaled_fp8", "cuda/tc8_promoted_fp8"):
    for spec in get_kernel(name).configurations(formats=True):
        r = spec.compile("sm_90a").report
        p = spec.params
        print(f"{name} BN={p['BN']} A_E5M2={p['A_E5M2']} B_E5M2={p['B_E5M2']} OUT_BF16={p['OUT_BF16']}: "
              f"{r.registers} regs, {r.spills} spill bytes, {r.stack_bytes} stack, "
              f"{smem_bytes(dict(p))} B dynamic smem")
EOF

step checks 90 python3 - <<'EOF'
import json, os, traceback
import numpy as np, ml_dtypes, torch, cupy
import gemmlab
from gemmlab import fp8
from gemmlab.errors import GemmlabError
torch.manual_seed(0)
dev, out = "cuda", []
F8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
FMAX = {"e4m3": 448.0, "e5m2": 57344.0}

def tensor_q(x, fmt):  # torch's own per-tensor quantization
    s = (x.abs().max() / FMAX[fmt]).float().reshape(1)
    return (x / s).to(F8[fmt]), s

def block_q(x, rows):  # torch's own 1x128 (rows=1) or 128x128 quantization of a rows-blocked, K-blocked matrix
    r, k = x.shape
    pr, pk = -(-r // rows) * rows, -(-k // 128) * 128
    xp = torch.zeros(pr, pk, device=dev)
    xp[:r, :k] = x
    t = xp.reshape(pr // rows, rows, pk // 128, 128)
    s = (t.abs().amax(dim=(1, 3)) / 448).clamp_min(1e-30)
    q = (t / s[:, None, :, None]).reshape(pr, pk)[:r, :k].to(torch.float8_e4m3fn)
    return q, s

def rel(c, ref):
    c = c.double()
    if not torch.isfinite(c).all():
        return float("nan")
    return float((c - ref).norm() / ref.norm())

def case(m, n, k, recipe="tensor", fa="e4m3", fb="e4m3", out_dtype=torch.bfloat16, poison=True, scale_layout="torch",
         kernel="auto"):
    a = torch.randn(m, k, device=dev)
    w = torch.randn(n, k, device=dev)
    if recipe == "tensor":
        a8, sa = tensor_q(a, fa)
        w8, sb = tensor_q(w, fb)
        ref = (a8.double() * sa.double()) @ (w8.double() * sb.double()).t()
        kw = dict(scale_a=sa, scale_b=sb)
    else:
        a8, sa_rows = block_q(a, 1)   # (M, KB)
        w8, sb_blk = block_q(w, 128)  # (NB, KB)
        deq_a = a8.double() * sa_rows.double().repeat_interleave(128, 1)[:, :k]
        deq_w = w8.double() * sb_blk.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:n, :k]
        ref = deq_a @ deq_w.t()
        sa = sa_rows.t().contiguous().t() if scale_layout == "torch" else sa_rows.contiguous()
        sb = sb_blk.t()  # (KB, NB) as the transpose of (NB, KB)
        kw = dict(scale_a=sa, scale_b=sb)
    c = torch.full((m, n), float("nan"), device=dev, dtype=out_dtype) if poison else None
    got = gemmlab.matmul(a8, w8.t(), kernel, out=c, out_dtype=out_dtype, **kw)
    torch.cuda.synchronize()
    row = {"shape": f"{m}x{n}x{k}", "recipe": recipe, "A": fa, "B": fb, "out": str(out_dtype).split(".")[-1],
           "kernel": gemmlab.plan(a8, w8.t(), kernel, out_dtype=out_dtype, **kw).plan.spec.name,
           "rel_err": rel(got, ref), "poisoned_out": poison}
    if recipe == "block" and m * n >= 4096:  # DeepGEMM's measure against the unquantized product, bound 1e-3
        x, y = got.double(), a.double() @ w.double().t()
        row["recipe_diff"] = float(1 - 2 * (x * y).sum() / (x * x + y * y).sum())
    if recipe == "tensor" and fa == fb == "e4m3" and k % 16 == 0 and n % 16 == 0:
        for fast in (True, False):
            p = torch._scaled_mm(a8, w8.t(), scale_a=sa.reshape(()), scale_b=sb.reshape(()),
                                 out_dtype=torch.bfloat16, use_fast_accum=fast)
            row[f"scaled_mm_fast{int(fast)}_rel_err"] = rel(p, ref)
    tol = 1e-2 * max(1.0, k / 4096) if recipe == "tensor" else 1e-2
    row["passed"] = bool(row["rel_err"] <= tol and row.get("recipe_diff", 0) < 1e-3)
    out.append(row)
    print(json.dumps(row))

SHAPES = [(1, 4097, 1000), (17, 127, 200), (127, 17, 4000), (4097, 1, 200), (1000, 4097, 1000), (129, 4097, 4000),
          (4097, 4097, 1000), (300, 520, 256), (2048, 3072, 4096), (4096, 4096, 16384)]
for recipe in ("tensor", "block"):
    for m, n, k in SHAPES:
        try:
            case(m, n, k, recipe)
        except Exception as exc:
            out.append({"shape": f"{m}x{n}x{k}", "recipe": recipe, "error": f"{type(exc).__name__}: {exc}"})
            print(out[-1]); traceback.print_exc()
for m, n, k in ((17, 127, 200), (4097, 1000, 1000), (2048, 3072, 4096), (4096, 4096, 16384)):
    try:  # per-tensor scales with FP32 accumulation (tc8's promotion) beside tc4's and cuBLASLt's errors
        case(m, n, k, kernel="cuda/tc8_promoted_fp8")
    except Exception as exc:
        out.append({"shape": f"{m}x{n}x{k}", "kernel": "cuda/tc8_promoted_fp8", "error": f"{type(exc).__name__}: {exc}"})
        print(out[-1]); traceback.print_exc()
for kw in (dict(fa="e5m2"), dict(fb="e5m2"), dict(fa="e5m2", fb="e5m2"), dict(out_dtype=torch.float32),
           dict(recipe="block", out_dtype=torch.float32), dict(recipe="block", scale_layout="row-major"),
           dict(poison=False)):
    for m, n, k in ((127, 520, 1000), (4097, 17, 256)):
        try:
            case(m, n, k, **kw)
        except Exception as exc:
            out.append({"shape": f"{m}x{n}x{k}", **{k_: str(v) for k_, v in kw.items()},
                        "error": f"{type(exc).__name__}: {exc}"})
            print(out[-1]); traceback.print_exc()
a8 = torch.randn(64, 64, device=dev).to(torch.float8_e4m3fn)
try:
    gemmlab.matmul(a8, a8)  # B row-major K x N
    print("row-major B: NOT refused")
except GemmlabError as exc:
    print("row-major B refused:", type(exc).__name__, exc)
print("per-tensor scales as None:", rel(gemmlab.matmul(a8, a8.t()), a8.double() @ a8.double().t()))
print(gemmlab.plan(a8, a8.t(), scale_a=torch.ones(1, device=dev)).explain())
# gemmlab's GPU rounding (cvt.rn.satfinite) against ml_dtypes' on the host, every format
x = np.concatenate([np.random.default_rng(1).standard_normal(1 << 20).astype(np.float32) * 100,
                    np.float32([0, -0.0, 1.0625, 1.1875, 2 ** -9, 2 ** -10, 447.9, 448, 57344])])
for f in (fp8.E4M3, fp8.E5M2):
    lim = fp8.FP8_MAX[f]
    xc = np.clip(x, -lim, lim)
    same = np.array_equal(cupy.asnumpy(fp8.to_bits(cupy.asarray(xc), f)), fp8.to_bits(xc, f))
    print(f"rounding {f}: GPU == ml_dtypes: {same}")
    out.append({"rounding": f, "equal": bool(same)})
# NumPy (host copy) and CuPy operands
qa = fp8.quantize(np.random.default_rng(2).standard_normal((33, 272)).astype(np.float32))
qb = fp8.quantize(np.random.default_rng(3).standard_normal((48, 272)).astype(np.float32))
ref = qa.dequantize() @ qb.dequantize().T
a_np, w_np = qa.data.view(ml_dtypes.float8_e4m3fn), qb.data.view(ml_dtypes.float8_e4m3fn)
try:
    c = gemmlab.matmul(a_np, w_np.T, kernel="cuda/tc4_persistent_fp8", scale_a=qa.scale, scale_b=qb.scale)
    print("numpy:", c.dtype, float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref)))
except Exception as exc:
    print("numpy:", type(exc).__name__, exc)
try:
    ca = cupy.asarray(a_np)
    c = gemmlab.matmul(ca, cupy.asarray(w_np).T, scale_a=cupy.asarray(qa.scale), scale_b=cupy.asarray(qb.scale))
    print("cupy:", c.dtype, float(np.linalg.norm(cupy.asnumpy(c).astype(np.float64) - ref) / np.linalg.norm(ref)))
except Exception as exc:
    print("cupy FP8 arrays:", type(exc).__name__, exc)
json.dump(out, open(os.environ["OUT"] + "/checks.json", "w"), indent=1)
bad = [r for r in out if r.get("error") or r.get("passed") is False or r.get("equal") is False]
print(f"checks: {len(out) - len(bad)} passed, {len(bad)} failed")
EOF

step verify 70 python3 -m gemmlab verify --kernels "$LEVELS" --sample 4 --json "$OUT/verify.json"

step bench 170 python3 -m gemmlab bench --shape 4096 --shape 8192 --shape 2048x3072x4096 \
  --kernels "$LEVELS,$PEERS,cuda/tc4_persistent_bf16,peers/cublas_bf16" --repeat 20 --max-seconds 1.0 --pause 0.1 \
  --no-ceilings --json "$OUT/fp8.json"

step variants 80 python3 - <<'EOF'
import dataclasses, json, os
import cupy
from gemmlab.device import require_gpu
from gemmlab.harness.bench import _set_bytes
from gemmlab.harness.timing import TimingOptions, rotation_sets, time_interleaved
from gemmlab.harness.verify import check
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem
info = require_gpu("variants")
opts = TimingOptions(repeat=20, min_repeat=20, max_seconds=0.8)
VARIANTS = {
    "cuda/tc4_persistent_fp8": [("default", {}), ("CM=1", {"CM": 1}), ("FP32 C", {"OUT_BF16": 0}),
                                ("EPI_TMA=0", {"EPI_TMA": 0}), ("STAGES=3", {"STAGES": 3}),
                                ("GROUP_M=16", {"GROUP_M": 16})],
    "cuda/tc8_block_scaled_fp8": [("default", {}), ("BN=192", {"BN": 192, "STAGES": 4}), ("CM=1", {"CM": 1}),
                                  ("STAGES=4", {"STAGES": 4})],
}
PEER = {"cuda/tc4_persistent_fp8": ["peers/cublaslt_fp8"],
        "cuda/tc8_block_scaled_fp8": ["peers/cublaslt_fp8_block", "peers/cublaslt_fp8"]}
rows = []
for shape in ((4096, 4096, 4096), (8192, 8192, 8192)):
    for name, variants in VARIANTS.items():
        base = get_kernel(name)
        problem = Problem(*shape, base.precision)
        n_sets = rotation_sets(_set_bytes(problem), info.l2_bytes, True, 8)
        inputs = [base.make_inputs(problem, 11 + i, cupy) for i in range(n_sets)]
        peer = None
        for peer_name in PEER[name]:  # the block peer, else the per-tensor one (it times the same bytes)
            try:
                peer = (peer_name, get_kernel(peer_name).build(problem))
                break
            except Exception as exc:
                print(f"{peer_name}: {type(exc).__name__}: {exc}")
        for label, change in variants:
            spec = dataclasses.replace(base, params={**base.params, **change})
            res = check(spec, problem, seed=5)
            row = {"kernel": name, "variant": label, "shape": problem.label(), "params": change,
                   "rel_err": res.error.rel_err if res.error else None, "passed": res.passed, "reason": res.reason}
            if res.passed and peer:
                sets = [(a, b, cupy.empty((problem.m, problem.n), spec.output_dtype(problem))) for a, b in inputs]
                mine, theirs = time_interleaved([spec.build(problem), peer[1]], sets, opts, info.max_sm_clock_mhz,
                                                _set_bytes(problem), info.l2_bytes)
                row.update(ms=mine.median_ms, peer=peer[0], peer_ms=theirs.median_ms,
                           ratio=theirs.median_ms / mine.median_ms, tflops=problem.flops() / mine.median_ms / 1e9,
                           mhz=mine.clock.get("median_mhz"), watts=mine.clock.get("median_w"))
            rows.append(row)
            print(json.dumps(row))
        del inputs
        cupy.get_default_memory_pool().free_all_blocks()
json.dump(rows, open(os.environ["OUT"] + "/variants.json", "w"), indent=1)
EOF

step timeline 45 python3 -m gemmlab timeline --kernels "$LEVELS,cuda/tc4_persistent_bf16" --shape 4096 \
  --shape 2048x3072x4096 --shape 256x256x4096 --json "$OUT/timeline.json"

# tc8_promoted_fp8 is tc8's code with zero scale strides: the two kernels' configurations cover its accesses
step sanitize 100 python3 -m gemmlab verify --kernels 'cuda/tc4_persistent_fp8,cuda/tc8_block_scaled_fp8' --sample 0 \
  --sanitize --json "$OUT/sanitize.json"

step profile 70 python3 -m gemmlab profile "$LEVELS,$PEERS" --shape 4096 --json "$OUT/fp8.json"

python3 - <<'EOF'
import json, os
out = os.environ["OUT"]
print("\n==== FP8 on the H200: gemmlab bench (ms, TFLOPS, % of 1979, x peer interleaved / own medians, error, MHz, W)")
try:
    res = json.load(open(f"{out}/fp8.json"))
    for r in res["records"]:
        ok = r.get("median_ms") is not None
        inter = r.get("interleaved")
        own = None
        peer = next((q for q in res["records"] if q["kernel"] == r.get("peer") and (q["m"], q["n"], q["k"]) ==
                     (r["m"], r["n"], r["k"]) and q.get("median_ms")), None)
        if ok and peer and peer is not r:
            own = peer["median_ms"] / r["median_ms"]
        clock = r.get("clock") or {}
        err = "" if r.get("rel_err") is None else f"{r['rel_err']:.1e}"
        if r.get("recipe_err") is not None:
            err += f" / recipe {r['recipe_err']:.1e}"
        print(f"{r['m']}x{r['n']}x{r['k']:<6} {r['kernel']:<32} " + (
            f"{r['median_ms']:.4f} ms {r['tflops']:7.1f} TF {r.get('pct_peak') or 0:5.1f}%  "
            f"x{r['peer_ratio'] or 0:.3f} / x{own or 0:.3f}  err {err:<22} "
            f"{clock.get('median_mhz', 0):.0f} MHz {clock.get('median_w', 0):.0f} W"
            if ok else f"{r['status']}: {r['reason'][:90]}") + (f"  [{r['peer_note'][:60]}]" if r.get("peer_note")
                                                                  else ""))
except Exception as exc:
    print("no bench results:", exc)
print("\n==== variants (interleaved with the peer)")
try:
    for r in json.load(open(f"{out}/variants.json")):
        print(f"{r['shape']:<15} {r['kernel']:<28} {r['variant']:<11} " + (
            f"{r['ms']:.4f} ms {r['tflops']:7.1f} TF x{r['ratio']:.3f} vs {r['peer']}" if "ms" in r
            else f"passed={r['passed']} {r['reason'][:80]}"))
except Exception as exc:
    print("no variants:", exc)
print("\n==== checks, verify, steps")
try:
    checks = json.load(open(f"{out}/checks.json"))
    bad = [c for c in checks if c.get("error") or c.get("passed") is False or c.get("equal") is False]
    worst = max((c["rel_err"] for c in checks if isinstance(c.get("rel_err"), float)), default=None)
    print(f"checks: {len(checks) - len(bad)} passed, {len(bad)} failed, worst rel err {worst}")
    for c in bad[:8]:
        print("  FAILED", c)
except Exception as exc:
    print("no checks:", exc)
try:
    rows = json.load(open(f"{out}/verify.json"))
    rows = rows["records"] if isinstance(rows, dict) else rows
    print(f"verify: {sum(r['result'] == 'passed' for r in rows)} passed, "
          f"{sum(r['result'] in ('FAILED', 'error') for r in rows)} failed of {len(rows)}")
except Exception as exc:
    print("no verify:", exc)
print(open(f"{out}/steps.txt").read())
EOF
