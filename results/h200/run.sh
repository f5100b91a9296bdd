#!/usr/bin/env bash
# Reproduces everything under results/h200/ on an H200 (or writes the same files for another GPU into $1): the one
# recipe of the committed results (docs/README.md says what each file is).
# Every number in the README and the docs comes from one of these gemmlab commands. The committed files were written
# by these commands in separate sessions; each file's env records its git SHA and the commands that wrote it.
set -uo pipefail
OUT=${1:-results/h200}
mkdir -p "$OUT"
g() { python3 -m gemmlab "$@"; }
FP32='cpu/blas,numba/*,cuda/v*,peers/cublas_fp32,peers/triton_fp32'
FAST='cuda/v[3-9]*,cuda/v1[0-9]*,numba/v[3-9]*,numba/v1[0-9]*,peers/cublas_fp32,peers/triton_fp32'
TC='cuda/tc[123567]*,cuda/tc4_persistent_[bt]*,peers/cublas_tf32,peers/cublas_bf16,peers/triton_bf16'
FP8='cuda/tc4_persistent_fp8,cuda/tc8_block_scaled_fp8,cuda/tc8_cluster_fp8_block,cuda/tc6_stream_k_fp8_block,cuda/tc8_promoted_fp8,peers/cublaslt_fp8,peers/cublaslt_fp8_promoted,peers/cublaslt_fp8_block,cuda/tc4_persistent_bf16,peers/cublas_bf16'
R="--repeat 30 --max-seconds 1.5 --pause 0.1"
T="--repeat 30 --max-seconds 1.0 --pause 0.1 --no-ceilings"
rm -f "$OUT"/grid_{fp32,tf32,bf16,fp8,fp8_block}.json "$OUT"/update_grid_*.json "$OUT"/{fp32,tensor_cores,blocks,fp8,fp8_variants,seed_1024,chapter,api,api_suite,verify,verify_tf32,verify_fp8,verify_fp8_gate,verify_stream_k,verify_decode,timeline,timeline_fp8,accuracy,ceilings,candidates,tc4_defer_bf16,tc4_cm1}.json
# The roofs of this GPU (DRAM, L2, shared memory, FLOPs per clock per precision), then the seeds' table at 1024³
g roofline --measure --json "$OUT/ceilings.json"
g bench --kernels 'cuda/v1_naive,numba/v1_naive,cuda/v2_smem,peers/cublas_fp32' --shape 1024 --no-ceilings --repeat 30 \
  --max-seconds 1 --json "$OUT/seed_1024.json"
g bench --kernels 'cpu/v0_naive,cpu/blas' --shape 1024 --no-ceilings --repeat 3 --max-seconds 1 --json "$OUT/seed_1024.json" --append
# The seed chapter, claim by claim (the roofs and counters it cites: results/h200's ceilings.json and fp32.json)
g chapter --json "$OUT/chapter.json"
# The FP32 ladder (CUDA C, numba, Triton, cuBLAS), then its upper levels at 8192³ and at small and MLP shapes
g bench --shape 2048x3072x4096 --shape 4096 --kernels "$FP32" $R --json "$OUT/fp32.json"
g bench --shape 8192 --kernels "$FAST" $R --no-ceilings --json "$OUT/fp32.json" --append
g bench --shape 256 --shape 1024 --shape 4096x14336x4096 --kernels 'cuda/v[3-9]*,cuda/v10*,peers/cublas_fp32' $T \
  --json "$OUT/fp32.json" --append
# The tensor-core ladder in TF32 and BF16, and tc7_3xtf32 (FP32) with cuBLAS FP32, at six shapes
g bench --shape 4096 --shape 8192 --shape 2048x3072x4096 --kernels "$TC" $T --json "$OUT/tensor_cores.json"
g bench --shape 256 --shape 1024 --shape 4096x14336x4096 --kernels "$TC" $T --json "$OUT/tensor_cores.json" --append
# FP8: tc4 per tensor, tc8 block-scaled and per tensor promoted, cuBLASLt through torch._scaled_mm
g bench --shape 4096 --shape 8192 --shape 2048x3072x4096 --kernels "$FP8" --repeat 20 --max-seconds 1.0 --pause 0.1 \
  --no-ceilings --json "$OUT/fp8.json"
