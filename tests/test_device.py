"""Why there is no GPU: no driver installed, a driver too old for the runtime, or a driver that sees no GPU (the CUDA
runtime says "driver version is insufficient" for the first two alike); and which GPU NVML reads for a CUDA device."""
import pytest

from gemmlab import device


class CudaError(Exception):
    def __init__(self, status, text):
        super().__init__(text)
        self.status = status


INSUFFICIENT = CudaError(35, "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")
NO_DEVICE = CudaError(100, "cudaErrorNoDevice: no CUDA-capable device is detected")


@pytest.mark.parametrize("driver,exc,says", [
    (False, INSUFFICIENT, "no CUDA driver installed (libcuda.so.1 not found)"),
    (False, NO_DEVICE, "no CUDA driver installed"),
    (True, INSUFFICIENT, "the CUDA driver is too old for this CUDA runtime"),
    (True, NO_DEVICE, "a CUDA driver is installed but it sees no GPU"),
    (True, None, "a CUDA driver is installed but it sees no GPU"),  # a device count of zero
    (True, CudaError(999, "cudaErrorUnknown: unknown error"), "CUDA did not start (CudaError: cudaErrorUnknown"),
])
def test_no_gpu_reason_tells_the_cases_apart(monkeypatch, driver, exc, says):
    monkeypatch.setattr(device, "_driver_loads", lambda: driver)
    monkeypatch.setattr(device, "DRIVER_LIBRARY", "libcuda.so.1")
    assert device._no_gpu_reason(exc).startswith(says)


def test_no_gpu_reason_names_cuda_visible_devices(monkeypatch):
    monkeypatch.setattr(device, "_driver_loads", lambda: True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert device._no_gpu_reason(NO_DEVICE).endswith("(CUDA_VISIBLE_DEVICES='')")


def test_probe_never_raises(monkeypatch):
    from cupy.cuda import runtime

    def broken():
        raise INSUFFICIENT

    monkeypatch.setattr(runtime, "getDeviceCount", broken)
    monkeypatch.setattr(device, "_driver_loads", lambda: False)
    info, why = device.probe.__wrapped__()
    assert info is None and why == f"no CUDA driver installed ({device.DRIVER_LIBRARY} not found)"


def test_nvml_reads_the_cuda_devices_own_gpu_by_its_pci_bus_id(monkeypatch):
    """NVML numbers every GPU of the host, CUDA only the visible ones: with CUDA_VISIBLE_DEVICES=3 CUDA's device 0 is
    NVML's device 3. The clock is read from the GPU at the CUDA device's bus id, not from NVML's device 0."""
    import sys
    import types

    clocks = {"00000000:19:00.0": 1755.0, "00000000:BE:00.0": 1980.0}  # NVML device 0 at 19, the visible one at BE
    fake = types.SimpleNamespace(NVML_CLOCK_SM=1, nvmlInit=lambda: None,
                                 nvmlDeviceGetHandleByPciBusId=lambda bus: bus,
                                 nvmlDeviceGetHandleByIndex=lambda i: list(clocks)[i],
                                 nvmlDeviceGetMaxClockInfo=lambda handle, kind: clocks[handle])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    props = {"pciDomainID": 0, "pciBusID": 0xBE, "pciDeviceID": 0, "clockRate": 1_500_000}
    assert device.pci_bus_id(props) == "00000000:BE:00.0"
    assert device._max_sm_clock(props) == 1980.0
    del fake.nvmlDeviceGetHandleByPciBusId  # an NVML without it: the properties' clock, not another GPU's
    assert device._max_sm_clock(props) == 1500.0


def test_a_boards_memory_bandwidth_is_two_transfers_a_clock_over_its_bus(monkeypatch):
    """NVML's maximum memory clock and bus width give the datasheets' bandwidths (HBM and GDDR alike); without NVML
    the runtime's properties do, and a driver that reports neither gives 0 (no roof)."""
    assert device.memory_gbs(2619, 5120) == pytest.approx(3352.3, rel=1e-4)  # H100 SXM
    assert device.memory_gbs(10501, 384) == pytest.approx(1008.1, rel=1e-4)  # RTX 4090
    monkeypatch.setattr(device, "nvml_handle", lambda *a: (_ for _ in ()).throw(RuntimeError("no NVML")))
    assert device._memory_gbs({"memoryClockRate": 1215000, "memoryBusWidth": 5120}) == pytest.approx(1555.2)
    assert device._memory_gbs({}) == 0.0
