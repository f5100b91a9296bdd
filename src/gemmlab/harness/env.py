"""The environment recorded with every result: GPU, clocks, driver, CUDA, library versions, git SHA."""
from __future__ import annotations

import datetime
import os
import platform
import subprocess
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

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


def git_sha() -> str:
    if os.environ.get("GEMMLAB_GIT_SHA"):
        return os.environ["GEMMLAB_GIT_SHA"]
    root = Path(__file__).resolve().parents[3]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return sha + ("-dirty" if dirty and sha else "") if sha else "unknown"
    except Exception:
        return "unknown"


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
