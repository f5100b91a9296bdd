"""gemmlab.call.batched: the broadcast batch's description, its plan key, the host path's values against
numpy.matmul, and the refusals of a batch no kernel can take."""
import numpy as np
import pytest

from gemmlab import call
from gemmlab.call import Batch, batch_of, batched_matmul
from gemmlab.errors import GemmlabError, LayoutError, ShapeError
from gemmlab.problem import BatchedProblem, Problem


@pytest.fixture(autouse=True)
def fresh_plans():
    call.plans.clear()
    yield
    call.plans.clear()


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def test_broadcast_batch_strides_after_broadcasting():
    a, b = _rand(4, 1, 5, 3), _rand(3, 3, 6)
    batch = batch_of(a, b)
    assert batch == Batch((4, 3), (15, 0), (0, 18))
    assert batch.count == 12
    assert batch.collapsed() is None  # A walks the outer dimension, B the inner: no one stride per operand


@pytest.mark.parametrize("a_shape, b_shape, expected", [
    ((8, 5, 3), (8, 3, 6), (8, 15, 18)),
    ((2, 4, 5, 3), (3, 6), (8, 15, 0)),  # a matrix B broadcast: stride 0
    ((5, 3), (2, 4, 3, 6), (8, 0, 18)),
    ((1, 5, 3), (7, 3, 6), (7, 0, 18)),
    ((5, 3), (3, 6), (1, 0, 0)),
])
def test_collapsed_batch(a_shape, b_shape, expected):
    assert batch_of(_rand(*a_shape), _rand(*b_shape)).collapsed() == expected


def test_batch_dimensions_that_do_not_broadcast_are_refused():
    with pytest.raises(ShapeError, match="do not broadcast"):
        batch_of(_rand(3, 5, 3), _rand(4, 3, 6))


@pytest.mark.parametrize("bad", [dict(shape=(2,), a=(1, 2), b=(0,)), dict(shape=(0,), a=(1,), b=(1,)),
                                 dict(shape=(2,), a=(-1,), b=(0,)), dict(shape=(2.0,), a=(1,), b=(0,))])
def test_malformed_batch_descriptions(bad):
    with pytest.raises(ShapeError):
        Batch(**bad)


@pytest.mark.parametrize("a_shape, b_shape", [((8, 5, 3), (8, 3, 6)), ((4, 1, 5, 3), (3, 3, 6)),
                                              ((2, 4, 5, 3), (3, 6)), ((5, 3), (2, 3, 6)), ((1, 5, 3), (6, 3, 7))])
def test_host_values_match_numpy_matmul(a_shape, b_shape):
    a, b = _rand(*a_shape), _rand(*b_shape, seed=1)
    c = batched_matmul(a, b)
    expected = np.matmul(a, b)
    assert c.shape == expected.shape and c.dtype == np.float32
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


def test_host_values_with_explicit_broadcast_strides():
    """A described batch walks from each operand's address: B's one matrix broadcast by stride 0, A's matrices every
    20 elements (a padded batch)."""
    storage = _rand(6 * 20)
    a = np.lib.stride_tricks.as_strided(storage, (6, 5, 3), (80, 12, 4))
    b = _rand(1, 3, 7, seed=2)
    c = batched_matmul(a, b, batch=Batch((6,), (20,), (0,)))
    np.testing.assert_allclose(c, np.matmul(a, b[0]), rtol=1e-5, atol=1e-5)


def test_host_out_is_written():
    a, b = _rand(3, 4, 5), _rand(3, 5, 2)
    out = np.empty((3, 4, 2), np.float32)
    assert batched_matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(LayoutError, match="out must be"):
        batched_matmul(a, b, out=np.empty((4, 2), np.float32))


def test_torch_cpu_tensors_take_the_host_path():
    torch = pytest.importorskip("torch")
    a, b = torch.randn(4, 1, 5, 3), torch.randn(3, 3, 6)
    c = batched_matmul(a, b)
    assert isinstance(c, torch.Tensor)
    torch.testing.assert_close(c, torch.matmul(a, b), rtol=1e-5, atol=1e-5)


