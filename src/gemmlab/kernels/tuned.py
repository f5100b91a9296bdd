"""Tuned tile parameters of the autotuned FP32 families, as `gemmlab tune` caches them per GPU and shape.

The search itself lives in gemmlab.tune, above the harness; the kernels only read its results, through here.
Cache files: ``$GEMMLAB_CACHE/tune.json`` for v9 and ``$GEMMLAB_CACHE/tune-v10_register_prefetch.json`` for v10::

    {"NVIDIA H200": {"4096x4096x4096": {"params": {...}, "ms": 2.9, "tflops": 47.1, "candidates": 12}}}
"""
from __future__ import annotations

import math
from pathlib import Path

from gemmlab.cache import cache_root, read_json, write_json
from gemmlab.problem import Problem

CACHE_FILES = {"cuda/v9_autotuned": "tune.json", "cuda/v10_register_prefetch": "tune-v10_register_prefetch.json"}


def cache_path(kernel: str = "cuda/v9_autotuned") -> Path:
    return cache_root() / CACHE_FILES[kernel]


def load_cache(path: Path | None = None) -> dict:
    return read_json(path or cache_path())


def store(gpu_name: str, label: str, entry: dict, path: Path) -> None:
    data = load_cache(path)
    data.setdefault(gpu_name, {})[label] = entry
    write_json(path, data)  # a read-only cache only costs a re-tune


def lookup(gpu_name: str, problem: Problem, path: Path | None = None) -> dict | None:
    """The cached configuration for this GPU and shape, else the one tuned for the nearest cached shape."""
    return nearest(load_cache(path).get(gpu_name, {}), problem)


def nearest(entries: dict, problem: Problem) -> dict | None:
    """Params of the entry whose shape is closest to ``problem`` in log space (exact match first)."""
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
