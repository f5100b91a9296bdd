"""verify --sanitize's racecheck rows and Triton's warp_specialize protocol: the state accesses found in each compiled
build of a Gluon level are the PCs racecheck's real reports name (data/racecheck_tc8.txt, gluon/tc8's both C types,
from a verify run on the H200; data/racecheck_tc3.txt, gluon/tc3's BF16 C, from the probe's run); a level whose every
reported pair is a state load against a state store of its builds is clean with its hazards counted, any other pair
keeps it in error; a CUDA level's reports are not read that way; without the SASS nothing is told apart. Each row
counts the reports of its own kernel.

What cannot be checked here: that the run on the GPU loads the builds compiled here (the same Triton, its own ptxas;
the data's offsets are the evidence that it does), and what racecheck reports of a build that the data lacks."""
import re
from pathlib import Path

import pytest

from gemmlab.harness import sweep
from gemmlab.harness.probes import ws_racecheck as probe
from gemmlab.harness.probes.ws_racecheck import StateAccesses
from gemmlab.harness.sweep import protocol_accesses, sanitizer_rows
from gemmlab.kernels.gluon.launch import kernel as gluon_kernel
from gemmlab.kernels.registry import get_kernel

DATA = Path(__file__).parent / "data"
TC3, TC8 = "gluon/tc3_warp_specialized_bf16", "gluon/tc8_block_scaled_fp8"
needs_sass = pytest.mark.skipif(gluon_kernel.triton_refusal("") is not None or probe.cuda_tool("nvdisasm") is None,
                                reason=f"needs Triton {gluon_kernel.SUPPORTED} (gemmlab[gluon]) and nvdisasm")


def _log(name: str) -> str:
    return (DATA / name).read_text()


def _pcs(log: str, entry: str, kind: str) -> set[int]:
    return {int(pc, 16) for pc in re.findall(rf"{kind} access at {entry}\+0x([0-9a-f]+)", log)}


def _hazards(log: str) -> int:
    return sum(int(n) for n in re.findall(r"\[(\d+) hazards?\]", log))


@pytest.fixture(scope="module")
def tc8_builds():
    return protocol_accesses([get_kernel(TC8)])


@needs_sass
@pytest.mark.parametrize("name, log", [(TC3, "racecheck_tc3.txt"), (TC8, "racecheck_tc8.txt")])
def test_the_state_accesses_found_in_each_build_are_the_pcs_racecheck_reports(name, log):
    spec, text = get_kernel(name), _log(log)
    builds = probe.level_state_accesses(spec)
    configurations = spec.configurations()
    assert len(builds) == len(configurations)  # BF16 and FP32 C (tc8: on each tile height)
    for b, c in zip(builds, configurations):
        # the worker loop's one load, the default partition's start and exit stores (tc8's 192 rows, three
        # consumer partitions: STS.64, STS)
        assert len(b.loads) == 1 and len(b.starts) == len(b.exits) == (2 if c.params["BM"] == 192 else 1)
        assert max(b.starts) < min(b.exits)
    # the log is of the 192-row builds (the first two), recorded before tc8 took 128-row tiles
    assert [c.params["BM"] for c in configurations[:2]] == [spec.params["BM"]] * 2
    bf16 = builds[0]
    assert spec.configurations()[0].params["OUT_BF16"] == 1
    assert _pcs(text, spec.entry, "Read") == bf16.loads
    writes = _pcs(text, spec.entry, "Write")
    if name == TC8:  # both C types ran: each build's stores, the FP32 build's earlier from the start states on
        fp32 = builds[1]
        assert writes == bf16.starts | bf16.exits | fp32.starts | fp32.exits and fp32.loads == bf16.loads
        assert max(fp32.starts) < min(bf16.starts)
        assert bf16.describe() == "load +0x100, start +0x45d0/+0x45f0, exit +0x5f30/+0x5f40"
    else:  # one CTA of the BF16 build: its exit store
        assert writes == bf16.exits


