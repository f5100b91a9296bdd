"""Plans on the host: what a plan hands the CUDA driver, checked against a stub libcuda that records each call.

The plans are made with a host stand-in for the GPU (loads return fake handles, workspaces are NumPy memory), so
everything but the kernel itself runs here: the parameter buffer, the TcArgs struct against the C++ layout, tensor
maps and their in-place address updates, staging copies, pre-passes, cluster launches, the context guard.
"""
import ctypes
import subprocess
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from gemmlab import driver
from gemmlab.device import GPUInfo
from gemmlab.kernels.cuda.launch.gpu import Resources
from gemmlab.kernels.cuda.launch.nvrtc import SOURCE_DIRS, compile_cuda
from gemmlab.kernels.cuda.tc.model import plan as tc_plan
from gemmlab.kernels.cuda.tc.model.kernel import PRE_PASS
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

H200 = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "13.0", "13.0")
INCLUDES = [f"-I{d}" for d in SOURCE_DIRS]  # the folders NVRTC finds the headers in


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    out = tmp_path_factory.mktemp("stub") / "libcuda_stub.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(out), str(Path(__file__).parents[1] / "libcuda_stub.c")],
                   check=True)
    lib = ctypes.CDLL(str(out))
    lib.stub_signature.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_size_t)]
    lib.stub_set_context.argtypes = [ctypes.c_void_p]
    lib.stub_context.restype = ctypes.c_uint64
    driver.use_library(str(out))
    yield lib
    driver.use_library("libcuda.so.1")


class HostGPU(Resources):
    """Loads hand out distinct fake handles; workspaces are NumPy arrays at real host addresses."""

    def __init__(self, stub):
        self.stub, self.loaded, self.synced = stub, [], 0

    def kernel(self, compiled, smem):
        handle = 0xC0DE00 + len(self.loaded)
        self.loaded.append((compiled, smem, handle))
        return SimpleNamespace(handle=handle)

    def buffer(self, nbytes, zero=False):
        return np.full(max(1, nbytes), 0 if zero else 0xAB, np.uint8)

    @staticmethod
    def address(buffer):
        return buffer.ctypes.data

    def synchronize(self):
        self.synced += 1

    def clusters(self, kernel, geo, cluster):
        return 66

    def blocks_per_sm(self, kernel, geo):
        return 1


def signature(stub, handle, sizes):
    stub.stub_signature(handle, len(sizes), (ctypes.c_size_t * len(sizes))(*sizes))


def launch_record(stub, i):
    geometry = (ctypes.c_uint * 11)()
    f_stream = (ctypes.c_uint64 * 2)()
    params = (ctypes.c_ubyte * 1024)()
    length = ctypes.c_size_t()
    stub.stub_launch(i, geometry, f_stream, params, ctypes.byref(length))
    return SimpleNamespace(grid=tuple(geometry[0:3]), block=tuple(geometry[3:6]), smem=geometry[6],
                           cluster=tuple(geometry[7:10]), cooperative=geometry[10], f=f_stream[0], stream=f_stream[1],
                           params=bytes(params[:length.value]))


def copy_record(stub, i):
    words = (ctypes.c_uint64 * 7)()
    stub.stub_copy(i, words)
    return dict(zip(("dst", "dst_pitch", "src", "src_pitch", "width", "height", "stream"), words))


OFFSETS, SIZE, _ = tc_plan.TC_ARGS.layout()


def tc_args(raw: bytes) -> dict:
    """TcArgs (or Fp8Args) decoded: the three stub-encoded maps as words, then the scalars."""
    out = {name: np.frombuffer(raw, np.uint64, 16, OFFSETS[name]) for name in ("a", "b", "c")}
    for name, fmt in (("C", "Q"), ("M", "i"), ("N", "i"), ("K", "i"), ("c_tma", "i"), ("sk_ws", "Q"),
                      ("sk_flags", "Q"), ("timeline", "Q")):
        out[name] = np.frombuffer(raw, np.dtype(fmt).newbyteorder("<"), 1, OFFSETS[name])[0]
    if len(raw) > SIZE:  # Fp8Args: the scales' addresses after TcArgs, then their 1-D maps (tc8, SCALE_TMA)
        out["scale_a"], out["scale_b"] = np.frombuffer(raw, np.dtype("<u8"), 2, SIZE)
        fp8_offsets = tc_plan.FP8_ARGS.layout()[0]
        out.update({name: np.frombuffer(raw, np.uint64, 16, fp8_offsets[name]) for name in ("sa", "sb")})
    return out


def _flat_offsets(struct, base=0) -> dict:
    """Every scalar or map field of a host struct, nested structs flattened, at its byte offset."""
    offsets, _, _ = struct.layout()
    out = {}
    for name, kind in struct.fields:
        if isinstance(kind, driver.Struct):
            out.update(_flat_offsets(kind, base + offsets[name]))
        else:
            out[name] = base + offsets[name]
    return out


def compiled_layout(tmp_path, struct, cname: str, member=lambda field: field, defines=()) -> tuple[dict, int]:
    """(each host field's offset, the size) of tc_args.cuh's ``cname`` as g++ lays it out, with ``defines``;
    ``member`` maps a host field name to its C++ member path."""
    fields = _flat_offsets(struct)
    prints = "\n".join(f'  printf("{f} %zu\\n", (size_t)((const char *)&x.{member(f)} - (const char *)&x));'
                       for f in fields)
    src = tmp_path / "layout.cpp"
    src.write_text(textwrap.dedent(f"""\
        #include <cstddef>
        #include <cstdio>
        #include "tc_args.cuh"
        int main() {{
          static {cname} x;
        {prints}
          printf("sizeof %zu\\n", sizeof({cname}));
        }}
        """))
    exe = tmp_path / "layout"
    subprocess.run(["g++", "-std=c++17", *defines, *INCLUDES, "-o", str(exe), str(src)], check=True)
    printed = dict(line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                                             check=True).stdout.splitlines())
    return {f: int(printed[f]) for f in fields}, int(printed["sizeof"])


@pytest.mark.parametrize("struct,cname", [(tc_plan.TC_ARGS, "TcArgs"), (tc_plan.FP8_ARGS, "Fp8Args")])
def test_tc_args_layout_matches_the_compiled_struct(tmp_path, struct, cname):
    """The host's TcArgs and Fp8Args offsets are the C++ compiler's for tc_args.cuh (the same rules NVCC follows;
    Fp8Args derives from TcArgs, so its fields are found from an object's address)."""
    want = _flat_offsets(struct)
    assert compiled_layout(tmp_path, struct, cname) == (want, struct.layout()[1])
    assert (struct is tc_plan.TC_ARGS and want == OFFSETS) or want["scale_a"] == SIZE  # scales right after TcArgs


