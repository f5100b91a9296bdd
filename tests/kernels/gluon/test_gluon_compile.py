"""The Gluon levels without a GPU: each compiles for sm_90a at its registered parameters in both C types (wgmma in
the PTX, HGMMA in the SASS, no local memory), and tc4 at its narrow tile too; the host's launch geometry and shared
memory against the compiled kernel's, tc4's tile width per problem (cuda/tc4's rule), TMA's alignment limits refused
by name, and a Triton of another version refused by name. tc8 (block-scaled FP8): each consumer partition's k-tile
loop promotes into FP32 with the next k-tile's scales in flight, its tiles refused where they would straddle B's
scale blocks, its variants of two partitions and 64-wide tiles compiled, and its operands' scale layouts and
traffic model those of its CUDA C twin. A launch's arguments: the descriptors, scales and constexprs of the compiled
signature, and what reaches the launch function under Triton's descriptor wrapper, the same as Triton's own launch
passes it.

What cannot be checked here: that the kernels compute C (tests/kernels/gluon/test_gluon_gpu.py, on a GPU; for tc8
that it reads each k-block's scales at the right place), the registers ptxas gave each partition (Triton reads them
when it loads the cubin), that TMA zero-fills and clips the ragged edges as the descriptors ask, and the launch itself
(the binary loaded, the descriptors encoded by the driver, the kernel on the stream).
One binary serves every shape: the shape travels in the descriptors, so there is no ragged-shape specialization.
"""
import re
import subprocess
import sys

import pytest

import sass
from gemmlab.errors import LayoutError, MissingDependencyError
from gemmlab.kernels.gluon.launch import kernel as gluon_kernel
from gemmlab.kernels.registry import get_kernel, list_kernels
from gemmlab.problem import Problem

triton_ok = gluon_kernel.triton_refusal("") is None
needs_triton = pytest.mark.skipif(not triton_ok, reason=f"needs Triton {gluon_kernel.SUPPORTED} (gemmlab[gluon])")

LEVELS = {"gluon/tc2_wgmma_tma_bf16": "cuda/tc2_wgmma_tma_bf16",
          "gluon/tc3_warp_specialized_bf16": "cuda/tc3_warp_specialized_bf16",
          "gluon/tc4_persistent_bf16": "cuda/tc4_persistent_bf16",
          "gluon/tc4_persistent_fp8": "cuda/tc4_persistent_fp8",
          "gluon/tc8_block_scaled_fp8": "cuda/tc8_block_scaled_fp8"}
TC8 = "gluon/tc8_block_scaled_fp8"
# the tensor cores' operand type as PTX and SASS spell it, and a wgmma's K (32 bytes)
MMA = {"bf16": ("bf16.bf16", "BF16", "HGMMA", 16), "fp8": ("e4m3.e4m3", "E4M3.E4M3", "QGMMA", 32)}
MMA["fp8_block"] = MMA["fp8"]
BUILDS = [pytest.param(name, out, narrow, id=f"{name.split('/')[1]}-{out}{'-narrow' if narrow else ''}")
          for name in LEVELS for out in ("bfloat16", "float32")
          for narrow in ((False, True) if "NARROW_BN" in get_kernel(name).params else (False,))]
# the seed shape, whose last wave 192-wide tiles fill better on 132 SMs, and two whose 256-wide tiles fill theirs
TILE_WIDTHS = [((2048, 3072, 4096), 192), ((4096, 4096, 4096), 256), ((8192, 8192, 8192), 256)]


def _problem(spec, m, n, k):
    return Problem(m, n, k, spec.precision)


def test_the_family_is_registered_beside_its_cuda_twins():
    assert sorted(s.name for s in list_kernels("gluon/*")) == sorted(LEVELS)
    for name, twin in LEVELS.items():
        spec, cuda = get_kernel(name), get_kernel(twin)
        assert (spec.backend, spec.level, spec.precision) == ("gluon", cuda.level, cuda.precision)
        shared = {k: v for k, v in spec.params.items() if k in cuda.params}
        assert shared == {k: cuda.params[k] for k in shared} and {"BM", "BN", "STAGES"} <= set(shared)