# ... and their parameters changed, each variant timed interleaved with its peer and with the registered parameters
K=cuda/tc8_block_scaled_fp8
F=cuda/tc4_persistent_fp8
g bench --shape 4096 --shape 8192 --shape 2048x3072x4096 --variant "$K:SCALE_TMA=0,SCALE_GATE=0" --variant "$K:CM=2" \
  --variant "$K:GROUP_M=16" --variant "$K:BM=128,STAGES=5,CONSUMER_REGS=232,PRODUCER_REGS=40" \
  --variant "$K:BM=128,BN=192,CONSUMER_REGS=232,PRODUCER_REGS=40" --variant "$F:CM=1" --variant "$F:GROUP_M=16" \
  --variant "$F:EPI_BOXES=4,STAGES=3" --variant "$F:EPI_LEND=1,EPI_DEFER=0" --variant "$F:EPI_LEND=1,CM=1,EPI_DEFER=0" \
  --variant "$F:EPI_DEFER=0" --variant "$F:EPI_DEFER=2" --variant "$F:EPI_DEFER=4" --variant "$K:EPI_DEFER=1" \
  --variant "$K:EPI_DEFER=1,CM=2" --variant "$K:SCALE_GATE=0" --variant "$K:HALVES=1,SCALE_TMA=1,SCALE_GATE=0" \
  --variant "$K:SCALE_TMA=1,SCALE_GATE=0" \
  --repeat 30 --max-seconds 1.5 --pause 0.1 --no-ceilings \
  --json "$OUT/fp8_variants.json"
# tc4 BF16's held boxes of C (EPI_DEFER=3) against the build that stores every box at the tile's end, B as w.t()
S=""; for s in 4096x4096x4096 8192x8192x8192 8192x4096x4096 8192x14336x4096 1024x14336x4096 8192x1024x8192 \
  2048x3072x4096 1536x1536x1536; do S="$S --shape $s"; done
g bench --kernels cuda/tc4_persistent_bf16 --layout row,col --repeat 60 --max-seconds 0.5 --pause 0 --no-ceilings $S \
  --variant cuda/tc4_persistent_bf16:EPI_DEFER=0 --json "$OUT/tc4_defer_bf16.json"
# tc4 BF16 and FP8 with clusters off at mid sizes, beside the registered builds
B4="--layout row,col --no-peers --repeat 60 --max-seconds 0.4 --pause 0 --no-ceilings"
g bench --kernels cuda/tc4_persistent_bf16 $B4 --shape 1536x1536x1536 --shape 1024x14336x4096 --shape 2048x2048x2048 \
  --shape 1024x1024x1024 --variant cuda/tc4_persistent_bf16:CM=1 --variant cuda/tc4_persistent_bf16:CM=1,NARROW_BN=128 \
  --json "$OUT/tc4_cm1.json"
g bench --kernels cuda/tc4_persistent_fp8 $B4 --shape 1536x1536x1536 --shape 256x14336x4096 --shape 1024x14336x4096 \
  --shape 2048x2048x2048 --variant cuda/tc4_persistent_fp8:CM=1 --variant cuda/tc4_persistent_fp8:CM=1,NARROW_BN=128 \
  --json "$OUT/tc4_cm1.json" --append
# tc10 with a split tile's partials added across a cluster (SK_CLUSTER=1) beside the registered workspace's, at the
# suite's rows where auto runs tc10 with 1 < S <= 8 (the committed run registered the cluster's: the same pair)
declare -A TC10C
TC10C[bf16]="16x4096x14336 32x1024x8192 32x4096x4096 32x4096x14336 64x1024x8192 64x4096x4096 64x4096x14336
  128x1024x8192 128x4096x14336 256x256x16384 256x1024x8192 256x4096x4096 256x4096x14336 512x512x16384 512x1024x8192
  1024x1024x8192 1024x1024x16384"
TC10C[fp8]="32x1024x8192 32x4096x14336 64x1024x8192 64x4096x4096 64x4096x14336 128x1024x8192 128x4096x14336
  256x256x16384 256x256x65536 256x1024x8192 256x4096x14336 512x512x16384 512x1024x8192 1024x1024x8192 1024x1024x16384"
for P in bf16 fp8; do
  S=""; for s in ${TC10C[$P]}; do S="$S --shape $s"; done
  # shellcheck disable=SC2086
  g bench --kernels "cuda/tc10_split_k_$P" --variant "cuda/tc10_split_k_$P:SK_CLUSTER=1" --layout row,col $S --no-peers \
    --repeat 30 --max-seconds 0.25 --pause 0 --no-ceilings --json "$OUT/tc10_cluster_$P.json"
done
# The top tensor-core levels again, with a third ratio from alternating blocks that settle at their own power
g bench --shape 4096 --shape 8192 --shape 2048x3072x4096 \
  --kernels 'cuda/tc4_persistent_bf16,cuda/tc6_stream_k_bf16,cuda/tc5_swap_ab_tf32,cuda/tc6_stream_k_tf32,peers/cublas_tf32,peers/cublas_bf16' \
  $R --no-ceilings --blocks 10 --block-seconds 0.4 --json "$OUT/blocks.json"
