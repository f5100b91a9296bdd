"""tests/sass.py's check of wgmma's register operand: a write to a register an HGMMA still in flight reads."""
import sass

LISTING = """
        /*0100*/                   LDS R88, [R8] ;
        /*0110*/                   WARPGROUP.ARRIVE ;
        /*0120*/                   HGMMA.64x128x8.F32.TF32 R24, R88, gdesc[UR4], R24, gsb0 ;
        /*0130*/                   {wait}
        /*0140*/                   LDS R92, [R9] ;
        /*0150*/                   WARPGROUP.ARRIVE ;
        /*0160*/                   HGMMA.64x128x8.F32.TF32 R24, R92, gdesc[UR4], R24, gsb0 ;
        /*0170*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0180*/               @P0 BRA 0x100 ;
"""


def body(wait: str):
    instrs = sass.instructions(LISTING.format(wait=wait))
    (lo, hi), = sass.loops(instrs)
    return sass.between(instrs, lo, hi)


def test_a_load_into_registers_of_a_retired_group_is_safe():
    # a DEPBAR of 1 after each HGMMA: each load refills registers whose group the one before it retired
    assert sass.register_operand_hazards(body("WARPGROUP.DEPBAR.LE gsb0, 0x1 ;")) == []


def test_a_load_while_the_group_reading_it_runs_is_found():
    # no wait between the HGMMAs: the second load of a trip meets R92's group of the trip before, still in flight
    assert [(i.addr, i.op) for i in sass.register_operand_hazards(body("NOP ;"))] == [(0x140, "LDS")]


def test_a_load_into_registers_an_hgmma_in_flight_reads_is_found():
    # with the DEPBAR keeping 2 groups, R88's group is still in flight when the next trip reloads R88
    listing = LISTING.replace("DEPBAR.LE gsb0, 0x1", "DEPBAR.LE gsb0, 0x2").format(wait="NOP ;")
    instrs = sass.instructions(listing)
    (lo, hi), = sass.loops(instrs)
    hazards = sass.register_operand_hazards(sass.between(instrs, lo, hi))
    assert [(i.addr, i.op) for i in hazards] == [(0x100, "LDS"), (0x140, "LDS")]


def test_wide_writes_and_an_open_group_count():
    # an LDS.128 into R90..R93 overlaps R92..R95 of the HGMMA issued just before it (no commit yet: no gsb0)
    listing = """
        /*0100*/                   HGMMA.64x128x8.F32.TF32 R24, R92, gdesc[UR4], R24 ;
        /*0110*/                   LDS.128 R88, [R8] ;
        /*0120*/                   LDS.128 R90, [R8] ;
        /*0130*/                   HGMMA.64x128x8.F32.TF32 R24, R96, gdesc[UR4], R24, gsb0 ;
        /*0140*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
    """
    hazards = sass.register_operand_hazards(sass.instructions(listing), passes=1)
    assert [i.addr for i in hazards] == [0x120]


def test_writes_after_a_predicate_and_wide_writes_count():
    listing = """
        /*0100*/                   HGMMA.64x128x8.F32.TF32 R24, R92, gdesc[UR4], R24, gsb0 ;
        /*0110*/                   SHFL.IDX PT, R95, R3, RZ, 0x1f ;
        /*0120*/                   IMAD.WIDE.U32 R91, R4, R5, RZ ;
        /*0130*/                   IMAD.WIDE.U32 R90, R4, R5, RZ ;
        /*0140*/                   ISETP.GE.AND P0, PT, R93, R2, PT ;
        /*0150*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0160*/                   SHFL.IDX PT, R95, R3, RZ, 0x1f ;
    """
    hazards = sass.register_operand_hazards(sass.instructions(listing), passes=1)
    # R95 after SHFL's predicate; R91..R92 and not R90..R91; ISETP writes only P0 and PT
    assert [i.addr for i in hazards] == [0x110, 0x120]


def test_a_slot_released_while_the_trip_before_may_still_read_it_is_found():
    def body(release_after: int):
        steps = []
        for kk in range(4):
            steps.append(f"HGMMA.64x128x8.F32.TF32 R24, R{88 + 4 * kk}, gdesc[UR4], R24, gsb0 ;")
            steps.append("WARPGROUP.DEPBAR.LE gsb0, 0x2 ;")
            if kk == release_after:
                steps.append("SYNCS.ARRIVE.TRANS64.A1T0 RZ, [R13+URZ], RZ ;")
        lines = [f"/*{0x100 + 16 * n:04x}*/ {text}" for n, text in enumerate(steps)]
        return sass.instructions("\n".join(lines))
    # two groups in flight: after step 1's wait the previous trip's last step is done, after step 0's it may not be
    assert sass.releases_under_previous_trip(body(1)) == []
    assert [i.op for i in sass.releases_under_previous_trip(body(0))] == ["SYNCS.ARRIVE.TRANS64.A1T0"]
