"""tc9 without a GPU: both tile widths compile for sm_90a to HGMMA with no local memory; the swap (the kernel's
problem is Cᵀ, its A the weight, its B the tokens, C stored transposed); the width, ring and stream-K walk chosen
per problem; and the plan that hands the driver the operands in swapped roles (a stub libcuda records it)."""
import pytest
import sass
from test_plans import H200, launch_record, make, stub, tc_args  # noqa: F401  (stub: a pytest fixture)

from gemmlab.errors import InvalidConfigError, ShapeError
from gemmlab.kernels.cuda.tc import tc9_narrow_swap as tc9
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

NAMES = ("cuda/tc9_narrow_swap_bf16", "cuda/tc9_narrow_swap_fp8")


@pytest.mark.parametrize("name", NAMES)
def test_both_widths_compile_to_wgmma_without_local_memory(name, tmp_path):
    for build in get_kernel(name).configurations():
        compiled = build.compile("sm_90a")
        assert compiled.report.spills == 0 and compiled.report.stack_bytes == 0, build.params
        assert build.defines()["C_TRANSPOSED"] == 1 and build.defines()["EPI_TMA"] == 0
        if sass.AVAILABLE:
            ops = [i.op for i in sass.instructions(sass.sass(compiled.cubin, tmp_path))]
            width = build.inner.params["BN"]
            mma = "HGMMA" if "bf16" in name else "QGMMA"
            assert any(op.startswith(f"{mma}.64x{width}x") for op in ops), (width, sorted(set(ops))[:20])
            assert not any(op.startswith(("LDL", "STL")) for op in ops)
            # a stream-K partial counted on its tile's flag by one release add after the consumers' barrier, with
            # no sequentially consistent fence in every thread before it (tc_stream_k.cuh's sk_signal)
            assert "REDG.E.ADD.STRONG.GPU" in ops and "MEMBAR.SC.GPU" not in ops


@pytest.mark.parametrize("m, width, stages", [(1, 64, 8), (64, 64, 8), (65, 128, 6), (128, 128, 6)])
def test_tile_width_and_ring_follow_m(m, width, stages):
    spec = get_kernel(NAMES[0])
    build = spec.for_problem(Problem(m, 4096, 4096, "bf16"))
    assert (build.inner.params["BN"], build.inner.params["STAGES"]) == (width, stages)
    assert build.params["BN"] == width


def test_the_kernel_computes_the_transposed_product_across_every_sm():
    spec = get_kernel(NAMES[0])
    problem = Problem(16, 4096, 4096, "bf16")
    runs = spec.kernel_for(problem)
    assert problem.transposed().shape == (4096, 16, 4096)
    # 32 tiles of 128 weight rows, 64 k-tiles each: the stream-K walk splits every tile over 128 CTAs, 16 k-tiles
    # each (SK_MIN_KTILES)
    assert runs.params["STREAM_K"] == 1 and runs.stream_k_tiles(problem.transposed()) == 32
    assert spec.launch_geometry(problem).grid == (32 * 64 // 16, 1, 1)


def test_takes_few_rows_and_the_transposed_weight_only():
    spec = get_kernel(NAMES[0])
    assert spec.layouts == frozenset({Layout(b=COL)}) and "transpose" in spec.layout_refusal(ROW_MAJOR)
    assert spec.is_valid(Problem(128, 8, 8, "bf16")) is None
    assert spec.is_valid(Problem(129, 8, 8, "bf16")).error is ShapeError


def test_c_transposed_needs_the_register_epilogue():
    inner = get_kernel(NAMES[0]).inner
    with pytest.raises(InvalidConfigError, match="C_TRANSPOSED"):
        inner.with_params({"EPI_TMA": 1})


def test_fp8_formats_swap_with_the_operands():
    spec = get_kernel(NAMES[1]).for_formats("float8_e5m2", "float8_e4m3fn", "float32")
    assert spec.formats == ("float8_e5m2", "float8_e4m3fn")
    assert (spec.inner.params["A_E5M2"], spec.inner.params["B_E5M2"]) == (0, 1)  # the kernel's A is the call's B
    assert str(spec.output_dtype(Problem(1, 1, 1, "fp8"))) == "float32"


def test_plan_hands_the_kernel_the_weight_as_a_and_the_tokens_as_b(stub):  # noqa: F811
    stub.stub_reset()
    plan, gpu = make(stub, NAMES[0], (5, 4000, 1000), Layout(b=COL))
    x, w, c = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000
    plan.launch(x, w, c, stream=0x5EED)
    rec = launch_record(stub, 0)
    args = tc_args(rec.params)
    assert (args["M"], args["N"], args["K"], args["C"], args["c_tma"]) == (4000, 5, 1000, c, 0)
    assert args["a"][2] == w and list(args["a"][[3, 4]]) == [1000, 4000]  # w: N rows of K
    assert args["b"][2] == x and list(args["b"][[3, 4]]) == [1000, 5]  # x: M rows of K, read K-major
    # 32 tiles of 16 k-tiles: at 16 k-tiles a CTA (SK_MIN_KTILES) one CTA a tile, so no tile is split and the
    # whole-tile build runs, without a stream-K workspace
    assert args["sk_ws"] == 0 and rec.grid == (32, 1, 1) and rec.stream == 0x5EED
    assert plan.spec.name == NAMES[0] and plan.problem.shape == (5, 4000, 1000)


def test_fp8_plan_swaps_the_scales_too(stub):  # noqa: F811
    stub.stub_reset()
    plan, _ = make(stub, NAMES[1], (8, 4096, 4096), Layout(b=COL))
    sa, sb = 0x7300_0000_0000, 0x7300_0000_0040
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 0, sa, sb)
    args = tc_args(launch_record(stub, 0).params)
    assert (args["scale_a"], args["scale_b"]) == (sb, sa)
