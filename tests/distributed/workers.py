"""What each rank runs in the distributed tests: seeded NumPy inputs, this rank's shards, one gemmlab call.

Every rank draws the same global A and B (NumPy, float32) and cuts its own shards the way a caller would, so
the test process can rebuild the whole product from the ranks' answers and compare it with float64 NumPy.
"""
from __future__ import annotations

import datetime
import math
import time

import numpy as np
import torch

import gemmlab.distributed as gd
from gemmlab.distributed.partition import bounds, grid_coords
from gemmlab.errors import DistributedError

KERNEL = "cpu/blas"


def matrices(m: int, n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


def rows(x, parts: int, index: int):
    return x[slice(*bounds(x.shape[0], parts, index))]


def cols(x, parts: int, index: int):
    return x[:, slice(*bounds(x.shape[1], parts, index))]


def tensor(x) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x))


def outcome(call) -> tuple[str, object]:
    """("ok", result) or ("DistributedError", its message); any other exception fails the rank."""
    try:
        result = call()
    except DistributedError as exc:
        return "DistributedError", str(exc)
    return "ok", result.numpy() if isinstance(result, torch.Tensor) else result


def all_gather(rank, world, m, n, k, chunks, shard_b, give_out=False):
    A, B = matrices(m, n, k)
    b = cols(B, world, rank) if shard_b else B
    out = torch.full((m, b.shape[1]), float("nan")) if give_out else None
    c = gd.all_gather_matmul(tensor(rows(A, world, rank)), tensor(b), chunks=chunks, kernel=KERNEL, out=out)
    assert out is None or c is out
    return c.numpy()


def reduce_scatter(rank, world, m, n, k, chunks):
    A, B = matrices(m, n, k)
    return gd.matmul_reduce_scatter(tensor(cols(A, world, rank)), tensor(rows(B, world, rank)), chunks=chunks,
                                    kernel=KERNEL).numpy()


def summa(rank, world, m, n, k):
    A, B = matrices(m, n, k)
    q = math.isqrt(world)
    if q * q == world:
        i, j = grid_coords(rank, q)
        A, B = cols(rows(A, q, i), q, j), cols(rows(B, q, i), q, j)
    return outcome(lambda: gd.summa(tensor(A), tensor(B), kernel=KERNEL))


def failures(rank, world):
    """Four calls that must fail on every rank, then a correct one on the same group."""
    A, B = matrices(37, 23, 29)
    a, b = tensor(rows(A, world, rank)), tensor(B)
    a_k, b_k = tensor(cols(A, world, rank)), tensor(rows(B, world, rank))
    last = world - 1
    return {
        "bad_shape": outcome(lambda: gd.all_gather_matmul(a[:, :-1].contiguous() if rank == 1 else a, b,
                                                          kernel=KERNEL)),
        "dtype_differs": outcome(lambda: gd.all_gather_matmul(a.bfloat16() if rank == 0 else a,
                                                              b.bfloat16() if rank == 0 else b, kernel=KERNEL)),
        "gemm_raises": outcome(lambda: (gd.matmul_reduce_scatter(a_k, b_k, kernel="cuda/v1_naive" if rank == last
                                                                 else KERNEL), gd.check())[0]),
        "other_op": outcome(lambda: gd.matmul_reduce_scatter(a_k, b_k, kernel=KERNEL) if rank == last else
                            gd.all_gather_matmul(a, b, kernel=KERNEL)),
        "after": outcome(lambda: gd.all_gather_matmul(a, b, kernel=KERNEL)),
    }


