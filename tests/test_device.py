"""Why there is no GPU: no driver installed, a driver too old for the runtime, or a driver that sees no GPU. The
CUDA runtime says "driver version is insufficient" for the first two alike."""
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
