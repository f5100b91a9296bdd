"""The shape suite on a GPU (skipped without one; run with GEMMLAB_TEST_GPU=1): GPU time counts every kernel of a
call and none of its host time, a host slower than the spin is caught, and a run at small shapes writes verified
records of every precision with both sides' times."""
import json
import time

import pytest

from gemmlab import device

pytestmark = pytest.mark.skipif(device.gpu() is None, reason="needs a CUDA GPU")
torch = pytest.importorskip("torch")

from gemmlab.harness import api_suite as S  # noqa: E402
from gemmlab.harness.timing import eager_times, gpu_times  # noqa: E402


@pytest.fixture(scope="module")
def clean():
    scratch = torch.empty(2 * device.gpu().l2_bytes // 4, device="cuda")
    return lambda: scratch.sum()


def test_gpu_time_counts_every_kernel_of_the_call_and_leaves_its_host_time_out(clean):
    a, b = torch.randn(2048, 2048, device="cuda"), torch.randn(2048, 2048, device="cuda")

    def twice(x, y):
        time.sleep(50e-6)  # host work before the launches (an idle GPU waits for it), inside the spin's head start
        torch.mm(x, y)
        return torch.mm(x, y)

    one, two = gpu_times(torch, [torch.mm, twice], [(a, b)], 50, 1.0, 20, clean).median_ms
    assert two == pytest.approx(2 * one, rel=0.15)
    e = eager_times(torch, [torch.mm, twice], [(a, b)], 50, 1.0, 20, clean)
    assert e.median_ms[1] > two + 0.04  # the eager time holds the 50 µs on the host
    assert e.host_us[1] > 50 and e.host_us[1] > e.host_us[0] + 40  # and its host time says where they went


def test_a_host_slower_than_the_spin_doubles_it_until_the_call_is_issued_ahead(clean):
    a, b = torch.randn(1024, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda")

    def slow(x, y):
        time.sleep(150e-6)
        return torch.mm(x, y)

    t = gpu_times(torch, [torch.mm, slow], [(a, b)], 40, 1.0, 20, clean)
    # time.sleep overshoots now and then by more than the doubled spin: a late sample or two of 40 is the OS's
    assert t.head_start_us >= 200 and t.late[0] == 0 and t.late[1] <= 2
    assert t.median_ms[1] == pytest.approx(t.median_ms[0], rel=0.2)


def test_a_run_at_small_shapes_writes_verified_records_of_every_precision(tmp_path):
    path = tmp_path / "suite.json"
    opts = S.SuiteOptions(shapes=((16, 1024, 1024), (256, 256, 256)), json_path=path, rounds=30, max_seconds=0.1)
    results = S.run_suite(opts, say=lambda line: None)
    assert results is not None and json.loads(path.read_text())["partial"] is False
    records = {(r["precision"], r["m"]): r for r in results["records"]}
    assert len(records) == 2 * len(S.PRECISIONS)
    for (precision, m), r in records.items():
        assert r["verified"], r
        assert r["gpu_us"] > 0 and r["eager_us"] > r["gpu_us"] and 0 < r["dram_fraction"] < 1.5
        if precision == "fp8_block" and (m == 256 or "torch_error" in r):
            # ceil(256/128) = 2 blocks of K: torch's blockwise result is wrong; a torch may refuse 16 rows
            assert r.get("peer_wrong") or "torch_error" in r
            continue
        assert r["torch_verified"] and r["out_dtype"] == r["torch_out_dtype"] and r["gpu_ratio"] > 0
