"""The results files gemmlab writes (bench, verify, timeline, accuracy, chapter, bench --api, bench --api --suite
and distributed --json), read back and told apart.

Below the harness and the report, which both read them: the report renders them, the harness merges counters into
them, the CLI checks a file before a run appends to it.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from gemmlab.errors import ResultsFileError

MAX_JSON_BYTES = 256 * 2**20  # past any results file gemmlab writes (the largest: a few MiB)

# The fields every record of each kind of results JSON has: what tells the kinds apart, and what rendering needs.
RECORD_FIELDS = {"bench": ("kernel", "precision", "m", "n", "k", "status"),
                 "timeline": ("kernel", "problem", "summary"),
                 "verify": ("kernel", "shape", "result"),
                 "accuracy": ("sweep", "series", "dist", "k", "rel_err"),
                 # before api: a suite record names the kernel it ran too
                 "suite": ("op", "precision", "m", "n", "k", "layout", "verified"),
                 "api": ("kernel", "precision", "m", "n", "k", "layout", "verified")}


def load(path: str | os.PathLike) -> tuple[str, dict]:
    """(kind, results) of a JSON that gemmlab wrote: "bench", "timeline", "verify", "accuracy", "chapter" (their
    --json), "suite" (bench --api --suite --json) or "api" (bench --api --json);
    anything else is refused with a ResultsFileError naming why."""
    text = read_text(path)
    try:
        results = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if isinstance(results, list):  # verify --json wrote its rows bare before it kept the environment beside them
        results = {"env": {}, "records": results}
    records = results.get("records") if isinstance(results, dict) else None
    if not isinstance(records, list) or not isinstance(results.get("env", {}), dict):
        raise ResultsFileError(f"{path}: not a results JSON that gemmlab writes (the --json of bench, bench --api, "
                               "bench --api --suite, verify, timeline, accuracy or chapter)")
    if not records:
        raise ResultsFileError(f"{path}: holds no records")
    if results.get("kind") == "chapter" and isinstance(results.get("claims"), list):  # gemmlab chapter --json
        results.setdefault("env", {})
        return "chapter", results
    for kind, fields in RECORD_FIELDS.items():
        if all(isinstance(r, dict) and all(f in r for f in fields) for r in records):
            results.setdefault("env", {})
            return kind, results
    raise ResultsFileError(f"{path}: its records are not those of gemmlab bench, bench --api, verify, timeline, "
                           "accuracy or chapter --json")


def read_text(path: str | os.PathLike) -> str:
    """The text of a JSON file a caller named: a regular file (not a directory, nor a device or a FIFO, whose reading
    may never end) of at most MAX_JSON_BYTES; else a ResultsFileError naming why."""
    try:
        st = Path(path).stat()
        mode, size = st.st_mode, st.st_size
        if stat.S_ISDIR(mode):
            raise ResultsFileError(f"{path}: is a directory, not a results JSON")
        if not stat.S_ISREG(mode):
            raise ResultsFileError(f"{path}: not a regular file (a device or a pipe), so not a results JSON")
        if size > MAX_JSON_BYTES:
            raise ResultsFileError(f"{path}: {size / 2**20:.0f} MiB, past the {MAX_JSON_BYTES // 2**20} MiB of any "
                                   "results JSON gemmlab writes")
        return Path(path).read_text()
    except FileNotFoundError:
        raise ResultsFileError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise ResultsFileError(f"{path}: not text, so not a results JSON") from None
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def load_results(path: str | os.PathLike) -> dict:
    """A results JSON that gemmlab bench wrote."""
    kind, results = load(path)
    if kind != "bench":
        raise ResultsFileError(f"{path}: holds {kind} results, not those of gemmlab bench")
    return results


def merge_runs(old: dict, new: dict) -> dict:
    """--append: add a run's records to a results file written by an earlier run on the same GPU; a kernel timed
    again at a shape and precision replaces its earlier record there (and a peer's noise entry its earlier one).
    ``env.runs`` keeps each command with the git SHA and time it ran at; ``notes`` say what a replacement dropped
    (profile counters) and where kernels left as they were keep ratios to an earlier timing of a re-timed peer."""
    def key(r, *fields):
        return tuple(r.get(f) for f in fields)

    record_key = ("kernel", "precision", "m", "n", "k", "layout")  # a --layout run's records beside the natural ones'
    # each record names its run (its time), so a ratio pairs a kernel with its peer of the same run only
    for results in (old, new):
        for r in results["records"]:
            r.setdefault("run", results["env"].get("time"))
    again = {key(r, *record_key) for r in new["records"]}
    notes = [n for n in new.get("notes", []) if n not in old.get("notes", [])]
    for r in old["records"]:
        if key(r, *record_key) in again and r.get("profile"):
            notes.append(f"--append: {r['kernel']} at {r['m']}x{r['n']}x{r['k']} timed again; the earlier record's "
                         "profile counters went with it (gemmlab profile adds them again)")
    for r in new["records"]:
        if r.get("backend") != "peer":
            continue
        shape = key(r, "precision", "m", "n", "k")
        kept = sorted({o["kernel"] for o in old["records"] if key(o, "precision", "m", "n", "k") == shape
                       and key(o, *record_key) not in again and o.get("peer") == r["kernel"]})
        if kept:
            notes.append(f"--append: {r['kernel']} timed again at {r['m']}x{r['n']}x{r['k']}; "
                         f"{', '.join(kept)} keep their ratios to its earlier timing")
    merged = dict(old)
    merged["records"] = [r for r in old["records"] if key(r, *record_key) not in again] + new["records"]
    noise_again = {key(r, "kernel", "m", "n", "k") for r in new.get("noise", [])}
    merged["noise"] = [r for r in old.get("noise", []) if key(r, "kernel", "m", "n", "k") not in noise_again] + \
        new.get("noise", [])
    merged["notes"] = old.get("notes", []) + notes
    commands = old["env"].get("commands") or [old["env"].get("command")]
    runs = old["env"].get("runs") or [{"command": c, **({"git_sha": old["env"].get("git_sha"),
                                                          "time": old["env"].get("time")} if i == 0 else {})}
                                      for i, c in enumerate(commands) if c]
    runs = runs + [{"command": new["env"]["command"], "git_sha": new["env"].get("git_sha"),
                    "time": new["env"].get("time"), "records": len(new["records"])}]
    merged["env"] = {**old["env"], "commands": [c for c in commands if c] + [new["env"]["command"]], "runs": runs}
    return merged