def test_plan_key_holds_the_batch():
    a, b = _rand(4, 5, 3), _rand(4, 3, 6)
    batched_matmul(a, b)
    batched_matmul(a, b[:1])  # B broadcast: another batch, another plan
    keys = [k for k in call.plans if k[0] == "batched"]
    assert len(keys) == 2
    assert {k[5] for k in keys} == {Batch((4,), (15,), (18,)), Batch((4,), (15,), (0,))}
    batched_matmul(a, b)
    assert len([k for k in call.plans if k[0] == "batched"]) == 2
    prepared = call.plans[keys[0]]
    assert "batched: 4 products" in prepared.explain()


def test_a_call_like_an_earlier_one_finds_its_plan_without_the_checks(monkeypatch):
    """A repeated call (same operand types, dtypes, shapes, strides, devices and arguments) takes its plan by those
    attributes: the per-call checks, most of a small batch's host time, ran for the first call and do not run again.
    Operands that differ in any of them (a transposed view: other strides) are checked and planned anew."""
    from gemmlab.call import batched

    a, b = _rand(4, 5, 3), _rand(4, 3, 6)
    first = batched_matmul(a, b)
    checked = []
    real = batched._matrix
    monkeypatch.setattr(batched, "_matrix", lambda x, name: checked.append(name) or real(x, name))
    np.testing.assert_array_equal(batched_matmul(a.copy(), b.copy()), first)
    assert checked == []
    bt = np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)  # B's matrices column-major
    np.testing.assert_allclose(batched_matmul(a, bt), first, rtol=1e-6)
    assert checked == ["A", "B"]
    with pytest.raises(LayoutError, match="reach past"):  # an explicit batch is part of the key: checked
        batched_matmul(a, b, batch=Batch((5,), (15,), (18,)))


def test_a_batch_reaching_past_an_operand_is_refused():
    a, b = _rand(2, 5, 3), _rand(2, 3, 6)
    with pytest.raises(LayoutError, match="reach past"):
        batched_matmul(a, b, batch=Batch((3,), (15,), (18,)))


def test_host_bf16_and_fp16_run_widened_and_round_c_once():
    """A host batch of BF16 or FP16 operands (dispatch.HOST_WIDENED): numpy.matmul in FP32 on the broadcast views,
    C in the operands' type, each element the FP32 product rounded once (to nearest even): the exact float64
    product's rounding wherever the FP32 sum is exact, as it is for these small integers."""
    import ml_dtypes

    for dtype in (ml_dtypes.bfloat16, np.float16):
        rng = np.random.default_rng(3)
        a = rng.integers(-8, 9, (3, 1, 5, 7)).astype(dtype)  # broadcast over B's batch of 4
        b = rng.integers(-8, 9, (4, 7, 6)).astype(dtype)
        c = batched_matmul(a, b)
        want = (a.astype(np.float64) @ b.astype(np.float64)).astype(dtype)
        assert c.dtype == np.dtype(dtype) and c.shape == (3, 4, 5, 6)
        np.testing.assert_array_equal(c.astype(np.float64), want.astype(np.float64))
        out = np.empty((3, 4, 5, 6), np.float32)  # FP32 C on request: the sum itself
        assert batched_matmul(a, b, out=out, out_dtype="float32") is out
        np.testing.assert_array_equal(out, a.astype(np.float64) @ b.astype(np.float64))


def test_batched_problem():
    p = BatchedProblem(512, 512, 512, "bf16", 8, 512 * 512, 0)
    assert p.label() == "8x512x512x512"
    assert p.flops() == 8 * Problem(512, 512, 512, "bf16").flops()
    assert p.flattened() == Problem(8 * 512, 512, 512, "bf16")
    assert p.with_precision("fp32").batch == 8
    # B broadcast: read once; C in BF16 (torch's rule), or FP32 when asked
    assert p.compulsory_bytes() == 2 * (8 + 1) * 512 * 512 + 2 * 8 * 512 * 512
    wide = BatchedProblem(512, 512, 512, "bf16", 8, 512 * 512, 0, out_dtype="float32")
    assert wide.compulsory_bytes() == 2 * (8 + 1) * 512 * 512 + 4 * 8 * 512 * 512
    with pytest.raises(ShapeError):
        BatchedProblem(4, 4, 4, "fp32", 0)


def test_kernels_that_run_one_product_refuse_a_batch():
    from gemmlab.kernels.registry import get_kernel

    refusal = get_kernel("cuda/tc2_wgmma_tma_bf16").is_valid(BatchedProblem(256, 256, 256, "bf16", 4, 65536, 65536))
    assert refusal and "one product a launch" in refusal
    with pytest.raises(LayoutError, match="one product a launch"):
        raise refusal.exception()


