"""The three distributed GEMMs on 2 and 4 CPU processes (gloo, cpu/blas), against float64 NumPy, on ragged shapes;
and failures: every rank raises the same clear error, nothing hangs, and the group still works afterwards."""
import numpy as np
import pytest
import torch
import torch.distributed as dist

import gemmlab.distributed as gd
import workers
from gemmlab.distributed.partition import bounds, grid_coords
from gemmlab.errors import DistributedError
from ranks import run_ranks

FP32_TOLERANCE = 1e-5  # gemmlab's FP32 bar, relative Frobenius error against float64


def rel_err(c, ref) -> float:
    return float(np.linalg.norm(c - ref) / np.linalg.norm(ref))


def reference(m, n, k):
    A, B = workers.matrices(m, n, k)
    return A.astype(np.float64) @ B.astype(np.float64)


@pytest.mark.parametrize("world, m, n, k, chunks, shard_b", [
    (2, 37, 23, 29, 1, False),  # B replicated: every rank gets all of C
    (4, 37, 23, 29, 3, True),  # B sharded by columns (23 over 4: 6, 6, 6, 5), 37 rows: 10, 9, 9, 9 in 3 pieces each
    (4, 3, 5, 7, 2, False),  # fewer rows than ranks: rank 3 holds none
])
def test_all_gather_matmul(world, m, n, k, chunks, shard_b):
    outs = run_ranks(workers.all_gather, world, m, n, k, chunks, shard_b)
    ref = reference(m, n, k)
    for rank, c in enumerate(outs):
        want = ref[:, slice(*bounds(n, world, rank))] if shard_b else ref
        assert c.dtype == np.float32 and c.shape == want.shape
        assert rel_err(c, want) < FP32_TOLERANCE


def test_all_gather_matmul_writes_into_out():
    outs = run_ranks(workers.all_gather, 2, 19, 6, 11, 2, False, True)
    for c in outs:
        assert not np.isnan(c).any() and rel_err(c, reference(19, 6, 11)) < FP32_TOLERANCE


@pytest.mark.parametrize("world, m, n, k, chunks", [
    (2, 37, 23, 29, None),  # default: 4 pieces per rank's rows
    (4, 37, 23, 29, 2),  # K 29 over 4 ranks: 8, 7, 7, 7; rows 10, 9, 9, 9
    (4, 9, 4, 3, 1),  # K=3 over 4 ranks: rank 3 holds no K and contributes zeros
])
def test_matmul_reduce_scatter(world, m, n, k, chunks):
    outs = run_ranks(workers.reduce_scatter, world, m, n, k, chunks)
    ref = reference(m, n, k)
    for rank, c in enumerate(outs):
        want = ref[slice(*bounds(m, world, rank))]
        assert c.dtype == np.float32 and c.shape == want.shape
        assert rel_err(c, want) < FP32_TOLERANCE
    assert np.concatenate(outs).shape == ref.shape


@pytest.mark.parametrize("m, n, k", [(37, 23, 29), (2, 3, 1)])  # ragged blocks; K=1: one K block is empty
def test_summa_on_a_2x2_grid(m, n, k):
    outs = run_ranks(workers.summa, 4, m, n, k)
    ref = reference(m, n, k)
    for rank, (status, c) in enumerate(outs):
        i, j = grid_coords(rank, 2)
        want = ref[slice(*bounds(m, 2, i)), slice(*bounds(n, 2, j))]
        assert status == "ok" and c.shape == want.shape
        assert rel_err(c, want) < FP32_TOLERANCE


def test_summa_refuses_a_rank_count_that_is_not_a_square():
    outs = run_ranks(workers.summa, 2, 8, 8, 8)
    for status, message in outs:
        assert status == "DistributedError"
        assert "square number of ranks" in message and "2 ranks" in message