def test_params_flatten_nested_structs():
    inner = driver.Struct((("x", "i32"), ("m", driver.MAP)))
    outer = driver.Struct((("base", inner), ("p", "ptr")))
    params = driver.Params((("s", outer),))
    params.x, params.p = 5, 0xABC
    base = params.array[0]
    assert params.map_address("m") == base + 64 and ctypes.c_uint64.from_address(base + 192).value == 0xABC
    assert ctypes.c_int32.from_address(base).value == 5


def test_params_pack_scalars_structs_and_maps():
    inner = driver.Struct((("m", driver.MAP), ("x", "i32"), ("p", "ptr")))
    params = driver.Params((("first", "i32"), ("s", inner), ("last", "f32")))
    params.first, params.x, params.p, params.last = 7, -3, 0xDEADBEEF, 1.5
    assert params.first == 7 and params.x == -3 and params.p == 0xDEADBEEF and params.last == 1.5
    places = [params.array[i] for i in range(3)]
    assert places[0] % 4 == 0 and places[1] % 64 == 0 and places[2] == places[1] + inner.layout()[1]
    assert params.map_address("m") == places[1]
    assert ctypes.c_int32.from_address(places[1] + 128).value == -3
    with pytest.raises(ValueError, match="not a tensor map"):
        params.map_address("x")


def SIGNATURE_SIZES(entry: str, args_bytes: int = SIZE) -> list[int]:
    """Bytes of each parameter of a kernel entry: the wgmma levels' one TcArgs (Fp8Args: ``args_bytes``), the
    transpose's five, the rounding copy's seven, the seeds' six, tc1's seven, v11's eight."""
    if entry == "tc_transpose":
        return [8, 8, 4, 4, 4]
    if entry == "tc_round_copy":
        return [8, 8, 4, 4, 4, 4, 4]
    if entry == "tc1_mma_sync":
        return [8, 8, 8, 4, 4, 4, 4]
    if entry == "v11_split_k":  # the seeds' six, then the partials' workspace and the tickets
        return [8, 8, 8, 4, 4, 4, 8, 8]
    return [args_bytes] if entry.startswith("tc") else [8, 8, 8, 4, 4, 4]


def make(stub, name, shape, layout=ROW_MAJOR, precision=None, spec=None):
    spec = spec or get_kernel(name)
    gpu = HostGPU(stub)
    plan = spec.make_plan(Problem(*shape, precision or spec.precision), layout, H200, gpu)
    args_bytes = spec.args_struct.layout()[1] if hasattr(spec, "args_struct") else SIZE
    for compiled, smem, handle in gpu.loaded:
        signature(stub, handle, SIGNATURE_SIZES(compiled.entry, args_bytes))
    return plan, gpu


def test_tc4_bf16_cluster_launch_and_maps_follow_the_operands(stub):
    stub.stub_reset()
    plan, gpu = make(stub, "cuda/tc4_persistent_bf16", (4096, 4096, 4096))
    a, b, c = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000
    plan.launch(a, b, c, stream=0x5EED)
    rec = launch_record(stub, 0)
    assert rec.cluster == (2, 1, 1) and rec.grid == (132, 1, 1) and rec.block == (384, 1, 1)
    assert rec.stream == 0x5EED and rec.smem == plan.main.smem
    args = tc_args(rec.params)
    assert (args["M"], args["N"], args["K"], args["C"], args["c_tma"]) == (4096, 4096, 4096, c, 1)
    # A: K-major 128 rows x 64 k per box; B: N-major 64 k x 64 n; C: 64 rows x 64 columns of BF16 (BF16 C by
    # default, torch's rule: it was FP32's 32 columns, dtype 7, before)
    assert list(args["a"][[1, 2, 3, 4, 5, 6, 7]]) == [9, a, 4096, 4096, 8192, 64, 128]
    assert list(args["b"][[1, 2, 3, 4, 5, 6, 7]]) == [9, b, 4096, 4096, 8192, 64, 64]
    assert list(args["c"][[1, 2, 3, 4, 5, 6, 7]]) == [9, c, 4096, 4096, 8192, 64, 64]
    assert all(args[m][8] == driver.TMA_SWIZZLE_128B and args[m][9] == driver.TMA_L2_PROMOTION_128B for m in "abc")
    plan.launch(a + 4096, b, c + 4096, stream=0x5EED)
    args = tc_args(launch_record(stub, 1).params)
    assert args["a"][2] == a + 4096 and args["b"][2] == b and args["c"][2] == c + 4096 and args["C"] == c + 4096
    assert stub.stub_copies() == 0 and gpu.synced == 0
    assert stub.stub_replaced() == 0  # this driver keeps the address as a plain word: 8-byte stores


@pytest.mark.parametrize("name,out,dtype,row_bytes,box_cols", [
    ("cuda/tc4_persistent_bf16", "float32", "fp32", 16384, 32),
    ("cuda/tc4_persistent_fp16", "float16", "f16", 8192, 64),
    ("cuda/tc4_persistent_fp16", "float32", "fp32", 16384, 32),
    ("cuda/tc6_stream_k_fp16", "float16", "f16", 8192, 64)])
def test_c_map_is_in_the_type_the_build_writes(stub, name, out, dtype, row_bytes, box_cols):
    """Each output type is its own build of a 16-bit level: its OUT_* define compiled in, C's tensor map in C's type
    (64 rows of 128 bytes a box either way); the operands' maps are the operands' type (FP16: dtype 6)."""
    spec = get_kernel(name)
    build = spec.for_formats(spec.prec.input_dtype, spec.prec.input_dtype, out)
    stub.stub_reset()
    plan, gpu = make(stub, name, (4096, 4096, 4096), spec=build)
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, stream=0)
    args = tc_args(launch_record(stub, 0).params)
    assert list(args["c"][[1, 5, 6, 7]]) == [driver.TMA_DTYPES[dtype], row_bytes, box_cols, 64] and args["c_tma"] == 1
    assert args["a"][1] == args["b"][1] == driver.TMA_DTYPES[spec.prec.tma_dtype]
    define = "OUT_BF16" if spec.precision == "bf16" else "OUT_F16"
    runs = plan.spec  # tc6 at 4096³ splits no tile: its base level's whole-tile build, in the same C type
    assert build.defines()[define] == runs.defines()[define] == int(out != "float32")
    assert gpu.loaded[0][0] is compile_cuda(runs.source, runs.entry, runs.defines(), "sm_90a")


