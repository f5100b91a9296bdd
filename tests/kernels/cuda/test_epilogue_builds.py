"""The fused epilogue's builds without a GPU: every kernel that fuses one compiles for sm_90a with each of its
switches (activation, bias or matrix addend in FP32 or the output's type, alpha/beta) without spills and with
about the registers of its plain build, the tensor-core levels still on HGMMA; the EPI=1 parameter structs the host
lays out are the compiler's; and the plans write alpha, beta and the addend's strides where the kernel reads them
(swapped for tc9's transposed store)."""
from __future__ import annotations

import ctypes

import pytest
import sass
from test_plans import _flat_offsets, compiled_layout

from gemmlab import driver
from gemmlab.epilogue import Epilogue
from gemmlab.kernels.cuda.launch.kernel import EPI_ARGS
from gemmlab.kernels.cuda.tc.model import plan as tc_plan
from gemmlab.kernels.registry import get_kernel, list_kernels

BIAS_GELU = Epilogue("gelu", addend="bias")
MATRIX_SILU = Epilogue("silu", 2.0, 0.5, "matrix")
SCALED_GELU_TANH = Epilogue("gelu_tanh", alpha=3.0)
BIAS_RELU = Epilogue("relu", addend="bias")
BIAS = Epilogue(addend="bias")  # no activation: tc4's held boxes take it under the next tile's k-tiles
ALL = (BIAS_GELU, MATRIX_SILU, SCALED_GELU_TANH, BIAS_RELU)

# (kernel, epilogues, the addend's dtype): every switch on the levels auto runs most, two on the others; tc4 in its
# registered and its narrow tile (the TMA store's boxes, 256 and 192 columns), tc4 BF16 and FP8 through the held
# boxes of 16-bit C (EPI_DEFER: a bias applied as each is stored under a later k-tile; an activation's build, and tc8's
# with any epilogue, hold none), tc6 through the stream-K fixup, tc9 through the transposed store, tc10 TF32 after its
# split-K reduction
CASES = [("cuda/tc4_persistent_bf16", ALL + (BIAS,), "bfloat16"),
         ("cuda/tc4_persistent_bf16", ALL + (BIAS,), "float32"),
         ("cuda/tc2_wgmma_tma_bf16", (BIAS_GELU, MATRIX_SILU), "bfloat16"),
         ("cuda/tc3_warp_specialized_tf32", (BIAS_GELU, SCALED_GELU_TANH), "float32"),
         ("cuda/tc4_persistent_tf32", (MATRIX_SILU, BIAS_RELU), "float32"),
         ("cuda/tc6_stream_k_bf16", (BIAS_GELU, MATRIX_SILU), "bfloat16"),
         ("cuda/tc8_block_scaled_fp8", (BIAS_GELU, SCALED_GELU_TANH), "bfloat16"),
         ("cuda/tc4_persistent_fp8", (SCALED_GELU_TANH, BIAS_GELU, MATRIX_SILU, BIAS), "bfloat16"),
         ("cuda/tc8_cluster_fp8_block", (BIAS, BIAS_GELU), "bfloat16"),
         ("cuda/tc9_narrow_swap_bf16", (BIAS_GELU, MATRIX_SILU), "bfloat16"),
         ("cuda/tc10_split_k_tf32", (BIAS_GELU, MATRIX_SILU), "float32"),
         ("cuda/v10_register_prefetch", ALL, "float32"), ("cuda/v8_cp_async", (BIAS_GELU,), "float32"),
         ("cuda/v11_split_k", (BIAS_GELU, MATRIX_SILU), "float32"),  # after its split-K reduction
         ("cuda/gemv1_warp_dot_bf16", ALL, "bfloat16"), ("cuda/gemv1_warp_dot_fp32", (MATRIX_SILU,), "float32"),
         ("cuda/gemv2_mma_swap_bf16", ALL, "bfloat16"), ("cuda/gemv2_mma_swap_fp8", (BIAS_GELU,), "bfloat16"),
         ("cuda/gemv2_mma_swap_fp16", (BIAS_GELU, MATRIX_SILU), "float16"),
         ("cuda/gemv1_warp_dot_fp16", (MATRIX_SILU,), "float16"),
         ("cuda/gemv2_mma_swap_fp8_block", (BIAS_GELU, MATRIX_SILU), "bfloat16")]


def _case(name, cfg, epi, dtype):
    return pytest.param(name, cfg, epi, dtype, id=f"{name}-{cfg.params.get('BN', '')}-{epi.describe()}-{dtype}")


BUILDS = [_case(name, cfg, epi, dtype) for name, epis, dtype in CASES
          for cfg in get_kernel(name).configurations()[:2 if name == "cuda/tc4_persistent_bf16" else 1]
          for epi in epis]
