"""What a claim of the seed texts is, and what judging it gives: the verdicts, the kernels the claims name, a Row.

A claim's ``judge`` reads the run's facts (facts.Facts) and returns a Row: what gemmlab measured or computed, the
command behind it, a verdict and the reason, in English and in Chinese with the same numbers (each number is
formatted once and placed in both texts). Where a judgment needs a GPU measurement that the run has not got, the row
says "not measured" and what it would take. A judge declares the claim it judges with ``@judges(id)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from gemmlab.chapter.facts import S4096, Facts, label
from gemmlab.problem import SEED_SHAPE, Problem

FIRST = "000"  # CUDA算子优化(4)：矩阵乘法
SECOND = "002"  # 4、矩阵乘法基础
SEED_TITLES = {FIRST: "CUDA算子优化(4)：矩阵乘法", SECOND: "4、矩阵乘法基础：CPU矩阵乘法实现、GPU朴素矩阵乘法、性能瓶颈分析"}

HOLDS, FAILS, ONLY_AS, NOT_MEASURED = "holds", "does not hold", "holds only as", "not measured"

V1, NV1, V2, NV2 = "cuda/v1_naive", "numba/v1_naive", "cuda/v2_smem", "numba/v2_smem"
V0, BLAS = "cpu/v0_naive", "cpu/blas"
CUBLAS, CUBLAS_TF32 = "peers/cublas_fp32", "peers/cublas_tf32"
V1_ROWS = "cuda/v1_naive[ROWS_ON_X=1]"  # threadIdx.x along M: the uncoalesced V1 of the second seed
V1_16 = "cuda/v1_naive[BX=16,BY=16]"  # the 16×16 block
NV1_16 = "numba/v1_naive[BX=16,BY=16]"
V2_16 = "cuda/v2_smem[TILE=16]"
SEED = SEED_SHAPE


def fmt(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def bench_cmd(kernel: str, shape) -> str:
    """The gemmlab command that measures ``kernel`` at ``shape`` alone, as the chapter run does."""
    name, _, changes = kernel.partition("[")
    if changes:
        return f"gemmlab bench --variant {name}:{changes[:-1]} --shape {label(shape)}"
    return f"gemmlab bench --kernels {name} --shape {label(shape)}"


@dataclass
class Row:
    measured: tuple[str, str]  # (en, zh): gemmlab's figure, or "not measured" and why
    verdict: str
    reason: tuple[str, str]
    command: str  # what produced the figure
    source: str  # "this run", a committed file, "model" (gemmlab's functions) or "the seed's figures"
    only_as: tuple[str, str] = ("", "")  # with ONLY_AS: as what it holds
    values: dict = field(default_factory=dict)  # the numbers, for the JSON


@dataclass(frozen=True)
class Claim:
    id: str
    seed: str
    section: str  # the seed's section heading, as the seed writes it
    quote: str  # the seed's words
    claim: tuple[str, str]  # (en, zh): what it says, in a line
    seed_figure: tuple[str, str]  # (en, zh): the seed's number or formula; the Chinese one as the seed writes it
    judge: Callable[[Facts], Row]
    needs_gpu: bool = False  # its measurement is a GPU run's


def missing(what: tuple[str, str], command: str, model: tuple[str, str] | None = None) -> Row:
    """A row whose measurement (``what``, in English and Chinese) needs a GPU this run does not have; ``model`` says
    what gemmlab predicts meanwhile."""
    en = f"not measured in this run: {what[0]}"
    zh = f"本次运行未测量：{what[1]}"
    if model:
        en, zh = f"{en}; {model[0]}", f"{zh}；{model[1]}"
    return Row((en, zh), NOT_MEASURED, ("needs the H200 run", "需要在 H200 上运行"), command, "none")


# the chapter's "holds only as" for every claim that counts the loads a thread issues as if each reached DRAM
PER_LOAD = ("per load issued", "发出的加载")
# ... and for the claims that V1 waits on memory: it does, on the latency of loads that hit L1, not on DRAM
LATENCY = ("latency-bound on L1 hits, not DRAM bandwidth", "L1 命中下的加载延迟（而非 DRAM 带宽）")
LEVEL_NAMES = {"dram": ("DRAM", "DRAM"), "l2": ("L2", "L2"), "l1": ("L1", "L1"), "smem": ("shared memory", "共享内存"),
               "compute": ("arithmetic", "算力")}


ROOF_SOURCES = {"measured": ("measured", "实测"), "datasheet": ("datasheet", "规格"), "assumed": ("assumed", "假定")}


def roof_source(word: str | None) -> tuple[str, str]:
    """Where a roof's figure comes from (Ceilings.source), in English and Chinese."""
    return ROOF_SOURCES.get(word or "", (str(word), str(word)))


