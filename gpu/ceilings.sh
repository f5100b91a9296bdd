#!/usr/bin/env bash
# The ceiling probes on this GPU: `gemmlab roofline --measure` into $OUT/ceilings.json, then every trial it kept
# (L2 -> SM per probe, buffer and configuration; shared memory per loads in flight; FLOPs per clock). Run from the
# repository root with PYTHONPATH=src; about a minute on an H200.
set -euo pipefail
: "${OUT:?set OUT to the folder ceilings.json goes to}"
mkdir -p "$OUT"
python3 -m gemmlab roofline --measure --json "$OUT/ceilings.json"
python3 - "$OUT/ceilings.json" <<'PY'
import json
import sys

c = json.load(open(sys.argv[1]))
print(f"DRAM copy {c['dram_gbs']:,.0f} GB/s; SM clock {c['clock'].get('median_mhz')} MHz "
      f"(min {c['clock'].get('min_mhz')}, throttled {c['clock'].get('throttled')})")
for t in sorted(c["l2_trials"], key=lambda t: -t["gbs"]):
    config = ", ".join(f"{k} {v}" for k, v in t.items() if k not in ("probe", "gbs"))
    print(f"L2 {t['gbs']:8,.0f} GB/s  {t['probe']:<24} {config}")
for unroll, rate in c["smem_trials"].items():
    print(f"shared memory {rate:7.1f} B/clk/SM  UNROLL {unroll}")
for precision, rate in c["flop_per_clk"].items():
    print(f"{precision.upper():>4} {rate:8.1f} FLOP/clk/SM")
print(f"cuBLAS FP32 {c['cublas_fp32_tflops']:.1f} TFLOPS at {c['cublas_fp32_shape']}^3 (a result, not a roof)")
PY
