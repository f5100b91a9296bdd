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


def k_tile_loop(instrs: list[Instr]) -> list[Instr]:
    """The body of a wgmma kernel's k-tile loop: the shortest loop of four HGMMAs or more (a persistent kernel's
    tile loop holds it, and more)."""
    return min((b for b in (between(instrs, lo, hi) for lo, hi in loops(instrs))
                if sum(i.op.startswith("HGMMA") for i in b) >= 4), key=len)


_REG = re.compile(r"^R(\d+)$")
_PRED = re.compile(r"^!?U?P(T|\d+)$")


def _width(op: str) -> int:
    """Registers an instruction's destination spans: a .128 access or an LDSM of 4 matrices 4; a .64 access, a wide
    multiply, a double's arithmetic, CS2R or an LDSM of 2 matrices 2."""
    parts = op.split(".")
    if "128" in parts or (parts[0] == "LDSM" and parts[-1] == "4"):
        return 4
    if "64" in parts or "WIDE" in parts or parts[0] in ("DADD", "DMUL", "DFMA", "CS2R") or \
            (parts[0] == "LDSM" and parts[-1] == "2"):
        return 2
    return 1


def _written(i: Instr) -> set[int]:
    """The registers an instruction writes: its first register operand after any predicate destination (SHFL's,
    LOP3's), as wide as _width says; none for stores, barriers, comparisons and the warpgroup's own instructions."""
    if i.op.startswith(("ST", "RED", "SYNCS", "BAR", "HGMMA", "WARPGROUP", "BRA", "UTMA", "ISETP", "FSETP", "DSETP",
                        "HSETP", "PLOP3", "PSETP")):  # the comparisons write predicates alone
        return set()
    for operand in (o.strip() for o in i.args.split(",")):
        if _PRED.match(operand):
            continue
        m = _REG.match(operand)
        return set(range(int(m.group(1)), int(m.group(1)) + _width(i.op))) if m else set()
    return set()


def _walk(body: list[Instr], passes: int):
    """(pass, instruction, groups in flight) along ``passes`` trips through ``body`` in address order: a group is
    (the pass that issued it, the A registers its HGMMAs read); one ends at the HGMMA marked gsb0, and
    WARPGROUP.DEPBAR.LE gsb0, N leaves the last N in flight. Every instruction is taken as executed, a DEPBAR on a
    branch that may be skipped too (what a loop's every trip runs is what the checks below rely on)."""
    pending: list[tuple[int, set[int]]] = []
    open_group: set[int] = set()
    for trip in range(passes):
        for i in body:
            yield trip, i, pending + ([(trip, open_group)] if open_group else [])
            if i.op.startswith("HGMMA"):
                a = _REG.match(i.args.split(",")[1].strip())
                if a:
                    open_group = open_group | set(range(int(a.group(1)), int(a.group(1)) + 4))
                if "gsb0" in i.args:
                    pending.append((trip, open_group))
                    open_group = set()
            elif i.op.startswith("WARPGROUP.DEPBAR"):
                keep = int(i.args.rsplit(",", 1)[1].strip(), 0)
                pending = pending[len(pending) - keep:] if keep else []


def register_operand_hazards(body: list[Instr], passes: int = 2) -> list[Instr]:
    """The instructions of a loop body that write a register an HGMMA reads as its A operand (four registers from
    its second operand) while that HGMMA may still run (_walk). PTX leaves the A registers to the program until a
    wait covers them (wgmma.wait_group). The body runs ``passes`` times, so that a write early in the body meets an
    HGMMA of the previous trip."""
    return [i for _, i, groups in _walk(body, passes) if _written(i) & set().union(*(g for _, g in groups))]


def releases_under_previous_trip(body: list[Instr]) -> list[Instr]:
    """The mbarrier arrivals (SYNCS.ARRIVE: a ring slot handed back to the producer) of a mainloop's second trip
    made while a wgmma group the first trip issued may still run: where a trip is one k-tile, that k-tile's slot is
    released before the tensor cores are done reading it."""
    return [i for trip, i, groups in _walk(body, 2)
            if trip == 1 and i.op.startswith("SYNCS.ARRIVE") and any(t == 0 for t, _ in groups)]
