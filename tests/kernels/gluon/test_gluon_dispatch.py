"""The Gluon levels under kernel="auto", without a GPU: dispatch ranks one where a table row says it is fastest and
passes over it where it cannot take the call (a row TMA cannot stride, a layout it reads only after a copy, a fused
epilogue, e5m2 operands, a batch, no Triton); the suite's grid times the FP8 ones at every shape while the shipped
table has no row of them; and a call's plan (GPU calls made on the host: the device's answers stubbed, Triton's
launch replaced by a recorder) is one plan for every stream and graph capture, whose launches keep each address's
TMA descriptor.

On the H200, tests/kernels/gluon/test_gluon_gpu.py runs the same calls through torch tensors."""
import contextlib
import functools

import pytest

from gemmlab import device, dispatch
from gemmlab.call import checks
from gemmlab.call.operands import Facts
from gemmlab.epilogue import Epilogue
from gemmlab.harness import grid
from gemmlab.kernels.gluon.launch import kernel as gluon_kernel
from gemmlab.kernels.plan import COL, ROW, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import BatchedProblem, Problem

H200 = dispatch.shipped_gpu()
W_T = Layout(ROW, COL)  # x @ w.t()
SHAPE = (2048, 3072, 4096)
# per precision: the Gluon level, its CUDA C twin and their table rows at SHAPE (the Gluon level a little faster)
LEVELS = {"fp8": ("gluon/tc4_persistent_fp8", "cuda/tc4_persistent_fp8"),
          "fp8_block": ("gluon/tc8_block_scaled_fp8", "cuda/tc8_block_scaled_fp8"),
          "bf16": ("gluon/tc4_persistent_bf16", "cuda/tc4_persistent_bf16")}
E4M3, E5M2 = "float8_e4m3fn", "float8_e5m2"

pytestmark = pytest.mark.usefixtures("own_dispatch_cache")


class _Recorder:
    """Stands in for a plan's TritonLaunch: each descriptor passed as its TensorDescriptor (not encoded: that needs
    the driver), each launch's grid, arguments and stream recorded."""

    def __init__(self):
        self.calls = []

    def encode(self, operand, descriptor):
        return [descriptor]

    def __call__(self, grid, stream, *args):
        self.calls.append((grid, args, stream))


def rec(kernel, ms, precision, shape=SHAPE, layout=None, host_us=20.0):
    m, n, k = shape
    r = {"kernel": kernel, "backend": kernel.split("/")[0], "precision": precision, "m": m, "n": n, "k": k,
         "median_ms": ms, "verified": True, "status": "ok", "call_host_us": host_us}
    if layout:
        r["layout"] = layout
    return r


@pytest.fixture
def table(monkeypatch):
    """kernel="auto" reads a table where each Gluon level is measured 5% faster than its CUDA twin at SHAPE (the BF16
    twin also in the row,col layout, which the Gluon BF16 level reads only after a copy of B); Triton installed as
    the levels are written for."""
    monkeypatch.setattr(gluon_kernel, "installed_triton", lambda: gluon_kernel.SUPPORTED)
    records = []
    for precision, (gluon, cuda) in LEVELS.items():
        records += [rec(gluon, 0.095, precision), rec(cuda, 0.100, precision)]
    records.append(rec(LEVELS["bf16"][1], 0.100, "bf16", layout="row,col"))
    table = dispatch.table_from_results({"env": {"gpu": {"name": H200.name}}, "records": records})
    monkeypatch.setattr(dispatch, "load_table", functools.lru_cache(maxsize=1)(lambda: table))
    return table


@pytest.fixture
def on_host_h200(monkeypatch, table):
    """A call's plan made on the host: the H200's answers for the GPU, Triton's compiled kernel kept as compiled."""
    monkeypatch.setattr(device, "gpu_info", lambda index: H200)
    monkeypatch.setattr(device, "require_gpu", lambda what: H200)
    monkeypatch.setattr(device, "using", lambda index: contextlib.nullcontext())


def _natural(precision):
    return W_T if precision != "bf16" else ROW_MAJOR


