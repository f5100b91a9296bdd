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


_REG = re.compile(r"^R(\d+)$")
_WIDTH = {"64": 2, "128": 4}


def _written(i: Instr) -> set[int]:
    """The registers an instruction writes: its first operand, as wide as a .64 or .128 access; none for stores,
    barriers and the warpgroup's own instructions."""
    if i.op.startswith(("ST", "RED", "SYNCS", "BAR", "HGMMA", "WARPGROUP", "BRA", "UTMA")):
        return set()
    m = _REG.match(i.args.split(",")[0].strip())
    if not m:
        return set()
    width = next((w for s, w in _WIDTH.items() if s in i.op.split(".")), 1)
    return set(range(int(m.group(1)), int(m.group(1)) + width))


def register_operand_hazards(body: list[Instr], passes: int = 2) -> list[Instr]:
    """The instructions of a loop body that write a register an HGMMA reads as its A operand (four registers from
    its second operand) while that HGMMA may still run: issued, and not retired by a WARPGROUP.DEPBAR.LE gsb0, N
    that leaves N groups in flight (a group ends at the HGMMA marked gsb0). PTX leaves the A registers to the
    program until a wait covers them (wgmma.wait_group). The body runs ``passes`` times in address order, every
    instruction on the path (conservative where a branch skips some), so that a write early in the body meets an
    HGMMA of the previous trip."""
    pending: list[set[int]] = []  # committed groups, oldest first
    open_group: set[int] = set()
    hazards: list[Instr] = []
    for _ in range(passes):
        for i in body:
            if i.op.startswith("HGMMA"):
                a = _REG.match(i.args.split(",")[1].strip())
                if a:
                    open_group |= set(range(int(a.group(1)), int(a.group(1)) + 4))
                if "gsb0" in i.args:
                    pending.append(open_group)
                    open_group = set()
            elif i.op.startswith("WARPGROUP.DEPBAR"):
                keep = int(i.args.rsplit(",", 1)[1].strip(), 0)
                pending = pending[len(pending) - keep:] if keep else []
            elif _written(i) & (open_group.union(*pending)):
                hazards.append(i)
    return hazards
