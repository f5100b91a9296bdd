"""Exceptions gemmlab raises for bad input. Each names the problem it found."""


class GemmlabError(Exception):
    """Base class of every error gemmlab raises on purpose."""


class OperandTypeError(GemmlabError, TypeError):
    """An operand that is not an array gemmlab takes (NumPy, CuPy, PyTorch, or the CUDA array interface)."""


class ShapeError(GemmlabError, ValueError):
    """Operand shapes that do not form a matrix product, or dimensions out of range."""


class DTypeError(GemmlabError, TypeError):
    """An operand dtype the chosen kernel or precision does not take."""


class LayoutError(GemmlabError, ValueError):
    """An operand memory layout (strides, contiguity) the kernel cannot read."""


class SizeLimitError(GemmlabError, ValueError):
    """A problem past a kernel's index range or the device's memory."""


class MissingDependencyError(GemmlabError, ImportError):
    """A package of an optional extra (gemmlab[cupy], gemmlab[plots]) that the call needs and that is not installed;
    the message names the install command."""


class NoGPUError(GemmlabError, RuntimeError):
    """A GPU kernel was asked for on a machine without a usable CUDA GPU."""


class UnknownKernelError(GemmlabError, KeyError):
    """No registered kernel matches the name or pattern."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class InvalidConfigError(GemmlabError, ValueError):
    """Tile parameters that break a constraint, rejected before anything compiles."""


class CompileError(GemmlabError, RuntimeError):
    """NVRTC rejected a kernel's source; the message carries the compiler log."""


class ResultsFileError(GemmlabError, ValueError):
    """A file given to read as gemmlab results that is missing, unreadable, or not JSON gemmlab writes."""


class OutputPathError(GemmlabError, OSError):
    """An output path (--json, --out) that cannot be written; found before any work starts."""


class Refusal(str):
    """Why a kernel cannot take a problem (what KernelSpec.is_valid returns), with the error class that tells a
    caller: a str, so it prints and compares as its text."""

    error: type = GemmlabError

    def __new__(cls, text: str, error: type = GemmlabError):
        obj = super().__new__(cls, text)
        obj.error = error
        return obj

    def exception(self) -> GemmlabError:
        return self.error(str(self))


class DistributedError(GemmlabError, RuntimeError):
    """A distributed GEMM that cannot go on: a rank's bad input or failure, ranks that disagree, a rank that never
    joined. Raised on every rank of the group with the same message, so no rank is left waiting."""


class EpilogueError(GemmlabError, ValueError):
    """A fused epilogue that cannot be: an activation gemmlab does not know, beta without an addend, an addend of the
    wrong shape for the kind named, a kernel that does not fuse it."""
