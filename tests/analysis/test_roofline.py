"""The seeds' analysis and the hierarchy beneath it, against numbers worked out by hand."""
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab.analysis.roofline import (DEVICES, at_clock, ceilings_for, device_spec, model, models_at, refusal,
                                       seed_examples)
from gemmlab.errors import GemmlabError
from gemmlab.kernels.cuda.tc.model.kernel import PRE_PASS
from gemmlab.kernels.registry import get_kernel
from gemmlab.kernels.spec import naive_traffic, tiled_traffic
from gemmlab.problem import Problem

H200 = DEVICES["h200"]
MiB = 2**20


def test_seed_worked_numbers():
    ex = seed_examples()
    assert ex["a100_ridge"] == pytest.approx(12.54, abs=0.01)  # 19.5e12 / 1555e9
    assert ex["naive_intensity"] == pytest.approx(0.25)
    assert ex["square_intensity_4096"] == pytest.approx(4096 / 6)
    assert ex["naive_redundancy_4096"] == pytest.approx(4096)  # read N times more than needed
    # the seeds' tiled formula 2·T·T·T / ((T·T + T·T)·4) at T=32
    assert ex["tile32_intensity"] == pytest.approx(2 * 32**3 / ((32 * 32 + 32 * 32) * 4))


def test_seed_view_at_1024_cubed():
    """The seeds' chapter at 1024³ on their A100: 2.15 GFLOP, 12.6 MB compulsory, N/6 best, the naive kernel's
    8MNK bytes at 0.25 FLOP/byte, far left of the 12.5 ridge, so bound by 1555 GB/s × 0.25."""
    p = Problem(1024, 1024, 1024)
    assert p.flops() == 2 * 1024**3
    assert p.compulsory_bytes() == 4 * 3 * 1024**2
    assert p.intensity() == pytest.approx(1024 / 6)
    naive = model(get_kernel("cuda/v1_naive"), p, DEVICES["a100"])
    assert naive.modeled_read_bytes == 8 * 1024**3 and naive.modeled_write_bytes == 4 * 1024**2
    assert naive.modeled_intensity == pytest.approx(2 * 1024**3 / (8 * 1024**3 + 4 * 1024**2))
    assert naive.seed_ridge == pytest.approx(19.5e12 / 1555e9)
    assert naive.seed_bound == "memory"
    assert naive.seed_predicted_tflops == pytest.approx(1555e9 * naive.modeled_intensity / 1e12)
    tiled = model(get_kernel("cuda/v2_smem"), p, DEVICES["a100"])
    # 32×32 tiles: A read 32 times, B 32 times: 8 FLOP/byte before C's write
    assert tiled.modeled_read_bytes == 4 * (1024 * 1024 * 32 * 2)


def test_naive_kernel_through_l1_and_l2():
    """One thread per output: 2MNK loads (8MNK bytes) in the seeds' view; a 32-thread warp asks L1 for one sector
    of A and four of B per k (5MNK bytes); L2 sees each 32×32 block's rows and columns once, MNK/4 bytes."""
    p = Problem(1024, 1024, 1024)
    t = naive_traffic(p)
    assert t.global_read == 8 * 1024**3
    assert t.l1 == 5 * 1024**3
    assert t.l2 == 1024**3 / 4 + 4 * 1024**2
    # 264 blocks at once (2 of 1024 threads per SM): each wave holds 9 rows of A and all of B, 5.2 MB, which
    # half the L2 keeps, so the next wave finds them: A, B read once, C written once
    km = model(get_kernel("cuda/v1_naive"), p, H200, resources={"registers": 32})
    assert km.wave == 264
    assert km.dram_bytes == 3 * 4 * 1024**2
    assert km.bound == "l1"  # 5 GB of L1 requests at 33.5 TB/s: longer than L2, DRAM or the FFMAs
    assert km.levels["l1"]["bytes"] == 5 * 1024**3