@pytest.mark.parametrize("world", [2, 4])
def test_a_failing_rank_fails_every_rank_and_the_group_goes_on(world):
    outs = run_ranks(workers.failures, world, deadline_s=30)
    last = world - 1
    for rank, got in enumerate(outs):
        mine = f"this is rank {rank})"
        status, message = got["bad_shape"]
        assert status == "DistributedError" and "rank 1: inner dimensions differ" in message and mine in message
        status, message = got["dtype_differs"]
        assert status == "DistributedError" and "dtype differs: bfloat16 on rank 0" in message
        status, message = got["gemm_raises"]  # raised inside rank `last`'s GEMM, after the agreement
        assert status == "DistributedError" and f"rank {last}: NoGPUError in the local GEMM" in message
        assert "cuda/v1_naive needs a CUDA GPU" in message and f"failed on 1 of {world} ranks" in message
        status, message = got["other_op"]
        assert status == "DistributedError" and "the op called differs" in message
        assert f"matmul_reduce_scatter on rank {last}" in message
        status, c = got["after"]
        assert status == "ok" and rel_err(c, reference(37, 23, 29)) < FP32_TOLERANCE


@pytest.mark.parametrize("world", [2, 3])
def test_a_failing_gemm_is_raised_on_every_rank_by_the_next_agreement(world):
    outs = run_ranks(workers.folded_failures, world, deadline_s=30)
    last = world - 1
    ref = reference(37, 23, 29)
    for rank, got in enumerate(outs):
        for first, then in (("first_call", "next_call"), ("cached_call", "check")):
            assert got[first][0] == "ok"  # the failing rank returns too: its failure travels with the next exchange
            status, message = got[then]
            assert status == "DistributedError" and f"failed on 1 of {world} ranks" in message, (first, message)
            assert f"rank {last}: NoGPUError in the local GEMM" in message and "needs a CUDA GPU" in message
            assert "in an earlier all_gather_matmul call on this group" in message
            assert f"this is rank {rank})" in message
        assert got["short"][0] == "ok"
        status, message = got["crossed"]  # both calls agreed before; this time the ranks bring different ones
        assert status == "DistributedError" and "A's column count K differs" in message
        assert f"20 on rank {last}" in message
        status, message = got["check_or_op"]  # closing the group while another rank calls an op: a mismatch
        assert status == "DistributedError" and ("the call differs" if rank == last else "the op called differs") \
            in message and f"check() on rank {last}" in message
        status, c = got["after"]
        assert status == "ok" and rel_err(c, ref) < FP32_TOLERANCE
        assert got["closed"] == ("ok", None)


@pytest.mark.parametrize("world", [1, 2])
def test_a_call_agreed_on_before_exchanges_once(world, capsys):
    calls = 50
    outs = run_ranks(workers.agreements, world, calls, deadline_s=60)
    for first, later, host_us in outs:
        # before the agreement was folded every call exchanged twice (its opening and its closing agreement)
        assert (first, later) == ((0, 0) if world == 1 else (1, 1))
    with capsys.disabled():
        print(f"\n{world} gloo rank(s): all_gather_matmul 4×4×4, host time per call "
              + ", ".join(f"rank {r}: {us:.0f} µs" for r, (_, _, us) in enumerate(outs)))


def test_a_rank_that_never_calls_ends_in_a_timeout_error_not_a_hang():
    timeout_s = 1.5
    (status, message), waited = run_ranks(workers.late_rank, 2, timeout_s, deadline_s=30)[0]
    assert status == "DistributedError"
    assert "did not arrive within the group's timeout" in message and "rank 0 of 2" in message
    assert timeout_s <= waited < timeout_s + 10



def test_the_non_overlapped_peers_agree_on_ragged_shards():
    m, n, k = 37, 23, 29
    ref = reference(m, n, k)
    for rank, (gathered, scattered, block) in enumerate(run_ranks(workers.peers, 4, m, n, k)):
        i, j = grid_coords(rank, 2)
        assert rel_err(gathered, ref) < FP32_TOLERANCE
        assert rel_err(scattered, ref[slice(*bounds(m, 4, rank))]) < FP32_TOLERANCE
        assert rel_err(block, ref[slice(*bounds(m, 2, i)), slice(*bounds(n, 2, j))]) < FP32_TOLERANCE



