"""gemmlab.matmul on a GPU (skipped without one; run with GEMMLAB_TEST_GPU=1): the default kernel per dtype, ragged
shapes, x @ w.T read in place, offset views, out=, CuPy on its own stream, two streams at once, CUDA graph capture
and replay, torch.compile and autograd on CUDA. Every product is checked against float64."""
import numpy as np
import pytest

from gemmlab import device

pytestmark = pytest.mark.skipif(device.gpu() is None, reason="needs a CUDA GPU")
torch = pytest.importorskip("torch")

import gemmlab  # noqa: E402
from gemmlab import call  # noqa: E402
from gemmlab.errors import LayoutError  # noqa: E402
from gemmlab.harness.reference import tolerance_for  # noqa: E402
from gemmlab.problem import Problem  # noqa: E402
from fp8_blocks import fp8_blocks  # noqa: E402

SHAPES = [(1, 1, 1), (17, 33, 65), (127, 257, 129), (1000, 1, 4097), (257, 1000, 31), (2047, 3071, 4097),
          (4096, 4096, 4096)]
DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def rel_err(c, a, b):
    ref = a.double() @ b.double()
    return float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref).clamp_min(1e-30))


def operands(m, n, k, precision, seed=0, b_transposed=False):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g).to(DTYPES[precision])
    if b_transposed:
        return a, torch.randn(n, k, device="cuda", generator=g).to(DTYPES[precision]).t()
    return a, torch.randn(k, n, device="cuda", generator=g).to(DTYPES[precision])


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("b_transposed", [False, True])
@pytest.mark.parametrize("out_dtype", [None, torch.float32])
def test_auto_is_right_on_ragged_shapes(precision, shape, b_transposed, out_dtype):
    """C in torch's dtype for the operands (BF16 in, BF16 out; it was FP32 for BF16 before), or FP32 on request."""
    m, n, k = shape
    a, b = operands(m, n, k, precision, seed=m + n + k, b_transposed=b_transposed)
    c = gemmlab.matmul(a, b, precision=precision, out_dtype=out_dtype)
    torch.cuda.synchronize()
    assert c.dtype == (out_dtype or DTYPES[precision]) and c.shape == (m, n) and c.is_cuda
    assert c.dtype == torch.matmul(a, b).dtype or out_dtype is not None
    assert bool(torch.isfinite(c).all())
    assert rel_err(c, a, b) <= tolerance_for(Problem(m, n, k, precision))


@pytest.mark.parametrize("precision,kernel", [("bf16", "cuda/tc4_persistent_bf16"), ("tf32", "cuda/tc4_persistent_tf32"),
                                              ("bf16", "cuda/tc6_stream_k_bf16"), ("bf16", "cuda/tc3_warp_specialized_bf16"),
                                              ("bf16", "cuda/tc2_wgmma_tma_bf16"), ("fp16", "cuda/tc4_persistent_fp16"),
                                              ("fp16", "cuda/tc6_stream_k_fp16"), ("fp16", "cuda/tc2_wgmma_tma_fp16")])
@pytest.mark.parametrize("shape", [(129, 200, 72), (2047, 3071, 4097), (300, 520, 100)])
def test_transposed_b_is_read_in_place(precision, kernel, shape):
    m, n, k = shape
    a, b = operands(m, n, k, precision, seed=3, b_transposed=True)
    prepared = gemmlab.plan(a, b, kernel=kernel)
    assert not prepared.copy_b and not prepared.copy_a
    c = gemmlab.matmul(a, b, kernel=kernel)
    assert rel_err(c, a, b) <= tolerance_for(Problem(m, n, k, precision))


@pytest.mark.parametrize("kernel", ["cuda/gemv1_warp_dot_fp16", "cuda/gemv2_mma_swap_fp16"])
@pytest.mark.parametrize("shape", [(1, 17, 33), (3, 4097, 17), (16, 1000, 129), (9, 255, 8191)])
@pytest.mark.parametrize("out_dtype", [None, torch.float32])
def test_fp16_gemv_levels_are_right_against_w_t(kernel, shape, out_dtype):
    """FP16 against an N×K weight on the gemv levels: FP16 C by default (torch's rule), FP32 on request, w read in
    place, right against float64 at ragged shapes (K not a whole 16-byte chunk, N cut inside a block)."""
    m, n, k = shape
    a, b = operands(m, n, k, "fp16", seed=7, b_transposed=True)
    assert not gemmlab.plan(a, b, kernel=kernel).copy_b
    c = gemmlab.matmul(a, b, kernel=kernel, out_dtype=out_dtype)
    assert c.dtype == (out_dtype or torch.float16) and c.shape == (m, n)
    assert rel_err(c, a, b) <= tolerance_for(Problem(m, n, k, "fp16"))


