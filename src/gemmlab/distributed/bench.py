"""``gemmlab bench --distributed``: weak and strong scaling of the distributed GEMMs, and how much communication
they hide, against their peers in the same run. Run under torchrun, one process per GPU:

    torchrun --standalone --nproc-per-node 8 -m gemmlab bench --distributed --json results/h200x8/distributed.json

For each GPU count (default 1, 2, 4, ... up to the ranks present; count P runs on ranks 0..P−1 while the others
wait) and each op: every rank makes the same seeded global A and B, takes its shards, and the op's output on
every rank is verified against a float64 product of the same inputs (cuBLAS DGEMM on the GPU) before anything is
timed; an op that fails is reported FAILED and not timed. Then, on the same shards: the op as a caller calls it
(agreement included), its communication alone and its computation alone (``Plan.execute`` with one half switched
off, agreement excluded: the overhead counts as not hidden), the non-overlapped peer (one collective, one
``torch.mm``) and PyTorch's fused symmetric-memory op where it runs, each verified too. A one-GPU GEMM of the
per-rank shape (weak) or of the whole problem (strong) on rank 0 gives ``t(1 GPU)``, timed again on the same
tensors right after each op's record (``one_gpu_ms``), so both are measured at the same clocks.

Timing: warm-up calls, then per iteration a device synchronize and a barrier, CUDA events around the call
(perf_counter on the CPU); an iteration lasts as long as its slowest rank, and the record keeps the median over
iterations. Records: ``{"op", "scaling", "gpus", "m", "n", "k", "ms", "tflops", "efficiency",
"hidden_fraction", "peer_ms", "verified", ...}`` with tflops the aggregate 2MNK / ms.
"""
from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from dataclasses import asdict, dataclass
from time import perf_counter
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist

from gemmlab.cli_parser import _Parser, output_path
from gemmlab.distributed import peers, runtime
from gemmlab.distributed.all_gather import AllGatherMatmul, all_gather_matmul
from gemmlab.distributed.collective import FACT_COUNT, check, exchange, gather_rows, local_matmul, output_dtype
from gemmlab.distributed.partition import bounds, grid_coords, grid_side
from gemmlab.distributed.reduce_scatter import MatmulReduceScatter, matmul_reduce_scatter
from gemmlab.distributed.scaling import SCALINGS, efficiency, global_problem, hidden_fraction, tflops
from gemmlab.distributed.summa import Summa, new_group, summa
from gemmlab.errors import DistributedError, GemmlabError
from gemmlab.harness.reference import compare, tolerance_for
from gemmlab.harness.timing import Timing
from gemmlab.problem import PRECISIONS, Problem, parse_shape

# the precisions whose operands come without scales, as torch names their dtypes
DTYPES = {name: getattr(torch, p.input_dtype) for name, p in PRECISIONS.items() if not p.scaled}
GPU_DEFAULTS = {"shape": "8192", "strong_shape": "16384", "precision": "bf16"}
CPU_DEFAULTS = {"shape": "128", "strong_shape": "256", "precision": "fp32"}  # a smoke test, not a measurement


Split = tuple[int, int] | None  # (parts, index) of a dimension, or None: whole


@dataclass(frozen=True)
class Layout:
    """Which block of A, B and C a rank holds: (row split, column split) each."""

    a: tuple[Split, Split]
    b: tuple[Split, Split]
    c: tuple[Split, Split]


def _ag_layout(gpus: int, rank: int) -> Layout:
    return Layout(a=((gpus, rank), None), b=(None, (gpus, rank)), c=(None, (gpus, rank)))


def _rs_layout(gpus: int, rank: int) -> Layout:
    return Layout(a=(None, (gpus, rank)), b=((gpus, rank), None), c=((gpus, rank), None))


def _summa_layout(gpus: int, rank: int) -> Layout:
    q = grid_side(gpus)
    i, j = grid_coords(rank, q)
    return Layout(a=((q, i), (q, j)), b=((q, i), (q, j)), c=((q, i), (q, j)))


@dataclass(frozen=True)
class OpBench:
    name: str
    plan: type
    call: Callable
    layout: Callable[[int, int], Layout]
    peer: Callable
    fused: Callable | None
    takes_chunks: bool = True


