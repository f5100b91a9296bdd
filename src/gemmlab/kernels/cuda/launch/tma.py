"""TMA tensor maps for the tc levels: the arguments of cuTensorMapEncodeTiled, checked in Python, and a cache
of encoded maps in device memory.

A batch of matrices (BATCHED builds) adds a third, outermost dimension: the matrix, with its own stride in bytes
(a multiple of 16 too) and a box one matrix deep.

A 2-D row-major matrix is described innermost dimension first: dims (cols, rows), one row stride in bytes, a box
(box_cols, box_rows) copied per instruction. The hardware needs the base address and the row stride to be
multiples of 16 bytes, the box to be at most 256 elements per side, and with the 128-byte swizzle the box's
inner extent must be exactly 128 bytes (one swizzle row). A box's innermost start coordinate must fall on 16 bytes
too: on the H200 one that does not faults as an illegal instruction. Out-of-bounds parts of a box are filled with zeros.
L2 promotion is 128 bytes, one box row: promoting to 256 bytes fetches the neighbouring line with every row, which
moves more sectors between the two L2 partitions for the same DRAM traffic (tc4 on the H200: docs/tensor_cores/tc4.md,
"L2 promotion 128 bytes").

The maps are encoded into the kernel's argument struct (tc_args.cuh) by gemmlab.driver, once per plan; a launch
on a new address replaces the address in place.
"""
from __future__ import annotations

from dataclasses import dataclass

from gemmlab.problem import PRECISIONS

MAP_BYTES = 128
SWIZZLE_BYTES = 128
# every precision's operand type (C's included: BF16 and FP32), and TF32: FP32 in memory, rounded to TF32 on the copy
# into shared memory (TMA_ROUND)
ELEMENT_BYTES = {**{p.tma_dtype: p.input_bytes for p in PRECISIONS.values()}, "tf32": 4}


def _check_encodable(m, ptr: int) -> None:
    """Raise the reasons a map (TiledMap or LinearMap) cannot be encoded at base address ``ptr``."""
    if ptr % 16:
        raise ValueError(f"TMA needs a 16-byte aligned base address, got {ptr:#x}")
    errs = m.errors()
    if errs:
        raise ValueError("; ".join(errs))


@dataclass(frozen=True)
class TiledMap:
    """One 2-D tiled tensor map: a rows×cols matrix with a row stride, read in boxes of box_rows×box_cols."""

    dtype: str  # "fp8" | "bf16" | "f16" | "fp32" | "tf32" (FP32 in memory, TF32 in shared memory)
    rows: int
    cols: int
    row_stride: int  # elements between the starts of consecutive rows (>= cols)
    box_rows: int
    box_cols: int
    # a batch of such matrices (a rank-3 map, the matrix outermost): how many, and the elements between their starts
    batch: int = 1
    batch_stride: int = 0

    @property
    def elem(self) -> int:
        return ELEMENT_BYTES[self.dtype]

    @property
    def box_bytes(self) -> int:
        return self.box_rows * self.box_cols * self.elem

    def errors(self) -> list[str]:
        e = []
        if self.dtype not in ELEMENT_BYTES:
            e.append(f"unknown TMA element type {self.dtype!r}")
            return e
        if self.row_stride < self.cols:
            e.append(f"row stride {self.row_stride} is shorter than a row ({self.cols})")
        if (self.row_stride * self.elem) % 16:
            e.append(f"row stride {self.row_stride * self.elem} bytes is not a multiple of 16")
        if not (1 <= self.box_rows <= 256 and 1 <= self.box_cols <= 256):
            e.append(f"box {self.box_rows}x{self.box_cols} has a side outside 1..256")
        if self.box_cols * self.elem != SWIZZLE_BYTES:
            e.append(f"box rows are {self.box_cols * self.elem} bytes; the 128-byte swizzle needs exactly 128")
        if self.rows < 1 or self.cols < 1 or self.rows >= 2**32 or self.cols >= 2**32:
            e.append(f"dimensions {self.rows}x{self.cols} are outside 1..2^32-1")
        if self.batch > 1 or self.batch_stride:
            if not 1 <= self.batch < 2**32:
                e.append(f"a batch of {self.batch} matrices is outside 1..2^32-1")
            if (self.batch_stride * self.elem) % 16 or not 0 < self.batch_stride * self.elem < 2**40:
                e.append(f"batch stride {self.batch_stride * self.elem} bytes is not a positive multiple of 16 "
                         "below 2^40")
        return e

    def encode_args(self, ptr: int) -> dict:
        """The cuTensorMapEncodeTiled arguments, innermost dimension first, before the enums are looked up."""
        _check_encodable(self, ptr)
        batched = bool(self.batch_stride)  # rank 3: the batch outermost, one matrix a box
        return {
            "dtype": self.dtype,
            "rank": 3 if batched else 2,
            "address": ptr,
            "global_dim": [self.cols, self.rows] + ([self.batch] if batched else []),
            # bytes, every dimension but the innermost
            "global_strides": [self.row_stride * self.elem] + ([self.batch_stride * self.elem] if batched else []),
            "box_dim": [self.box_cols, self.box_rows] + ([1] if batched else []),
            "element_strides": [1, 1] + ([1] if batched else []),
            "swizzle": SWIZZLE_BYTES,
        }



@dataclass(frozen=True)
class LinearMap:
    """A 1-D tensor map of ``count`` elements read in boxes of ``box``, unswizzled: tc8's block scales (SCALE_TMA),
    read from where the scales' own layout puts a tile's, rounded down to 16 bytes, since a 2-D map would need rows
    16-byte pitched (padded scales). Elements past the end read as zeros."""

    dtype: str
    count: int
    box: int

    @property
    def elem(self) -> int:
        return ELEMENT_BYTES[self.dtype]

    def errors(self) -> list[str]:
        if self.dtype not in ELEMENT_BYTES:
            return [f"unknown TMA element type {self.dtype!r}"]
        e = []
        if not 1 <= self.box <= 256:
            e.append(f"box of {self.box} elements is outside 1..256")
        if (self.box * self.elem) % 16:
            e.append(f"box of {self.box * self.elem} bytes is not a multiple of 16")
        if not 1 <= self.count < 2**32:
            e.append(f"{self.count} elements are outside 1..2^32-1")
        return e

    def encode_args(self, ptr: int) -> dict:
        _check_encodable(self, ptr)
        return {"dtype": self.dtype, "rank": 1, "address": ptr, "global_dim": [self.count], "global_strides": [],
                "box_dim": [self.box], "element_strides": [1], "swizzle": 0}