@pytest.mark.parametrize("precision,kernel", [("fp32", "cuda/v10_register_prefetch"), ("fp32", "cuda/v9_autotuned"),
                                              ("fp32", "cuda/v8_cp_async"), ("tf32", "cuda/tc5_swap_ab_tf32"),
                                              ("tf32", "cuda/tc6_stream_k_tf32")])
@pytest.mark.parametrize("shape", [(1, 17, 33), (17, 33, 127), (127, 1, 17), (129, 200, 72), (300, 520, 101),
                                   (2047, 3071, 4097)])
def test_fp32_and_tf32_read_a_transposed_b_in_place(precision, kernel, shape):
    m, n, k = shape
    a, b = operands(m, n, k, precision, seed=5, b_transposed=True)
    prepared = gemmlab.plan(a, b, kernel=kernel)
    assert not prepared.copy_b
    assert n == 1 or "B is read in place" in prepared.explain()  # N = 1: B is a vector, both layouts at once
    assert rel_err(gemmlab.matmul(a, b, kernel=kernel), a, b) <= tolerance_for(Problem(m, n, k, precision))


def test_fp32_transposed_a_is_copied_and_says_so():
    a, b = operands(200, 300, 100, "fp32")
    a = a.t().contiguous().t()  # Aᵀ handed over: no FP32 level reads it in place
    prepared = gemmlab.plan(a, b)
    assert prepared.copy_a and "copied" in prepared.explain()
    assert rel_err(gemmlab.matmul(a, b), a, b) <= 1e-5


@pytest.mark.parametrize("shape", [(1, 4096, 4096), (1, 14336, 4096), (4096, 1, 4096), (8, 4096, 4096)])
def test_tf32_matrix_vector_products_are_fp32_accurate_as_torch_s(shape):
    """M = 1 or N = 1 (and few rows against w.t()): TF32 calls run in FP32, within 2× of torch's error."""
    m, n, k = shape
    a, b = operands(m, n, k, "tf32", seed=7, b_transposed=n > 1)
    before, torch.backends.cuda.matmul.allow_tf32 = torch.backends.cuda.matmul.allow_tf32, True
    try:
        ours, theirs = rel_err(gemmlab.matmul(a, b, precision="tf32"), a, b), rel_err(a @ b, a, b)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    assert ours <= 2 * max(theirs, 1e-7), (ours, theirs)


@pytest.mark.parametrize("kernel", ["cuda/tc4_persistent_bf16", "cuda/tc5_swap_ab_tf32", "cuda/v10_register_prefetch",
                                    "cuda/tc1_mma_sync_bf16"])
def test_offset_views_off_16_bytes(kernel):
    precision = gemmlab.get_kernel(kernel).precision
    m, n, k = 300, 264, 136
    dtype = DTYPES[precision]
    a_base = torch.randn(m * k + 1, device="cuda").to(dtype)
    b_base = torch.randn(k * n + 1, device="cuda").to(dtype)
    a, b = a_base[1:].view(m, k), b_base[1:].view(k, n)
    c = gemmlab.matmul(a, b, kernel=kernel)
    assert rel_err(c, a, b) <= tolerance_for(Problem(m, n, k, precision))
    a2, b2 = operands(m, n, k, precision, seed=9)  # the same plan, aligned operands again
    assert rel_err(gemmlab.matmul(a2, b2, kernel=kernel), a2, b2) <= tolerance_for(Problem(m, n, k, precision))


def test_out_is_written_in_place_and_overlap_refused():
    a, b = operands(256, 256, 256, "bf16")
    out = torch.full((256, 256), float("nan"), device="cuda", dtype=torch.bfloat16)  # BF16 in, BF16 C (torch's rule)
    assert gemmlab.matmul(a, b, out=out) is out
    assert rel_err(out, a, b) <= 1e-2
    sq = torch.randn(256, 256, device="cuda")
    with pytest.raises(LayoutError, match="overlaps"):
        gemmlab.matmul(sq, sq, out=sq)
    with pytest.raises(LayoutError, match="bfloat16"):
        gemmlab.matmul(a, b, out=torch.empty(256, 256, device="cuda", dtype=torch.float32))


@pytest.mark.parametrize("kernel,precision,out_dtype,b_transposed", [
    ("cuda/tc1_mma_sync_tf32", "tf32", None, False), ("cuda/tc4_persistent_bf16", "bf16", torch.float32, True),
    ("cuda/tc4_persistent_bf16", "bf16", None, True), ("cuda/tc5_swap_ab_tf32", "tf32", None, False),
    ("cuda/tc5_swap_ab_tf32", "tf32", None, True), ("cuda/tc10_split_k_tf32", "tf32", None, True)])