def test_maps_that_hide_their_address_change_through_the_driver(stub):
    stub.stub_reset()
    stub.stub_opaque_maps(1)
    driver.use_library(driver._path)  # probe the maps of this "driver" anew
    try:
        assert driver.address_offset() is None
        plan, _ = make(stub, "cuda/tc4_persistent_bf16", (4096, 4096, 4096))
        a, b, c = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000
        plan.launch(a, b, c)
        assert stub.stub_replaced() == 3
        plan.launch(a, b, c)
        assert stub.stub_replaced() == 3  # same addresses: no map touched
        plan.launch(a + 4096, b, c)
        assert stub.stub_replaced() == 4
        assert tc_args(launch_record(stub, 2).params)["a"][2] == a + 4096
    finally:
        stub.stub_opaque_maps(0)
        driver.use_library(driver._path)


def test_b_given_as_the_transpose_of_w_is_read_in_place(stub):
    """x @ w.T: B arrives as the N×K row-major w; BF16 builds with B_KMAJOR and maps w directly, no copy."""
    stub.stub_reset()
    spec = get_kernel("cuda/tc4_persistent_bf16")
    plan, gpu = make(stub, spec.name, (1024, 2048, 512), Layout(b=COL))
    pinned = spec.for_problem(plan.problem, 132)
    assert gpu.loaded[0][0] is compile_cuda(pinned.source, pinned.entry, {**pinned.defines(), "B_KMAJOR": 1},
                                            "sm_90a")
    w = 0x7300_0000_0000
    plan.launch(0x7000_0000_0000, w, 0x7200_0000_0000)
    b = tc_args(launch_record(stub, 0).params)["b"]
    assert list(b[[2, 3, 4, 5, 6, 7]]) == [w, 512, 2048, 1024, 64, 64]  # N×K rows of K, boxes of 64 k x 64 n
    assert stub.stub_copies() == 0


@pytest.mark.parametrize("name,shape", [("cuda/tc5_swap_ab_tf32", (4096, 4096, 4096)),
                                        ("cuda/tc5_swap_ab_tf32", (100, 300, 64)),
                                        ("cuda/tc6_stream_k_tf32", (2048, 3072, 4096))])
def test_tf32_swap_reads_b_given_as_the_transpose_of_w_in_place(stub, name, shape):
    """x @ w.T on the rounding TF32 levels: the build loads B's fragments from a K-major tile (SWAP_B_KMAJOR), the
    map reads w itself (N×K, one box of BN rows of 32 k), and the only launch before the kernel, if any, rounds A."""
    stub.stub_reset()
    spec = get_kernel(name)
    m, n, k = shape
    plan, gpu = make(stub, name, shape, Layout(b=COL))
    pinned = spec.for_problem(plan.problem, 132)
    assert gpu.loaded[0][0] is compile_cuda(pinned.source, pinned.entry, {**pinned.defines(), "SWAP_B_KMAJOR": 1},
                                            "sm_90a")
    w = 0x7300_0000_0000
    plan.launch(0x7000_0000_0000, w, 0x7200_0000_0000)
    rounds_a = pinned.params["TF32_ROUND"] == 3
    assert stub.stub_launches() == 1 + rounds_a and stub.stub_copies() == 0
    b = tc_args(launch_record(stub, stub.stub_launches() - 1).params)["b"]
    assert list(b[[2, 3, 4, 5, 6, 7]]) == [w, k, n, 4 * k, 32, pinned.params["BN"]]
    assert not any("transpose" in step for step in plan.steps)


@pytest.mark.parametrize("name", ["cuda/tc5_swap_ab_tf32", "cuda/tc6_stream_k_tf32"])
def test_a_in_regs_exchanges_the_operands_so_the_pre_pass_rounds_the_weight(stub, name):
    """A_IN_REGS=1 on x @ w.T (M=2048 rows of x, a 512×256 w): the kernel runs the transposed product (M and N
    exchanged), its A map over the pre-pass's rounded copy of w (512 rows), its B map over x itself (2048 rows of
    the K-major box), the build storing C transposed; a launch takes the call's operands in the call's order."""
    from gemmlab.harness.bench import variant

    stub.stub_reset()
    spec = variant(name, {"A_IN_REGS": 1, **PRE_PASS})
    m, n, k = 2048, 512, 256
    plan, gpu = make(stub, spec.name, (m, n, k), Layout(b=COL), spec=spec)
    assert plan.problem == Problem(m, n, k, "tf32") and plan.inner.problem == Problem(n, m, k, "tf32")
    runs = plan.spec
    assert runs.params["A_IN_REGS"] == 1 and runs.defines()["C_TRANSPOSED"] == 1 and "A_IN_REGS" not in runs.defines()
    assert gpu.loaded[0][0] is compile_cuda(runs.source, runs.entry, {**runs.defines(), "SWAP_B_KMAJOR": 1}, "sm_90a")
    assert gpu.loaded[1][0].entry == "tc_round_copy"
    x, w, c = 0x7000_0000_0000, 0x7300_0000_0000, 0x7200_0000_0000
    for at in (0, 4096):  # a second call with x and w elsewhere: each map and the pre-pass follow
        plan.launch(x + at, w + at, c, stream=0x5EED)
        first = 2 * (at > 0)
        src, dst = np.frombuffer(launch_record(stub, first).params[:16], "<u8")
        rows, cols, ld_src = np.frombuffer(launch_record(stub, first).params[16:28], "<i4")
        assert (src, rows, cols, ld_src) == (w + at, n, k, k)  # the pre-pass rounds w: N×K, not x's M×K
        args = tc_args(launch_record(stub, first + 1).params)
        assert (args["M"], args["N"], args["K"], args["C"]) == (n, m, k, c)
        assert args["a"][2] == dst and list(args["a"][[3, 4]]) == [k, n]  # the rounded w: K by N rows
        assert list(args["b"][[2, 3, 4, 5, 6, 7]]) == [x + at, k, m, 4 * k, 32, runs.params["BN"]]
    assert stub.stub_launches() == 4 and stub.stub_copies() == 0
    assert "exchanged" in plan.steps[0] and any("rounding pre-pass" in s for s in plan.steps)
    assert plan.buffers  # the pre-pass's workspace: gemmlab.call keeps one plan per stream


@pytest.mark.parametrize("name,shape", [("cuda/tc5_swap_ab_tf32", (4096, 96, 4096)),
                                        ("cuda/tc6_stream_k_tf32", (1025, 64, 520)),
                                        ("cuda/tc6_stream_k_tf32", (300, 129, 1001))])
