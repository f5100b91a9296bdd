"""Host side shared by the wgmma levels (tc2..tc8), free of the GPU, one concern a file: the spec class with its launch
geometry and tensor-map shapes (kernel.py), parameter constraints (constraints.py, fp8.py for the FP8 options), the
shared-memory and register budget (budget.py), the tile order and per-problem tile choices (tiles.py), the stream-K
partition (stream_k.py), the traffic model (traffic.py) and what gemmlab timeline reads (timeline.py). The plan that
launches them (workspaces, tensor maps in the argument struct, pre-passes) is in plan.py.

Operand staging, decided per problem and layout before anything launches:
- BF16: A (M×K) is K-major and B (K×N) N-major as given; wgmma reads B through its transpose bit. A B handed over
  as the transpose of an N×K matrix (``x @ w.T``) is read K-major in place (B_KMAJOR=1). TMA needs 16-byte row
  strides, so K % 8 (A) or N % 8 (B) sends that operand through a padded copy first (a slower but correct path;
  the kernel's tensor map still has the true width, so the padding is never read).
- TF32, tc2-tc4: tf32 wgmma reads K-major shared-memory operands only, so a row-major B goes through a transpose
  pre-pass into Bᵀ (N×K, row stride K rounded up to 4); the pre-pass moves 8·K·N bytes and is the second launch
  (tc_transpose) in the profiles of results/h200/tensor_cores.json. A B handed over as Bᵀ is read in place.
- TF32, tc5 (``swap_ab``): the kernel computes Cᵀ = Bᵀ·Aᵀ with B as wgmma's register operand, so A and B are
  read as given, padded like BF16's when K % 4 (A) or N % 4 (B).
- FP8 (tc4_persistent_fp8, tc8): fp8 wgmma reads both operands K-major, so A comes M×K and B as the transpose of
  an N×K matrix (what torch._scaled_mm and cuBLASLt take); a row-major K×N B is refused with that reason (its
  transpose would be a pass over B on every call, as large as the TF32 pre-pass in bytes). K % 16 sends both
  through the padded copy. C is BF16 (N % 8 for TMA stores) or FP32 (OUT_BF16=0).

Stream-K (``STREAM_K=1``, tc6): the persistent walk ends in a stream-K tail; ``stream_k_units`` is the Python
model of the device walk (SkWalk in tc_scheduler.cuh), ``stream_k_grid`` picks its grid, and each plan allocates the
partials' workspace and the per-tile flags that the kernel finds in its argument struct.
"""
