"""Launch geometry every backend shares: grid, block and dynamic shared memory of one launch."""
from __future__ import annotations

from dataclasses import dataclass

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class Geometry:
    grid: Dim3
    block: Dim3
    smem: int = 0  # dynamic shared memory, bytes

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)
