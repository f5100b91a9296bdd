"""Plans per stream, on the host (the stub driver and host GPU of test_plans): a plan that holds workspaces, or may
make one, runs on a second stream and under CUDA graph capture as a plan of its own, made from the first plan's
kernels and occupancy answers, its workspaces from the caller's allocator on that stream and zeroed by a memset
enqueued there. Nothing is loaded, nothing waits, nothing comes from the first plan's pool: under capture any of
these would invalidate the graph (cudaErrorStreamCaptureInvalidated)."""
import ctypes
from contextlib import contextmanager

import numpy as np
import pytest

from gemmlab import device
from gemmlab.call import Prepared
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

from test_plans import H200, SIGNATURE_SIZES, HostGPU, launch_record, signature, stub, tc_args  # noqa: F401

EAGER, SECOND, CAPTURE = 0x51, 0x52, 0xCA97
A, B, C = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000

# every kind of workspace a wgmma plan holds: the TF32 transpose (tc2-tc4, row-major B), stream-K partials and flags
# (tc6 of each precision, tc9), block scales beside stream-K, a staged operand (rows TMA cannot stride: tc5 TF32,
# tc4 BF16), split-K partials and tile counters (tc10, and the FP32 ladder's v11)
WORKSPACES = [("cuda/tc2_wgmma_tma_tf32", (1024, 1024, 1024), ROW_MAJOR),
              ("cuda/tc3_warp_specialized_tf32", (1024, 1024, 1024), ROW_MAJOR),
              ("cuda/tc4_persistent_tf32", (1024, 1024, 1024), ROW_MAJOR),
              ("cuda/tc5_swap_ab_tf32", (1024, 1024, 1022), ROW_MAJOR),  # A's rows off 16 bytes: a pitched copy
              ("cuda/tc6_stream_k_tf32", (1024, 1024, 1024), ROW_MAJOR),
              ("cuda/tc6_stream_k_tf32", (2048, 3072, 4096), ROW_MAJOR),
              ("cuda/tc6_stream_k_bf16", (1024, 1024, 8192), ROW_MAJOR),
              ("cuda/tc9_narrow_swap_bf16", (16, 4096, 4096), Layout(b=COL)),
              ("cuda/tc6_stream_k_fp8_block", (256, 4096, 8192), Layout(b=COL)),
              ("cuda/tc4_persistent_bf16", (257, 136, 100), ROW_MAJOR),
              ("cuda/tc10_split_k_bf16", (128, 256, 16384), ROW_MAJOR),
              ("cuda/v11_split_k", (256, 256, 16384), Layout(b=COL))]


class OnceGPU(HostGPU):
    """Loads a binary once and answers each occupancy query once, as Resources does on a GPU; counts the buffers it
    hands out."""

    def __init__(self, stub):
        super().__init__(stub)
        self.kernels, self.answers, self.buffers, self.queries = {}, {}, 0, 0

    def kernel(self, compiled, smem):
        key = (compiled.entry, compiled.cubin, smem)
        if key not in self.kernels:
            self.kernels[key] = super().kernel(compiled, smem)
        return self.kernels[key]

    def buffer(self, nbytes, zero=False):
        self.buffers += 1
        return super().buffer(nbytes, zero)

    def ask(self, *key):
        if key not in self.answers:
            self.queries += 1
            self.answers[key] = 66 if key[0] == "clusters" else 1
        return self.answers[key]

    def blocks_per_sm(self, kernel, geo):
        return self.ask("blocks", kernel.handle, geo)

    def clusters(self, kernel, geo, cluster):
        return self.ask("clusters", kernel.handle, geo, cluster)


class Allocator:
    """The caller's allocator (torch's caching allocator in gemmlab.matmul): host memory, each request recorded."""

    def __init__(self):
        self.given = []

    def __call__(self, nbytes):
        buffer = np.full(nbytes, 0xCD, np.uint8)
        self.given.append(buffer)
        return buffer, buffer.ctypes.data

    def owns(self, address) -> bool:
        return any(b.ctypes.data <= address < b.ctypes.data + b.nbytes for b in self.given)


