"""TF32 rounding (TF32_ROUND) and the 3xTF32 level (tc7) without a GPU: the device's TF32 arithmetic compiled on the
host against gemmlab.numerics bit for bit, the split's exactness, the three products against float64 in NumPy
with the hardware's truncation and rounding, every configuration compiled for sm_90a (HGMMA, no spills), the
constraints, the shared-memory layout, and the plans against the stub libcuda."""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from gemmlab import numerics as nm
from gemmlab.errors import InvalidConfigError
from gemmlab.kernels.cuda.launch.nvrtc import compile_cuda, source_path
from gemmlab.kernels.cuda.tc.model.budget import SMEM_LIMIT, smem_bytes
from gemmlab.kernels.cuda.tc.model.kernel import PRE_PASS
from gemmlab.kernels.plan import COL, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

from sass import CUOBJDUMP, NVDISASM
from tc_levels import ptx_of
from test_plans import H200, HostGPU, launch_record, signature, SIGNATURE_SIZES, stub, tc_args  # noqa: F401

TC4, TC5, TC6 = (get_kernel(f"cuda/{n}") for n in ("tc4_persistent_tf32", "tc5_swap_ab_tf32", "tc6_stream_k_tf32"))
TC7 = get_kernel("cuda/tc7_3xtf32")
CXX = shutil.which("g++") or shutil.which("clang++")


def with_params(spec, **params):
    return dataclasses.replace(spec, params={**spec.params, **params})


def edge_floats() -> np.ndarray:
    """Zeros, denormals, exact ties of the rounding (low 13 bits 0x1000), a bit either side, the largest finite
    values (which round to Inf), Inf, NaN, and random bit patterns over every exponent."""
    bits = [0, 0x80000000, 1, 0x1FFF, 0x7FFFFF, 0x800000, 0x3F800000, 0x3F801000, 0x3F800FFF, 0x3F801001,
            0x3F803000, 0xBF801000, 0x7F7FFFFF, 0x7F7FE000, 0x7F7FF000, 0xFF7FF000, 0x7F800000, 0xFF800000,
            0x7FC00000, 0x7F801000]
    rng = np.random.default_rng(19)
    rand = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([np.array(bits, np.uint32), rand]).view(np.float32)


# ---- the device arithmetic on the host ------------------------------------------------------------------------
@pytest.mark.skipif(CXX is None, reason="no host C++ compiler to run the device arithmetic with")
def test_device_tf32_arithmetic_matches_numerics_bit_for_bit(tmp_path):
    text = source_path("tc_tf32.cuh").read_text()
    block = text[text.index("// begin tf32 arithmetic"):text.index("// end tf32 arithmetic")]
    main = r"""
int main() {
  unsigned u;
  while (scanf("%x", &u) == 1) {
    const float x = f32_from_bits(u);
    const Tf32Split p = tf32_split(x);
    printf("%08x %08x %08x %08x %08x %08x\n", f32_bits(tf32_rna(x)), f32_bits(tf32_trunc(x)), f32_bits(p.big),
           f32_bits(p.small), f32_bits(tf32_small_of_stored(x)), f32_bits(tf32_trunc(tf32_rna_for_mma(x))));
  }
}
"""
    src = tmp_path / "tf32.cpp"
    src.write_text("#include <cstdio>\n#include <cstring>\n#define __host__\n#define __device__\n"
                   "#define __forceinline__ inline\n" + block + main)
    exe = tmp_path / "tf32"
    subprocess.run([CXX, "-O2", "-o", str(exe), str(src)], check=True)
    x = edge_floats()
    out = subprocess.run([str(exe)], input="\n".join(f"{u:08x}" for u in x.view(np.uint32)), capture_output=True,
                         text=True, check=True).stdout.split()
    got = np.array([int(w, 16) for w in out], np.uint64).astype(np.uint32).reshape(-1, 6)
    with np.errstate(invalid="ignore", over="ignore"):
        big, small = nm.tf32_split(x)
        # the last: what a tensor core reads of tf32_rna_for_mma(x) (its low 13 bits dropped) is tf32_rna(x)
        want = [nm.tf32_rna(x), nm.tf32_trunc(x), big, small, nm.tf32_small_of_stored(x), nm.tf32_rna(x)]
    for column, w in enumerate(want):
        assert np.array_equal(got[:, column], w.view(np.uint32)), column


