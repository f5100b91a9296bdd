"""Inputs a call must refuse with a GemmlabError naming the problem, on every route (2-D, batched, zero-size, linear,
addmm) and on a repeat call whose plan is cached: nothing here may return a wrong result, raise numpy's or torch's
own error, or run for minutes."""
import numpy as np
import pytest
import torch

import gemmlab
import gemmlab.nn
from gemmlab.errors import (DTypeError, EpilogueError, LayoutError, OperandTypeError, SizeLimitError,
                            UnknownKernelError)


@pytest.fixture(autouse=True)
def _fresh_plans():
    gemmlab.clear_plans()
    yield
    gemmlab.clear_plans()


def ones(*shape):
    return np.ones(shape, np.float32)


@pytest.mark.parametrize("a,b", [(ones(3), ones(3)), (ones(1, 3), ones(3))])
def test_a_numpy_scalar_out_is_refused_not_left_unwritten(a, b):
    """np.float32(0) says it is C-contiguous, and writing into its reshape writes a copy: the product would be lost
    and the untouched scalar returned."""
    with pytest.raises(LayoutError, match="NumPy scalar"):
        gemmlab.matmul(a, b, out=np.float32(0))


def test_masked_arrays_are_refused_on_every_route():
    masked = np.ma.masked_invalid(np.array([[[np.nan, 1.0]], [[2.0, 1.0]]], np.float32))
    calls = [lambda: gemmlab.matmul(masked, ones(2, 2, 1)),  # a batch: broadcast_to would drop the mask
             lambda: gemmlab.matmul(ones(1, 2), np.ma.array(ones(2, 1), mask=True)),
             lambda: gemmlab.linear(ones(1, 2), ones(1, 2), np.ma.array(np.full(1, 1e6, np.float32), mask=True)),
             lambda: gemmlab.addmm(np.ma.array(np.full((1, 1), 1e6, np.float32), mask=True), ones(1, 2),
                                   ones(2, 1))]
    for call in calls:
        with pytest.raises(OperandTypeError, match="masked array"):
            call()


def test_addmm_on_arrays_takes_c_of_their_kind():
    """NumPy would read a tensor c through its own conversion (and fail on one that requires grad)."""
    for c in (torch.ones(3, 5), torch.ones(3, 5, requires_grad=True)):
        with pytest.raises(LayoutError, match="a is a numpy array and c a torch array"):
            gemmlab.addmm(c, ones(3, 4), ones(4, 5))


def test_linear_on_arrays_takes_a_weight_and_bias_of_their_kind():
    """np.dtype of a torch dtype would raise numpy's TypeError."""
    with pytest.raises(LayoutError, match="x is a numpy array and w a torch array"):
        gemmlab.linear(ones(2, 4), torch.ones(3, 4))
    with pytest.raises(LayoutError, match="x is a numpy array and bias a torch array"):
        gemmlab.linear(ones(2, 4), ones(3, 4), torch.ones(3))


@pytest.mark.parametrize("beta", [np.array([0.0, 1.0]), np.array(0.0), "0"])
def test_addmm_on_arrays_checks_beta_before_comparing_it_with_zero(beta):
    """As the tensors' route does: beta = 0 skips c, so a beta that is not a number must not reach that test."""
    with pytest.raises(EpilogueError, match="beta must be a finite real number"):
        gemmlab.addmm(ones(3, 5), ones(3, 4), ones(4, 5), beta=beta)
    with pytest.raises(EpilogueError, match="alpha must be a finite real number"):
        gemmlab.addmm(ones(3, 5), ones(3, 4), ones(4, 5), alpha=beta)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_a_cached_batched_plan_still_checks_a_new_out(kind):
    """The second out differs only in what its checks read (writable, requires_grad): the plan cached for the first
    must not let it through."""
    if kind == "numpy":
        a, b, out = ones(2, 3, 4), ones(2, 4, 5), np.zeros((2, 3, 5), np.float32)
        bad = np.zeros((2, 3, 5), np.float32)
        bad.flags.writeable = False
        match = "read-only"
    else:
        a, b, out = torch.randn(2, 3, 4), torch.randn(2, 4, 5), torch.empty(2, 3, 5)
        bad, match = torch.empty(2, 3, 5, requires_grad=True), "requires grad"
    assert gemmlab.matmul(a, b, out=out) is out
    with pytest.raises(LayoutError, match=match):
        gemmlab.matmul(a, b, out=bad)