@pytest.fixture
def on_host(monkeypatch):
    @contextmanager
    def using(index):
        yield

    monkeypatch.setattr(device, "using", using)
    monkeypatch.setattr(device, "require_gpu", lambda what: H200)


def prepared(stub, name, shape, layout):
    stub.stub_reset()
    spec, gpu = get_kernel(name), OnceGPU(stub)
    plan = spec.make_plan(Problem(*shape, spec.precision), layout, H200, gpu)
    args_bytes = spec.args_struct.layout()[1] if hasattr(spec, "args_struct") else 0
    for compiled, smem, handle in gpu.loaded:
        signature(stub, handle, SIGNATURE_SIZES(compiled.entry, args_bytes))
    allocate = Allocator()
    return Prepared(plan, "named", device=0, workspace=allocate, resources=gpu), gpu, allocate


def launches(stub, plan, stream):
    """The launches one call of ``plan`` on ``stream`` enqueues (FP8 plans with two scale addresses)."""
    first = stub.stub_launches()
    plan.launch(A, B, C, stream, *((0x7300_0000_0000, 0x7400_0000_0000) if plan.spec.prec.scaled else ()))
    return [launch_record(stub, i) for i in range(first, stub.stub_launches())]


def memsets(stub) -> list[tuple[int, int, int, int]]:
    """(address, value, bytes, stream) of each cuMemsetD8Async the stub saw."""
    out = []
    for i in range(stub.stub_memsets()):
        words = np.zeros(4, np.uint64)
        stub.stub_memset(i, ctypes.c_void_p(words.ctypes.data))
        out.append(tuple(int(w) for w in words))
    return out


def workspace_fields(plan, record) -> dict:
    """The addresses a launch reads that are workspaces (the kernel's TcArgs, v11's last two parameters) or the
    pre-pass's output."""
    if len(record.params) == sum(SIGNATURE_SIZES("v11_split_k")):  # the seeds' six, the partials, the tickets
        ws, tickets = np.frombuffer(record.params[36:52], np.uint64)
        return {"sk_ws": int(ws), "sk_flags": int(tickets)}
    if len(record.params) < 128:  # a pre-pass: its destination
        return {"dst": int(np.frombuffer(record.params[8:16], np.uint64)[0])}
    args = tc_args(record.params)
    return {"a": int(args["a"][2]), "b": int(args["b"][2]), "sk_ws": int(args["sk_ws"]),
            "sk_flags": int(args["sk_flags"])}


@pytest.mark.parametrize("name,shape,layout", WORKSPACES, ids=lambda x: str(x))
def test_a_capturing_stream_gets_workspaces_of_its_own_from_the_callers_allocator(stub, on_host, name, shape, layout):
    p, gpu, allocate = prepared(stub, name, shape, layout)
    assert not p.shared
    eager = launches(stub, p.for_stream(EAGER), EAGER)
    made = (len(gpu.loaded), gpu.buffers, gpu.synced, gpu.queries)
    stub.stub_capture(CAPTURE)
    plan = p.for_stream(CAPTURE)
    assert plan is not p.plan
    assert (len(gpu.loaded), gpu.buffers, gpu.synced, gpu.queries) == made  # nothing loaded, allocated, waited, asked
    first_buffers = [np.asarray(b) for b in p.plan.buffers]
    assert sorted(b.nbytes for b in allocate.given) == sorted(b.nbytes for b in first_buffers)
    zeroed = memsets(stub)
    assert len(zeroed) == sum(not b.any() for b in first_buffers)  # each buffer the first plan zeroed
    assert all(allocate.owns(dst) and value == 0 and n > 0 and stream == CAPTURE for dst, value, n, stream in zeroed)
    captured = launches(stub, plan, CAPTURE)
    assert [(r.f, r.grid, r.block, r.smem, r.cluster) for r in captured] == \
           [(r.f, r.grid, r.block, r.smem, r.cluster) for r in eager]
    assert all(r.stream == CAPTURE for r in captured)
    for before, after in zip(eager, captured):
        mine, theirs = workspace_fields(plan, after), workspace_fields(p.plan, before)
        for field, address in mine.items():
            if address != theirs[field]:  # a workspace: the new plan's, from the caller's allocator
                assert allocate.owns(address) and not allocate.owns(theirs[field])
    assert any(allocate.owns(a) for r in captured for a in workspace_fields(plan, r).values())
    assert p.for_stream(CAPTURE) is not plan  # each captured call: a graph may replay on any stream
    assert set(p.by_stream) == {EAGER}


