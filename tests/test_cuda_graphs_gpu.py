"""gemmlab.matmul under CUDA graph capture (skipped without a GPU): torch's documented pattern (warm up on a side
stream, then ``with torch.cuda.graph(g)`` on the graph's own stream, which no call has run on) for every level that
holds a workspace, a capture stream of the caller's, graphs sharing a memory pool, two graphs replayed at once, and
a first call under capture. A replay gives the eager result bit for bit."""
import pytest

from gemmlab import device

pytestmark = pytest.mark.skipif(device.gpu() is None, reason="needs a CUDA GPU")
torch = pytest.importorskip("torch")

import gemmlab  # noqa: E402
from gemmlab import call  # noqa: E402
from gemmlab.errors import GemmlabError  # noqa: E402
from gemmlab.kernels.registry import get_kernel  # noqa: E402
from fp8_blocks import fp8_blocks  # noqa: E402

# (kernel, M, N, K, B as w.t()): each kind of workspace a plan holds. The TF32 transpose of a row-major B (tc2-tc4),
# tc5 TF32's pitched copy of an A whose rows are off 16 bytes (K = 1022), tc6 TF32's stream-K tail (1024³), stream-K
# partials and flags (tc6 BF16, tc9 BF16 and FP8), block scales beside stream-K (tc6 FP8 block), an operand whose rows TMA cannot stride (K = 100),
# split-K partials and counters (tc10; v11 on the CUDA cores, 16 splits at 16x4096x4096), tc6 TF32's 64-row tiles
# at M <= 64 (stream-K's partials)
WORKSPACES = [("cuda/tc2_wgmma_tma_tf32", 1024, 1024, 1024, False),
              ("cuda/tc3_warp_specialized_tf32", 1024, 1024, 1024, False),
              ("cuda/tc4_persistent_tf32", 1024, 1024, 1024, False),
              ("cuda/tc5_swap_ab_tf32", 1024, 1024, 1022, False),
              ("cuda/tc6_stream_k_tf32", 1024, 1024, 1024, False),
              ("cuda/tc6_stream_k_tf32", 2048, 3072, 4096, False),
              ("cuda/tc6_stream_k_bf16", 1024, 1024, 8192, False),
              ("cuda/tc9_narrow_swap_bf16", 16, 4096, 4096, True),
              ("cuda/tc9_narrow_swap_fp8", 16, 4096, 4096, True),
              ("cuda/tc6_stream_k_fp8_block", 256, 4096, 8192, True),
              ("cuda/tc4_persistent_bf16", 257, 136, 100, False),
              ("cuda/tc10_split_k_bf16", 128, 256, 16384, False),
              ("cuda/v11_split_k", 16, 4096, 4096, True),
              ("cuda/tc6_stream_k_tf32", 16, 4096, 4096, True)]


class Call:
    """One named kernel's operands, as static buffers a graph reads; ``refill`` writes new values into them."""

    def __init__(self, kernel, m, n, k, transposed):
        self.kernel, self.shape, self.transposed = kernel, (m, n, k), transposed
        self.precision = get_kernel(kernel).precision
        self.refill(0)

    def _values(self, seed):
        m, n, k = self.shape
        g = torch.Generator(device="cuda").manual_seed(seed)
        a = torch.randn(m, k, device="cuda", generator=g)
        w = torch.randn(n, k, device="cuda", generator=g)
        if self.precision == "fp8_block":
            (a8, sa, _), (w8, sw, _) = fp8_blocks(a, 1), fp8_blocks(w, 128)
            return {"a": a8, "b": w8, "scale_a": sa, "scale_b": sw}
        if self.precision == "fp8":
            sa, sw = a.abs().max().reshape(1) / 448, w.abs().max().reshape(1) / 448
            return {"a": (a / sa).to(torch.float8_e4m3fn), "b": (w / sw).to(torch.float8_e4m3fn), "scale_a": sa,
                    "scale_b": sw}
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float32
        return {"a": a.to(dtype), "b": (w if self.transposed else w.t().contiguous()).to(dtype)}

    def refill(self, seed):
        values = self._values(seed)
        if not hasattr(self, "buffers"):
            self.buffers = values
        else:
            for name, v in values.items():
                self.buffers[name].copy_(v)

    def __call__(self):
        x = self.buffers
        b = x["b"].t() if self.transposed else x["b"]
        scales = {}
        if "scale_a" in x:
            sb = x["scale_b"].t() if self.precision == "fp8_block" else x["scale_b"]
            scales = {"scale_a": x["scale_a"], "scale_b": sb}
        return gemmlab.matmul(x["a"], b, self.kernel, **scales)