def test_dram_bytes_in_step_and_staggered_for_v3_at_4096_cubed():
    """numba/v3 and cuda/v3 walk the same 64×64 tiles row-major (blockIdx.x along N); 512 threads at 40 registers
    make three CTAs per SM, at 54 two. In step the resident wave reads 778 MiB of A and B (396 at a time) or 1,102 MiB
    (264); staggered, one CTA per SM sweeps K with the other SMs', whatever the occupancy: 31 × 67 + 5 MiB, less the
    25/62 of the last burst's 5 MiB that L2 keeps. C is written once either way."""
    p = Problem(4096, 4096, 4096)
    c = 4 * 4096 * 4096
    staggered = (31 * 67 + 5 - 5 * 25 / 62) * MiB + c
    numba = model(get_kernel("numba/v3_1d_blocktile"), p, H200, resources={"registers": 40})
    assert numba.wave == 396
    assert numba.dram_bytes == numba.levels["dram"]["bytes"] == 778 * MiB + c
    assert numba.dram_bytes_staggered == pytest.approx(staggered)
    cuda = model(get_kernel("cuda/v3_1d_blocktile"), p, H200, resources={"registers": 54, "smem_static": 4096})
    assert cuda.wave == 264
    assert cuda.dram_bytes == (15 * 69 + 67) * MiB + c
    assert cuda.dram_bytes_staggered == pytest.approx(staggered)
    # the estimate: the two counts' geometric mean, off by at most sqrt(staggered / in step) whichever runs
    assert numba.dram_bytes_estimate == pytest.approx(((778 * MiB + c) * staggered) ** 0.5)
    assert cuda.dram_bytes < cuda.dram_bytes_estimate < cuda.dram_bytes_staggered
    assert numba.levels["dram"]["bytes"] == numba.dram_bytes  # the roof keeps the fewest bytes the order allows
    # one CTA per SM (v4's 152 registers): nothing to stagger
    v4 = model(get_kernel("cuda/v4_2d_blocktile"), p, H200, resources={"registers": 152})
    assert v4.wave == 132 and v4.dram_bytes_staggered == v4.dram_bytes == pytest.approx(v4.dram_bytes_estimate)


def test_naive_traffic_is_8mnk_bytes():
    p = Problem(2048, 3072, 4096)
    t = naive_traffic(p)
    assert t.global_read == 8 * p.m * p.n * p.k
    assert t.intensity(p) == pytest.approx(0.25, rel=1e-3)  # the store adds a hair


def test_tiled_traffic_divides_reads_by_tile_and_handles_ragged_tiles():
    p = Problem(100, 70, 50)
    t = tiled_traffic(p, 32, 32)
    # A is re-read once per column tile (ceil(70/32) = 3), B once per row tile (ceil(100/32) = 4)
    assert t.global_read == 4 * (100 * 50 * 3 + 50 * 70 * 4)
    assert t.global_write == 4 * 100 * 70


def test_shared_memory_bytes_of_a_warp_tile():
    """Each warp reads WM + WN values per k, and the staging stores wrote each loaded byte once: v2's warps are one
    row of 32 threads, 1 + 32 values per k for 32 FFMA, 4MNK·(1 + 1/32) bytes, plus 4MNK·(2/32) staged."""
    p = Problem(1024, 1024, 1024)
    t = get_kernel("cuda/v2_smem").traffic(p)
    assert t.smem == pytest.approx(4 * 1024**3 * (1 + 1 / 32 + 2 / 32))
    v4 = get_kernel("cuda/v4_2d_blocktile").traffic(p)
    # 16 threads of 8 columns along a row: a warp covers 16 rows × 128 columns
    assert v4.smem == pytest.approx(4 * 1024**3 * (1 / 16 + 1 / 128 + 2 / 128))


def test_cluster_multicast_halves_one_operand_at_l2_not_in_shared_memory():
    """tc4's 2-CTA clusters share B: at 4096³ BF16, A is read once per 256 columns (16 times), B once per 256 rows
    (16 times, against 32 without the cluster); each CTA still receives its whole B tile in shared memory."""
    p = Problem(4096, 4096, 4096, "bf16", out_dtype="float32")  # FP32 C, as out_dtype asks (BF16 C below)
    clustered = tiled_traffic(p, 128, 256, warp=(64, 256), cluster=(2, 1))
    alone = tiled_traffic(p, 128, 256, warp=(64, 256))
    n2 = 4096 * 4096
    assert clustered.l2 == 2 * (n2 * 16 + n2 * 16) + 4 * n2
    assert alone.l2 == 2 * (n2 * 16 + n2 * 32) + 4 * n2
    # BF16 C, the default (torch's rule): C's writes halve
    assert tiled_traffic(Problem(4096, 4096, 4096, "bf16"), 128, 256, warp=(64, 256), cluster=(2, 1)).l2 == \
        clustered.l2 - 2 * n2
    assert clustered.smem == alone.smem
    tc4 = get_kernel("cuda/tc4_persistent_bf16").traffic(p)
    assert tc4.l2 == clustered.l2
    assert (tc4.walk.tiles_m, tc4.walk.tiles_n, tc4.walk.wave, tc4.walk.sms_per_tile) == (16, 16, 66, 2)