def level_name(level: str) -> tuple[str, str]:
    """A level of gemmlab's model (its ``bound``), in English and Chinese."""
    return LEVEL_NAMES.get(level, (level, level))


def ridges(f: Facts) -> dict:
    """The H200's FP32 ridge (FLOP per DRAM byte) under each convention the chapter names: ``datasheet`` (the
    datasheet's FP32 peak over its DRAM bandwidth) and ``measured`` (the measured FP32 roof over the measured DRAM
    bandwidth: the roofs gemmlab uses; the seeds' single roof in gemmlab's model takes one of the two,
    roofline.seed_roof)."""
    from gemmlab.chapter.facts import H200

    roofs = f.roofs()
    fp32 = roofs.compute_tflops("fp32")
    return {"datasheet": H200.ridge("fp32"), "measured": fp32 * 1e12 / (roofs.dram_gbs * 1e9),
            "fp32_tflops": fp32, "dram_gbs": roofs.dram_gbs, "fp32_source": roofs.source.get("fp32"),
            "dram_source": roofs.source.get("dram")}


def with_more(text: tuple[str, str], more: tuple[str, str] | None) -> tuple[str, str]:
    """``text`` (English, Chinese), each with its part of ``more`` appended where there is more (None: none)."""
    return text if more is None else (text[0] + more[0], text[1] + more[1])


def beside_model(model: tuple[str, str], measured: tuple[str, str] | None, reason: tuple[str, str], command: str,
                 only_as: tuple[str, str], values: dict | None = None) -> Row:
    """A claim that holds only as ``only_as``: the model's figures, then what this run measured where it has them
    (``measured``, appended to each language's text; None without), so its source is this run or the model alone."""
    return Row(with_more(model, measured), ONLY_AS, reason, command, "this run" if measured else "model", only_as,
               values or {})


def ms_text(ms: float) -> str:
    return fmt(ms, 3) if ms < 10 else fmt(ms, 1) if ms < 1000 else fmt(ms, 0)


SQ = Problem(*S4096)  # the first seed's table's shape
JUDGES: dict[str, Callable[[Facts], Row]] = {}  # claim id -> its judge


def judges(claim_id: str):
    """Declares the decorated function the judge of claim ``claim_id``."""
    def register(judge):
        JUDGES[claim_id] = judge
        return judge
    return register


def block_16(f: Facts, shape=SEED) -> tuple:
    return f.ms(V1, shape), f.ms(V1_16, shape)


def dram_counters(f: Facts, kernel: str = V1) -> tuple | None:
    prof = f.profile(kernel)
    if not prof:
        return None
    return prof["dram_bytes"], prof["l2_bytes"], prof["l1_bytes"]


def dram_reads(f: Facts, kernel: str = V1) -> float | None:
    """The bytes ``kernel`` read from DRAM at 4096³ (Nsight Compute's read counter, without the writes of C), or None
    without them."""
    prof = f.profile(kernel)
    return prof.get("dram_read_bytes") if prof else None


def dram_intensity(f: Facts, kernel: str = V1) -> float | None:
    """FLOPs per DRAM byte of ``kernel`` at 4096³, from Nsight Compute's counters (None without them)."""
    got = dram_counters(f, kernel)
    return SQ.flops() / got[0] if got else None
