import itertools

import numpy as np
import pytest
from numba import cuda, float32

from gemmlab.harness.reference import compare, reference, tolerance_for
from gemmlab.harness.verify import SPECIAL_SHAPES, SWEEP_DIMS, check, sweep_shapes
from gemmlab.kernels.cpu._kernel import CpuKernel
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.numba.launch.kernel import NumbaKernel
from gemmlab.problem import Problem


def test_compare_rejects_nan_even_when_norms_look_fine():
    ref = np.ones((4, 4))
    c = np.ones((4, 4), np.float32)
    assert compare(c, ref, 1e-5).passed
    c[2, 3] = np.nan
    report = compare(c, ref, 1e-5)
    assert not report.passed and report.nonfinite == 1


def test_compare_measures_relative_frobenius_and_max_abs():
    ref = np.full((10, 10), 2.0)
    c = ref.astype(np.float32).copy()
    c[0, 0] += 0.2
    r = compare(c, ref, 1e-5)
    assert r.rel_err == pytest.approx(0.2 / 20.0, rel=1e-5)
    assert r.max_abs_err == pytest.approx(0.2, rel=1e-5)
    assert not r.passed


def test_tolerance_grows_with_k_beyond_4096():
    assert tolerance_for(Problem(8, 8, 4096)) == 1e-5
    assert tolerance_for(Problem(8, 8, 16384)) == pytest.approx(2e-5)
    assert tolerance_for(Problem(8, 8, 64, "bf16")) == 1e-2


def _unwritten_corner(A, B, C):
    # every element but the last written: what that element holds is whatever verify put in C before the launch
    C.flat[:-1] = np.matmul(A, B).flat[:-1]


def test_an_unwritten_element_fails_verification():
    spec = CpuKernel(name="cpu/test_skips_corner", level=None, precision="fp32", title="", function=_unwritten_corner)
    result = check(spec, Problem(5, 7, 3), seed=1)
    # found as a NaN: C poisoned before the launch, so an unwritten element never passes for a right one
    assert result.status == "FAILED" and result.error.nonfinite == 1


def _bf16(x):
    import ml_dtypes

    return x.astype(ml_dtypes.bfloat16).astype(np.float32)


@pytest.mark.parametrize("corrupt", ["column", "tile", "element"])
def test_an_error_confined_to_a_few_elements_fails_though_the_norm_passes(corrupt):
    """C rounded to BF16 once (a right kernel's error) passes; a column, a 16×16 block or one element of it zeroed
    stays under the relative tolerance over a C this large, and fails on its largest element's error."""
    rng = np.random.default_rng(3)
    m, n, k = 512, 16384, 16
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    ref = a @ b
    tolerance = tolerance_for(Problem(m, n, k, "bf16"))
    good = compare(_bf16(ref), ref, tolerance)
    assert good.passed and good.max_abs_err < good.max_abs_bound / 2
    bad = _bf16(ref)
    if corrupt == "column":
        bad[:, 0] = 0
    elif corrupt == "tile":
        bad[:16, :16] = 0
    else:  # the largest: one element near zero would err by too little to tell from rounding
        bad[np.unravel_index(np.argmax(np.abs(ref)), ref.shape)] = 0
    report = compare(bad, ref, tolerance)
    assert report.rel_err < tolerance  # the norm alone would pass it
    assert not report.passed and "an element's error" in report.failure()


