"""gemmlab.call.batched_matmul on a GPU (skipped without one): one launch per call, the values against float64 per
product, broadcast operands (stride 0), B handed over transposed, ragged rows (C stored from registers), the
batched levels named and auto's choice."""
import pytest

from gemmlab import device

pytestmark = pytest.mark.skipif(device.gpu() is None, reason="needs a CUDA GPU")
torch = pytest.importorskip("torch")

from gemmlab import call  # noqa: E402
from gemmlab.call import Batch, batched_matmul, batched_plan  # noqa: E402
from gemmlab.errors import LayoutError  # noqa: E402
from gemmlab.harness.reference import tolerance_for  # noqa: E402
from gemmlab.problem import Problem  # noqa: E402


def _check(c, a, b, precision):
    want = torch.matmul(a.double(), b.double())
    assert c.shape == want.shape
    err = float(torch.linalg.norm(c.double() - want) / torch.linalg.norm(want))
    m, k = a.shape[-2:]
    assert torch.isfinite(c).all() and err <= tolerance_for(Problem(m, b.shape[-1], k, precision)), err


@pytest.mark.parametrize("precision, dtype, batch, shape", [
    ("bf16", torch.bfloat16, 8, (512, 512, 512)), ("bf16", torch.bfloat16, 3, (300, 200, 136)),
    ("bf16", torch.bfloat16, 16, (1024, 1024, 1024)), ("fp32", torch.float32, 5, (129, 65, 33)),
    ("bf16", torch.bfloat16, 4, (5, 7, 3)), ("fp16", torch.float16, 3, (300, 201, 136)),
    ("tf32", torch.float32, 6, (129, 65, 33)), ("tf32", torch.float32, 8, (512, 512, 512))])
def test_a_contiguous_batch_in_one_launch(precision, dtype, batch, shape):
    m, n, k = shape
    a = torch.randn(batch, m, k, device="cuda").to(dtype)
    b = torch.randn(batch, k, n, device="cuda").to(dtype)
    prepared = batched_plan(a, b, precision=precision)
    assert prepared.plan.spec.batches or prepared.plan.spec.params.get("BATCHED")
    assert "in one launch" in prepared.explain()
    _check(batched_matmul(a, b, precision=precision), a, b, precision)


def test_broadcast_and_transposed_operands():
    a = torch.randn(4, 3, 256, 128, device="cuda").bfloat16()
    w = torch.randn(256, 128, device="cuda").bfloat16()  # one matrix, handed over as wᵀ (B column-major)
    bt = w.t()
    call.plans.clear()  # the plan this call makes is the only batched one
    c = batched_matmul(a, bt.expand(4, 3, 128, 256))
    _check(c, a, bt, "bf16")
    key = next(k for k in call.plans if k[0] == "batched")
    assert call.plans[key].batch == Batch((4, 3), (3 * 256 * 128, 256 * 128), (0, 0))


def test_a_batch_that_does_not_collapse_is_refused_on_the_gpu():
    a = torch.randn(4, 1, 64, 64, device="cuda").bfloat16()
    b = torch.randn(3, 64, 64, device="cuda").bfloat16()
    with pytest.raises(LayoutError, match="one dimension"):
        batched_matmul(a, b)


def test_a_level_without_a_batch_is_refused_when_named():
    a = torch.randn(2, 64, 64, device="cuda").bfloat16()
    with pytest.raises(LayoutError, match="one product a launch"):
        batched_matmul(a, a, kernel="cuda/tc3_warp_specialized_bf16")


@pytest.mark.parametrize("precision, dtype, shape", [
    ("fp32", torch.float32, (6, 5, 7)), ("tf32", torch.float32, (16, 8, 12)), ("bf16", torch.bfloat16, (5, 7, 3))])
def test_a_batch_past_grid_z_runs_in_slices(precision, dtype, shape):
    """131,073 products: launches of 65535 products and one of 3, each slice's operands and C stepped to its first
    product; every product checked (the last one of each slice and the first of the next among them), a broadcast
    B too."""
    m, n, k = shape
    batch = 2 * 65535 + 3
    a = torch.randn(batch, m, k, device="cuda").to(dtype)
    b = torch.randn(batch, k, n, device="cuda").to(dtype)
    prepared = batched_plan(a, b, precision=precision)
    assert "3 launches of at most 65535" in prepared.explain() and "in 3 launches" in prepared.explain()
    _check(batched_matmul(a, b, precision=precision), a, b, precision)
    shared = b[:1].expand(batch, k, n)  # one matrix, batch stride 0
    _check(batched_matmul(a, shared, precision=precision), a, shared, precision)