def test_rounding_is_to_nearest_ties_away_and_keeps_inf_and_nan():
    one = np.float32(1)
    ulp = np.float32(2**-10)
    x = np.array([1 + 2**-11, 1 + 2**-11 - 2**-23, -(1 + 2**-11), 1 + 3 * 2**-11, 3.4028235e38, np.inf, np.nan],
                 np.float32)
    with np.errstate(over="ignore"):
        r = nm.tf32_rna(x)
    assert r[0] == one + ulp and r[1] == one and r[2] == -(one + ulp)  # a tie goes away from zero
    assert r[3] == one + 2 * ulp  # ... whichever side it is on
    assert np.isinf(r[4]) and np.isinf(r[5]) and np.isnan(r[6])  # past TF32's largest: Inf, as cvt.rna does
    assert nm.tf32_trunc(np.array([1 + 2**-10 - 2**-23], np.float32))[0] == one  # truncation: toward zero


def test_rounding_to_even_differs_from_ties_away_only_at_ties():
    """tf32_rne (what TFLOAT32 maps write): tf32_rna's result wherever the dropped 13 bits are not exactly half a
    TF32 unit; at a tie, the neighbour whose last kept bit is 0, toward zero or away from it. Inf and NaN keep their
    bits but for the low 13, and past TF32's largest is Inf."""
    x = np.concatenate([edge_floats(), finite_normals(20000)])
    with np.errstate(over="ignore"):
        rne, rna = nm.tf32_rne(x), nm.tf32_rna(x)
    u = x.view(np.uint32)
    tie = ((u & 0x1FFF) == 0x1000) & ((u & 0x7F800000) != 0x7F800000)
    assert tie.sum() > 0 and (~tie).sum() > 1000
    assert (rne.view(np.uint32)[~tie] == rna.view(np.uint32)[~tie]).all()
    even = np.where((u >> 13) & 1, rna.view(np.uint32), nm.tf32_trunc(x).view(np.uint32))
    assert (rne.view(np.uint32)[tie] == even[tie]).all()
    assert not (rne.view(np.uint32)[tie] >> 13 & 1).any()  # the kept mantissa ends in 0
    one = np.float32(1)
    r = nm.tf32_rne(np.array([1 + 2**-11, 1 + 3 * 2**-11, -(1 + 3 * 2**-11), 1.5 + 2**-11], np.float32))
    assert list(r) == [one, one + 2**-9, -(one + 2**-9), np.float32(1.5)]


# ---- the split -------------------------------------------------------------------------------------------------
def finite_normals(n: int = 200000) -> np.ndarray:
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-120, 120, n))).astype(np.float32)
    return x[np.isfinite(x) & (np.abs(x) >= np.finfo(np.float32).tiny * 2**24)]


def test_split_is_exact_and_big_has_tf32s_mantissa():
    x = finite_normals()
    big, small = nm.tf32_split(x)
    rest = x - big  # exact: x and big are within half a TF32 ulp (Sterbenz)
    assert np.array_equal(big + rest, x)
    assert np.array_equal((big + rest).view(np.uint32), x.view(np.uint32))  # bit for bit, signed zeros too
    assert not np.any(big.view(np.uint32) & 0x1FFF) and not np.any(small.view(np.uint32) & 0x1FFF)
    assert np.all(np.abs(rest) <= np.abs(big) * 2.0**-11)  # rounded: at most half a TF32 ulp away
    # the two TF32 parts carry 22 bits of x
    err = np.abs(x.astype(np.float64) - big.astype(np.float64) - small.astype(np.float64))
    assert np.all(err <= np.abs(x.astype(np.float64)) * 2.0**-22)


def test_small_part_beside_a_stored_operand():
    """tc7's A: the tensor cores read trunc(x) as the big part; x - trunc(x) is exact, its TF32 rounding beside
    it leaves at most 2^-22 of x."""
    x = finite_normals()
    trunc = nm.tf32_trunc(x)
    assert np.array_equal(trunc + (x - trunc), x)
    small = nm.tf32_small_of_stored(x)
    assert not np.any(small.view(np.uint32) & 0x1FFF)
    err = np.abs(x.astype(np.float64) - trunc.astype(np.float64) - small.astype(np.float64))
    assert np.all(err <= np.abs(x.astype(np.float64)) * 2.0**-22)


