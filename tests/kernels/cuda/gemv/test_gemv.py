"""gemv1 without a GPU: every build compiles for sm_90a with no local memory, the per-problem choices (accumulator
rows, weight rows per block, warps, unroll) and the launch that follows from them, the layouts and sizes it takes,
its traffic model. Its results are checked on the GPU (gemmlab verify, tests/test_api_gpu.py)."""
import pytest

import sass
from gemv_layouts import assert_takes_only_w_t_and_at_most

from gemmlab.errors import DTypeError, ShapeError
from gemmlab.fp8 import E4M3, E5M2
from gemmlab.kernels.cuda.gemv import gemv1_warp_dot as gemv
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp8_block")


def spec(precision):
    return get_kernel(f"cuda/gemv1_warp_dot_{precision}")


@pytest.mark.parametrize("precision", PRECISIONS)
def test_every_build_compiles_without_local_memory(precision, tmp_path):
    for build in spec(precision).configurations():
        report = build.compile("sm_90a").report
        assert report.spills == 0 and report.stack_bytes == 0, (build.params, report)
        if sass.AVAILABLE:
            ops = {i.op.split(".")[0] for i in sass.instructions(sass.sass(build.compile("sm_90a").cubin, tmp_path))}
            assert not ops & {"LDL", "STL"}, build.params
            assert "SHFL" in ops, "the lanes' partial sums meet by shuffles"


def test_the_sass_reads_the_weight_in_16_byte_loads(tmp_path):
    if not sass.AVAILABLE:
        pytest.skip("cuobjdump and nvdisasm are not installed (the test extra brings them)")
    build = spec("bf16").for_problem(Problem(2, 4096, 4096, "bf16"))
    ops = [i.op for i in sass.instructions(sass.sass(build.compile("sm_90a").cubin, tmp_path))]
    # UNROLL rounds of the ROWS rows of w and of the M rows of x, 16 bytes a lane each
    p = build.params
    assert sum(op.startswith("LDG") and ".128" in op for op in ops) == p["UNROLL"] * (p["ROWS"] + p["MAX_M"])


@pytest.mark.parametrize("precision, m", [("bf16", 2), ("bf16", 8), ("fp16", 8), ("fp8", 4), ("fp8_block", 8)])
def test_a_round_loads_a_and_b_before_its_first_fma(precision, m, tmp_path):
    """The rows of A are loaded with the weight's, not each after the previous row's FMAs: at K = 4096 a lane's share
    is one round, and a load of A between FMAs would put an L2 round trip per row of A on every lane's path."""
    if not sass.AVAILABLE:
        pytest.skip("cuobjdump and nvdisasm are not installed (the test extra brings them)")
    build = spec(precision).for_problem(Problem(m, 4096, 4096, precision))
    instrs = sass.instructions(sass.sass(build.compile("sm_90a").cubin, tmp_path))
    wide = [i.addr for i in instrs if i.op.startswith("LDG") and ".128" in i.op]
    first_fma = min(i.addr for i in instrs if i.op.startswith("FFMA"))
    p = build.params
    assert len(wide) == p["UNROLL"] * (p["ROWS"] + p["MAX_M"]) and max(wide) < first_fma


@pytest.mark.parametrize("m, want", [(1, 1), (2, 2), (3, 4), (5, 8), (8, 8), (9, 16), (16, 16), (2048, 16)])
def test_accumulator_rows_hold_m(m, want):
    assert gemv.max_m_for(m) == want  # past 16, the largest build: is_valid refuses the problem
    assert spec("bf16").for_problem(Problem(m, 4096, 4096, "bf16")).params["MAX_M"] == want