def test_a_in_regs_launches_the_grid_of_the_transposed_problem(stub, name, shape):
    """Where the transposed problem has another number of tiles than the call's (96 rows of w make 1 row of 256-row
    tiles, x's 4096 rows 32 columns of 128), the launch is the base level's on the transposed problem: its grid, its
    stream-K split, its binary but for C's store."""
    from gemmlab.harness.bench import variant

    stub.stub_reset()
    spec = variant(name, {"A_IN_REGS": 1, **PRE_PASS})
    problem = Problem(*shape, "tf32")
    plan, gpu = make(stub, spec.name, shape, Layout(b=COL), spec=spec)
    base = get_kernel(name).with_params(PRE_PASS).for_problem(problem.transposed())
    assert plan.inner.main.grid == base.launch_geometry(problem.transposed()).grid == \
        spec.launch_geometry(problem).grid
    assert spec.stream_k_tiles(problem) == base.stream_k_tiles(problem.transposed())
    runs = plan.spec
    assert {**base.defines(), "C_TRANSPOSED": 1, "SWAP_B_KMAJOR": 1} == runs.defines() == \
        {**plan.inner.spec.defines(), "SWAP_B_KMAJOR": 1}
    assert gpu.loaded[0][0] is runs.compile("sm_90a")  # the spec's own build is the binary the plan loads


@pytest.mark.parametrize("name", ["cuda/v8_cp_async", "cuda/v9_autotuned", "cuda/v10_register_prefetch"])
def test_fp32_ladder_reads_b_given_as_the_transpose_of_w_in_place(stub, name):
    """x @ w.T on the SIMT levels: the plan runs the B_KMAJOR=1 build (its own binary, its padded B tile in the
    shared memory it asks for) on w's address; a row-major B keeps the row-major build."""
    stub.stub_reset()
    col, gpu = make(stub, name, (300, 200, 100), Layout(b=COL))
    row, _ = make(stub, name, (300, 200, 100))
    assert col.spec.params["B_KMAJOR"] == 1 and "B_KMAJOR" not in row.spec.params
    assert "B_KMAJOR=1" in col.explain() and "B_KMAJOR" not in row.explain()
    assert gpu.loaded[0][0] is col.spec.compile("sm_90a")
    p = col.spec.params
    stages = p.get("STAGES", 2)
    assert gpu.loaded[0][1] == 4 * stages * p["BK"] * (p["BM"] + 4 + p["BN"] + 4)
    col.launch(0xA0, 0xB0, 0xC0)
    c, a, b = np.frombuffer(launch_record(stub, 0).params[:24], np.uint64)
    assert (c, a, b) == (0xC0, 0xA0, 0xB0) and stub.stub_copies() == 0


def test_gemv_runs_a_vector_b_as_the_transposed_product(stub):
    """N = 1: the kernel gets b where it reads the row of A, A where it reads the weight, and M = 1, N = M."""
    stub.stub_reset()
    plan, _ = make(stub, "cuda/gemv1_warp_dot_tf32", (4096, 1, 1000), Layout(b=COL))
    plan.launch(0xA0, 0xB0, 0xC0)
    c, a, b = np.frombuffer(launch_record(stub, 0).params[:24], np.uint64)
    assert (c, a, b) == (0xC0, 0xB0, 0xA0)
    assert tuple(np.frombuffer(launch_record(stub, 0).params[24:36], np.int32)) == (1, 4096, 1000)
    assert "Cᵀ = bᵀ·Aᵀ" in plan.explain()


def test_gemv2_launches_its_build_for_the_problem_on_the_operands_as_given(stub):
    """gemv2's plan: the build for_problem picks (its grid of blocks of ROWS rows, its warps), C, A, B in the kernel's
    order and M, N, K as given, also at N = 1 (16 rows of the weight a block, one of them real: no transpose)."""
    from gemmlab.problem import Problem

    stub.stub_reset()
    plan, gpu = make(stub, "cuda/gemv2_mma_swap_bf16", (8, 4096, 4096), Layout(b=COL))
    runs = plan.spec
    assert (runs.params["MAX_M"], runs.params["UNROLL"], runs.params["WARPS"]) == (8, 2, 16)
    assert gpu.loaded[0][0] is runs.compile("sm_90a")
    plan.launch(0xA0, 0xB0, 0xC0)
    c, a, b = np.frombuffer(launch_record(stub, 0).params[:24], np.uint64)
    assert (c, a, b) == (0xC0, 0xA0, 0xB0)
    assert tuple(np.frombuffer(launch_record(stub, 0).params[24:36], np.int32)) == (8, 4096, 4096)
    assert "MAX_M=8, ROWS=16, WARPS=16, UNROLL=2" in plan.explain()
    assert runs.launch_geometry(Problem(8, 4096, 4096, "bf16")).grid == (256, 1, 1)
    stub.stub_reset()
    vector, _ = make(stub, "cuda/gemv2_mma_swap_bf16", (5, 1, 1000), Layout(b=COL))
    vector.launch(0xA0, 0xB0, 0xC0)
    assert tuple(np.frombuffer(launch_record(stub, 0).params[8:24], np.uint64)) == (0xA0, 0xB0)
    assert tuple(np.frombuffer(launch_record(stub, 0).params[24:36], np.int32)) == (5, 1, 1000)
    assert "Cᵀ" not in vector.explain()


def test_gemv1_launches_the_rows_per_block_its_binary_was_built_with_on_any_sm_count(stub):
    """gemv1's rows of the weight per block (ROWS) follow the SM count; the launch covers N with the ROWS the plan's
    binary has, the GPU's own count, not the H200's default (on 148 SMs, 2200 columns are 1100 blocks of 2)."""
    import dataclasses

    spec = get_kernel("cuda/gemv1_warp_dot_bf16")
    gpu = HostGPU(stub)
    plan = spec.make_plan(Problem(1, 2200, 4096, "bf16"), Layout(b=COL), dataclasses.replace(H200, sm_count=148), gpu)
    assert plan.spec.params["ROWS"] == 2 and plan.main.grid[0] * plan.spec.params["ROWS"] >= 2200
    assert plan.main.grid == (1100, 1, 1)


@pytest.fixture
def on_host_h200(stub, monkeypatch):
    """gemmlab's checks and plans for operands that say they are on cuda:0, an H200 with the shipped dispatch
    table, the plans made on the host stand-in: what a call there would run, without a GPU."""
    import contextlib
    import json

    from gemmlab import device, dispatch
    from gemmlab.kernels.cuda.launch import gpu as gpu_module

    host = HostGPU(stub)
    for name in ("kernel", "buffer", "synchronize", "clusters", "blocks_per_sm"):
        monkeypatch.setattr(gpu_module.Resources, name,
                            lambda self, *args, _f=getattr(host, name), **kw: _f(*args, **kw))
    monkeypatch.setattr(gpu_module.Resources, "address", staticmethod(HostGPU.address))
    monkeypatch.setattr(device, "gpu_info", lambda index: H200)
    monkeypatch.setattr(device, "require_gpu", lambda what: H200)
    monkeypatch.setattr(device, "using", lambda index: contextlib.nullcontext())
    shipped = json.loads(dispatch.SHIPPED.read_text())
    monkeypatch.setattr(dispatch, "load_table", lambda: shipped)
    return host


