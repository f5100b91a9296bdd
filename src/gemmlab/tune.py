"""Autotuning of the FP32 SGEMM families: a measured search over tile parameters per shape.

Two families are tunable: ``cuda/v9_autotuned`` (the v8 cp.async source) and ``cuda/v10_register_prefetch``.
For each shape every candidate configuration of the kernel source that passes its constraints is compiled
(configurations whose ptxas report shows spills are dropped before they run), verified once against a float64
reference on that shape and timed (median of ``repeats`` launches after ``warmup``). The fastest verified one is
written to a JSON cache keyed by GPU name and shape, one file per family (their parameters differ), which the
kernel reads when it builds for that GPU (the shape, else the nearest cached shape; see ``AutotunedKernel``).

Cache files: ``$GEMMLAB_CACHE/tune.json`` for v9 and ``$GEMMLAB_CACHE/tune-v10_register_prefetch.json`` for v10
(default ``$GEMMLAB_CACHE`` is ``~/.cache/gemmlab``)::

    {"NVIDIA H200": {"4096x4096x4096": {"params": {...}, "ms": 2.9, "tflops": 47.1, "candidates": 12}}}
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from gemmlab.errors import GemmlabError, InvalidConfigError, UnknownKernelError
from gemmlab.kernels import tuned
from gemmlab.problem import Problem

TUNABLE = ("cuda/v9_autotuned", "cuda/v10_register_prefetch")

_BASE = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "RM": 2, "RN": 2, "STAGES": 3, "GROUP_M": 1,
         "MIN_BLOCKS": 1}


def _cfg(**changes) -> dict:
    p = {**_BASE, **changes}
    p.setdefault("KUNROLL", p["BK"])
    return p


# 8×8 per lane with 256 threads (warp 64×32 or 32×64), 8×16 or 16×8 per lane (warp 64×64) with 128 or 256
# threads; 8 or 16 deep in K; 3 or 4 stages; plain or grouped block order; 1 to 4 blocks per SM.
SEARCH_SPACE: tuple[dict, ...] = (
    _cfg(),
    _cfg(BK=16),
    _cfg(WM=32, WN=64),
    _cfg(WM=32, WN=64, BK=16),
    _cfg(MIN_BLOCKS=2, KUNROLL=1),  # 8×8 lanes in 128 registers: two blocks per SM, k loop rolled
    _cfg(MIN_BLOCKS=2, KUNROLL=1, WM=32, WN=64),
    _cfg(MIN_BLOCKS=2, KUNROLL=1, STAGES=4),
    _cfg(WN=64, RN=4, MIN_BLOCKS=2),
    _cfg(WN=64, RN=4, MIN_BLOCKS=2, STAGES=4),
    _cfg(BN=256, WN=64, RN=4),
    _cfg(BN=256, WN=64, RN=4, BK=16),
    _cfg(BN=256, WN=64, RN=4, BK=16, STAGES=4),
    _cfg(BN=256, WN=64, RN=4, BK=16, GROUP_M=8),
    _cfg(BM=256, WN=64, RM=4, RN=2),
    _cfg(BM=256, WN=64, RM=4, RN=2, BK=16),
    _cfg(BM=64, WM=32, WN=64, RM=1, RN=4, MIN_BLOCKS=3),
    _cfg(BM=64, BN=64, WM=32, WN=32, RM=1, MIN_BLOCKS=4, STAGES=4),
)


# v10 (register prefetch, two shared stages): numba's tiling, V9's winning 16×8 tile at BK 16 and 8, its 8×16
# mirrors, 8×16 lanes in 128-thread blocks two per SM, and 8×8 lanes with 32×64 warps (BK 8 two blocks per SM,
# BK 16 one), the smaller tiles for shapes with few 256×128 tiles. Then the tiles sized for waves of 132 SMs at
# one block per SM: 192×128 (12×8 per lane: 2048×3072 is 11×24 = 264 tiles, two full waves) and 128×192 (8×12:
# 16×16 = 256 tiles); 128×256 in 512 threads of 8×8 (16 warps to hide latency instead of 8); grouped order for
# the 256×128 tile. All compile without spills on sm_90a.
_V10 = {"BM": 256, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "RM": 4, "RN": 2, "GROUP_M": 1, "MIN_BLOCKS": 1}
_V10_8x8 = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "RM": 2, "RN": 2, "GROUP_M": 1, "MIN_BLOCKS": 1}
V10_SEARCH_SPACE: tuple[dict, ...] = (
    dict(_V10),
    {**_V10, "BK": 8},
    {**_V10, "BM": 128, "BN": 256, "RM": 2, "RN": 4, "BK": 8},
    {**_V10, "BM": 128, "BN": 256, "RM": 2, "RN": 4},
    {**_V10, "BM": 128, "RM": 2, "RN": 4, "BK": 8, "MIN_BLOCKS": 2},
    dict(_V10_8x8),  # numba's v10_register_prefetch; 127 registers, so two blocks per SM without the bound
    {**_V10_8x8, "WM": 32, "WN": 64, "MIN_BLOCKS": 2},
    {**_V10_8x8, "WM": 32, "WN": 64, "BK": 16},
    {**_V10, "BM": 192, "WM": 48, "RM": 3},
    {**_V10, "BM": 128, "BN": 192, "WM": 32, "WN": 96, "RM": 2, "RN": 3},
    {**_V10, "BM": 128, "BN": 256, "WM": 32, "WN": 64, "RM": 2, "RN": 2},
    {**_V10, "GROUP_M": 8},
)

# kernel -> (module with make_spec and constraints, default search space, cache file name, level)
_FAMILIES = {
    "cuda/v9_autotuned": ("gemmlab.kernels.cuda.sgemm.v8_cp_async", SEARCH_SPACE, tuned.CACHE_FILES["cuda/v9_autotuned"],
                          9),
    "cuda/v10_register_prefetch": ("gemmlab.kernels.cuda.sgemm.v10_register_prefetch", V10_SEARCH_SPACE,
                                   tuned.CACHE_FILES["cuda/v10_register_prefetch"], 10),
}


def _family(kernel: str):
    import importlib

    module, space, filename, _ = _FAMILIES[kernel]
    return importlib.import_module(module), space, filename


@dataclass
class TuneResult:
    shape: tuple[int, int, int]
    kernel: str
    best: dict | None  # the fastest verified configuration, None if none ran
    ms: float | None
    tflops: float | None
    trials: list[dict] = field(default_factory=list)  # every candidate: params, ms or why it was dropped

    def to_json(self) -> dict:
        return asdict(self)


def cache_path(kernel: str = "cuda/v9_autotuned") -> Path:
    return tuned.cache_path(kernel)


load_cache, lookup, nearest, _store = tuned.load_cache, tuned.lookup, tuned.nearest, tuned.store


def candidates(problem: Problem, space: Iterable[dict] | None = None, kernel: str = "cuda/v9_autotuned") -> list[dict]:
    """Configurations of the search space (default: the kernel's) that pass the kernel's constraints (every one
    is correct for any shape; block tiles far larger than the problem are skipped as pointless)."""
    module, default_space, _ = _family(kernel)
    out = []
    for p in default_space if space is None else space:
        if module.constraints(p):
            continue
        if p["BM"] > 2 * problem.m and p["BM"] > 64 or p["BN"] > 2 * problem.n and p["BN"] > 64:
            continue
        out.append(dict(p))
    return out


def tune(shapes: Sequence, kernels: str | Sequence[str] = TUNABLE, *, configs: Iterable[dict] | None = None,
         repeats: int = 20, warmup: int = 3, seed: int = 0, cache: Path | None = None,
         log: Callable[[str], None] | None = None) -> list[TuneResult]:
    """Search the tile parameters of the tunable kernels for each shape on the present GPU and cache the best.

    shapes: (M, N, K) tuples, Problems or strings ("4096", "2048x3072x4096"). kernels: names or globs of tunable
    kernels (``cuda/v9_autotuned``, ``cuda/v10_register_prefetch``). configs: the candidates (default: each kernel's
    own space, ``SEARCH_SPACE`` or ``V10_SEARCH_SPACE``). Returns one TuneResult per shape and kernel, with every
    trial's time or the reason it was dropped.
    """
    import fnmatch

    import cupy

    from gemmlab.device import require_gpu
    from gemmlab.harness.reference import reference
    from gemmlab.problem import parse_shape

    names = [kernels] if isinstance(kernels, str) else list(kernels)

    chosen = [t for t in TUNABLE if any(fnmatch.fnmatchcase(t, pat) for pat in names)]
    if not chosen:
        raise UnknownKernelError(f"no tunable kernel matches {','.join(names)!r}; tunable: {', '.join(TUNABLE)}")
    info = require_gpu("gemmlab tune")
    say = log or (lambda s: None)
    space = list(configs) if configs is not None else None
    results = []
    for shape in shapes:
        if isinstance(shape, Problem):
            problem = shape
        else:
            dims = parse_shape(shape) if isinstance(shape, str) else tuple(shape)
            problem = Problem(*dims, "fp32")
        a, b = problem.make_inputs(seed, cupy)
        inputs = (a, b, reference(a, b))
        for kernel in chosen:
            results.append(_tune_one(kernel, problem, space, inputs, info, repeats, warmup,
                                     _cache_for(kernel, cache), say))
    return results


def _cache_for(kernel: str, cache: Path | None) -> Path:
    """The cache file of one family; an explicit ``cache`` names v9's file, and v10's lies beside it."""
    if cache is None:
        return cache_path(kernel)
    return cache if kernel == "cuda/v9_autotuned" else Path(cache).with_name(_FAMILIES[kernel][2])


def _tune_one(kernel, problem, space, inputs, info, repeats, warmup, path, say):
    """Time every candidate of one kernel family on one shape with the harness (verified first, then event-timed
    on one warm input set, as a search compares candidates, not cold-L2 absolutes); cache the fastest."""
    import cupy

    from gemmlab.harness.timing import TimingOptions, time_gpu
    from gemmlab.harness.verify import check

    module, level = _family(kernel)[0], _FAMILIES[kernel][3]
    a, b, ref = inputs
    c = cupy.empty((problem.m, problem.n), cupy.float32)
    opts = TimingOptions(repeat=repeats, min_repeat=repeats, max_seconds=0.0, min_warmup=warmup, cold_l2=False)
    trials = []
    for p in candidates(problem, space, kernel):
        trial = {"params": p}
        trials.append(trial)
        try:
            spec = module.make_spec(kernel, level, "candidate", p, "")
            report = spec.compile(info.arch).report
            if report.spills:
                trial["dropped"] = f"{report.spills} bytes of spills at {report.registers} registers"
                continue
            run = spec.build(problem)
            result = check(spec, problem, launch=run, inputs=(a, b), ref=ref)
            if not result.passed:
                trial["dropped"] = f"wrong result: {result.status} {result.reason or result.error}"
                continue
            ms = time_gpu(run, [(a, b, c)], opts, info.max_sm_clock_mhz).median_ms
            trial.update(ms=ms, tflops=problem.flops() / ms / 1e9, registers=report.registers)
            say(f"{problem.label():>16} {_short(p):48} {ms:8.3f} ms {trial['tflops']:6.1f} TFLOPS")
        except (GemmlabError, InvalidConfigError) as exc:
            trial["dropped"] = str(exc).splitlines()[0]
    timed = [t for t in trials if "ms" in t]
    best = min(timed, key=lambda t: t["ms"]) if timed else None
    result = TuneResult(problem.shape, kernel, best and best["params"], best and best["ms"],
                        best and best["tflops"], trials)
    if best:
        _store(info.name, problem.label(), {"params": best["params"], "ms": best["ms"],
                                            "tflops": best["tflops"], "candidates": len(timed)}, path)
        say(f"{problem.label():>16} {kernel} best {_short(best['params'])} {best['ms']:.3f} ms")
    return result


def _short(p: dict) -> str:
    return (f"{p['BM']}x{p['BN']}x{p['BK']} w{p['WM']}x{p['WN']} t{4 * p['RM']}x{4 * p['RN']} s{p.get('STAGES', 2)} "
            f"g{p['GROUP_M']} b{p['MIN_BLOCKS']}")
