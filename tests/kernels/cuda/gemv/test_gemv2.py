"""gemv2 without a GPU: every build compiles for sm_90a with no local memory and its mma.sync in the SASS, a round's
loads come before its first instruction, the per-problem choices (rows of x, unroll, warps) and the launch that
follows from them, the layouts and sizes it takes, and the permutation of K that lets a lane's 16-byte chunk feed
two k-steps' fragments (PTX's fragment layouts of m16n8k16 and m16n8k32, emulated in NumPy). Its results are checked
on the GPU (gemmlab verify, tests/test_api_gpu.py)."""
import numpy as np
import pytest

import sass
from gemv_layouts import assert_takes_only_w_t_and_at_most

from gemmlab.kernels.cuda.gemv import gemv2_mma_swap as gemv2
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem


def spec(precision):
    return get_kernel(f"cuda/gemv2_mma_swap_{precision}")


@pytest.mark.parametrize("precision", ["bf16", "fp16", "fp8", "fp8_block"])
def test_every_build_compiles_to_mma_without_local_memory(precision, tmp_path):
    for build in spec(precision).configurations():
        compiled = build.compile("sm_90a")
        assert compiled.report.spills == 0 and compiled.report.stack_bytes == 0, (build.params, compiled.report)
        if sass.AVAILABLE:
            ops = [i.op for i in sass.instructions(sass.sass(compiled.cubin, tmp_path))]
            assert not {op.split(".")[0] for op in ops} & {"LDL", "STL"}, build.params
            # the mainloop, unrolled: two k-steps a k-block, MAX_M / 8 instructions a k-step for each 16 of the
            # block's ROWS; sm_90 runs FP8's m16n8k32 as its operands converted to FP16 (F2FP, exact for E4M3 and
            # E5M2) and two m16n8k16 HMMAs
            p = build.params
            sixteen_bit = precision in ("bf16", "fp16")
            per_mma = 1 if sixteen_bit else 2
            instructions = 2 * p["UNROLL"] * p["MAX_M"] // 8 * p["ROWS"] // 16
            hmma = [op for op in ops if op.startswith("HMMA")]
            assert len(hmma) == per_mma * instructions
            # BF16's instruction names its operand type; FP16's (and FP8's, run as FP16) is the default
            assert all(op.endswith(".BF16") == (precision == "bf16") for op in hmma), set(hmma)
            assert (not sixteen_bit) == any(op.startswith("F2FP.F16.E") for op in ops)
            if precision == "fp8_block":  # each k-block's pair of instructions added into the sums: four FFMA
                assert sum(op.startswith("FFMA") for op in ops) >= 4 * instructions // 2


@pytest.mark.parametrize("a, b", [("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2")])
def test_each_fp8_format_pair_compiles_its_own_instruction(a, b, tmp_path):
    """The instruction's 16-row operand is the weight (B), its 8-wide one x (A): the formats go in that order, and
    each pair is its own binary."""
    from gemmlab.fp8 import E4M3, E5M2

    names = {"e4m3": E4M3, "e5m2": E5M2}
    build = spec("fp8").for_formats(names[a], names[b], "bfloat16").for_problem(Problem(8, 4096, 4096, "fp8"))
    assert (build.params["A_E5M2"], build.params["B_E5M2"]) == (int(a == "e5m2"), int(b == "e5m2"))
    compiled = build.compile("sm_90a")
    assert compiled.report.spills == 0 and compiled.cubin != spec("fp8").for_problem(
        Problem(8, 4096, 4096, "fp8")).compile("sm_90a").cubin
    if sass.AVAILABLE:
        ops = {i.op for i in sass.instructions(sass.sass(compiled.cubin, tmp_path))}
        assert {op for op in ops if op.startswith("F2FP.F16.")} == \
            {f"F2FP.F16.{f.upper()}.UNPACK_B" for f in {a, b}}


