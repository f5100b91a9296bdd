"""What a bench run says while it works: the Listener it talks to (the CLI's is gemmlab.console.BenchPrinter), and the
adapter that turns the GPU run's progress calls into steps and a finished table per shape and precision."""
from __future__ import annotations

from collections import Counter

from gemmlab.harness.bench_records import link_ratios
from gemmlab.harness.record import BenchRecord
from gemmlab.kernels.spec import KernelSpec


class Listener:
    """What run_bench says as it works; the CLI prints it as it comes, tests record it. These defaults say nothing."""

    def step(self, label: str, done: int, total: int) -> None:
        """``label`` (a kernel and what it runs at) starts; ``done`` of ``total`` steps are finished."""

    def table(self, kind: str, title: str, records: list[dict]) -> None:
        """The finished records of one table. ``kind``: "timed" (a GPU run: one table per shape and precision)
        or, without a GPU, "cpu" (timed on the host), "compiled" (NVRTC's report), "simulator" or "model"."""


def group_key(rec: BenchRecord) -> tuple:
    return rec.m, rec.n, rec.k, rec.precision


class GpuProgress:
    """The progress calls run_gpu makes (rich's add_task, update, advance) passed on to a Listener: each kernel a
    step, and each shape and precision's table as soon as its last record is in, its ratios linked."""

    def __init__(self, listener: Listener, records: list[BenchRecord], specs: list[KernelSpec]):
        self.listener, self.records = listener, records
        self.group_size = Counter(s.precision for s in specs)  # run_gpu runs every selected kernel per group
        self.done = self.total = 0

    def add_task(self, description: str, total: int) -> int:
        self.total = total
        return 0

    def update(self, task: int, description: str) -> None:
        self.listener.step(description, self.done, self.total)

    def advance(self, task: int) -> None:
        self.done += 1
        key = group_key(self.records[-1])
        group = [r for r in self.records if group_key(r) == key]
        if len(group) == self.group_size[key[3]]:
            link_ratios(self.records)
            self.listener.table("timed", f"{key[0]}×{key[1]}×{key[2]} (M×N×K), {key[3]}", [r.to_json() for r in group])