@pytest.mark.parametrize("shape", [(64, 48, 512), (33, 17, 1000), (1, 1, 4097), (128, 96, 64)])
def test_three_products_match_float64(shape):
    """The sum of tc7's three products (small·small dropped), each exact, against float64. Element by element
    it is within 2^-20 of sum |a||b| (|a_small| <= 2^-10 |a|, |b_small| <= 2^-11 |b|, each part rounded to within
    2^-22); over the matrix the split leaves about 1e-7, thousands of times less than the truncated TF32 product
    and well under FP32's tolerance."""
    m, n, k = shape
    rng = np.random.default_rng(m * n + k)
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)

    def rel(c):
        return np.linalg.norm(c - ref) / np.linalg.norm(ref)

    c = nm.three_products(a, b)
    assert np.all(np.abs(c - ref) <= 2.0**-20 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)))
    if m * n < 100:
        return  # a single dot product's relative error is its cancellation's; the bound above is what holds
    three = rel(c)
    truncated = rel(nm.tf32_trunc(a).astype(np.float64) @ nm.tf32_trunc(b).astype(np.float64))
    rounded = rel(nm.tf32_rna(a).astype(np.float64) @ nm.tf32_rna(b).astype(np.float64))
    assert three < 3e-7 and three < truncated / 1000
    assert 0.25 < rounded / truncated < 0.55  # rounding removes truncation's bias: about 0.30 against 0.79 ulp


