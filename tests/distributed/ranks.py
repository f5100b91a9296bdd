"""Run a function on P local processes joined by gloo, as torchrun would start them, and collect what each returns.

Processes come from a forkserver that imported torch and gemmlab once, so a group of 4 starts in well under a
second; each joins through the same environment variables torchrun sets. A group that has not finished by the
deadline is killed and reported as hung, which is what the failure tests guard against.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import socket
import time
import traceback

_CTX = mp.get_context("forkserver")
# imported once in the server, so every rank starts with them: torch, gemmlab's distributed package and bench, the
# CPU kernels the ranks multiply with (numba included, for cpu/v0_naive's module) and the CUDA kernel modules a
# failing rank asks for on a machine without a GPU
_CTX.set_forkserver_preload(["torch", "torch.distributed", "numpy", "gemmlab.distributed", "gemmlab.distributed.bench",
                             "gemmlab.report.distributed", "gemmlab.kernels.cpu.blas", "gemmlab.kernels.cpu.v0_naive",
                             "gemmlab.kernels.cuda.sgemm.v1_naive"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(fn, rank, world, port, timeout_s, args, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
    import torch.distributed as dist

    from gemmlab.distributed import init

    try:
        init(timeout_s=timeout_s)
        results.put((rank, "ok", fn(rank, world, *args)))
    except BaseException as exc:  # the parent reports it
        results.put((rank, "raised", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_ranks(fn, world: int, *args, timeout_s: float = 20.0, deadline_s: float = 60.0) -> list:
    """fn(rank, world, *args) on ``world`` processes; returns their results by rank. Raises AssertionError if a
    rank raised outside fn's own handling or the group did not finish by ``deadline_s``."""
    results = _CTX.Queue()
    port = _free_port()
    procs = [_CTX.Process(target=_child, args=(fn, r, world, port, timeout_s, args, results)) for r in range(world)]
    for p in procs:
        p.start()
    out, end = {}, time.monotonic() + deadline_s
    try:
        while len(out) < world:
            try:
                rank, status, value = results.get(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"ranks {sorted(set(range(world)) - set(out))} did not finish within "
                                     f"{deadline_s} s (hung)") from None
            if status != "ok":
                raise AssertionError(f"rank {rank} raised:\n{value}")
            out[rank] = value
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
    return [out[r] for r in range(world)]