def test_reading_the_registry_imports_no_triton():
    code = ("import sys; from gemmlab.kernels.registry import list_kernels; "
            "assert list_kernels('gluon/*'); print('triton' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@needs_triton
@pytest.mark.parametrize("name, out, narrow", BUILDS)
def test_compiles_for_sm90a_with_wgmma_and_no_local_memory(name, out, narrow, tmp_path):
    base = get_kernel(name)
    spec = base.for_formats(base.prec.input_dtype, base.prec.input_dtype, out)
    if narrow:
        spec = spec.narrow()
        assert spec.params["BN"] == base.params["NARROW_BN"] and spec in base.configurations()
    assert str(spec.output_dtype(_problem(spec, 8, 8, 8))) == out
    _check_compiled(spec, tmp_path)


def _check_compiled(spec, tmp_path):
    """The compiled kernel: sm_90a, its wgmma shapes, TMA, no local memory, the host's threads, shared memory and
    register split."""
    ptx_type, sass_type, sass_op, mma_k = MMA[spec.precision]
    compiled = spec.gluon_compile()
    ptx = compiled.asm["ptx"]
    assert ".target sm_90a" in ptx
    widths = spec.accumulator_parts  # one wgmma a part: the tile, or a persistent level's two parts
    assert sum(widths) == spec.params["BN"]
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(\w+)\.f32\." + re.escape(ptx_type), ptx)) == \
        {f"m64n{bn}k{mma_k}" for bn in widths}
    assert "cp.async.bulk.tensor.2d" in ptx  # TMA copies, in and out
    assert ".local" not in ptx
    md = compiled.metadata
    geometry = spec.launch_geometry(_problem(spec, 4096, 4096, 4096))
    assert md.num_warps * 32 == geometry.threads
    # the ring and its barriers; a warp-specialized kernel keeps a few bytes more for its partitions' state
    assert geometry.smem <= md.shared <= geometry.smem + 256
    if spec.producer_warps:
        assert md.maxnreg == spec.maxnreg()
        regs = {int(r) for r in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx)}
        assert {spec.params["PRODUCER_REGS"], spec.params["CONSUMER_REGS"]} <= regs
    if sass.AVAILABLE:
        instrs = sass.instructions(sass.sass(compiled.asm["cubin"], tmp_path))
        assert {i.op for i in instrs if "GMMA" in i.op} == {f"{sass_op}.64x{bn}x{mma_k}.F32.{sass_type}"
                                                            for bn in widths}
        assert not [i for i in instrs if i.op.startswith(("LDL", "STL"))], "local memory: spills"


