"""The plan cache: a resolved call (``Prepared``: the plan, how the operands reach it, why this kernel) kept per
key, so that a later call with the same key only launches."""
from __future__ import annotations

from dataclasses import dataclass, field

from gemmlab.kernels.plan import Plan
from gemmlab.problem import np_dtype

MAX_PLANS = 512


@dataclass
class Prepared:
    """A resolved call: the plan, how the operands reach it, and why this kernel (``explain``)."""

    plan: Plan
    why: str
    device: int | None = None  # the CUDA device the plan runs on
    copy_a: bool = False  # A copied into row-major order before each launch
    copy_b: bool = False
    host_copy: bool = False  # host operands run on a GPU kernel: copied there and back
    out_shape: tuple = ()
    span_a: int = 0  # bytes each operand covers, to refuse an out= that overlaps it
    span_b: int = 0
    by_stream: dict = field(default_factory=dict)  # plans with workspaces: one per stream
    torch_template: object = None  # an empty tensor of C's dtype on the plan's device: outputs are its new_empty
    out_dtype: str = "float32"
    scaled: bool = False  # an FP8 plan: launches take the scales' addresses
    copy_scales: tuple = (False, False)  # a scale tensor copied into the layout the kernel reads before each launch
    ones: object = None  # a device float 1.0 for a scale given as None
    # read on every call, so computed once from the plan and host_copy, which nothing changes after construction
    on_device: bool = field(init=False)  # the plan runs on the operands' GPU in place (not on the host or a copy)
    shared: bool = field(init=False)  # the plan holds no workspace, so one plan serves every stream

    def __post_init__(self):
        self.on_device = self.plan.on_gpu and not self.host_copy
        self.shared = not getattr(self.plan, "buffers", None)

    @property
    def c_bytes(self) -> int:
        return np_dtype(self.out_dtype).itemsize * self.out_shape[0] * self.out_shape[1]

    def for_stream(self, stream: int) -> Plan:
        if self.shared:
            return self.plan
        plan = self.by_stream.get(stream)
        if plan is None:
            if not self.by_stream:
                plan = self.plan
            else:  # a second stream: workspaces of its own
                from gemmlab import device

                with device.using(self.device):
                    plan = self.plan.spec.plan(self.plan.problem, self.plan.layout)
            self.by_stream[stream] = plan
        return plan

    def explain(self) -> str:
        lines = [self.plan.explain(), f"  chosen: {self.why}", f"  C: {self.out_dtype} ({self._output_note()})"]
        for name, copied in (("A", self.copy_a), ("B", self.copy_b)):
            if copied:
                lines.append(f"  {name} is copied into row-major order first: the kernel does not read its layout "
                             "in place")
        for name, copied in zip(("scale_a", "scale_b"), self.copy_scales):
            if copied:
                lines.append(f"  {name} is copied into the layout the kernel reads first (the transpose of a "
                             "row-major tensor: gemmlab.fp8)")
        if self.host_copy:
            lines.append("  host operands are copied to the GPU and the result back")
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


plans: dict[tuple, Prepared] = {}


def remember(key, prepared: Prepared) -> Prepared:
    if len(plans) >= MAX_PLANS:
        plans.pop(next(iter(plans)))
    plans[key] = prepared
    return prepared
