"""The plan cache: a resolved call (``Prepared``: the plan, how the operands reach it, why this kernel) kept per
key, so that a later call with the same key only launches."""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Callable

from gemmlab import driver
from gemmlab.kernels.plan import COL, Plan
from gemmlab.problem import np_dtype

MAX_PLANS = 512


def row_major_strides(shape: tuple) -> tuple:
    """The element strides of a row-major array of ``shape`` (torch's for a contiguous tensor, a dimension of 0 taken
    as 1)."""
    return tuple(math.prod(max(d, 1) for d in shape[i + 1:]) for i in range(len(shape)))


@dataclass
class Prepared:
    """A resolved call: the plan, how the operands reach it, and why this kernel (``explain``)."""

    plan: Plan
    why: str
    device: int | None = None  # the CUDA device the plan runs on
    copy_a: bool = False  # A copied into row-major order before each launch
    copy_b: bool = False
    host_copy: bool = False  # host operands run on a GPU kernel: copied there and back
    out_shape: tuple = ()  # C's shape: (M, N), or a batch's (..., M, N)
    batch: object = None  # a batched call's gemmlab.call.batched.Batch (explain says so), else None
    span_a: int = 0  # bytes each operand covers, to refuse an out= that overlaps it
    span_b: int = 0
    by_stream: dict = field(default_factory=dict)  # plans with workspaces: one per stream
    torch_template: object = None  # an empty tensor of C's dtype on the plan's device: outputs are its new_empty
    out_dtype: str = "float32"
    scaled: bool = False  # an FP8 plan: launches take the scales' addresses
    copy_scales: tuple = (False, False)  # a scale tensor copied into the layout the kernel reads before each launch
    ones: object = None  # a device float 1.0 for a scale given as None
    # nbytes -> (buffer, device address) from the caller's allocator on its current stream (torch's caching
    # allocator for tensors, under capture the graph's private pool); None: CuPy's pool
    workspace: Callable[[int], tuple[object, int]] | None = None
    resources: object = None  # what made the first plan (None: the GPU's): a stream's plan reuses its kernels
    epilogue: object = None  # the gemmlab.epilogue.Epilogue fused into the kernel's store (None: C = AB)
    addend_strides: tuple | None = None  # the addend's (row, column) element strides the plan reads it with
    # held from a launch's first write into a plan's parameters (the addend's, the operands' addresses, the stream)
    # to the driver's copy of them, which runs without the GIL: two threads' calls share a plan
    lock: threading.Lock = field(default_factory=threading.Lock)
    # plans of calls captured into CUDA graphs with CuPy's pool for workspaces, which has no graph-private pool: kept
    # while this Prepared is (gemmlab.clear_plans() frees them: call it once those graphs are destroyed)
    captured: list = field(default_factory=list)
    # read on every call, so computed once from the plan and host_copy, which nothing changes after construction
    on_device: bool = field(init=False)  # the plan runs on the operands' GPU in place (not on the host or a copy)
    shared: bool = field(init=False)  # the plan holds no workspace and makes none, so one plan serves every stream
    out_strides: tuple = field(init=False)  # a row-major C's element strides (an allocation given them parses less)

    def __post_init__(self):
        self.on_device = self.plan.on_gpu and not self.host_copy
        self.shared = not (getattr(self.plan, "buffers", None) or getattr(self.plan, "may_stage", False))

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if name == "out_shape":  # C's strides follow its shape whoever sets it (torch's, a dimension of 0 included)
            object.__setattr__(self, "out_strides", row_major_strides(value))

    @property
    def c_bytes(self) -> int:
        return np_dtype(self.out_dtype).itemsize * math.prod(self.out_shape)

    def for_stream(self, stream: int, capturing: bool | None = None) -> Plan:
        """The plan to launch on ``stream``. A plan holding workspaces never shares them between two streams that may
        run at once: the first plan serves the first stream it meets, a later stream gets a plan of its own (kept),
        and a stream under CUDA graph capture a plan of its own for each captured call, its workspaces from the
        graph's private pool, freed into that pool after the call as the graph's other intermediates are. A graph
        replays on whatever stream its caller picks, so workspaces kept for the capturing stream would be shared by
        every graph captured there (torch captures on one stream by default) and by that stream's eager calls.
        ``capturing``: whether ``stream`` is under capture, where the caller knows it more cheaply than the driver's
        query (torch's own flag for its current stream). CuPy's pool has no graph-private pool: a captured call's
        plan is kept (``captured``), its workspaces with it, so that nothing else is allocated in them while the graph
        may replay."""
        if self.shared:
            return self.plan
        if driver.capturing(stream) if capturing is None else capturing:
            plan = self._stream_plan(stream)
            if self.workspace is None:
                self.captured.append(plan)
            return plan
        plan = self.by_stream.get(stream)
        if plan is None:
            plan = self.by_stream[stream] = self._stream_plan(stream) if self.by_stream else self.plan
        return plan

    def _stream_plan(self, stream: int) -> Plan:
        """The first plan again with workspaces of its own, allocated and zeroed on ``stream`` only: no kernel
        loaded, no occupancy asked (the first plan's answers, so the same grid), no cudaMalloc, no wait."""
        from gemmlab import device
        from gemmlab.kernels.cuda.launch.gpu import StreamResources

        gpu = StreamResources(stream, self.workspace or _cupy_workspace, self.resources)
        spec = self.plan.spec
        with device.using(self.device):
            plan = spec.make_plan(self.plan.problem, self.plan.layout, device.require_gpu(spec.name), gpu)
        if self.epilogue is not None:
            plan.bind_epilogue(self.addend_strides)
        return plan

    def explain(self) -> str:
        lines = [self.plan.explain(), f"  chosen: {self.why}", f"  C: {self.out_dtype} ({self._output_note()})"]
        for name, copied in (("A", self.copy_a), ("B", self.copy_b)):
            if copied:
                lines.append(f"  {name} is copied into row-major order first: the kernel does not read its layout "
                             "in place")
        if self.plan.on_gpu and self.plan.layout.b == COL and not self.copy_b:
            lines.append("  B is read in place as the transpose of an N×K matrix (w.t()): no copy")
        for name, copied in zip(("scale_a", "scale_b"), self.copy_scales):
            if copied:
                lines.append(f"  {name} is copied into the layout the kernel reads first (the transpose of a "
                             "row-major tensor: gemmlab.fp8)")
        if self.epilogue is not None:
            where = ("applied on the host after the GEMM (NumPy)" if not self.plan.on_gpu else
                     "fused into the kernel's store, in registers before C is converted and written (no extra launch)")
            lines.append(f"  epilogue: C = {self.epilogue.describe()}, {where}")
        if self.host_copy:
            lines.append("  host operands are copied to the GPU and the result back")
        if self.batch is not None:
            launches = len(getattr(self.plan, "slices", ())) or 1
            how = ("in one launch" if launches == 1 else f"in {launches} launches (gridDim.z's 65535 products each)") \
                if self.on_device else "by numpy.matmul on the host"
            lines.append(f"  batched: {self.batch.describe()}, {how}")
        return "\n".join(lines)

    def _output_note(self) -> str:
        """Why C has its dtype: torch's rule (the precision's default) or the call's out_dtype."""
        prec = self.plan.problem.prec
        others = [d for d in prec.output_dtypes if d != self.out_dtype]
        if self.out_dtype != prec.output_dtype:
            return f"as out_dtype asks; {prec.name}'s default is {prec.output_dtype}"
        rule = "the operands' dtype, as torch" if self.out_dtype == prec.input_dtype else f"{prec.name}'s default"
        return rule + (f"; out_dtype={' or '.join(others)} writes {'it' if len(others) == 1 else 'those'}"
                       if others else "")


