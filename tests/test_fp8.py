"""FP8 operands on the host: quantization with amax scaling (per tensor, per 1×128, per 128×128), the scale layouts
the kernels index, round trips, the reference and the measures FP8 kernels are judged by; on a GPU, its rounding
(cvt.rn.satfinite) bit for bit the host's (ml_dtypes')."""
import ml_dtypes
import numpy as np
import pytest

from gemmlab import fp8
from gemmlab.harness.reference import RECIPE_MIN_OUTPUTS, compare, reference, tolerance_for
from gemmlab.problem import Problem

rng = np.random.default_rng(17)


def _bound(x, scale, fmt):
    """Half a unit in the last place of x / scale in ``fmt``, times scale: what rounding to nearest may lose."""
    mant = {fp8.E4M3: 3, fp8.E5M2: 2}[fmt]
    tiny = {fp8.E4M3: 2.0 ** -6, fp8.E5M2: 2.0 ** -14}[fmt]  # smallest normal: below it, subnormal spacing
    y = np.abs(x / scale)
    ulp = 2.0 ** (np.floor(np.log2(np.maximum(y, tiny))) - mant)
    return ulp / 2 * scale


@pytest.mark.parametrize("fmt", [fp8.E4M3, fp8.E5M2])
def test_per_tensor_scale_puts_the_amax_on_the_largest_value(fmt):
    x = rng.standard_normal((37, 300)).astype(np.float32) * 3
    q = fp8.quantize(x, fmt)
    assert q.scale.shape == (1,) and q.scale.dtype == np.float32 and q.data.dtype == np.uint8
    assert q.scale[0] == np.float32(np.abs(x).max() / fp8.FP8_MAX[fmt])
    values = fp8.from_bits(q.data, fmt)
    assert np.abs(values).max() == fp8.FP8_MAX[fmt]  # the amax element lands exactly on the format's largest
    deq = q.dequantize()
    assert deq.dtype == np.float64 and np.all(np.abs(deq - x) <= _bound(x, q.scale[0], fmt) * (1 + 1e-6))


def test_bits_are_the_formats_own_and_decode_exactly():
    for fmt in (fp8.E4M3, fp8.E5M2):
        codes = np.arange(256, dtype=np.uint8)
        values = codes.view(ml_dtypes.float8_e4m3fn if fmt == fp8.E4M3 else ml_dtypes.float8_e5m2)
        table = fp8.decode_table(fmt)
        finite = np.isfinite(table)
        np.testing.assert_array_equal(table[finite], values.astype(np.float64)[finite])
        # every finite code survives a round trip through float32
        np.testing.assert_array_equal(fp8.to_bits(table[finite].astype(np.float32), fmt), codes[finite])
    # round to nearest even: halfway between 1 and 1.125 in e4m3 goes to 1 (even), 1.0625 + a bit goes up
    halfway = np.array([1.0625, 1.0626, 1.1875], np.float32)
    np.testing.assert_array_equal(fp8.from_bits(fp8.to_bits(halfway)), [1.0, 1.125, 1.25])


