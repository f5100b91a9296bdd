"""Benchmarks in a caller's operand layout: ``gemmlab bench --layout A,B``.

The harness draws A (M×K) and B (K×N) row-major; a caller of ``x @ w.t()`` hands B over as the transpose of an N×K
matrix (column-major, COL). ``arrange`` stores the drawn operands so, as views of the logical shapes (the reference
and the host-time calls read them as they are); ``launch`` runs a kernel on them the way gemmlab.matmul would: in
place where the kernel reads the layout, else after the copy gemmlab.matmul makes into row-major order, on every
launch, so the time is a caller's. A record says which copies its time includes (``copies``).
"""
from __future__ import annotations

from gemmlab.kernels.plan import COL, Layout, copies_to


def arrange(a, b, layout: Layout):
    """A and B (row-major, any array module) as views of the same matrices stored in ``layout``."""
    from gemmlab.harness.reference import array_module

    def stored(x, major):
        if major != COL:
            return x
        xp = array_module(x)
        return xp.ascontiguousarray(x.T).T

    return stored(a, layout.a), stored(b, layout.b)


def launch(spec, problem, layout: Layout):
    """(``run(a, b, c)`` for operands stored in ``layout``, the operands it copies first), the kernel's plan for the
    layout it reads them in; a GemmlabError (LayoutError) where no copy makes them readable."""
    from gemmlab.errors import LayoutError

    copied = copies_to(layout, spec.layouts)
    if copied is None:
        raise LayoutError(spec.layout_refusal(layout))
    copies, runs = copied
    plan = spec.plan(problem, runs)
    if not copies:
        return plan.run, ()

    def run(a, b, c):
        from gemmlab.harness.reference import array_module

        xp = array_module(a)
        plan.run(xp.ascontiguousarray(a) if "A" in copies else a, xp.ascontiguousarray(b) if "B" in copies else b, c)

    return run, copies
