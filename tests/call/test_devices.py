"""Which GPU a call's work lands on, on a machine of several: the probe leaves the caller's current device as it
is, a plan is made with its own GPU's properties, and a CuPy call's copies, C, stream and launch are all on the
arrays' GPU whatever device is current; a captured call's CuPy workspaces outlive the capture; plans dropped wait
for their GPUs. A stand-in CuPy (``FakeCupy``) records where each thing lands, so these run without a GPU."""
from __future__ import annotations

import sys
import threading
import types

import numpy as np
import pytest

from gemmlab import device
from gemmlab.call import cache, launch


class FakeCupy:
    """A CuPy of two GPUs: a current device, one current stream per device (as CuPy keeps them), arrays that know
    their device, and a log of synchronizations."""

    def __init__(self, current: int = 0):
        self.state = {"dev": current}
        self.synced = []
        state, streams, synced = self.state, {0: 0xA0, 1: 0xB1}, self.synced
        self.streams = streams

        class Arr:
            __module__ = "cupy"  # what gemmlab.call.operands.kind_of reads
            count = 0

            def __init__(self, shape, dev):
                Arr.count += 1
                self.shape, self.device = tuple(np.atleast_1d(shape)), types.SimpleNamespace(id=dev)
                self.data = types.SimpleNamespace(ptr=(dev << 40) | (Arr.count << 12))

            def get(self):
                return np.zeros(self.shape, np.float32)

        class Device:
            def __init__(self, index=None):
                self.id = state["dev"] if index is None else index

            def __enter__(self):
                self.before, state["dev"] = state["dev"], self.id

            def __exit__(self, *exc):
                state["dev"] = self.before

            def use(self):
                state["dev"] = self.id

            def set_current(self):
                state["dev"] = self.id

        self.Arr, self.Device = Arr, Device
        props = {"name": b"NVIDIA H200", "multiProcessorCount": 132, "major": 9, "minor": 0, "l2CacheSize": 1 << 26,
                 "sharedMemPerBlockOptin": 232448, "sharedMemPerBlock": 49152, "totalGlobalMem": 1 << 37,
                 "clockRate": 1980000}
        runtime = types.SimpleNamespace(
            getDevice=lambda: state["dev"], getDeviceCount=lambda: 2,
            getDeviceProperties=lambda i: {**props, "multiProcessorCount": 132 if i == 0 else 114},
            driverGetVersion=lambda: 13000, runtimeGetVersion=lambda: 13000,
            deviceSynchronize=lambda: synced.append(state["dev"]))
        module = types.ModuleType("cupy")
        module.cuda = types.SimpleNamespace(
            Device=Device, runtime=runtime, memory=types.SimpleNamespace(OutOfMemoryError=MemoryError),
            get_current_stream=lambda: types.SimpleNamespace(ptr=streams[state["dev"]]))
        module.empty = lambda shape, dtype=None: Arr(shape, state["dev"])
        module.ascontiguousarray = lambda a: Arr(a.shape, state["dev"])
        module.asarray = lambda a: Arr(np.shape(a), state["dev"])
        module.ones = lambda n, dtype=None: Arr((n,), state["dev"])
        module.float32 = np.float32
        self.module = module

    def install(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "cupy", self.module)
        monkeypatch.setitem(sys.modules, "cupy.cuda", self.module.cuda)
        monkeypatch.setitem(sys.modules, "cupy.cuda.runtime", self.module.cuda.runtime)
        core = types.ModuleType("cuda.core")
        core.Device = self.Device
        monkeypatch.setitem(sys.modules, "cuda.core", core)
        return self


class RecordingPlan:
    """A plan that records the device current at its launch and where its addresses point."""

    layout = types.SimpleNamespace(a="row", b="row")

    def __init__(self, fake: FakeCupy):
        self.fake, self.launches = fake, []

    def launch(self, a, b, c, stream=0, *scales):
        self.launches.append({"context": self.fake.state["dev"], "stream": stream, "a": a >> 40, "b": b >> 40,
                              "c": c >> 40})

    def set_addend(self, d):
        pass


def _prepared(plan, device_index, **kw):
    p = types.SimpleNamespace(plan=plan, device=device_index, copy_a=False, copy_b=False, out_shape=(4, 4),
                              out_dtype="float32", scaled=False, copy_scales=(False, False), ones=None,
                              host_copy=False, span_a=64, span_b=64, c_bytes=64, lock=threading.Lock())
    p.__dict__.update(kw)
    p.for_stream = lambda stream: plan
    return p


