"""The layouts dispatch reads: a table row's (as ``gemmlab bench --layout`` names it, "row,col"), and whether and how
a kernel reads a call's operands in theirs (in place, after copying A or B, or not at all)."""
from __future__ import annotations

from gemmlab.kernels.plan import COL, ROW, Layout, copies_to
from gemmlab.problem import Problem


def layout_key(layout: Layout) -> str:
    """A layout as table rows and bench records name it: "row,col" (A row-major, B the transpose of an N×K matrix)."""
    return f"{layout.a},{layout.b}"


def parse_layout(text: str) -> Layout:
    """"row,col" -> Layout(ROW, COL); a GemmlabError naming what is wrong otherwise."""
    from gemmlab.errors import GemmlabError

    parts = [x.strip().lower() for x in str(text).split(",")]
    if len(parts) != 2 or any(x not in (ROW, COL) for x in parts):
        raise GemmlabError(f"layout {text!r}: A's and B's, each row or col, e.g. row,col (B handed over as w.t())")
    return Layout(*parts)


def row_layout(row: dict, precision: str) -> Layout:
    """The layout a row was measured in: its own, or the one bench hands operands over in (Problem-natural)."""
    from gemmlab.kernels.spec import KernelSpec

    text = row.get("layout")
    return parse_layout(text) if text else KernelSpec.natural_layout(Problem(1, 1, 1, precision))


def operand_copies(layout: Layout, spec) -> tuple[str, ...] | None:
    """The operands ``spec`` would copy to run ``layout`` (a vector, ANY, is read in either major); None where no
    copy makes the layout readable."""
    copied = copies_to(layout, spec.layouts)
    return None if copied is None else copied[0]


def refuse_layout(layout: Layout, spec):
    from gemmlab.errors import LayoutError

    raise LayoutError(spec.layout_refusal(layout))
