"""The Gluon levels on a GPU (skipped without one, or without the Triton they are written for): against float64 on
ragged shapes, into NaN-poisoned C (gemmlab.harness.verify.check), in both C types, tc4 at both its tile widths; a
shape TMA cannot take is refused by name before anything launches, and a base address off 16 bytes at launch; tc8
(block-scaled FP8) on operands whose scale blocks span orders of magnitude, so that a scale read from the wrong
block shows."""
import pytest

from gemmlab.errors import LayoutError
from gemmlab.kernels.gluon.launch import kernel as gluon_kernel
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

NAMES = ["gluon/tc2_wgmma_tma_bf16", "gluon/tc3_warp_specialized_bf16", "gluon/tc4_persistent_bf16",
         "gluon/tc4_persistent_fp8", "gluon/tc8_block_scaled_fp8"]


def _shapes(k_step: int):
    """M takes any value (TMA zero-fills the rows past it and clips them from the store); N and K keep rows 16 bytes
    long (K a multiple of ``k_step``: 8 BF16, 16 FP8 elements) and fall across the tiles' edges: N past a 128- and a
    256-wide tile, K short of one k-tile, a k-tile and a bit, and more k-tiles than the ring has slots; the last
    shape has more tiles than the SMs, which a persistent level walks in groups. (tc8's 192-row tiles: 4097 rows leave
    its last tile one row for the second warpgroup and none for the third; 136 and 264 columns reach a second and a
    third block of B's scales, and K = 4096 + 16 a last k-block of 16.)"""
    nk = ((8, k_step), (136, 64 + k_step), (264, 4096 + k_step))
    return [(m, n, k) for m in (1, 17, 127, 4097) for n, k in nk] + [(4097, 4104, 512 + k_step), (256, 256, 4096),
                                                                      (8192, 8192, 128)]


CASES = [pytest.param(name, shape, id=f"{name.split('/')[1]}-{'x'.join(map(str, shape))}") for name in NAMES
         for shape in _shapes(16 if name.endswith("fp8") else 8)]


def _needs_gpu():
    from gemmlab import device

    if device.gpu() is None:
        pytest.skip("needs a CUDA GPU")
    why = gluon_kernel.triton_refusal("the Gluon levels")
    if why:
        pytest.skip(str(why))


@pytest.mark.parametrize("out", ["bfloat16", "float32"])
@pytest.mark.parametrize("name, shape", CASES)
def test_right_on_ragged_shapes(name, shape, out):
    from gemmlab.harness.verify import check

    _needs_gpu()
    base = get_kernel(name)
    spec = base.for_formats(base.prec.input_dtype, base.prec.input_dtype, out)
    result = check(spec, Problem(*shape, spec.precision), seed=1)
    assert result.passed, result


