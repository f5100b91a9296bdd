"""tc10_split_k on a GPU (skipped without one): right on ragged shapes at the chosen and at a pinned S, and the same
bits on every call of one plan (its tickets back at zero after each). Apart from the CPU tests, whose stub driver
(a module fixture) would take these launches."""
import numpy as np
import pytest

from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

NAMES = {"bf16": "cuda/tc10_split_k_bf16", "fp16": "cuda/tc10_split_k_fp16", "fp8": "cuda/tc10_split_k_fp8",
         "fp8_block": "cuda/tc10_split_k_fp8_block"}

# ---- on a GPU --------------------------------------------------------------------------------------------------------
GPU_SHAPES = [(1, 33, 4097), (3, 257, 1001), (17, 255, 8191), (127, 129, 777), (256, 256, 16384)]


@pytest.mark.parametrize("precision", list(NAMES))
@pytest.mark.parametrize("shape", GPU_SHAPES)
def test_on_gpu_right_and_the_same_bits_on_every_call(precision, shape):
    from gemmlab import device
    from gemmlab.harness.verify import check, run_once

    if device.gpu() is None:
        pytest.skip("needs a CUDA GPU")
    problem = Problem(*shape, precision)
    for spec in (get_kernel(NAMES[precision]), get_kernel(NAMES[precision]).with_params({"SPLITS": 7})):
        result = check(spec, problem, seed=1)
        assert result.passed, result
        a, b = spec.make_inputs(problem, 2, __import__("cupy"))
        run = spec.build(problem)  # one plan: its tickets must be back at zero after every call
        first = run_once(spec, problem, a, b, run).view(np.uint8).get()
        for _ in range(4):
            assert (run_once(spec, problem, a, b, run).view(np.uint8).get() == first).all()
