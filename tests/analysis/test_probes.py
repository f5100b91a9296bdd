"""The ceiling probes compile for sm_90a without spills (NVRTC needs no GPU)."""
import pytest

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