def test_snake_order_with_a_wave_larger_than_the_l2_keeps_what_the_last_wave_read_last():
    """tc4 BF16 at 4096³: 256 cluster tiles of 256×256, panels of 2 MiB, 66 clusters. Waves (GROUP_M=8, odd
    groups right to left): 8 A + 9 B panels (34 MiB), 12 + 8 (40), 8 + 9 (34), 8 + 8 (32). Each walks K the other
    way from the last, so of the panels two waves share (18, 24, 18 MiB) the next finds the part read last, the
    30 MiB of L2 over the bytes between the two reads: 30/(34+40-18), 30/(40+34-24), 30/(34+32-18)."""
    km = model(get_kernel("cuda/tc4_persistent_bf16"), Problem(4096, 4096, 4096, "bf16", out_dtype="float32"), H200)
    reads = 140 - 18 * 30 / 56 - 24 * 30 / 50 - 18 * 30 / 48
    assert km.wave == 66
    assert km.dram_bytes == pytest.approx(reads * MiB + 4 * 4096 * 4096)  # FP32 C, as out_dtype asks
    km = model(get_kernel("cuda/tc4_persistent_bf16"), Problem(4096, 4096, 4096, "bf16"), H200)
    assert km.dram_bytes == pytest.approx(reads * MiB + 2 * 4096 * 4096)  # BF16 C, the default


def test_stream_k_partials_and_its_balanced_tail():
    """tc6 TF32 at 2048×3072×4096: 192 tiles of 256×128 for 132 CTAs, a last wave of 60 (under SK_FILL): all 192
    tiles form the stream-K region, spread evenly, so the busiest SM does 192/132 tiles' FLOPs where tc5 does 2;
    each partial adds 4·256·128 bytes written and read back through L2, none to DRAM."""
    from gemmlab.kernels.cuda.tc.model.stream_k import stream_k_partials

    p = Problem(2048, 3072, 4096, "tf32")
    tc5, tc6 = get_kernel("cuda/tc5_swap_ab_tf32"), get_kernel("cuda/tc6_stream_k_tf32")
    t5, t6 = tc5.traffic(p), tc6.traffic(p)
    partials = stream_k_partials(192, 132, 128)
    assert t6.walk.split_tail == 192
    assert t6.l2 - t5.l2 == 2 * 4 * 256 * 128 * partials
    m5, m6 = model(tc5, p, H200), model(tc6, p, H200)
    tile = 2 * 256 * 128 * 4096
    assert m5.levels["compute"]["per_sm_flops"] == 2 * tile
    assert m6.levels["compute"]["per_sm_flops"] == pytest.approx(192 * tile / 132)
    # no pre-pass: A's and B's maps round them (TMA_ROUND); the pre-pass variant's (TF32_ROUND=3) reads A and
    # writes it rounded, a launch of its own
    assert "prepass" not in m6.levels and m6.dram_bytes == m6.levels["dram"]["bytes"]
    m3 = model(tc6.with_params(PRE_PASS), p, H200)
    assert m3.dram_bytes - m3.levels["dram"]["bytes"] == m3.levels["prepass"]["bytes"] == 8 * 2048 * 4096


def test_tf32_prepass_is_a_launch_of_its_own():
    """tc2-tc4 TF32 read B and write Bᵀ first: 8·K·N bytes through DRAM, in a launch that does not overlap the
    kernel, so its time adds to the kernel's largest level."""
    p = Problem(4096, 4096, 4096, "tf32")
    km = model(get_kernel("cuda/tc4_persistent_tf32"), p, H200)
    pre = km.levels["prepass"]
    assert pre["bytes"] == 8 * 4096 * 4096
    kernel = max(v["ms"] for k, v in km.levels.items() if k != "prepass")
    assert km.predicted_ms == pytest.approx(kernel + pre["bytes"] / 4.8e12 * 1e3)
    assert km.dram_bytes == km.levels["dram"]["bytes"] + pre["bytes"]


def test_the_model_follows_the_layout_the_operands_come_in():
    """Given B as w.t() (K-major), the TF32 wgmma levels read it in place: no Bᵀ pre-pass. A layout the kernel does
    not read gets gemmlab.matmul's row-major copy first, a pre-pass of its own of that operand's bytes read and
    written. A kernel that reads both layouts in place moves the same bytes in either."""
    from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout

    p = Problem(128, 14336, 4096, "tf32")
    tc10 = get_kernel("cuda/tc10_split_k_tf32")
    natural, w_t = model(tc10, p, H200), model(tc10, p, H200, layout=Layout(b=COL))
    assert natural.levels["prepass"]["bytes"] == 8 * 4096 * 14336 and "prepass" not in w_t.levels
    assert natural.modeled_read_bytes - w_t.modeled_read_bytes == 4 * 4096 * 14336
    assert model(tc10, p, H200, layout=ROW_MAJOR).as_dict() == natural.as_dict()
    a_col = model(tc10, p, H200, layout=Layout(a=COL))  # A copied row-major, then B transposed, as natural
    assert a_col.levels["prepass"]["bytes"] == 8 * 4096 * 14336 + 8 * 128 * 4096
    assert "row-major copy of A" in a_col.basis
    v10 = get_kernel("cuda/v10_register_prefetch")
    f = Problem(512, 1024, 2048, "fp32")
    assert model(v10, f, H200, layout=Layout(b=COL)).dram_bytes == model(v10, f, H200).dram_bytes
    # a kernel without a tile walk (gemv): the copy is its own level, not also the kernel's DRAM bytes
    gemv, g = get_kernel("cuda/gemv1_warp_dot_bf16"), Problem(16, 4096, 4096, "bf16")
    in_place, copied = model(gemv, g, H200, layout=Layout(b=COL)), model(gemv, g, H200, layout=Layout(COL, COL))
    assert copied.levels["dram"]["bytes"] == in_place.levels["dram"]["bytes"]
    assert copied.levels["prepass"]["bytes"] == copied.dram_bytes - in_place.dram_bytes == 2 * 2 * 16 * 4096