@pytest.mark.parametrize("precision", list(LEVELS))
def test_auto_runs_the_gluon_level_where_its_row_is_fastest(table, precision):
    gluon, cuda = LEVELS[precision]
    problem = Problem(*SHAPE, precision)
    choice = dispatch.choose(problem, _natural(precision), H200)
    assert choice.spec.name == gluon and choice.copies == ()
    assert "#1 of the 2 candidates at 2048x3072x4096" in choice.why
    # between measured shapes its prediction is ranked as any kernel's (its model: the CUDA wgmma levels' traffic)
    near = dispatch.rank(Problem(2048, 3072, 6144, precision), _natural(precision), H200)
    assert [c.spec.name for c in near] == [gluon, cuda] and near[0].model is not None and not near[0].refusal


@pytest.mark.parametrize("precision, shape, said", [
    ("fp8", (2048, 3072, 4104), "K=4104 is not a multiple of 16"),  # FP8 rows of K: 16 bytes are 16 elements
    ("fp8", (2048, 3068, 4096), "N=3068 is not a multiple of 8"),  # BF16 C's rows
    ("fp8_block", (2048, 3072, 4100), "K=4100 is not a multiple of 16"),
    ("bf16", (2048, 3072, 4100), "K=4100 is not a multiple of 8"),
    ("bf16", (2047, 3070, 4096), "N=3070 is not a multiple of 8"),
])
def test_auto_passes_over_a_gluon_level_at_a_shape_tma_cannot_stride(table, precision, shape, said):
    """Ragged shapes the Gluon levels refuse (TMA's 16-byte rows) go to the CUDA twin, which stages such rows; the
    refusal is the candidate's, as other kernels' are."""
    gluon, cuda = LEVELS[precision]
    problem = Problem(*shape, precision)
    ranked = {c.spec.name: c for c in dispatch.rank(problem, _natural(precision), H200)}
    assert said in ranked[gluon].refusal and "16 bytes" in ranked[gluon].refusal and not ranked[cuda].refusal
    assert dispatch.choose(problem, _natural(precision), H200).spec.name == cuda


def test_a_bf16_gluon_level_runs_for_row_major_b_but_not_for_w_t(table):
    """The BF16 Gluon levels read B row-major (K×N) only: x @ w (w K×N) runs the faster Gluon level in place; x @ w.t()
    runs the CUDA level that reads w in place rather than copy w on every call."""
    gluon, cuda = LEVELS["bf16"]
    problem = Problem(*SHAPE, "bf16")
    assert dispatch.choose(problem, ROW_MAJOR, H200).spec.name == gluon
    ranked = {c.spec.name: c for c in dispatch.rank(problem, W_T, H200)}
    assert ranked[gluon].copies == ("B",) and ranked[cuda].copies == ()
    choice = dispatch.choose(problem, W_T, H200)
    assert choice.spec.name == cuda and choice.copies == ()


@pytest.mark.parametrize("precision", list(LEVELS))
@pytest.mark.parametrize("epilogue", [Epilogue(addend="bias"), Epilogue("gelu"), Epilogue("gelu", addend="bias")],
                         ids=["bias", "gelu", "bias-gelu"])
def test_a_fused_epilogue_goes_to_a_level_that_fuses_it(table, precision, epilogue):
    """The Gluon levels store C = AB as it is (no fused epilogue): gemmlab.linear with a bias or an activation runs
    the CUDA level, which fuses it in one launch; without one (an identity epilogue) the Gluon level."""
    gluon, cuda = LEVELS[precision]
    problem = Problem(*SHAPE, precision)
    assert get_kernel(gluon).epilogue_refusal(epilogue)
    assert dispatch.choose(problem, _natural(precision), H200, epilogue).spec.name == cuda
    assert dispatch.choose(problem, _natural(precision), H200, Epilogue()).spec.name == gluon


@pytest.mark.parametrize("precision", ["fp8", "fp8_block"])
def test_e5m2_operands_go_to_a_level_with_a_build_for_them(table, precision):
    """The Gluon FP8 levels take e4m3 only; e5m2 in either operand goes to the CUDA level (its A_E5M2 / B_E5M2
    builds)."""
    gluon, cuda = LEVELS[precision]
    problem = Problem(*SHAPE, precision)
    for formats in ((E5M2, E4M3), (E4M3, E5M2), (E5M2, E5M2)):
        assert "float8_e5m2" in get_kernel(gluon).formats_refusal(*formats)
        assert dispatch.choose(problem, W_T, H200, formats=formats).spec.name == cuda
    assert dispatch.choose(problem, W_T, H200, formats=(E4M3, E4M3)).spec.name == gluon


