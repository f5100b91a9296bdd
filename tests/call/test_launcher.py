"""The launch-only path of torch calls (gemmlab.call.tensors.launcher, kept under torch_op.matmul's key): a call like
an earlier one whose plan needed nothing but its launch allocates C and launches, and nothing else. CPU tensors stand
in for a GPU's here, through a Prepared marked as on the GPU whose plan records its launches."""
import pytest

torch = pytest.importorskip("torch")

import gemmlab  # noqa: E402
from gemmlab import call, torch_op  # noqa: E402
from gemmlab.call import tensors  # noqa: E402
from gemmlab.call.cache import MAX_PLANS, Prepared  # noqa: E402
from gemmlab.epilogue import Epilogue  # noqa: E402
from gemmlab.errors import SizeLimitError  # noqa: E402

gen = torch.Generator().manual_seed(3)
W = torch.randn(3, 7, generator=gen)  # an nn.Linear weight: calls take W.t()


class Recorder:
    """A GPU plan's stand-in: each launch's addresses and stream, and whether the call held the Prepared's lock.
    ``buffers``: a plan with workspaces, which serves one stream."""

    on_gpu = True
    may_stage = False

    def __init__(self, workspaces: bool = False):
        self.buffers = [object()] if workspaces else []
        self.launches = []
        self.lock = None

    def launch(self, a, b, c, stream=0):
        self.launches.append((a, b, c, stream, self.lock.locked()))


@pytest.fixture
def gpu_like(monkeypatch, request):
    """torch_op's plans made as GPU plans of Recorders on device 0 (with workspaces where the test's parameter says),
    torch's stream 0 current there; yields the Recorders made, one per plan, in order."""
    made = []
    monkeypatch.setattr(tensors, "_stream", lambda index: 0)
    monkeypatch.setattr(tensors, "_current_device", lambda: 0)

    def as_gpu(host: Prepared) -> Prepared:
        rec = Recorder(getattr(request, "param", False))
        p = Prepared(plan=rec, why="test", device=0, out_shape=host.out_shape, out_dtype=host.out_dtype)
        p.torch_template = torch.empty(0, dtype=getattr(torch, host.out_dtype))
        rec.lock = p.lock
        made.append(rec)
        return p

    def prepare(key, A, B, kernel, precision, *rest):
        fa, fb = call.facts(A, "A"), call.facts(B, "B")
        return call.remember(key, as_gpu(call.checks.prepare(fa, fb, kernel, precision, fa.device)))

    def batched(*args):
        host = batched_plan(*args)
        key = next(k for k, p in call.plans.items() if p is host)
        return call.remember(key, as_gpu(host))

    batched_plan = call.batched.batched_plan
    monkeypatch.setattr(torch_op, "_prepare", prepare)
    monkeypatch.setattr(call.batched, "batched_plan", batched)
    call.plans.clear()
    call.launchers.clear()
    yield made
    call.plans.clear()  # the stand-ins hold no workspace for clear_plans to wait for
    call.launchers.clear()