OPS = {
    "all-gather": OpBench("all_gather_matmul", AllGatherMatmul, all_gather_matmul, _ag_layout,
                          peers.all_gather_then_mm, peers.fused_all_gather_mm),
    "reduce-scatter": OpBench("matmul_reduce_scatter", MatmulReduceScatter, matmul_reduce_scatter, _rs_layout,
                              peers.mm_then_reduce_scatter, peers.fused_mm_reduce_scatter),
    "summa": OpBench("summa", Summa, summa, _summa_layout, peers.gather_blocks_then_mm, None, takes_chunks=False),
}


def _cut(x, rows: Split, cols: Split):
    r = slice(*bounds(x.shape[0], *rows)) if rows else slice(None)
    c = slice(*bounds(x.shape[1], *cols)) if cols else slice(None)
    return x[r, c]


@dataclass(frozen=True)
class Options:
    ops: tuple[str, ...]
    shape: tuple[int, int, int]
    strong_shape: tuple[int, int, int]
    scalings: tuple[str, ...]
    gpus: tuple[int, ...] | None
    precision: str
    kernel: str | None
    chunks: int | None
    repeat: int
    warmup: int
    seed: int
    timeout_s: float
    json: str | None
    figure: str | None
    fused: bool


def _counts(text: str) -> tuple[int, ...]:
    """--gpus: comma-separated GPU counts, each at least 1 (the most the job has is checked once it runs)."""
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of GPU counts, e.g. 1,2,4") from None
    if min(counts) < 1:
        raise argparse.ArgumentTypeError(f"GPU counts are at least 1, got {text}")
    return counts


def parser() -> argparse.ArgumentParser:
    # gemmlab's parser: a bad option told in one line, exit 2, as for every other command
    p = _Parser(prog="gemmlab bench --distributed", description=(
        "Weak and strong scaling of gemmlab's distributed GEMMs and the share of communication they hide, against "
        "their peers in the same run. Run it on every rank: torchrun --standalone --nproc-per-node N -m gemmlab bench "
        "--distributed ..."))
    p.add_argument("--ops", default=",".join(OPS), help=f"comma-separated, from {', '.join(OPS)}")
    p.add_argument("--shape", help="per-rank M×N×K for weak scaling (default 8192 on GPUs, 128 on CPUs)")
    p.add_argument("--strong-shape", help="total M×N×K for strong scaling (default 16384 on GPUs, 256 on CPUs)")
    p.add_argument("--scaling", default=",".join(SCALINGS), help="weak, strong or both (default)")
    p.add_argument("--gpus", type=_counts,
                   help="comma-separated GPU counts (default 1, 2, 4, ... up to the ranks present)")
    p.add_argument("--precision", choices=sorted(DTYPES),
                   help="what the local GEMMs compute, passed to gemmlab.matmul (a kernel that cannot is refused): "
                        "bf16 on GPUs (default), fp32 on CPUs")
    p.add_argument("--kernel", "--kernels", dest="kernel",
                   help="local GEMM for gemmlab.matmul, e.g. cuda/tc4_persistent_bf16 (default: gemmlab's choice)")
    p.add_argument("--chunks", type=int, help="pieces per rank's block (default: the op's own)")
    p.add_argument("--repeat", type=int, default=30, help="timed iterations per measurement")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--timeout", type=float, default=runtime.DEFAULT_TIMEOUT_S,
                   help="seconds a rank waits for the others before it raises")
    p.add_argument("--json", help="results file (default results/<gpu>x<ranks>/distributed.json)")
    p.add_argument("--figure", help="scaling figure (default: distributed.png beside the JSON)")
    p.add_argument("--no-fused", action="store_true", help="skip PyTorch's fused symmetric-memory peers")
    return p