@needs_sass
def test_a_level_whose_every_pair_is_the_protocol_is_clean_with_its_hazards_counted(tc8_builds):
    log = _log("racecheck_tc8.txt")
    specs = [get_kernel("gluon/tc2_wgmma_tma_bf16"), get_kernel(TC8)]
    rows = {row.kernel: row for row in sanitizer_rows(specs, log, 3, tc8_builds)}
    tc8 = rows[TC8]
    assert tc8.clean and tc8.protocol_hazards == _hazards(log) == 175
    assert tc8.detail == ("racecheck: 175 hazards, all between Triton's warp_specialize state-byte stores and loads "
                          "(a false positive of racecheck: docs/gluon.md)")
    assert rows["gluon/tc2_wgmma_tma_bf16"].clean and rows["gluon/tc2_wgmma_tma_bf16"].protocol_hazards is None
    # the same log without the builds' PCs: every hazard an error, as before
    assert not sanitizer_rows(specs, log, 3)[1].clean


@needs_sass
@pytest.mark.parametrize("edit, hazards", [
    (("Write access at tc8_block_scaled_fp8+0x5e60", "Write access at tc8_block_scaled_fp8+0x5e70"), 1),  # not a store
    (("Read access at tc8_block_scaled_fp8+0x100", "Write access at tc8_block_scaled_fp8+0x100"), 1),  # a write there
    (("Read access at tc8_block_scaled_fp8+0x100", "Read access at tc8_block_scaled_fp8+0x45d0"), 1),  # the wrong side
])
def test_one_pair_elsewhere_keeps_the_level_in_error_and_says_how_many_were_the_protocols(edit, hazards, tc8_builds):
    log = _log("racecheck_tc8.txt")
    edited = log.replace(*edit, 1)
    assert edited != log
    row = sanitizer_rows([get_kernel(TC8)], edited, 3, tc8_builds)[0]
    assert not row.clean and row.protocol_hazards == 175 - hazards
    assert "8 reports in this kernel, 175 hazards" in row.detail
    assert f"{175 - hazards} of the hazards between Triton's warp_specialize" in row.detail


def test_a_pair_of_two_builds_or_any_other_report_is_no_protocol():
    """Hand-made PCs: a load of one build against a store of another is not the protocol's pair, nor is a report
    racecheck words otherwise (a hazard listed thread by thread, with --racecheck-report all), nor one of another
    kernel at the same PCs."""
    one, two = StateAccesses(frozenset({0x100}), frozenset({0x200}), frozenset({0x300})), \
        StateAccesses(frozenset({0x110}), frozenset({0x210}), frozenset({0x310}))
    protocol = {TC8: [one, two]}
    race = """========= Error: Race reported between Read access at tc8_block_scaled_fp8+0x{r:x} in tc8.py:85
=========     and Write access at tc8_block_scaled_fp8+0x{w:x} in tc8.py:107 [3 hazards]
========= 
"""

    def row_of(log):
        return sanitizer_rows([get_kernel(TC8)], log, 3, protocol)[0]

    assert row_of(race.format(r=0x100, w=0x300) + race.format(r=0x110, w=0x210)).clean
    assert not row_of(race.format(r=0x100, w=0x310)).clean
    thread_by_thread = """========= Error: Potential RAW hazard detected at __shared__ 0x304b0 in block (0,0,0) :
=========     Write Thread (191,0,0) at tc8_block_scaled_fp8+0x300 in tc8.py:75
=========     Read Thread (256,0,0) at tc8_block_scaled_fp8+0x100 in tc8.py:43
========= 
"""
    row = row_of(race.format(r=0x100, w=0x300) + thread_by_thread)
    assert not row.clean and row.protocol_hazards == 3
    # a CUDA level whose report names the same PCs: untouched, whatever the Gluon level's builds are
    cuda = get_kernel("cuda/v2_smem")
    log = race.format(r=0x100, w=0x300).replace("tc8_block_scaled_fp8", cuda.entry)
    row = sanitizer_rows([cuda], log, 3, {**protocol, cuda.name: [one]})[0]
    assert not row.clean and row.protocol_hazards is None
    assert row.detail.startswith("1 report in this kernel, 3 hazards")


