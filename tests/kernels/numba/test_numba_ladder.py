"""The numba ladder (v3 onwards) verified on numba's CUDA simulator, with no GPU.

Each level runs its generated kernel text thread by thread in Python, through the harness's ``check`` (fresh
N(0,1) inputs, NaN-poisoned C, float64 NumPy reference). Shapes are ragged in every dimension and small, since
the simulator executes every thread in Python; some have K and N multiples of 4 so the 16-byte variant runs,
the others take the 4-byte variant. The last tests check what the generator refuses and what it emits.
"""
import pytest

from gemmlab.harness.verify import SIMULATOR_SHAPES, check
from gemmlab.kernels.registry import list_kernels
from gemmlab.problem import Problem

LEVELS = [s for s in list_kernels("numba/*") if s.level is not None and s.level >= 3]
# K % 4 == N % 4 == 0 takes the 16-byte path; ragged M and N, and K over several BK tiles and the cp.async ring
ALIGNED_SHAPES = ((36, 40, 12), (130, 132, 28))


def test_the_ladder_is_there():
    levels = sorted(s.level for s in LEVELS)
    assert levels == [3, 4, 5, 7, 8, 10]  # v10: v7 fed by register prefetch instead of v8's cp.async


@pytest.mark.parametrize("shape", SIMULATOR_SHAPES + ALIGNED_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("spec", LEVELS, ids=lambda s: s.short)
def test_level_matches_float64_reference(spec, shape):
    if shape == (130, 132, 28) and spec.level < 8:
        pytest.skip("the 4-block shape is kept for the pipelined level; it costs seconds per level")
    result = check(spec, Problem(*shape), seed=sum(shape))
    assert result.where == "simulator"
    assert result.passed, (result.status, result.reason, result.error)


def test_variant_choice_follows_alignment():
    from gemmlab.kernels.numba.codegen.level import vector_ok

    v8 = next(s for s in LEVELS if s.name == "numba/v8_cp_async")
    assert vector_ok(Problem(8, 8, 8)) and not vector_ok(Problem(8, 6, 8)) and not vector_ok(Problem(8, 8, 6))
    assert v8.variant(Problem(8, 8, 8)) is v8.kernel
    assert v8.variant(Problem(8, 6, 8)) is v8.scalar
    assert v8.variant(Problem(8, 8, 8), aligned=False) is v8.scalar


def test_invalid_tilings_are_refused_before_compiling():
    from gemmlab.errors import InvalidConfigError
    from gemmlab.kernels.numba.codegen.level import level
    from gemmlab.kernels.numba.codegen.tiling import Tiling

    assert "32 lanes" in "; ".join(Tiling(128, 128, 8, 64, 32, 2, 2, 8, 8).errors())
    assert any("48 KiB" in e for e in Tiling(128, 128, 32, 64, 32, 2, 2, 4, 4, STAGES=2).errors())
    with pytest.raises(InvalidConfigError):
        level("bad", 9, "bad", Tiling(128, 128, 8, 48, 32, 1, 1, 4, 4), "")


def test_generated_text_is_unrolled_with_scalar_accumulators():
    from gemmlab.kernels.numba.codegen.template import gemm_source
    from gemmlab.kernels.numba.codegen.tiling import Tiling

    t = Tiling(128, 128, 8, 64, 32, 2, 2, 4, 4, VEC=4, SVEC=True, APAD=4, STAGES=3, ASYNC=True)
    src = gemm_source("k", t, simulated=False)
    assert src.count("+= a") == 8 * 8 * 8  # BK × TM·WMITER × TN·WNITER multiply-adds, no loop
    assert "cuda.local.array" not in src and "lds4(" in src and "cp16(" in src
    assert "c_7_7 " in src
    t4 = Tiling(128, 128, 8, 16, 128, 1, 1, 8, 8, VEC=4, SVEC=True)
    index_src = gemm_source("k", t4, simulated=False, access="index")
    assert "lds4(" not in index_src and "ldg4(" not in index_src and "As[a_rd + 0 + 1]" in index_src