# tc10's 128x256 tile (two m64n256 warpgroups, 128 accumulators a thread), which the H100's measured table runs: its
# epilogue after the split-K reduction, beside the most live registers of any tc10 build
BUILDS += [_case(name, cfg, epi, dtype) for name in ("cuda/tc10_split_k_bf16", "cuda/tc10_split_k_fp8")
           for cfg in [next(c for c in get_kernel(name).configurations() if c.params["BN"] == 256)]
           for epi in (BIAS_GELU, MATRIX_SILU) for dtype in ("bfloat16", "float32")]


def _wgmma(spec) -> bool:
    return spec.name.split("/")[1].startswith("tc")


@pytest.mark.parametrize("name,cfg,epi,dtype", BUILDS)
def test_each_switch_compiles_without_spills_near_the_plain_registers(name, cfg, epi, dtype, tmp_path):
    plain = cfg.compile("sm_90a")
    fused = cfg.with_epilogue(epi, dtype).compile("sm_90a")
    assert fused.cubin != plain.cubin  # the epilogue is in the binary
    report = fused.report
    assert report.spills == 0 and report.stack_bytes == 0, report
    assert report.registers <= plain.report.registers + 8, (report.registers, plain.report.registers)
    if _wgmma(cfg) and sass.AVAILABLE:  # FP8 on QGMMA
        assert ("QGMMA" if cfg.prec.scaled else "HGMMA") in sass.sass(fused.cubin, tmp_path)


@pytest.mark.skipif(not sass.AVAILABLE, reason="needs cuobjdump and nvdisasm")
@pytest.mark.parametrize("name", ["cuda/tc4_persistent_bf16", "cuda/tc6_stream_k_bf16", "cuda/tc10_split_k_bf16"])
def test_the_staged_pass_loads_a_threads_rows_together(name, tmp_path):
    """The epilogue's pass over a staged box of BF16 C (epi_box: from the warpgroup's meeting to the fence before
    the TMA store) is straight-line code over a thread's 16 rows, whose loads run ahead of the first store, so the
    rows' activations overlap: no loop (a loop at computed addresses kept each row's load behind the last row's
    store, one row's latency at a time)."""
    cfg = get_kernel(name).configurations()[0]
    listing = sass.sass(cfg.with_epilogue(BIAS_GELU, "bfloat16").compile("sm_90a").cubin, tmp_path)
    passes, run = [], None
    for ins in sass.instructions(listing):
        if ins.op.startswith("BAR.SYNC"):
            run = []
        elif ins.op.startswith("FENCE.VIEW.ASYNC") and run is not None:
            passes.append(run)
            run = None
        elif run is not None:
            run.append(ins)
    passes = [p for p in passes if any(i.op.startswith("MUFU.EX2") for i in p)]  # gelu's exponential: the pass
    assert passes
    for p in passes:
        ops = [i.op.split(".")[0] for i in p]
        assert ops.count("LDS") == 16 and ops.count("STS") == 16 and not sass.loops(p)
        assert ops[:ops.index("STS")].count("LDS") >= 8


def test_the_defines_switch_only_with_an_epilogue():
    spec = get_kernel("cuda/tc4_persistent_bf16")
    assert spec.with_epilogue(Epilogue()) is spec and spec.with_epilogue(None) is spec
    assert spec.defines() == spec.with_epilogue(Epilogue()).defines()
    fused = spec.with_epilogue(Epilogue("silu", 0.5, 2.0, "matrix"), "bfloat16").defines()
    assert {k: fused[k] for k in ("EPI", "EPI_ACT", "EPI_ADDEND", "EPI_D")} == {"EPI": 1, "EPI_ACT": 4,
                                                                               "EPI_ADDEND": 2, "EPI_D": 1}
    assert "EPI_D" not in spec.with_epilogue(BIAS_GELU, "float32").defines()
    assert not any(k.startswith("EPI_") and k not in ("EPI_TMA", "EPI_BOXES", "EPI_DEFER", "EPI_LEND")
                   for k in spec.defines())


@pytest.mark.parametrize("struct,cname", [(tc_plan.TC_ARGS_EPI, "TcArgs"), (tc_plan.FP8_ARGS_EPI, "Fp8Args"),
                                          (EPI_ARGS, "EpiArgs")])
def test_epi_structs_match_the_compiled_ones(tmp_path, struct, cname):
    """EPI=1's TcArgs (ending with EpiArgs), Fp8Args on it, and EpiArgs itself: the host's offsets are g++'s."""
    want = _flat_offsets(struct)
    assert compiled_layout(tmp_path, struct, cname, lambda f: _path(struct, f), ["-DEPI=1"]) == \
        (want, struct.layout()[1])


