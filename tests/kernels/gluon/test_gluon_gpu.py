"""The Gluon levels on a GPU (skipped without one, or without the Triton they are written for): against float64 on
ragged shapes, into NaN-poisoned C (gemmlab.harness.verify.check), in both C types, tc4 at both its tile widths; a
shape TMA cannot take is refused by name before anything launches, and a base address off 16 bytes is staged at
launch; tc8 (block-scaled FP8) on operands whose scale blocks span orders of magnitude, so that a scale read from
the wrong block shows. Through gemmlab.matmul and gemmlab.linear on torch tensors, named and picked by
kernel="auto" from a table where they are fastest: into a NaN-poisoned out=, in both C types, on a side stream, under
CUDA graph capture and replay with fresh inputs; where they cannot take the call (w.t() in BF16, a fused bias),
another level."""
import pytest

from gemmlab.errors import LayoutError
from gemmlab.kernels.gluon.launch import kernel as gluon_kernel
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem
from fp8_blocks import fp8_blocks

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
def test_a_base_off_16_bytes_is_staged_at_launch(name):
    """A, B and C each a view one element into a larger buffer (a base TMA cannot take), with a NaN-poisoned C: each
    staged for the call, C right and the elements around it untouched."""
    import cupy

    from gemmlab.harness.reference import compare, reference, tolerance_for

    _needs_gpu()
    spec = get_kernel(name)
    problem = Problem(136, 264, 4112 if spec.prec.input_bytes == 1 else 4104, spec.precision)
    a, b = spec.make_inputs(problem, 2, cupy)
    ref = reference(a, b)
    plan = spec.plan(problem, spec.natural_layout(problem))
    out = spec.output_dtype(problem)
    m, n, _ = problem.shape

    def shifted(x):
        """x's values in a view one element into a buffer of its own."""
        flat = cupy.empty(x.size + 16, x.dtype)
        view = flat[1:1 + x.size].reshape(x.shape)
        view[...] = x
        return flat, view

    for off in range(3):
        ops = [a.data if spec.prec.scaled else a, b.data if spec.prec.scaled else b]
        if off < 2:
            ops[off] = shifted(ops[off])[1]
        if off == 2:
            flat = cupy.full(m * n + 16, cupy.nan, out)
            c = flat[1:1 + m * n].reshape(m, n)
        else:
            flat, c = None, cupy.full((m, n), cupy.nan, out)
        assert [x.data.ptr % 16 != 0 for x in (*ops, c)] == [i == off for i in range(3)]
        scales = [x.scale.data.ptr for x in (a, b)] if spec.prec.scaled else []
        plan.launch(ops[0].data.ptr, ops[1].data.ptr, c.data.ptr, cupy.cuda.get_current_stream().ptr, *scales)
        cupy.cuda.get_current_stream().synchronize()
        report = compare(c, ref, tolerance_for(problem), problem.prec.recipe_tolerance)
        assert report.passed, (off, report)
        if flat is not None:
            guard = cupy.concatenate([flat[:1], flat[1 + m * n:]]).astype(cupy.float32)
            assert bool(cupy.isnan(guard).all())


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


# ---- through gemmlab.matmul and gemmlab.linear on torch tensors, named and chosen by kernel="auto" ----------------

TWINS = {"gluon/tc4_persistent_fp8": "cuda/tc4_persistent_fp8",
         "gluon/tc8_block_scaled_fp8": "cuda/tc8_block_scaled_fp8",
         "gluon/tc4_persistent_bf16": "cuda/tc4_persistent_bf16"}
API_SHAPES = [(1000, 3072, 4096), (17, 264, 4112)]  # ragged M; N and K past whole tiles and k-tiles


@pytest.fixture
def auto_table(monkeypatch):
    """kernel="auto" reads a table (this GPU's) where each Gluon level in TWINS is measured 100x faster than its CUDA
    twin at API_SHAPES; the plans made before and after are dropped, so no call reuses another table's choice."""
    import functools

    import gemmlab
    from gemmlab import device, dispatch

    _needs_gpu()
    rows = {}
    for gluon, twin in TWINS.items():
        shapes = rows.setdefault(get_kernel(gluon).precision, {})
        for m, n, k in API_SHAPES:
            shapes[f"{m}x{n}x{k}"] = [{"kernel": gluon, "ms": 0.001, "host_us": 1.0},
                                      {"kernel": twin, "ms": 0.1, "host_us": 1.0}]
    table = {device.gpu().name: rows}
    monkeypatch.setattr(dispatch, "load_table", functools.lru_cache(maxsize=1)(lambda: table))
    gemmlab.clear_plans()
    yield table
    gemmlab.clear_plans()


