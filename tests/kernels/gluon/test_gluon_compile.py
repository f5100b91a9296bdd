"""The Gluon levels without a GPU: each compiles for sm_90a at its registered parameters in both C types (wgmma in
the PTX, HGMMA in the SASS, no local memory), the host's launch geometry and shared memory against the compiled
kernel's, TMA's alignment limits refused by name, and a Triton of another version refused by name.

What cannot be checked here: that the kernels compute C (tests/kernels/gluon/test_gluon_gpu.py, on a GPU), the
registers ptxas gave each partition (Triton reads them when it loads the cubin), that TMA zero-fills and clips the
ragged edges as the descriptors ask, and the launch path (the descriptors encoded by Triton's driver, the stream).
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
          "gluon/tc4_persistent_fp8": "cuda/tc4_persistent_fp8"}
# the tensor cores' operand type as PTX and SASS spell it, and a wgmma's K (32 bytes)
MMA = {"bf16": ("bf16.bf16", "BF16", "HGMMA", 16), "fp8": ("e4m3.e4m3", "E4M3.E4M3", "QGMMA", 32)}
BUILDS = [pytest.param(name, out, id=f"{name.split('/')[1]}-{out}") for name in LEVELS
          for out in ("bfloat16", "float32")]


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
@pytest.mark.parametrize("name, out", BUILDS)
def test_compiles_for_sm90a_with_wgmma_and_no_local_memory(name, out, tmp_path):
    base = get_kernel(name)
    spec = base.for_formats(base.prec.input_dtype, base.prec.input_dtype, out)
    assert str(spec.output_dtype(_problem(spec, 8, 8, 8))) == out
    ptx_type, sass_type, sass_op, mma_k = MMA[spec.precision]
    compiled = spec.gluon_compile()
    ptx = compiled.asm["ptx"]
    assert ".target sm_90a" in ptx
    bn = spec.c_box[1]  # one wgmma spans the columns C is stored in: the tile, or a persistent level's half of it
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(\w+)\.f32\." + re.escape(ptx_type), ptx)) == \
        {f"m64n{bn}k{mma_k}"}
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
        assert {i.op for i in instrs if "GMMA" in i.op} == {f"{sass_op}.64x{bn}x{mma_k}.F32.{sass_type}"}
        assert not [i for i in instrs if i.op.startswith(("LDL", "STL"))], "local memory: spills"


@pytest.mark.parametrize("name", LEVELS)
def test_launch_geometry_one_cta_per_tile(name):
    spec = get_kernel(name)
    bm, bn = spec.params["BM"], spec.params["BN"]
    for m, n, k in [(1, 8, 8), (17, 136, 72), (4097, 4104, 4104), (bm, bn, 64)]:
        g = spec.launch_geometry(_problem(spec, m, n, k), sm_count=100)
        tiles = (-(-n // bn), -(-m // bm))
        assert g.grid == ((min(100, tiles[0] * tiles[1]), 1, 1) if spec.persistent else (*tiles, 1))
        assert g.threads == (bm // 64 + (1 if spec.producer_warps else 0)) * 128


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
    assert all(b.smem_bytes() <= gluon_kernel.SMEM_LIMIT for b in builds.values())
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
    """Stands in for Triton's CompiledKernel at launch: records the grid, the arguments and the stream."""

    def __init__(self, compiled):
        self.compiled, self.calls = compiled, []

    def __getitem__(self, grid):
        return lambda *args, stream=None: self.calls.append((grid, args, stream))


@needs_triton
@pytest.mark.parametrize("name", LEVELS)
def test_a_launch_passes_the_compiled_signature_its_descriptors(name, monkeypatch):
    """The host half of a launch, up to Triton's launcher: one argument per parameter of the compiled signature,
    descriptors of A (M×K), B (K×N) and C (M×N) row-major at the operands' addresses with the level's boxes, the
    grid of the geometry and the caller's stream."""
    from gemmlab import device

    monkeypatch.setattr(device, "require_gpu", lambda what: None)
    spec = get_kernel(name)
    problem = _problem(spec, 127, 264, 4112)
    plan = spec.plan(problem)
    plan.kernel = recorder = _Recorder(plan.kernel)
    scales = (0x40000, 0x50000)[:len(spec.scale_args())]  # FP8's per-tensor scales follow the stream
    plan.launch(0x10000, 0x20000, 0x30000, 77, *scales)
    (grid, args, stream), = recorder.calls
    assert grid == spec.launch_geometry(problem).grid and stream == 77
    assert len(args) == len(recorder.compiled.src.signature)
    a, b, c = args[:3]
    bm, bn, bk = spec.params["BM"], spec.params["BN"], spec.bk
    b_rows = ([264, 4112], [4112, 1], [bn, bk]) if spec.prec.kmajor_b else ([4112, 264], [264, 1], [bk, bn])
    assert [(d.base.data_ptr(), d.shape, d.strides, d.block_shape) for d in (a, b, c)] == [
        (0x10000, [127, 4112], [4112, 1], [bm, bk]), (0x20000, *b_rows),
        (0x30000, [127, 264], [264, 1], list(spec.c_box))]
    assert list(args[3:]) == [*scales, *spec.constexprs().values()]
    with pytest.raises(LayoutError, match="B starts at 0x20008"):
        plan.launch(0x10000, 0x20008, 0x30000, 0, *scales)