def _path(struct, field):
    """The C++ member path of a host field name: EpiArgs' fields sit in TcArgs' member ``epi``."""
    names = {"D": "D", "d_rs": "rs", "d_cs": "cs", "alpha": "alpha", "beta": "beta"}
    if struct is EPI_ARGS:
        return names[field]
    return f"epi.{names[field]}" if field in names else field


def test_bind_epilogue_writes_alpha_beta_and_strides_swapped_for_a_transposed_store():
    from gemmlab.kernels.cuda.launch.kernel import bind_epilogue

    p = driver.Params((("args", tc_plan.TC_ARGS_EPI),))
    bind_epilogue(p, Epilogue("relu", 2.0, -0.5, "matrix"), (7, 1))
    assert (p.alpha, p.beta, p.d_rs, p.d_cs) == (2.0, -0.5, 7, 1)
    bind_epilogue(p, BIAS_GELU, (0, 3), transposed=True)  # tc9: the bias follows the kernel's rows
    assert (p.alpha, p.beta, p.d_rs, p.d_cs) == (1.0, 1.0, 3, 0)
    p.D = 0xABCDEF00
    assert ctypes.c_uint64.from_address(p.array[0] + tc_plan.TC_ARGS_EPI.layout()[0]["epi"]).value == 0xABCDEF00


def test_every_registered_kernel_says_whether_it_fuses():
    fusing = {s.name for s in list_kernels("cuda/*") if not s.epilogue_refusal(BIAS_GELU)}
    assert {"cuda/tc2_wgmma_tma_bf16", "cuda/tc4_persistent_bf16", "cuda/tc6_stream_k_bf16",
            "cuda/tc8_block_scaled_fp8", "cuda/tc9_narrow_swap_fp8", "cuda/v9_autotuned",
            "cuda/gemv1_warp_dot_fp8_block"} <= fusing
    assert not fusing & {"cuda/tc1_mma_sync_bf16", "cuda/tc5_swap_ab_tf32", "cuda/tc6_stream_k_tf32",
                         "cuda/tc7_3xtf32", "cuda/v2_smem"}


def test_every_source_of_a_fusing_kernel_is_compiled_with_an_epilogue_above():
    """A kernel that says it fuses while its source ignores the EPI switches returns the plain product: the test above
    catches that (the fused cubin differs from the plain one) for each source it compiles, so every source of a
    registered fusing kernel must be among them (tc6 TF32, on tc5_swap_ab.cu's store, once said it fused and did
    not)."""
    compiled = {get_kernel(name).source for name, _, _ in CASES}
    fusing = {s.source for s in list_kernels("cuda/*") if not s.epilogue_refusal(BIAS_GELU)}
    assert fusing <= compiled, fusing - compiled


def test_a_fused_bias_goes_to_producer_warps_only_where_the_build_has_them():
    """EPI_ASYNC (tc4_persistent.cu's producer warps 1 .. BM/64 applying the epilogue) is on for tc4 BF16's and FP16's
    fused bias or alpha and off wherever the source's #error or the producer's registers would refuse it: four
    consumer warpgroups (BM = 256), a producer of 24 registers, an activation, a matrix addend, FP8; a build with it
    off is the plain build's binary, EPI_GAP gone too."""
    bias = Epilogue(addend="bias")
    for name in ("cuda/tc4_persistent_bf16", "cuda/tc4_persistent_fp16"):
        spec = get_kernel(name)
        assert spec.with_epilogue(bias, "bfloat16").defines()["EPI_ASYNC"] == 1
        assert spec.with_epilogue(Epilogue(alpha=2.0)).defines()["EPI_ASYNC"] == 1
    tc4 = get_kernel("cuda/tc4_persistent_bf16")
    off = [tc4.with_params({"BM": 256, "BN": 128, "NARROW_BN": 0, "STAGES": 3, "PRODUCER_REGS": 40,
                            "CONSUMER_REGS": 104}),
           tc4.with_params({"PRODUCER_REGS": 24, "CONSUMER_REGS": 240})]
    off = [s.with_epilogue(bias, "bfloat16") for s in off] + [
        tc4.with_epilogue(BIAS_GELU, "bfloat16"), tc4.with_epilogue(Epilogue(alpha=2.0, beta=0.5, addend="matrix"),
                                                                    "bfloat16"),
        get_kernel("cuda/tc4_persistent_fp8").with_epilogue(bias, "bfloat16")]
    for build in off:
        assert not {"EPI_ASYNC", "EPI_GAP"} & set(build.defines()), build.params
    assert off[0].compile("sm_90a").cubin  # four consumer warpgroups: the kernel's EPI_ASYNC #error not reached
    assert tc4.with_params({"EPI_ASYNC": 0}).defines() == tc4.defines()
    assert tc4.with_params({"EPI_ASYNC": 0}).with_epilogue(bias, "bfloat16").defines()["EPI_DEFER"] == 3