def test_the_dispatchers_model_counts_the_same_pre_passes_for_an_exchanged_build():
    """tc5 TF32 with A and B exchanged (A_IN_REGS=1, a variant; here over the registered maps' rounding, so no
    rounding pre-pass) reads x @ w.t()'s operands in place; given A column-major, gemmlab.matmul copies A row-major
    first, which the exchanged kernel reads as its K-major B: the copy alone, no Bᵀ pre-pass, in the roofline and in
    the dispatcher's scaling model alike."""
    from gemmlab import dispatch
    from gemmlab.analysis.scaling import LAUNCH_US, estimate
    from gemmlab.kernels.plan import COL, Layout

    spec = get_kernel("cuda/tc5_swap_ab_tf32").with_params({"A_IN_REGS": 1})
    assert spec.exchanges
    p = Problem(4096, 4096, 4096, "tf32")
    roofs = dispatch._roofs("NVIDIA H200", 132)
    copy = 2 * 4 * 4096 * 4096
    assert model(spec, p, H200, layout=Layout(COL, COL)).levels["prepass"]["bytes"] == copy
    e = estimate(spec, p, roofs, Layout(COL, COL), ("A",))
    assert e.launches == 2 and e.serial_ms == pytest.approx(copy / (roofs.dram_gbs * 1e9) * 1e3 + LAUNCH_US / 1e3)
    assert estimate(spec, p, roofs, Layout(b=COL)).serial_ms == 0


def test_compute_roof_follows_the_clock_and_whole_tiles():
    """v10 at 4096³: 512 tiles of 128×256 on 132 SMs, so the busiest SM runs 4 of them (not 3.88); the FFMA roof
    is 256 FLOP per SM and clock: 4·2·128·256·4096 / (256 · 1980 MHz) at full clock, 1.32× that at 1500 MHz."""
    p = Problem(4096, 4096, 4096)
    km = model(get_kernel("cuda/v10_register_prefetch"), p, H200)
    ms = 4 * 2 * 128 * 256 * 4096 / (256 * 1980e6) * 1e3
    assert km.bound == "compute" and km.predicted_ms == pytest.approx(ms)
    slow = at_clock(km.as_dict(), 1500.0)
    assert slow["predicted_ms"] == pytest.approx(ms * 1980 / 1500)
    assert slow["levels"]["l2"]["ms"] == km.levels["l2"]["ms"]  # bandwidths do not follow the SM clock
    assert slow["levels"]["compute"]["tflops"] == pytest.approx(132 * 256 * 1500e6 / 1e12)


def test_measured_copy_bandwidth_replaces_the_datasheet():
    """The DRAM level's roof is the measured copy bandwidth; the seeds' single roof keeps the datasheet's pair, since
    FP32's arithmetic was not measured with it (seed_roof: one source for both)."""
    roofs = ceilings_for(H200, dram_gbs=4000.0)
    assert roofs.dram_gbs == 4000.0 and roofs.source["dram"] == "measured" and roofs.source["l2"] == "assumed"
    km = model(get_kernel("cuda/v1_naive"), Problem(4096, 4096, 4096), roofs)
    assert km.levels["dram"]["gbs"] == 4000.0
    assert km.seed_roofs == "datasheet" and km.seed_ridge == pytest.approx(H200.ridge("fp32"))
    assert km.seed_predicted_tflops == pytest.approx(4800e9 * km.modeled_intensity / 1e12)


COMMITTED_CEILINGS = Path(__file__).resolve().parents[2] / "results" / "h200" / "ceilings.json"


