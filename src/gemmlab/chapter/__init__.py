"""gemmlab chapter: the seed chapter end to end, each claim of the two seed texts beside gemmlab's measurement.

``run`` measures what the claims need: on a GPU, V1 and V2 (CUDA C and numba), V1's variants (threadIdx.x along M,
the 16×16 block), V2's 16×16 tile and cuBLAS (FP32 and TF32) at 1024³ and the seed shape, V1, V2 and cuBLAS at
4096³ (the first seed's table), the DRAM copy bandwidth, and V0 and the host BLAS at 512³ and 1024³ (V0's triple
loop would take minutes at the seed shape; the claims about it are judged at 1024³, where the second seed speaks of
it). Without a GPU it does what a CPU can: V0 and the BLAS timed,
the CUDA C kernels compiled, the numba kernels on the CUDA simulator, the model; it says first what it could not
measure. ``claims_table`` judges every claim (claims.CLAIMS) on the run's facts; the result is one JSON.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gemmlab.chapter.claim import BLAS, CUBLAS_TF32, NOT_MEASURED, NV1, NV2, SEED_TITLES, V0, V1, V2
from gemmlab.chapter.claims import CLAIMS
from gemmlab.chapter.facts import S512, S1024, SHAPES, Facts, committed_ceilings, committed_profiles, label
from gemmlab.chapter.text import NO_GPU

GPU_KERNELS = ",".join([V1, NV1, V2, NV2, CUBLAS_TF32])
VARIANTS = (("cuda/v1_naive", {"ROWS_ON_X": 1}), ("cuda/v1_naive", {"BX": 16, "BY": 16}),
            ("numba/v1_naive", {"BX": 16, "BY": 16}), ("cuda/v2_smem", {"TILE": 16}))
CPU_KERNELS = ",".join([V0, BLAS])


@dataclass
class ChapterOptions:
    cpu_shapes: tuple = (S512, S1024)  # V0's two sizes; claims about the CPU are judged at the last
    # (shapes, kernels, variants): the GPU runs. Everything at 1024³ (the second seed) and the seed shape; at 4096³
    # (the first seed's table) V1, V2 and cuBLAS, which its claims name
    gpu_runs: tuple = ((SHAPES[:2], GPU_KERNELS, VARIANTS), (SHAPES[2:], ",".join([V1, V2, CUBLAS_TF32]), ()))
    repeat: int = 20  # timed GPU launches per kernel (at least 5, within max_seconds)
    max_seconds: float = 0.5
    seed: int = 2026
    sim_shapes: tuple | None = None  # the numba kernels' simulator shapes without a GPU (None: bench's)
    extra: dict = field(default_factory=dict)


def _timing(gpu: bool, opts: ChapterOptions):
    from gemmlab.harness.timing import TimingOptions

    if gpu:
        return TimingOptions(repeat=opts.repeat, min_repeat=5, max_seconds=opts.max_seconds)
    return TimingOptions(repeat=3, min_repeat=1, max_seconds=0.1)


def run(opts: ChapterOptions | None = None, listener=None) -> dict:
    """Measure what the claims need, then judge them: the chapter JSON (``claims``, ``records``, ``not_measured``)."""
    from gemmlab import device
    from gemmlab.harness import bench

    opts = opts or ChapterOptions()
    info, why = device.probe()
    gpu = info is not None
    cpu = bench.run_bench(bench.BenchOptions(shapes=list(opts.cpu_shapes), kernels=CPU_KERNELS, seed=opts.seed,
                                             timing=_timing(False, opts), ceilings=False, pause_s=0.0),
                         listener)
    # the roofs: this run's DRAM copy bandwidth over the committed measurement of the others (the whole of
    # measure_ceilings, every probe, is gemmlab roofline --measure's job, not the chapter's)
    copy = None
    if gpu:
        from gemmlab.harness.roof_probes import copy_bandwidth

        if listener:
            listener.step("measuring the DRAM copy bandwidth (1 GiB)", 0, 0)
        copy = copy_bandwidth()
    runs = []
    for shapes, names, variants in opts.gpu_runs:
        gpu_opts = bench.BenchOptions(shapes=list(shapes), kernels=names, variants=variants, seed=opts.seed,
                                      timing=_timing(gpu, opts), pause_s=0.1, ceilings=False)
        if opts.sim_shapes:
            gpu_opts.sim_shapes = tuple(opts.sim_shapes)
        runs.append(bench.run_bench(gpu_opts, listener))
    env = runs[0]["env"]
    if copy:
        env["ceilings"] = {**copy, "copy_bw_gbs": copy["dram_gbs"]}
    results = {"kind": "chapter", "env": env, "notes": cpu["notes"] + [n for r in runs for n in r["notes"]],
               "records": cpu["records"] + [rec for r in runs for rec in r["records"]],
               "noise": [x for r in runs for x in r.get("noise", [])],
               "not_measured": None if gpu else not_measured(why, opts),
               "shapes": {"cpu": [label(s) for s in opts.cpu_shapes], "gpu": [label(s) for s in SHAPES]}}
    facts = facts_of(results, opts)
    _remodel(results["records"], facts)
    results["ceilings_source"] = facts.ceilings_source
    results["claims"] = claims_table(facts)
    return results


def _remodel(records: list[dict], facts: Facts) -> None:
    """The GPU records' models under the roofs the claims use (the report draws them)."""
    from gemmlab.analysis.remodel import remodel_record
    from gemmlab.errors import GemmlabError

    roofs = facts.roofs()
    for rec in records:
        if rec.get("model") and rec.get("backend") not in ("cpu", "peer"):
            try:
                rec["model"] = remodel_record(rec, roofs)
            except GemmlabError:  # a kernel this checkout does not register keeps the model its run wrote
                pass