@pytest.mark.parametrize("name", LEVELS)
def test_launch_geometry_one_cta_per_tile(name):
    spec = get_kernel(name)
    for m, n, k in [(1, 8, 8), (17, 136, 72), (4097, 4104, 4104), (spec.params["BM"], spec.params["BN"], 64)]:
        problem = _problem(spec, m, n, k)
        bm, bn = (spec.for_problem(problem, sm_count=100).params[x] for x in ("BM", "BN"))
        g = spec.launch_geometry(problem, sm_count=100)
        tiles = (-(-n // bn), -(-m // bm))
        assert g.grid == ((min(100, tiles[0] * tiles[1]), 1, 1) if spec.persistent else (*tiles, 1))
        assert g.threads == (bm // 64 + (1 if spec.producer_warps else 0)) * 128


@pytest.mark.parametrize("name", [n for n in LEVELS if "NARROW_BN" in get_kernel(n).params])
@pytest.mark.parametrize("shape, bn", TILE_WIDTHS)
def test_tc4_picks_its_tile_width_per_problem_by_cuda_tc4s_rule(name, shape, bn):
    """192-wide tiles where they fill the last wave better: the seed shape's 16x12 = 192 tiles 256 wide take 1.45
    waves of 132 SMs, its 16x16 = 256 tiles 192 wide 1.94. The same rule as the CUDA twin's, which picks the same
    width (its 2-CTA clusters halve both the tiles it counts and the SMs it counts them against)."""
    spec, twin = get_kernel(name), get_kernel(LEVELS[name])
    problem = _problem(spec, *shape)
    runs = spec.for_problem(problem, sm_count=132)
    assert runs.params["BN"] == bn == twin.for_problem(problem, sm_count=132).params["BN"]
    assert runs.accumulator_parts == ((128, 64) if bn == 192 else (128, 128)) and runs.c_box == (128, bn - 128)
    m, n, _ = shape
    tiles = -(-m // 128) * -(-n // bn)
    assert tiles == {(2048, 3072): 256, (4096, 4096): 512, (8192, 8192): 2048}[(m, n)]
    g = spec.launch_geometry(problem, sm_count=132)
    assert g == runs.launch_geometry(problem, sm_count=132) and g.grid == (132, 1, 1)  # one CTA per SM
    assert g.smem == runs.smem_bytes() and (g.smem < spec.smem_bytes()) == (bn == 192)
    assert spec.traffic(problem, 132) == runs.traffic(problem, 132)
    # a narrow build picks nothing more, and a level without NARROW_BN keeps its tile
    assert runs.for_problem(problem, sm_count=132) is runs
    wide_only = spec.with_params({"NARROW_BN": 0})
    assert wide_only.for_problem(problem, sm_count=132) is wide_only


def test_a_persistent_tile_other_than_256_or_192_is_refused():
    from gemmlab.errors import InvalidConfigError

    spec = get_kernel("gluon/tc4_persistent_bf16")
    for change in ({"NARROW_BN": 160}, {"BN": 128}, {"NARROW_BN": 224}):
        with pytest.raises(InvalidConfigError, match="64 or 128 columns"):
            spec.with_params(change)


@pytest.mark.parametrize("name", LEVELS)
def test_rows_that_are_not_16_bytes_are_refused_by_name(name, monkeypatch):
    monkeypatch.setattr(gluon_kernel, "installed_triton", lambda: gluon_kernel.SUPPORTED)
    spec = get_kernel(name)
    for m in (1, 17, 127, 4097):  # M is free: TMA zero-fills rows past it and clips them from the store
        assert spec.is_valid(_problem(spec, m, 136, 80)) is None
    bad_shapes = [((17, 17, 64), "N=17"), ((17, 64, 127), "K=127"), ((4097, 4097, 4097), "K=4097")]
    if spec.prec.input_bytes == 1:  # FP8 rows of K: 16 elements
        bad_shapes.append(((17, 64, 72), "K=72 is not a multiple of 16"))
    for shape, bad in bad_shapes:
        why = spec.is_valid(_problem(spec, *shape))
        assert why and why.error is LayoutError and bad in why and "16 bytes" in why
    with pytest.raises(LayoutError, match="N=1 is not a multiple of 8"):
        spec.plan(_problem(spec, 64, 1, 64))


@pytest.mark.parametrize("version, said", [(None, "not installed"), ("3.5.1", "Triton 3.5.1 is installed")])
def test_another_triton_is_refused_by_name(version, said, monkeypatch):
    monkeypatch.setattr(gluon_kernel, "installed_triton", lambda: version)
    spec = get_kernel("gluon/tc2_wgmma_tma_bf16")
    why = spec.is_valid(Problem(128, 128, 128, "bf16"))
    assert why.error is MissingDependencyError and said in why and gluon_kernel.SUPPORTED in why
    for call in (lambda: spec.plan(Problem(128, 128, 128, "bf16")), spec.gluon_compile):
        with pytest.raises(MissingDependencyError, match=re.escape(gluon_kernel.SUPPORTED)):
            call()


@pytest.mark.parametrize("name", LEVELS)
def test_each_c_type_fits_shared_memory(name):
    """FP32 C doubles a persistent level's staging tile: its build takes a ring slot fewer."""
    spec = get_kernel(name)
    dtype = spec.prec.input_dtype
    builds = {out: spec.for_formats(dtype, dtype, out) for out in ("bfloat16", "float32")}
    assert all(b.smem_bytes() <= gluon_kernel.SMEM_LIMIT for b in spec.configurations())
    assert len(spec.configurations()) == 2 * (2 if spec.params.get("NARROW_BN") else 1) * (2 if spec.short_tile else 1)
    stages = builds["float32"].params["STAGES"]
    assert stages == spec.params["STAGES"] - (1 if spec.persistent else 0)
    assert builds["float32"].for_formats(dtype, dtype, "bfloat16").params == spec.params


def test_parameters_that_cannot_build_are_refused():
    from gemmlab.errors import InvalidConfigError

    spec = get_kernel("gluon/tc3_warp_specialized_bf16")
    for change, said in [({"BM": 96}, "BM=96"), ({"BN": 264}, "BN=264"), ({"BM": 192}, "BM=192"),
                         ({"STAGES": 1}, "STAGES=1"),
                         ({"STAGES": 6}, "shared memory"), ({"CONSUMER_REGS": 236}, "multiples of 8"),
                         ({"BM": 256, "CONSUMER_REGS": 240}, "past the SM's 65536")]:
        with pytest.raises(InvalidConfigError, match=said):
            spec.with_params(change)


class _Recorder:
    """Stands in for a plan's TritonLaunch: each descriptor passed as its TensorDescriptor (not encoded), and each
    launch's grid, arguments and stream recorded."""

    def __init__(self, compiled):
        self.compiled, self.calls = compiled, []

    def encode(self, operand, descriptor):
        return [descriptor]

    def __call__(self, grid, stream, *args):
        self.calls.append((grid, args, stream))


@needs_triton
@pytest.mark.parametrize("name, m, n", [pytest.param(name, *mn, id=f"{name.split('/')[1]}-{mn[0]}x{mn[1]}")
                                        for name in LEVELS for mn in ((127, 264), (2047, 3064))])
def test_a_launch_passes_the_compiled_signature_its_descriptors(name, m, n, monkeypatch):
    """The host half of a launch, up to Triton's encoding of the descriptors: one argument per parameter of the
    compiled signature, descriptors of A (M×K), B (K×N) and C (M×N) row-major at the operands' addresses with the
    boxes of the build that runs the problem (tc4's narrow tile at both shapes: B and C in 64-column boxes; tc8's A
    and C in a warpgroup's 64 rows), the grid of the geometry and the caller's stream, then the scales' addresses."""
    from gemmlab import device

    monkeypatch.setattr(device, "require_gpu", lambda what: None)
    problem = _problem(get_kernel(name), m, n, 4112)
    plan = get_kernel(name).plan(problem)
    spec = plan.spec
    assert spec == get_kernel(name).for_problem(problem)
    narrows = "NARROW_BN" in get_kernel(name).params
    assert spec.params["BN"] == (192 if narrows else get_kernel(name).params["BN"])  # fewer wide tiles than SMs too
    plan.launcher = recorder = _Recorder(plan.kernel)
    scales = (0x40000, 0x50000)[:len(spec.scale_args())]  # FP8's scales, per tensor or per block, follow the stream
    plan.launch(0x10000, 0x20000, 0x30000, 77, *scales)
    (grid, args, stream), = recorder.calls
    assert grid == spec.launch_geometry(problem).grid and stream == 77
    assert len(args) == len(recorder.compiled.src.signature)
    a, b, c = args[:3]
    bm, bk = spec.params["BM"], spec.bk
    bn = spec.c_box[1] if spec.persistent else spec.params["BN"]  # a persistent level's B box: its right part
    b_rows = ([n, 4112], [4112, 1], [bn, bk]) if spec.prec.kmajor_b else ([4112, n], [n, 1], [bk, bn])
    assert [(d.base.data_ptr(), d.shape, d.strides, d.block_shape) for d in (a, b, c)] == [
        (0x10000, [m, 4112], [4112, 1], [64 if spec.warpgroup_partitions else bm, bk]), (0x20000, *b_rows),
        (0x30000, [m, n], [n, 1], list(spec.c_box))]
    assert list(args[3:]) == [*scales, *spec.constexprs().values()]


@needs_triton
@pytest.mark.parametrize("name", LEVELS)
def test_a_launch_passes_triton_s_launcher_what_triton_s_own_launch_would(name, monkeypatch):
    """A plan's TritonLaunch calls the launch function under Triton's descriptor wrapper with the arguments Triton's
    CudaLauncher, through that wrapper, gives it for the same call (each descriptor's tensor map, encoded here by a
    stand-in for the driver's fill_tma_descriptor that records what it was asked, its shape and strides; the scales;
    the constexprs), and encodes a descriptor once an address: a second launch at the same addresses encodes none,
    one with C elsewhere encodes C's alone."""
    import types

    import triton
    from triton.backends.nvidia.driver import CudaLauncher, wrap_handle_tensordesc

    from gemmlab import device

    monkeypatch.setattr(device, "require_gpu", lambda what: None)
    encoded = []

    def fill_tma_descriptor(*args):
        encoded.append(args[0])
        return ("map", *args)

    monkeypatch.setattr(triton.runtime.driver, "_active", types.SimpleNamespace(
        utils=types.SimpleNamespace(fill_tma_descriptor=fill_tma_descriptor), get_current_device=lambda: 0))
    spec = get_kernel(name)
    plan = spec.plan(_problem(spec, 2047, 3064, 4112))
    compiled, calls = plan.kernel, []
    md = compiled.metadata  # what CudaLauncher.__init__ reads of it
    run = types.SimpleNamespace(
        launch=wrap_handle_tensordesc(lambda *args: calls.append(args), compiled.src.signature, md.tensordesc_meta),
        num_ctas=md.num_ctas, launch_cooperative_grid=md.launch_cooperative_grid, launch_pdl=md.launch_pdl,
        **{f"{kind}_scratch_{what}": getattr(md, f"{kind}_scratch_{what}") for kind in ("global", "profile")
           for what in ("size", "align")})

    class Compiled:  # a CompiledKernel whose binary "loads" as its run is first read
        packed_metadata, metadata, module, function, _run = compiled.packed_metadata, md, None, None, None

        @property
        def run(self):
            if self._run is None:
                self.module, self.function, self._run = "module", 0xF00, run
            return self._run

    plan.launcher.compiled = Compiled()
    scales = (0x40000, 0x50000)[:plan.scales]
    plan.launch(0x10000, 0x20000, 0x30000, 77, *scales)
    # Triton's own: CompiledKernel[grid](*args, stream=77) calls CudaLauncher with these
    descriptors = [plan.descriptor(i, ptr) for i, ptr in enumerate((0x10000, 0x20000, 0x30000))]
    CudaLauncher.__call__(run, *plan.grid, 77, 0xF00, compiled.packed_metadata, None, None, None, *descriptors,
                          *scales, *plan.constexprs)
    ours, triton_s = calls
    assert ours == triton_s and len(encoded) == 6
    plan.launch(0x10000, 0x20000, 0x30000, 78, *scales)
    plan.launch(0x10000, 0x20000, 0x60000, 78, *scales)
    assert encoded[6:] == [0x60000] and calls[2][3] == 78 and calls[2][13:] == ours[13:]


def test_a_binary_is_loaded_once_a_device(monkeypatch):
    """Triton loads a CompiledKernel's binary on the device current at its first launch, once: a plan's launcher
    takes the copy of its level's kernel for the device current at the plan's first launch, one copy a device, whose
    handles load there; the kernel kept for the process is never loaded."""
    import types

    import triton

    device_now = [0]
    monkeypatch.setattr(triton.runtime.driver, "_active",
                        types.SimpleNamespace(get_current_device=lambda: device_now[0]))
    compiled = type("Compiled", (), {"module": None, "function": None, "_run": None, "asm": {"cubin": b""}})()
    first = gluon_kernel.loaded_here(compiled)
    assert gluon_kernel.loaded_here(compiled) is first and first is not compiled and first.asm is compiled.asm
    first.module = "loaded on 0"
    device_now[0] = 1
    second = gluon_kernel.loaded_here(compiled)
    assert second is not first and (second.module, second.function, second._run) == (None, None, None)
    assert compiled.module is None


def _consumer_loops(spec, tmp_path) -> list[list[str]]:
    """The ops of each innermost loop that issues QGMMA: a consumer's k-tile loop."""
    instrs = sass.instructions(sass.sass(spec.gluon_compile().asm["cubin"], tmp_path))
    loops = {}
    for q in (i.addr for i in instrs if i.op.startswith("QGMMA")):
        first, last = min(((f, l) for f, l in sass.loops(instrs) if f <= q <= l), key=lambda fl: fl[1] - fl[0])
        loops[first] = [i.op for i in sass.between(instrs, first, last)]
    return list(loops.values())


@needs_triton
@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
def test_tc8_each_consumer_partition_promotes_every_k_tile(tmp_path):
    """One k-tile loop a consumer partition (BM/64 of them): its BK/32 QGMMA from zero, the next k-tile's scales
    loaded from global memory under them (the LDG before the wait), the wait, and at least BN/2 FFMA a thread into the
    FP32 accumulators: cuda/tc8's promotion. gluon/tc4_persistent_fp8's k-tile loop has none (its scales wait for the
    epilogue)."""
    spec = get_kernel(TC8)
    loops = _consumer_loops(spec, tmp_path)
    assert len(loops) == spec.params["BM"] // 64
    for ops in loops:
        assert sum(op.startswith("QGMMA") for op in ops) == spec.bk // 32
        wait = next(n for n, op in enumerate(ops) if op.startswith("WARPGROUP.DEPBAR"))
        first_mma = next(n for n, op in enumerate(ops) if op.startswith("QGMMA"))
        assert sum(op.startswith("LDG") for op in ops[first_mma:wait]) >= 2  # A's scales of its rows, B's one
        assert sum(op == "FFMA" for op in ops[wait:]) >= spec.params["BN"] // 2
    tc4_loops = _consumer_loops(get_kernel("gluon/tc4_persistent_fp8"), tmp_path)
    assert tc4_loops and not any(op in ("FFMA", "FMUL") for ops in tc4_loops for op in ops)


@needs_triton
@pytest.mark.parametrize("change", [{"BM": 128, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232}, {"BN": 64}],
                         ids=["two-partitions", "bn64"])
def test_tc8_variants_compile(change, tmp_path):
    """A variant's tile: two consumer partitions (the device code's other branch), or 64 columns (m64n64 wgmma)."""
    spec = get_kernel(TC8).with_params(change)
    _check_compiled(spec, tmp_path)
    assert spec.total_warps == spec.params["BM"] // 64 * 4 + 4 and spec.num_warps == 4


def test_tc8_refuses_tiles_that_straddle_b_scale_blocks_or_its_partitions():
    """One B scale a k-tile: BN divides 128; 2 or 3 consumer partitions; the SM's registers."""
    from gemmlab.errors import InvalidConfigError

    spec = get_kernel(TC8)
    for change, said in [({"BN": 256}, "BN=256: a tile takes one B scale"), ({"BN": 192}, "BN divides 128"),
                         ({"BN": 96}, "BN divides 128"), ({"BN": 8}, "16 or more"), ({"BM": 256}, "2 or 3 of them"),
                         ({"BM": 64}, "BM=64"), ({"CONSUMER_REGS": 168}, "past the SM's 65536"),
                         ({"STAGES": 5}, "shared memory")]:
        with pytest.raises(InvalidConfigError, match=said):
            spec.with_params(change)
    assert spec.with_params({"BN": 64}).accumulator_parts == (64,) and spec.accumulator_parts == (128,)


def test_tc8_takes_the_harness_block_scales_and_models_its_twins_traffic():
    """The operands verification hands it: A scaled per 1x128 with scales stored (K/128, M), B (N×K) per 128x128
    with (N/128, K/128), both row-major float32, the layouts its device code indexes; its launch, one CTA per SM of
    512 threads (three consumer warpgroups and the producer's); its traffic, the CUDA twin's (the same tile, its
    rows' A scales and one B scale per 128 of K); and where the short tile runs a problem sooner (cuda/tc8's rule), 128
    rows and 384 threads (two consumer warpgroups)."""
    from gemmlab import fp8

    spec, twin = get_kernel(TC8), get_kernel(LEVELS[TC8])
    m, n, k = 400, 264, 4112
    a, b = spec.make_inputs(_problem(spec, m, n, k))
    assert (a.block, b.block, a.shape, b.shape) == (fp8.ROWS_1X128, fp8.BLOCKS_128X128, (m, k), (n, k))
    for op, shape in ((a, (33, m)), (b, (3, 33))):
        assert op.scale.shape == shape and op.scale.dtype == "float32" and op.scale.flags.c_contiguous
    heights = {}
    for shape in [(m, n, k), (256, 14336, 4096), *(s for s, _ in TILE_WIDTHS)]:
        problem = _problem(spec, *shape)
        bm = spec.for_problem(problem, 132).params["BM"]
        assert bm == twin.for_problem(problem, 132).params["BM"]
        heights[shape] = bm
        g = spec.launch_geometry(problem, sm_count=132)
        tiles = -(-shape[0] // bm) * -(-shape[1] // 128)
        assert g.grid == (min(132, tiles), 1, 1) and g.threads == (bm // 64 + 1) * 128
        assert spec.traffic(problem, 132) == twin.traffic(problem, 132)
    assert heights.pop((m, n, k)) == heights.pop((256, 14336, 4096)) == 128 and set(heights.values()) == {192}