def test_the_registered_spec_compiles_as_it_is_and_older_gpus_are_refused():
    """gemmlab verify without a GPU compiles each registered spec as it is: gemv2's leaves UNROLL and WARPS to the
    problem (0) and compiles the many-blocks build at eight rows. mma.sync needs sm_80 for BF16, sm_89 for FP8."""
    import dataclasses

    from gemmlab.dispatch import shipped_gpu
    from gemmlab.harness.verify import compile_check

    assert (spec("bf16").params["UNROLL"], spec("bf16").params["WARPS"]) == (0, 0)
    assert {k: spec("bf16").defines()[k] for k in ("MAX_M", "UNROLL", "WARPS")} == {"MAX_M": 8, "UNROLL": 2,
                                                                                   "WARPS": 16}
    assert compile_check(spec("bf16")).spills == 0
    h200 = shipped_gpu()
    ada, ampere = dataclasses.replace(h200, cc=(8, 9)), dataclasses.replace(h200, cc=(8, 0))
    assert spec("bf16").unsupported(ampere) is None and spec("fp8").unsupported(ada) is None
    assert "sm_89" in spec("fp8").unsupported(ampere) and spec("fp8").unsupported(h200) is None
    assert "sm_80" in spec("bf16").unsupported(dataclasses.replace(h200, cc=(7, 5)))
    assert "FP16 mma.sync" in spec("fp16").unsupported(dataclasses.replace(h200, cc=(7, 5)))


@pytest.mark.parametrize("precision, m, rows", [("bf16", 8, 16), ("bf16", 32, 16), ("fp8", 16, 16), ("bf16", 32, 32),
                                                ("fp8", 32, 64), ("fp8", 8, 64), ("fp8_block", 8, 16),
                                                ("fp8_block", 32, 16)])