# Nsight Compute counters for every GPU kernel at 4096³, one ncu process per results file
g profile 'numba/*,cuda/v*,peers/cublas_fp32,peers/triton_fp32' --shape 4096 --json "$OUT/fp32.json"
g profile 'cuda/tc[123567]*,cuda/tc4_persistent_[bt]*,peers/cublas_tf32,peers/cublas_bf16,peers/cublas_fp32' \
  --shape 4096 --json "$OUT/tensor_cores.json"
g profile "cuda/tc4_persistent_fp8,cuda/tc8*,cuda/tc6_stream_k_fp8_block,peers/cublaslt_fp8*" --shape 4096 --json "$OUT/fp8.json"
# The models of every record under the roofs measured above, and each record against its own ceiling
g roofline --remodel "$OUT"/{fp32,tensor_cores,fp8,fp8_variants,blocks,seed_1024}.json --ceilings "$OUT/ceilings.json"
g roofline --check "$OUT"/{fp32,tensor_cores,fp8,fp8_variants,blocks,seed_1024}.json
# tc10 at each of its tiles and S in {1, 2, 3, 4, 6, 8, 12, 16} (pinned --variant builds) where its model's choice
# may miss: the table of measured choices, written into the tree that runs (src/gemmlab/data/split_k-h200.json),
# before the grid times tc10 with it. tc10_sweep P NAME SHAPES...: one precision's sweep into $OUT/NAME_P.json
tc10_sweep() {
  local P=$1 name=$2 S="" V="" s t bm bn st sp; shift 2
  for s in "$@"; do S="$S --shape $s"; done
  for t in 64,64,8 64,128,8 128,128,6; do IFS=, read -r bm bn st <<< "$t"
    for sp in 1 2 3 4 6 8 12 16; do V="$V --variant cuda/tc10_split_k_$P:BM=$bm,BN=$bn,STAGES=$st,SPLITS=$sp"; done
  done
  # shellcheck disable=SC2086
  g bench --kernels "cuda/tc10_split_k_$P" --layout row,col $S $V --no-peers --repeat 20 --max-seconds 0.2 \
    --pause 0 --no-ceilings --json "$OUT/${name}_$P.json"
}
SWEEP="32x4096x4096 64x4096x4096 128x4096x4096 256x4096x4096 512x4096x4096 16x14336x4096 64x4096x14336
  256x4096x14336 128x1024x8192 512x1024x8192 1024x1024x8192 256x256x256 512x512x512 768x768x768 1024x1024x1024
  256x256x16384 512x512x16384 1024x1024x16384 256x256x65536"
# ... and at the suite's other shapes where auto runs tc10 (tc10_sweep2_P.json: no choice moved there)
declare -A SWEEP2
SWEEP2[bf16]="32x14336x4096 64x14336x4096 128x14336x4096 16x4096x14336 32x4096x14336 128x4096x14336 512x4096x14336
  32x1024x8192 64x1024x8192 256x1024x8192 2048x1024x8192"
SWEEP2[fp8]="32x14336x4096 64x14336x4096 128x14336x4096 32x4096x14336 128x4096x14336 512x4096x14336 32x1024x8192
  64x1024x8192 256x1024x8192 2048x1024x8192"
SWEEP2[fp8_block]="4x14336x4096 8x14336x4096 32x14336x4096 64x14336x4096 128x14336x4096 8x4096x14336 16x4096x14336"
SWEEP2[tf32]="8x4096x4096 16x4096x4096 8x14336x4096 32x14336x4096 64x14336x4096 128x14336x4096 8x4096x14336
  128x4096x14336 8x1024x8192 16x1024x8192 32x1024x8192 64x1024x8192 256x1024x8192"
for P in bf16 fp8 fp8_block tf32; do
  # shellcheck disable=SC2086
  tc10_sweep "$P" tc10_sweep $SWEEP
  # shellcheck disable=SC2086
  tc10_sweep "$P" tc10_sweep2 ${SWEEP2[$P]}
done
g dispatch --split-k "$OUT"/tc10_sweep_*.json "$OUT"/tc10_sweep2_*.json
# The suite's grid for kernel="auto": every candidate of each precision at every grid shape, B handed over as w.t()
# (the kernels that do not read it in place timed with gemmlab.matmul's copy), skipped where the shipped table
# predicts it over 3x the fastest there; a few minutes each
for P in fp32 tf32 bf16 fp8 fp8_block; do
  g bench --suite-grid "$P" --layout row,col --no-peers --no-ceilings --repeat 30 --max-seconds 0.25 --pause 0 \
    --json "$OUT/grid_$P.json"
