"""What a bench run does without a GPU: CPU kernels timed on the host, CUDA C kernels compiled for sm_90a (NVRTC's
report), numba kernels verified on the CUDA simulator at small ragged shapes, every GPU kernel's roofline model."""
from __future__ import annotations

import os
from contextlib import contextmanager

from gemmlab.errors import CompileError, GemmlabError, SizeLimitError
from gemmlab.harness.bench_records import bench_one, kernel_seed, link_ratios, new_record, run_layout
from gemmlab.harness.record import BenchRecord, Status
from gemmlab.harness.verify import check
from gemmlab.kernels.spec import CPU, SM_COUNT, KernelSpec
from gemmlab.problem import SEED_SHAPE, Problem

CPU_SHAPE = (256, 384, 512)  # the seed shape divided by 8: V0 runs it in well under a second
ARCH = "sm_90a"  # what CUDA C kernels are compiled for without a GPU to ask


def shapes_text(shapes) -> str:
    return ", ".join("×".join(map(str, s)) for s in shapes)


def kind_without_gpu(spec: KernelSpec) -> str:
    """What a machine without a GPU does with ``spec``: time it on the host, compile it, run it on the simulator, or
    nothing ("gpu": a peer)."""
    if spec.device == CPU:
        return "cpu"
    if spec.simulable:
        return "simulator"
    return "compiled" if spec.compiles else "gpu"


def run_cpu_only(specs, opts, dev, records, listener):
    """CPU kernels timed, CUDA C kernels compiled, numba kernels simulated, every GPU kernel modeled: a table
    each, handed to the listener as soon as it is done."""
    cpu_shapes = opts.shapes or [CPU_SHAPE]
    gpu_shapes = opts.shapes or [SEED_SHAPE]  # where GPU kernels are configured, compiled and modeled
    of = {kind: [s for s in specs if kind_without_gpu(s) == kind] for kind in ("cpu", "compiled", "simulator", "gpu")}
    total = len(of["cpu"]) * len(cpu_shapes) + len(of["compiled"]) * len(gpu_shapes) + len(of["simulator"])
    done = 0

    def step(label):
        nonlocal done
        listener.step(label, done, total)
        done += 1

    def new(spec, shape):
        """The record of ``spec`` at ``shape``; one the kernel refuses (or the model cannot take) is skipped with the
        reason, unmodeled, never timed, compiled, simulated or modeled as if it ran there."""
        problem = Problem(*shape, spec.precision)
        refusal = spec.is_valid(problem)
        if not refusal:
            try:
                rec = new_record(spec, problem, dev, None, layout=run_layout(opts, problem))
            except SizeLimitError as exc:  # past the device's memory, or more tiles than the model walks
                refusal = exc
        if refusal:
            rec = new_record(spec, problem, dev, None, modeled=False)
        if refusal:
            rec.fail(Status.SKIPPED, refusal)
        records.append(rec)
        return rec, problem

    def each(kind, shape, doing, work):
        """The records of the ``kind`` kernels at ``shape``, each shown as ``doing`` and filled by ``work``."""
        recs = []
        for spec in of[kind]:
            step(f"{spec.name}{doing}")
            rec, problem = new(spec, shape)
            if rec.status is None:
                with _reported(rec):
                    work(spec, problem, rec)
            recs.append(rec)
        return recs

    for shape in cpu_shapes:
        recs = each("cpu", shape, f" at {shapes_text([shape])}: verify, then time on this host",
                    lambda spec, problem, rec: _time_on_host(spec, problem, rec, opts, dev))
        link_ratios(recs)
        if recs:
            listener.table("cpu", f"CPU kernels at {shapes_text([shape])} (M×N×K), timed on this host",
                           [r.to_json() for r in recs])
    for shape in gpu_shapes:
        recs = each("compiled", shape, f": compile for {ARCH}, configured for {shapes_text([shape])}",
                    lambda spec, problem, rec: _compile(spec, problem, rec, dev.sm_count or SM_COUNT))
        if recs:
            listener.table("compiled", f"CUDA C kernels compiled for {ARCH} by NVRTC, configured for "
                                       f"{shapes_text([shape])} (not run: no GPU)", [r.to_json() for r in recs])
    simulated = []
    for spec in of["simulator"]:
        step(f"{spec.name}: CUDA simulator at {shapes_text(opts.sim_shapes)}")
        recs = [new(spec, shape)[0] for shape in gpu_shapes]  # the same runs stand beside each shape's model
        try:
            runs = _simulate(spec, opts)
        except GemmlabError as exc:
            runs = {"status": Status.ERROR, "reason": str(exc)}
        for rec in recs:
            if rec.status is None:
                rec.update(runs)
        simulated.append(recs[0])
    if simulated:
        listener.table("simulator", f"numba kernels on the CUDA simulator at {shapes_text(opts.sim_shapes)} "
                                    "(M×N×K; verified, not timed)", [r.to_json() for r in simulated])
    for spec in of["gpu"]:
        for shape in gpu_shapes:
            rec = new(spec, shape)[0]
            if rec.status is None:
                rec.fail(Status.SKIPPED, "needs a GPU")
    order = {s.name: i for i, s in enumerate(specs)}
    for shape in gpu_shapes:
        modeled = [r for r in records if r.backend != CPU and r.shape == tuple(shape) and r.model]
        if modeled:
            listener.table("model", f"roofline model on the {dev.name} at {shapes_text([shape])} (M×N×K): "
                                    "predicted, not measured",
                           [r.to_json() for r in sorted(modeled, key=lambda r: order[r.kernel])])


