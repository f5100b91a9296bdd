import pytest

from gemmlab.analysis.roofline import DEVICES, device_spec, model, seed_examples
from gemmlab.errors import GemmlabError
from gemmlab.kernels.registry import get_kernel
from gemmlab.kernels.spec import naive_traffic, tiled_traffic
from gemmlab.problem import Problem


def test_seed_worked_numbers():
    ex = seed_examples()
    assert ex["a100_ridge"] == pytest.approx(12.54, abs=0.01)  # 19.5e12 / 1555e9
    assert ex["naive_intensity"] == pytest.approx(0.25)
    assert ex["square_intensity_4096"] == pytest.approx(4096 / 6)
    assert ex["naive_redundancy_4096"] == pytest.approx(4096)  # read N times more than needed
    # the seeds' tiled formula 2·T·T·T / ((T·T + T·T)·4) at T=32
    assert ex["tile32_intensity"] == pytest.approx(2 * 32**3 / ((32 * 32 + 32 * 32) * 4))


def test_naive_traffic_is_8mnk_bytes():
    p = Problem(2048, 3072, 4096)
    t = naive_traffic(p)
    assert t.global_read == 8 * p.m * p.n * p.k
    assert t.intensity(p) == pytest.approx(0.25, rel=1e-3)  # the store adds a hair


def test_tiled_traffic_divides_reads_by_tile_and_handles_ragged_tiles():
    p = Problem(100, 70, 50)
    t = tiled_traffic(p, 32, 32)
    # A is re-read once per column tile (ceil(70/32) = 3), B once per row tile (ceil(100/32) = 4)
    assert t.global_read == 4 * (100 * 50 * 3 + 50 * 70 * 4)
    assert t.global_write == 4 * 100 * 70


def test_h200_ridges_and_bounds():
    h200 = DEVICES["h200"]
    assert h200.ridge("fp32") == pytest.approx(66.9e12 / 4.8e12)
    assert h200.ridge("bf16") == pytest.approx(989.4e12 / 4.8e12)
    p = Problem(4096, 4096, 4096)
    naive = model(get_kernel("cuda/v1_naive"), p, h200)
    assert naive.bound == "memory"
    assert naive.predicted_tflops == pytest.approx(4.8e12 * naive.modeled_intensity / 1e12)
    peer = model(get_kernel("peers/cublas_fp32"), p, h200)
    assert peer.bound == "compute" and peer.predicted_tflops == 66.9


def test_tensor_core_roofs_are_per_precision():
    h200 = DEVICES["h200"]
    assert h200.attainable_tflops(1e6, "fp32") == 66.9
    assert h200.attainable_tflops(1e6, "bf16") == 989.4
    # the seeds' cuBLAS line: 4096^3 in 0.8 ms is beyond any FP32 peak listed
    seed_cublas = Problem(4096, 4096, 4096).flops() / 0.8e-3 / 1e12
    assert seed_cublas > max(d.peak_tflops("fp32") for d in DEVICES.values())


def test_device_lookup_by_driver_name():
    assert device_spec("NVIDIA H200").key == "h200"
    assert device_spec("NVIDIA H100 80GB HBM3").key == "h100"
    assert device_spec("a100").key == "a100"
    with pytest.raises(GemmlabError, match="no roofline data"):
        device_spec("Radeon")
