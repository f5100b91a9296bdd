"""Which code wrote a result: the git SHA of this checkout (with -dirty for uncommitted changes to tracked files),
or GEMMLAB_GIT_SHA where it is set. Every layer records it, so it sits below them all."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git_sha() -> str:
    if os.environ.get("GEMMLAB_GIT_SHA"):
        return os.environ["GEMMLAB_GIT_SHA"]
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return sha + ("-dirty" if dirty and sha else "") if sha else "unknown"
    except Exception:
        return "unknown"
