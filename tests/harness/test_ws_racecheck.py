"""The racecheck probe of Triton's warp_specialize protocol (gemmlab.harness.probes.ws_racecheck) without a GPU: its
variants are named and chosen as the command line asks; each CUDA copy compiles for sm_90a with exactly the parts it
claims (setmaxnreg, the default partition's own barrier and its id, the mbarrier, word or byte stores, the
partitions' barriers); copy_tc3 and copy_tc8 have the protocol ptxas made of gluon/tc3 and gluon/tc8 (the same
barriers, register counts and state offsets); and the Gluon variants compile to Triton's protocol with no other
shared memory than its state bytes (and, in gluon_mbarrier, the mbarrier).

What cannot be checked here: what racecheck reports for each of them, which is what the probe is for (on a GPU,
under compute-sanitizer), and that the kernels run to the end (the states each worker warp read)."""
import collections
import re

import pytest
import sass

from gemmlab.errors import InvalidConfigError
from gemmlab.harness.probes import ws_racecheck as probe
from gemmlab.kernels.gluon.launch import kernel as gluon_kernel
from gemmlab.kernels.registry import get_kernel

needs_sass = pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
needs_triton = pytest.mark.skipif(gluon_kernel.triton_refusal("") is not None,
                                  reason=f"needs Triton {gluon_kernel.SUPPORTED} (gemmlab[gluon])")
COPIES = [v for v in probe.VARIANTS.values() if v.kind == "copy"]


def _function(listing: str, name: str) -> list[sass.Instr]:
    """The instructions of one function of a cuobjdump listing."""
    parts = re.split(r"Function : (\w+)", listing)
    return sass.instructions(dict(zip(parts[1::2], parts[2::2]))[name])


def _offset(operand: str) -> str:
    """A shared-memory operand without its registers: [UR6+0x300b0] and [R2+UR7+0x300b0] are [0x300b0]."""
    return re.sub(r"\[(?:\w+\+)*", "[", operand)


def _protocol(instrs: list[sass.Instr]) -> dict:
    """What the racecheck question turns on: the named barriers (operands and how many), setmaxnreg, the state
    bytes' loads (their offsets), the stores to shared memory (width and offset) and the mbarrier instructions."""
    count = collections.Counter
    return {"bar": count(i.args for i in instrs if i.op.startswith("BAR.SYNC")),
            "regs": count(f"{i.op.split('.')[1]} {i.args.split()[-1]}" for i in instrs
                          if i.op.startswith("USETMAXREG")),
            "state_loads": {_offset(i.args.split(", ", 1)[1]) for i in instrs if i.op == "LDS.U8"},
            "stores": count(f"{i.op} {_offset(i.args.split(',')[0])}" for i in instrs if i.op.startswith("STS")),
            "mbarrier": any(i.op.startswith("SYNCS") for i in instrs)}


def _copy_protocol(name: str, tmp_path) -> dict:
    variant = probe.VARIANTS[name]
    return _protocol(_function(sass.sass(probe.compile_copy(variant).cubin, tmp_path), name))


def test_every_variant_by_default_and_an_unknown_one_refused_by_name(capsys):
    assert probe.select([]) == list(probe.VARIANTS.values())
    assert [v.name for v in probe.select(["control", "copy_tc3"])] == ["control", "copy_tc3"]
    with pytest.raises(InvalidConfigError, match="no racecheck variant copy_tc9; known: level_tc3, gluon_bare"):
        probe.select(["copy_tc9"])
    assert probe.main(["copy_tc9"]) == 2
    assert "no racecheck variant copy_tc9" in capsys.readouterr().err
    # --list says what each runs and tests, and launches nothing (there is no GPU here)
    assert probe.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == list(probe.VARIANTS)
    assert "copy_tc3_noregs: without setmaxnreg [ws_protocol.cu:copy_tc3_noregs, 384 threads," in lines[4]
    assert "REGS=0" in lines[4] and "STATES=1,1,0,2" in lines[4] and "ENTRY" not in lines[4]