def _cupy_workspace(nbytes: int) -> tuple[object, int]:
    """Device memory from CuPy's pool, on CuPy's current stream (the stream a CuPy call launches on)."""
    import cupy
    import numpy as np

    buffer = cupy.empty(nbytes, dtype=np.uint8)
    return buffer, buffer.data.ptr


plans: dict[tuple, Prepared] = {}
# a caller's key -> its calls' launch alone (gemmlab.call.tensors.launcher, torch_op.matmul's), whose ``prepared``
# is in ``plans`` as long as the launch is kept: the plans' eviction drops it too, after _finish's wait
launchers: dict[tuple, Callable] = {}


def _pop_oldest(table: dict):
    """The oldest entry of ``table``, removed; None where another thread emptied or changed the table between the
    two steps."""
    try:
        return table.pop(next(iter(table)))
    except (StopIteration, KeyError, RuntimeError):
        return None


def remember(key, prepared: Prepared) -> Prepared:
    if len(plans) >= MAX_PLANS:
        dropped = _pop_oldest(plans)
        if dropped is not None:
            for k in [k for k, launch in list(launchers.items()) if launch.prepared is dropped]:
                launchers.pop(k, None)
            _finish((dropped,))
    plans[key] = prepared
    return prepared


def remember_launcher(key, launch: Callable) -> None:
    """Keep ``launch`` (its ``prepared`` one of ``plans``) under ``key``, the oldest dropped past MAX_PLANS: its plan
    stays in ``plans``, which frees its workspaces when it drops it."""
    if len(launchers) >= MAX_PLANS:
        _pop_oldest(launchers)
    launchers[key] = launch


def clear() -> None:
    """Drop every plan, and with it the workspaces it holds."""
    launchers.clear()
    _finish(plans.values())
    plans.clear()


def _finish(dropped) -> None:
    """Wait until the GPUs of the plans about to be dropped that hold workspaces from CuPy's pool have run what is
    queued: a kernel still queued, on any stream, may use them, and the pool hands a freed block out again at once."""
    devices = {p.device for p in dropped if p.on_device and not p.shared}
    if devices:
        import cupy

        for index in sorted(devices):
            with cupy.cuda.Device(index):
                cupy.cuda.runtime.deviceSynchronize()
