"""The FP8 levels' options (operand formats, output type, tc8's scales) and the parameter errors they add."""
from __future__ import annotations

from gemmlab.kernels.cuda.tc.model.tiles import OFF_ATOM_WIDTHS
from gemmlab.problem import get_precision


def is_fp8(precision: str) -> bool:
    return get_precision(precision).scaling is not None


# the FP8 levels' operand formats and output type, and tc8's per-tensor scales, 0 or 1 each
FP8_OPTIONS = ("A_E5M2", "B_E5M2", "OUT_BF16", "PER_TENSOR")


def fp8_constraints(p: dict, promoted: bool) -> list[str]:
    """The parameter errors of an FP8 level beyond wgmma_constraints (``promoted``: tc8's source, which promotes
    every k-tile into a second accumulator set)."""
    e = [f"{name}={p.get(name)}: 0 or 1" for name in FP8_OPTIONS if p.get(name, 0) not in (0, 1)]
    if p.get("PER_TENSOR", 0) and not promoted:
        e.append("PER_TENSOR=1 is an option of tc8's source (its scales through zero strides)")
    # n64: tc9's narrow tile of tokens, whose C leaves from registers (C_TRANSPOSED); tc4's epilogue boxes are not
    # built at that width
    widths = (128, 192) if promoted else (64, 128, 192, 256) if p.get("C_TRANSPOSED", 0) else (128, 192, 256)
    if not promoted and not p.get("EPI_TMA", 0) and not p.get("C_TRANSPOSED", 0):  # tc4's, C from registers
        widths += OFF_ATOM_WIDTHS
    for name in ("BN", "NARROW_BN"):
        if p.get(name, 0) and p[name] not in widths:
            e.append(f"{name}={p[name]}: " + ("two accumulator sets of BN/2 registers must fit beside each other in "
                                              "a consumer thread's registers (232 at most), and a tile may straddle at "
                                              "most two 128-wide blocks of B's scales: 128 or 192" if promoted else
                                              "the fp8 wgmma shapes here are n128, n192 and n256 (n64 with "
                                              "C_TRANSPOSED=1; n144 and n224 with C from registers, EPI_TMA=0)"))
    if promoted and p.get("BN") in widths and p["BN"] > p.get("CONSUMER_REGS", 232) - 32:
        e.append(f"BN={p['BN']}: the two accumulator sets take BN of a consumer thread's CONSUMER_REGS="
                 f"{p.get('CONSUMER_REGS', 232)} registers, which must leave 32 for the rest")
    defer = p.get("EPI_DEFER", 0)
    if promoted and defer:  # beside the two accumulator sets at 160 registers
        if defer > 1:
            e.append(f"EPI_DEFER={defer}: tc8's consumers hold one box of C beside their two accumulator sets; more "
                     "spill at 160 registers")
        if p.get("SCALE_TMA", 0) == 0:
            e.append(f"EPI_DEFER={defer} with SCALE_TMA=0{' (PER_TENSOR)' if p.get('PER_TENSOR', 0) else ''}: the "
                     "held box spills beside the scales' loads at 160 registers")
    if promoted and p.get("STREAM_K", 0):  # the stream-K walk's state beside what each build already holds spills
        if p.get("SCALE_TMA", 0) == 2:
            e.append("STREAM_K=1 with SCALE_TMA=2: producer warp 1's copy of the stream-K walk spills at the "
                     "producer's 32 registers; the split launches take SCALE_TMA=1")
        elif p.get("SCALE_TMA", 0) == 0 and not p.get("PER_TENSOR", 0):
            e.append("STREAM_K=1 with SCALE_TMA=0: the consumers' scale loads beside the stream-K walk spill at "
                     "160 registers; the split launches take SCALE_TMA=1")
        if p.get("HALVES", 0):
            e.append("STREAM_K=1 with HALVES=1: the two halves in flight beside the stream-K walk spill at 160 "
                     "registers")
    halves = p.get("HALVES", 0)
    if halves and p.get("BN") != 128:
        e.append(f"HALVES=1 with BN={p.get('BN')}: the halves are wgmma m64n64, so BN=128")
    elif halves and p.get("SCALE_TMA", 0) != 1 and not p.get("PER_TENSOR", 0):
        e.append(f"HALVES=1 with SCALE_TMA={p.get('SCALE_TMA', 0)}: beside the two halves in flight, the scales' "
                 "loads (0) or their ring's positions (2) spill at 160 registers")
    tma = p.get("SCALE_TMA", 0)
    if p.get("SCALE_GATE", 0) not in (0, 1):
        e.append(f"SCALE_GATE={p.get('SCALE_GATE')}: 0 (the consumers wait on the scale ring) or 1 (producer warp 0 "
                 "does, before it arms each k-tile's barrier)")
    elif p.get("SCALE_GATE", 0) and tma != 2:
        e.append(f"SCALE_GATE=1 with SCALE_TMA={tma}: it moves the wait on the scale ring (SCALE_TMA=2) to the "
                 "producer")
    if tma not in (0, 1, 2):
        e.append(f"SCALE_TMA={tma}: 0 (block scales loaded by the consumers), 1 (copied with each k-tile by TMA) or "
                 "2 (copied by TMA into a ring of their own)")
    elif tma and not promoted:
        e.append(f"SCALE_TMA={tma} is an option of tc8's source (its block scales copied into shared memory)")
    elif tma and p.get("PER_TENSOR", 0):
        e.append(f"SCALE_TMA={tma} copies block scales for each k-tile; PER_TENSOR=1 has one scale per operand")
    return e
