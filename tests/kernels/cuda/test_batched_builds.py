"""The batched builds without a GPU: each compiles for sm_90a (HGMMA where a disassembler is installed, no spills),
the unbatched builds of the same sources are the same binaries as without the batch (BATCHED defaults to 0), and
the plans hand the driver one launch with rank-3 maps (tc4) or a grid over the batch (v9), checked against the stub
libcuda of test_plans."""
from __future__ import annotations

import subprocess
import textwrap

import numpy as np
import pytest
import sass

from gemmlab.errors import LayoutError
from gemmlab.kernels.cuda.tc.model import plan as tc_plan
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel, list_kernels
from gemmlab.problem import BatchedProblem, Problem

from test_plans import (INCLUDES, SIZE, H200, HostGPU, SIGNATURE_SIZES, _flat_offsets, launch_record,  # noqa: F401
                        signature, stub, tc_args)

BATCHING = [s for s in list_kernels() if s.batches]


def test_the_levels_auto_picks_take_a_batch():
    """tc4's 16-bit builds (TF32's row-major B takes a pre-pass of one matrix; FP8 is its own build), tc1's (any row
    pitch, TF32 too) and v9."""
    tc4 = {s.name for s in list_kernels("cuda/tc4_persistent_*") if s.precision not in ("tf32", "fp8")}
    tc1 = {s.name for s in list_kernels("cuda/tc1_mma_sync_*")}
    assert "cuda/tc4_persistent_bf16" in tc4 and "cuda/tc1_mma_sync_tf32" in tc1
    assert {s.name for s in BATCHING} == tc4 | tc1 | {"cuda/v9_autotuned"}


def _builds():
    """Each batching level's BATCHED=1 build, at a small and a large batch of squares."""
    for spec in BATCHING:
        for size in (512, 2048):
            problem = BatchedProblem(size, size, size, spec.precision, 16, size * size, size * size)
            runs = spec.for_problem(problem)
            yield runs if runs.params.get("BATCHED", 0) else runs.batched()


BUILDS = list(_builds())


@pytest.mark.parametrize("build", BUILDS, ids=lambda s: f"{s.name}-BN{s.params.get('BN')}")
def test_batched_build_compiles_sm90a_without_spills(build):
    assert build.params["BATCHED"] == 1
    compiled = build.compile("sm_90a")
    assert compiled.report.spills == 0 and compiled.report.stack_bytes == 0, compiled.report
    assert compiled.report.registers <= (168 if build.name.startswith("cuda/tc") else 255)


def test_a_batch_of_short_products_runs_without_clusters():
    """tc4's SHORT_BATCH: products of K <= 1024 (16 k-tiles) run with clusters off and 128-wide tiles where those
    fill the SMs better (narrow_pays over 132 CTAs); longer ones take the registered 2-CTA clusters and 192-wide
    narrow tiles; a problem without a batch is untouched."""
    spec = get_kernel("cuda/tc4_persistent_bf16")

    def runs(size, batch, k=None):
        p = spec.for_problem(BatchedProblem(size, size, k or size, "bf16", batch=batch)).params
        return p["BATCHED"], p["CM"], p["BN"]

    assert runs(512, 8) == (1, 1, 128)  # 128 tiles of 128x128 on 132 SMs, not 48 clusters of 128x192
    assert runs(512, 64) == (1, 1, 256) and runs(1024, 8) == (1, 1, 256)  # many whole tiles either way
    assert runs(2048, 8) == (1, 2, 256) and runs(2048, 64, k=1025) == (1, 2, 256)
    assert spec.for_problem(Problem(4096, 512, 512, "bf16")).params["CM"] == 2


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
def test_batched_tc4_is_hgmma(tmp_path):
    build = next(b for b in BUILDS if b.name.startswith("cuda/tc4"))
    listing = sass.sass(build.compile("sm_90a").cubin, tmp_path)
    # A's and B's boxes by 3-D loads, C's by 2-D stores
    assert f"HGMMA.64x{build.params['BN']}x16.F32.BF16" in listing and "UTMALDG.3D" in listing
    assert "UTMASTG.2D" in listing
    assert "LDL" not in listing and "STL" not in listing


@pytest.mark.parametrize("name", ["cuda/tc4_persistent_bf16", "cuda/tc1_mma_sync_bf16", "cuda/tc1_mma_sync_tf32",
                                  "cuda/v9_autotuned"])