def test_truncated_and_rounded_tf32_errors_follow_the_model():
    """The figures the design rests on, from N(0,1) operands: a TF32 product of truncated operands errs by about
    0.79·2^-10 (a coherent bias of 0.72 and a spread of 0.32), of rounded ones by about 0.30·2^-10 (the issue
    measured 7.7e-4 and 2.9e-4 on the H200)."""
    rng = np.random.default_rng(2026)
    a, b = rng.standard_normal((256, 2048), dtype=np.float32), rng.standard_normal((2048, 256), dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    f = lambda x: x.astype(np.float64)  # noqa: E731
    truncated = np.linalg.norm(f(nm.tf32_trunc(a)) @ f(nm.tf32_trunc(b)) - ref) / np.linalg.norm(ref)
    rounded = np.linalg.norm(f(nm.tf32_rna(a)) @ f(nm.tf32_rna(b)) - ref) / np.linalg.norm(ref)
    assert truncated == pytest.approx(0.79 * 2**-10, rel=0.05)
    assert rounded == pytest.approx(0.30 * 2**-10, rel=0.05)


def test_numerics_refuse_other_dtypes():
    with pytest.raises(TypeError, match="float32"):
        nm.tf32_rna(np.ones(3))


# ---- every configuration compiles ------------------------------------------------------------------------------
def configurations():
    out = [(f"tc5 TF32_ROUND={r}", with_params(TC5, TMA_ROUND=0, TF32_ROUND=r)) for r in (0, 1, 2)]
    out += [("tc6", c) for c in TC6.configurations()] + \
           [("tc6 stream-K off", TC6.without_stream_k())]
    out += [(f"tc4 rounded BN={c.params['BN']}", with_params(c, TF32_ROUND=2)) for c in TC4.configurations()]
    out += [("tc4 rounded, K-major B", with_params(c, TF32_ROUND=2, ROUND_B_SMEM=1)) for c in TC4.configurations()]
    out += [(f"tc7 PROMOTE={p}", with_params(TC7, PROMOTE=p)) for p in (0, 1, 2, 4)]
    return out


@pytest.mark.parametrize("name,spec", configurations(), ids=[n for n, _ in configurations()])
def test_configuration_compiles_without_spills(name, spec):
    report = spec.compile("sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0 and report.registers <= 168, report
    assert "C7508" not in spec.compile("sm_90a").log


def test_rounding_is_compiled_in_only_where_asked():
    ptx = {r: ptx_of(with_params(TC5, TMA_ROUND=0, TF32_ROUND=r)) for r in (0, 1, 2)}
    assert "cvt.rna.tf32.f32" not in ptx[0] and "fence.proxy.async" not in ptx[0]
    # registers only: B's fragments rounded for the tensor cores' read (tf32_rna_for_mma: a compare and an add of
    # 0x1000 to the bits, no cvt.rna's mask), no pass over shared memory
    assert re.search(r"add\.s32\s+%r\d+, %r\d+, 4096;", ptx[1]) and not re.search(r"add\.s32\s+%r\d+, %r\d+, 4096;", ptx[0])
    assert "cvt.rna.tf32.f32" not in ptx[1] and "fence.proxy.async" not in ptx[1]
    assert "cvt.rna.tf32.f32" in ptx[2] and "fence.proxy.async.shared::cta" in ptx[2]  # the pass writes smem
    plain = compile_cuda("tc_transpose.cu", "tc_transpose", {"TILE_T": 32})
    rounded = compile_cuda("tc_transpose.cu", "tc_transpose", {"TILE_T": 32, "ROUND": 1})
    assert plain.cubin != rounded.cubin and rounded.report.spills == 0


def _sass(spec, tmp_path) -> str:
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(spec.compile("sm_90a").cubin)
    env = dict(os.environ, PATH=os.path.dirname(NVDISASM) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([CUOBJDUMP, "-sass", str(cubin)], capture_output=True, text=True, env=env).stdout


@pytest.mark.skipif(CUOBJDUMP is None or NVDISASM is None, reason="no cuobjdump and nvdisasm to disassemble with")
@pytest.mark.parametrize("promote", [0, 1])
def test_tc7_issues_three_tf32_products_per_k8_step(promote, tmp_path):
    sass = _sass(with_params(TC7, PROMOTE=promote), tmp_path)
    lines = [line for line in sass.splitlines() if "HGMMA" in line]
    assert len(lines) == 3 * 4 and all("HGMMA.64x128x8.F32.TF32" in line for line in lines)  # 3 x 4 k8 steps
    assert "UTMALDG" in sass and "LDL" not in sass and "STL" not in sass
    assert "LDS.128" in sass and "STS.128" in sass  # the producer warps' pass over A


# ---- constraints and layout ------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec,bad,why", [
    (TC4, {"TF32_ROUND": 1}, "only tc5's swap"),
    (TC4, {"TF32_ROUND": 3}, "only tc5's swap"),
    (TC5, {"TF32_ROUND": 4}, "TF32_ROUND=4"),
    (TC4, {"ROUND_B_SMEM": 1, "TF32_ROUND": 0}, "needs TF32_ROUND=2"),
    (get_kernel("cuda/tc2_wgmma_tma_tf32"), {"TF32_ROUND": 2}, "warp-specialized levels"),
    (get_kernel("cuda/tc4_persistent_bf16"), {"TF32_ROUND": 2}, "TF32 levels"),
    (TC7, {"PROMOTE": -1}, "PROMOTE=-1"),
    (TC7, {"CN": 2}, "clusters and stream-K off"),
    (TC7, {"BM": 256, "STAGES": 2}, "two accumulator sets"),
    (TC7, {"TF32_ROUND": 2}, "tc7 splits"),
])
def test_invalid_configurations_are_refused(spec, bad, why):
    with pytest.raises(InvalidConfigError, match=why):
        with_params(spec, **bad)


def test_tc7_shared_memory_holds_the_small_parts_and_ready_barriers():
    p = dict(TC7.params)
    ring = 4 * ((128 + 128) * 128 + 16)  # A and B tiles of 32 rows of K, full and empty barriers
    small = 4 * (128 * 128 + 8)  # A's small part per slot, and its `ready` barrier
    assert smem_bytes(p) == ring + small + 1024 <= SMEM_LIMIT
    geo = TC7.launch_geometry(Problem(4096, 4096, 4096, "fp32"))
    assert geo.smem == smem_bytes(p) and geo.grid == (132, 1, 1) and geo.block == (384, 1, 1)
    # the registers: two 64-register accumulator sets and the split fragments fit the consumers' count
    assert 2 * p["BM"] // 2 + 32 <= p["CONSUMER_REGS"]


def test_tc7_is_an_fp32_kernel():
    assert TC7.precision == "fp32" and TC7.is_valid(Problem(4097, 3001, 2049, "fp32")) is None
    assert TC7.is_valid(Problem(64, 64, 64, "tf32"))  # a TF32 problem is not its to compute
    t = TC7.traffic(Problem(4096, 4096, 4096, "fp32"))
    assert t.global_read == 4 * (4096 * 4096 * 32 * 2) and "pre-pass" not in t.basis  # A, B once per 128


# ---- plans against the stub libcuda ----------------------------------------------------------------------------
ROUND_COPY_SIZES = [8, 8, 4, 4, 4, 4, 4]  # tc_round_copy(src, dst, rows, cols, ld_src, ld_dst, vec)


def make(stub, spec, shape, layout=Layout()):
    gpu = HostGPU(stub)
    plan = spec.make_plan(Problem(*shape, spec.precision), layout, H200, gpu)
    for compiled, smem, handle in gpu.loaded:
        sizes = ROUND_COPY_SIZES if compiled.entry == "tc_round_copy" else SIGNATURE_SIZES(compiled.entry)
        signature(stub, handle, sizes)
    return plan, gpu


PRE_PASS_PINNED = dataclasses.replace(TC5.with_params(PRE_PASS), one_launch_mnk=0)


def test_pre_pass_rounding_plan_rounds_a_into_its_workspace_every_call(stub):
    """TF32_ROUND=3: a launch rounds A into a workspace pitched to 16 bytes, which A's map holds from the start; the
    kernel rounds B in registers. K = 130: 520-byte rows of A, a 528-byte workspace pitch. (At this size the
    registered tc5 runs one launch instead: the pre-pass is pinned here, one_launch_mnk=0.)"""
    stub.stub_reset()
    spec = PRE_PASS_PINNED
    plan, gpu = make(stub, spec, (300, 200, 130))
    a, b, c = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000
    for call, src in enumerate((a, a + 4)):  # an A off 16 bytes is read element by element
        plan.launch(src, b, c, stream=3)
        copy, main = launch_record(stub, 2 * call), launch_record(stub, 2 * call + 1)
        assert copy.stream == main.stream == 3 and copy.block == (256, 1, 1) and copy.grid == (1, 300, 1)
        s, d = np.frombuffer(copy.params[:16], np.uint64)
        rows, cols, ld_src, ld_dst, vec = np.frombuffer(copy.params[16:36], np.int32)
        assert (s, rows, cols, ld_src, ld_dst, vec) == (src, 300, 130, 130, 132, 0)  # 520-byte rows: not float4
        assert tc_args(main.params)["a"][2] == d and tc_args(main.params)["a"][5] == 132 * 4
    assert stub.stub_copies() == 0
    assert spec.compile("sm_90a").cubin == with_params(TC5, TMA_ROUND=0, TF32_ROUND=1).compile("sm_90a").cubin
    report = compile_cuda("tc_round_copy.cu", "tc_round_copy", {"THREADS": 256}, "sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0


def test_pre_pass_rounding_reads_whole_chunks_where_a_is_aligned(stub):
    stub.stub_reset()
    plan, _ = make(stub, PRE_PASS_PINNED, (64, 64, 128))
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000)
    assert np.frombuffer(launch_record(stub, 0).params[16:36], np.int32)[-1] == 1


@pytest.mark.parametrize("name,shape,launches,copies", [
    ("cuda/tc5_swap_ab_tf32", (300, 200, 130), 2, 0), ("cuda/tc5_swap_ab_tf32", (300, 200, 132), 1, 0),
    ("cuda/tc5_swap_ab_tf32", (256, 256, 256), 1, 0), ("cuda/tc6_stream_k_tf32", (16, 16, 65536), 2, 0),
    ("cuda/tc5_swap_ab_tf32", (257, 256, 256), 2, 0), ("cuda/tc6_stream_k_tf32", (512, 512, 512), 1, 0),
    ("cuda/tc6_stream_k_tf32", (513, 512, 512), 2, 0)])
def test_small_tf32_problems_are_one_launch_and_larger_ones_the_pre_pass_and_the_kernel(stub, name, shape, launches,
                                                                                          copies):
    """tc5 and tc6 TF32 rounding A by the pre-pass (TF32_ROUND=3, a variant; the registered builds' maps round) as
    gemmlab.matmul plans them: up to their one_launch_mnk, the kernel alone, rounding A in shared memory (its binary:
    TF32_ROUND=2); above it, for a long K, or for rows of A that are not 16-byte pitched (K = 130: the pre-pass writes
    its pitched workspace as it rounds), the pre-pass and the kernel, and never a copy besides."""
    stub.stub_reset()
    spec = get_kernel(name).with_params(PRE_PASS)
    plan, _ = make(stub, spec, shape)
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, stream=5)
    assert stub.stub_launches() == launches and stub.stub_copies() == copies
    main = launch_record(stub, launches - 1)
    runs = spec.for_problem(Problem(*shape, "tf32"))
    assert runs.params["TF32_ROUND"] == (2 if launches == 1 else 3) and main.stream == 5
    assert main.smem == smem_bytes(dict(runs.params))