def test_without_the_sass_nothing_is_told_apart(monkeypatch):
    monkeypatch.setattr(probe, "cuda_tool", lambda name: None)
    found = protocol_accesses([get_kernel(TC8)])
    why = found[TC8]
    assert isinstance(why, str) and ("nvdisasm" in why or "Triton" in why)
    row = sanitizer_rows([get_kernel(TC8)], _log("racecheck_tc8.txt"), 3, found)[0]
    assert not row.clean and row.protocol_hazards is None
    assert row.detail.endswith(f"none told apart as warp_specialize's protocol: {why}")


def test_each_row_counts_the_reports_of_its_own_kernel():
    specs = [get_kernel("cuda/v1_naive"), get_kernel("cuda/v2_smem"), get_kernel("cuda/tc2_wgmma_tma_bf16")]
    report = """========= Invalid __global__ write of size 4 bytes
=========     at {entry}+0x1b0
=========     by thread (0,9,0) in block (0,3,0)
=========     Address 0x7f0 is out of bounds
=========
"""
    log = ("========= COMPUTE-SANITIZER\n" + report.format(entry=specs[0].entry) + "some output of the program\n"
           + 2 * report.format(entry=specs[1].entry) + "========= ERROR SUMMARY: 3 errors\n")
    rows = sanitizer_rows(specs, log, 3)
    assert [(row.clean, row.detail.split(" (")[0]) for row in rows] == [
        (False, "1 report in this kernel"), (False, "2 reports in this kernel"), (True, "0 reports in this kernel")]
    assert all(row.detail.endswith("(the run's ERROR SUMMARY: 3 errors)") for row in rows)


@needs_sass
def test_sanitize_reads_the_builds_under_racecheck_only(monkeypatch):
    """sanitize hands racecheck's log the PCs of the Gluon levels it names; memcheck's reports are never told apart."""
    log = _log("racecheck_tc8.txt")

    class Done:
        stdout, stderr, returncode = log, "", 3

    which, run = sweep.shutil.which, sweep.subprocess.run  # nvdisasm is still found and run
    sanitizer = "/opt/cuda/bin/compute-sanitizer"
    monkeypatch.setattr(sweep.shutil, "which", lambda name: sanitizer if name == "compute-sanitizer" else which(name))
    monkeypatch.setattr(sweep.subprocess, "run", lambda cmd, **k: Done if cmd[0] == sanitizer else run(cmd, **k))
    specs = [get_kernel(TC8), get_kernel("cuda/v2_smem")]
    racecheck = sweep.sanitize(specs, "racecheck")
    assert [(r.clean, r.protocol_hazards) for r in racecheck] == [(True, 175), (True, None)]
    memcheck = sweep.sanitize(specs, "memcheck")
    assert [(r.clean, r.protocol_hazards) for r in memcheck] == [(False, None), (True, None)]


def test_the_json_record_keeps_the_protocols_hazards(monkeypatch):
    """run_verify's sanitizer records: protocol_hazards where racecheck's hazards were told apart, absent elsewhere."""
    from gemmlab.errors import NoGPUError

    def nowhere(spec):
        raise NoGPUError("not here")

    rows = {"memcheck": sweep.SanitizerRow(TC8, True, "0 reports in this kernel"),
            "racecheck": sweep.SanitizerRow(TC8, True, "racecheck: 175 hazards, all ...", 175)}
    monkeypatch.setattr(sweep.device, "gpu", lambda: "a GPU")
    monkeypatch.setattr(sweep, "where_runs", nowhere)
    monkeypatch.setattr(sweep, "compile_check", lambda spec: pytest.fail("a Gluon level is not compiled by nvrtc"))
    monkeypatch.setattr(sweep.env, "collect", lambda gpu, mode: {})
    monkeypatch.setattr(sweep, "sanitize", lambda specs, tool: [rows[tool]])
    results, failures = sweep.run_verify(sweep.VerifyOptions(kernels=TC8, sanitize=True))
    tools = {r["result"]: r for r in results["records"] if r["shape"] == "sanitize"}
    assert failures == 0 and set(tools) == {"memcheck clean", "racecheck clean"}
    assert tools["racecheck clean"]["protocol_hazards"] == 175 and "protocol_hazards" not in tools["memcheck clean"]
