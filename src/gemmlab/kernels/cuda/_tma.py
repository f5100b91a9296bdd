"""TMA tensor maps for the tc levels: the arguments of cuTensorMapEncodeTiled, checked in Python, and a cache
of encoded maps in device memory.

A 2-D row-major matrix is described innermost dimension first: dims (cols, rows), one row stride in bytes, a box
(box_cols, box_rows) copied per instruction. The hardware needs the base address and the row stride to be
multiples of 16 bytes, the box to be at most 256 elements per side, and with the 128-byte swizzle the box's
inner extent must be exactly 128 bytes (one swizzle row). Out-of-bounds parts of a box are filled with zeros.
L2 promotion is 128 bytes, one box row: promoting to 256 bytes fetches the neighbouring line with every row, and
on the H200 that moved 39% more sectors between the two L2 partitions in tc4 BF16 at 4096³ (6.86 M against 4.93 M
in Nsight Compute at base clock, measured outside results/) for the same DRAM traffic.

cuda.core's launch takes no raw 128-byte struct as a kernel argument, so the encoded maps go to global memory
(encoded once per operand address and shape, then reused) and the kernel gets their address; TMA reads a map
from global memory as well as from a __grid_constant__ parameter, and prefetch.tensormap warms it.
"""
from __future__ import annotations

from dataclasses import dataclass

MAP_BYTES = 128
SWIZZLE_BYTES = 128
ELEMENT_BYTES = {"bf16": 2, "fp32": 4}


@dataclass(frozen=True)
class TiledMap:
    """One 2-D tiled tensor map: a rows×cols matrix with a row stride, read in boxes of box_rows×box_cols."""

    dtype: str  # "bf16" | "fp32"
    rows: int
    cols: int
    row_stride: int  # elements between the starts of consecutive rows (>= cols)
    box_rows: int
    box_cols: int

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
        return e

    def encode_args(self, ptr: int) -> dict:
        """The cuTensorMapEncodeTiled arguments, innermost dimension first, before the enums are looked up."""
        if ptr % 16:
            raise ValueError(f"TMA needs a 16-byte aligned base address, got {ptr:#x}")
        errs = self.errors()
        if errs:
            raise ValueError("; ".join(errs))
        return {
            "dtype": self.dtype,
            "rank": 2,
            "address": ptr,
            "global_dim": [self.cols, self.rows],
            "global_strides": [self.row_stride * self.elem],  # bytes, every dimension but the innermost
            "box_dim": [self.box_cols, self.box_rows],
            "element_strides": [1, 1],
            "swizzle": SWIZZLE_BYTES,
        }


def encode(m: TiledMap, ptr: int) -> bytes:
    """The 128-byte CUtensorMap for matrix ``m`` at device address ``ptr`` (needs the CUDA driver)."""
    from cuda.bindings import driver

    args = m.encode_args(ptr)
    dtypes = {"bf16": driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
              "fp32": driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32}
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t  # the bindings take no plain ints for these lists
    err, tmap = driver.cuTensorMapEncodeTiled(
        dtypes[m.dtype], 2, args["address"], [u64(x) for x in args["global_dim"]],
        [u64(x) for x in args["global_strides"]], [u32(x) for x in args["box_dim"]],
        [u32(x) for x in args["element_strides"]], driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed ({err}) for {m} at {ptr:#x}")
    words = [int(w) for w in tmap.opaque]
    return b"".join(w.to_bytes(8, "little") for w in words)


class MapTable:
    """Device copies of encoded tensor maps, one contiguous array per set of (map, address) pairs.

    Keyed on everything a map encodes, so a hit is always a correct map; a launch on arrays seen before costs
    no encode and no copy.
    """

    def __init__(self, capacity: int = 64):
        self._cache: dict[tuple, object] = {}
        self._capacity = capacity

    def device_maps(self, pairs: list[tuple[TiledMap, int]]) -> int:
        """Device address of the maps for ``pairs``, in order, each 128 bytes (64-byte aligned)."""
        key = tuple(pairs)
        hit = self._cache.get(key)
        if hit is None:
            import cupy
            import numpy as np

            blob = b"".join(encode(m, ptr) for m, ptr in pairs)
            hit = cupy.asarray(np.frombuffer(blob, dtype=np.uint8))
            cupy.cuda.get_current_stream().synchronize()
            if len(self._cache) >= self._capacity:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = hit
        return hit.data.ptr