def test_the_probe_and_a_plan_leave_the_callers_device_and_describe_their_own_gpu(monkeypatch):
    fake = FakeCupy(current=1).install(monkeypatch)
    monkeypatch.setattr(device, "_driver_loads", lambda: True)
    monkeypatch.setattr(device, "_max_sm_clock", lambda props, index=0: 1980.0)
    device.probe.cache_clear()
    device.gpu_info.cache_clear()
    try:
        info, why = device.probe()
        assert why == "" and info.sm_count == 132 and fake.state["dev"] == 1  # GPU 0 described, device 1 kept
        with device.using(1):
            assert device.require_gpu("a plan").sm_count == 114  # the plan's GPU: the current one
            assert fake.state["dev"] == 1
        assert device.require_gpu("a plan").sm_count == 114 and fake.state["dev"] == 1
        with device.using(0):
            assert device.require_gpu("a plan").sm_count == 132
        assert fake.state["dev"] == 1
    finally:
        device.probe.cache_clear()
        device.gpu_info.cache_clear()


@pytest.mark.parametrize("current", [0, 1])
@pytest.mark.parametrize("copy_a", [False, True])
def test_a_cupy_call_runs_all_of_it_on_the_arrays_gpu(monkeypatch, current, copy_a):
    fake = FakeCupy(current=current).install(monkeypatch)
    plan = RecordingPlan(fake)
    a, b = fake.Arr((4, 4), 1), fake.Arr((4, 4), 1)
    c = launch._cupy_launch(_prepared(plan, 1, copy_a=copy_a), a, b, None)
    assert plan.launches == [{"context": 1, "stream": fake.streams[1], "a": 1, "b": 1, "c": 1}]
    assert c.device.id == 1 and fake.state["dev"] == current  # the caller's device restored


def test_host_operands_on_a_gpu_kernel_go_to_the_plans_gpu(monkeypatch):
    fake = FakeCupy(current=1).install(monkeypatch)
    plan = RecordingPlan(fake)
    host = np.ones((4, 4), np.float32)
    launch.host_launch(_prepared(plan, 0, host_copy=True), host, host, None)
    assert plan.launches == [{"context": 0, "stream": fake.streams[0], "a": 0, "b": 0, "c": 0}]
    assert fake.state["dev"] == 1


def test_a_cupy_batch_takes_the_stream_of_its_gpu(monkeypatch):
    from gemmlab.call import batched

    fake = FakeCupy(current=0).install(monkeypatch)
    plan = RecordingPlan(fake)
    prepared = _prepared(plan, 1, out_shape=(2, 4, 4))
    out = batched._gpu(prepared, fake.Arr((2, 4, 4), 1), fake.Arr((2, 4, 4), 1), None)
    assert plan.launches == [{"context": 1, "stream": fake.streams[1], "a": 1, "b": 1, "c": 1}]
    assert out.device.id == 1 and fake.state["dev"] == 0


def test_plans_dropped_wait_for_the_gpus_whose_workspaces_they_free(monkeypatch):
    fake = FakeCupy(current=0).install(monkeypatch)
    kept = dict(cache.plans)
    cache.plans.clear()
    try:
        holding = types.SimpleNamespace(device=1, on_device=True, shared=False)
        sharing = types.SimpleNamespace(device=0, on_device=True, shared=True)
        host = types.SimpleNamespace(device=None, on_device=False, shared=True)
        for i, p in enumerate((holding, sharing, host)):
            cache.plans[("test", i)] = p
        cache.clear()
        assert fake.synced == [1] and not cache.plans and fake.state["dev"] == 0
        monkeypatch.setattr(cache, "MAX_PLANS", 1)
        cache.remember(("test", 0), holding)
        cache.remember(("test", 1), host)  # evicts the plan holding workspaces on GPU 1
        assert fake.synced == [1, 1] and list(cache.plans) == [("test", 1)]
    finally:
        cache.plans.clear()
        cache.plans.update(kept)


