"""tc10_split_k on a GPU (skipped without one): right on ragged shapes at the chosen and at pinned S (across a cluster,
and through the workspace by the last split or by every split) and with A's box of fewer rows than the tile, the same
bits on every call of one plan (its tickets back at zero after each) and every way of adding the partials; TF32 also
as x @ w.t() (B read and rounded in place), at cuBLAS TF32's accuracy. Apart from the CPU tests, whose stub driver
(a module fixture) would take these launches."""
import numpy as np
import pytest

from gemmlab.kernels.cuda.tc.model import split_k
from gemmlab.kernels.cuda.tc.tc10_split_k import IN_KERNEL  # TF32 rounded in the kernel, a variant
from gemmlab.kernels.plan import COL, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

NAMES = {"bf16": "cuda/tc10_split_k_bf16", "fp16": "cuda/tc10_split_k_fp16", "fp8": "cuda/tc10_split_k_fp8",
         "fp8_block": "cuda/tc10_split_k_fp8_block", "tf32": "cuda/tc10_split_k_tf32"}

# ---- on a GPU --------------------------------------------------------------------------------------------------------
GPU_SHAPES = [(1, 33, 4097), (3, 257, 1001), (17, 255, 8191), (127, 129, 777), (256, 256, 16384)]


def _needs_gpu():
    from gemmlab import device

    if device.gpu() is None:
        pytest.skip("needs a CUDA GPU")


def _same_bits_on_every_call(spec, problem, a, b, run):
    from gemmlab.harness.verify import run_once

    first = run_once(spec, problem, a, b, run).view(np.uint8).get()
    for _ in range(4):
        assert (run_once(spec, problem, a, b, run).view(np.uint8).get() == first).all()


@pytest.mark.parametrize("precision", list(NAMES))
@pytest.mark.parametrize("shape", GPU_SHAPES)
def test_on_gpu_right_and_the_same_bits_on_every_call(precision, shape):
    from gemmlab.harness.verify import check

    _needs_gpu()
    problem = Problem(*shape, precision)
    base = get_kernel(NAMES[precision])
    # the chosen S; 7 splits through the workspace and its tickets, added across a cluster (SK_CLUSTER=1), and by
    # every split through the workspace (SK_SPREAD=1: the ticket counts to 2S, back at zero after each call); the
    # tiles only a measured table takes (128x64, and 128x256 where the precision builds it), whole and split
    measured = [{"BM": bm, "BN": bn, "STAGES": st, "SPLITS": s}
                for bm, bn, st in split_k.tiles_for(precision, measured=True) if (bm, bn, st) not in split_k.TILES
                for s in (1, 3)]
    # ... and where M is shorter than a 64-row tile, A's box of M's power of two from 8 (the A_ROWS variant: the
    # tile's rows past it hold a stale stage's bytes, which reach only rows of C past M)
    short = [{"A_ROWS": max(8, 1 << (problem.m - 1).bit_length())}] if problem.m <= 32 else []
    for spec in (base, base.with_params({"SPLITS": 7}), base.with_params({"SPLITS": 7, "SK_CLUSTER": 1}),
                 base.with_params({"SPLITS": 7, "SK_SPREAD": 1}), *(base.with_params(m) for m in measured + short)):
        result = check(spec, problem, seed=1)
        assert result.passed, result
        a, b = spec.make_inputs(problem, 2, __import__("cupy"))
        _same_bits_on_every_call(spec, problem, a, b, spec.build(problem))  # one plan: tickets back at zero


@pytest.mark.parametrize("precision,tile", [(p, t) for p in NAMES for t in split_k.tiles_for(p, measured=True)],
                         ids=lambda v: f"{v[0]}x{v[1]}" if isinstance(v, tuple) else v)