@pytest.mark.parametrize("out", ["bfloat16", "float32"])
@pytest.mark.parametrize("name", [n for n in NAMES if "NARROW_BN" in get_kernel(n).params])
@pytest.mark.parametrize("m, n", [(2047, 3064), (2048, 3000)])
def test_the_narrow_tile_right_on_a_ragged_shape(name, m, n, out):
    """tc4's 192-wide build, which runs the seed shape's neighbours: N and K no multiple of the tile or the k-tile
    (N = 15 tiles and 184 columns, the last tile's right part cut at N, or 120 columns, its left part cut and its
    right part wholly past N; K 16 bytes more than 4096), M ragged or whole. Asserts the rule picks the narrow
    tile, so that the test cannot pass on the wide build alone should the rule change."""
    from gemmlab import device
    from gemmlab.harness.verify import check

    _needs_gpu()
    base = get_kernel(name)
    spec = base.for_formats(base.prec.input_dtype, base.prec.input_dtype, out)
    problem = Problem(m, n, 4096 + 16 // spec.prec.input_bytes, spec.precision)
    runs = spec.for_problem(problem, device.gpu().sm_count)
    assert runs.params["BN"] == spec.params["NARROW_BN"] == 192
    result = check(spec, problem, seed=1)
    assert result.passed, result


@pytest.mark.parametrize("name", NAMES)
def test_shapes_tma_cannot_take_are_refused(name):
    from gemmlab.harness.verify import check

    _needs_gpu()
    spec = get_kernel(name)
    for shape in [(17, 17, 64), (17, 64, 127), (4097, 4097, 4097)]:
        result = check(spec, Problem(*shape, spec.precision))
        assert result.error is None and "16 bytes" in result.reason
        with pytest.raises(LayoutError, match="16 bytes"):
            spec.plan(Problem(*shape, spec.precision))


@pytest.mark.parametrize("name", NAMES)
def test_a_misaligned_base_is_refused_at_launch(name):
    import cupy

    _needs_gpu()
    spec = get_kernel(name)
    problem = Problem(64, 64, 64, spec.precision)
    plan = spec.plan(problem)
    a, b = (cupy.zeros(64 * 64, "uint16") for _ in "ab")
    c = cupy.empty(64 * 64 + 8, spec.output_dtype(problem))
    scales = [cupy.ones(1, "float32").data.ptr for _ in spec.scale_args()]
    with pytest.raises(LayoutError, match="16-byte aligned; C starts at"):
        plan.launch(a.data.ptr, b.data.ptr, c.data.ptr + 2, 0, *scales)


@pytest.mark.parametrize("out", ["bfloat16", "float32"])
@pytest.mark.parametrize("name", [n for n in NAMES if get_kernel(n).prec.block_scaled])
def test_block_scales_spanning_orders_of_magnitude(name, out):
    """A's 1x128 blocks and B's 128x128 blocks drawn at magnitudes 2^-4 to 2^4 each (and quantized, so each block's
    scale differs by that much): a scale of the wrong row, k-block or column block moves C's products by up to 2^8,
    far past the tolerance. Ragged M, N and K, two tiles of rows and three of columns."""
    import cupy

    from gemmlab import fp8
    from gemmlab.harness.verify import check

    _needs_gpu()
    base = get_kernel(name)
    spec = base.for_formats(base.prec.input_dtype, base.prec.input_dtype, out)
    m, n, k = 300, 264, 5 * 128 + 16
    rng = cupy.random.default_rng(3)
    kb, nb = -(-k // 128), -(-n // 128)

    def blocks(shape):
        return cupy.kron(2.0 ** rng.integers(-4, 5, shape), cupy.ones((1, 128)))

    a = rng.standard_normal((m, k), dtype=cupy.float32) * blocks((m, kb))[:, :k]
    b = rng.standard_normal((n, k), dtype=cupy.float32) * cupy.kron(blocks((nb, kb)), cupy.ones((128, 1)))[:n, :k]
    inputs = (fp8.quantize(a, fp8.E4M3, fp8.ROWS_1X128), fp8.quantize(b, fp8.E4M3, fp8.BLOCKS_128X128))
    spread = [float(op.scale.max() / op.scale.min()) for op in inputs]
    assert min(spread) > 2 ** 6
    result = check(spec, Problem(m, n, k, spec.precision), inputs=inputs)
    assert result.passed, result


@pytest.mark.parametrize("change", [{"BM": 128, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232}, {"BN": 64}],
                         ids=["two-partitions", "bn64"])
@pytest.mark.parametrize("shape", [(4097, 264, 4112), (17, 136, 80)], ids=lambda s: "x".join(map(str, s)))
def test_tc8_variants_right_on_ragged_shapes(change, shape):
    """tc8's variants (bench --variant): two consumer partitions, the device code's other warp_specialize, and a
    64-wide tile, two to a block of B's scales."""
    from gemmlab.harness.verify import check

    _needs_gpu()
    spec = get_kernel("gluon/tc8_block_scaled_fp8").with_params(change)
    result = check(spec, Problem(*shape, spec.precision), seed=1)
    assert result.passed, result