def test_a_sparse_tensor_does_not_take_the_plan_of_a_dense_one_with_its_strides():
    """A sparse COO tensor reports strides (0, 0), as an expanded scalar does."""
    A, B = torch.randn(3, 4), torch.randn(4, 5)
    gemmlab.matmul(A[:1, :1].expand(3, 4), B)
    with pytest.raises(LayoutError, match="sparse_coo tensor"):
        gemmlab.matmul(A.to_sparse(), B)
    gemmlab.linear(A[:1, :1].expand(3, 4), B.t()[:1, :1].expand(5, 4))
    with pytest.raises(LayoutError, match="sparse_coo tensor"):
        gemmlab.linear(A.to_sparse(), B.t()[:1, :1].expand(5, 4))


@pytest.mark.parametrize("make", [ones, torch.ones])
@pytest.mark.parametrize("kwargs,error", [({"kernel": ["auto"]}, UnknownKernelError),
                                          ({"precision": ["fp32"]}, DTypeError),
                                          ({"out_dtype": ["float32"]}, DTypeError)])
def test_arguments_of_no_hashable_kind_are_named(make, kwargs, error):
    """The plan cache's lookup hashes them before any check runs."""
    with pytest.raises(error):
        gemmlab.matmul(make(2, 2), make(2, 2), **kwargs)
    with pytest.raises(error):
        gemmlab.matmul(make(2, 0), make(0, 2), **kwargs)
    with pytest.raises(error):
        gemmlab.matmul(make(2, 0, 3), make(2, 3, 2), **kwargs)


def test_an_integer_alpha_past_a_floats_range_is_named():
    with pytest.raises(EpilogueError, match=r"alpha must be a finite real number.*\(401 characters\)"):
        gemmlab.addmm(torch.ones(2, 2), torch.ones(2, 2), torch.ones(2, 2), alpha=10**400)


def test_a_host_batch_past_the_host_kernels_limit_is_refused_at_once():
    """Each product alone passes cpu/blas's limit check; the batch of them is what would run for minutes."""
    n = 16384
    a = np.broadcast_to(np.float32(1), (2, n, n))
    b = np.broadcast_to(ones(2, 1, 1), (2, n, n))
    with pytest.raises(SizeLimitError, match="2 products of 16384x16384x16384"):
        gemmlab.matmul(a, b)


@pytest.mark.parametrize("make", [lambda *s: np.ones(s, np.float32), torch.ones])
def test_c_past_the_hosts_memory_is_a_size_limit_on_every_route(make, monkeypatch):
    """A batch (numpy.matmul's C) and a zero-size product (C made without a kernel) of C past the host's memory."""
    import os

    monkeypatch.setattr(os, "sysconf", lambda name: {"SC_PHYS_PAGES": 1024, "SC_PAGE_SIZE": 4096}[name])  # 4 MiB
    with pytest.raises(SizeLimitError, match=r"C \(4×1024×1024 float32\) needs 0.0 GiB; this machine has 0.0 GiB"):
        gemmlab.matmul(make(4, 1024, 1), make(4, 1, 1024))
    with pytest.raises(SizeLimitError, match=r"C \(1024×2048 float32\)"):
        gemmlab.matmul(make(1024, 0), make(0, 2048))


@pytest.mark.parametrize("make", [lambda *s: np.ones(s, np.float32), torch.ones])
def test_an_empty_batch_gets_the_batchs_kernel_check(make):
    """A batch of host operands runs on numpy.matmul: naming another kernel is refused with no product to run, as
    with one."""
    for a, b in ((make(0, 3, 4), make(0, 4, 5)), (make(2, 0, 4), make(2, 4, 5)), (make(2, 3, 4), make(2, 4, 5))):
        with pytest.raises(LayoutError, match="a batch of host operands runs on the host"):
            gemmlab.matmul(a, b, kernel="cpu/v0_naive")
    assert tuple(gemmlab.matmul(make(0, 3, 4), make(0, 4, 5), kernel="cpu/blas").shape) == (0, 3, 5)