def test_tc7_plan_is_one_launch_of_the_swapped_maps(stub):
    stub.stub_reset()
    plan, gpu = make(stub, TC7, (4096, 4096, 4096))
    a, b, c = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000
    plan.launch(a, b, c, stream=7)
    assert stub.stub_launches() == 1 and stub.stub_copies() == 0
    rec = launch_record(stub, 0)
    assert rec.grid == (132, 1, 1) and rec.block == (384, 1, 1) and rec.cluster == (0, 0, 0)
    assert rec.smem == smem_bytes(dict(TC7.params))
    args = tc_args(rec.params)
    assert (args["M"], args["N"], args["K"], args["C"]) == (4096, 4096, 4096, c)
    # A: K-major boxes of 128 rows x 32 k; B: N-major boxes of 32 k x 32 n
    assert list(args["a"][[2, 3, 4, 5, 6, 7]]) == [a, 4096, 4096, 4 * 4096, 32, 128]
    assert list(args["b"][[2, 3, 4, 5, 6, 7]]) == [b, 4096, 4096, 4 * 4096, 32, 32]


def test_rounded_tc4_plan_rounds_bt_in_its_pre_pass(stub):
    stub.stub_reset()
    plan, gpu = make(stub, with_params(TC4, TF32_ROUND=2), (512, 300, 130))
    entries = [compiled for compiled, _, _ in gpu.loaded]
    transpose = next(c for c in entries if c.entry == "tc_transpose")
    assert transpose is compile_cuda("tc_transpose.cu", "tc_transpose", {"TILE_T": 32, "ROUND": 1}, "sm_90a")
    main = next(c for c in entries if c.entry == "tc4_persistent")
    pinned = with_params(TC4, TF32_ROUND=2).for_problem(plan.problem, 132)
    assert main is compile_cuda(pinned.source, pinned.entry, pinned.defines(), "sm_90a")  # no ROUND_B_SMEM
    assert any("rounded to TF32" in step for step in plan.steps)