def test_the_seeds_ridge_is_the_datasheets_or_the_measured_roofs_never_one_of_each():
    """Under the committed ceilings (DRAM 4,090 GB/s, FP32 253.9 FLOP/clk/SM, both measured) FP32's seed ridge is the
    measured pair's, 66.3 TFLOPS over 4,090 GB/s = 16.2, the chapter's "measured roofs" ridge, and its bound and
    TFLOPS follow it; the datasheet's peak over the measured bandwidth (16.4) is neither ridge. FP8, whose arithmetic
    the ceilings did not measure, keeps the datasheet's pair: 1979 / 4.8 = 412.3, as the devices table says."""
    from gemmlab.analysis.ceilings import load
    from gemmlab.analysis.roofline import seed_roof

    roofs = load(COMMITTED_CEILINGS, ceilings_for(H200))
    peak, gbs, source = seed_roof(roofs, "fp32")
    assert (source, gbs) == ("measured", roofs.dram_gbs) and peak == pytest.approx(roofs.compute_tflops("fp32"))
    v2 = model(get_kernel("cuda/v2_smem"), Problem(4096, 4096, 4096), roofs)
    assert v2.seed_roofs == "measured" and v2.seed_ridge == pytest.approx(16.2, abs=0.05)
    assert v2.seed_ridge == pytest.approx(peak * 1e12 / (roofs.dram_gbs * 1e9))
    assert v2.seed_ridge != pytest.approx(66.9e12 / (roofs.dram_gbs * 1e9), abs=0.05)
    assert v2.seed_predicted_tflops == pytest.approx(roofs.dram_gbs * 1e9 * v2.modeled_intensity / 1e12)
    fp8 = model(get_kernel("peers/cublaslt_fp8"), Problem(4096, 4096, 4096, "fp8"), roofs)
    assert fp8.seed_roofs == "datasheet" and fp8.seed_ridge == pytest.approx(H200.ridge("fp8"))
    assert fp8.seed_predicted_tflops == pytest.approx(min(1979.0, 4800e9 * fp8.modeled_intensity / 1e12))
    # the datasheet's roofs: the devices table's ridge
    peer = model(get_kernel("peers/cublas_fp32"), Problem(4096, 4096, 4096), H200)
    assert peer.seed_roofs == "datasheet" and peer.seed_ridge == pytest.approx(H200.ridge("fp32"))


@pytest.mark.parametrize("measured_on, device, loads", [
    ("NVIDIA H100 80GB HBM3", "h100", True),  # the driver's name for the table's "NVIDIA H100 SXM"
    ("NVIDIA H200", "h200", True),
    ("NVIDIA H100 PCIe", "h100", False),  # another board of the chip: 114 SMs, 2,000 GB/s
    ("NVIDIA H200", "h100", False),
    ("NVIDIA H100 80GB HBM3", "h200", False),
])
def test_ceilings_load_only_onto_the_board_they_were_measured_on(tmp_path, measured_on, device, loads):
    """A ceilings file names its GPU as the driver does; the records' datasheet names it as the devices table does.
    The two are the same board only where both resolve to one table entry."""
    from gemmlab.analysis.ceilings import CeilingsError, load

    path = tmp_path / "ceilings.json"
    path.write_text(f'{{"gpu": "{measured_on}", "dram_gbs": 3000.0}}')
    base = ceilings_for(DEVICES[device])
    if loads:
        assert load(path, base).dram_gbs == 3000.0
    else:
        with pytest.raises(CeilingsError, match=f"measured on {measured_on}, the records ran on"):
            load(path, base)


def _roofline(*args) -> str:
    """gemmlab roofline's output, its lines wrapped at the console's width joined again (words one space apart)."""
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "roofline", *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return " ".join(proc.stdout.split())


def test_the_roofline_footer_names_the_ridge_its_figures_are():
    """With the committed ceilings the seeds' ridge column shows the measured pair's ridge (16.2 for FP32), and the
    footer says it is the measured ridge for the precisions measured; on the datasheet it shows 13.9, the devices
    table's, and the footer says the datasheet's."""
    measured = _roofline("--gpu", "h200", "--ceilings", str(COMMITTED_CEILINGS), "--kernels", "peers/cublas_fp32")
    assert "seeds: ridge: 16.2 " in measured and "against the measured ridge for FP32, TF32, BF16:" in measured
    datasheet = _roofline("--gpu", "h200", "--kernels", "peers/cublas_fp32")
    assert "seeds: ridge: 13.9 " in datasheet and "ridge FP32: 13.9 " in datasheet
    assert "against the datasheet's ridge" in datasheet and "measured ridge" not in datasheet


RAGGED = [(17, 33, 4097), (129, 129, 129), (100, 200, 300), (1, 4096, 4096)]


@pytest.mark.parametrize("shape", RAGGED, ids=lambda s: "x".join(map(str, s)))
def test_dram_bytes_lie_between_the_compulsory_and_the_l2s_at_ragged_shapes(shape):
    """Every GPU kernel the roofline models: a tile at the matrix's edge reads only the rows and columns left there,
    so DRAM (what L2 lets through) never exceeds the L2's bytes, and never falls below each input read once and C
    written once. Counted as whole panels, 17×33×4097 FP32 in cuBLAS's 256×128 tile read 6 MB from DRAM for 1 MB
    through L2."""
    from gemmlab.kernels.registry import list_kernels

    models = models_at(list_kernels(), shape, H200, ceilings_for(H200))
    assert len(models) > 40
    for spec, km in models:
        assert km.compulsory_bytes * (1 - 1e-12) <= km.dram_bytes <= km.l2_bytes * (1 + 1e-12), spec.name
        assert km.dram_bytes <= km.dram_bytes_staggered <= km.l2_bytes * (1 + 1e-12), spec.name