def test_each_copy_changes_one_part_of_copy_tc3_and_is_its_own_kernel():
    base = probe.VARIANTS["copy_tc3"].defines
    for v in COPIES:
        assert v.defines["ENTRY"] == v.name
        changed = {k for k in base if v.defines[k] != base[k]} - {"ENTRY"}
        one_part = {"PARTS", "STATES", "PART_REGS"}  # the workers' partitions, as one part
        if v.name == "copy_tc3_onepart":
            assert changed == one_part
        elif v.name == "copy_tc3_balanced":  # copy_tc3_onepart's, with the workers' own barrier
            assert changed == one_part | {"WORKER_BAR"}
        elif v.name.startswith("copy_tc3_"):
            assert len(changed) == 1, (v.name, changed)
    assert probe.VARIANTS["copy_tc3"].threads == 384 and probe.VARIANTS["copy_tc8"].threads == 512
    assert probe.VARIANTS["copy_tc3"].smem == 196784 + 16  # the 4 state bytes, rounded up to 16


def test_worker_reads_splits_the_kernels_output():
    out = [1, 0, 1, 2, 0, 0, 3, 1, 3, 2, 3, 0, 3]
    assert probe.worker_reads(out, 4) == {"default ran": True, "partition": [0, 1, 2, 0],
                                          "states read": [(0, 3), (1, 3), (2, 3), (0, 3)]}


@needs_sass
@pytest.mark.parametrize("variant", COPIES, ids=lambda v: v.name)
def test_each_copy_compiles_with_the_parts_it_claims(variant, tmp_path):
    d = variant.defines
    compiled = probe.compile_copy(variant)
    assert compiled.report.spills == 0
    got = _protocol(_function(sass.sass(compiled.cubin, tmp_path), variant.name))
    default_threads = 32 * d["DEFAULT_WARPS"]
    # barrier 1 over the CTA: the default partition's 4, the workers' loop head, their default destination's 2, and
    # each partition's entry and exit
    assert got["bar"]["0x1"] == 4 + 1 + 2 + 2 * d["PARTS"]
    own = f"{d['OWN_BAR_ID']:#x}, {default_threads:#x}"
    assert got["bar"][own] == (3 if d["OWN_BAR"] else 0)
    workers = f"0x3, {32 * d['WORKER_WARPS']:#x}"
    assert got["bar"][workers] == (2 if d["WORKER_BAR"] else 0)  # at the loop head and in the partition
    assert set(got["bar"]) == {"0x1"} | ({own} if d["OWN_BAR"] else set()) | ({workers} if d["WORKER_BAR"] else set())
    # the default partition's up, down and up again; the workers' down at the loop head, and each partition's to its
    # count and back (a raise is a TRY_ALLOC, a cut a DEALLOC, the same count a raise, as Triton's)
    regs = {f"TRY_ALLOC {d['REG_DEFAULT']:#x}", f"DEALLOC {d['REG_DEFAULT_PART']:#x}", f"DEALLOC {d['REG_LOW']:#x}"}
    for r in d["PART_REGS"]:
        regs |= {f"DEALLOC {r:#x}", f"TRY_ALLOC {d['REG_LOW']:#x}"} if r < d["REG_LOW"] else {f"TRY_ALLOC {r:#x}"}
    assert set(got["regs"]) == (regs if d["REGS"] else set())
    assert got["mbarrier"] == bool(d["MBAR"])
    # each worker warp loads its byte, at STATE + its index among the workers; the default partition stores them
    assert got["state_loads"] == {f"[{d['STATE'] - d['DEFAULT_WARPS']:#x}]"}
    widths = {s.split()[0] for s in got["stores"]}
    assert widths == ({"STS.U8"} if not d["WIDE"] else {"STS"} | ({"STS.64"} if d["WORKER_WARPS"] > 4 else set()))
    assert all(n == 2 for n in got["stores"].values())  # each store twice: the start states, then the exit


