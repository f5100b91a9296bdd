"""What gemmlab timeline needs of the wgmma levels: the sources that stamp their cycles (TIMELINE=1), the stamps' slots,
and the ideal k-tile time they are read against."""

TL_SLOTS = 64  # readings per consumer warpgroup with TIMELINE=1 (Timeline in tc_timeline.cuh, harness/timeline.py)
TIMELINE_SOURCES = ("tc4_persistent.cu", "tc8_block_scaled_fp8.cu")  # the sources that have the stamps
# Dense tensor-core multiply-adds per SM per clock on Hopper: the datasheet's 989.4 BF16 TFLOPS (494.7 TF32, 1979
# FP8) for 132 SMs at 1830 MHz is 4096 (2048, 8192) FLOP per SM per clock.
TENSOR_FMA_PER_SM_CLOCK = {"bf16": 2048, "fp16": 2048, "tf32": 1024, "fp8": 4096, "fp8_block": 4096}