def test_batch_off_is_the_unbatched_build(name):
    """BATCHED=0 spelled out compiles to the very binary the registered build is (no define)."""
    spec = get_kernel(name)
    spec = spec.concrete(Problem(1024, 1024, 1024)) if hasattr(spec, "concrete") else spec
    plain = spec.compile("sm_90a").cubin
    assert spec.with_params({"BATCHED": 0}).compile("sm_90a").cubin == plain
    assert spec.with_params({"BATCHED": 1}).compile("sm_90a").cubin != plain


def make(stub, spec, problem, layout=ROW_MAJOR):
    gpu = HostGPU(stub)
    plan = spec.make_plan(problem, layout, H200, gpu)
    runs = spec.for_problem(problem)
    args_bytes = runs.args_struct.layout()[1] if hasattr(runs, "args_struct") else None
    for compiled, smem, handle in gpu.loaded:
        if args_bytes:
            sizes = SIGNATURE_SIZES(compiled.entry, args_bytes)
        else:  # the seeds' six (tc1: and ``aligned``), then the two batch strides
            sizes = SIGNATURE_SIZES(compiled.entry) + [8, 8]
        signature(stub, handle, sizes)
    return plan, gpu


def test_tc4_batched_plan_is_one_launch_over_rank3_maps(stub):
    stub.stub_reset()
    spec = get_kernel("cuda/tc4_persistent_bf16")
    problem = BatchedProblem(512, 512, 512, "bf16", 16, 512 * 512, 0)  # B broadcast
    plan, _ = make(stub, spec, problem)
    a, b, c = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000
    plan.launch(a, b, c, stream=7)
    assert stub.stub_launches() == 1
    rec = launch_record(stub, 0)
    # 16 products of 4x2 tiles of 128x256, no clusters (K = 512: SHORT_BATCH): 128 CTAs
    assert rec.grid == (128, 1, 1) and rec.cluster == (0, 0, 0)
    args = tc_args(rec.params[:SIZE])
    offsets = tc_plan.BATCH_ARGS.layout()[0]
    batch, a_batched, b_batched = np.frombuffer(rec.params, np.int32, 3, offsets["batch"])
    assert (batch, a_batched, b_batched) == (16, 1, 0)
    assert (args["M"], args["N"], args["K"], args["C"]) == (512, 512, 512, c)
    # rank 3: A's 16 matrices 512·512 BF16 apart; B one matrix; C the (16·512) x 512 matrix it is
    assert args["a"][10] == 3 and list(args["a"][[12, 13, 14]]) == [16, 512 * 512 * 2, 1]
    assert args["b"][10] == 3 and list(args["b"][[3, 4, 12, 14]]) == [512, 512, 1, 1]
    assert args["c"][10] == 2 and list(args["c"][[3, 4]]) == [512, 16 * 512] and args["c_tma"] == 1
    assert "16 products in one launch" in plan.explain()


def test_tc4_batch_with_rows_off_64_stores_from_registers(stub):
    stub.stub_reset()
    problem = BatchedProblem(200, 512, 512, "bf16", 4, 200 * 512, 512 * 512)
    plan, _ = make(stub, get_kernel("cuda/tc4_persistent_bf16"), problem)
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000)
    assert tc_args(launch_record(stub, 0).params[:SIZE])["c_tma"] == 0  # a 64-row box would cross into the next product


def test_tc4_batch_reads_in_place_or_refuses(stub):
    stub.stub_reset()
    spec = get_kernel("cuda/tc4_persistent_bf16")
    with pytest.raises(LayoutError, match="16 bytes"):  # 100-byte rows: TMA cannot stride them
        make(stub, spec, BatchedProblem(64, 64, 50, "bf16", 4, 64 * 50, 50 * 64))
    plan, _ = make(stub, spec, BatchedProblem(64, 64, 64, "bf16", 4, 64 * 64, 64 * 64))
    with pytest.raises(LayoutError, match="not 16-byte aligned"):
        plan.launch(0x7000_0000_0002, 0x7100_0000_0000, 0x7200_0000_0000)
    assert spec.is_valid(BatchedProblem(64, 64, 64, "bf16", 4, 64 * 64 + 3, 0))  # a stride off 16 bytes


