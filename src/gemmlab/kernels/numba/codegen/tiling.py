"""Tiling: a generated level's tile configuration and the constraints between its sizes."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tiling:
    """One block computes BM×BN of C, stepping K by BK. Its warps each own a WM×WN warp tile, split into
    WMITER×WNITER sub-tiles; the 32 lanes of a warp cover one sub-tile with TM×TN results per lane. A thread's
    TM rows (TN columns) are contiguous, so they load from shared memory as TM/4 (TN/4) 16-byte vectors.

    VEC: width of global loads and C stores (4 = 16 bytes, needs K % 4 == N % 4 == 0; 1 = any shape).
    SVEC: read shared memory with 16-byte loads. STAGES: 1 = load, sync, compute, sync; 2 = the next tile is
    loaded into registers while this one is computed, then stored to the other shared buffer (one sync per tile).
    ASYNC: tiles move global -> shared by cp.async into a ring of STAGES buffers, STAGES - 1 tiles in flight.
    APAD: floats of padding after each BM-long row of the transposed A tile (keeps the transposing stores
    conflict-free; a multiple of 4 keeps 16-byte alignment).
    """

    BM: int
    BN: int
    BK: int
    WM: int
    WN: int
    WMITER: int
    WNITER: int
    TM: int
    TN: int
    VEC: int = 1
    SVEC: bool = False
    STAGES: int = 1
    APAD: int = 0
    ASYNC: bool = False

    @property
    def threads(self) -> int:
        return (self.BM // self.WM) * (self.BN // self.WN) * 32

    @property
    def wsubm(self) -> int:
        return self.WM // self.WMITER

    @property
    def wsubn(self) -> int:
        return self.WN // self.WNITER

    @property
    def bmp(self) -> int:
        return self.BM + self.APAD

    def smem_bytes(self) -> int:
        return 4 * self.STAGES * self.BK * (self.bmp + self.BN)

    def errors(self) -> list[str]:
        e = []
        if self.BM % self.WM or self.BN % self.WN:
            e.append(f"warp tile {self.WM}×{self.WN} must divide the block tile {self.BM}×{self.BN}")
        if self.WM % self.WMITER or self.WN % self.WNITER:
            e.append("WMITER must divide WM and WNITER must divide WN")
        elif (self.wsubm % self.TM or self.wsubn % self.TN
              or (self.wsubm // self.TM) * (self.wsubn // self.TN) != 32):
            e.append(f"a {self.wsubm}×{self.wsubn} warp sub-tile with {self.TM}×{self.TN} per lane is not 32 lanes")
        if self.threads > 1024:
            e.append(f"{self.threads} threads per block is over 1024")
        if self.VEC not in (1, 4):
            e.append("VEC must be 1 or 4")
        if self.BK % self.VEC or self.BN % self.VEC:
            e.append("VEC must divide BK and BN")
        for name, elems in (("A", self.BM * self.BK), ("B", self.BK * self.BN)):
            if elems % (self.VEC * self.threads):
                e.append(f"the {name} tile ({elems} floats) does not split evenly into {self.threads} threads "
                         f"loading {self.VEC} each")
        if self.SVEC and (self.TM % 4 or self.TN % 4 or self.APAD % 4 or self.BN % 4):
            e.append("16-byte shared loads need TM, TN, APAD and BN multiples of 4")
        if self.VEC == 4 and self.TN % 4:
            e.append("16-byte C stores need TN % 4 == 0")
        if self.ASYNC and not 2 <= self.STAGES <= 5:
            e.append("a cp.async ring needs 2 to 5 STAGES")
        if not self.ASYNC and self.STAGES not in (1, 2):
            e.append("STAGES must be 1 or 2 (register prefetch); deeper rings need ASYNC")
        if self.smem_bytes() > 48 * 1024:
            e.append(f"{self.smem_bytes()} bytes of static shared memory is over 48 KiB")
        return e