class TorchCall:
    """gemmlab.matmul(x, w.t()) (FP8, scaled per tensor or per block) or gemmlab.matmul(x, b) (BF16, b = w.t() stored
    K×N, which the BF16 Gluon levels read in place) on static CUDA tensors; ``refill`` writes new values into them,
    ``reference`` is the float64 product of what the kernel multiplies."""

    def __init__(self, precision, shape, kernel="auto", out_dtype=None):
        self.precision, self.shape, self.kernel, self.out_dtype = precision, shape, kernel, out_dtype
        self.buffers = self._values(0)

    def _values(self, seed):
        import torch

        m, n, k = self.shape
        g = torch.Generator(device="cuda").manual_seed(seed)
        x, w = (torch.randn(rows, k, device="cuda", generator=g) for rows in (m, n))
        if self.precision == "fp8_block":
            (x8, sx, fx), (w8, sw, fw) = fp8_blocks(x, 1), fp8_blocks(w, 128)
            # scale_a as the transpose of a row-major (K/128, M) tensor and scale_b of a row-major (N/128, K/128)
            # one: the layouts the FP8 levels read in place (gemmlab.fp8)
            return {"a": x8, "w": w8, "scale_a": sx.t().contiguous().t(), "scale_b": sw.t(),
                    "ref": (x8.double() * fx.double()) @ (w8.double() * fw.double()).t()}
        if self.precision == "fp8":
            sx, sw = x.abs().max().reshape(1) / 448, w.abs().max().reshape(1) / 448
            x8, w8 = (x / sx).to(torch.float8_e4m3fn), (w / sw).to(torch.float8_e4m3fn)
            return {"a": x8, "w": w8, "scale_a": sx, "scale_b": sw,
                    "ref": (x8.double() * sx.double()) @ (w8.double() * sw.double()).t()}
        x16, w16 = x.bfloat16(), w.bfloat16()
        return {"a": x16, "w": w16.t().contiguous(), "ref": x16.double() @ w16.double().t()}

    def refill(self, seed):
        for name, v in self._values(seed).items():
            self.buffers[name].copy_(v)

    def __call__(self, out=None):
        import gemmlab

        x = self.buffers
        if self.precision == "bf16":
            return gemmlab.matmul(x["a"], x["w"], self.kernel, out=out, out_dtype=self.out_dtype)
        return gemmlab.matmul(x["a"], x["w"].t(), self.kernel, out=out, out_dtype=self.out_dtype,
                              scale_a=x["scale_a"], scale_b=x["scale_b"])

    def chosen(self) -> str:
        """The kernel the plan of this call runs."""
        import gemmlab

        x = self.buffers
        b = x["w"] if self.precision == "bf16" else x["w"].t()
        scales = {} if self.precision == "bf16" else {"scale_a": x["scale_a"], "scale_b": x["scale_b"]}
        return gemmlab.plan(x["a"], b, self.kernel, out_dtype=self.out_dtype, **scales).plan.spec.name


def _assert_right(c, ref, precision, out_dtype, k):
    """C in its dtype, every element finite, within the precision's tolerance at K of the float64 product."""
    import torch

    from gemmlab.harness.reference import tolerance_for

    assert c.dtype == getattr(torch, out_dtype or "bfloat16") and c.shape == ref.shape
    c64 = c.double()
    assert torch.isfinite(c64).all()
    rel = float(torch.linalg.norm(c64 - ref) / torch.linalg.norm(ref))
    assert rel <= tolerance_for(Problem(*ref.shape, k, precision)), rel


API_CASES = [pytest.param(name, shape, out, id=f"{name.split('/')[1]}-{'x'.join(map(str, shape))}-{out or 'default'}")
             for name in TWINS for shape in API_SHAPES for out in (None, "float32")]


