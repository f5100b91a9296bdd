"""The process group gemmlab's distributed GEMMs run on, and the rule that keeps NVLink multicast off.

NVLink multicast (NVLS: NCCL's NVLink SHARP algorithms, symmetric memory's multimem objects, NVSHMEM's NVLS
teams) is created with ``cuMulticastCreate``; on the shared H200 hosts that call can put GPUs other users hold
out of service. So it stays off everywhere: importing ``gemmlab.distributed`` writes the three variables below
into ``os.environ`` (overriding any other value), before any process group, NCCL communicator or symmetric
memory exists; every child process inherits them (``torch.multiprocessing``, ``subprocess``, torchrun's
workers when the launcher itself imported gemmlab). Nothing in gemmlab calls ``cuMulticastCreate``.

``init()`` joins the job torchrun describes (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT) with a timeout,
so a rank that dies or never arrives ends its peers' waits with an error instead of a hang. On CUDA it
creates one group with two backends, ``cpu:gloo,cuda:nccl``: tensors on the GPU travel through NCCL, the small
CPU tensors the ranks agree through (shapes, error flags; see ``collective.py``) through gloo, so agreeing
never waits for the GPU.
"""
from __future__ import annotations

import datetime
import os

MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",  # NCCL: no NVLink SHARP (NVLS, NVLS-tree) algorithms, no multicast objects
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",  # torch symmetric memory: no multimem (multicast) mappings
    "NVSHMEM_DISABLE_NVLS": "1",  # NVSHMEM (a symmetric-memory backend): no NVLS teams
}

DEFAULT_TIMEOUT_S = 300.0  # long enough for a timed 8-GPU sweep step, short enough that a lost rank is noticed


def disable_multicast() -> None:
    """Write MULTICAST_OFF into this process's environment (inherited by every child it starts)."""
    os.environ.update(MULTICAST_OFF)


def multicast_settings() -> dict[str, str | None]:
    """The three variables as this process sees them, for the results' environment record."""
    return {name: os.environ.get(name) for name in MULTICAST_OFF}


_timeout_s = DEFAULT_TIMEOUT_S  # the one init() gave the default group; groups gemmlab creates later get it too


def group_timeout() -> datetime.timedelta:
    return datetime.timedelta(seconds=_timeout_s)


def init(timeout_s: float = DEFAULT_TIMEOUT_S):
    """Join (or reuse) the default process group; returns it. One process per GPU, the GPU of LOCAL_RANK."""
    import torch
    import torch.distributed as dist

    global _timeout_s
    disable_multicast()
    if dist.is_initialized():
        return dist.group.WORLD
    missing = [name for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if name not in os.environ]
    if missing:
        from gemmlab.errors import DistributedError

        raise DistributedError(f"no process group to join: {', '.join(missing)} not set; start each rank under "
                               "torchrun (torchrun --nproc-per-node N -m gemmlab bench --distributed ...), which "
                               "sets them")
    _timeout_s = timeout_s
    timeout = group_timeout()
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        dist.init_process_group("cpu:gloo,cuda:nccl", timeout=timeout, device_id=device)
    else:
        dist.init_process_group("gloo", timeout=timeout)
    return dist.group.WORLD


def control_device(group):
    """Where the ranks' agreement tensors live: the CPU when the group has gloo, else this rank's GPU."""
    import torch
    import torch.distributed as dist

    if "gloo" in dist.get_backend_config(group):
        return torch.device("cpu")
    return torch.device("cuda", torch.cuda.current_device())

