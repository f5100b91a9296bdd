"""An ``out`` that cannot hold the product is refused, each way it can be wrong on its own, with a message that says
what it should be and what was given: a torch tensor of the wrong shape, dtype or layout, and a NumPy array whose
only fault is its dtype is not called non-contiguous."""
import numpy as np
import pytest
import torch

import gemmlab
from gemmlab.errors import LayoutError

gen = torch.Generator().manual_seed(3)
A = torch.randn(7, 5, generator=gen)
B = torch.randn(5, 3, generator=gen)


@pytest.mark.parametrize("out, got", [
    (torch.empty(3, 7), r"got \(3, 7\) float32 on cpu"),
    (torch.empty(7, 3, dtype=torch.float64), r"got \(7, 3\) float64 on cpu"),
    (torch.empty(3, 7).t(), r"got \(7, 3\) float32 \(not contiguous\) on cpu"),  # the right shape and dtype
])
def test_a_torch_out_wrong_in_one_way_is_refused_and_described(out, got):
    with pytest.raises(LayoutError, match=r"out must be a C-contiguous \(7, 3\) float32 array on the host") as e:
        gemmlab.matmul(A, B, out=out)
    assert e.match(got)


def test_a_numpy_out_is_called_non_contiguous_only_when_it_is():
    a, b = A.numpy(), B.numpy()
    with pytest.raises(LayoutError) as e:
        gemmlab.matmul(a, b, out=np.empty((7, 3), np.float64))
    assert str(e.value).endswith("got (7, 3) float64")
    with pytest.raises(LayoutError, match=r"got \(7, 3\) float32 \(not C-contiguous\)"):
        gemmlab.matmul(a, b, out=np.empty((3, 7), np.float32).T)
