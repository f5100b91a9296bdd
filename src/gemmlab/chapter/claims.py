"""Every claim of the two seed texts, each with the seed's words and figure, and how gemmlab judges it.

A claim is one formula, launch configuration, numeric claim, analysis step or promised next step of a seed. The
seeds' words are data, one file a seed (``claims_<seed>.json``: the section, the quote, the claim in English and
Chinese, the seed's figure (one string, or English and the seed's own Chinese), whether judging it takes a GPU run),
in the seed's order; each claim's judge is the
function that declares its id with ``@judges`` in first_seed.py, first_seed_table.py or second_seed.py. The
formulas, the model and the seeds' own arithmetic need no GPU.
"""
from __future__ import annotations

import json
from pathlib import Path

from gemmlab.chapter import first_seed, first_seed_table, second_seed  # noqa: F401  (their judges register)
from gemmlab.chapter.claim import FIRST, JUDGES, SECOND, Claim
from gemmlab.chapter.emulate import emulate_swapped  # noqa: F401  (its rows name it gemmlab.chapter.claims's)


def _figure(figure) -> tuple[str, str]:
    """A seed's figure in English and Chinese: one string where it reads the same in both (a formula, a number),
    else [English, the seed's own Chinese words]."""
    return (figure, figure) if isinstance(figure, str) else tuple(figure)


def _load(seed: str) -> list[Claim]:
    rows = json.loads((Path(__file__).with_name(f"claims_{seed}.json")).read_text(encoding="utf-8"))
    return [Claim(r["id"], seed, r["section"], r["quote"], tuple(r["claim"]), _figure(r["seed_figure"]),
                  JUDGES[r["id"]], r["needs_gpu"]) for r in rows]


CLAIMS: list[Claim] = _load(FIRST) + _load(SECOND)