def test_the_element_bound_leaves_every_committed_verified_record_room():
    """MAX_ERR_FACTOR's calibration, reproduced: over every verified record committed under results/ (N(0, 1) inputs,
    so the reference's RMS is about sqrt(K)), the largest element error in tolerances of that RMS stays under half
    the bound (FP8 per tensor, the heaviest tail, reaches 4.6 of the 10)."""
    import json
    import math
    from pathlib import Path

    from gemmlab.harness.reference import MAX_ERR_FACTOR

    worst, seen = {}, 0
    for path in sorted((Path(__file__).resolve().parents[2] / "results").glob("h*/*.json")):
        data = json.loads(path.read_text())
        for r in data.get("records", []) if isinstance(data, dict) else []:
            if not (isinstance(r, dict) and r.get("verified") and r.get("max_abs_err") is not None and r.get("k")
                    and r.get("precision")):
                continue
            seen += 1
            tol = tolerance_for(Problem(r["m"], r["n"], r["k"], r["precision"]))
            worst[r["precision"]] = max(worst.get(r["precision"], 0.0), r["max_abs_err"] / math.sqrt(r["k"]) / tol)
    assert seen > 7000
    assert max(worst.values()) < MAX_ERR_FACTOR / 2, worst
    assert max(v for p, v in worst.items() if p != "fp8") < MAX_ERR_FACTOR / 4, worst