def options(argv: list[str]) -> Options:
    args = parser().parse_args(argv)
    defaults = GPU_DEFAULTS if torch.cuda.is_available() else CPU_DEFAULTS
    ops = tuple(o.strip() for o in args.ops.split(",") if o.strip())
    scalings = tuple(s.strip() for s in args.scaling.split(",") if s.strip())
    for name, given, known in (("--ops", ops, OPS), ("--scaling", scalings, SCALINGS)):
        unknown = [x for x in given if x not in known]
        if unknown or not given:
            raise GemmlabError(f"{name} {','.join(given)}: choose from {', '.join(known)}")
    if args.repeat < 1 or args.warmup < 0 or (args.chunks is not None and args.chunks < 1):
        raise GemmlabError("--repeat and --chunks must be at least 1 and --warmup at least 0")
    if not math.isfinite(args.timeout) or args.timeout <= 0:  # c10d takes it as a timedelta: 0 or less never waits
        raise GemmlabError(f"--timeout {args.timeout:g}: the seconds a rank waits for the others, a finite number "
                           "above 0")
    for flag, path in (("--json", args.json), ("--figure", args.figure)):
        if path is not None:  # checked before the run, as the other commands' files are
            output_path(path, flag)
    return Options(ops=ops, shape=parse_shape(args.shape or defaults["shape"]),
                   strong_shape=parse_shape(args.strong_shape or defaults["strong_shape"]), scalings=scalings,
                   gpus=args.gpus, precision=args.precision or defaults["precision"], kernel=args.kernel,
                   chunks=args.chunks, repeat=args.repeat, warmup=args.warmup, seed=args.seed,
                   timeout_s=args.timeout, json=args.json, figure=args.figure, fused=not args.no_fused)


def _device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time(fn, group, device, opt: Options) -> dict:
    """Median and spread of ``fn`` over opt.repeat iterations, each as long as its slowest rank."""
    for _ in range(opt.warmup):
        fn()
    cuda = device.type == "cuda"
    marks, local = [], []
    for _ in range(opt.repeat):
        _sync(device)
        dist.barrier(group=group)
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            marks.append((start, end))
        else:
            t0 = perf_counter()
            fn()
            local.append((perf_counter() - t0) * 1e3)
    _sync(device)
    if cuda:
        local = [start.elapsed_time(end) for start, end in marks]
    slowest = [max(column) for column in zip(*gather_rows(local, group, torch.float64))]
    return Timing(slowest, "warm").summary()


def _compare(c, ref, tol: float):
    """The harness's compare on float64 copies: NumPy on the CPU, CuPy on the tensors' own GPU (whatever device
    CuPy was last pointed at: gemmlab's device probe points it at GPU 0)."""
    c, ref = c.detach().double(), ref.detach().double()
    if not c.is_cuda:
        return compare(c.numpy(), ref.numpy(), tol)
    import cupy

    with cupy.cuda.Device(c.device.index):
        return compare(cupy.from_dlpack(c), cupy.from_dlpack(ref), tol)


def _verify(c, ref, tol: float, group) -> tuple[bool, float]:
    """(every rank passed, largest relative error) against the float64 reference of each rank's output."""
    report = _compare(c, ref, tol)
    rows = gather_rows([float(report.passed), report.rel_err], group, torch.float64)
    return all(r[0] == 1.0 for r in rows), max(r[1] for r in rows)


def _inputs(m: int, n: int, k: int, precision: str, device, seed: int):
    """Seeded N(0, 1) A and B, the same on every rank (same generator, same device type)."""
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn((m, k), generator=g, device=device, dtype=torch.float32).to(DTYPES[precision])
    b = torch.randn((k, n), generator=g, device=device, dtype=torch.float32).to(DTYPES[precision])
    return a, b


def _even(problem: tuple[int, int, int], gpus: int) -> bool:
    return all(d % gpus == 0 for d in problem)


