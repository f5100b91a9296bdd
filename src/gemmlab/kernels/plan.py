"""Plans: a kernel resolved once for one problem and operand layout, then launched many times.

A plan holds everything its launches need except the operands' addresses and the stream: the compiled kernel
and its geometry, the parameter buffer, tensor maps, workspaces, the pre-passes a layout needs. ``launch`` is the
hot path gemmlab.matmul calls; the harness times the same plans through ``run`` (CuPy arrays on CuPy's current
stream), so what the benchmarks measure is what a caller gets.

Layouts: an operand is ROW (row-major as the problem names it: A is M×K with rows of K, B is K×N with rows of N)
or COL (the transpose of a row-major matrix: A stored as K×M, B stored as N×K; what ``x @ w.T`` hands over).
A kernel declares the layouts it reads in place; gemmlab.matmul copies any other into a row-major buffer.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from gemmlab.errors import SizeLimitError
from gemmlab.problem import Problem

ROW, COL = "row", "col"
ANY = "any"  # a vector (one row or one column): row- and column-major at once


@dataclass(frozen=True)
class Layout:
    a: str = ROW
    b: str = ROW

    def label(self) -> str:
        name = {ROW: "row-major", COL: "column-major", ANY: "a vector (either major)", "strided": "strided"}
        return f"A {name[self.a]}, B {name[self.b]}"

    def transposed(self) -> "Layout":
        """The layout of the transposed problem's operands (Cᵀ = Bᵀ·Aᵀ: its A is this B's transpose, its B this A's);
        a vector or a strided operand stays as it is."""
        flip = {ROW: COL, COL: ROW}
        return Layout(flip.get(self.b, self.b), flip.get(self.a, self.a))


ROW_MAJOR = Layout()


def target_layout(layout: Layout, accepted) -> Layout | None:
    """The layout a kernel that reads ``accepted`` layouts in place runs an operand pair given in ``layout`` with:
    each operand as given where the kernel takes it, else copied into row-major order (the fewest copies); None
    where no such copy makes a layout the kernel reads (FP8 reads B only as the transpose of an N×K matrix)."""
    def choices(major):  # a vector is both majors at once; anything else may also be copied into row-major order
        return (ROW, COL) if major == ANY else (major, ROW)

    options = [Layout(a, b) for a in dict.fromkeys(choices(layout.a)) for b in dict.fromkeys(choices(layout.b))]
    return next((o for o in options if o in accepted), None)


def copies_to(layout: Layout, accepted) -> tuple[tuple[str, ...], Layout] | None:
    """(the operands copied into row-major order, the layout the kernel then reads) for operands given in ``layout``
    to a kernel that reads ``accepted`` layouts in place (``target_layout``; a vector is read in either major);
    None where no copy makes a layout it reads."""
    runs = target_layout(layout, accepted)
    if runs is None:
        return None
    return tuple(name for name, given, used in (("A", layout.a, runs.a), ("B", layout.b, runs.b))
                 if given not in (used, ANY)), runs


@dataclass
class Plan:
    """A prepared kernel. Subclasses implement ``launch``.

    ``launch(a, b, c, stream)``: for a GPU plan, a, b and c are device addresses (ints) of operands in the plan's
    layout and ``stream`` a CUstream handle (0: the legacy default stream); for a CPU plan, NumPy arrays.
    """

    spec: object  # the KernelSpec that runs (the configuration chosen for the problem)
    problem: Problem
    layout: Layout = ROW_MAJOR
    on_gpu: bool = True
    steps: list[str] = field(default_factory=list)  # what a launch does, in order, for explain()
    keep: object = None  # an array its launches read by address that the plan keeps alive (verify's addend)

    def launch(self, a, b, c, stream: int = 0) -> None:
        raise NotImplementedError

    # A plan of a spec with a fused epilogue (spec.epilogue, gemmlab.epilogue): alpha and beta are the spec's;
    # the addend's strides are set once per plan, its address (a device address; on the host, the array) before
    # each launch that reads it.
    def bind_epilogue(self, strides: tuple | None) -> None:
        """The addend's (row, column) strides in elements (a bias: (0, its stride)); None without an addend."""
        raise NotImplementedError(f"{self.spec.name} fuses no epilogue")

    def set_addend(self, d) -> None:
        raise NotImplementedError(f"{self.spec.name} fuses no epilogue")

    def run(self, a, b, c) -> None:
        """The harness's call: arrays of the plan's device (CuPy on the GPU), on CuPy's current stream."""
        if not self.on_gpu:
            self.launch(a, b, c)
            return
        import cupy

        self.launch(a.data.ptr, b.data.ptr, c.data.ptr, cupy.cuda.get_current_stream().ptr)

    def explain(self) -> str:
        lines = [f"{self.spec.name} for {self.problem.label()} {self.problem.precision} ({self.layout.label()})",
                 f"  {self.spec.title}"]
        params = dict(getattr(self.spec, "params", {}) or {})
        if params:
            lines.append("  parameters: " + ", ".join(f"{k}={v}" for k, v in params.items()))
        lines += [f"  - {s}" for s in self.steps]
        return "\n".join(lines)


@dataclass
class HostPlan(Plan):
    """A CPU kernel: ``launch`` calls it on NumPy arrays."""

    function: object = None
    addend: object = None  # the next launch's bias or D (NumPy), with an epilogue that adds one

    def bind_epilogue(self, strides: tuple | None) -> None:
        pass  # NumPy reads the addend with its own strides

    def set_addend(self, d) -> None:
        self.addend = d

    def launch(self, a, b, c, stream: int = 0) -> None:
        # BF16 and FP16 (dispatch.HOST_WIDENED): the kernel runs on the operands widened to FP32, which is exact, into
        # an FP32 C that the epilogue reads before the one rounding to C's type, as a GPU kernel's FP32 accumulator
        acc = c
        if c.dtype.itemsize < 4:
            with _host_memory("C's FP32 accumulator", c.shape):
                acc = np.empty(c.shape, np.float32)
        self.function(_widened(a), _widened(b), acc)
        epilogue = self.spec.epilogue
        if epilogue is not None:  # on the host, after the GEMM: C = act(alpha·C + beta·D), in float64
            acc[...] = epilogue.apply_numpy(acc, self.addend if epilogue.addend else None)
            self.addend = None  # the caller's array, not kept alive by the plan
        if acc is not c:
            # round to nearest even (NumPy's float16, ml_dtypes' bfloat16); past FP16's range inf and below it
            # subnormals or zero, as torch's CPU matmul gives them, without NumPy's warnings or its errors under seterr
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                c[...] = acc


def _widened(x):
    """A 2-byte float operand (bfloat16, float16) in float32; a wider one as it is."""
    if x.dtype.itemsize >= 4:
        return x
    with _host_memory(f"an operand of {x.dtype}", x.shape):
        return x.astype(np.float32)


@contextmanager
def _host_memory(what: str, shape: tuple):
    """A float32 allocation of ``shape`` the host cannot make: a SizeLimitError naming ``what``."""
    try:
        yield
    except MemoryError:
        raise SizeLimitError(f"{what} ({'×'.join(map(str, shape))}) needs {4 * np.prod(shape) / 2**30:.1f} GiB in "
                             "float32 to multiply on the host, which could not be allocated") from None