@pytest.mark.parametrize("splits", [2, 3, 5, 8])
def test_on_gpu_the_cluster_adds_the_partials_to_the_workspace_s_bits(precision, tile, splits):
    """The same tile and S added across a cluster (SK_CLUSTER=1; not 128x256, whose partial and sums the ring of 4
    does not hold), through the workspace by the last split (both 0) and by every split (SK_SPREAD=1): C has the
    same bits, each element's partials added in split order from zero every way (at 64x64 and S = 8 each CTA of a
    cluster, or each split, adds one float4 of every thread's share)."""
    import cupy

    from gemmlab.harness.verify import run_once

    _needs_gpu()
    problem = Problem(130, 250, 8191, precision)
    bm, bn, stages = tile
    pinned = get_kernel(NAMES[precision]).with_params({"BM": bm, "BN": bn, "STAGES": stages, "SPLITS": splits})
    ways = [w for w in ({"SK_CLUSTER": 1}, {}, {"SK_SPREAD": 1}) if not pinned.constraints({**pinned.params, **w})]
    assert len(ways) == (3 if bn <= 128 else 2)  # 128x256: no cluster's reduction
    builds = [pinned.with_params(w) for w in ways]
    assert [b.for_problem(problem).cluster() for b in builds][-2:] == [None, None]
    assert [b.for_problem(problem).params["SK_SPREAD"] for b in builds][-2:] == [0, 1]
    a, b = builds[0].make_inputs(problem, 3, cupy)
    bits = [run_once(s, problem, a, b, s.build(problem)).view(np.uint8).get() for s in builds]
    assert all((got == bits[-2]).all() for got in bits)  # each way's C is the workspace's
    if bn <= 128:
        assert builds[0].for_problem(problem).cluster() == (1, splits, 1)


@pytest.mark.parametrize("shape", GPU_SHAPES)
def test_tf32_on_w_t_rounds_as_cublas_and_repeats_its_bits(shape):
    """B handed over as w.t() (N×K), read in place: the registered build (both operands rounded by their TFLOAT32
    maps, TMA_ROUND=1), and the variant that rounds in the kernel (TF32_ROUND=2: B's tiles rounded in place by the
    consumers, A's fragments in registers). Against float64 on NaN-poisoned C at TF32's tolerance, the same bits on 5
    calls; where the product has rows and columns enough for a relative error to mean something, that error is the
    error of both operands rounded to nearest (their float64 product), within 20%, far from truncation's, and within
    1.5x of torch's TF32 matmul on the same operands."""
    import cupy

    from gemmlab import numerics as nm
    from gemmlab.harness.layouts import arrange, launch
    from gemmlab.harness.verify import check

    from gemmlab.harness.verify import run_once

    _needs_gpu()
    problem = Problem(*shape, "tf32")
    layout = Layout(b=COL)
    m, n, _ = shape
    base = get_kernel(NAMES["tf32"])
    in_kernel = base.with_params(IN_KERNEL)
    # the chosen S and 7; rounded in the kernel, the same
    for spec in (base, base.with_params({"SPLITS": 7}), in_kernel, in_kernel.with_params({"SPLITS": 7})):
        a, b = arrange(*spec.make_inputs(problem, 3, cupy), layout)
        run, copies = launch(spec, problem, layout)
        assert copies == ()  # read in place
        result = check(spec, problem, launch=run, inputs=(a, b))
        assert result.passed, (spec.params, result)
        _same_bits_on_every_call(spec, problem, a, b, run)
        if m * n < 1000:
            continue
        c = run_once(spec, problem, a, b, run).get().astype(np.float64)
        a_, b_ = a.get(), b.get()
        ref = a_.astype(np.float64) @ b_.astype(np.float64)

        def rel(x):
            return np.linalg.norm(x - ref) / np.linalg.norm(ref)

        rounded = rel(nm.tf32_rna(a_).astype(np.float64) @ nm.tf32_rna(np.ascontiguousarray(b_)).astype(np.float64))
        truncated = rel(nm.tf32_trunc(a_).astype(np.float64) @
                        nm.tf32_trunc(np.ascontiguousarray(b_)).astype(np.float64))
        assert rel(c) <= 1.2 * rounded and rel(c) < 0.6 * truncated, (spec.params, rel(c), rounded, truncated)
    if m * n < 1000:
        return
    torch = pytest.importorskip("torch")
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        theirs = (torch.as_tensor(a, device="cuda") @ torch.as_tensor(b, device="cuda")).cpu().numpy()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    assert rel(c) <= 1.5 * rel(theirs.astype(np.float64)), (rel(c), rel(theirs.astype(np.float64)))