@needs_sass
def test_the_control_meets_at_syncthreads_only(tmp_path):
    variant = probe.VARIANTS["control"]
    got = _protocol(_function(sass.sass(probe.compile_copy(variant).cubin, tmp_path), "control"))
    assert got["bar"] == {"0x0": 3} and not got["regs"] and not got["mbarrier"]


@needs_triton
@needs_sass
@pytest.mark.parametrize("level, copy", [("gluon/tc3_warp_specialized_bf16", "copy_tc3"),
                                         ("gluon/tc8_block_scaled_fp8", "copy_tc8")])
def test_the_copy_has_the_levels_protocol(level, copy, tmp_path):
    """The copy's barrier 1 (how many, at which places the counts imply), its register counts, the default
    partition's own barrier, its state offsets, states and store widths are those Triton and ptxas made of the
    level."""
    compiled = get_kernel(level).gluon_compile()
    entry = compiled.metadata.name
    got = _protocol(_function(sass.sass(compiled.asm["cubin"], tmp_path), entry))
    want = _copy_protocol(copy, tmp_path)
    assert got["bar"]["0x1"] == want["bar"]["0x1"]
    own = [b for b in want["bar"] if b != "0x1"]
    assert own and all(got["bar"][b] for b in own)  # the level meets its own barrier more often: the ring's inits
    assert want["regs"] == got["regs"]  # every setmaxnreg at the same count, as often
    # the level's state bytes (its PTX: the start states, then the exit state, a word or two at a time) are the copy's
    d = probe.VARIANTS[copy].defines
    stores = re.findall(r"st\.shared(?:\.v2)?\.b32 \t\[global_smem\+(\d+)\], \{?([\d, ]+)\}?;", compiled.asm["ptx"])
    words = [int(w) for off, ws in stores if int(off) >= d["STATE"] for w in ws.split(", ")]
    assert min(int(off) for off, _ in stores if int(off) >= d["STATE"]) == d["STATE"]
    states = [w >> (8 * b) & 0xFF for w in words for b in range(4)]
    assert states == [*d["STATES"], *[d["PARTS"]] * d["WORKER_WARPS"]]
    assert want["state_loads"] <= got["state_loads"]
    state_stores = {s for s in got["stores"] if s.endswith(tuple(k.split()[1] for k in want["stores"]))}
    assert state_stores == set(want["stores"])
    assert got["mbarrier"]


@needs_triton
@needs_sass
@pytest.mark.parametrize("name", ["gluon_bare", "gluon_mbarrier"])
def test_the_gluon_variants_are_triton_protocol_and_nothing_else_in_shared_memory(name, tmp_path):
    compiled = probe.compile_gluon(probe.VARIANTS[name])
    ptx = compiled.asm["ptx"]
    assert ".target sm_90a" in ptx and compiled.metadata.num_warps == 8
    # the switch loop: barrier 1 over the CTA, a worker's state byte, its partition or the exit chosen from it
    assert ptx.count("barrier.sync \t1;") == 4 + 1 + 2 + 2  # one worker partition
    state = re.findall(r"st\.shared\.b32 \t\[global_smem\+(\d+)\], (\d+);", ptx)
    assert [v for _, v in state] == ["0", str(0x01010101)]  # the 4 workers' partition (0), then the exit (1)
    assert len({off for off, _ in state}) == 1
    assert "setmaxnreg.dec.sync.aligned.u32 \t24;" in ptx
    instrs = _function(sass.sass(compiled.asm["cubin"], tmp_path), name)
    got = _protocol(instrs)
    assert set(got["stores"]) == {f"STS [{int(state[0][0]):#x}]"} and len(got["state_loads"]) == 1
    shared = [i for i in instrs if i.op.startswith(("LDS", "STS", "LDSM", "STSM", "ATOMS"))]
    assert len(shared) == 3  # the states stored twice and loaded once: no other shared memory
    assert got["mbarrier"] == (name == "gluon_mbarrier")
    assert ("0x0, 0x80" in got["bar"]) == (name == "gluon_mbarrier")  # Triton's barrier after the mbarrier's init