@pytest.mark.parametrize("precision", ["fp32", "tf32"])
@pytest.mark.parametrize("m", [1, 16, 17, 64, 1024, 4096])
def test_a_call_with_w_t_reads_w_in_place_and_explain_says_so(on_host_h200, precision, m):
    """gemmlab.plan(x, w.t(), precision=...) on the GPU: no copy of w at any M; gemv1 (FP32 products) for a vector,
    past it the table's level that reads w in place: the SIMT levels' B_KMAJOR builds or FP32 split-K (FP32), the
    swapped levels' K-major build or TF32 split-K (TF32)."""
    from gemmlab.call import checks
    from gemmlab.call.operands import Facts
    from gemmlab.kernels.plan import ANY, ROW

    k, n = 4096, 4096
    fa = Facts("torch", (m, k), "float32", ANY if m == 1 else ROW, 0)
    fb = Facts("torch", (k, n), "float32", COL, 0)
    prepared = checks.prepare(fa, fb, "auto", precision, 0)
    text = prepared.explain()
    assert not prepared.copy_a and not prepared.copy_b
    assert "copied" not in text and "B is read in place" in text
    name = prepared.plan.spec.name
    if m == 1:
        assert name == f"cuda/gemv1_warp_dot_{precision}"
    elif precision == "fp32":
        assert name in ("cuda/gemv1_warp_dot_fp32", "cuda/v9_autotuned", "cuda/v10_register_prefetch",
                        "cuda/v11_split_k")
        assert name.startswith("cuda/gemv1") or "B_KMAJOR=1" in text
    elif name == "cuda/tc10_split_k_tf32":
        # one kernel loaded: B rounded in shared memory by the producer warps, no transposing pre-pass
        assert [entry[0].entry for entry in on_host_h200.loaded] == ["tc10_split_k"]
    else:
        assert name in ("cuda/tc5_swap_ab_tf32", "cuda/tc6_stream_k_tf32")
        assert on_host_h200.loaded[0][0].entry == "tc5_swap_ab"


@pytest.mark.parametrize("batch_shape", [(8,), (2, 3)])
def test_a_batched_plan_allocates_c_of_the_batchs_shape(on_host_h200, batch_shape):
    """A GPU batch's plan holds C's shape with the batch in front, and the row-major strides each call allocates C
    with follow it (a plan made for one product and then given the batch's shape kept one product's strides)."""
    from gemmlab.call import batched
    from gemmlab.call.operands import Facts
    from gemmlab.kernels.plan import ROW

    m, n, k = 128, 192, 256
    fa, fb = Facts("cupy", (m, k), "bfloat16", ROW, 0), Facts("cupy", (k, n), "bfloat16", ROW, 0)
    strides = tuple(int(np.prod(batch_shape[i + 1:])) for i in range(len(batch_shape)))
    batch = batched.Batch(batch_shape, tuple(s * m * k for s in strides), tuple(s * k * n for s in strides))
    prepared = batched._prepare(fa, fb, "auto", "bf16", None, batch, None)
    assert prepared.out_shape == (*batch_shape, m, n) and prepared.batch == batch
    assert prepared.out_strides == np.empty(prepared.out_shape, np.uint8).strides


def test_a_row_major_b_is_still_copied_where_no_level_reads_it_and_explain_says_so(on_host_h200):
    from gemmlab.call import checks
    from gemmlab.call.operands import Facts

    fa = Facts("torch", (4096, 64), "float32", COL, 0)  # Aᵀ handed over: no FP32 level reads it in place
    fb = Facts("torch", (64, 4096), "float32", COL, 0)
    prepared = checks.prepare(fa, fb, "auto", "fp32", 0)
    assert prepared.copy_a and not prepared.copy_b
    assert "A is copied into row-major order first" in prepared.explain()


def test_tf32_row_major_b_goes_through_the_transpose_pre_pass(stub):
    stub.stub_reset()
    plan, gpu = make(stub, "cuda/tc4_persistent_tf32", (512, 300, 130))
    b = 0x7100_0000_0000
    plan.launch(0x7000_0000_0000, b, 0x7200_0000_0000, stream=9)
    assert stub.stub_launches() == 2
    transpose, main = launch_record(stub, 0), launch_record(stub, 1)
    assert transpose.stream == main.stream == 9
    src, bt_ptr, kk, nn, ldt = np.frombuffer(transpose.params[:16], np.uint64).tolist() + \
        np.frombuffer(transpose.params[16:], np.int32).tolist()
    assert src == b and (kk, nn, ldt) == (130, 300, 132) and transpose.grid == (10, 5, 1)
    args = tc_args(main.params)
    assert args["b"][2] == bt_ptr != b and list(args["b"][[3, 4, 5]]) == [130, 300, 132 * 4]
    assert args["c_tma"] == 1  # N = 300: 1200-byte rows, a multiple of 16


def test_rows_tma_cannot_stride_are_staged_and_an_offset_view_once(stub):
    stub.stub_reset()
    plan, gpu = make(stub, "cuda/tc4_persistent_bf16", (257, 136, 100))  # K=100: 200-byte rows of A
    a, b, c = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0008
    plan.launch(a, b, c)
    copy = copy_record(stub, 0)
    assert stub.stub_copies() == 1
    assert (copy["src"], copy["src_pitch"], copy["width"], copy["height"], copy["dst_pitch"]) == (a, 200, 200, 257, 208)
    args = tc_args(launch_record(stub, 0).params)
    assert args["a"][2] == copy["dst"] and args["a"][5] == 208
    assert args["c_tma"] == 0  # C at an address off 16 bytes: stored from registers
    plan.launch(a, b + 2, c + 8)  # B at an offset view: copied for this call only
    assert stub.stub_copies() == 3
    assert tc_args(launch_record(stub, 1).params)["c_tma"] == 1
    plan.launch(a, b, c + 8)
    assert stub.stub_copies() == 4 and tc_args(launch_record(stub, 2).params)["b"][2] == b


def test_stream_k_plan_zeroes_its_flags_once(stub):
    stub.stub_reset()
    plan, gpu = make(stub, "cuda/tc6_stream_k_tf32", (2048, 3072, 4096))
    assert gpu.synced == 1
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000)
    main = launch_record(stub, stub.stub_launches() - 1)  # after A's rounding pre-pass (TF32_ROUND=3)
    assert main.f == plan.main.function
    args = tc_args(main.params)
    ws, flags = plan.buffers[-2:]
    assert args["sk_ws"] == ws.ctypes.data and args["sk_flags"] == flags.ctypes.data and not flags.any()
    assert main.cluster == (0, 0, 0)
    assert main.cooperative == 1  # an owner waits for its peers: the grid runs only as a whole
    plain, _ = make(stub, "cuda/tc4_persistent_tf32", (2048, 3072, 4096))
    plain.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000)
    assert launch_record(stub, stub.stub_launches() - 1).cooperative == 0


