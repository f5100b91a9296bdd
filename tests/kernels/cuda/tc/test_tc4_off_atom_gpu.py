"""tc4's tile widths off the 64-column atom (tiles.OFF_ATOM_WIDTHS: 144 and 224 columns, B read K-major in 16- or
32-row boxes, C stored from registers), pinned, on a GPU (skipped without one): each right against float64 on ragged
shapes (N cut inside a box of B and inside the last tile, M past a cluster's rows, K off the k-tile), clusters on and
off (FP8), in each output type, into a NaN-poisoned C; and the same bits on every call. Apart from the CPU tests,
whose stub driver (a module fixture) would take these launches."""
import numpy as np
import pytest

from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

NAMES = ["cuda/tc4_persistent_bf16", "cuda/tc4_persistent_fp16", "cuda/tc4_persistent_fp8"]
# (M, N, K): N 8 past whole 16-row boxes; N inside a 224-wide tile's last 32-row box; one column; M past 256
# rows; the widths' own problems (11 tiles of 144 across 1536, 64 of 224 across 14336, at fewer rows)
SHAPES = [(1, 152, 64), (17, 250, 1000), (129, 1, 72), (300, 520, 264), (257, 1544, 777), (1536, 1536, 1536),
          (256, 14336, 512)]


def _needs_gpu():
    from gemmlab import device

    if device.gpu() is None:
        pytest.skip("needs a CUDA GPU")


def _builds(name):
    """Each width, pinned, with FP8's clusters on and off (its short-K choice), in each output type."""
    from gemmlab.kernels.cuda.tc.model.tiles import OFF_ATOM_BUILD, OFF_ATOM_WIDTHS

    spec = get_kernel(name)
    cms = ({"SHORT_K": 0}, {"CM": 1, "SHORT_K": 0}) if spec.fp8 else ({},)  # clusters on at every K, and off
    pinned = [spec.with_params({"BN": w, **OFF_ATOM_BUILD, **cm}) for cm in cms for w in OFF_ATOM_WIDTHS]
    if spec.fp8:
        return [b.for_formats(*b.formats, out) for b in pinned for out in ("bfloat16", "float32")]
    return spec.output_builds(pinned)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape", SHAPES)
def test_on_gpu_each_width_off_the_atom_is_right_and_gives_the_same_bits(name, shape):
    from gemmlab.harness.verify import check, run_once

    _needs_gpu()
    import cupy

    builds = _builds(name)
    assert {b.params["BN"] for b in builds} == {144, 224} and len(builds) == (8 if "fp8" in name else 4)
    for spec in builds:
        problem = Problem(*shape, spec.precision)
        assert spec.for_problem(problem) is spec  # pinned: the width and the clusters run as built
        result = check(spec, problem, seed=1)
        assert result.passed, (spec.params, result)
        a, b = spec.make_inputs(problem, 2, cupy)
        run = spec.build(problem)
        first = run_once(spec, problem, a, b, run).view(np.uint8).get()
        assert (run_once(spec, problem, a, b, run).view(np.uint8).get() == first).all()