def test_rounded_tc4_plan_with_a_k_major_b_rounds_it_in_shared_memory(stub):
    stub.stub_reset()
    plan, gpu = make(stub, with_params(TC4, TF32_ROUND=2), (512, 300, 132), Layout(b=COL))
    (main, _, _), = gpu.loaded  # no pre-pass
    pinned = with_params(TC4, TF32_ROUND=2).for_problem(plan.problem, 132)
    assert main is compile_cuda(pinned.source, pinned.entry, {**pinned.defines(), "ROUND_B_SMEM": 1}, "sm_90a")


def test_truncating_tc4_plan_keeps_the_plain_pre_pass(stub):
    stub.stub_reset()
    _, gpu = make(stub, with_params(TC4, TF32_ROUND=0), (512, 300, 130))
    transpose = next(c for c, _, _ in gpu.loaded if c.entry == "tc_transpose")
    assert transpose is compile_cuda("tc_transpose.cu", "tc_transpose", {"TILE_T": 32}, "sm_90a")


def test_tc7_is_modeled_on_the_tensor_cores_it_runs_on():
    """Its compute roof is a third of TF32's (three TF32 products per FP32 one), not FFMA's; its shared memory
    counts the three reads of A and the pass; tc5, rounding A by a pre-pass, no pass over shared memory."""
    from gemmlab.analysis.roofline import DEVICES, model

    fp32 = model(get_kernel("cuda/v10_register_prefetch"), Problem(4096, 4096, 4096, "fp32"), DEVICES["h200"])
    tc7 = model(TC7, Problem(4096, 4096, 4096, "fp32"), DEVICES["h200"])
    tf32 = model(with_params(TC5, TMA_ROUND=0, TF32_ROUND=0), Problem(4096, 4096, 4096, "tf32"), DEVICES["h200"])
    assert tc7.levels["compute"]["flop_per_clk"] == pytest.approx(tf32.levels["compute"]["flop_per_clk"] / 3)
    assert tc7.levels["compute"]["flop_per_clk"] > 2 * fp32.levels["compute"]["flop_per_clk"]
    assert TC7.peak_share() == ("tf32", 3) and TC5.peak_share() == ("tf32", 1)
    # per output element and k, 4 bytes x (3 reads of A by a warpgroup / 64 + B / 128 + TMA's A and B / 128 each
    # + the pass's read and write of A / 128)
    assert tc7.smem_bytes == pytest.approx(4 * 4096**3 * (3 / 64 + 3 / 128 + 2 / 128))
    # the registered tc5's maps round A and B (TMA_ROUND=1): no pass over shared memory
    tc5 = TC5.traffic(Problem(4096, 4096, 4096, "tf32")).smem  # BM = 256: B's fragments and TMA's A over 256
    assert tc5 == pytest.approx(4 * 4096**3 * (1 / 64 + 1 / 256 + 1 / 256 + 1 / 128))