def test_tc4_batch_with_b_transposed(stub):
    stub.stub_reset()
    problem = BatchedProblem(256, 384, 512, "bf16", 8, 256 * 512, 384 * 512)
    plan, _ = make(stub, get_kernel("cuda/tc4_persistent_bf16"), problem, Layout(b=COL))
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000)
    args = tc_args(launch_record(stub, 0).params[:SIZE])
    assert list(args["b"][[3, 4, 12, 13]]) == [512, 384, 8, 384 * 512 * 2]  # Bᵀ (N×K) per product


def test_v9_batched_plan_runs_the_batch_in_grid_z(stub):
    stub.stub_reset()
    spec = get_kernel("cuda/v9_autotuned")
    problem = BatchedProblem(1024, 1024, 1024, "fp32", 12, 0, 1024 * 1024)
    plan, _ = make(stub, spec, problem)
    plan.launch(0xA000, 0xB000, 0xC000, stream=3)
    rec = launch_record(stub, 0)
    single = spec.launch_geometry(Problem(1024, 1024, 1024))
    assert rec.grid == (single.grid[0], single.grid[1], 12)
    c, a, b = np.frombuffer(rec.params[:24], np.uint64)
    assert (c, a, b) == (0xC000, 0xA000, 0xB000)
    assert tuple(np.frombuffer(rec.params[24:36], np.int32)) == (1024, 1024, 1024)
    assert tuple(np.frombuffer(rec.params[36:52], np.int64)) == (0, 1024 * 1024)
    assert "one per gridDim.z index" in plan.explain()


@pytest.mark.parametrize("precision, strides, aligned", [
    ("bf16", (64 * 64, 64 * 64), 1), ("bf16", (64 * 64 + 4, 0), 0), ("tf32", (64 * 64, 0), 1),
    ("tf32", (64 * 64 + 2, 64 * 64), 0)])
def test_tc1_batched_plan_runs_the_batch_in_grid_z(stub, precision, strides, aligned):
    """tc1's batch: a product per gridDim.z index, the strides after ``aligned``; a batch stride off 16 bytes
    takes the element-by-element staging, as a row pitch off 16 bytes does."""
    stub.stub_reset()
    spec = get_kernel(f"cuda/tc1_mma_sync_{precision}")
    problem = BatchedProblem(64, 64, 64, precision, 5, *strides)
    plan, _ = make(stub, spec, problem)
    plan.launch(0xA000, 0xB000, 0xC000, stream=3)
    rec = launch_record(stub, 0)
    assert rec.grid == (1, 1, 5) and rec.block == (256, 1, 1)
    c, a, b = np.frombuffer(rec.params[:24], np.uint64)
    assert (c, a, b) == (0xC000, 0xA000, 0xB000)
    assert tuple(np.frombuffer(rec.params[24:40], np.int32)) == (64, 64, 64, aligned)
    assert tuple(np.frombuffer(rec.params[40:56], np.int64)) == strides


@pytest.mark.parametrize("name, batch", [("cuda/tc1_mma_sync_bf16", 70000), ("cuda/v9_autotuned", 2 * 65535),
                                         ("cuda/tc1_mma_sync_tf32", 3 * 65535 + 1)])