def measure_op(spec: OpBench, scaling: str, shape, gpus: int, group, opt: Options, device) -> dict:
    """One record: verify the op and its peers on this count's shards, then time all of them."""
    m, n, k = global_problem(spec.name, shape, gpus, scaling)
    rank = group.rank()
    record = {"op": spec.name, "scaling": scaling, "gpus": gpus, "m": m, "n": n, "k": k,
              "per_rank": list(shape) if scaling == "weak" else None, "precision": opt.precision,
              "kernel": opt.kernel or "gemmlab default"}
    A, B = _inputs(m, n, k, opt.precision, device, opt.seed)
    layout = spec.layout(gpus, rank)
    a, b = _cut(A, *layout.a).contiguous(), _cut(B, *layout.b).contiguous()
    ref = _cut(A, layout.c[0], None).double() @ _cut(B, None, layout.c[1]).double()
    del A, B
    tol = tolerance_for(Problem(m, n, k, opt.precision))
    kwargs = {"group": group, "kernel": opt.kernel, "precision": opt.precision}
    if spec.takes_chunks and opt.chunks is not None:
        kwargs["chunks"] = opt.chunks
    plan = spec.plan(a, b, **kwargs)
    c = plan.run()
    check(group)  # a rank whose GEMM failed stops the sweep here, on every rank, as the op's next call would
    verified, rel_err = _verify(c, ref, tol, group)
    record.update(verified=verified, rel_err=rel_err, chunks=plan.chunks if spec.takes_chunks else None)
    if not verified:
        record["status"] = "FAILED"
        return record
    together = _time(lambda: spec.call(a, b, **kwargs), group, device, opt)
    comm = _time(lambda: plan.execute(compute=False), group, device, opt)
    compute = _time(lambda: plan.execute(communicate=False), group, device, opt)
    record.update(status="ok", ms=together["median_ms"], iqr_ms=together["iqr_ms"], samples=together["samples"],
                  tflops=tflops(m, n, k, together["median_ms"]), comm_ms=comm["median_ms"],
                  compute_ms=compute["median_ms"],
                  hidden_fraction=hidden_fraction(comm["median_ms"], compute["median_ms"], together["median_ms"])
                  if gpus > 1 else None)  # one rank sends nothing
    record.update(_peer(spec.peer, a, b, ref, tol, group, device, opt, "peer"))
    record.update(_peer(spec.fused, a, b, ref, tol, group, device, opt, "fused_peer",
                        _fused_reason(spec, opt, a, group, (m, n, k), gpus)))
    return record


def _fused_reason(spec: OpBench, opt: Options, a, group, problem, gpus: int) -> str | None:
    """Why PyTorch's fused op is not timed for this record (the same answer on every rank), or None."""
    if spec.fused is None:
        return "PyTorch has no fused op for this layout"
    if not opt.fused:
        return "--no-fused"
    if not _even(problem, gpus):
        return "ragged shards (the fused ops take equal shards)"
    return peers.fused_reason(a, group)


def _peer(fn, a, b, ref, tol, group, device, opt, key: str, reason: str | None = None) -> dict:
    """{key: what ran or why not, key_ms: its median or None}. The ranks agree that it ran everywhere before it
    is verified, and that it matched before it is timed, so a peer that fails on one rank fails on all."""
    if reason is None:
        out, local = None, None
        try:
            out = fn(a, b, group)
        except Exception as exc:  # noqa: BLE001 - a peer that cannot run here is reported, not fatal
            local = f"{type(exc).__name__}: {exc}"
        try:
            exchange(group, key, [0] * FACT_COUNT, local)
            if not _verify(out, ref, tol, group)[0]:
                reason = "did not match the float64 reference"
        except DistributedError as exc:
            reason = str(exc)
    if reason is not None:
        return {key: f"not run: {reason}", f"{key}_ms": None}
    return {key: fn.__name__, f"{key}_ms": _time(lambda: fn(a, b, group), group, device, opt)["median_ms"]}


def measure_one_gpu(shape, scaling: str, group, opt: Options, device) -> tuple[dict, Callable[[], float] | None]:
    """The single-GPU GEMM each scaling compares with, on rank 0 alone (``group`` holds only rank 0): its record,
    and a function that times it again on the same tensors (None if it failed)."""
    m, n, k = shape
    a, b = _inputs(m, n, k, opt.precision, device, opt.seed)
    out = torch.empty((m, n), dtype=output_dtype(a.dtype), device=device)
    local_matmul(a, b, out, opt.kernel, opt.precision)
    verified, rel_err = _verify(out, a.double() @ b.double(), tolerance_for(Problem(m, n, k, opt.precision)), group)
    record = {"op": "gemm", "scaling": scaling, "gpus": 1, "m": m, "n": n, "k": k, "precision": opt.precision,
              "kernel": opt.kernel or "gemmlab default", "verified": verified, "rel_err": rel_err,
              "status": "ok" if verified else "FAILED"}
    if not verified:
        return record, None

    def retime() -> float:
        return _time(lambda: local_matmul(a, b, out, opt.kernel, opt.precision), group, device, opt)["median_ms"]

    t = _time(lambda: local_matmul(a, b, out, opt.kernel, opt.precision), group, device, opt)
    record.update(ms=t["median_ms"], iqr_ms=t["iqr_ms"], samples=t["samples"], tflops=tflops(m, n, k, t["median_ms"]))
    return record, retime


