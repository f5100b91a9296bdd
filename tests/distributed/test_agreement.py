"""What the ranks agree on, checked without processes: each rank's own verdict, and the verdict every rank draws
from the same exchanged rows. The multi-process tests show the same messages reaching every rank."""
import os
import subprocess
import sys

import pytest
import torch

from gemmlab.distributed import MULTICAST_OFF
from gemmlab.distributed.all_gather import AllGatherMatmul
from gemmlab.distributed.collective import (NO_OUT, PRECISION_NAMES, Facts, common_check, disagreement, local_facts,
                                            output_dtype)
from gemmlab.distributed.reduce_scatter import MatmulReduceScatter
from gemmlab.distributed.runtime import disable_multicast
from gemmlab.distributed.summa import Summa
from gemmlab.errors import DTypeError


def facts(a, b, out=NO_OUT, op=0, dtype=0, chunks=1, precision=-1):
    return Facts(op, dtype, 0, a, b, out, chunks, precision)


def test_output_dtype_follows_gemmlabs_precisions():
    assert output_dtype(torch.float32) == torch.float32
    # BF16 in, BF16 out: torch's rule, the precision records' default (it was FP32 out before); FP16 the same
    assert output_dtype(torch.bfloat16) == torch.bfloat16 and output_dtype(torch.float16) == torch.float16
    with pytest.raises(DTypeError, match="got float64"):
        output_dtype(torch.float64)


@pytest.mark.parametrize("a, b, out, chunks, inner, reason", [
    (torch.ones(4, 3), torch.ones(3, 2), None, 1, True, None),
    (torch.ones(4, 3).numpy(), torch.ones(3, 2), None, 1, True, "A must be a torch tensor"),
    (torch.ones(4), torch.ones(3, 2), None, 1, True, "A must be a 2-D matrix, got 1-D"),
    (torch.ones(4, 3), torch.ones(2, 2), None, 1, True, "inner dimensions differ: A is 4×3 but B is 2×2"),
    (torch.ones(4, 3), torch.ones(2, 2), None, 1, False, None),  # SUMMA's blocks: no local inner dimension
    (torch.ones(4, 3), torch.ones(3, 2).bfloat16(), None, 1, True, "A is torch.float32 but B is torch.bfloat16"),
    (torch.ones(4, 3).double(), torch.ones(3, 2).double(), None, 1, True, "got float64"),
    (torch.ones(4, 3), torch.ones(3, 2), torch.ones(4, 2).bfloat16(), 1, True, "out must be a contiguous torch.float32"),
    (torch.ones(4, 3), torch.ones(3, 2), torch.ones(2, 4).t(), 1, True, "not contiguous"),
    (torch.ones(4, 3), torch.ones(3, 2), None, 0, True, "chunks must be an integer of at least 1"),
])
def test_each_rank_names_what_is_wrong_with_its_own_operands(a, b, out, chunks, inner, reason):
    mine, got = local_facts("all_gather_matmul", a, b, out, chunks, inner, None)
    assert len(mine.row()) == 11 and Facts.from_row(mine.row()) == mine
    if reason is None:
        assert got is None
    else:
        assert reason in got


@pytest.mark.parametrize("a, b, out, precision, reason", [
    (torch.ones(4, 3), torch.ones(3, 2), None, "tf32", None),
    (torch.ones(4, 3).bfloat16(), torch.ones(3, 2).bfloat16(), None, "bf16", None),
    (torch.ones(4, 3).bfloat16(), torch.ones(3, 2).bfloat16(), None, "tf32",
     "precision tf32 takes float32 operands, A and B are bfloat16"),
    (torch.ones(4, 3), torch.ones(3, 2), None, "fp8", "precision must be one of fp32, tf32, bf16, fp16"),
    # a trainable weight: nothing would carry its gradient (and C came back unwritten on 2+ ranks)
    (torch.ones(4, 3), torch.ones(3, 2).requires_grad_(), None, None, "B requires grad"),
    (torch.ones(4, 3).requires_grad_(), torch.ones(3, 2), torch.ones(4, 2).requires_grad_(), None,
     "A and out require grad"),
])
def test_each_rank_checks_its_precision_and_that_nothing_requires_grad(a, b, out, precision, reason):
    mine, got = local_facts("all_gather_matmul", a, b, out, 1, True, precision)
    assert Facts.from_row(mine.row()) == mine
    if reason is None:
        assert got is None
    else:
        assert reason in got and (precision is not None or "torch.no_grad()" in got)