def test_an_operand_broadcast_over_part_of_the_batch_is_made_contiguous_over_it_for_the_gpu():
    from gemmlab.call.batched import stepped

    a = np.broadcast_to(np.arange(40, dtype=np.float32).reshape(2, 1, 4, 5), (2, 3, 4, 5))
    b = np.broadcast_to(np.arange(90, dtype=np.float32).reshape(3, 5, 6), (2, 3, 5, 6))
    whole = np.broadcast_to(np.ones((4, 5), np.float32), (2, 3, 4, 5))  # broadcast over the whole batch: kept
    batch = batch_of(a, b)
    assert batch.collapsed() is None  # (20, 0) and (0, 30): no one stride walks either
    a2, b2, stepped_batch = stepped(a, b, batch, np.ascontiguousarray)
    assert stepped_batch.collapsed() == (6, 20, 30) and (a2 == a).all() and (b2 == b).all()
    a3, b3, kept = stepped(whole, b, batch_of(whole, b), np.ascontiguousarray)
    assert a3 is whole and kept.collapsed() == (6, 0, 30)


def _copying_plan(monkeypatch):
    """batched._prepared answering as a GPU plan whose level reads only row-major matrices would: a copy of each
    operand whose matrices are not (the plan is kept, the call refused: _refuse_copies)."""
    import types

    from gemmlab.call import batched

    def prepared(A, B, kernel, precision, out, out_dtype, batch):
        rows = [x.strides[-1] == x.itemsize for x in (A, B)]
        spec = types.SimpleNamespace(name="cuda/tc1_mma_sync_tf32")
        plan = types.SimpleNamespace(copy_a=not rows[0], copy_b=not rows[1], on_device=True,
                                     plan=types.SimpleNamespace(spec=spec))
        return plan, batch_of(A, B) if batch is None else batch

    monkeypatch.setattr(batched, "_prepared", prepared)


def test_the_front_door_copies_a_batch_operand_its_level_reads_only_after_a_copy(monkeypatch):
    """in_place (gemmlab.matmul's N-D path): a transposed A's matrices made contiguous, the batch taken anew from the
    copy; B, read in place, kept as it is; operands read in place returned untouched."""
    from gemmlab.call.batched import in_place

    _copying_plan(monkeypatch)
    a = _rand(4, 3, 5).transpose(0, 2, 1)  # A's matrices column-major (a.mT)
    b = _rand(4, 3, 6)
    a2, b2, batch = in_place(a, b, batch_of(a, b), np.ascontiguousarray, np.broadcast_to)
    assert a2.flags.c_contiguous and (a2 == a).all() and b2 is b
    assert batch == Batch((4,), (15,), (18,))
    a3, b3, same = in_place(a2, b2, batch, np.ascontiguousarray, np.broadcast_to)
    assert a3 is a2 and b3 is b2 and same == batch


def test_a_broadcast_operand_the_front_door_copies_is_copied_once(monkeypatch):
    """W.mT broadcast over a batch of 64: one copy of W's matrix, broadcast again (stride 0), not 64 copies."""
    from gemmlab.call.batched import in_place

    _copying_plan(monkeypatch)
    w = _rand(6, 5)
    a = np.broadcast_to(w.T, (64, 5, 6))  # A's one matrix, column-major, over the whole batch
    b = _rand(64, 6, 3)
    copies = []

    def contiguous(x):
        copies.append(x.shape)
        return np.ascontiguousarray(x)

    a2, b2, batch = in_place(a, b, batch_of(a, b), contiguous, np.broadcast_to)
    assert copies == [(1, 5, 6)] and a2.shape == (64, 5, 6) and (a2 == a).all() and b2 is b
    assert batch == Batch((64,), (0,), (18,)) and batch.collapsed() == (64, 0, 18)


def test_a_batch_operand_its_level_reads_only_after_a_copy_is_refused_by_batched_matmul(monkeypatch):
    _copying_plan(monkeypatch)
    a, b = _rand(4, 5, 3), _rand(4, 6, 3).transpose(0, 2, 1)
    with pytest.raises(LayoutError, match=r"B's matrices .* cuda/tc1_mma_sync_tf32 reads in place; .* make B "
                                          r"contiguous first"):
        batched_matmul(a, b)
    with pytest.raises(LayoutError, match="make B contiguous first"):
        call.batched_plan(a, b)