@pytest.mark.parametrize("m,k", [(1, 1), (5, 128), (9, 129), (130, 1000), (64, 256)])
def test_rows_1x128_scale_layout_is_m_major(m, k):
    x = rng.standard_normal((m, k)).astype(np.float32)
    q = fp8.quantize(x, block=fp8.ROWS_1X128)
    kb = -(-k // 128)
    assert q.scale.shape == (kb, m) == fp8.scale_shape(fp8.ROWS_1X128, m, k) and q.scale.flags.c_contiguous
    assert q.data.shape == (m, k) and q.data.flags.c_contiguous
    for j in range(kb):
        block = x[:, 128 * j:128 * (j + 1)]
        np.testing.assert_array_equal(q.scale[j], (np.abs(block).max(axis=1) / 448).astype(np.float32))
    expanded = q.scale_matrix()
    for i, c in [(0, 0), (m - 1, k - 1), (m // 2, min(k - 1, 200))]:
        assert expanded[i, c] == q.scale[c // 128, i]
    deq = q.dequantize()
    assert np.all(np.abs(deq - x) <= _bound(x, expanded, fp8.E4M3) * (1 + 1e-6))


@pytest.mark.parametrize("n,k", [(1, 1), (128, 128), (129, 300), (300, 129), (17, 1000)])
def test_blocks_128x128_scale_layout(n, k):
    x = rng.standard_normal((n, k)).astype(np.float32)
    q = fp8.quantize(x, block=fp8.BLOCKS_128X128)
    nb, kb = -(-n // 128), -(-k // 128)
    assert q.scale.shape == (nb, kb) == fp8.scale_shape(fp8.BLOCKS_128X128, n, k)
    for i in range(nb):
        for j in range(kb):
            block = x[128 * i:128 * (i + 1), 128 * j:128 * (j + 1)]
            assert q.scale[i, j] == np.float32(np.abs(block).max() / 448)
    expanded = q.scale_matrix()
    assert expanded[n - 1, k - 1] == q.scale[nb - 1, kb - 1] and expanded[0, 0] == q.scale[0, 0]
    assert np.all(np.abs(q.dequantize() - x) <= _bound(x, expanded, fp8.E4M3) * (1 + 1e-6))


def test_an_all_zero_block_gets_scale_one_and_zero_data():
    x = np.zeros((3, 256), np.float32)
    x[:, 128:] = rng.standard_normal((3, 128))
    q = fp8.quantize(x, block=fp8.ROWS_1X128)
    assert np.all(q.scale[0] == 1) and not q.data[:, :128].any()
    assert np.array_equal(fp8.quantize(np.zeros((2, 2), np.float32)).scale, [1.0])


def test_source_kept_only_when_asked():
    x = rng.standard_normal((4, 4)).astype(np.float32)
    assert fp8.quantize(x).source is None
    assert fp8.quantize(x, keep_source=True).source is not None
    with pytest.raises(ValueError, match="block"):
        fp8.quantize(x, block="2x2")


def test_recipe_diff():
    x = rng.standard_normal((64, 64))
    assert fp8.recipe_diff(x, x) == pytest.approx(0, abs=1e-15)
    y = x * (1 + 1e-2 * rng.standard_normal(x.shape))
    rel = np.linalg.norm(x - y) / np.linalg.norm(x)
    assert fp8.recipe_diff(x, y) == pytest.approx(rel ** 2 / 2, rel=0.05)
    assert fp8.recipe_diff(np.zeros(3), np.zeros(3)) == 0


# ---- the precisions' inputs and their judges -----------------------------------------------------------------
def test_fp8_inputs_are_k_major_scaled_operands():
    a, b = Problem(33, 17, 300, "fp8").make_inputs(3)
    assert (a.shape, b.shape) == ((33, 300), (17, 300)) and a.block is None and b.block is None
    assert a.fmt == b.fmt == fp8.E4M3 and a.source is None
    a2, _ = Problem(33, 17, 300, "fp8").make_inputs(3)
    np.testing.assert_array_equal(a.data, a2.data)  # seeded
    a, b = Problem(33, 17, 300, "fp8_block").make_inputs(3, formats=(fp8.E5M2, fp8.E4M3))
    assert a.block == fp8.ROWS_1X128 and b.block == fp8.BLOCKS_128X128 and a.fmt == fp8.E5M2
    assert a.scale.shape == (3, 33) and b.scale.shape == (1, 3) and a.source.shape == (33, 300)
    p = Problem(64, 64, 64, "fp8")
    assert p.compulsory_bytes() == 64 * 64 * 2 + 2 * 64 * 64 and p.prec.kmajor_b


def test_the_fp8_reference_is_the_dequantized_product():
    a, b = Problem(40, 24, 200, "fp8").make_inputs(1)
    ref = reference(a, b)
    np.testing.assert_array_equal(ref.exact, a.dequantize() @ b.dequantize().T)
    assert ref.recipe is None
    c = ref.exact.astype(np.float32).astype(ml_dtypes.bfloat16)  # what a correct kernel writes: BF16 rounding
    good = compare(c, ref, tolerance_for(Problem(40, 24, 200, "fp8")))
    assert good.passed and 5e-4 < good.rel_err < 3e-3 and good.recipe_err is None
    wrong = (ref.exact * 1.05).astype(np.float32)  # a scale off by 5%
    assert not compare(wrong, ref, 1e-2).passed
    poisoned = c.astype(np.float32)
    poisoned[3, 7] = np.nan
    assert not compare(poisoned, ref, 1e-2).passed


def test_block_scaling_meets_deepgemms_bound_on_normal_inputs():
    """The recipe itself on N(0,1): the dequantized product against the unquantized one, what an exact kernel
    would score (about 7e-4 for e4m3's 3 mantissa bits), under DeepGEMM's 1e-3."""
    p = Problem(128, 256, 1024, "fp8_block")
    a, b = p.make_inputs(5)
    ref = reference(a, b)
    c = ref.exact.astype(np.float32).astype(ml_dtypes.bfloat16)
    err = compare(c, ref, tolerance_for(p), p.prec.recipe_tolerance)
    assert err.passed and 5e-4 < err.recipe_err < 9e-4 and err.recipe_tolerance == 1e-3
    # the unquantized product itself misses the dequantized reference by the quantization error: it fails there
    assert not compare(ref.recipe.astype(np.float32), ref, tolerance_for(p), p.prec.recipe_tolerance).passed


def test_the_recipe_measure_judges_only_outputs_large_enough_to_be_a_statistic():
    p = Problem(3, 5, 300, "fp8_block")
    a, b = p.make_inputs(2)
    ref = reference(a, b)
    assert 15 < RECIPE_MIN_OUTPUTS
    err = compare(ref.exact.astype(np.float32), ref, tolerance_for(p), p.prec.recipe_tolerance)
    assert err.passed and err.recipe_err is None


def test_fp8_tolerances_grow_as_their_errors_do():
    assert tolerance_for(Problem(8, 8, 16384, "fp8")) == pytest.approx(2e-2)  # like sqrt(K), as measured
    # a split-K product that lost one of 64 partials errs about sqrt(1/64) relative: refused at the longest K
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((64, 65536)), rng.standard_normal((65536, 64))
    lost = np.linalg.norm(a[:, :1024] @ b[:1024]) / np.linalg.norm(a @ b)
    assert lost > 2 * tolerance_for(Problem(64, 64, 65536, "fp8"))
    assert tolerance_for(Problem(8, 8, 16384, "fp8_block")) == pytest.approx(1e-2)  # promoted: BF16 output only
    # BF16's error is C's rounding at any K: a flat tolerance refuses the product missing one 64-wide k-tile of
    # 65536 (about 3.1e-2), which one grown like sqrt(K) (4e-2) passed
    assert tolerance_for(Problem(8, 8, 16384, "bf16")) == pytest.approx(1e-2)
    missing = np.linalg.norm(a[:, :64] @ b[:64]) / np.linalg.norm(a @ b)
    assert missing > 2 * tolerance_for(Problem(64, 64, 65536, "bf16"))


@pytest.mark.parametrize("fmt", [fp8.E4M3, fp8.E5M2])
def test_gpu_rounding_is_the_hosts_bit_for_bit(fmt):
    from gemmlab import device

    if device.gpu() is None:
        pytest.skip("needs a CUDA GPU")
    cupy = pytest.importorskip("cupy")
    x = np.concatenate([np.random.default_rng(1).standard_normal(1 << 20).astype(np.float32) * 100,
                        np.float32([0, -0.0, 1.0625, 1.1875, 2 ** -9, 2 ** -10, 447.9, 448, 57344])])
    x = np.clip(x, -fp8.FP8_MAX[fmt], fp8.FP8_MAX[fmt])
    assert np.array_equal(cupy.asnumpy(fp8.to_bits(cupy.asarray(x), fmt)), fp8.to_bits(x, fmt))