def run(opt: Options) -> dict | None:
    """The whole sweep, collective over the world; the results on rank 0, None elsewhere."""
    world = runtime.init(opt.timeout_s)
    rank, ranks = world.rank(), world.size()
    device = _device()
    # the peers' cuBLAS GEMMs (torch.mm, the fused ops) multiply FP32 operands as TF32 only when this is on
    torch.backends.cuda.matmul.allow_tf32 = PRECISIONS[opt.precision].tf32_multiply
    counts = sorted(set(opt.gpus or [c for c in (1, 2, 4, 8, 16, 32, 64) if c < ranks] + [ranks]))
    if counts[-1] > ranks:
        raise GemmlabError(f"--gpus {','.join(map(str, counts))}: this job has {ranks} ranks")
    # every rank creates every group, in the same order; new_group makes SUMMA's grid of a square count with it
    groups = {c: world if c == ranks else new_group(list(range(c))) for c in counts}
    one = groups[1] if 1 in groups else dist.new_group([0], timeout=runtime.group_timeout())
    records = []
    for scaling in opt.scalings:
        shape = opt.shape if scaling == "weak" else opt.strong_shape
        baseline, retime, failure = {}, None, None
        if rank == 0:
            try:
                baseline, retime = measure_one_gpu(shape, scaling, one, opt, device)
            except Exception as exc:  # noqa: BLE001 - the other ranks wait for it: tell them, do not leave them
                failure = f"{type(exc).__name__}: {exc}"
            records.append(baseline)
        exchange(world, "the one-GPU GEMM", [0] * FACT_COUNT, failure)
        for count in counts:
            if rank < count:
                for name in opt.ops:
                    spec = OPS[name]
                    skip = _skip_reason(spec, count)
                    record = ({"op": spec.name, "scaling": scaling, "gpus": count, "status": "skipped",
                               "reason": skip, "verified": None} if skip else
                              measure_op(spec, scaling, shape, count, groups[count], opt, device))
                    if rank == 0:
                        if retime is not None and record.get("ms"):
                            # timed again now: the GPU's clocks drift by a few percent over a sweep, and the op
                            # is compared with the GEMM in the same state, not with the sweep's first minute
                            record["one_gpu_ms"] = retime()
                            record["efficiency"] = efficiency(record["one_gpu_ms"], record["ms"], count, scaling)
                        records.append(record)
            dist.barrier(group=world)
    if rank != 0:
        return None
    return {"env": _env(world, opt), "records": records}


def _skip_reason(spec: OpBench, count: int) -> str | None:
    """SUMMA on a count that is not a square: the same reason on every rank, before any communication."""
    if spec.name != "summa":
        return None
    try:
        grid_side(count)
    except DistributedError as exc:
        return str(exc)
    return None


def _env(world, opt: Options) -> dict:
    from gemmlab.device import gpu
    from gemmlab.harness.env import collect

    env = collect(gpu(), "distributed")
    env["distributed"] = {"ranks": world.size(), "backend": dist.get_backend_config(world),
                          "nccl": ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else None,
                          "multicast": runtime.multicast_settings(), "options": {
                              k: v for k, v in asdict(opt).items() if k not in ("json", "figure")}}
    return env


def default_path(ranks: int) -> Path:
    """results/h200x8/distributed.json on 8 H200s; results/cpux2/... on a CPU."""
    from gemmlab.device import gpu

    info = gpu()
    name = info.name.split()[-1].lower() if info else "cpu"
    return Path("results") / f"{''.join(ch for ch in name if ch.isalnum())}x{ranks}" / "distributed.json"


def main(argv: list[str] | None = None) -> int:
    """Entry of ``gemmlab bench --distributed``: every rank runs it; rank 0 prints, writes and draws."""
    argv = sys.argv[1:] if argv is None else list(argv)
    opt = options(argv)
    joined = dist.is_initialized()
    try:
        results = run(opt)
    finally:
        if not joined and dist.is_initialized():
            dist.destroy_process_group()
    if results is None:
        return 0
    results["env"]["command"] = "gemmlab bench --distributed " + " ".join(shlex.quote(a) for a in argv)
    path = Path(opt.json) if opt.json else default_path(results["env"]["distributed"]["ranks"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=float))
    from gemmlab.report.distributed import print_table, render

    print_table(results)
    figure = render([path], Path(opt.figure) if opt.figure else path.with_name("distributed.png"))
    print(f"wrote {path} and {figure}")
    return 1 if any(r.get("status") == "FAILED" for r in results["records"]) else 0