def test_seed_kernel_plan_writes_pointers_and_shape(stub):
    stub.stub_reset()
    plan, _ = make(stub, "cuda/v2_smem", (33, 17, 65))
    plan.launch(0xA0, 0xB0, 0xC0, stream=3)
    rec = launch_record(stub, 0)
    c, a, b = np.frombuffer(rec.params[:24], np.uint64)
    assert (c, a, b) == (0xC0, 0xA0, 0xB0) and tuple(np.frombuffer(rec.params[24:], np.int32)) == (33, 17, 65)
    assert rec.grid == (1, 2, 1) and rec.block == (32, 32, 1) and rec.stream == 3


def test_a_thread_without_a_context_gets_the_plans_own(stub):
    stub.stub_reset()
    plan, _ = make(stub, "cuda/v2_smem", (64, 64, 64))
    assert plan.main.context == 0x1000  # made where the stub's context was current
    plan.launch(0xA0, 0xB0, 0xC0)
    assert stub.stub_set_context_calls() == 0
    stub.stub_set_context(0)
    stub.stub_fail_next(driver.CUDA_ERROR_INVALID_CONTEXT)
    plan.launch(0xA0, 0xB0, 0xC0)
    assert stub.stub_set_context_calls() == 1 and stub.stub_context() == 0x1000 and stub.stub_launches() == 2


def test_a_failed_launch_names_the_driver_error(stub):
    stub.stub_reset()
    plan, _ = make(stub, "cuda/v2_smem", (64, 64, 64))
    stub.stub_fail_next(700)
    with pytest.raises(driver.DriverError, match=r"cuLaunchKernelEx\(grid \(2, 2, 1\).*CUDA_ERROR_STUB \(700\)"):
        plan.launch(0xA0, 0xB0, 0xC0)


def _forbid_files_and_the_compiler(monkeypatch):
    """From here on, opening a file or compiling raises: what a launch of a made plan may not do."""
    import builtins

    from gemmlab.kernels.cuda.launch import nvrtc as _nvrtc

    def refuse(*args, **kwargs):
        raise AssertionError("the hot path touched a file or the compiler")

    monkeypatch.setattr(builtins, "open", refuse)
    monkeypatch.setattr(_nvrtc, "_compile_cached", refuse)
    monkeypatch.setattr(Path, "read_text", refuse)


def test_launches_compile_nothing_and_read_no_file(stub, monkeypatch):
    stub.stub_reset()
    plan, _ = make(stub, "cuda/tc4_persistent_bf16", (1024, 1024, 1024))
    _forbid_files_and_the_compiler(monkeypatch)
    for i in range(3):
        plan.launch(0x7000_0000_0000 + 256 * i, 0x7100_0000_0000, 0x7200_0000_0000)
    assert stub.stub_launches() == 3


@pytest.mark.parametrize("name", ["cuda/v2_smem", "cuda/v10_register_prefetch", "cuda/tc1_mma_sync_bf16",
                                  "cuda/tc4_persistent_bf16", "cuda/tc4_persistent_tf32"])
def test_the_public_plan_path_runs_on_the_default_resources(stub, monkeypatch, name):
    """spec.plan() as gemmlab.matmul and the harness call it: the default Resources object, every level kind."""
    from gemmlab.kernels.cuda.launch import gpu as _gpu

    stub.stub_reset()
    host = HostGPU(stub)
    for method in ("kernel", "buffer", "address", "synchronize", "clusters", "blocks_per_sm"):
        monkeypatch.setattr(_gpu.RESOURCES, method, getattr(host, method))
    monkeypatch.setattr("gemmlab.device.require_gpu", lambda what: H200)
    spec = get_kernel(name)
    plan = spec.plan(Problem(300, 200, 100, spec.precision))
    for compiled, smem, handle in host.loaded:
        signature(stub, handle, SIGNATURE_SIZES(compiled.entry))
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, stream=5)
    main = launch_record(stub, stub.stub_launches() - 1)
    assert main.stream == 5 and main.f == plan.main.function


# ---- FP8 plans (tc4_persistent_fp8, tc8) ---------------------------------------------------------------------------
FP8_COL = Layout(b=COL)


def test_fp8_plan_maps_k_major_operands_bf16_c_and_takes_scales_per_call(stub):
    stub.stub_reset()
    plan, gpu = make(stub, "cuda/tc4_persistent_fp8", (4096, 4096, 4096), FP8_COL)
    a, b, c, sa, sb = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 0x7300_0000_0000, 0x7300_0000_0010
    plan.launch(a, b, c, 0x5EED, sa, sb)
    rec = launch_record(stub, 0)
    assert rec.cluster == (2, 1, 1) and rec.grid == (132, 1, 1) and rec.block == (384, 1, 1)
    assert len(rec.params) == tc_plan.FP8_ARGS.layout()[1] == 768
    args = tc_args(rec.params)
    assert (args["M"], args["N"], args["K"], args["C"], args["c_tma"]) == (4096, 4096, 4096, c, 1)
    assert (args["scale_a"], args["scale_b"]) == (sa, sb)
    # A: M rows of 4096 one-byte K, 128-row boxes of 128 bytes; B: N rows of K (B's transpose), 64-row boxes;
    # C: BF16, 8192-byte rows, boxes of 64 rows x 64 columns. FP8 moves as UINT8 (TMA only copies it).
    assert list(args["a"][[1, 2, 3, 4, 5, 6, 7]]) == [driver.TMA_DTYPES["fp8"], a, 4096, 4096, 4096, 128, 128]
    assert list(args["b"][[1, 2, 3, 4, 5, 6, 7]]) == [driver.TMA_DTYPES["fp8"], b, 4096, 4096, 4096, 128, 64]
    assert list(args["c"][[1, 2, 3, 4, 5, 6, 7]]) == [driver.TMA_DTYPES["bf16"], c, 4096, 4096, 8192, 64, 64]
    plan.launch(a, b, c, 0x5EED, sa + 64, sb + 64)
    args = tc_args(launch_record(stub, 1).params)
    assert (args["scale_a"], args["scale_b"]) == (sa + 64, sb + 64) and args["a"][2] == a
    assert stub.stub_copies() == 0 and gpu.synced == 0
    spec = get_kernel("cuda/tc4_persistent_fp8")  # K-major by the FP8 operand type: no B_KMAJOR define added
    assert gpu.loaded[0][0] is compile_cuda(spec.source, spec.entry, spec.defines(), "sm_90a")