done
# tc10 (split-K) against the levels it displaces and the cuBLAS peers at the long-K shapes and two squares
g bench --kernels 'cuda/tc10_split_k_*,cuda/tc2_wgmma_tma_bf16,cuda/tc4_persistent_bf16,cuda/tc6_stream_k_bf16,cuda/tc4_persistent_fp8,cuda/tc8_block_scaled_fp8,peers/cublas_bf16' \
  --layout row,col --shape 256x256x16384 --shape 512x512x16384 --shape 1024x1024x16384 --shape 256x256x65536 \
  --shape 512 --shape 1024 --repeat 20 --max-seconds 0.3 --pause 0 --no-ceilings --json "$OUT/split_k.json"
# kernel="auto"'s table from these runs (shipped as src/gemmlab/data/dispatch-h200.json), then the public API
g dispatch --build "$OUT"/{fp32,tensor_cores,fp8,split_k}.json "$OUT"/grid_*.json --out "$OUT/dispatch.json"
g dispatch --write "$OUT"/{fp32,tensor_cores,fp8,split_k}.json "$OUT"/grid_*.json  # this GPU's table, which kernel="auto" reads
# kernel="auto" between measured shapes, checked on that table: each shape held out and predicted from the others
g dispatch --held-out --out "$OUT/dispatch_held_out.json"
g bench --api --json "$OUT/api.json"
# The shape suite: x @ w.T at 69 shapes per precision, GPU and eager time against torch; a run per precision, each
# adding its records to the one file
for p in fp32 tf32 bf16 fp8 fp8_block; do g bench --api --suite --precision $p --json "$OUT/api_suite.json"; done
# Ragged shapes with NaN-poisoned C for every CUDA kernel, under compute-sanitizer memcheck and racecheck
g verify --kernels 'cuda/*' --sample 4 --sanitize --json "$OUT/verify.json"
# ... and the kernels changed after it: tc5 and tc6 TF32 (one launch for small problems), tc4 FP8 (three boxes of C
# held for the next tile), tc8 (192x128 tiles, the scales copied by TMA into a ring of their own) and its stream-K
# tail (tc6_stream_k_fp8_block)
g verify --kernels 'cuda/tc5_swap_ab_tf32,cuda/tc6_stream_k_tf32' --sample 4 --sanitize --json "$OUT/verify_tf32.json"
g verify --kernels 'cuda/gemv1*,cuda/gemv2*,cuda/tc9*' --sample 2 --sanitize --json "$OUT/verify_decode.json"
g verify --kernels 'cuda/tc10*' --sample 2 --sanitize --json "$OUT/verify_split_k.json"
g verify --kernels 'cuda/tc4_persistent_fp8,cuda/tc8*,cuda/tc6_stream_k_fp8_block' --sample 4 --sanitize --json "$OUT/verify_fp8.json"
# ... and tc8 after its consumers' wait on the scale ring moved to the producer (SCALE_GATE), with its clustered spec
g verify --kernels 'cuda/tc8_block_scaled_fp8,cuda/tc8_cluster_fp8_block' --sample 4 --sanitize \
  --json "$OUT/verify_fp8_gate.json"
# ... and the stream-K levels under the sanitizers at a shape whose walk takes whole tiles, then a split tail
g verify --kernels 'cuda/tc6*' --sample 4 --sanitize --json "$OUT/verify_stream_k.json"
# Where tc4's cycles go (BF16 and FP8), from clock stamps inside the kernel; 256x256x4096 is one cluster alone
g timeline --kernels 'cuda/tc4_persistent_bf16,cuda/tc4_persistent_fp8' --shape 4096 --shape 8192 \
  --shape 2048x3072x4096 --shape 256x256x4096 --json "$OUT/timeline.json"
# The same stamps for the FP8 levels (tc8 runs more units per warpgroup than the stamps hold at 8192³)
g timeline --kernels 'cuda/tc8_block_scaled_fp8,cuda/tc8_promoted_fp8,cuda/tc4_persistent_fp8' --shape 4096 \
  --shape 2048x3072x4096 --json "$OUT/timeline_fp8.json"
# The distributed ops on this one GPU (NCCL, one rank), into ${OUT}x1 (results/h200x1)
python3 -m torch.distributed.run --standalone --nproc-per-node 1 -m gemmlab bench --distributed \
  --json "${OUT}x1/distributed.json"
# Error against float64 of FP32, TF32 and 3xTF32 products against K and input scale (accuracy.md, .png beside it)
g accuracy --mn 1024 --json "$OUT/accuracy.json"
# The builds that decided TF32 rounding and tc7's promotion interval, each pinned by its parameters: ragged shapes,
# errors on the same inputs, times interleaved with the cuBLAS peer (docs/accuracy.md)
python3 "$(dirname "$0")/candidates.py" "$OUT"
# The reports are rendered from the JSON alone, on any machine:
for f in fp32 tensor_cores blocks fp8 fp8_variants seed_1024 chapter api_suite; do g report "$OUT/$f.json" --out "$OUT/$f"; done