def test_a_batch_past_grid_z_runs_in_slices_of_65535(stub, name, batch):
    """gridDim.z takes 65535 products: a larger batch runs in launches of 65535 and the rest, each with A, B and C
    stepped to its first product (A's and B's batch strides, C's M×N), the same kernel and parameters otherwise."""
    stub.stub_reset()
    spec = get_kernel(name)
    m, n, k = 48, 40, 24
    problem = BatchedProblem(m, n, k, spec.precision, batch, m * k + 8, 0)  # B broadcast
    plan, _ = make(stub, spec, problem)
    plan.launch(0xA0_0000_0000, 0xB0_0000_0000, 0xC0_0000_0000, stream=3)
    slices = -(-batch // 65535)
    records = [launch_record(stub, i) for i in range(slices)]
    assert stub.stub_launches() == slices
    assert [r.grid[2] for r in records] == [65535] * (slices - 1) + [batch - 65535 * (slices - 1)]
    assert len({r.grid[:2] for r in records}) == 1 and len({r.block for r in records}) == 1
    e, out = spec.prec.input_bytes, np.dtype(spec.output_dtype(problem)).itemsize
    for i, r in enumerate(records):
        c, a, b = np.frombuffer(r.params[:24], np.uint64)
        first = 65535 * i
        assert (a, b, c) == (0xA0_0000_0000 + first * e * (m * k + 8), 0xB0_0000_0000,
                             0xC0_0000_0000 + first * out * m * n)
    assert f"{slices} launches of at most 65535" in plan.explain()


def test_a_batch_tma_cannot_pitch_goes_to_tc1(own_dispatch_cache):
    """tc4 reads a batch in place through rank-3 maps, whose row pitch is a multiple of 16 bytes: a BF16 batch with
    K or N (B row-major) off 8 elements is tc4's refusal before any plan, and auto's choice is tc1, which stages
    such rows element by element. B handed over transposed pitches by K, so N is free then. TF32 batches take
    tc1."""
    from gemmlab import dispatch
    from gemmlab.dispatch import shipped_gpu

    gpu, tc4 = shipped_gpu(), get_kernel("cuda/tc4_persistent_bf16")
    for (m, n, k), layout, pick in (((5, 7, 3), ROW_MAJOR, "tc1_mma_sync"), ((512, 513, 512), ROW_MAJOR, "tc1_mma_sync"),
                                    ((512, 513, 512), Layout(b=COL), "tc4_persistent"),
                                    ((512, 512, 513), Layout(b=COL), "tc1_mma_sync"),
                                    ((513, 512, 512), ROW_MAJOR, "tc4_persistent")):
        problem = BatchedProblem(m, n, k, "bf16", 4, m * k, k * n)
        refusal = tc4.in_place_refusal(problem, layout)
        assert bool(refusal) == (pick == "tc1_mma_sync")
        if refusal:
            assert refusal.error is LayoutError and "16 bytes" in str(refusal)
        assert dispatch.choose(problem, layout, gpu).spec.name == f"cuda/{pick}_bf16"
    assert tc4.in_place_refusal(Problem(5, 7, 3, "bf16"), ROW_MAJOR) is None  # one product: a pitched copy
    tf32 = BatchedProblem(512, 512, 512, "tf32", 8, 512 * 512, 512 * 512)
    assert dispatch.choose(tf32, ROW_MAJOR, gpu).spec.name == "cuda/tc1_mma_sync_tf32"


def test_levels_without_a_batch_refuse_it_and_auto_passes_them_over(own_dispatch_cache):
    from gemmlab import dispatch
    from gemmlab.dispatch import shipped_gpu

    gpu = shipped_gpu()
    for shape, prec, want in (((512, 512, 512), "bf16", "cuda/tc4_persistent_bf16"),
                              ((2048, 2048, 2048), "bf16", "cuda/tc4_persistent_bf16"),
                              ((1024, 1024, 1024), "fp32", "cuda/v9_autotuned")):
        m, n, k = shape
        problem = BatchedProblem(m, n, k, prec, 8, m * k, k * n)
        choice = dispatch.choose(problem, ROW_MAJOR, gpu)
        assert choice.spec.name == want and choice.spec.batches
    tc3 = get_kernel("cuda/tc3_warp_specialized_bf16")
    refusal = tc3.is_valid(BatchedProblem(512, 512, 512, "bf16", 8, 512 * 512, 512 * 512))
    assert refusal and refusal.error is LayoutError


def test_batch_args_layout_matches_the_compiled_struct(tmp_path):
    """BatchArgs (tc_args.cuh) derives from TcArgs: its batch fields start at sizeof(TcArgs), where BATCH_ARGS's
    nested struct puts them."""
    want = _flat_offsets(tc_plan.BATCH_ARGS)
    prints = "\n".join(f'  printf("{f} %zu\\n", (size_t)((const char *)&x.{f} - (const char *)&x));' for f in want)
    src = tmp_path / "layout.cpp"
    src.write_text(textwrap.dedent(f"""\
        #include <cstddef>
        #include <cstdio>
        #include "tc_args.cuh"
        int main() {{
          static BatchArgs x;
        {prints}
          printf("sizeof %zu\\n", sizeof(BatchArgs));
        }}
        """))
    exe = tmp_path / "layout"
    subprocess.run(["g++", "-std=c++17", *INCLUDES, "-o", str(exe), str(src)], check=True)
    printed = dict(line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                                             check=True).stdout.splitlines())
    assert {f: int(printed[f]) for f in want} == want and want["batch"] == SIZE
    assert int(printed["sizeof"]) == tc_plan.BATCH_ARGS.layout()[1]
