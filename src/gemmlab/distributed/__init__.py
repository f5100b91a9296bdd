"""Tensor-parallel GEMM past one GPU: torch.distributed (NCCL on GPUs, gloo on CPUs), gemmlab's kernels locally.

One process per GPU, started by torchrun; every op is called on every rank of a group with that rank's shards:

    >>> from gemmlab import distributed as gd
    >>> gd.init()                                      # the torchrun job, with a timeout
    >>> C = gd.all_gather_matmul(A_rows, B)            # A sharded by rows, gathered while it multiplies
    >>> C_rows = gd.matmul_reduce_scatter(A_k, B_k)    # K split; partial products reduced by rows as they finish
    >>> C_ij = gd.summa(A_ij, B_ij)                    # q×q grid of blocks, for large square problems
    >>> g = gd.new_group([0, 1, 2, 3])                 # on every rank: a subgroup, with SUMMA's grid
    >>> gd.check()                                     # a rank's failed GEMM in the last call raises here

The local GEMM is ``gemmlab.matmul`` on torch tensors (``kernel=`` and ``precision=`` pick them; None leaves
them to gemmlab), on the caller's stream. A call agrees with the other ranks once, before it sends anything; a
rank whose local GEMM fails makes every rank raise at the group's next call or ``check()``. Importing this
package turns NVLink multicast off for this process and its children (``runtime.MULTICAST_OFF``).
docs/distributed.md explains the agreement, the overlap and how to measure them.
"""
from gemmlab.distributed.runtime import disable_multicast

disable_multicast()  # before anything below can create a process group or symmetric memory

from gemmlab.distributed.all_gather import all_gather_matmul  # noqa: E402
from gemmlab.distributed.collective import check  # noqa: E402
from gemmlab.distributed.partition import bounds, split  # noqa: E402
from gemmlab.distributed.reduce_scatter import matmul_reduce_scatter  # noqa: E402
from gemmlab.distributed.runtime import MULTICAST_OFF, init  # noqa: E402
from gemmlab.distributed.summa import new_group, summa  # noqa: E402

__all__ = ["init", "new_group", "all_gather_matmul", "matmul_reduce_scatter", "summa", "check", "split", "bounds",
           "MULTICAST_OFF"]