def test_a_second_stream_keeps_a_plan_of_its_own_and_nothing_waits(stub, on_host):
    p, gpu, allocate = prepared(stub, "cuda/tc6_stream_k_bf16", (1024, 1024, 8192), ROW_MAJOR)
    assert p.for_stream(EAGER) is p.plan
    synced = gpu.synced
    second = p.for_stream(SECOND)
    assert second is not p.plan and p.for_stream(SECOND) is second and p.for_stream(EAGER) is p.plan
    assert gpu.synced == synced and [m[3] for m in memsets(stub)] == [SECOND]  # the flags, zeroed on that stream
    args = tc_args(launches(stub, second, SECOND)[-1].params)
    assert allocate.owns(int(args["sk_ws"])) and allocate.owns(int(args["sk_flags"]))


def test_a_plan_that_may_stage_an_operand_is_per_stream_and_stages_from_the_callers_allocator(stub, on_host):
    """tc4 BF16 at 4096³ holds no workspace, but an operand at an address off 16 bytes is copied into one made at that
    call: two streams would share it, and under capture it would come from CuPy's pool."""
    p, gpu, allocate = prepared(stub, "cuda/tc4_persistent_bf16", (4096, 4096, 4096), ROW_MAJOR)
    assert not p.plan.buffers and not p.shared
    stub.stub_capture(CAPTURE)
    plan = p.for_stream(CAPTURE)
    plan.launch(A + 2, B, C, CAPTURE)  # A at an offset view
    assert allocate.owns(int(tc_args(launch_record(stub, 0).params)["a"][2])) and gpu.buffers == 0


def test_a_plan_without_workspaces_serves_every_stream(stub, on_host):
    p, _, _ = prepared(stub, "cuda/tc1_mma_sync_bf16", (1024, 1024, 1024), ROW_MAJOR)
    stub.stub_capture(CAPTURE)
    assert p.shared and p.for_stream(CAPTURE) is p.plan and p.for_stream(EAGER) is p.plan


def test_the_callers_capture_flag_stands_for_the_drivers_query(stub, on_host):
    """torch's direct path passes torch's own flag for its current stream: the plan follows it, not the driver."""
    p, _, _ = prepared(stub, "cuda/tc6_stream_k_bf16", (1024, 1024, 8192), ROW_MAJOR)
    stub.stub_capture(CAPTURE)  # the driver would say CAPTURE captures
    kept = p.for_stream(CAPTURE, capturing=False)
    assert p.for_stream(CAPTURE, capturing=False) is kept and CAPTURE in p.by_stream
    first = p.for_stream(EAGER, capturing=True)  # under capture: a plan of its own for each call, none kept
    assert first is not p.for_stream(EAGER, capturing=True) and EAGER not in p.by_stream


def test_a_cupy_callers_captured_plans_are_kept_with_their_workspaces(stub, on_host, monkeypatch):
    """CuPy's pool has no graph-private pool: a plan captured with workspaces from it is kept by the Prepared, so
    that the pool never hands its workspaces out again while the graph may replay; torch's graph pool keeps the
    workspaces itself, and its captured plans are not kept."""
    from gemmlab.call import cache

    p, _, allocate = prepared(stub, "cuda/tc6_stream_k_bf16", (1024, 1024, 8192), ROW_MAJOR)
    first = p.for_stream(CAPTURE, capturing=True)
    assert p.captured == []  # the caller's allocator (torch's): its graph pool holds them
    pool = Allocator()
    monkeypatch.setattr(cache, "_cupy_workspace", pool)
    cupy_caller = Prepared(p.plan, "named", device=0, resources=p.resources)
    plans = [cupy_caller.for_stream(CAPTURE, capturing=True) for _ in range(2)]
    assert cupy_caller.captured == plans and plans[0] is not plans[1] is not first and pool.given
    assert cupy_caller.for_stream(EAGER, capturing=False) is p.plan and len(cupy_caller.captured) == 2
