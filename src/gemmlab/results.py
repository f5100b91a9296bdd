"""The results files gemmlab writes (bench, verify, timeline, accuracy, api and distributed --json), read back and
told apart.

Below the harness and the report, which both read them: the report renders them, the harness merges counters into
them, the CLI checks a file before a run appends to it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from gemmlab.errors import ResultsFileError

# The fields every record of each kind of results JSON has: what tells the kinds apart, and what rendering needs.
RECORD_FIELDS = {"bench": ("kernel", "precision", "m", "n", "k", "status"),
                 "timeline": ("kernel", "problem", "summary"),
                 "verify": ("kernel", "shape", "result"),
                 "accuracy": ("sweep", "series", "dist", "k", "rel_err"),
                 "api": ("kernel", "precision", "m", "n", "k", "layout", "verified")}


def load(path: str | os.PathLike) -> tuple[str, dict]:
    """(kind, results) of a JSON that gemmlab wrote: "bench", "timeline", "verify", "accuracy" (their --json) or
    "api" (bench --api --json);
    anything else is refused with a ResultsFileError naming why."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise ResultsFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ResultsFileError(f"{path}: is a directory, not a results JSON") from None
    except UnicodeDecodeError:
        raise ResultsFileError(f"{path}: not text, so not a results JSON") from None
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        results = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if isinstance(results, list):  # verify --json wrote its rows bare before it kept the environment beside them
        results = {"env": {}, "records": results}
    records = results.get("records") if isinstance(results, dict) else None
    if not isinstance(records, list) or not isinstance(results.get("env", {}), dict):
        raise ResultsFileError(f"{path}: not a results JSON that gemmlab writes (bench, verify, timeline or "
                               "accuracy --json)")
    if not records:
        raise ResultsFileError(f"{path}: holds no records")
    for kind, fields in RECORD_FIELDS.items():
        if all(isinstance(r, dict) and all(f in r for f in fields) for r in records):
            results.setdefault("env", {})
            return kind, results
    raise ResultsFileError(f"{path}: its records are not those of gemmlab bench, bench --api, verify, timeline or "
                           "accuracy --json")


def load_results(path: str | os.PathLike) -> dict:
    """A results JSON that gemmlab bench wrote."""
    kind, results = load(path)
    if kind != "bench":
        raise ResultsFileError(f"{path}: holds {kind} results, not those of gemmlab bench")
    return results