@pytest.mark.parametrize("spec,changes", [(TC4, {"TMA_ROUND": 1}), (TC5, {"TF32_ROUND": 0, "TMA_ROUND": 1}),
                                          (TC6, {"TF32_ROUND": 0, "TMA_ROUND": 1})], ids=["tc4", "tc5", "tc6"])
@pytest.mark.parametrize("shape", [(300, 200, 132), (256, 256, 256), (16, 16, 65536), (4096, 1024, 8192),
                                   (127, 129, 777), (4096, 4096, 4096)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", [Layout(b=COL), Layout()], ids=["w.t()", "row-major B"])
def test_tma_round_plans_read_both_operands_through_tf32_maps_and_round_nothing_else(stub, spec, changes, shape,
                                                                                     layout):
    """TMA_ROUND=1 on tc4, tc5 and tc6: the kernel's A and B maps of type TFLOAT32 (11), C's FP32 (7); no rounding
    pre-pass, at any size (tc5's and tc6's one-launch switch is TF32_ROUND=3's); tc4's row-major B through the plain
    transpose, the rest in one launch. tc6's whole-tile launch too (4096³: no tile split, tc5's binary), and operands
    whose rows are off 16 bytes (K = 777), read through pitched copies, by TFLOAT32 maps as well."""
    from gemmlab import driver

    stub.stub_reset()
    tma = spec.with_params(changes)  # a stream-K level's whole-tile launches too
    assert tma.auto_refusal() == ""  # rounds to nearest
    plan, gpu = make(stub, tma, shape, layout)
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, stream=5)
    entries = [compiled.entry for compiled, _, _ in gpu.loaded]
    assert "tc_round_copy" not in entries
    m, n, k = shape
    if k % 4 == 0 and n % 4 == 0:  # every row on 16 bytes: nothing copied
        assert stub.stub_copies() == 0
    transposes = spec is TC4 and layout == Layout()
    assert stub.stub_launches() == 1 + transposes
    if transposes:
        transpose = next(c for c, _, _ in gpu.loaded if c.entry == "tc_transpose")
        assert transpose is compile_cuda("tc_transpose.cu", "tc_transpose", {"TILE_T": 32}, "sm_90a")
    args = tc_args(launch_record(stub, stub.stub_launches() - 1).params)
    assert (args["a"][1], args["b"][1]) == (driver.TMA_DTYPES["tf32"],) * 2 == (11, 11)
    # C's map: FP32, where tc4 stores C by TMA (rows on 16 bytes); tc5's transposed C has none
    assert args["c"][1] == (driver.TMA_DTYPES["fp32"] if spec is TC4 and n % 4 == 0 else 0)
    runs = tma.for_problem(Problem(*shape, "tf32"))
    assert runs.params["TF32_ROUND"] == 0 and runs.params["TMA_ROUND"] == 1
    if spec is TC6 and shape == (4096, 4096, 4096):
        assert not runs.params.get("STREAM_K", 0)  # the whole-tile launch, tc5's parameters