def test_a_small_ragged_problem_reads_its_compulsory_bytes_once():
    """cuBLAS FP32 at 17×33×4097: one tile, 0.82 MB of A, B and C, DRAM-bound at 4.8 TB/s: 26.9 TFLOPS, not the 3.5
    of a whole 256×128 tile's panels."""
    p = Problem(17, 33, 4097)
    km = model(get_kernel("peers/cublas_fp32"), p, H200)
    assert km.dram_bytes == km.l2_bytes == p.compulsory_bytes()
    assert km.bound == "dram" and km.predicted_tflops == pytest.approx(4800e9 * p.intensity() / 1e12)


def test_the_roofline_leaves_out_kernels_that_refuse_the_shape_or_the_gpu():
    """At the seed shape (M = 2048) gemv1, gemv2 and tc9 refuse the problem (their rows of A); on an A100 the wgmma
    and TMA levels (tc2-tc10, the Gluon levels) cannot run, and FP8 has no units. Each has no row, and refusal says
    why; the levels that run there keep theirs."""
    from gemmlab.kernels.registry import list_kernels
    from gemmlab.problem import SEED_SHAPE

    specs = [s for s in list_kernels() if s.device != "cpu"]
    at_seed = {s.name for s, _ in models_at(specs, SEED_SHAPE, H200, ceilings_for(H200))}
    refused = {"cuda/gemv2_mma_swap_bf16", "cuda/tc9_narrow_swap_bf16", "cuda/gemv1_warp_dot_fp32"}
    assert not refused & at_seed and {"cuda/tc4_persistent_bf16", "cuda/v10_register_prefetch"} <= at_seed
    assert "at most 32 rows of A (M=2048)" in refusal(get_kernel("cuda/gemv2_mma_swap_bf16"), SEED_SHAPE, H200)
    assert "at most 128 rows of A" in refusal(get_kernel("cuda/tc9_narrow_swap_bf16"), SEED_SHAPE, H200)
    assert len(at_seed) == sum(not refusal(s, SEED_SHAPE, H200) for s in specs)
    a100 = DEVICES["a100"]
    on_a100 = {s.name for s, _ in models_at(specs, (4096, 4096, 4096), a100, ceilings_for(a100))}
    assert {"cuda/v10_register_prefetch", "cuda/tc1_mma_sync_bf16", "peers/cublas_bf16"} <= on_a100
    assert not {n for n in on_a100 if n.split("/")[1][:3] in ("tc2", "tc3", "tc4", "tc5", "tc6", "tc8", "tc9")}
    assert not {n for n in on_a100 if n.startswith("gluon/") or "fp8" in n}
    assert "sm_90a (Hopper) only" in refusal(get_kernel("cuda/tc4_persistent_bf16"), (4096,) * 3, a100)
    assert "no fp8 arithmetic" in refusal(get_kernel("cuda/tc4_persistent_fp8"), (4096,) * 3, a100)
    out = _roofline("--gpu", "a100", "--shape", "4096", "--kernels", "cuda/tc4_persistent_bf16,cuda/tc1_mma_sync_bf16")
    assert "cuda/tc1_mma_sync_bf16 GFLOP: 137.4" in out and "cuda/tc4_persistent_bf16 GFLOP" not in out
    assert ("not modeled at 4096x4096x4096: cuda/tc4_persistent_bf16 uses wgmma, TMA and setmaxnreg, which exist on "
            "sm_90a (Hopper) only") in out


def test_h200_ridges_and_compute_roofs():
    assert H200.ridge("fp32") == pytest.approx(66.9e12 / 4.8e12)
    assert H200.ridge("bf16") == pytest.approx(989.4e12 / 4.8e12)
    roofs = ceilings_for(H200)
    assert roofs.compute_tflops("fp32") == pytest.approx(66.9, abs=0.05)  # 132 SMs · 256 · 1980 MHz
    assert roofs.compute_tflops("bf16", 1830) == pytest.approx(989.4, abs=0.1)  # where the datasheet quotes it
    peer = model(get_kernel("peers/cublas_fp32"), Problem(4096, 4096, 4096), H200)
    assert peer.bound == "compute" and peer.seed_predicted_tflops == 66.9


def test_tensor_core_roofs_are_per_precision():
    assert H200.attainable_tflops(1e6, "fp32") == 66.9
    assert H200.attainable_tflops(1e6, "bf16") == 989.4
    # the seeds' cuBLAS line: 4096^3 in 0.8 ms is beyond any FP32 peak listed
    seed_cublas = Problem(4096, 4096, 4096).flops() / 0.8e-3 / 1e12
    assert seed_cublas > max(d.peak_tflops("fp32") for d in DEVICES.values())