def test_out_a_view_off_its_pairs_alignment_is_stored_element_by_element(kernel, precision, out_dtype, b_transposed):
    """out= one element into its buffer (C-contiguous, 4 bytes off 8 for FP32 C, 2 off 4 for BF16): the levels that
    store C's pairs as one 8-byte or 4-byte store (tc_out.cuh's pairs_aligned) store such a C element by element, with
    no misaligned store, and TMA stores none of it; right against float64, the element before C untouched."""
    a, b = operands(512, 384, 256, precision, b_transposed=b_transposed)
    dtype = out_dtype or DTYPES[precision]
    buffer = torch.full((512 * 384 + 1,), float("nan"), device="cuda", dtype=dtype)
    out = buffer[1:].view(512, 384)
    assert gemmlab.matmul(a, b, kernel, precision=precision, out=out, out_dtype=out_dtype) is out
    torch.cuda.synchronize()
    assert torch.isnan(buffer[0]) and rel_err(out, a, b) <= (1e-2 if dtype != torch.float32 else 1e-3)


def test_cupy_arrays_on_their_own_stream():
    cupy = pytest.importorskip("cupy")
    a = cupy.random.standard_normal((1000, 700), dtype=cupy.float32)
    b = cupy.random.standard_normal((700, 900), dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        c = gemmlab.matmul(a, b, precision="tf32")
        out = cupy.empty((1000, 900), cupy.float32)
        gemmlab.matmul(a, b, out=out)
    stream.synchronize()
    ref = a.astype(cupy.float64) @ b.astype(cupy.float64)
    assert isinstance(c, cupy.ndarray)
    assert float(cupy.linalg.norm(c - ref) / cupy.linalg.norm(ref)) <= 2e-3
    assert float(cupy.linalg.norm(out - ref) / cupy.linalg.norm(ref)) <= 1e-5


def test_two_streams_at_once_with_stream_k_workspaces():
    """tc6 keeps a workspace and flags per plan: plans are per stream, so two streams never share them."""
    a, b = operands(2048, 3072, 4096, "tf32")
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda.synchronize()
    outs = []
    for s in (s1, s2, s1, s2):
        with torch.cuda.stream(s):
            outs.append(gemmlab.matmul(a, b, kernel="cuda/tc6_stream_k_tf32"))
    torch.cuda.synchronize()
    for c in outs:
        assert rel_err(c, a, b) <= 2e-3
    assert torch.equal(outs[0], outs[1])  # the deterministic fixup: bitwise the same


def test_cuda_graph_capture_and_replay():
    a, b = operands(1024, 1024, 1024, "bf16")
    gemmlab.matmul(a, b)  # the plan exists before capture (capture allows no compilation or allocation of ours)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = gemmlab.matmul(a, b)
    for seed in (1, 2):
        a2, b2 = operands(1024, 1024, 1024, "bf16", seed=seed)
        a.copy_(a2)
        b.copy_(b2)
        graph.replay()
        torch.cuda.synchronize()
        assert rel_err(c, a2, b2) <= 1e-2


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_torch_compile_and_autograd_on_cuda(backend):
    if backend == "inductor":
        pytest.importorskip("triton")
    torch._dynamo.reset()
    w = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    x = torch.randn(384, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    f = torch.compile(lambda x, w: gemmlab.matmul(x, w.t()).relu(), fullgraph=True, backend=backend)
    y = f(x, w)
    ref_x, ref_w = x.detach().float().requires_grad_(), w.detach().float().requires_grad_()
    ref = (ref_x @ ref_w.t()).relu()
    assert y.dtype == torch.bfloat16  # torch's rule through the op and its fake
    assert float((y.float() - ref).norm() / ref.norm()) <= 1e-2
    grad = torch.randn_like(y)
    y.backward(grad)
    ref.backward(grad.float())
    for got, want in ((x.grad, ref_x.grad), (w.grad, ref_w.grad)):
        assert got.dtype == torch.bfloat16
        assert float((got.float() - want).norm() / want.norm()) <= 2e-2


def test_the_hot_path_prepares_nothing_the_second_time(monkeypatch):
    a, b = operands(512, 512, 512, "bf16")
    gemmlab.matmul(a, b)

    def refuse(*args, **kwargs):
        raise AssertionError("prepared a plan on the hot path")

    monkeypatch.setattr(call.checks, "prepare", refuse)
    a2, b2 = operands(512, 512, 512, "bf16", seed=4)
    assert rel_err(gemmlab.matmul(a2, b2), a2, b2) <= 1e-2


def test_host_arrays_with_a_named_gpu_kernel_go_there_and_back():
    a = np.random.default_rng(0).standard_normal((100, 80), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((80, 60), dtype=np.float32)
    c = gemmlab.matmul(a, b, kernel="cuda/v2_smem")
    assert isinstance(c, np.ndarray)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n,k", [(4097, 520, 1000), (127, 384, 4096)])
def test_block_scales_read_in_place_at_addresses_off_16_bytes_give_the_same_product(m, n, k):
    """The kernel copies block scales with TMA, which takes 16-byte aligned addresses only: scale tensors in the
    layouts it reads but one float into their storage are copied into a workspace first, and the product is the
    one the aligned scales give, bit for bit."""
    g = torch.Generator(device="cuda").manual_seed(m + n)
    a8, sa, _ = fp8_blocks(torch.randn(m, k, device="cuda", generator=g), 1)
    w8, sw, _ = fp8_blocks(torch.randn(n, k, device="cuda", generator=g), 128)
    kb, nb = sa.shape[1], sw.shape[0]
    store_a, store_b = torch.empty(kb * m + 1, device="cuda"), torch.empty(nb * kb + 1, device="cuda")
    sa_off, sb_off = store_a[1:].view(kb, m).t(), store_b[1:].view(nb, kb).t()  # (M, KB) and (KB, NB), in place
    sa_off.copy_(sa)
    sb_off.copy_(sw.t())
    assert sa_off.data_ptr() % 16 and sb_off.data_ptr() % 16
    want = gemmlab.matmul(a8, w8.t(), scale_a=sa.t().contiguous().t(), scale_b=sw.t())
    got = gemmlab.matmul(a8, w8.t(), scale_a=sa_off, scale_b=sb_off)
    assert torch.equal(got, want)


@pytest.mark.parametrize("m,n,k", [(1, 1, 32), (17, 1, 200), (4097, 17, 256), (127, 520, 1000), (512, 384, 4096),
                                   (2047, 3000, 1000)])
@pytest.mark.parametrize("recipe", ["tensor", "block"])
def test_fp8_through_torch_on_ragged_shapes(m, n, k, recipe):
    """FP8 from torch: per-tensor scales (1-element tensors) or DeepGEMM's blocks (A per 1×128, B per 128×128), B
    as w.t(), N = 1 included (a K×1 B is also a 1×K row, read in place); BF16 C against the float64 product of the
    dequantized operands. 2047×3000: C by TMA, edge tiles in M and N, several tiles per CTA, so tc4's held boxes
    of C are stored under a next tile's first k-tile, at the edges too."""
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n)
    a = torch.randn(m, k, device="cuda", generator=g)
    w = torch.randn(n, k, device="cuda", generator=g)
    if recipe == "tensor":
        sa, sw = a.abs().max().reshape(1) / 448, w.abs().max().reshape(1) / 448
        a8, w8 = (a / sa).to(torch.float8_e4m3fn), (w / sw).to(torch.float8_e4m3fn)
        c = gemmlab.matmul(a8, w8.t(), scale_a=sa, scale_b=sw)
        ref = (a8.double() * sa.double()) @ (w8.double() * sw.double()).t()
        precision = "fp8"
    else:
        a8, sa, fa = fp8_blocks(a, 1)  # sa: (M, K/128)
        w8, sw, fw = fp8_blocks(w, 128)  # sw: (N/128, K/128); B's scales are its transpose
        c = gemmlab.matmul(a8, w8.t(), scale_a=sa, scale_b=sw.t())
        ref = (a8.double() * fa.double()) @ (w8.double() * fw.double()).t()
        precision = "fp8_block"
    assert c.dtype == torch.bfloat16 and c.shape == (m, n)
    err = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref).clamp_min(1e-30))
    assert err <= tolerance_for(Problem(m, n, k, precision)), err


@pytest.mark.parametrize("m,n,k", [(4096, 4096, 1024), (2048, 3072, 1024)])  # 176 tiles split; 2 whole waves
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
def test_the_stream_k_block_level_runs_its_output_type_split_or_not(m, n, k, out_dtype):
    """tc6_stream_k_fp8_block named: where its tail splits tiles and where it launches tc8's whole-tile binary, C of
    the type asked for, against the float64 product of the dequantized operands."""
    g = torch.Generator(device="cuda").manual_seed(k)
    a8, sa, fa = fp8_blocks(torch.randn(m, k, device="cuda", generator=g), 1)
    w8, sw, fw = fp8_blocks(torch.randn(n, k, device="cuda", generator=g), 128)
    c = gemmlab.matmul(a8, w8.t(), "cuda/tc6_stream_k_fp8_block", scale_a=sa, scale_b=sw.t(), out_dtype=out_dtype)
    ref = (a8.double() * fa.double()) @ (w8.double() * fw.double()).t()
    assert c.dtype == out_dtype
    err = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
    assert err <= tolerance_for(Problem(m, n, k, "fp8_block")), err
