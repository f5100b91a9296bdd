import numpy as np
import pytest

from gemmlab.errors import ShapeError
from gemmlab.problem import SEED_SHAPE, Problem, parse_shape


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
