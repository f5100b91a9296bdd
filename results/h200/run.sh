#!/usr/bin/env bash
# Reproduces everything under results/h200/ on an H200 (or writes the same files for another GPU into $1).
# Every number in the README and the reports comes from one of these gemmlab commands.
set -uo pipefail
OUT=${1:-results/h200}
mkdir -p "$OUT"
g() { python3 -m gemmlab "$@"; }
FP32='cpu/blas,numba/*,cuda/v*,cuda/tc7*,peers/cublas_fp32,peers/triton_fp32'
FAST='cuda/v[3-9]*,cuda/v1[0-9]*,cuda/tc7*,numba/v[3-9]*,numba/v1[0-9]*,peers/cublas_fp32,peers/triton_fp32'
TC='cuda/tc[12356]*,cuda/tc4_persistent_[bt]*,peers/cublas_tf32,peers/cublas_bf16,peers/triton_bf16'
FP8='cuda/tc4_persistent_fp8,cuda/tc8*,peers/cublaslt_fp8*'
R="--repeat 30 --max-seconds 1.5 --pause 0.1"
rm -f "$OUT"/fp32.json "$OUT"/tensor_cores.json "$OUT"/blocks.json "$OUT"/fp8.json
g bench --shape 2048x3072x4096 --shape 4096 --kernels "$FP32" $R --json "$OUT/fp32.json"
g bench --shape 8192 --kernels "$FAST" $R --no-ceilings --json "$OUT/fp32.json" --append
g bench --shape 4096 --shape 8192 --shape 2048x3072x4096 --kernels "$TC" $R --no-ceilings --json "$OUT/tensor_cores.json"
# FP8 (issue 17): tc4 per tensor, tc8 block-scaled and per tensor promoted, cuBLASLt through torch._scaled_mm
g bench --shape 4096 --shape 8192 --shape 2048x3072x4096 --kernels "$FP8" $R --no-ceilings --json "$OUT/fp8.json"
# The top tensor-core levels again, with a third ratio from alternating blocks that settle at their own power
g bench --shape 4096 --shape 8192 --shape 2048x3072x4096 \
  --kernels 'cuda/tc4_persistent_bf16,cuda/tc6_stream_k_bf16,cuda/tc5_swap_ab_tf32,cuda/tc6_stream_k_tf32,peers/cublas_tf32,peers/cublas_bf16' \
  $R --no-ceilings --blocks 10 --block-seconds 0.4 --json "$OUT/blocks.json"
# Nsight Compute counters for every GPU kernel at 4096³, one ncu process per results file
g profile 'numba/*,cuda/v*,peers/cublas_fp32,peers/triton_fp32' --shape 4096 --json "$OUT/fp32.json"
g profile "$TC" --shape 4096 --json "$OUT/tensor_cores.json"
g profile "$FP8" --shape 4096 --json "$OUT/fp8.json"
g verify --kernels 'cuda/*' --sample 6 --sanitize --json "$OUT/verify.json"
# Where tc4's cycles go, from clock stamps inside the kernel (rendered beside it: timeline.md); 256x256x4096 is
# one cluster alone on the GPU, the epilogue without other SMs storing
g timeline --shape 4096 --shape 8192 --shape 2048x3072x4096 --shape 256x256x4096 --json "$OUT/timeline.json"
# Error against float64 of FP32, TF32 and 3xTF32 products against K and input scale (accuracy.md, .png beside it)
g accuracy --json "$OUT/accuracy.json"
# The reports are rendered from the JSON alone, on any machine:
#   gemmlab report results/h200/fp32.json --out results/h200/fp32
#   gemmlab report results/h200/tensor_cores.json --out results/h200/tensor_cores
#   gemmlab report results/h200/blocks.json --out results/h200/blocks
#   gemmlab report results/h200/fp8.json --out results/h200/fp8