@cuda.jit
def _seed_v2_with_its_store_bug(C, A, B, M, N, K):
    # the seeds' V2 store guard, `row < M || col < N`, on 2-D arrays: writes out of bounds on ragged shapes
    As = cuda.shared.array((8, 8), float32)
    Bs = cuda.shared.array((8, 8), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * 8 + tx
    row = cuda.blockIdx.y * 8 + ty
    acc = float32(0.0)
    for k0 in range(0, K, 8):
        As[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
        Bs[ty, tx] = B[k0 + ty, col] if col < N and k0 + ty < K else float32(0.0)
        cuda.syncthreads()
        for k in range(8):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    if row < M or col < N:
        C[row, col] = acc


def test_the_seeds_v2_store_bug_is_caught_on_a_ragged_shape():
    spec = NumbaKernel(name="numba/test_seed_v2_bug", level=None, precision="fp32", title="",
                       jit=lambda: _seed_v2_with_its_store_bug,
                       geometry=lambda pr, p: Geometry((ceil_div(pr.n, 8), ceil_div(pr.m, 8), 1), (8, 8, 1)))
    assert check(spec, Problem(16, 16, 8), seed=0).passed  # multiples of the tile hide it
    result = check(spec, Problem(9, 10, 8), seed=0)
    assert not result.passed  # the simulator raises on the out-of-bounds store


def test_sweep_covers_the_listed_dimensions_and_special_shapes():
    full = sweep_shapes(full=True)
    combos = set(itertools.product(SWEEP_DIMS, repeat=3))
    assert set(full) == combos | set(SPECIAL_SHAPES) and len(full) == len(combos | set(SPECIAL_SHAPES))
    sample = sweep_shapes(full=False, sample=24, seed=3)
    assert set(SPECIAL_SHAPES) <= set(sample)
    assert sweep_shapes(full=False, sample=24, seed=3) == sample  # seeded
    assert all(2 * m * n * k <= 1e6 for m, n, k in sweep_shapes(max_flops=1e6))
    assert any(1 in s for s in sample) and any(4097 in s for s in sample)
    # a sample of the combinations, drawn by the seed: another seed draws others
    assert len(set(sample) - set(SPECIAL_SHAPES)) >= 20 and sweep_shapes(full=False, sample=24, seed=4) != sample
    # the bound is inclusive: a shape of exactly max_flops stays
    assert (33, 31, 4097) in sweep_shapes(max_flops=2 * 33 * 31 * 4097)


def test_a_problem_the_kernel_refuses_is_skipped_without_a_launch():
    launched = []
    spec = CpuKernel(name="cpu/test_refuses", level=None, precision="fp32", title="", max_flops=10,
                     function=lambda A, B, C: launched.append(1))
    result = check(spec, Problem(5, 7, 3), seed=0)  # 210 FLOPs past its 10
    assert result.status == "skipped" and "GFLOP" in result.reason and launched == []


def test_reference_is_float64():
    a, b = Problem(3, 4, 5).make_inputs(0)
    assert reference(a, b).dtype == np.float64


def test_sanitizer_errors_are_attributed_to_the_kernel_they_happened_in():
    from gemmlab.harness.sweep import sanitizer_rows
    from gemmlab.kernels.registry import get_kernel

    specs = [get_kernel("cuda/v1_naive"), get_kernel("cuda/v2_smem")]
    log = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at v2_smem+0x1b0
=========     by thread (0,9,0) in block (0,3,0)
=========     Address 0x7f0 is out of bounds
=========
========= ERROR SUMMARY: 1 error
"""
    rows = {row.kernel: (row.clean, row.detail) for row in sanitizer_rows(specs, log, 3)}
    assert rows["cuda/v1_naive"][0] is True
    assert rows["cuda/v2_smem"][0] is False and "1 error" in rows["cuda/v2_smem"][1]
    clean = sanitizer_rows(specs, "========= ERROR SUMMARY: 0 errors\n", 0)
    assert all(row.clean for row in clean)
    crashed = sanitizer_rows(specs, "Traceback ...\nImportError: boom\n", 1)
    assert not any(row.clean for row in crashed) and "boom" in crashed[0].detail


def test_every_cuda_kernel_runs_at_some_sanitizer_shape(monkeypatch):
    """The sanitizer child launches each kernel at the shapes it takes; one that takes none (the gemv levels take at
    most 16 or 32 rows of A) is reported as never run, not as clean, and the child fails."""
    from types import SimpleNamespace

    from gemmlab.harness import sweep
    from gemmlab.kernels.registry import get_kernel, list_kernels

    checked = []
    monkeypatch.setattr(sweep, "check", lambda spec, problem, seed: checked.append(spec.name) or
                        SimpleNamespace(passed=True))
    names = [s.name for s in list_kernels("cuda/*")]
    assert sweep._sanitize_target(names) == 0
    assert set(checked) == set(names)
    monkeypatch.setattr(sweep, "SANITIZE_SHAPES", ((300, 520, 200),))
    assert sweep._sanitize_target(["cuda/gemv1_warp_dot_bf16", "cuda/tc4_persistent_bf16"]) == 4
    log = "UNTESTED cuda/gemv1_warp_dot_bf16\n========= ERROR SUMMARY: 0 errors\n"
    rows = sweep.sanitizer_rows([get_kernel("cuda/gemv1_warp_dot_bf16"), get_kernel("cuda/tc4_persistent_bf16")],
                                log, 4)
    assert [(r.clean, "never ran" in r.detail) for r in rows] == [(False, True), (True, False)]
    alone = sweep.sanitizer_rows([get_kernel("cuda/gemv1_warp_dot_bf16")], "UNTESTED cuda/gemv1_warp_dot_bf16\n"
                                 "========= Error: Target application terminated before first instrumented API call",
                                 255)
    assert not alone[0].clean and "never ran" in alone[0].detail


def test_the_sweep_runs_its_shapes_smallest_product_first():
    shapes = sweep_shapes(full=True)
    sizes = [m * n * k for m, n, k in shapes]
    assert sizes == sorted(sizes) and shapes == sorted(shapes, key=lambda s: (s[0] * s[1] * s[2], s))


def test_check_launches_what_it_is_given_on_the_inputs_it_is_given_into_a_nan_c_of_the_output_type():
    from gemmlab.kernels.registry import get_kernel

    blas, problem = get_kernel("cpu/blas"), Problem(5, 6, 7)
    seen = []

    def launch(a, b, c):  # a launch of the caller's: records what C it is handed, writes a wrong product
        seen.append((c.dtype, bool(np.isnan(c).all())))
        c[...] = 0

    assert not check(blas, problem, launch=launch).passed and seen == [(np.float32, True)]
    a, b = (np.arange(x * y, dtype=np.float32).reshape(x, y) / 10 for x, y in ((5, 7), (7, 6)))
    assert check(blas, problem, inputs=(a, b), ref=reference(a, b)).passed
    assert not check(blas, problem, inputs=(a, b), ref=reference(a, b) + 1).passed  # the reference given is used
    first, again = (check(blas, problem, seed=5).error.rel_err for _ in range(2))
    assert first == again  # seeded inputs


def test_check_of_a_refused_problem_names_the_kernel_and_problem_and_runs_nowhere():
    from gemmlab.kernels.registry import get_kernel

    naive, problem = get_kernel("cpu/v0_naive"), Problem(4096, 4096, 4096)
    result = check(naive, problem)
    assert (result.kernel, result.problem, result.where, result.error) == (naive.name, problem, "", None)
    assert result.reason.startswith("skipped: ")


def test_where_runs_a_cuda_kernel_is_a_gpu_or_a_named_error():
    from gemmlab import device
    from gemmlab.errors import NoGPUError
    from gemmlab.harness.verify import where_runs
    from gemmlab.kernels.registry import get_kernel

    assert where_runs(get_kernel("cpu/blas")) == "cpu"
    if device.gpu() is None:
        with pytest.raises(NoGPUError, match="cuda/v2_smem needs a CUDA GPU"):
            where_runs(get_kernel("cuda/v2_smem"))
        assert where_runs(get_kernel("numba/v2_smem")) == "simulator"
    else:
        assert where_runs(get_kernel("cuda/v2_smem")) == "gpu"


def test_a_level_that_takes_only_16_byte_rows_runs_the_sweep_rounded_up():
    """The Gluon levels move every operand by TMA in place: the sweep's ragged N and K become multiples of 16, M stays
    ragged (every tile still partial); a level that takes the shape as it is runs it as it is, and a shape refused for
    another reason stays refused (skipped, not run at some other shape)."""
    from gemmlab.harness.sweep import runnable
    from gemmlab.kernels.registry import get_kernel

    gluon = get_kernel("gluon/tc4_persistent_bf16")
    assert gluon.is_valid(Problem(33, 17, 65, "bf16"))  # refused as it is
    assert runnable(gluon, Problem(33, 17, 65, "bf16")).shape == (33, 32, 80)
    assert runnable(gluon, Problem(4097, 3, 17, "bf16")).shape == (4097, 16, 32)
    assert runnable(gluon, Problem(64, 128, 256, "bf16")).shape == (64, 128, 256)
    cuda = get_kernel("cuda/tc4_persistent_bf16")  # stages a copy of an operand TMA cannot read in place
    assert runnable(cuda, Problem(33, 17, 65, "bf16")).shape == (33, 17, 65)
    fp8 = get_kernel("cuda/tc4_persistent_fp8")  # refuses BF16 operands at any shape
    refused = Problem(33, 17, 65, "bf16")
    assert fp8.is_valid(refused) and runnable(fp8, refused) is refused


def test_racecheck_hazards_of_a_gluon_level_are_its_own():
    """A Gluon level's kernel is named in the log by its @gluon.jit function (its spec's entry), as racecheck prints
    it: the hazards go to that level, not to every Gluon level of the run."""
    from gemmlab.harness.sweep import sanitizer_rows
    from gemmlab.kernels.registry import get_kernel

    specs = [get_kernel("gluon/tc2_wgmma_tma_bf16"), get_kernel("gluon/tc8_block_scaled_fp8")]
    log = """========= Error: Race reported between Read access at tc8_block_scaled_fp8+0x100 in tc8_block_scaled_fp8.py:85
=========     and Write access at tc8_block_scaled_fp8+0x45f0 in tc8_block_scaled_fp8.py:85 [1 hazards]
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""
    rows = {row.kernel: row.clean for row in sanitizer_rows(specs, log, 3)}
    assert rows == {"gluon/tc2_wgmma_tma_bf16": True, "gluon/tc8_block_scaled_fp8": False}