def test_operands_requiring_grad_pass_where_no_graph_is_recorded():
    a, b = torch.ones(4, 3).requires_grad_(), torch.ones(3, 2).requires_grad_()
    for mode in (torch.no_grad, torch.inference_mode):
        with mode():
            assert local_facts("all_gather_matmul", a, b, None, 1, True, None)[1] is None


def test_disagreement_lists_who_holds_what():
    assert disagreement([29, 29, 29], "K") is None
    assert disagreement([29, 29, 30, 29], "K") == "K differs: 29 on ranks 0, 1, 3; 30 on rank 2"


def test_common_check_wants_one_op_dtype_device_chunk_count_and_precision():
    same = [facts((4, 3), (3, 2)) for _ in range(3)]
    assert common_check(same) is None
    assert "the op called differs: all_gather_matmul on ranks 0, 1; summa on rank 2" in common_check(
        same[:2] + [facts((4, 3), (3, 2), op=2)])
    assert "the operand dtype differs" in common_check(same[:2] + [facts((4, 3), (3, 2), dtype=1)])
    assert "chunks differs: 1 on ranks 0, 1; 2 on rank 2" in common_check(same[:2] + [facts((4, 3), (3, 2), chunks=2)])
    assert "precision differs: None on ranks 0, 1; tf32 on rank 2" in common_check(
        same[:2] + [facts((4, 3), (3, 2), precision=PRECISION_NAMES.index("tf32"))])


def test_all_gather_check():
    ok = [facts((10, 29), (29, 6)), facts((9, 29), (29, 5))]
    assert AllGatherMatmul.check(ok) is None
    assert "A's column count K differs: 29 on rank 0; 30 on rank 1" in AllGatherMatmul.check(
        [ok[0], facts((9, 30), (30, 5))])
    assert "rank 1: out is 9×5, the product is 19×5" in AllGatherMatmul.check([ok[0], facts((9, 29), (29, 5), (9, 5))])
    assert "0 rows" in AllGatherMatmul.check([facts((0, 29), (29, 5))] * 2)


def test_reduce_scatter_check():
    ok = [facts((37, 8), (8, 23)), facts((37, 7), (7, 23)), facts((37, 0), (0, 23))]  # a rank may hold no K
    assert MatmulReduceScatter.check(ok) is None
    assert "A's row count M differs: 37 on ranks 0, 1; 36 on rank 2" in MatmulReduceScatter.check(
        ok[:2] + [facts((36, 0), (0, 23))])
    assert "rank 0: out is 12×23, its rows of C are 13×23" in MatmulReduceScatter.check(
        [facts((37, 8), (8, 23), (12, 23))] + ok[1:])
    assert "K = 0" in MatmulReduceScatter.check([facts((4, 0), (0, 2))] * 2)


def test_summa_check_fits_the_blocks_together():
    # 37×23×29 on 2×2: A blocks (19|18)×(15|14), B blocks (15|14)×(12|11)
    ok = [facts((19, 15), (15, 12)), facts((19, 14), (15, 11)), facts((18, 15), (14, 12)), facts((18, 14), (14, 11))]
    assert Summa.check(ok) is None
    bad_height = [facts((19, 15), (15, 12)), facts((20, 14), (15, 11))] + ok[2:]
    assert "A's block height along grid row 0 differs" in Summa.check(bad_height)
    crossed = [facts((19, 14), (15, 12)), facts((19, 15), (15, 11)), facts((18, 14), (14, 12)),
               facts((18, 15), (14, 11))]  # A's K split 14|15 against B's 15|14
    assert "A's block widths by grid column [14, 15] differ from B's block heights by grid row [15, 14]" in \
        Summa.check(crossed)


def test_multicast_stays_off_here_and_in_every_child(monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")  # a caller's setting is overridden, not kept
    disable_multicast()
    assert {k: os.environ[k] for k in MULTICAST_OFF} == MULTICAST_OFF == {
        "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
    child = subprocess.run([sys.executable, "-c", "import os; print(os.environ['NCCL_NVLS_ENABLE'], "
                            "os.environ['TORCH_SYMM_MEM_DISABLE_MULTICAST'], os.environ['NVSHMEM_DISABLE_NVLS'])"],
                           capture_output=True, text=True, check=True)
    assert child.stdout.split() == ["0", "1", "1"]


def test_importing_the_package_turns_multicast_off():
    env = {k: v for k, v in os.environ.items() if k not in MULTICAST_OFF}
    env["NCCL_NVLS_ENABLE"] = "1"
    code = ("import os, gemmlab.distributed; "
            "print(*(os.environ.get(k) for k in ('NCCL_NVLS_ENABLE', 'TORCH_SYMM_MEM_DISABLE_MULTICAST', "
            "'NVSHMEM_DISABLE_NVLS')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["0", "1", "1"]