def test_device_lookup_by_driver_name():
    assert device_spec("NVIDIA H200").key == "h200"
    assert device_spec("NVIDIA H100 80GB HBM3").key == "h100"
    assert device_spec("a100").key == "a100"
    with pytest.raises(GemmlabError, match="no roofline data"):
        device_spec("Radeon")


@pytest.mark.parametrize("name,key", [("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100"),
                                      ("NVIDIA A100-SXM4-40GB", "a100"), ("NVIDIA A100-PCIE-40GB", "a100"),
                                      ("h100", "h100"), ("NVIDIA H100 SXM", "h100"), ("nvidia h200", "h200")])
def test_the_boards_whose_figures_the_table_holds_are_found(name, key):
    """The names the driver reports for the H200, the H100 SXM (HBM3) and the 40 GB A100s (SXM4 and PCIe: 1,555 GB/s,
    19.5 TFLOPS FP32, 108 SMs), the keys, and a device's own name (a ceilings file's)."""
    assert device_spec(name).key == key


@pytest.mark.parametrize("name,kin", [("NVIDIA H100 PCIe", "H100 SXM"), ("NVIDIA H100 NVL", "H100 SXM"),
                                      ("NVIDIA H200 NVL", "H200"), ("NVIDIA A100-SXM4-80GB", "A100"),
                                      ("NVIDIA A100 80GB PCIe", "A100")])
def test_another_board_of_a_known_chip_is_not_given_its_figures(name, kin):
    """An H100 PCIe has 114 SMs and 2,000 GB/s, an A100 80GB about 2,000 GB/s: matched by the chip's name they got the
    H100 SXM's 132 SMs, 3,350 GB/s and 66.9 TFLOPS, or the 40 GB A100's 1,555 GB/s. They have no roofline data here,
    as any unknown GPU, and the refusal says which board's figures they are not."""
    with pytest.raises(GemmlabError, match=rf"no roofline data for GPU '{name}' \(not the NVIDIA {kin}"):
        device_spec(name)


def test_a_problem_past_the_devices_memory_is_refused_at_once():
    """1,000,000³ FP32 is 12 TB of operands: refused in closed form, before any tile is walked (it once walked
    until the machine ran out of memory)."""
    from gemmlab.errors import SizeLimitError

    with pytest.raises(SizeLimitError, match=r"1000000x1000000x1000000 fp32: A, B and C take 11,175\.9 GiB; "
                                             r"NVIDIA H200 holds 141 GiB"):
        model(get_kernel("cuda/v1_naive"), Problem(10**6, 10**6, 10**6), H200)
    # one that fits the A100's 40 GiB is modeled; the same problem is refused once it does not fit
    assert model(get_kernel("cuda/v1_naive"), Problem(4096, 4096, 4096), DEVICES["a100"]).flops == 2 * 4096**3
    with pytest.raises(SizeLimitError, match="A100"):
        model(get_kernel("cuda/v1_naive"), Problem(110000, 110000, 8), DEVICES["a100"])
    with pytest.raises(SizeLimitError, match="output tiles"):  # on the H200 it fits, and its walk is too long
        model(get_kernel("cuda/v1_naive"), Problem(110000, 110000, 8), H200)


def test_a_walk_past_the_models_bound_is_refused_not_walked(monkeypatch):
    """The L2 model walks tiles one by one; a walk longer than MAX_WALK_TILES names the kernel and the bound."""
    from gemmlab.analysis import hierarchy
    from gemmlab.errors import SizeLimitError

    def no_walk(*args, **kwargs):
        raise AssertionError("walked the tiles of a refused problem")

    monkeypatch.setattr(hierarchy, "dram_reads", no_walk)
    with pytest.raises(SizeLimitError, match=r"cuda/v1_naive at 100000x100000x8: 9,765,625 output tiles; the L2 "
                                             r"model walks at most 1,048,576"):
        model(get_kernel("cuda/v1_naive"), Problem(100000, 100000, 8), H200)


def test_a_library_missing_here_is_no_refusal_of_the_device(monkeypatch):
    """Without Triton on this machine the Gluon levels cannot compile here, but they run on the H200 the roofline
    models: they keep their rows there, and a GPU without wgmma still refuses them."""
    from gemmlab.kernels.gluon.launch import kernel as gluon

    monkeypatch.setattr(gluon, "installed_triton", lambda: None)
    spec = get_kernel("gluon/tc4_persistent_bf16")
    assert "not installed" in spec.is_valid(Problem(4096, 4096, 4096, "bf16"))
    assert refusal(spec, (4096, 4096, 4096), H200) is None
    assert [s.name for s, _ in models_at([spec], (4096, 4096, 4096), H200, ceilings_for(H200))] == [spec.name]
    assert "sm_90a (Hopper) only" in refusal(spec, (4096, 4096, 4096), DEVICES["a100"])