@pytest.mark.parametrize("name, shape, out_dtype", API_CASES)
@pytest.mark.parametrize("kernel", ["named", "auto"])
def test_through_torch_into_nan_poisoned_out_and_on_a_side_stream(auto_table, name, shape, out_dtype, kernel):
    """Named, and chosen by kernel="auto" from a table where it is fastest: into a NaN-poisoned out=, into a new C,
    and on a side stream, C against the float64 product each time (C's dtype: BF16 by default, FP32 asked)."""
    import torch

    precision = get_kernel(name).precision
    f = TorchCall(precision, shape, name if kernel == "named" else "auto", out_dtype)
    assert f.chosen() == name
    ref = f.buffers["ref"]
    out = torch.full(shape[:2], float("nan"), device="cuda", dtype=getattr(torch, out_dtype or "bfloat16"))
    assert f(out=out) is out
    torch.cuda.synchronize()
    _assert_right(out, ref, precision, out_dtype, shape[2])
    _assert_right(f(), ref, precision, out_dtype, shape[2])
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        f.refill(5)
        c = f()
    side.synchronize()
    _assert_right(c, f.buffers["ref"], precision, out_dtype, shape[2])


@pytest.mark.parametrize("name", list(TWINS))
def test_auto_picks_it_under_cuda_graph_capture_and_replays_with_fresh_inputs(auto_table, name):
    """torch's pattern: warm up on a side stream, capture on the graph's own stream, then copy fresh values into the
    static inputs and replay: the replay gives the eager result bit for bit, and the float64 product's accuracy."""
    import torch

    precision = get_kernel(name).precision
    shape = API_SHAPES[0]
    f = TorchCall(precision, shape)
    assert f.chosen() == name
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            f()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = f()
    for seed in (1, 2):
        f.refill(seed)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(c, f())
        _assert_right(c, f.buffers["ref"], precision, None, shape[2])


@pytest.mark.parametrize("x_shape", [(1000, 4096), (4, 250, 4096)], ids=["2d", "3d"])
def test_linear_runs_the_gluon_level_after_a_copy_and_a_bias_elsewhere(auto_table, x_shape):
    """gemmlab.linear(x, w) reads w as w.t(), which the BF16 Gluon level reads only after a copy: with its CUDA twin
    in the table, "auto" runs the twin in place; with the Gluon level alone, the Gluon level after a copy of w, right
    (x of 2 and 3 dimensions). With a bias (or an activation), which the Gluon levels do not fuse, "auto" runs a level
    that does, though the table has no other row: the precision's defaults."""
    import torch

    import gemmlab
    from gemmlab import call, dispatch

    name = "gluon/tc4_persistent_bf16"
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.randn(*x_shape, device="cuda", generator=g).bfloat16()
    w = torch.randn(3072, 4096, device="cuda", generator=g).bfloat16()
    bias = torch.randn(3072, device="cuda", generator=g).bfloat16()
    ref = (x.double() @ w.double().t()).reshape(-1, 3072)

    def ran():
        kernels = [p.plan.spec.name for key, p in call.plans.items() if key[0] == "auto"]
        gemmlab.clear_plans()
        return kernels

    y = gemmlab.linear(x, w)
    _assert_right(y.reshape(-1, 3072), ref, "bf16", None, 4096)
    assert ran() == [TWINS[name]]
    table = auto_table[next(iter(auto_table))]["bf16"]
    for rows in table.values():
        rows[:] = [r for r in rows if r["kernel"] == name]
    dispatch.load_table.cache_clear()
    y = gemmlab.linear(x, w)
    _assert_right(y.reshape(-1, 3072), ref, "bf16", None, 4096)
    assert ran() == [name] and gemmlab.plan(x.reshape(-1, 4096), w.t()).copy_b
    gemmlab.clear_plans()
    for activation in (None, "gelu"):
        y = gemmlab.linear(x, w, bias, activation)
        z = ref + bias.double()
        if activation:
            z = torch.nn.functional.gelu(z)
        _assert_right(y.reshape(-1, 3072), z, "bf16", None, 4096)
        assert not ran()[0].startswith("gluon/")


@pytest.mark.parametrize("name", list(TWINS))
def test_one_process_runs_a_level_on_two_gpus(name):
    """The same level named for operands on cuda:0, then cuda:1, then cuda:0 again: each device loads the binary of
    its own, and each call is right (skipped on a machine of one GPU)."""
    import torch

    _needs_gpu()
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA GPUs")
    precision = get_kernel(name).precision
    for index in (0, 1, 0):
        with torch.cuda.device(index):
            f = TorchCall(precision, API_SHAPES[1], name)
            assert f.buffers["a"].device.index == index
            c = f()
        with torch.cuda.device(0):  # the operands' device is not the current one for the calls on cuda:1
            c = f()
        torch.cuda.synchronize(index)
        assert c.device.index == index
        _assert_right(c, f.buffers["ref"], precision, None, API_SHAPES[1][2])