def test_two_threads_calling_through_one_plan_launch_each_with_their_own_addresses(monkeypatch):
    """A plan's parameters (the addend's address, then the operands') are written and handed to the driver under
    the Prepared's lock: the driver's call runs without the GIL, where another thread could write them in between."""
    import time

    fake = FakeCupy(current=0).install(monkeypatch)

    class SharedPlan(RecordingPlan):
        def set_addend(self, d):
            self.addend = d

        def launch(self, a, b, c, stream=0, *scales):
            time.sleep(1e-4)  # the driver's copy of the parameters, the GIL released
            self.launches.append((a, self.addend))

    plan = SharedPlan(fake)
    prepared = _prepared(plan, 0)

    def calls(n):
        for _ in range(50):
            a, b, d = (fake.Arr((4, 4), 0) for _ in range(3))
            launch._cupy_run(prepared, a.data.ptr, b.data.ptr, 0, (None, None), d)
            n.append((a.data.ptr, d.data.ptr))

    mine = [[], []]
    threads = [threading.Thread(target=calls, args=(m,)) for m in mine]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(plan.launches) == sorted(mine[0] + mine[1])


def test_a_call_on_the_default_stream_asks_no_capture_query(monkeypatch):
    """A plan with workspaces is picked per stream, and under capture per call; the legacy default stream (torch's,
    handle 0) cannot be captured, so a call there asks the driver nothing, while one on any other stream still asks
    (torch's flag for its current stream)."""
    torch = pytest.importorskip("torch")
    from gemmlab.call import tensors

    asked, picked, launched = [], [], []
    monkeypatch.setattr(tensors, "_capturing", lambda: asked.append(1) or True)
    monkeypatch.setattr(tensors, "_current_device", lambda: 0)

    class Plan:
        def launch(self, a, b, c, stream):
            launched.append(stream)

    prepared = types.SimpleNamespace(on_device=True, copy_a=False, copy_b=False, out_shape=(2, 3), out_strides=(3, 1),
                                     device=0, torch_template=torch.empty(0), shared=False, scaled=False,
                                     lock=threading.Lock(), by_stream={},
                                     for_stream=lambda stream, capturing: picked.append((stream, capturing)) or Plan())
    a, b = torch.ones(2, 4), torch.ones(4, 3)
    for stream in (0, 0x7F0):
        monkeypatch.setattr(tensors, "_stream", lambda index, s=stream: s)
        assert tensors.run(prepared, a, b, None).shape == (2, 3)
    assert picked == [(0, False), (0x7F0, True)] and asked == [1] and launched == [0, 0x7F0]


def test_a_default_stream_plan_once_kept_is_launched_without_asking_for_it_again(monkeypatch):
    """The plan a workspace-holding call keeps for the legacy default stream is taken from the by-stream table
    directly on later calls, and C is a fresh row-major tensor of the plan's shape each time."""
    torch = pytest.importorskip("torch")
    from gemmlab.call import Prepared, tensors

    launched = []

    class Plan:
        on_gpu = True
        buffers = [object()]  # a workspace: one plan per stream

        def launch(self, a, b, c, stream):
            launched.append((stream, c))

    prepared = Prepared(Plan(), "why", device=0, out_shape=(2, 3), out_dtype="float32")
    prepared.torch_template = torch.empty(0)
    monkeypatch.setattr(tensors, "_current_device", lambda: 0)
    monkeypatch.setattr(tensors, "_stream", lambda index: 0)
    a, b = torch.ones(2, 4), torch.ones(4, 3)
    first = tensors.run(prepared, a, b, None)
    monkeypatch.setattr(prepared, "for_stream", lambda *a: pytest.fail("asked for the stream's plan again"))
    second = tensors.run(prepared, a, b, None)
    assert launched == [(0, first.data_ptr()), (0, second.data_ptr())]
    assert not prepared.shared and prepared.by_stream == {0: prepared.plan}
    for c in (first, second):
        assert c.shape == (2, 3) and c.stride() == (3, 1) and c.dtype == torch.float32


@pytest.mark.parametrize("shapes", [[(4, 8), (8, 4)], [(8, 4), (3, 4, 8)], [(2, 3), (2, 0, 3), (0, 5)]])
def test_cs_strides_follow_its_shape_whoever_sets_it(shapes):
    """The strides a call allocates C with are torch's row-major strides of the Prepared's out_shape, at
    construction and after any later assignment (a batch's plan is made for one product, then given the batch's
    shape), so C is never allocated in another product's layout."""
    torch = pytest.importorskip("torch")
    from gemmlab.call import Prepared

    prepared = Prepared(types.SimpleNamespace(on_gpu=True), "why", out_shape=shapes[0])
    for shape in shapes:
        prepared.out_shape = shape
        assert prepared.out_strides == torch.empty(shape).stride()