def not_measured(why: str, opts: ChapterOptions) -> dict:
    what = (f"V1 and V2 in CUDA C and numba, V1 with threadIdx.x along M and with 16×16 blocks, V2 with 16×16 tiles, "
            f"and cuBLAS FP32 and TF32, at {', '.join(label(s) for s in SHAPES)}")
    what_zh = (f"CUDA C 与 numba 的 V1、V2，threadIdx.x 映射到 M 的 V1、16×16 block 的 V1、16×16 tile 的 V2，"
               f"以及 cuBLAS FP32 与 TF32，形状为 {', '.join(label(s) for s in SHAPES)}")
    return {"en": NO_GPU["en"].format(why=why, what=what), "zh": NO_GPU["zh"].format(why=why, what=what_zh)}


def facts_of(results: dict, opts: ChapterOptions | None = None) -> Facts:
    gpu = results.get("not_measured") is None
    measured = (results.get("env") or {}).get("ceilings") or {}
    ceilings, source = committed_ceilings()
    if measured.get("copy_bw_gbs"):  # this run's copy bandwidth over the committed one
        ceilings = {**ceilings, "dram_gbs": measured["copy_bw_gbs"]}
        source = f"{source}; DRAM: this run's copy" if source else "this run's copy bandwidth"
    profiles, prof_source = committed_profiles()
    cpu_shape = tuple(int(x) for x in results["shapes"]["cpu"][-1].split("x"))
    return Facts(results["records"], gpu, ceilings, source, profiles, prof_source, cpu_shape)


def claims_table(facts: Facts) -> list[dict]:
    rows = []
    for c in CLAIMS:
        row = c.judge(facts)
        rows.append({"id": c.id, "seed": c.seed, "seed_title": SEED_TITLES[c.seed], "section": c.section,
                     "quote": c.quote, "claim": {"en": c.claim[0], "zh": c.claim[1]},
                     "seed_figure": {"en": c.seed_figure[0], "zh": c.seed_figure[1]},
                     "measured": {"en": row.measured[0], "zh": row.measured[1]}, "verdict": row.verdict,
                     "only_as": {"en": row.only_as[0], "zh": row.only_as[1]},
                     "reason": {"en": row.reason[0], "zh": row.reason[1]}, "command": row.command,
                     "source": row.source, "needs_gpu": c.needs_gpu, "values": row.values})
    return rows


def counts(claims: list[dict]) -> dict:
    out: dict = {}
    for c in claims:
        out[c["verdict"]] = out.get(c["verdict"], 0) + 1
    return out


__all__ = ["ChapterOptions", "run", "claims_table", "facts_of", "counts", "NOT_MEASURED"]
