import numpy as np
import pytest

from gemmlab.errors import ShapeError
from gemmlab.problem import PRECISIONS, SEED_SHAPE, Precision, Problem, parse_shape, precisions_of, scaled_dtype


def test_seed_formulas():
    p = Problem(*SEED_SHAPE)
    m, n, k = 2048, 3072, 4096
    assert p.flops() == 2 * m * n * k
    assert p.compulsory_bytes() == 4 * (m * k + k * n + m * n)
    assert p.intensity() == pytest.approx(m * n * k / (2 * (m * k + k * n + m * n)))


def test_square_intensity_is_n_over_6():
    for size in (1024, 4096, 8192):
        assert Problem(size, size, size).intensity() == pytest.approx(size / 6)


def test_bf16_bytes_count_two_byte_inputs_and_output():
    # BF16 operands write BF16 C by default (torch's rule; it was FP32 C, 4 * 64 * 32 bytes, before)
    p = Problem(64, 32, 16, "bf16")
    assert p.compulsory_bytes() == 2 * (64 * 16 + 16 * 32) + 2 * 64 * 32
    assert Problem(64, 32, 16, "fp16").compulsory_bytes() == p.compulsory_bytes()


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


# -- the precision record: every table keyed by precision reads it ---------------------------------------------------
# A record that exists nowhere else (a BF16 twin under another name), to show that a record alone fills the tables
FP16X = Precision("fp16x", "float16", ("float32", "float16"), "fp16 tensor core", 1e-2,
                  "FP16 in, FP32 accumulate and out", 6, "FP16X", "f16", peer="peers/cublas_fp16x",
                  auto_defaults=("cuda/tc4_persistent_fp16x",), operand_dtypes=("float16",), default=False,
                  peak_key="bf16")


@pytest.fixture
def with_fp16x(monkeypatch):
    monkeypatch.setitem(PRECISIONS, "fp16x", FP16X)
    return FP16X


def test_a_new_record_is_in_every_table_keyed_by_precision(with_fp16x):
    from gemmlab import dispatch
    from gemmlab.analysis.roofline import DEVICES, listed_precisions
    from gemmlab.call.checks import resolve
    from gemmlab.cli_parser import build_parser
    from gemmlab.harness.bench_records import FALLBACK_PEERS, PEERS

    assert precisions_of("float16") == ("fp16", "fp16x") and not scaled_dtype("float16")
    assert precisions_of("float32") == ("fp32", "tf32")  # the default of a dtype first
    assert PEERS["fp16x"] == "peers/cublas_fp16x" and "fp16x" not in FALLBACK_PEERS
    assert list(PEERS) == ["fp32", "tf32", "bf16", "fp8", "fp8_block", "fp16", "fp16x"]
    assert dispatch.DEFAULTS["fp16x"] == ("cuda/tc4_persistent_fp16x",)
    for dev in DEVICES.values():  # the peak of the units it runs on, on every device that has them
        assert dev.tflops["fp16x"] == dev.tflops["bf16"] and dev.flop_per_clk["fp16x"] == dev.flop_per_clk["bf16"]
    assert with_fp16x in listed_precisions()
    assert build_parser().parse_args(["dispatch", "--precision", "fp16x"]).precision == ["fp16x"]
    assert Problem(64, 64, 64, "fp16x").compulsory_bytes() == 2 * 2 * 64 * 64 + 4 * 64 * 64
    # a call's checks: float16 operands select it, and out_dtype may be any it writes, only those
    from gemmlab.call.operands import Facts
    from gemmlab.errors import DTypeError

    a = Facts("numpy", (64, 64), "float16", "row", None)
    with pytest.raises(DTypeError, match="on the host gemmlab computes fp32"):
        resolve(a, a, "auto", "fp16x", False, None, out_dtype="float16")
    with pytest.raises(DTypeError, match="fp16x writes float32 or float16"):
        resolve(a, a, "auto", "fp16x", False, None, out_dtype="bfloat16")


def test_the_tables_without_a_new_record_are_what_they_were():
    """The records' own tables. fp16 is a record (float16 operands on the BF16 levels): its peer, its operand dtype,
    its output dtypes, BF16's peak; and BF16 writes BF16 C by default now, FP32 on request."""
    from gemmlab import dispatch
    from gemmlab.analysis.roofline import DEVICES
    from gemmlab.harness.bench_records import FALLBACK_PEERS, PEERS

    assert dict(PEERS) == {"fp32": "peers/cublas_fp32", "tf32": "peers/cublas_tf32", "bf16": "peers/cublas_bf16",
                           "fp8": "peers/cublaslt_fp8", "fp8_block": "peers/cublaslt_fp8_block",
                           "fp16": "peers/cublas_fp16"}
    assert dict(FALLBACK_PEERS) == {"fp8_block": "fp8"}
    # tc10 after tc6: the rounding TF32 level that fuses an epilogue (tc6 TF32 does not), before the pre-Hopper tc1
    assert dispatch.DEFAULTS["tf32"] == ("cuda/tc6_stream_k_tf32", "cuda/tc10_split_k_tf32", "cuda/tc1_mma_sync_tf32")
    assert {d: precisions_of(d) for d in ("float32", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float16")} == {
        "float32": ("fp32", "tf32"), "bfloat16": ("bf16",), "float8_e4m3fn": ("fp8", "fp8_block"),
        "float8_e5m2": ("fp8", "fp8_block"), "float16": ("fp16",)}
    assert [n for n, p in PRECISIONS.items() if p.unscaled_tensor_core] == ["tf32", "bf16", "fp16"]
    assert [n for n, p in PRECISIONS.items() if p.scaled] == ["fp8", "fp8_block"]
    assert {n: p.output_dtypes for n, p in PRECISIONS.items() if len(p.output_dtypes) > 1} == {
        "bf16": ("bfloat16", "float32"), "fp8": ("bfloat16", "float32"), "fp8_block": ("bfloat16", "float32"),
        "fp16": ("float16", "float32")}
    assert dispatch.DEFAULTS["fp16"] == ("cuda/tc4_persistent_fp16", "cuda/tc1_mma_sync_fp16")
    assert PRECISIONS["fp16"].dispatch_precision == "bf16" and PRECISIONS["bf16"].dispatch_precision == "bf16"
    assert DEVICES["h200"].tflops == {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp8": 1979.0, "fp8_block": 1979.0,
                                      "fp16": 989.4}
    assert "fp8" not in DEVICES["a100"].tflops
