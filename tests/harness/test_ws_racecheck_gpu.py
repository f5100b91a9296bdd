"""The racecheck probe's kernels on a GPU, without the sanitizer (skipped without a GPU; the Gluon ones without the
Triton they are written for): each runs to its end, every worker warp reading its partition at the start and the
exit state after it, each Gluon partition running, gluon/tc3 writing its C. What racecheck reports of them is the
probe's own question, read from a run under compute-sanitizer (see gemmlab.harness.probes.ws_racecheck)."""
import pytest

from gemmlab.harness.probes import ws_racecheck as probe
from gemmlab.kernels.gluon.launch import kernel as gluon_kernel


@pytest.fixture(autouse=True)
def _needs_gpu():
    from gemmlab import device

    if device.gpu() is None:
        pytest.skip("needs a CUDA GPU")


@pytest.mark.parametrize("variant", [v for v in probe.VARIANTS.values() if v.kind in ("copy", "control")],
                         ids=lambda v: v.name)
def test_every_worker_reads_its_partition_then_the_exit(variant):
    d = variant.defines
    parts = list(d["STATES"])
    assert probe.run(variant) == {"default ran": True, "partition": parts,
                                  "states read": [(p, d["PARTS"]) for p in parts]}


@pytest.mark.parametrize("name", [v.name for v in probe.VARIANTS.values() if v.kind in ("gluon", "level")])
def test_the_gluon_kernels_run(name):
    why = gluon_kernel.triton_refusal(name)
    if why:
        pytest.skip(str(why))
    want = {"gluon": {"partitions' marks": [1, 2]}, "level": {"C all zero": True}}
    assert probe.run(probe.VARIANTS[name]) == want[probe.VARIANTS[name].kind]
