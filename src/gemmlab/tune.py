"""Autotuning of the cp.async SGEMM family (v9): a measured search over tile parameters per shape.

For each shape every candidate configuration of the v8 kernel source that passes its constraints is compiled
(configurations whose ptxas report shows spills are dropped before they run), verified once against a float64
reference on that shape and timed (median of ``repeats`` launches after ``warmup``). The fastest verified one is
written to a JSON cache keyed by GPU name and shape, which ``cuda/v9_autotuned`` reads when it builds.

Cache file: ``$GEMMLAB_CACHE/tune.json`` (default ``~/.cache/gemmlab/tune.json``)::

    {"NVIDIA H200": {"4096x4096x4096": {"params": {...}, "ms": 2.9, "tflops": 47.1, "candidates": 12}}}
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from gemmlab.errors import GemmlabError, InvalidConfigError, UnknownKernelError
from gemmlab.problem import Problem

TUNABLE = ("cuda/v9_autotuned",)

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


@dataclass
class TuneResult:
    shape: tuple[int, int, int]
    best: dict | None  # the fastest verified configuration, None if none ran
    ms: float | None
    tflops: float | None
    trials: list[dict] = field(default_factory=list)  # every candidate: params, ms or why it was dropped

    def to_json(self) -> dict:
        return asdict(self)


def cache_path() -> Path:
    root = Path(os.environ.get("GEMMLAB_CACHE", Path.home() / ".cache" / "gemmlab"))
    return root / "tune.json"


def load_cache(path: Path | None = None) -> dict:
    path = path or cache_path()
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _store(gpu_name: str, label: str, entry: dict, path: Path) -> None:
    data = load_cache(path)
    data.setdefault(gpu_name, {})[label] = entry
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache only costs a re-tune


def lookup(gpu_name: str, problem: Problem, path: Path | None = None) -> dict | None:
    """The cached configuration for this GPU and shape, else the one tuned for the nearest cached shape."""
    entries = load_cache(path).get(gpu_name, {})
    return nearest(entries, problem)


def nearest(entries: dict, problem: Problem) -> dict | None:
    """Params of the entry whose shape is closest to ``problem`` in log space (exact match first)."""
    import math

    best, best_d = None, math.inf
    for label, entry in entries.items():
        try:
            m, n, k = (int(x) for x in label.split("x"))
        except ValueError:
            continue
        d = sum(abs(math.log(a / b)) for a, b in zip((m, n, k), problem.shape))
        if d < best_d:
            best, best_d = entry.get("params"), d
    return best


def candidates(problem: Problem, space: Iterable[dict] = SEARCH_SPACE) -> list[dict]:
    """Configurations of the search space that pass the v8 constraints (every one is correct for any shape;
    block tiles far larger than the problem are skipped as pointless)."""
    from gemmlab.kernels.cuda.v8_cp_async import constraints

    out = []
    for p in space:
        if constraints(p):
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
    kernels (only ``cuda/v9_autotuned`` today). configs: the candidates (default ``SEARCH_SPACE``). Returns one
    TuneResult per shape and kernel, with every trial's time or the reason it was dropped.
    """
    import cupy
    import numpy as np

    from gemmlab.harness.device import require_gpu
    from gemmlab.kernels.cuda.v8_cp_async import make_spec
    from gemmlab.problem import parse_shape

    names = [kernels] if isinstance(kernels, str) else list(kernels)
    import fnmatch

    chosen = [t for t in TUNABLE if any(fnmatch.fnmatchcase(t, pat) for pat in names)]
    if not chosen:
        raise UnknownKernelError(f"no tunable kernel matches {names}; tunable: {', '.join(TUNABLE)}")
    info = require_gpu("gemmlab tune")
    path = cache or cache_path()
    say = log or (lambda s: None)
    space = list(configs) if configs is not None else list(SEARCH_SPACE)
    results = []
    stream = cupy.cuda.get_current_stream()  # launches go to the current stream; time them there
    for shape in shapes:
        if isinstance(shape, Problem):
            problem = shape
        else:
            dims = parse_shape(shape) if isinstance(shape, str) else tuple(shape)
            problem = Problem(*dims, "fp32")
        a, b = problem.make_inputs(seed, cupy)
        ref = a.astype(cupy.float64) @ b.astype(cupy.float64)
        ref_norm = float(cupy.linalg.norm(ref))
        c = cupy.empty((problem.m, problem.n), cupy.float32)
        trials = []
        for p in candidates(problem, space):
            trial = {"params": p}
            trials.append(trial)
            try:
                spec = make_spec("cuda/v9_autotuned", 9, "candidate", p, "")
                report = spec.compile(info.arch).report
                if report.spills:
                    trial["dropped"] = f"{report.spills} bytes of spills at {report.registers} registers"
                    continue
                run = spec.build(problem)
                c.fill(np.nan)
                run(a, b, c)
                stream.synchronize()
                err = float(cupy.linalg.norm(c.astype(cupy.float64) - ref)) / ref_norm
                if not err < problem.prec.rel_tolerance:
                    trial["dropped"] = f"wrong result: relative error {err:.2e}"
                    continue
                for _ in range(warmup):
                    run(a, b, c)
                events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(repeats)]
                for e0, e1 in events:
                    e0.record(stream)
                    run(a, b, c)
                    e1.record(stream)
                stream.synchronize()
                ms = float(np.median([cupy.cuda.get_elapsed_time(e0, e1) for e0, e1 in events]))
                trial.update(ms=ms, tflops=problem.flops() / ms / 1e9, registers=report.registers)
                say(f"{problem.label():>16} {_short(p):48} {ms:8.3f} ms {trial['tflops']:6.1f} TFLOPS")
            except (GemmlabError, InvalidConfigError) as exc:
                trial["dropped"] = str(exc).splitlines()[0]
        timed = [t for t in trials if "ms" in t]
        best = min(timed, key=lambda t: t["ms"]) if timed else None
        result = TuneResult(problem.shape, best and best["params"], best and best["ms"], best and best["tflops"],
                            trials)
        if best:
            _store(info.name, problem.label(), {"params": best["params"], "ms": best["ms"],
                                                "tflops": best["tflops"], "candidates": len(timed)}, path)
            say(f"{problem.label():>16} best {_short(best['params'])} {best['ms']:.3f} ms")
        results.append(result)
    return results


def _short(p: dict) -> str:
    return (f"{p['BM']}x{p['BN']}x{p['BK']} w{p['WM']}x{p['WN']} t{4 * p['RM']}x{4 * p['RN']} s{p['STAGES']} "
            f"g{p['GROUP_M']} b{p['MIN_BLOCKS']}")