def test_fp8_k_off_16_bytes_stages_both_operands_and_n_off_8_stores_c_from_registers(stub):
    stub.stub_reset()
    plan, gpu = make(stub, "cuda/tc4_persistent_fp8", (300, 100, 100), FP8_COL)
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 0, 0x7300_0000_0000, 0x7300_0000_0010)
    assert stub.stub_copies() == 2  # 100-byte rows of A and of Bᵀ, into 112-byte pitched workspaces
    copies = [copy_record(stub, i) for i in range(2)]
    assert [(c["width"], c["height"], c["dst_pitch"]) for c in copies] == [(100, 300, 112), (100, 100, 112)]
    args = tc_args(launch_record(stub, 0).params)
    assert args["a"][3] == 100 and args["a"][5] == 112  # the map keeps K: the padding is never read
    assert args["c_tma"] == 0  # 200-byte BF16 rows: TMA cannot store them


def test_fp8_plan_refuses_a_row_major_b(stub):
    from gemmlab.errors import LayoutError

    with pytest.raises(LayoutError, match="column-major"):
        make(stub, "cuda/tc4_persistent_fp8", (64, 64, 64), ROW_MAJOR)


def test_tc8_plan_and_fp32_output_variant(stub):
    from gemmlab import fp8

    stub.stub_reset()
    plan, gpu = make(stub, "cuda/tc8_block_scaled_fp8", (1000, 520, 256), FP8_COL)
    # 40 tiles of 128 rows, one wave, run sooner than 30 of 192 (short_pays): two consumer warpgroups, 5 stages
    assert type(plan).__name__ == "Fp8Plan" and plan.main.smem == 206_832 and plan.main.block == (384, 1, 1)
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 3, 0x7400_0000_0000, 0x7500_0000_0000)
    args = tc_args(launch_record(stub, 0).params)
    assert (args["scale_a"], args["scale_b"]) == (0x7400_0000_0000, 0x7500_0000_0000) and args["c"][1] == 9
    spec = get_kernel("cuda/tc8_block_scaled_fp8").for_formats(fp8.E4M3, fp8.E5M2, "float32")
    stub.stub_reset()
    plan, gpu = make(stub, spec.name, (1000, 520, 256), FP8_COL, spec=spec)
    assert {"OUT_BF16": 0, "B_E5M2": 1, "TC_FP8": 1}.items() <= spec.defines().items()
    runs = spec.for_problem(Problem(1000, 520, 256, "fp8_block"))
    assert runs.params["BM"] == 128 and gpu.loaded[0][0] is compile_cuda(runs.source, runs.entry, runs.defines(),
                                                                           "sm_90a")
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 3, 0x7400_0000_0000, 0x7500_0000_0000)
    c = tc_args(launch_record(stub, 0).params)["c"]
    assert list(c[[1, 5, 6, 7]]) == [driver.TMA_DTYPES["fp32"], 520 * 4, 32, 64]


def test_tc8_block_scales_reach_their_1d_maps_per_call_and_an_unaligned_one_is_copied(stub):
    """SCALE_TMA: scale_a (ceil(K/128) x M) and scale_b (ceil(N/128) x ceil(K/128)) as 1-D FP32 maps, unswizzled,
    in boxes of BM + 4 and of 4 (each starts on 16 bytes at or below the scales it holds); each launch puts the
    caller's addresses into them, and a scale tensor whose address TMA cannot take (off 16 bytes) is copied whole
    into a workspace first, on the launch's stream."""
    stub.stub_reset()
    plan, _ = make(stub, "cuda/tc8_block_scaled_fp8", (1000, 520, 256), FP8_COL)
    sa, sb = 0x7400_0000_0000, 0x7500_0000_0000
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 3, sa, sb)
    args = tc_args(launch_record(stub, 0).params)
    fp32 = driver.TMA_DTYPES["fp32"]
    # words: dtype, address, the one dimension, the box, swizzle, L2 promotion, rank
    assert list(args["sa"][[1, 2, 3, 6, 8, 9, 10]]) == [fp32, sa, 2 * 1000, 132, 0, 0, 1]  # the 128-row tile's
    assert list(args["sb"][[1, 2, 3, 6, 8, 9, 10]]) == [fp32, sb, 5 * 2, 4, 0, 0, 1]
    assert stub.stub_copies() == 0
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 3, sa + 4, sb + 64)
    args = tc_args(launch_record(stub, 1).params)
    assert stub.stub_copies() == 1
    copy = copy_record(stub, 0)
    assert (copy["src"], copy["width"], copy["height"], copy["stream"]) == (sa + 4, 4 * 2000, 1, 3)
    assert args["sa"][2] == copy["dst"] != sa + 4 and args["sb"][2] == sb + 64
    assert (args["scale_a"], args["scale_b"]) == (sa + 4, sb + 64)
    stub.stub_reset()
    plan, _ = make(stub, "cuda/tc8_promoted_fp8", (1000, 520, 256), FP8_COL)
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 3, sa + 4, sb + 4)
    args = tc_args(launch_record(stub, 0).params)
    assert not args["sa"].any() and not args["sb"].any() and stub.stub_copies() == 0  # per tensor: no maps
    assert plan.main.smem == 214_080


def test_fp8_launches_compile_nothing_and_read_no_file(stub, monkeypatch):
    stub.stub_reset()
    plan, _ = make(stub, "cuda/tc8_block_scaled_fp8", (1024, 1024, 1024), FP8_COL)
    _forbid_files_and_the_compiler(monkeypatch)
    for i in range(3):
        plan.launch(0x7000_0000_0000 + 256 * i, 0x7100_0000_0000, 0x7200_0000_0000, 0, 0x7300_0000_0000 + 16 * i,
                    0x7400_0000_0000)
    assert stub.stub_launches() == 3
    assert tc_args(launch_record(stub, 2).params)["scale_a"] == 0x7300_0000_0000 + 32


