"""The words around the claims, in English and Chinese: headings, verdicts, the glossary of the seeds' terms and the
map from the seeds' names to gemmlab's. The claims' own text is in claims.py, both languages side by side."""
from __future__ import annotations

LANGS = ("en", "zh")

VERDICTS = {
    "holds": {"en": "holds", "zh": "成立"},
    "does not hold": {"en": "does not hold", "zh": "不成立"},
    "holds only as": {"en": "holds only as", "zh": "仅在更窄的意义上成立"},
    "not measured": {"en": "not measured", "zh": "未测量"},
}

HEAD = {
    "en": {"id": "claim", "seed": "seed §", "quote": "the seed's words", "figure": "seed's figure",
           "measured": "gemmlab measured", "verdict": "verdict", "reason": "why", "command": "command",
           "source": "source", "title": "The seed chapter, claim by claim"},
    "zh": {"id": "论断", "seed": "种子 §", "quote": "种子原文", "figure": "种子数值",
           "measured": "gemmlab 实测", "verdict": "结论", "reason": "原因", "command": "命令",
           "source": "来源", "title": "种子章节逐条核对"},
}

SEED_NAMES = {"000": {"en": "first seed (000)", "zh": "第一篇（000）"},
              "002": {"en": "second seed (002)", "zh": "第二篇（002）"}}

# the seeds' terms: (Chinese, English, what gemmlab calls or measures it)
GLOSSARY = [
    ("计算强度", "arithmetic intensity", "FLOPs per byte: `Problem.intensity` (best case), `modeled_intensity` (per load "
                                         "issued), FLOPs over `dram__bytes` (per DRAM byte)",
     "每字节浮点运算数：`Problem.intensity`（最佳情形）、`modeled_intensity`（按发出的加载）、FLOPs 除以 `dram__bytes`（按 DRAM 字节）"),
    ("合并访问", "coalesced access", "a warp's loads falling in few 32-byte sectors; `cuda/v1_naive[ROWS_ON_X=1]` is "
                                     "the uncoalesced V1",
     "一个 warp 的加载落在少数几个 32 字节扇区内；`cuda/v1_naive[ROWS_ON_X=1]` 是非合并的 V1"),
    ("重复读取", "re-reads", "loads issued past the compulsory bytes: `modeled_read_bytes` against "
                             "`compulsory_bytes`; the caches serve most of them",
     "超出必需字节的加载：`modeled_read_bytes` 对比 `compulsory_bytes`；大部分由缓存提供"),
    ("冗余比", "redundancy ratio", "loads issued over the least reads (8N³ / 8N² = N for V1); per DRAM byte far less: "
                                  "Nsight Compute's `dram__bytes` against `compulsory_bytes`",
     "发出的加载除以最少读取量（V1 为 8N³ / 8N² = N）；按 DRAM 字节计则小得多：Nsight Compute 的 `dram__bytes` "
     "对比 `compulsory_bytes`"),
    ("屋顶线模型", "roofline model", "`gemmlab roofline`: the seeds' single DRAM roof (`seed_predicted_tflops`) and a "
                                    "roof per memory level (`levels`, `bound`)",
     "`gemmlab roofline`：种子的单一 DRAM 屋顶（`seed_predicted_tflops`）与每级存储各自的屋顶（`levels`、`bound`）"),
    ("脊点", "ridge point", "peak FLOP/s over DRAM bytes/s: `DeviceSpec.ridge`, `seed_ridge`",
     "峰值 FLOP/s 除以 DRAM 字节/秒：`DeviceSpec.ridge`、`seed_ridge`"),
    ("共享内存分块", "shared-memory tiling", "V2: `cuda/v2_smem`, `numba/v2_smem`", "V2：`cuda/v2_smem`、`numba/v2_smem`"),
    ("带宽利用率", "bandwidth utilization", "`bw_util_model`: the seeds' bytes per second over the DRAM roof",
     "`bw_util_model`：按种子计数的字节/秒除以 DRAM 屋顶"),
]

# the seeds' names -> gemmlab's: ((the seed's name, gemmlab's) in English, the same in Chinese, the level)
NAMES = [
    (("multi_cpu (000)", "cpu/v0_naive"), ("multi_cpu（000）", "cpu/v0_naive"), "V0"),
    (("matmul_cpu (002)", "cpu/v0_naive"), ("matmul_cpu（002）", "cpu/v0_naive"), "V0"),
    (("sgemm_cpu (000, the reference)", "float64 reference (`harness/reference.py`); `cpu/blas` is the CPU peer"),
     ("sgemm_cpu（000，参考实现）", "float64 参考结果（`harness/reference.py`）；`cpu/blas` 为 CPU 对照"), "—"),
    (("sgemm_kernel1, matmul_v1_naive (000)", "cuda/v1_naive, numba/v1_naive"),
     ("sgemm_kernel1、matmul_v1_naive（000）", "cuda/v1_naive、numba/v1_naive"), "V1"),
    (("matmul_naive (002)", "cuda/v1_naive, numba/v1_naive"), ("matmul_naive（002）", "cuda/v1_naive、numba/v1_naive"),
     "V1"),
    (("sgemm_kernel2 (000)", "cuda/v2_smem, numba/v2_smem"), ("sgemm_kernel2（000）", "cuda/v2_smem、numba/v2_smem"),
     "V2"),
    (("cuBLAS (000)", "peers/cublas_fp32 (FP32), peers/cublas_tf32 (TF32)"),
     ("cuBLAS（000）", "peers/cublas_fp32（FP32）、peers/cublas_tf32（TF32）"), "—"),
]

INTRO = {
    "en": ("gemmlab implements the seeds' V0, V1 and V2 line for line and measures each claim of the two texts on the "
           "H200. A verdict is read off the measurement: *holds*, *does not hold*, or *holds only as* something "
           "narrower than the seed says. The seeds count every load as DRAM traffic; on the H200 L1 and L2 serve "
           "most of V1's loads, which is where most corrections come from."),
    "zh": ("gemmlab 逐行实现了种子中的 V0、V1、V2，并在 H200 上逐条测量两篇文本的论断。结论由测量给出："
           "*成立*、*不成立*，或*仅在比种子所说更窄的意义上成立*。种子把每次加载都算作 DRAM 流量；"
           "而在 H200 上 V1 的大部分加载由 L1 和 L2 提供，多数修正正源于此。"),
}

NO_GPU = {
    "en": "No CUDA GPU ({why}). Not measured here: {what}. Those claims say \"not measured\"; the formulas, the model, "
          "V0 and the numba kernels on the CUDA simulator are below.",
    "zh": "没有 CUDA GPU（{why}）。此处未测量：{what}。这些论断标为“未测量”；公式、模型、V0 以及 numba 核函数在 CUDA "
          "模拟器上的验证见下。",
}

# a row's source, in Chinese (a committed file's path stays as it is)
SOURCES_ZH = {"this run": "本次运行", "model": "模型", "the seed's figures": "种子数据", "none": "无",
              "datasheet": "规格", "committed results": "已提交的结果", "DRAM: this run's copy": "DRAM：本次运行的拷贝带宽",
              "this run's copy bandwidth": "本次运行的拷贝带宽"}


def source_text(source: str, lang: str) -> str:
    if lang == "en":
        return source
    return "；".join(SOURCES_ZH.get(part, part) for part in source.split("; "))