def test_a_batch_goes_to_a_level_that_runs_it_in_one_launch(table):
    problem = BatchedProblem(*SHAPE, "bf16", batch=4, stride_a=SHAPE[0] * SHAPE[2], stride_b=0)
    gluon, cuda = LEVELS["bf16"]
    ranked = {c.spec.name: c for c in dispatch.rank(problem, ROW_MAJOR, H200)}
    assert "batch" in ranked[gluon].refusal
    assert dispatch.choose(problem, ROW_MAJOR, H200).spec.name == cuda


def test_without_the_triton_they_are_written_for_auto_runs_the_cuda_levels(table, monkeypatch):
    monkeypatch.setattr(gluon_kernel, "installed_triton", lambda: "3.5.1")
    for precision, (gluon, cuda) in LEVELS.items():
        problem = Problem(*SHAPE, precision)
        ranked = {c.spec.name: c for c in dispatch.rank(problem, _natural(precision), H200)}
        assert "Triton 3.5.1 is installed" in ranked[gluon].refusal
        assert dispatch.choose(problem, _natural(precision), H200).spec.name == cuda


def _fp8_facts(precision, shape, formats=(E4M3, E4M3)):
    m, n, k = shape
    fa, fb = Facts("torch", (m, k), formats[0], ROW, 0), Facts("torch", (k, n), formats[1], COL, 0)
    if precision == "fp8":
        scales = (Facts("torch", (1,), "float32", ROW, 0), None)
    else:  # the transposes of row-major (K/128, M) and (N/128, K/128) tensors: gemmlab.fp8's layouts, read in place
        scales = (Facts("torch", (m, -(-k // 128)), "float32", COL, 0),
                  Facts("torch", (-(-k // 128), -(-n // 128)), "float32", COL, 0))
    return fa, fb, scales


@pytest.mark.parametrize("precision", ["fp8", "fp8_block"])
def test_a_call_resolves_to_the_gluon_level_and_e5m2_to_its_twin(on_host_h200, precision):
    """checks.resolve, as gemmlab.matmul calls it: e4m3 operands with per-tensor or block scales run the Gluon level
    in their C type, e5m2 ones the CUDA level (not a DTypeError from the Gluon level's formats)."""
    gluon, cuda = LEVELS[precision]
    for out in ("bfloat16", "float32"):
        fa, fb, scales = _fp8_facts(precision, SHAPE)
        spec, problem, why, scaled = checks.resolve(fa, fb, "auto", None, True, H200, scales, out)
        assert (spec.name, str(spec.output_dtype(problem)), scaled.precision, scaled.copy) == \
            (gluon, out, precision, (False, False))
        fa, fb, scales = _fp8_facts(precision, SHAPE, (E5M2, E4M3))
        spec, *_ = checks.resolve(fa, fb, "auto", None, True, H200, scales, out)
        assert spec.name == cuda and spec.params["A_E5M2"] == 1


@pytest.mark.parametrize("precision", ["fp8", "fp8_block", "bf16"])
@pytest.mark.parametrize("out", ["bfloat16", "float32"])
def test_a_gluon_plan_serves_every_stream_and_capture_and_keeps_its_descriptors(on_host_h200, precision, out,
                                                                               monkeypatch):
    """The plan kernel="auto" makes for a Gluon level holds no workspace and makes none: Prepared.for_stream gives
    the same plan on a side stream and under CUDA graph capture (no per-stream plan, which a Gluon level has no way
    to make). Its launches (as torch_op.direct makes them: the stream, then the scales' addresses) pass each operand's
    TMA descriptor for its address, encoded once an address and kept, so a call at the addresses of an earlier one
    encodes none."""
    gluon, _ = LEVELS[precision]
    if precision == "bf16":
        fa, fb, scales = Facts("torch", (SHAPE[0], SHAPE[2]), "bfloat16", ROW, 0), \
            Facts("torch", (SHAPE[2], SHAPE[1]), "bfloat16", ROW, 0), (None, None)
    else:
        fa, fb, scales = _fp8_facts(precision, SHAPE)
    prepared = checks.prepare(fa, fb, "auto", None, 0, scales, out)
    plan = prepared.plan
    assert plan.spec.name == gluon and prepared.out_dtype == out and not (prepared.copy_a or prepared.copy_b)
    assert prepared.shared and prepared.for_stream(11) is plan and prepared.for_stream(22, capturing=True) is plan
    assert prepared.for_stream(33, capturing=False) is plan and not prepared.by_stream
    plan.launcher = recorder = _Recorder()
    extra = (0x40000, 0x50000) if prepared.scaled else ()
    for stream, c in ((11, 0x30000), (22, 0x60000), (11, 0x30000)):
        prepared.for_stream(stream).launch(0x10000, 0x20000, c, stream, *extra)
    first, second, third = recorder.calls
    assert [call[2] for call in recorder.calls] == [11, 22, 11]
    assert all(call[0] == plan.grid for call in recorder.calls)
    for call in recorder.calls:
        assert [d.base.data_ptr() for d in call[1][:3]] == [0x10000, 0x20000, call[1][2].base.data_ptr()]
        assert list(call[1][3:]) == [*extra, *plan.constexprs]
    assert [x.base.data_ptr() for x in (first[1][2], second[1][2])] == [0x30000, 0x60000]
    assert all(x is y for x, y in zip(first[1][:3], third[1][:3]))  # the same addresses: no descriptor built
    assert first[1][0] is second[1][0] and first[1][1] is second[1][1] and first[1][2] is not second[1][2]
    m, n, k = SHAPE
    c_desc = first[1][2]
    assert (c_desc.shape, c_desc.strides, c_desc.base.dtype) == ([m, n], [n, 1], out)


def test_a_plan_keeps_a_bounded_number_of_descriptors_an_operand(on_host_h200, monkeypatch):
    """Outputs at ever new addresses encode a descriptor each and keep the last KEPT_DESCRIPTORS."""
    fa, fb, scales = _fp8_facts("fp8", SHAPE)
    plan = checks.prepare(fa, fb, "auto", None, 0, scales).plan
    plan.launcher = recorder = _Recorder()
    addresses = [0x100000 + 256 * i for i in range(3 * gluon_kernel.KEPT_DESCRIPTORS)]
    for c in addresses:
        plan.launch(0x10000, 0x20000, c, 0, 0x40000, 0x50000)
    kept_a, kept_b, kept_c = plan.kept
    assert len(kept_a) == len(kept_b) == 1 and list(kept_c) == addresses[-gluon_kernel.KEPT_DESCRIPTORS:]
    assert [call[1][2].base.data_ptr() for call in recorder.calls] == addresses


def _without_gluon_rows(table):
    def rows_of(shapes):
        return {shape: [r for r in rows if not r["kernel"].startswith("gluon/")] for shape, rows in shapes.items()}

    return {gpu: {p: rows_of(shapes) for p, shapes in precs.items()} for gpu, precs in table.items()}


@pytest.mark.parametrize("precision", ["fp8", "fp8_block"])
def test_the_grid_times_the_gluon_fp8_level_at_every_shape_until_the_table_has_it(precision, monkeypatch):
    """The FP8 grids (x @ w.t(), which they read in place) take their Gluon level; while the shipped table has no
    row of it, the pruner has no prediction to skip it by, so it is timed at all 69 shapes (each aligned for TMA), and
    the run's estimate counts it at the slowest prediction of each shape, not as free."""
    gluon, _ = LEVELS[precision]
    monkeypatch.setattr(gluon_kernel, "installed_triton", lambda: gluon_kernel.SUPPORTED)
    shipped = _without_gluon_rows(grid.shipped_table())
    monkeypatch.setattr(grid, "shipped_table", lambda: shipped)
    assert gluon in grid.CANDIDATES[precision].split(",")
    rows, seconds = grid.plan(precision, W_T, H200)
    assert all(gluon in timed for _, timed, _ in rows) and len(rows) == len(grid.SHAPES)
    others = grid.CANDIDATES[precision].replace("," + gluon, "")
    monkeypatch.setitem(grid.CANDIDATES, precision, others)
    _, without = grid.plan(precision, W_T, H200)
    assert seconds - without >= len(grid.SHAPES) * grid.SECONDS_PER_RUN
    assert seconds < 240


def test_the_bf16_grid_leaves_the_gluon_levels_out():
    """In the grid's layout they would copy w on every call, behind levels that read it in place."""
    assert not [name for name in grid.CANDIDATES["bf16"].split(",") if name.startswith("gluon/")]
    assert all(operand_copies_of(name) == ("B",) for name in ("gluon/tc2_wgmma_tma_bf16",
                                                               "gluon/tc3_warp_specialized_bf16", LEVELS["bf16"][0]))


def operand_copies_of(name):
    from gemmlab.dispatch_layout import operand_copies

    return operand_copies(W_T, get_kernel(name))


@pytest.mark.skipif(gluon_kernel.triton_refusal("") is not None, reason=f"needs Triton {gluon_kernel.SUPPORTED}")
@pytest.mark.parametrize("name", ["gluon/tc2_wgmma_tma_bf16", "gluon/tc3_warp_specialized_bf16",
                                  *(gluon for gluon, _ in LEVELS.values())])
def test_a_launch_allocates_nothing_and_takes_its_descriptors_from_the_host(name):
    """What Triton's launcher does per launch of each build, from its compiled metadata: no global or profile
    scratch (which it would allocate per launch through an allocator of the caller's, under graph capture the
    graph's), no cooperative or programmatic-dependent launch, and the descriptors as host-encoded TMA descriptors
    passed by value (tensordesc_meta), which a graph captures with the kernel's parameters."""
    for spec in get_kernel(name).configurations():
        md = spec.gluon_compile().metadata
        assert (md.global_scratch_size, md.profile_scratch_size) == (0, 0)
        assert not md.launch_cooperative_grid and not md.launch_pdl
        assert len(md.tensordesc_meta) == 3


@pytest.mark.parametrize("precision", list(LEVELS))
@pytest.mark.parametrize("off", [0, 1, 2], ids=["A", "B", "C"])
def test_an_operand_off_16_bytes_is_staged_for_that_call(on_host_h200, monkeypatch, precision, off):
    """A view into a larger tensor whose base TMA cannot take: copied on the call's stream into a buffer of that
    call's (its rows as stored: A M×K, B N×K for FP8 or K×N, C M×N), the kernel run on the copy, C copied back after
    the launch; the other operands read in place."""
    from gemmlab import driver

    gluon, _ = LEVELS[precision]
    m, n, k = SHAPE
    if precision == "bf16":
        fa, fb, scales = Facts("torch", (m, k), "bfloat16", ROW, 0), Facts("torch", (k, n), "bfloat16", ROW, 0), \
            (None, None)
    else:
        fa, fb, scales = _fp8_facts(precision, SHAPE)
    plan = checks.prepare(fa, fb, "auto", None, 0, scales).plan
    assert plan.spec.name == gluon
    events = []

    class Launcher(_Recorder):
        def __call__(self, grid, stream, *args):
            events.append(("launch", [d.base.data_ptr() for d in args[:3]], stream))

    def staging_buffer(nbytes, stream):
        events.append(("buffer", nbytes, stream))
        return object(), 0x90000

    plan.launcher = Launcher()
    monkeypatch.setattr(gluon_kernel, "staging_buffer", staging_buffer)
    monkeypatch.setattr(driver, "copy_2d", lambda *args: events.append(("copy", *args)))
    ptrs = [0x10000, 0x20000, 0x30000]
    ptrs[off] += 2
    extra = (0x40000, 0x50000) if plan.spec.prec.scaled else ()
    plan.launch(*ptrs, 5, *extra)
    elem = 2 if precision == "bf16" or off == 2 else 1  # C: BF16
    rows, cols = [(m, k), (n, k) if precision != "bf16" else (k, n), (m, n)][off]
    width = cols * elem
    staged = list(ptrs)
    staged[off] = 0x90000
    launch = ("launch", staged, 5)
    if off < 2:
        assert events == [("buffer", rows * width, 5), ("copy", 0x90000, width, ptrs[off], width, width, rows, 5),
                          launch]
    else:
        assert events == [("buffer", rows * width, 5), launch,
                          ("copy", ptrs[off], width, 0x90000, width, width, rows, 5)]


def test_fp16_reads_bf16s_table_without_the_gluon_levels(table):
    """FP16 calls rank BF16's rows under each level's FP16 name; the Gluon levels have no FP16 build, so their rows
    are left out and the CUDA level's FP16 build runs."""
    problem = Problem(*SHAPE, "fp16")
    names = [c.spec.name for c in dispatch.rank(problem, ROW_MAJOR, H200)]
    assert names == ["cuda/tc4_persistent_fp16"]
    assert dispatch.choose(problem, ROW_MAJOR, H200).spec.name == "cuda/tc4_persistent_fp16"