def folded_failures(rank, world):
    """A GEMM that raises on the last rank only: on the first call of its kind, raised by the next call; on a
    call the ranks agreed on before, raised by check(); and ranks calling two shapes each agreed on earlier, in
    a different order, raise too. Then the group goes on."""
    A, B = matrices(37, 23, 29)
    a, b = tensor(rows(A, world, rank)), tensor(B)
    short_a, short_b = a[:, :20].contiguous(), b[:20].contiguous()  # a second valid call: K = 20
    last = world - 1

    def call(failing=False, a=a, b=b):
        return gd.all_gather_matmul(a, b, kernel="cuda/v1_naive" if failing and rank == last else KERNEL)

    return {
        "first_call": outcome(lambda: call(failing=True)),  # returns on every rank: nothing is waited for
        "next_call": outcome(call),
        "cached_call": outcome(lambda: call(failing=True)),
        "check": outcome(lambda: gd.check()),
        "short": outcome(lambda: call(a=short_a, b=short_b)),
        "crossed": outcome(lambda: call(a=short_a, b=short_b) if rank == last else call()),
        "check_or_op": outcome(lambda: gd.check() if rank == last else call()),
        "after": outcome(call),
        "closed": outcome(lambda: gd.check()),
    }


def agreements(rank, world, calls):
    """How many exchanges among the ranks the first call and each later call of one op make (counted where every
    exchange goes through), and the host time per later call on a 4×4×4 problem, in microseconds."""
    from gemmlab.distributed import collective

    exchanged = []
    plain = collective.all_gather_flat
    collective.all_gather_flat = lambda *args, **kwargs: (exchanged.append(1), plain(*args, **kwargs))[1]
    a, b = torch.ones(4, 4), torch.ones(4, 4)
    try:
        gd.all_gather_matmul(a, b, kernel=KERNEL)
        first = len(exchanged)
        start = time.perf_counter()
        for _ in range(calls):
            gd.all_gather_matmul(a, b, kernel=KERNEL)
        elapsed = time.perf_counter() - start
        later = (len(exchanged) - first) / calls
        gd.check()
    finally:
        collective.all_gather_flat = plain
    return first, later, elapsed / calls * 1e6


def late_rank(rank, world, timeout_s):
    """Rank 0 calls the op on a group with a short timeout; the others never do (they wait elsewhere)."""
    import torch.distributed as dist

    group = dist.new_group(list(range(world)), timeout=datetime.timedelta(seconds=timeout_s))
    result = None
    if rank == 0:
        A, B = matrices(8, 8, 8)
        start = time.monotonic()
        result = outcome(lambda: gd.all_gather_matmul(tensor(rows(A, world, 0)), tensor(B), group=group,
                                                      kernel=KERNEL)), time.monotonic() - start
    dist.barrier()  # the default group, with the long timeout: the others wait here for rank 0
    return result


def cli(rank, world, argv):
    """gemmlab's command line on every rank, as torchrun would start it."""
    from gemmlab.cli import main

    return main(argv)


def peers(rank, world, m, n, k):
    """The non-overlapped peers on ragged shards: all-gather then mm, mm then reduce-scatter, blocks then mm."""
    from gemmlab.distributed import peers as p
    import torch.distributed as dist

    A, B = matrices(m, n, k)
    group = dist.group.WORLD
    q = math.isqrt(world)
    i, j = grid_coords(rank, q)
    return (p.all_gather_then_mm(tensor(rows(A, world, rank)), tensor(B), group).numpy(),
            p.mm_then_reduce_scatter(tensor(cols(A, world, rank)), tensor(rows(B, world, rank)), group).numpy(),
            p.gather_blocks_then_mm(tensor(cols(rows(A, q, i), q, j)), tensor(cols(rows(B, q, i), q, j)),
                                    group).numpy())


def summa_after_subgroups(rank, world):
    """SUMMA's grid made on ranks that joined different subgroups before (as the bench's GPU counts make them):
    [0] and [0, 1] registered on some ranks only. The peer makes the world's grid on first use, summa that of a
    second group spanning the world."""
    import torch.distributed as dist

    from gemmlab.distributed import peers as p

    dist.new_group([0])
    dist.new_group([0, 1])
    spanning = dist.new_group(list(range(world)))
    A, B = matrices(9, 7, 5)
    i, j = grid_coords(rank, math.isqrt(world))
    a, b = tensor(cols(rows(A, 2, i), 2, j)), tensor(cols(rows(B, 2, i), 2, j))
    return (p.gather_blocks_then_mm(a, b, dist.group.WORLD).numpy(),
            outcome(lambda: gd.summa(a, b, group=spanning, kernel=KERNEL)))


