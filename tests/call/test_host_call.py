"""A call on host arrays: an out_dtype the precision does not write is refused, not ignored; a NumPy array with a
tensor is refused naming both kinds; a C larger than the machine's memory is refused before any allocation, with
what it needs and what there is."""
import os

import numpy as np
import pytest
import torch

import gemmlab
from gemmlab.errors import DTypeError, LayoutError, SizeLimitError

A = np.ones((4, 3), np.float32)
B = np.ones((3, 5), np.float32)


def test_an_out_dtype_fp32_does_not_write_is_refused_for_numpy_operands():
    with pytest.raises(DTypeError, match="out_dtype='bfloat16': fp32 writes float32"):
        gemmlab.matmul(A, B, out_dtype="bfloat16")


def test_a_numpy_array_with_a_tensor_is_refused_naming_both_kinds():
    with pytest.raises(LayoutError, match="A is a numpy array and B a torch array: pass two arrays of one kind"):
        gemmlab.matmul(A, torch.from_numpy(B))


def test_a_c_past_the_machines_memory_is_refused_with_both_sizes(monkeypatch):
    pages = {"SC_PHYS_PAGES": 2**20, "SC_PAGE_SIZE": 4096}  # 4 GiB
    monkeypatch.setattr(os, "sysconf", lambda name: pages[name])
    m = n = 2**16  # C: 16 GiB of float32
    with pytest.raises(SizeLimitError, match=r"C \(65536×65536 float32\) needs 16\.0 GiB; this machine has 4\.0 GiB "
                                             "of memory"):
        gemmlab.matmul(np.ones((m, 1), np.float32), np.ones((1, n), np.float32), kernel="cpu/blas")