@pytest.mark.parametrize("n, rows", [(14336, 4), (4096, 4), (2112, 4), (2108, 2), (1056, 2), (1024, 1), (17, 1)])
def test_weight_rows_per_block_keep_four_blocks_per_sm(n, rows):
    assert gemv.rows_for(n, 132) == rows
    blocks = -(-n // rows)
    assert rows == 1 or blocks >= gemv.MIN_BLOCKS_PER_SM * 132


@pytest.mark.parametrize("k, vec, unroll, warps", [(4096, 8, 2, 8), (4096, 16, 2, 4), (200, 8, 2, 1),
                                                   (1, 4, 1, 1), (14336, 4, 1, 8), (1024, 8, 1, 4)])
def test_warps_split_k_into_whole_rounds(k, vec, unroll, warps):
    assert gemv.warps_for(k, vec, unroll) == warps


def test_unroll_leaves_registers_for_accumulators():
    assert [gemv.unroll_for(m) for m in gemv.MAX_M_CHOICES] == [2, 2, 2, 1, 1]


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 4097, 17), (16, 14336, 4096), (8, 1000, 129)])
def test_launch_covers_every_column(shape):
    problem = Problem(*shape, "bf16")
    build = spec("bf16").for_problem(problem)
    geo = spec("bf16").launch_geometry(problem)
    assert geo.grid[0] * build.params["ROWS"] >= problem.n > (geo.grid[0] - 1) * build.params["ROWS"]
    assert geo.block == (32 * build.params["WARPS"], 1, 1)
    assert build.params["MAX_M"] * build.params["ROWS"] <= 128  # the closing sums: at most four rounds of a warp


def test_takes_only_the_transposed_weight_and_few_rows():
    s = spec("bf16")
    assert_takes_only_w_t_and_at_most(s, 16)
    assert s.is_valid(Problem(1, 64, 64, "fp32")).error is DTypeError


def test_tf32_runs_fp32_products_and_auto_may_pick_it():
    s = spec("tf32")
    assert s.params["IN_FP32"] == 1 and s.auto_refusal() == ""


def test_fp8_formats_and_output_types_are_their_own_builds():
    s = spec("fp8")
    assert str(s.output_dtype(Problem(1, 1, 1, "fp8"))) == "bfloat16"
    b = s.for_formats(E5M2, E4M3, "float32")
    assert (b.params["A_E5M2"], b.params["B_E5M2"], b.params["OUT_BF16"]) == (1, 0, 0)
    assert str(b.output_dtype(Problem(1, 1, 1, "fp8"))) == "float32"
    with pytest.raises(DTypeError):
        s.for_formats("float16", E4M3, "bfloat16")


def test_make_inputs_hand_b_over_as_the_weights_transpose():
    a, b = spec("fp32").make_inputs(Problem(3, 5, 7, "fp32"), seed=1)
    assert a.shape == (3, 7) and b.shape == (7, 5) and b.T.flags.c_contiguous


def test_traffic_reads_the_weight_once_and_a_per_block():
    problem = Problem(4, 4096, 8192, "bf16")
    t = spec("bf16").traffic(problem)
    a, w = 2 * 4 * 8192, 2 * 4096 * 8192
    assert t.global_read == a + w and t.global_write == 2 * 4 * 4096  # BF16 C by default (torch's rule; was FP32's 4)
    assert t.l2_read == a * (4096 // 4) + w


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16", "fp16"])
@pytest.mark.parametrize("m", [2, 17, 4096])
def test_a_vector_b_runs_as_its_transpose_against_a_as_the_weight(precision, m):
    """N = 1: Cᵀ = bᵀ·Aᵀ, one row of accumulators against A's M rows, whatever M; the layout it reads is A
    row-major and the vector b, which is either major."""
    s, problem = spec(precision), Problem(m, 1, 4096, precision)
    assert gemv.swaps(problem) and gemv.runs_as(problem).shape == (1, m, 4096)
    assert s.is_valid(problem) is None
    build = s.for_problem(problem)
    assert build.params["MAX_M"] == 1 and build.params["ROWS"] == gemv.rows_for(m)
    assert s.launch_geometry(problem).grid[0] * build.params["ROWS"] >= m
    t = s.traffic(problem)
    assert t.global_read == problem.prec.input_bytes * (4096 + m * 4096)


def test_fp8_vectors_do_not_swap_and_few_rows_do_not_either():
    assert not gemv.swaps(Problem(4096, 1, 4096, "fp8_block"))  # block scales are not symmetric in A and B
    assert spec("fp8_block").is_valid(Problem(4096, 1, 4096, "fp8_block")).error is ShapeError
    assert not gemv.swaps(Problem(1, 1, 64, "fp32")) and not gemv.swaps(Problem(16, 2, 64, "fp32"))