@pytest.mark.parametrize("k,offset,vec", [(4096, 0, 1), (4096, 4, 0), (4097, 0, 0)])
def test_tf32_rounding_pre_pass_reads_a_and_feeds_the_kernel_its_workspace(stub, k, offset, vec):
    """TF32_ROUND=3 (tc5's pre-pass variant): a launch before the kernel rounds A into a pitched workspace, with
    16-byte loads only where A's address and rows allow them; the kernel's A map holds the workspace, whatever A the
    caller passes."""
    stub.stub_reset()
    spec = get_kernel("cuda/tc5_swap_ab_tf32").with_params(PRE_PASS)
    plan, _ = make(stub, None, (256, 256, k), spec=spec)
    a = 0x7000_0000_0000 + offset
    plan.launch(a, 0x7100_0000_0000, 0x7200_0000_0000, stream=9)
    assert stub.stub_launches() == 2
    pre, main = launch_record(stub, 0), launch_record(stub, 1)
    src, dst = np.frombuffer(pre.params[:16], np.uint64)
    rows, cols, ld_src, ld_dst, flag = np.frombuffer(pre.params[16:36], np.int32)
    assert (src, rows, cols, ld_src, flag) == (a, 256, k, k, vec) and ld_dst % 4 == 0 and ld_dst >= k
    assert pre.stream == main.stream == 9
    assert tc_args(main.params)["a"][2] == dst
    plan.launch(a + 16 * 4096, 0x7100_0000_0000, 0x7200_0000_0000)
    assert np.frombuffer(launch_record(stub, 2).params[:8], np.uint64)[0] == a + 16 * 4096
    assert tc_args(launch_record(stub, 3).params)["a"][2] == dst


def test_the_tf32_rounding_pre_pass_runs_again_for_the_same_a(stub):
    """A at the address of the last call may hold new values: the pre-pass rounds it on every call, where an
    operand read in place through its map needs nothing when its address has not moved."""
    stub.stub_reset()
    plan, _ = make(stub, None, (256, 256, 4096), spec=get_kernel("cuda/tc5_swap_ab_tf32").with_params(PRE_PASS))
    a, b, c = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000
    for _ in range(3):
        plan.launch(a, b, c, stream=9)
    assert stub.stub_launches() == 6
    assert [np.frombuffer(launch_record(stub, i).params[:8], np.uint64)[0] for i in (0, 2, 4)] == [a] * 3


def test_the_tf32_transpose_pre_pass_refuses_a_k_its_grid_cannot_hold(stub):  # noqa: F811
    """B row-major at TF32 on tc2: the pre-pass puts K's 32-wide tiles in gridDim.y (at most 65535). Past that, a
    SizeLimitError that names the layout needing no pre-pass, where the driver would refuse the launch; at the
    limit the plan is made."""
    from gemmlab.errors import SizeLimitError

    with pytest.raises(SizeLimitError, match=r"takes K up to 2,097,120 \(K = 2,097,121\); pass B as the transpose"):
        make(stub, "cuda/tc2_wgmma_tma_tf32", (16, 16, 2_097_121), ROW_MAJOR)
    plan, _ = make(stub, "cuda/tc2_wgmma_tma_tf32", (16, 16, 2_097_120), ROW_MAJOR)
    assert plan.transpose.grid == (1, 65535, 1)


STAGING_SHAPES = [(4096, 1024, 8191), (300, 513, 1000), (8192, 64, 4097), (1000, 1001, 2048)]
STAGING_CASES = [(name, layout, shape) for name, layout in (
    ("cuda/tc5_swap_ab_tf32", Layout(b=COL)), ("cuda/tc5_swap_ab_tf32", ROW_MAJOR), ("cuda/tc10_split_k_tf32", Layout(b=COL)),
    ("cuda/tc10_split_k_tf32", ROW_MAJOR), ("cuda/tc4_persistent_bf16", Layout(b=COL)),
    ("cuda/tc4_persistent_bf16", ROW_MAJOR), ("cuda/tc4_persistent_fp8", Layout(b=COL))) for shape in STAGING_SHAPES] + \
    [(name, Layout(b=COL), shape) for name in ("cuda/tc9_narrow_swap_bf16", "cuda/tc9_narrow_swap_fp8")
     for shape in [(64, 4096, 4100), (100, 1000, 2048), (17, 520, 333)]]  # tc9: M <= 128, its kernel on Cᵀ


@pytest.mark.parametrize("name,layout,shape", STAGING_CASES)
def test_the_model_counts_the_staged_copies_the_plan_makes(stub, name, layout, shape):
    """An operand whose rows are off 16 bytes is copied into a pitched workspace on every call (the plan's steps
    say so); the model counts the same operands' bytes and launches (staged_operands), so a level or a
    configuration that stages x (the exchange, with K off 16 bytes) is not predicted to save what the pre-pass
    moves elsewhere."""
    spec = get_kernel(name)
    problem = Problem(*shape, spec.precision)
    runs = spec.for_problem(problem)
    plan, _ = make(stub, name, shape, layout)
    copied = {step[0] for step in plan.steps if "workspace first" in step}
    assert set(runs.staged_operands(problem, layout)) == copied, plan.steps
    from gemmlab.analysis.roofline import ceilings_for, device_spec
    from gemmlab.analysis.scaling import LAUNCH_US, estimate

    roofs = ceilings_for(device_spec("h200"))
    e = problem.prec.input_bytes
    size = {"A": shape[0] * shape[2], "B": shape[1] * shape[2]}
    staged_bytes = sum(2.0 * e * size[x] for x in copied)
    unit = 16 // e  # elements per 16 bytes
    aligned = Problem(shape[0], shape[1] + (-shape[1]) % unit, shape[2] + (-shape[2]) % unit, spec.precision)
    assert runs.staged_operands(aligned, layout) == ()
    if not copied:
        return
    # the serial part grows by the staged bytes at DRAM speed and a launch each (N and K change by < 1%)
    here, there = estimate(spec, problem, roofs, layout), estimate(spec, aligned, roofs, layout)
    assert here.serial_ms - there.serial_ms == pytest.approx(staged_bytes / (roofs.dram_gbs * 1e9) * 1e3
                                                             + len(copied) * LAUNCH_US / 1e3, rel=0.01)


@pytest.mark.parametrize("name", ["cuda/tc10_split_k_tf32", "cuda/tc5_swap_ab_tf32", "cuda/tc6_stream_k_tf32"])
def test_every_configuration_plans_in_its_natural_layout(stub, name):
    """What verification (and gemmlab verify --sanitize) runs: each configuration planned in the layout it draws its
    inputs in, the exchanging ones (A_IN_REGS: tc5 and tc6, not tc10) with B as the transpose view of an N×K array,
    which is the only layout they read."""
    from gemmlab.harness.bench import variant

    specs = get_kernel(name).configurations()
    if "tc10" not in name and not any(s.exchanges for s in specs):
        specs.append(variant(name, {"A_IN_REGS": 1}))
    problem = Problem(100, 72, 4097 - 4097 % 4, "tf32")
    for spec in specs:
        layout = spec.natural_layout(problem)
        a, b = spec.make_inputs(problem, 0)
        assert a.flags.c_contiguous and (b.T.flags.c_contiguous if layout.b == COL else b.flags.c_contiguous)
        assert not spec.exchanges or layout == Layout(b=COL)
        stub.stub_reset()
        plan, _ = make(stub, name, problem.shape, layout, spec=spec)
        assert plan.problem == problem and ("exchanged" in plan.steps[0]) == spec.exchanges