def test_summa_and_its_peer_after_ranks_joined_different_subgroups():
    # the grid's groups were made by their members alone, named after how many groups each rank had joined: ranks
    # that had joined [0] or [0, 1] before waited under other names until the timeout
    m, n, k = 9, 7, 5
    ref = reference(m, n, k)
    for rank, (peer, (status, c)) in enumerate(run_ranks(workers.summa_after_subgroups, 4, timeout_s=5,
                                                         deadline_s=30)):
        i, j = grid_coords(rank, 2)
        want = ref[slice(*bounds(m, 2, i)), slice(*bounds(n, 2, j))]
        assert rel_err(peer, want) < FP32_TOLERANCE
        assert status == "ok" and rel_err(c, want) < FP32_TOLERANCE, c


def test_summa_on_a_subgroup_needs_the_grid_new_group_makes():
    m, n, k = 9, 7, 5
    ref = reference(m, n, k)
    outs = run_ranks(workers.summa_on_a_subgroup, 5, timeout_s=5, deadline_s=30)
    assert outs[4] is None
    for rank, ((status, c), (refused, message)) in enumerate(outs[:4]):
        i, j = grid_coords(rank, 2)
        assert status == "ok" and rel_err(c, ref[slice(*bounds(m, 2, i)), slice(*bounds(n, 2, j))]) < FP32_TOLERANCE
        assert refused == "DistributedError" and "failed on 4 of 4 ranks" in message
        assert "summa on a group of 4 of the world's 5 ranks needs the group's grid" in message
        assert "gemmlab.distributed.new_group(ranks)" in message


def test_a_rank_absent_from_new_group_ends_in_a_distributed_error():
    (status, message), waited = run_ranks(workers.absent_from_new_group, 2, timeout_s=1.5, deadline_s=30)[0]
    assert status == "DistributedError" and "new_group: rank 0 of 2: communication failed" in message
    assert "a rank did not call new_group" in message and waited < 15


def test_operands_that_are_views_are_sent_as_their_values():
    # gloo sends a tensor's memory in storage order: a block view or a column-major shard arrived as other numbers
    ref = reference(8, 8, 8)
    for rank, (block, gathered) in enumerate(run_ranks(workers.views, 4)):
        i, j = grid_coords(rank, 2)
        assert rel_err(block, ref[4 * i:4 * i + 4, 4 * j:4 * j + 4]) < FP32_TOLERANCE
        assert rel_err(gathered, ref) < FP32_TOLERANCE


def test_operands_requiring_grad_are_refused_on_every_rank():
    # with world size 2 the call returned uninitialized memory, and the next call named out=
    ref = reference(6, 5, 4)
    for rank, (refused, ran, closed) in enumerate(run_ranks(workers.grads, 2)):
        status, message = refused
        assert status == "DistributedError" and "failed on 1 of 2 ranks: rank 0: B requires grad" in message
        assert "torch.no_grad()" in message and f"this is rank {rank})" in message
        assert ran[0] == "ok" and rel_err(ran[1], ref) < FP32_TOLERANCE
        assert closed == ("ok", None)


def test_a_group_this_rank_is_not_in_or_no_group_is_refused_by_name():
    for rank, got in enumerate(run_ranks(workers.bad_groups, 2)):
        status, message = got["not_a_group"]
        assert status == "DistributedError" and "group must be a torch.distributed process group, got str" in message
        if rank == 1:
            for key in ("not_a_member", "check"):
                status, message = got[key]
                assert status == "DistributedError" and "rank 1 is not a member of the group" in message


@pytest.mark.parametrize("call", [
    lambda x: gd.all_gather_matmul(x, x), lambda x: gd.matmul_reduce_scatter(x, x), lambda x: gd.summa(x, x),
    lambda x: gd.check(),
])
def test_without_a_process_group_the_ops_say_so(call):
    # torch's answer was AttributeError: 'NoneType' object has no attribute 'size' (check(): a TypeError)
    assert not dist.is_initialized()  # the ranks run in their own processes; this one never joins
    with pytest.raises(DistributedError, match=r"no process group: call gemmlab\.distributed\.init\(\)"):
        call(torch.ones(2, 2))
