import numpy as np
import pytest

from gemmlab.errors import ShapeError
from gemmlab.problem import PRECISIONS, SEED_SHAPE, Problem, parse_shape


def test_seed_formulas():
    p = Problem(*SEED_SHAPE)
    m, n, k = 2048, 3072, 4096
    assert p.flops() == 2 * m * n * k
    assert p.compulsory_bytes() == 4 * (m * k + k * n + m * n)
    assert p.intensity() == pytest.approx(m * n * k / (2 * (m * k + k * n + m * n)))


def test_square_intensity_is_n_over_6():
    for size in (1024, 4096, 8192):
        assert Problem(size, size, size).intensity() == pytest.approx(size / 6)


def test_bf16_bytes_count_two_byte_inputs_and_fp32_output():
    p = Problem(64, 32, 16, "bf16")
    assert p.compulsory_bytes() == 2 * (64 * 16 + 16 * 32) + 4 * 64 * 32


@pytest.mark.parametrize("bad", [(0, 1, 1), (1, -3, 1), (1, 1, 0), (1.5, 1, 1), (True, 1, 1)])
def test_bad_dimensions_name_the_dimension(bad):
    with pytest.raises(ShapeError, match="[MNK]"):
        Problem(*bad)


def test_unknown_precision():
    with pytest.raises(ShapeError, match="precision"):
        Problem(1, 1, 1, "int4")


def test_inputs_are_seeded_standard_normal_and_never_zero():
    p = Problem(300, 200, 400)
    a1, b1 = p.make_inputs(7)
    a2, _ = p.make_inputs(7)
    a3, _ = p.make_inputs(8)
    assert a1.dtype == np.float32 and a1.shape == (300, 400) and b1.shape == (400, 200)
    np.testing.assert_array_equal(a1, a2)
    assert not np.array_equal(a1, a3)
    assert abs(a1.mean()) < 0.02 and abs(a1.std() - 1) < 0.02
    assert np.count_nonzero(a1) == a1.size


def test_bf16_inputs():
    a, b = Problem(4, 5, 6, "bf16").make_inputs(0)
    assert str(a.dtype) == "bfloat16" and str(b.dtype) == "bfloat16"


@pytest.mark.parametrize("text,dims", [("4096", (4096,) * 3), ("2048x3072x4096", (2048, 3072, 4096)),
                                       ("17×33×1", (17, 33, 1))])
def test_parse_shape(text, dims):
    assert parse_shape(text) == dims


@pytest.mark.parametrize("text", ["", "12x3", "0", "axbxc", "1x0x3"])
def test_parse_shape_rejects(text):
    with pytest.raises(ShapeError):
        parse_shape(text)


# what the tensor-core sources and their plans expect of each precision: the defines that select its operand type
# (tc_layout.cuh), the k-tile, the TMA element type, and whether B can be read N-major or comes K-major
@pytest.mark.parametrize("name,defines,k_tile,tma,b_n_major,b_kmajor", [
    ("fp32", {"TC_BF16": 0}, 32, "fp32", False, False),
    ("tf32", {"TC_BF16": 0}, 32, "fp32", False, False),
    ("bf16", {"TC_BF16": 1}, 64, "bf16", True, False),
    ("fp8", {"TC_BF16": 0, "TC_FP8": 1}, 128, "fp8", False, True),
    ("fp8_block", {"TC_BF16": 0, "TC_FP8": 1}, 128, "fp8", False, True),
])
def test_tensor_core_facts(name, defines, k_tile, tma, b_n_major, b_kmajor):
    p = PRECISIONS[name]
    assert p.tensor_core_defines == defines and p.k_tile == k_tile and p.tma_dtype == tma
    assert p.reads_b_n_major == b_n_major and p.kmajor_b == b_kmajor


@pytest.mark.parametrize("name", list(PRECISIONS))
def test_a_k_tile_is_the_one_swizzle_row_tma_copies(name):
    from gemmlab.kernels.cuda.launch.tma import TiledMap

    p = PRECISIONS[name]
    rows = TiledMap(p.tma_dtype, 256, 4 * p.k_tile, 4 * p.k_tile, 64, p.k_tile)
    assert not rows.errors() and rows.box_bytes == 64 * 128 and rows.elem == p.input_bytes


def test_only_fp32_multiplies_in_fp32_and_only_tf32_in_tf32():
    assert [n for n, p in PRECISIONS.items() if p.fp32_multiply] == ["fp32"]
    assert [n for n, p in PRECISIONS.items() if p.tf32_multiply] == ["tf32"]
    assert [n for n, p in PRECISIONS.items() if p.block_scaled] == ["fp8_block"]


def test_input_and_output_dtypes_name_torch_dtypes():
    torch = pytest.importorskip("torch")
    for p in PRECISIONS.values():
        assert getattr(torch, p.input_dtype).itemsize == p.input_bytes
        assert getattr(torch, p.output_dtype).itemsize == p.output_bytes


def test_precisions_are_listed_in_their_order_with_distinct_labels():
    assert sorted(PRECISIONS, key=lambda n: PRECISIONS[n].order) == list(PRECISIONS)
    assert len({p.label for p in PRECISIONS.values()}) == len(PRECISIONS)