def summa_on_a_subgroup(rank, world):
    """Ranks 0-3 of 5: summa on a group made by gemmlab's new_group (its grid made by every rank, after a subgroup
    only rank 0 joined), and on one made by torch's, which has no grid; rank 4 only takes part in making groups."""
    import torch.distributed as dist

    dist.new_group([0])
    made = gd.new_group([0, 1, 2, 3])
    torchs = dist.new_group([0, 1, 2, 3])
    if rank == 4:
        return None
    A, B = matrices(9, 7, 5)
    i, j = grid_coords(rank, 2)
    a, b = tensor(cols(rows(A, 2, i), 2, j)), tensor(cols(rows(B, 2, i), 2, j))
    return (outcome(lambda: gd.summa(a, b, group=made, kernel=KERNEL)),
            outcome(lambda: gd.summa(a, b, group=torchs, kernel=KERNEL)))


def absent_from_new_group(rank, world):
    """Rank 0 makes a group with rank 1, which never does: a timeout of the store, told as DistributedError."""
    if rank == 1:
        return None
    start = time.monotonic()
    return outcome(lambda: gd.new_group([0, 1])), time.monotonic() - start


def views(rank, world):
    """Operands that are views, as a caller cuts them, not contiguous: SUMMA's blocks of A and B, and an
    all-gather shard stored column-major (sent in two pieces each)."""
    A, B = matrices(8, 8, 8)
    At, Bt = tensor(A), tensor(B)
    i, j = grid_coords(rank, 2)
    a_block, b_block = At[4 * i:4 * i + 4, 4 * j:4 * j + 4], Bt[4 * i:4 * i + 4, 4 * j:4 * j + 4]
    shard = At[2 * rank:2 * rank + 2].t().contiguous().t()  # same values, column-major
    assert not (a_block.is_contiguous() or b_block.is_contiguous() or shard.is_contiguous())
    blocks = gd.summa(a_block, b_block, kernel=KERNEL).numpy()
    gathered = gd.all_gather_matmul(shard, Bt, kernel=KERNEL, chunks=2).numpy()
    return blocks, gathered


def grads(rank, world):
    """B requiring grad on rank 0 only, under grad mode: refused on every rank; under no_grad it runs."""
    A, B = matrices(6, 5, 4)
    a, b = tensor(rows(A, world, rank)), tensor(B)
    w = b.clone().requires_grad_(rank == 0)
    refused = outcome(lambda: gd.all_gather_matmul(a, w, kernel=KERNEL))
    with torch.no_grad():
        ran = outcome(lambda: gd.all_gather_matmul(a, w, kernel=KERNEL))
    return refused, ran, outcome(lambda: gd.check())


def bad_groups(rank, world):
    """A group this rank is not in (rank 1 of new_group([0])), and something that is no group at all."""
    import torch.distributed as dist

    only_0 = dist.new_group([0])
    a = torch.ones(2, 2)
    got = {"not_a_group": outcome(lambda: gd.all_gather_matmul(a, a, group="world", kernel=KERNEL))}
    if rank == 1:
        got["not_a_member"] = outcome(lambda: gd.all_gather_matmul(a, a, group=only_0, kernel=KERNEL))
        got["check"] = outcome(lambda: gd.check(only_0))
    return got


def precisions(rank, world, argv):
    """The bench's command line with every gemmlab.matmul call's precision recorded: (exit code, precisions, what
    it wrote to stderr)."""
    import contextlib
    import io

    import gemmlab
    from gemmlab.cli import main

    seen = set()
    plain = gemmlab.matmul

    def spy(*args, precision=None, **kwargs):
        seen.add(precision)
        return plain(*args, precision=precision, **kwargs)

    gemmlab.matmul = spy
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        gemmlab.matmul = plain
    return code, sorted(seen, key=str), err.getvalue()
