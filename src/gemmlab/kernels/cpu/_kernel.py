"""CpuKernel: a kernel that runs on the host, on NumPy arrays."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from gemmlab.kernels.plan import ROW_MAJOR, HostPlan
from gemmlab.kernels.spec import CPU, KernelSpec
from gemmlab.problem import Problem


@dataclass(frozen=True, kw_only=True)
class CpuKernel(KernelSpec):
    function: Callable | None = None  # function(A, B, C) -> None, writing C in place
    backend: str = "cpu"
    device: str = CPU
    int32_indices: bool = False
    fuses_epilogue: bool = True  # applied with NumPy after the GEMM (HostPlan)

    def plan(self, problem: Problem, layout=ROW_MAJOR) -> HostPlan:
        how = "reading the operands in place (a CPU tensor through a NumPy view)"
        if problem.prec.input_bytes < 4:  # dispatch.HOST_WIDENED: HostPlan.launch's copies
            how = "on FP32 copies of the operands, into an FP32 C the epilogue reads before C's one rounding"
        return HostPlan(self, problem, layout, on_gpu=False, function=self.function,
                        steps=[f"{self.name} on the host, {how}"])
