"""The environment recorded with every result: GPU, clocks, driver, CUDA, library versions, git SHA."""
from __future__ import annotations

import datetime
import platform
from dataclasses import asdict
from importlib import metadata

from gemmlab.provenance import git_sha

LIBRARIES = ("numpy", "numba", "numba-cuda", "cupy-cuda13x", "cuda-core", "cuda-bindings", "nvidia-cuda-nvrtc",
             "triton", "torch", "ml_dtypes", "rich", "matplotlib")


def library_versions() -> dict:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    try:
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        versions["nvrtc"] = f"{major}.{minor}"
    except Exception:
        pass
    return versions


def collect(gpu_info, mode: str) -> dict:
    return {
        "mode": mode,
        "gpu": asdict(gpu_info) if gpu_info else None,
        "driver": gpu_info.driver if gpu_info else None,
        "cuda_runtime": gpu_info.runtime if gpu_info else None,
        "libraries": library_versions(),
        "python": platform.python_version(),
        "host": platform.node(),
        "cpu": platform.processor() or platform.machine(),
        "git_sha": git_sha(),
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
