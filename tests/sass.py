"""The SASS ptxas made of a cubin, for tests of compiled behaviour: cuobjdump (and the nvdisasm it runs) from PATH
or from the nvidia-cuda-cuobjdump / -nvdisasm wheels the test extras install, and the listing cut into
instructions and loops."""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gemmlab.harness.probes.ws_racecheck import cuda_tool

CUOBJDUMP, NVDISASM = cuda_tool("cuobjdump"), cuda_tool("nvdisasm")
AVAILABLE = CUOBJDUMP is not None and NVDISASM is not None


def sass(cubin: bytes, tmp_path: Path) -> str:
    """cuobjdump -sass of ``cubin``."""
    path = tmp_path / "kernel.cubin"
    path.write_bytes(cubin)
    env = dict(os.environ, PATH=os.path.dirname(NVDISASM) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([CUOBJDUMP, "-sass", str(path)], capture_output=True, text=True, env=env, check=True).stdout


@dataclass(frozen=True)
class Instr:
    addr: int
    op: str  # the opcode with its modifiers (LDS.128, HGMMA.64x256x8.F32.TF32), without the predicate
    args: str  # the operands

    @property
    def branch_target(self) -> int | None:
        return int(self.args, 16) if self.op.startswith("BRA") and self.args.startswith("0x") else None


_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?(\S+)\s*(.*?)\s*;")


def instructions(listing: str) -> list[Instr]:
    return [Instr(int(m.group(1), 16), m.group(2), m.group(3)) for m in _LINE.finditer(listing)]


def loops(instrs: list[Instr]) -> list[tuple[int, int]]:
    """(first, last) address of every loop: each branch back to an earlier instruction. The branch-to-self that
    pads the end of a kernel is no loop."""
    return [(i.branch_target, i.addr) for i in instrs if i.branch_target is not None and i.branch_target < i.addr]


def between(instrs: list[Instr], first: int, last: int) -> list[Instr]:
    return [i for i in instrs if first <= i.addr <= last]
