"""gemmlab's on-disk cache: compiled cubins, tuned tile parameters and the dispatch table, under $GEMMLAB_CACHE
(default ~/.cache/gemmlab). Every reader tolerates a missing or unreadable file, and every writer a read-only one:
a cache only ever saves work."""
from __future__ import annotations

import json
import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("GEMMLAB_CACHE") or Path.home() / ".cache" / "gemmlab")  # set but empty: unset


def read_json(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict) -> bool:
    """Write ``data`` atomically (a reader never sees half a file); False when the cache cannot be written."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
    except OSError:
        return False
    return True
