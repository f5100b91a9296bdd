"""gemmlab.epilogue and the call layer's epilogue= / addend=: the host path against the float64 reference for every
activation, addend, alpha and beta; the refusals; the verify harness holding a kernel to the epilogue."""
import math

import numpy as np
import pytest

from gemmlab import call
from gemmlab.epilogue import ACTIVATIONS, Epilogue, activate
from gemmlab.errors import DTypeError, EpilogueError, LayoutError, ShapeError
from gemmlab.harness import verify
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

RNG = np.random.default_rng(7)
A = RNG.standard_normal((9, 13)).astype(np.float32)
B = RNG.standard_normal((13, 6)).astype(np.float32)
BIAS = RNG.standard_normal(6).astype(np.float32)
D = RNG.standard_normal((9, 6)).astype(np.float32)
PRODUCT = A.astype(np.float64) @ B.astype(np.float64)


def _torch_like(activation, x):
    """Each activation written out from its definition, per element in Python floats."""
    f = {None: lambda v: v, "relu": lambda v: max(v, 0.0), "gelu": lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))),
         "gelu_tanh": lambda v: 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))),
         "silu": lambda v: v / (1 + math.exp(-v))}[activation]
    return np.vectorize(f, otypes=[np.float64])(x)


@pytest.mark.parametrize("activation", [None, *ACTIVATIONS])
@pytest.mark.parametrize("alpha,beta,addend", [(1.0, 0.0, None), (2.5, 0.0, None), (1.0, 0.0, "bias"),
                                               (-0.5, 1.0, "bias"), (1.0, 1.0, "matrix"), (0.75, -2.0, "matrix")])
def test_host_path_matches_the_float64_definition(activation, alpha, beta, addend):
    epi = Epilogue(activation, alpha, beta, addend)
    d = {"bias": BIAS, "matrix": D, None: None}[addend]
    c = call.array_matmul(A, B, "auto", None, None, epilogue=epi, addend=d)
    pre = alpha * PRODUCT + (0 if d is None else (1.0 if addend == "bias" else beta) * d.astype(np.float64))
    want = _torch_like(activation, pre)
    assert c.dtype == np.float32 and c.shape == (9, 6)
    np.testing.assert_allclose(c, want, rtol=2e-6, atol=2e-6)


def test_matrix_addend_any_strides_including_a_broadcast_row():
    row = RNG.standard_normal(6).astype(np.float32)
    broadcast = np.broadcast_to(row, (9, 6))  # row stride 0: beta·c for a row c
    transposed = np.ascontiguousarray(D.T).T  # column-major
    for d in (broadcast, transposed):
        epi = Epilogue("silu", 1.5, 0.5, "matrix")
        c = call.array_matmul(A, B, "auto", None, None, epilogue=epi, addend=d)
        np.testing.assert_allclose(c, epi.apply_numpy(PRODUCT, d), rtol=2e-6, atol=2e-6)


def test_torch_cpu_tensors_take_the_epilogue():
    torch = pytest.importorskip("torch")
    from gemmlab import torch_op

    a, b, bias = (torch.from_numpy(x) for x in (A, B, BIAS))
    got = torch_op.direct(a, b, "auto", None, None, epilogue=Epilogue("gelu", addend="bias"), addend=bias)
    want = torch.nn.functional.gelu(a.double() @ b.double() + bias.double())
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), want, rtol=2e-6, atol=2e-6)


def test_activate_keeps_nan_and_silu_saturates():
    x = np.array([np.nan, -1000.0, 1000.0, 0.0])
    assert np.isnan(activate("relu", x)[0])
    silu = activate("silu", x)
    assert silu[1] == 0.0 and silu[2] == 1000.0 and silu[3] == 0.0


def test_plan_key_and_explain_say_the_epilogue():
    call.plans.clear()
    call.array_matmul(A, B, "auto", None, None, epilogue=Epilogue("relu", addend="bias"), addend=BIAS)
    call.array_matmul(A, B, "auto", None, None)
    assert len(call.plans) == 2  # a fused call is a plan of its own
    fused = next(p for p in call.plans.values() if p.epilogue is not None)
    assert "relu(AB + bias)" in fused.explain() and "on the host" in fused.explain()