@pytest.mark.parametrize("layout", [Layout(b=COL), Layout()], ids=["w.t()", "row-major B"])
def test_tf32_maps_round_each_operand_to_nearest_even(layout):
    """What a TFLOAT32 map does to FP32 on its way into shared memory, read bit for bit: a product of K = 4 whose only
    nonzero column of A meets a row of B of ones gives, in every column of C, A's values as the tensor cores saw
    them (a product of two TF32 values is exact in FP32); and the same for B's. TFLOAT32 maps (TMA_ROUND=1) round to
    nearest, ties to even, in both operands (through the transpose pre-pass's Bᵀ for a row-major B); the truncating
    build (TF32_ROUND=0, TMA_ROUND=0) drops the low 13 bits; the in-kernel rounding (TF32_ROUND=2) takes ties away
    from zero, as cvt.rna does."""
    import cupy

    from gemmlab import numerics as nm
    from gemmlab.harness.layouts import arrange, launch

    _needs_gpu()
    m, n, k = 256, 128, 4
    rng = np.random.default_rng(7)
    ties = np.array([1 + 2**-11, 1 + 3 * 2**-11, -(1 + 3 * 2**-11), 1.5 + 2**-11, 1 + 2**-11 + 2**-20],
                    np.float32)  # ties to round down and up to even, and a value just past a tie
    values = np.concatenate([ties, (3 * rng.standard_normal(m - len(ties))).astype(np.float32)])
    base = get_kernel(NAMES["tf32"])
    assert base.params["TMA_ROUND"] == 1  # the registered build
    for spec, expect in ((base, nm.tf32_rne), (base.with_params({"TMA_ROUND": 0}), nm.tf32_trunc),
                         (base.with_params(IN_KERNEL), nm.tf32_rna)):
        run, _ = launch(spec, Problem(m, n, k, "tf32"), layout)
        for side in ("A", "B"):
            a = np.zeros((m, k), np.float32)
            b = np.zeros((k, n), np.float32)
            if side == "A":
                a[:, 0], b[0, :], seen = values, 1, lambda c: c[:, 0]
            else:
                a[0, :], b[0, :], seen = 1, values[:n], lambda c: c[0, :]
            ga, gb = arrange(cupy.asarray(a), cupy.asarray(b), layout)
            c = cupy.full((m, n), cupy.nan, cupy.float32)
            run(ga, gb, c)
            got = seen(c.get())
            want = expect(values[:len(got)])
            assert (got.view(np.uint32) == want.view(np.uint32)).all(), (spec.params, side, got[:6], want[:6])


@pytest.mark.parametrize("precision", list(NAMES))
@pytest.mark.parametrize("shape,tile,splits", [((512, 512, 16384), (128, 128, 6), 8),  # 128 CTAs: nearly every SM
                                               ((256, 256, 16384), (64, 64, 8), 8),  # 16 tiles x 8
                                               ((64, 64, 65536), (64, 64, 8), 32)],  # S past BN / 8: 24 empty shares
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_on_gpu_every_split_adds_a_share_to_the_last_split_s_bits(precision, shape, tile, splits):
    """SK_SPREAD at a grid of nearly every SM (all resident at once, as the cooperative launch asks) and at more
    splits than a thread's share has float4s (some splits add none and only count): C equal bit for bit to the last
    split's reduction at the same tile and S, and again on a second call of the same plan (its ticket back at
    zero)."""
    import cupy

    from gemmlab.harness.verify import run_once

    _needs_gpu()
    problem = Problem(*shape, precision)
    bm, bn, stages = tile
    pinned = get_kernel(NAMES[precision]).with_params({"BM": bm, "BN": bn, "STAGES": stages, "SPLITS": splits})
    spread, workspace = pinned.with_params({"SK_SPREAD": 1}), pinned
    assert spread.for_problem(problem).params["SK_SPREAD"] == 1
    a, b = spread.make_inputs(problem, 4, cupy)
    plan = spread.build(problem)
    first, second = (run_once(spread, problem, a, b, plan).view(np.uint8).get() for _ in range(2))
    last = run_once(workspace, problem, a, b, workspace.build(problem)).view(np.uint8).get()
    assert (first == last).all() and (second == last).all()