@contextmanager
def _reported(rec: BenchRecord):
    """A GemmlabError while filling ``rec`` becomes its status and reason; the run goes on."""
    try:
        yield
    except GemmlabError as exc:
        rec.fail(Status.ERROR, str(exc))


def _host_memory_reason(problem: Problem) -> str:
    """Why ``problem`` cannot run on this host, or "": its operands in float32 and in float64 for the reference
    must fit in physical memory (past it an allocation may still succeed, and the process die when it is filled)."""
    elements = problem.m * problem.k + problem.k * problem.n + problem.m * problem.n
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows): let the allocation say
        return ""
    need = 12 * elements
    if need <= memory:
        return ""
    return (f"{problem.label()} needs about {need / 2**30:.0f} GiB of host memory (operands in float32 and float64), "
            f"this machine has {memory / 2**30:.0f} GiB")


def _time_on_host(spec, problem, rec, opts, dev):
    reason = _host_memory_reason(problem)
    if reason:
        rec.fail(Status.SKIPPED, reason)
        return
    bench_one(spec, problem, rec, None, opts, dev, None, None)


def _compile(spec, problem, rec, sm_count: int):
    """NVRTC's report of the configuration that would run ``problem`` on ``sm_count`` SMs (the record's); shared
    memory counts the static and the dynamic part (the launch geometry's)."""
    runs = spec.for_problem(problem, sm_count)
    try:
        rep = runs.compile(ARCH).report
    except CompileError as exc:
        rec.fail(Status.ERROR, str(exc))
        return
    smem = rep.smem_bytes + runs.launch_geometry(problem).smem
    rec.registers, rec.spills, rec.smem_static, rec.smem_bytes = rep.registers, rep.spills, rep.smem_bytes, smem
    rec.fail(Status.COMPILED, f"compiled for {ARCH}: {rep.registers} registers, {rep.spills} spill bytes, "
                              f"{smem / 1024:.1f} KiB shared memory; not run (no GPU)")


def _simulate(spec, opts) -> dict:
    """Verify a numba kernel under the CUDA simulator at each of opts.sim_shapes (stopping at the first failure);
    the fields its records get. The error is kept apart from rel_err, which is the error at the record's shape."""
    runs = []
    for shape in opts.sim_shapes:
        small = Problem(*shape, spec.precision)
        result = check(spec, small, seed=kernel_seed(opts.seed, spec.name, shape))
        runs.append({"shape": small.label(), "status": result.status,
                     "rel_err": result.error.rel_err if result.error else None,
                     "tolerance": result.error.tolerance if result.error else None})
        if not result.passed:
            reason = f"simulator {small.label()}: {result.status} {result.reason}".strip()
            return {"status": Status.FAILED, "reason": reason, "simulator": runs}
    return {"status": Status.SIMULATED, "verified": True, "simulator": runs,
            "reason": f"verified under the CUDA simulator at {shapes_text(opts.sim_shapes)}; not timed (no GPU)"}