def _board(name, sms, cc, clock, memory_gbs):
    from gemmlab.device import GPUInfo

    return GPUInfo(name, sms, cc, 72 * 2**20, 101376, clock, 24 * 2**30, "13.0", "13.0", memory_gbs=memory_gbs)


def test_a_board_without_a_datasheet_entry_gets_its_roofs_from_its_driver():
    """An RTX 4090 (128 SMs of 128 FP32 lanes at 2,520 MHz: the datasheet's 82.6 TFLOPS) is modeled on its own SMs,
    clock, L2 and memory, with no tensor-core roof; an H100 PCIe (another board of the H100's chip) on its own 114
    SMs and bandwidth with GH100's per-SM tensor rates; an A100 80GB on 64 lanes an SM; a known board keeps its
    datasheet entry."""
    from gemmlab.analysis.roofline import driver_spec, gpu_spec

    rtx = gpu_spec(_board("NVIDIA GeForce RTX 4090", 128, (8, 9), 2520.0, 1008.1))
    assert rtx.key == "driver" and rtx.name == "NVIDIA GeForce RTX 4090" and rtx.cc == (8, 9)
    assert rtx.tflops == {"fp32": pytest.approx(82.58, rel=1e-3)} and rtx.dram_gbs == 1008.1
    assert rtx.sm_count == 128 and rtx.l2_bytes == 72 * 2**20 and rtx.memory_bytes == 24 * 2**30
    assert "no tensor-core roof" in rtx.note
    assert refusal(get_kernel("cuda/tc4_persistent_bf16"), (4096, 4096, 4096), rtx) == \
        "NVIDIA GeForce RTX 4090: no bf16 roof here (its tensor cores' rate is not known for this board)"
    assert refusal(get_kernel("cuda/v2_smem"), (4096, 4096, 4096), rtx) is None
    pcie = gpu_spec(_board("NVIDIA H100 PCIe", 114, (9, 0), 1755.0, 2039.0))
    assert pcie.key == "driver" and pcie.flop_per_clk_of == DEVICES["h100"].flop_per_clk_of
    assert pcie.tflops["bf16"] == pytest.approx(114 * 4096 * 1755e6 / 1e12)
    a100 = driver_spec(_board("NVIDIA A100-SXM4-80GB", 108, (8, 0), 1410.0, 2039.0))
    assert a100.flop_per_clk_of == DEVICES["a100"].flop_per_clk_of and a100.tflops["fp32"] == pytest.approx(19.49,
                                                                                                            rel=1e-3)
    assert gpu_spec(_board("NVIDIA H200", 132, (9, 0), 1980.0, 4800.0)) is DEVICES["h200"]
    h20 = gpu_spec(_board("NVIDIA H20", 78, (9, 0), 1980.0, 4022.0))  # GH100 with its tensor cores' rate cut
    assert list(h20.tflops) == ["fp32"] and "no tensor-core roof" in h20.note
    with pytest.raises(GemmlabError, match="no roofline data for GPU 'Board X'.*memory clock"):
        driver_spec(_board("Board X", 10, (8, 6), 1500.0, 0.0))


def test_a_board_models_only_the_kernels_whose_units_it_has_roofs_for():
    """On a board with no tensor-core roof a BF16 kernel's record holds no model and no share of a peak, but its
    time and rate; an FP32 kernel's is modeled on the board's own roofs."""
    from gemmlab.analysis.roofline import gpu_spec
    from gemmlab.harness.bench_records import fill_timing, new_record
    from gemmlab.harness.timing import Timing

    rtx = gpu_spec(_board("NVIDIA GeForce RTX 4090", 128, (8, 9), 2520.0, 1008.1))
    problem = Problem(1024, 1024, 1024, "bf16")
    bf16 = get_kernel("cuda/tc4_persistent_bf16")
    rec = new_record(bf16, problem, rtx, None, sm_count=128)
    assert rec.model == {}
    fill_timing(rec, Timing([0.01, 0.011, 0.012], "cold", {"median_mhz": 2400.0}), problem, rtx, None, bf16)
    assert rec.median_ms == 0.011 and rec.tflops == pytest.approx(problem.flops() / 0.011e-3 / 1e12)
    assert rec.pct_peak is None and rec.bw_util_model is None and rec.bw_util_compulsory > 0
    fp32, problem = get_kernel("cuda/v2_smem"), Problem(1024, 1024, 1024)
    rec = new_record(fp32, problem, rtx, None, sm_count=128)
    fill_timing(rec, Timing([1.0], "cold", {"median_mhz": 2520.0}), problem, rtx, None, fp32)
    assert rec.model["predicted_ms"] > 0 and rec.pct_peak == pytest.approx(100 * rec.tflops / rtx.tflops["fp32"])