def _no_general_path(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the call took the general path")

    for name in ("direct", "direct_nd", "matmul_nd"):
        monkeypatch.setattr(torch_op, name, refuse)


@pytest.mark.parametrize("x, shape", [(torch.randn(5, 7, generator=gen), (5, 3)),
                                      (torch.randn(2, 5, 7, generator=gen), (2, 5, 3)),  # x's rows, one GEMM
                                      (torch.randn(7, generator=gen), (3,))])  # a 1-D A: a row, C a vector
def test_a_second_call_only_allocates_and_launches(gpu_like, monkeypatch, x, shape):
    first = gemmlab.matmul(x, W.t())
    assert first.shape == shape and len(call.launchers) == 1 and len(gpu_like) == 1
    _no_general_path(monkeypatch)
    second = gemmlab.matmul(x, W.t())
    assert second.shape == shape == torch.matmul(x, W.t()).shape and second.dtype == torch.float32
    assert second.is_contiguous() and second.data_ptr() != first.data_ptr()  # a C of its own
    rec, = gpu_like
    assert rec.launches == [(x.data_ptr(), W.data_ptr(), first.data_ptr(), 0, True),  # under the plan's lock
                            (x.data_ptr(), W.data_ptr(), second.data_ptr(), 0, True)]


@pytest.mark.parametrize("a, b, shape", [(torch.randn(4, 5, 7, generator=gen), torch.randn(4, 7, 3, generator=gen),
                                          (4, 5, 3)),
                                         (torch.randn(7, generator=gen), torch.randn(4, 7, 3, generator=gen),
                                          (4, 3))])  # the 1-D A's dimension dropped from C, as torch.matmul drops it
def test_a_batch_read_in_place_keeps_its_launch(gpu_like, monkeypatch, a, b, shape):
    first = gemmlab.matmul(a, b)
    assert first.shape == shape and len(call.launchers) == 1
    _no_general_path(monkeypatch)
    second = gemmlab.matmul(a, b)
    assert second.shape == shape == torch.matmul(a, b).shape
    assert gpu_like[-1].launches[-1] == (a.data_ptr(), b.data_ptr(), second.data_ptr(), 0, True)


def test_calls_the_key_does_not_cover_take_the_general_path(gpu_like):
    x = torch.randn(5, 7, generator=gen)
    gemmlab.matmul(x, W.t())
    (key, launch), = call.launchers.items()
    used = []
    call.launchers[key] = lambda A, B: used.append(1) or launch(A, B)
    gemmlab.matmul(x, W.t(), out=torch.empty(5, 3))
    gemmlab.matmul(x, W.t(), out_dtype=torch.float32)
    gemmlab.matmul(x.t().contiguous().t(), W.t())  # other strides: another key
    gemmlab.matmul(x, W.t(), kernel="cpu/blas")
    with torch.autocast("cpu", dtype=torch.bfloat16):  # torch.matmul casts there
        assert gemmlab.matmul(x, W.t()).dtype == torch.bfloat16
    assert used == []
    gemmlab.matmul(x, W.t())
    assert used == [1]
    x.requires_grad_()  # autograd records the call: the operator's path, with a backward
    assert gemmlab.matmul(x, W.t()).grad_fn is not None and used == [1]
    with torch.no_grad():
        gemmlab.matmul(x, W.t())
    assert used == [1, 1]


@pytest.mark.parametrize("gpu_like", [True], indirect=True)
def test_a_plan_with_workspaces_launches_its_streams_plan(gpu_like, monkeypatch):
    x = torch.randn(5, 7, generator=gen)
    gemmlab.matmul(x, W.t())
    rec, = gpu_like
    p, = call.plans.values()
    assert not p.shared and p.by_stream == {0: rec}  # the first stream's plan is the first plan
    _no_general_path(monkeypatch)
    c = gemmlab.matmul(x, W.t())
    assert rec.launches[-1] == (x.data_ptr(), W.data_ptr(), c.data_ptr(), 0, True)


def test_a_shared_plan_launches_on_the_current_stream(gpu_like, monkeypatch):
    x = torch.randn(5, 7, generator=gen)
    gemmlab.matmul(x, W.t())
    _no_general_path(monkeypatch)
    monkeypatch.setattr(tensors, "_stream", lambda index: 0x5EED)
    c = gemmlab.matmul(x, W.t())
    assert gpu_like[0].launches[-1] == (x.data_ptr(), W.data_ptr(), c.data_ptr(), 0x5EED, True)


@pytest.mark.parametrize("gpu_like", [True], indirect=True)
@pytest.mark.parametrize("capturing", [False, True])
def test_another_stream_of_a_plan_with_workspaces_asks_for_that_streams_plan(gpu_like, monkeypatch, capturing):
    """Not the legacy default stream: Prepared.for_stream, told whether torch's current stream captures (a captured
    call's workspaces come from the graph's pool), never the first stream's plan."""
    x = torch.randn(5, 7, generator=gen)
    gemmlab.matmul(x, W.t())
    _no_general_path(monkeypatch)
    p, = call.plans.values()
    other, asked = Recorder(True), []
    other.lock = p.lock
    monkeypatch.setattr(tensors, "_stream", lambda index: 0x5EED)
    monkeypatch.setattr(tensors, "_capturing", lambda: capturing)
    monkeypatch.setattr(Prepared, "for_stream", lambda self, stream, capture=None: asked.append((stream, capture))
                        or other)
    c = gemmlab.matmul(x, W.t())
    assert asked == [(0x5EED, capturing)]
    assert other.launches == [(x.data_ptr(), W.data_ptr(), c.data_ptr(), 0x5EED, True)]


def test_operands_on_another_device_than_the_current_launch_in_their_devices_context(gpu_like, monkeypatch):
    x = torch.randn(5, 7, generator=gen)
    gemmlab.matmul(x, W.t())
    _no_general_path(monkeypatch)
    entered = []

    class Device:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            entered.append(self.index)

        def __exit__(self, *exc):
            entered.append("exit")

    monkeypatch.setattr(tensors, "_current_device", lambda: 1)
    monkeypatch.setattr(tensors.torch.cuda, "device", Device)
    c = gemmlab.matmul(x, W.t())
    assert entered == [0, "exit"]
    assert gpu_like[0].launches[-1] == (x.data_ptr(), W.data_ptr(), c.data_ptr(), 0, True)


def test_a_plan_dropped_from_the_cache_takes_its_launch_with_it(gpu_like, monkeypatch):
    """The plans' eviction waits for the GPU before it frees a plan's workspaces: a launch kept past it would use
    them unawaited."""
    x = torch.randn(5, 7, generator=gen)
    gemmlab.matmul(x, W.t())
    finished = []
    monkeypatch.setattr(call.cache, "_finish", lambda dropped: finished.extend(dropped))
    p, = call.plans.values()
    for i in range(MAX_PLANS):
        call.remember(("filler", i), p if i == 0 else Prepared(plan=Recorder(), why="test", out_shape=(1, 1)))
    assert finished == [p] and not call.launchers


def test_out_of_memory_for_c_is_a_size_limit_error(gpu_like):
    x = torch.randn(5, 7, generator=gen)
    gemmlab.matmul(x, W.t())

    class Full:
        def new_empty_strided(self, shape, strides):
            raise torch.OutOfMemoryError("CUDA out of memory")

    p, = call.plans.values()
    p.torch_template = Full()
    with pytest.raises(SizeLimitError, match="5×3 float32"):
        tensors.launcher(p)(x, W.t())


def test_only_a_plan_that_needs_nothing_but_its_launch_gets_one():
    def prepared(**kw):
        return Prepared(plan=Recorder(), why="test", device=0, out_shape=(5, 3), **kw)

    assert tensors.launches_only(prepared())
    assert not tensors.launches_only(prepared(host_copy=True))  # host operands copied to the GPU and back
    assert not tensors.launches_only(prepared(copy_a=True))
    assert not tensors.launches_only(prepared(copy_b=True))
    assert not tensors.launches_only(prepared(scaled=True))  # FP8: the scales' addresses every call
    assert not tensors.launches_only(prepared(epilogue=Epilogue(activation="relu")))


def test_launches_are_bounded_and_cleared():
    gemmlab.clear_plans()
    for i in range(MAX_PLANS + 3):
        call.remember_launcher(("key", i), lambda A, B: None)
    assert len(call.launchers) == MAX_PLANS
    assert ("key", 2) not in call.launchers and ("key", 3) in call.launchers  # the oldest dropped
    gemmlab.clear_plans()
    assert not call.launchers


def test_an_eviction_that_another_thread_got_to_first_drops_nothing_more():
    """The oldest key is read, then popped: another thread may pop it, or change the table, in between."""
    from gemmlab.call.cache import _pop_oldest

    class Raced(dict):
        def __iter__(self):  # the key this thread read, already popped by another
            return iter(["gone"])

    assert _pop_oldest(Raced(kept=1)) is None
    assert _pop_oldest({}) is None
    table = {"old": 1, "new": 2}
    assert _pop_oldest(table) == 1 and table == {"new": 2}
