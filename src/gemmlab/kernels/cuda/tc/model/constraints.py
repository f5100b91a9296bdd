"""The parameter errors of a wgmma level: tile shapes, the ring, registers, clusters and each source option."""
from __future__ import annotations

from gemmlab.kernels.cuda.tc.model.budget import SMEM_LIMIT, launch_registers, smem_bytes
from gemmlab.kernels.cuda.tc.model.stream_k import SK_FILL, SK_SKIP_FILL
from gemmlab.kernels.cuda.tc.model.tiles import b_box_rows

# Options that one source reads (the levels that take them name them in wgmma_constraints' ``options``)
SOURCE_OPTIONS = {"EPI_LEND": "tc4 FP8's BF16 C staged in the tile's last ring slot too",
                  "HALVES": "tc8's k-tile wgmma in two halves, each promoted while the other runs"}


def wgmma_constraints(p: dict, specialized: bool, swap_ab: bool = False, options: tuple = (),
                      off_atom: tuple = ()) -> list[str]:
    """The parameter errors of a wgmma level. With ``swap_ab`` (tc5) the wgmma tile is Cᵀ: the consumer
    warpgroups split BN (64 C columns each) and BM is the wgmma N; otherwise they split BM and BN is the N.
    ``options``: the SOURCE_OPTIONS this level's source reads; ``off_atom``: the BN widths off the 64-column atom
    its types have wgmma shapes for (tc4's 16-bit and FP8 builds: tiles.OFF_ATOM_WIDTHS), C stored from registers."""
    e = []
    bm, bn, stages = p["BM"], p["BN"], p["STAGES"]
    split, wide = ("BN", "BM") if swap_ab else ("BM", "BN")  # names of the split side and of the wgmma N
    split_v, wide_v = p[split], p[wide]
    if split_v not in (64, 128, 192, 256):
        e.append(f"{split}={split_v}: each consumer warpgroup owns 64 of them, so {split} must be 64, 128, 192 or 256")
    odd = not swap_ab and bn in off_atom
    if (wide_v not in (64, 128, 192, 256) and not odd) or (swap_ab and wide_v == 192):
        e.append(f"{wide}={wide_v}: wgmma shapes used here are n64, n128, n192 (not tc5) and n256"
                 + (f", and {', '.join(f'n{w}' for w in off_atom)} on tc4" if off_atom else ""))
    if odd and (p.get("EPI_TMA", 0) or p.get("EPI_DEFER", 0) or p.get("BATCHED", 0)):
        e.append(f"BN={bn}: a tile width off the 64-column atom stores C from registers (EPI_TMA=0, EPI_DEFER=0: "
                 "the TMA epilogue's boxes and held boxes are whole atoms of 16-bit C), and no batch runs it")
    if odd and p.get("NARROW_BN", 0):
        e.append(f"BN={bn}: a tile width off the 64-column atom is pinned, so NARROW_BN=0 (else the narrower tile "
                 "would run where it fills the last wave better)")
    rows = p.get("A_ROWS") or bm  # 0: the tile's rows
    if rows != bm and (swap_ab or rows % 8 or not 8 <= rows <= bm):
        e.append(f"A_ROWS={rows}: " + ("a swapped level's A is its tile's BM rows" if swap_ab else
                                      f"the rows of A's box, a multiple of 8 from 8 to BM={bm}"))
    if stages < 2:
        e.append(f"STAGES={stages}: the ring needs at least 2 slots to overlap loads with math")
    if smem_bytes(p) > SMEM_LIMIT:
        e.append(f"{stages} stages of {bm}x{bn} tiles need {smem_bytes(p)} bytes of shared memory, "
                 f"past the {SMEM_LIMIT}-byte limit")
    warpgroups = split_v // 64 + (1 if specialized else 0)
    if warpgroups * 128 > 1024:
        e.append(f"{split}={split_v} needs {warpgroups * 128} threads, past 1024")
    if specialized:
        consumer, producer = p.get("CONSUMER_REGS", 232), p.get("PRODUCER_REGS", 40)
        if consumer % 8 or producer % 8 or not (24 <= producer <= consumer <= 256):
            e.append("setmaxnreg counts must be multiples of 8 in 24..256, producer <= consumer")
        pool = launch_registers(warpgroups * 128)
        if consumer * 128 * (split_v // 64) + producer * 128 > pool:
            e.append(f"{split_v // 64} consumer warpgroups at {consumer} registers and a producer at {producer} "
                     f"exceed the {pool} registers the block holds at launch (setmaxnreg.inc would wait forever)")
        if wide_v // 2 + 40 > consumer:
            e.append(f"{wide}={wide_v} needs {wide_v // 2} accumulator registers per thread, too many for {consumer}")
    if swap_ab:  # the CN CTAs of a cluster sit side by side along N and split the A tile's rows
        if p.get("CM", 1) != 1:
            e.append("tc5 clusters run along N (CN), not M")
        if p.get("CN", 1) not in (1, 2):
            e.append(f"CN={p.get('CN')}: clusters of 1 or 2 CTAs along N")
    else:  # the CM CTAs of a cluster sit one above the other along M and split the B tile's 64-column boxes
        cm = p.get("CM", 1)
        if cm not in (1, 2):
            e.append(f"CM={cm}: clusters of 1 or 2 CTAs along M")
        elif p["BN"] // b_box_rows(p["BN"]) < cm:
            e.append(f"CM={cm}: each CTA of the cluster loads at least one of the {p['BN'] // b_box_rows(p['BN'])} "
                     f"B boxes (BN={p['BN']})")
    if p.get("GROUP_M", 1) < 1:
        e.append("GROUP_M must be at least 1")
    if p.get("STREAM_K", 0) not in (0, 1):
        e.append(f"STREAM_K={p.get('STREAM_K')}: 0 (whole tiles) or 1 (stream-K tail)")
    elif p.get("STREAM_K", 0) and p.get("CM", 1) * p.get("CN", 1) != 1:
        e.append("STREAM_K=1 needs clusters off (CM=1, CN=1): the CTAs of a cluster share multicast k-tiles, so "
                 "they would all have to walk the same units, which the per-CTA stream-K ranges do not")
    if not 0 <= p.get("SK_FILL", SK_FILL) <= p.get("SK_SKIP_FILL", SK_SKIP_FILL) <= 100:
        e.append(f"SK_FILL={p.get('SK_FILL', SK_FILL)}, SK_SKIP_FILL={p.get('SK_SKIP_FILL', SK_SKIP_FILL)}: "
                 "percentages of the grid, 0 <= SK_FILL <= SK_SKIP_FILL <= 100")
    if p.get("EPI_TMA", 0) not in (0, 1):
        e.append(f"EPI_TMA={p.get('EPI_TMA')}: 0 (C stored from registers) or 1 (through shared memory and TMA)")
    elif p.get("EPI_TMA", 0) and (swap_ab or not specialized):
        e.append("EPI_TMA=1 is an option of the tc4_persistent.cu source (tc4, tc6 BF16)")
    if p.get("EPI_BOXES", 2) < 2 or (p.get("EPI_BOXES", 2) != 2 and not p.get("EPI_TMA", 0)):
        e.append(f"EPI_BOXES={p.get('EPI_BOXES')}: staging boxes per consumer warpgroup of the EPI_TMA=1 "
                 "epilogue, at least 2")
    for name, value in SOURCE_OPTIONS.items():
        if p.get(name, 0) not in (0, 1):
            e.append(f"{name}={p.get(name)}: 0 or 1 ({value})")
        elif p.get(name, 0) and name not in options:
            e.append(f"{name}=1 ({value}) is not an option of this level's source")
    if p.get("C_TRANSPOSED", 0) not in (0, 1):
        e.append(f"C_TRANSPOSED={p.get('C_TRANSPOSED')}: 0 (C as the kernel's product) or 1 (its transpose)")
    elif p.get("C_TRANSPOSED", 0) and (p.get("EPI_TMA", 0) or p.get("EPI_DEFER", 0)):
        # tc4's store_acc, and on a swapped level (A_IN_REGS's kernel) tc_swap.cuh's store_acc_t
        e.append("C_TRANSPOSED=1 stores each element from registers: EPI_TMA=0, EPI_DEFER=0")
    if p.get("EPI_LEND", 0) and not p.get("EPI_TMA", 0):
        e.append("EPI_LEND=1 stages C in a ring slot for the TMA-store epilogue (EPI_TMA=1)")
    defer = p.get("EPI_DEFER", 0)
    if defer not in range(5):
        e.append(f"EPI_DEFER={defer}: how many of a tile's 64-column boxes of C wait for the next tile's first "
                 "k-tiles, 0 to 4")
    elif defer and not p.get("EPI_TMA", 0):  # and holds none where C is FP32 (WgmmaKernel.defines)
        e.append(f"EPI_DEFER={defer} holds boxes of 16-bit C for the TMA-store epilogue (EPI_TMA=1)")
    elif defer:
        if p.get("EPI_LEND", 0):
            e.append(f"EPI_DEFER={defer} with EPI_LEND=1: both move a tile's last boxes of C; one or the other")
        if p.get("HALVES", 0):
            e.append(f"EPI_DEFER={defer} with HALVES=1: the halves' loop has no first k-tile of its own to store the "
                     "held boxes under")
        if p.get("STREAM_K", 0):
            e.append(f"EPI_DEFER={defer} with STREAM_K=1: the held words spill beside the stream-K walk")
    if p.get("EPI_ASYNC", 0) not in (0, 1):  # 1: where a build's fused epilogue allows (WgmmaKernel.defines)
        e.append(f"EPI_ASYNC={p.get('EPI_ASYNC')}: 0 (the consumers apply a fused epilogue) or 1 (tc4's producer "
                 "warps, for a build that holds boxes of 16-bit C)")
    if p.get("EPI_GAP", 1) not in range(1, 17):
        e.append(f"EPI_GAP={p.get('EPI_GAP')}: the k-tiles between two held boxes of C, 1 to 16")
    if p.get("STREAM_K", 0) and not specialized:
        e.append("STREAM_K=1 is an option of the persistent walk (tc4, tc5 sources)")
    narrow = p.get("NARROW_BN", 0)
    if narrow and (swap_ab or narrow not in (64, 128, 192, 256) or narrow >= p["BN"]
                   or narrow // 64 < p.get("CM", 1)):
        e.append(f"NARROW_BN={narrow}: a wgmma N (64, 128, 192) below BN={p['BN']} with a B box per CTA of the "
                 "cluster, on the tc4_persistent.cu source")
    narrow_m = p.get("NARROW_BM", 0)
    if narrow_m and (not swap_ab or narrow_m not in (64, 128, 192)):
        e.append(f"NARROW_BM={narrow_m}: a wgmma N (64, 128, 192), on a swapped level (tc5's source), whose BM is "
                 "the wgmma's N (at or above BM it changes nothing)")
    rnd = p.get("TF32_ROUND", 0)
    if rnd not in (0, 1, 2, 3):
        e.append(f"TF32_ROUND={rnd}: 0 (truncated by the tensor cores), 1 (register operands rounded), 2 (and the "
                 "shared-memory ones, by the producer's pass) or 3 (and A, by a pre-pass)")
    elif rnd in (1, 3) and not swap_ab:
        e.append(f"TF32_ROUND={rnd} rounds the operand that passes through registers, which only tc5's swap has")
    elif rnd == 2 and not specialized:
        e.append("TF32_ROUND=2 needs the warp-specialized levels, whose warps round the shared-memory tiles")
    if p.get("TMA_ROUND", 0) not in (0, 1) or (p.get("TMA_ROUND", 0) and rnd):
        e.append(f"TMA_ROUND={p.get('TMA_ROUND')}: 0, or 1 for a TF32 build whose operands reach shared memory by TMA "
                 "and are not rounded there (TF32_ROUND=0): the maps round them")
    if p.get("ROUND_B_SMEM", 0) and (rnd != 2 or swap_ab):
        e.append("ROUND_B_SMEM=1 (the plan's choice for a K-major B in tc4) needs TF32_ROUND=2")
    if p.get("TIMELINE", 0) not in (0, 1):
        e.append(f"TIMELINE={p.get('TIMELINE')}: 0 or 1 (stamp each warpgroup's cycles for gemmlab timeline)")
    elif p.get("TIMELINE", 0) and (swap_ab or not specialized or p.get("STREAM_K", 0)):
        e.append("TIMELINE=1 is an option of the tc4 and tc8 sources walking whole tiles (tc4, tc8, not tc6)")
    return e