def test_a_round_loads_every_chunk_before_its_first_mma(precision, m, rows, tmp_path):
    """Loads of the weight and of x all in flight before any instruction waits on one: one DRAM round trip a round."""
    if not sass.AVAILABLE:
        pytest.skip("cuobjdump and nvdisasm are not installed (the test extra brings them)")
    build = spec(precision).with_params({"ROWS": rows}).for_problem(Problem(m, 4096, 4096, precision))
    instrs = sass.instructions(sass.sass(build.compile("sm_90a").cubin, tmp_path))
    wide = [i.addr for i in instrs if i.op.startswith("LDG") and ".128" in i.op]
    p = build.params
    # two rows of the weight for each 16 of the block's rows, and a row of x per 8 of M
    assert len(wide) == p["UNROLL"] * (2 * rows // 16 + p["MAX_M"] // 8)
    assert max(wide) < min(i.addr for i in instrs if i.op.startswith(("HMMA", "F2FP.F16")))


@pytest.mark.parametrize("m, want", [(1, 8), (8, 8), (9, 16), (17, 32), (32, 32)])
def test_instructions_cover_m(m, want):
    assert gemv2.max_m_for(m) == want


@pytest.mark.parametrize("shape, unroll, warps", [
    ((8, 4096, 4096), 2, 16),  # 256 blocks: two k-blocks a round, sixteen warps
    ((8, 14336, 4096), 2, 16),
    ((32, 4096, 14336), 1, 8),  # 32 rows of x: one k-block a round, eight warps
    ((4, 1024, 8192), 4, 16),  # 64 blocks, fewer than the SMs: four k-blocks a round
    ((32, 1024, 8192), 4, 16),  # two slices of 16 rows (128 blocks, fewer than the SMs): the 16-row build's
    ((3, 17, 33), 4, 1),  # two k-blocks in all: one warp
])
def test_unroll_and_warps_by_problem(shape, unroll, warps):
    build = spec("bf16").for_problem(Problem(*shape, "bf16"), 132)
    assert (build.params["UNROLL"], build.params["WARPS"]) == (unroll, warps)


@pytest.mark.parametrize("rows, shape, unroll, warps", [
    (32, (8, 4096, 4096), 4, 16),  # 128 blocks, fewer than the SMs: four k-blocks, 20 chunks a round
    (64, (16, 14336, 4096), 2, 8),  # 224 blocks; 16 x 64 accumulators a warp's lanes hold: eight warps
    (64, (32, 4096, 4096), 1, 4),  # two k-blocks would be 24 chunks: one; 32 x 64 sums a warp fit six warps: four
    (32, (32, 4160, 64), 2, 1),  # 130 blocks (N cut inside the last); two k-blocks in all: one warp
])
def test_a_variant_s_rows_set_the_grid_and_cap_unroll_and_warps(rows, shape, unroll, warps):
    """ROWS pinned (a variant): ceil(N / ROWS) blocks, a round's chunks at most MAX_CHUNKS, the warps' sums within
    static shared memory; the build compiles with no local memory."""
    problem = Problem(*shape, "bf16")
    build = spec("bf16").with_params({"ROWS": rows, "M_SLICE": 0}).for_problem(problem, 132)  # one block a run
    p = build.params
    assert (p["ROWS"], p["UNROLL"], p["WARPS"]) == (rows, unroll, warps)
    assert p["UNROLL"] * (2 * rows // 16 + p["MAX_M"] // 8) <= gemv2.MAX_CHUNKS
    assert 4 * p["WARPS"] * p["MAX_M"] * rows <= gemv2.PARTIAL_BYTES
    assert build.geometry_of_build(problem).grid == (-(-shape[1] // rows), 1, 1)
    report = build.compile("sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0


@pytest.mark.parametrize("m, m_slice, max_m, blocks", [(32, 16, 16, 512), (17, 16, 16, 512), (32, 8, 8, 1024),
                                                       (16, 16, 16, 256), (9, 16, 16, 256), (32, 0, 32, 256)])
def test_m_slice_builds_for_fewer_rows_of_x_and_launches_a_block_per_slice(m, m_slice, max_m, blocks):
    """M_SLICE (a variant): a build for at most M_SLICE rows of x, ceil(M / MAX_M) blocks on each 16 rows of the
    weight; the weight crosses L2 once a slice (the traffic), x's rows once a block as before."""
    problem = Problem(m, 4096, 4096, "bf16")
    build = spec("bf16").with_params({"M_SLICE": m_slice}).for_problem(problem, 132)
    assert build.params["MAX_M"] == max_m
    assert build.geometry_of_build(problem).grid == (blocks, 1, 1)
    slices = blocks // 256
    traffic = build.traffic(problem)
    assert traffic.l2_read == 2 * (m * 4096 * 256 + 4096 * 4096 * slices)


@pytest.mark.parametrize("m, n, m_slice, blocks", [(16, 1024, 8, 128), (9, 1024, 8, 128), (8, 1024, 0, 64),
                                                   (32, 1024, 16, 128), (17, 255, 16, 32), (16, 1056, 8, 132),
                                                   (16, 1057, 0, 67), (16, 4096, 0, 256), (1, 16, 0, 1)])
def test_the_registered_build_slices_x_where_the_weights_rows_leave_half_the_sms_idle(m, n, m_slice, blocks):
    """M_SLICE left to the problem by the spec (AUTO_SLICE): past 8 rows of x, on a weight whose runs of 16 rows are
    at most half the SMs, two blocks a run, each half of x's rows in the smallest build that holds them; elsewhere
    one block a run, as a variant's M_SLICE=0 everywhere; the registered spec compiled as it is runs no slices."""
    problem = Problem(m, n, 4096, "bf16")
    build = spec("bf16").for_problem(problem, 132)
    assert gemv2.slice_for(m, n, 132) == build.params["M_SLICE"] == m_slice
    assert build.params["MAX_M"] == (m_slice or gemv2.max_m_for(m))
    assert build.geometry_of_build(problem).grid == (blocks, 1, 1)
    assert build.compile("sm_90a").report.spills == 0
    unsliced = spec("bf16").with_params({"M_SLICE": 0}).for_problem(problem, 132)
    assert unsliced.params["M_SLICE"] == 0 and unsliced.params["MAX_M"] == gemv2.max_m_for(m)
    assert spec("bf16").params["M_SLICE"] == gemv2.AUTO_SLICE and spec("bf16").defines()["M_SLICE"] == 0


def test_a_variant_pins_unroll_and_warps():
    import dataclasses

    pinned = dataclasses.replace(spec("bf16"), params={**spec("bf16").params, "UNROLL": 8, "WARPS": 2})
    assert {k: pinned.for_problem(Problem(8, 4096, 4096, "bf16")).params[k] for k in ("UNROLL", "WARPS")} == \
        {"UNROLL": 8, "WARPS": 2}


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 4097, 17), (32, 14336, 4096), (8, 1000, 129), (32, 4160, 64)])
def test_launch_covers_every_column(shape):
    problem = Problem(*shape, "bf16")
    geo = spec("bf16").launch_geometry(problem)
    build = spec("bf16").for_problem(problem)
    rows = build.params["ROWS"]
    assert geo.grid[0] * rows >= problem.n > (geo.grid[0] - 1) * rows
    assert geo.block == (32 * build.params["WARPS"], 1, 1)


def test_takes_only_the_transposed_weight_and_few_rows():
    s = spec("bf16")
    assert_takes_only_w_t_and_at_most(s, 32)
    assert "32 rows" in s.is_valid(Problem(33, 64, 64, "bf16"))


@pytest.mark.parametrize("per_reg", [2, 4])  # BF16 m16n8k16, FP8 m16n8k32
def test_a_lanes_chunk_feeds_two_k_steps_with_k_permuted_alike_on_both_operands(per_reg):
    """PTX's fragments of mma.sync (row.col): lane (g = lane / 4, q = lane % 4) holds, of the 16-row operand, rows g
    and g + 8 at k = q·p .. q·p + p - 1 (registers 0, 1) and those + 4p (registers 2, 3); of the 8-column operand,
    column g at the same k (registers 0, 1); p elements a 32-bit register. The kernel gives lane q the chunk of
    elements [4p·q, 4p·q + 4p) of its rows and feeds words x, y to the first k-step and z, w to the second: both
    operands see the same permutation of the k-block's 16p elements, so the product is the block's dot products."""
    rng = np.random.default_rng(0)
    kb = 16 * per_reg
    w = rng.integers(-8, 8, (16, kb))  # 16 rows of the weight, one k-block
    x = rng.integers(-8, 8, (8, kb))  # 8 rows of x
    d = np.zeros((16, 8), dtype=np.int64)
    for step in range(2):
        a_op = np.full((16, 8 * per_reg), -999)  # the instruction's operands, as the lanes' registers fill them
        b_op = np.full((8 * per_reg, 8), -999)
        for lane in range(32):
            g, q = divmod(lane, 4)

            def word(row, i):  # the lane's chunk of `row` (a 16-byte load), its 32-bit word i
                chunk = row[4 * per_reg * q: 4 * per_reg * (q + 1)]
                return chunk[per_reg * i: per_reg * (i + 1)]

            lo, hi, xr = w[g], w[g + 8], x[g]
            first, second = 2 * step, 2 * step + 1  # words x, y then z, w
            cols = slice(q * per_reg, (q + 1) * per_reg)
            cols_hi = slice(q * per_reg + 4 * per_reg, (q + 1) * per_reg + 4 * per_reg)
            a_op[g, cols], a_op[g + 8, cols] = word(lo, first), word(hi, first)
            a_op[g, cols_hi], a_op[g + 8, cols_hi] = word(lo, second), word(hi, second)
            b_op[cols, g], b_op[cols_hi, g] = word(xr, first), word(xr, second)
        assert (a_op != -999).all() and (b_op != -999).all()  # every element of both operands filled once
        d += a_op @ b_op
    np.testing.assert_array_equal(d, w @ x.T)
    # the accumulators as the lanes hold them (c0, c1: row g, columns 2q, 2q + 1; c2, c3: row g + 8), stored as the
    # kernel stores them, partial[m = 2q + (i & 1)][r = g + 8 (i >> 1)] for the first 8 rows of x: C's rows and columns
    partial = np.full((8, 16), -999)
    for lane in range(32):
        g, q = divmod(lane, 4)
        held = [d[g, 2 * q], d[g, 2 * q + 1], d[g + 8, 2 * q], d[g + 8, 2 * q + 1]]
        for i, value in enumerate(held):
            partial[2 * q + (i & 1), g + 8 * (i >> 1)] = value
    np.testing.assert_array_equal(partial, x @ w.T)