@pytest.mark.parametrize("make,error,words", [
    (lambda: Epilogue("tanh"), EpilogueError, "'relu', 'gelu', 'gelu_tanh', 'silu'"),
    (lambda: Epilogue(beta=0.5), EpilogueError, "none is given"),
    (lambda: Epilogue(addend="bias", beta=2.0), EpilogueError, "addend='matrix'"),
    (lambda: Epilogue(addend="row"), EpilogueError, "'bias'"),
    (lambda: Epilogue(alpha=float("nan")), EpilogueError, "finite"),
])
def test_bad_epilogues_are_refused(make, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(")):
        make()


@pytest.mark.parametrize("epi,addend,error,words", [
    (Epilogue(addend="bias"), D, ShapeError, "N=6 elements"),
    (Epilogue(addend="matrix", beta=1.0), BIAS, ShapeError, r"\(9, 6\)"),
    (Epilogue(addend="bias"), BIAS.astype(np.float64), DTypeError, "float32; got float64"),
    (Epilogue(addend="bias"), None, EpilogueError, "pass it as addend="),
    (Epilogue("relu"), BIAS, EpilogueError, "adds none"),
    (None, BIAS, EpilogueError, "adds none"),
])
def test_bad_addends_are_refused(epi, addend, error, words):
    with pytest.raises(error, match=words):
        call.array_matmul(A, B, "auto", None, None, epilogue=epi, addend=addend)


def test_an_addend_of_another_kind_is_refused():
    torch = pytest.importorskip("torch")
    with pytest.raises(LayoutError, match="numpy array on the host"):
        call.array_matmul(A, B, "auto", None, None, epilogue=Epilogue(addend="bias"), addend=torch.from_numpy(BIAS))


def test_a_kernel_that_does_not_fuse_is_refused_and_auto_passes_it_over():
    epi = Epilogue("gelu", addend="bias")
    assert get_kernel("cuda/tc5_swap_ab_tf32").epilogue_refusal(epi).error is EpilogueError
    assert get_kernel("cuda/tc1_mma_sync_bf16").epilogue_refusal(epi)
    for name in ("cuda/tc4_persistent_bf16", "cuda/tc9_narrow_swap_bf16", "cuda/v10_register_prefetch",
                 "cuda/v9_autotuned", "cpu/blas"):
        assert not get_kernel(name).epilogue_refusal(epi), name
    assert not get_kernel("cuda/tc5_swap_ab_tf32").epilogue_refusal(Epilogue())  # nothing to fuse
    with pytest.raises(EpilogueError, match="no fused epilogue"):
        get_kernel("cuda/tc7_3xtf32").with_epilogue(epi)


def test_auto_chooses_only_kernels_that_fuse():
    from gemmlab import dispatch

    epi = Epilogue("silu", addend="bias")
    gpu = dispatch.shipped_gpu()
    for shape in ((8, 4096, 4096), (2048, 3072, 4096), (4096, 4096, 4096)):
        for precision in ("fp32", "tf32", "bf16"):
            problem = Problem(*shape, precision)
            from gemmlab.kernels.plan import Layout, COL

            for layout in (Layout(), Layout(b=COL)):
                plain = dispatch.choose(problem, layout, gpu)
                fused = dispatch.choose(problem, layout, gpu, epi)
                assert not fused.spec.epilogue_refusal(epi), (shape, precision, fused.spec.name)
                if not plain.spec.epilogue_refusal(epi):
                    assert fused.spec.name == plain.spec.name  # a kernel that fuses keeps its place


@pytest.mark.parametrize("epi", [Epilogue("gelu_tanh", 0.5, 1.0, "bias"), Epilogue("silu", 2.0, -1.0, "matrix")])
def test_verify_holds_a_host_kernel_to_its_epilogue(epi):
    spec = get_kernel("cpu/blas").with_epilogue(epi, "float32")
    problem = Problem(33, 17, 65, "fp32")
    assert verify.check(spec, problem).passed
    # a kernel that skipped the epilogue fails the same check
    wrong = verify.check(spec, problem, launch=get_kernel("cpu/blas").build(problem))
    assert not wrong.passed