def test_a_lazy_modules_uninitialized_weight_is_named():
    lazy = torch.nn.LazyLinear(5)
    with pytest.raises(OperandTypeError, match="LazyLinear's weight is not initialized yet"):
        gemmlab.nn.Linear.from_linear(lazy)
    for call in (lambda: gemmlab.linear(torch.randn(2, 3), lazy.weight),
                 lambda: gemmlab.matmul(torch.randn(2, 3), lazy.weight),
                 lambda: gemmlab.matmul(lazy.weight, torch.randn(2, 3)),
                 lambda: gemmlab.matmul(torch.randn(4, 2, 3), lazy.weight),  # the N-D route, and a vector's
                 lambda: gemmlab.matmul(torch.randn(3), lazy.weight),
                 lambda: gemmlab.matmul(lazy.weight, torch.randn(4, 2, 3))):
        with pytest.raises(LayoutError, match="uninitialized parameter"):
            call()
    lazy(torch.randn(2, 3))  # initialized by its first call: then it converts
    layer = gemmlab.nn.Linear.from_linear(lazy)
    assert layer.weight is lazy.weight


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_nested_tensors_are_named():
    A, B = torch.randn(3, 4), torch.randn(4, 5)
    nested = torch.nested.nested_tensor([A, A])
    for call in (lambda: gemmlab.matmul(nested, B), lambda: gemmlab.linear(nested, B.t()),
                 lambda: gemmlab.addmm(nested, A, B)):
        with pytest.raises(LayoutError, match="nested tensor"):
            call()


@pytest.mark.parametrize("make", [lambda a, b: (a.numpy(), b), lambda a, b: (a.to_sparse(), b),
                                  lambda a, b: (a.to("meta"), b.to("meta")), lambda a, b: (torch._neg_view(a), b)],
                         ids=["mixed kinds", "sparse", "meta", "negated view"])
def test_plan_refuses_what_matmul_refuses(make):
    """A plan explains a call that can run: operands matmul refuses get the same LayoutError from plan."""
    a, b = make(torch.randn(4, 3), torch.randn(3, 5))
    with pytest.raises(LayoutError) as matmul_error:
        gemmlab.matmul(a, b)
    with pytest.raises(LayoutError) as plan_error:
        gemmlab.plan(a, b)
    assert type(plan_error.value) is type(matmul_error.value)


@pytest.mark.parametrize("kernel", ["cpu/v0_naive", "cpu/blas", "auto"])
def test_an_out_of_another_byte_order_is_refused(kernel):
    """'>f4' is named float32, but a host kernel writes native floats into its bytes: refused, on every host kernel,
    before any plan or after one."""
    a, b = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32)
    gemmlab.matmul(a, b, kernel=kernel, out=np.zeros((4, 5), np.float32))
    with pytest.raises(LayoutError, match="not in native byte order"):
        gemmlab.matmul(a, b, kernel=kernel, out=np.zeros((4, 5), ">f4"))


def test_a_non_contiguous_torch_out_is_said_to_be():
    with pytest.raises(LayoutError, match=r"got \(4, 5\) float32 \(not contiguous\) on cpu"):
        gemmlab.matmul(torch.randn(4, 3), torch.randn(3, 5), out=torch.empty(5, 4).t())


def test_plan_takes_a_cuda_array_interface_beside_a_cupy_array(monkeypatch):
    """matmul runs a CuPy array beside any __cuda_array_interface__ object (it views it as CuPy): plan's kind check
    lets the pair through to the same resolution (here, with no GPU, the refusal that says so)."""
    from gemmlab import call
    from gemmlab.errors import NoGPUError

    cupy_like = type("ndarray", (), {"__module__": "cupy", "ndim": 2})()
    numba_like = type("DeviceNDArray", (), {"__module__": "numba.cuda", "ndim": 2,
                                            "__cuda_array_interface__": {}})()
    assert (call.operands.kind_of(cupy_like), call.operands.kind_of(numba_like)) == ("cupy", "cuda-interface")
    def facts(x, name):
        raise NoGPUError(f"{name}: no GPU")

    monkeypatch.setattr(call, "facts", facts)
    with pytest.raises(NoGPUError):
        gemmlab.plan(cupy_like, numba_like)
