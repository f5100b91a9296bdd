"""The ceiling probes compile for sm_90a without spills (NVRTC needs no GPU), and stored ceilings are found again."""
import json

import pytest

from gemmlab.analysis.roofline import DEVICES, ceilings_for
from gemmlab.harness import ceilings
from gemmlab.kernels.cuda._nvrtc import compile_cuda


@pytest.mark.parametrize("source, entry, defines", ceilings.probe_builds(),
                         ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}{x}" for k, x in v.items()))
def test_probe_compiles_without_spills(source, entry, defines):
    report = compile_cuda(source, entry, defines, "sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0, report


def test_wgmma_probe_holds_tc4s_accumulators_in_registers():
    # a warpgroup's m64n256 accumulator is 128 floats a thread: the probe must keep them all in registers
    wgmma = [b for b in ceilings.probe_builds() if b[1] == "probe_wgmma"]
    assert {b[2]["TC_BF16"] for b in wgmma} == {0, 1}
    for source, entry, defines in wgmma:
        assert compile_cuda(source, entry, defines, "sm_90a").report.registers >= 128 + 8


def test_stored_ceilings_fill_what_the_run_did_not_measure(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    base = ceilings_for(DEVICES["h200"], dram_gbs=4100.0)  # a copy measured in the same run
    assert ceilings.stored_ceilings(base) is base  # nothing stored yet
    path = ceilings.stored_path("NVIDIA H200")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"gpu": "NVIDIA H200", "dram_gbs": 3900.0, "l2_gbs": 9500.0,
                                "smem_bytes_per_clk": 126.0, "flop_per_clk": {"bf16": 4090.0}, "time": "t"}))
    roofs = ceilings.stored_ceilings(base)
    assert (roofs.dram_gbs, roofs.l2_gbs, roofs.smem_bytes_per_clk) == (4100.0, 9500.0, 126.0)
    assert roofs.flop_per_clk["bf16"] == 4090.0 and roofs.flop_per_clk["fp32"] == 256
    assert roofs.source["l2"] == roofs.source["bf16"] == "measured" and roofs.source["fp32"] == "datasheet"
    assert "same run" in roofs.origin and str(path) in roofs.origin