def warm_up(f, stream=None):
    """torch's pattern: a few calls on a side stream, joined back to the current one."""
    side = stream or torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            f()
    torch.cuda.current_stream().wait_stream(side)


@pytest.mark.parametrize("kernel,m,n,k,transposed", WORKSPACES,
                         ids=[f"{w[0]}-{w[1]}x{w[2]}x{w[3]}" for w in WORKSPACES])
def test_a_level_holding_workspaces_captures_and_replays_the_eager_result(kernel, m, n, k, transposed):
    f = Call(kernel, m, n, k, transposed)
    warm_up(f)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # torch's own capture stream: no call of gemmlab ran there
        c = f()
    plans = [p for key, p in call.plans.items() if key[0] == kernel]
    assert plans and not any(p.shared for p in plans)  # the level holds (or may make) workspaces here
    for seed in (1, 2):
        f.refill(seed)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(c, f())


def test_a_capture_on_a_stream_of_the_callers_that_never_ran_a_call():
    f = Call("cuda/tc6_stream_k_tf32", 1024, 1024, 1024, False)
    warm_up(f)
    graph, fresh = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    with torch.cuda.graph(graph, stream=fresh):
        c = f()
    f.refill(3)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(c, f())


def test_a_capture_on_the_warmed_stream_leaves_its_eager_workspaces_alone():
    """Captured on the stream the warm-up ran on: the graph has workspaces of its own, so eager calls there and
    replays elsewhere at the same time do not share them."""
    f, side = Call("cuda/tc6_stream_k_bf16", 1024, 1024, 8192, False), torch.cuda.Stream()
    warm_up(f, side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        c = f()
    f.refill(4)
    expected = f().clone()
    other = torch.cuda.Stream()
    other.wait_stream(torch.cuda.current_stream())
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(other):
        graph.replay()
    with torch.cuda.stream(side):
        eager = f()
    torch.cuda.synchronize()
    assert torch.equal(c, expected) and torch.equal(eager, expected)


def _two_graphs(pool: bool):
    f, h = (Call("cuda/tc6_stream_k_tf32", 1024, 1024, 1024, False) for _ in range(2))
    h.refill(5)
    warm_up(f)
    first, second = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(first):  # both on torch's one default capture stream
        c1 = f()
    with torch.cuda.graph(second, **({"pool": first.pool()} if pool else {})):
        c2 = h()
    return (first, c1, f().clone()), (second, c2, h().clone())


def test_two_graphs_captured_on_one_stream_replay_at_once_on_two():
    graphs = _two_graphs(pool=False)
    streams = [torch.cuda.Stream() for _ in graphs]
    for s in streams:
        s.wait_stream(torch.cuda.current_stream())
    for _ in range(5):
        for (graph, _, _), s in zip(graphs, streams):
            with torch.cuda.stream(s):
                graph.replay()
    torch.cuda.synchronize()
    assert all(torch.equal(c, expected) for _, c, expected in graphs)


def test_graphs_sharing_a_pool_replay_in_capture_order():
    """torch's rule for a shared pool: replay in the order of capture, one at a time."""
    graphs = _two_graphs(pool=True)
    for _ in range(3):
        for graph, _, _ in graphs:
            graph.replay()
    torch.cuda.synchronize()
    assert all(torch.equal(c, expected) for _, c, expected in graphs)


def test_a_first_call_under_capture_is_refused_in_one_line_and_a_later_capture_works():
    f = Call("cuda/tc5_swap_ab_tf32", 512, 768, 640, False)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(GemmlabError, match="call it once before capturing"):
        with torch.cuda.graph(graph):
            f()
    warm_up(f)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = f()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(c, f())
