"""The shape suite's ops and checks: how an op (one entry of OPS) makes its arguments, calls gemmlab and torch and
computes the float64 reference, and how a result is checked against it (the whole product while C is small, evenly
spaced rows above)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Callable

from gemmlab.harness.reference import within
from gemmlab.harness.torch_side import inputs, torch_call
from gemmlab.problem import get_precision

FULL_CHECK = 1 << 24  # elements of C up to which the whole product is checked; above, SAMPLED_ROWS rows
SAMPLED_ROWS = 1024


@dataclass(frozen=True)
class Case:
    op: str
    precision: str
    group: str  # "linear" (M × a layer's N, K), "square", "long_k", "bmm" (a batch of squares)
    m: int
    n: int
    k: int
    batch: int = 1  # products in the call (bmm): C is batch × M × N

    @property
    def rows(self) -> int:
        """C's rows, the batch's stacked: what the checks sample."""
        return self.batch * self.m

    def flops(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k


# -- ops: how each makes its arguments, calls each side and computes its reference --------------------------------
@dataclass(frozen=True)
class Op:
    name: str
    layout: str
    inputs: Callable  # (torch, Case, seed, device) -> the calls' arguments
    # (gemmlab, precision) -> gemmlab's call, taking the args as torch's call takes them: the library's entry point
    # itself with its arguments bound (functools.partial, no Python frame) where torch's side is torch's function,
    # one lambda where torch's is one; no harness plumbing between the timer and the library
    ours: Callable
    plan: Callable  # (gemmlab, precision, args) -> gemmlab.plan's Prepared
    theirs: Callable  # (torch, precision, out_dtype) -> torch's call, taking the same args
    reference: Callable  # (torch, precision, args, rows or None) -> float64 rows of the exact result
    bytes: Callable  # (Case, an operand's element size, C's) -> the bytes it must read and write at least
    matrix: Callable = lambda c: c  # a result as the 2-D matrix the reference's rows index (bmm: the batch stacked)
    b_layout: str = "col"  # how B reaches the kernel (the dispatch's layout of the suite's listing)
    epilogue: object = None  # the gemmlab.epilogue.Epilogue gemmlab's call fuses (the dispatch's choice among those)
    # an op with a fused epilogue: its args -> the "mm" op's args for the same GEMM without it, gemmlab's plain call
    # timed beside the fused one, so that the record says what the epilogue costs
    plain: Callable | None = None
    # an op with a fused epilogue: (torch) -> (torch's own fused call, torch's plain GEMM), both on the op's args,
    # timed beside the rest so that the record says what the epilogue costs the peer (cuBLASLt's, through torch)
    peer_epilogue: Callable | None = None


def _mm_inputs(torch, case: Case, seed: int, device: str = "cuda"):
    from gemmlab.problem import Problem

    sets, _ = inputs(torch, Problem(case.m, case.n, case.k, case.precision), 1, seed, True, device, reference=False)
    return sets[0]


def _mm_ours(gemmlab, precision):
    if get_precision(precision).scaled:  # torch's side: a lambda around torch._scaled_mm
        return lambda a, b, sa, sb: gemmlab.matmul(a, b, scale_a=sa, scale_b=sb)
    return partial(gemmlab.matmul, precision=precision)


def _mm_plan(gemmlab, precision, args):
    scaled = get_precision(precision).scaled
    return gemmlab.plan(args[0], args[1], **({"scale_a": args[2], "scale_b": args[3]} if scaled else
                                             {"precision": precision}))


def _mm_theirs(torch, precision, out_dtype):
    return torch_call(torch, get_precision(precision), out_dtype)


def operands64(torch, precision: str, args, rows=None):
    """A (its ``rows``, all without) and B of an mm call in float64, FP8 dequantized with the call's own scales:
    exactly the values both sides multiply."""
    a, b = args[0].float(), args[1].float()  # float() first: FP8 converts to float32 exactly, and indexes
    if rows is not None:
        a = a[rows]
    a, b = a.double(), b.double()
    prec = get_precision(precision)
    if prec.tensor_scaled:
        return a * args[2].double(), b * args[3].double()
    if prec.block_scaled:  # scale_a (M, K/128) per 1×128 of A, scale_b (K/128, N/128) per 128×128 of B
        sa = args[2] if rows is None else args[2][rows]
        k, n = b.shape
        sa = sa.double().repeat_interleave(128, 1)[:, :k]
        sb = args[3].double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:k, :n]
        return a * sa, b * sb
    return a, b


def _mm_reference(torch, precision, args, rows=None):
    a, b = operands64(torch, precision, args, rows)
    return a @ b


def _bmm_inputs(torch, case: Case, seed: int, device: str = "cuda"):
    """A (batch, M, K) and B (batch, K, N), both contiguous, drawn from N(0, 1) in the precision's operand dtype."""
    gen = torch.Generator(device=device).manual_seed(seed)
    dtype = getattr(torch, get_precision(case.precision).input_dtype)  # torch names dtypes as NumPy does
    a = torch.randn(case.batch, case.m, case.k, device=device, generator=gen).to(dtype)
    return a, torch.randn(case.batch, case.k, case.n, device=device, generator=gen).to(dtype)


def _bmm_ours(gemmlab, precision):
    from gemmlab.call import batched_matmul

    return partial(batched_matmul, precision=precision)


def _bmm_plan(gemmlab, precision, args):
    from gemmlab.call import batched_plan

    return batched_plan(args[0], args[1], precision=precision)


def _bmm_theirs(torch, precision, out_dtype):
    """torch.bmm, with out_dtype where C's dtype is not the operands' (as the mm records' torch.mm)."""
    dtype = getattr(torch, get_precision(precision).input_dtype)
    if out_dtype is not None and out_dtype != dtype:
        return lambda a, b: torch.bmm(a, b, out_dtype=out_dtype)
    return torch.bmm


def _bmm_reference(torch, precision, args, rows=None):
    """Rows of the batch's C stacked ((batch·M) × N), in float64: row r is row r % M of product r // M."""
    a, b = args
    batch, m, k = a.shape
    if rows is None:
        return (a.double() @ b.double()).reshape(batch * m, -1)
    which, within = rows // m, rows % m
    return (a[which, within].double().unsqueeze(1) @ b[which].double()).squeeze(1)


def _linear_inputs(torch, case: Case, seed: int, device: str = "cuda"):
    """x (M, K) and the weight w (N, K), N(0, 1), and a bias (N,) of N(0, K) values, the product's own scale (as
    harness.verify draws an epilogue's addend), so that a bias dropped or misplaced errs by about as much as the
    product's whole spread, far past any tolerance; all in the precision's operand dtype."""
    gen = torch.Generator(device=device).manual_seed(seed)
    dtype = getattr(torch, get_precision(case.precision).input_dtype)
    x = torch.randn(case.m, case.k, device=device, generator=gen).to(dtype)
    w = torch.randn(case.n, case.k, device=device, generator=gen).to(dtype)
    return x, w, (torch.randn(case.n, device=device, generator=gen) * case.k ** 0.5).to(dtype)


def _linear_op(name: str, activation: str | None) -> Op:
    """gemmlab.linear(x, w, bias, activation), one launch with the epilogue fused, against torch's F.linear (its
    bias in cuBLASLt's epilogue) and, with an activation, the activation's own call after it: what a model's layer
    pays in eager PyTorch."""
    torch_act = {None: None, "gelu": "gelu"}[activation]

    def theirs(torch, precision, out_dtype):
        f = torch.nn.functional
        if torch_act is None:
            return f.linear
        return lambda x, w, bias: getattr(f, torch_act)(f.linear(x, w, bias))

    def reference(torch, precision, args, rows=None):
        x, w, bias = args
        x = x.double() if rows is None else x[rows].double()
        y = x @ w.double().t() + bias.double()
        return y if torch_act is None else getattr(torch.nn.functional, torch_act)(y)

    def peer_epilogue(torch):
        """cuBLASLt's epilogue through torch: BIAS (torch.addmm) or GELU_BIAS (torch._addmm_activation, whose GELU is
        the tanh approximation), and torch.mm of the same x and w."""
        if torch_act is None:
            fused = lambda x, w, bias: torch.addmm(bias, x, w.t())  # noqa: E731
        else:
            fused = lambda x, w, bias: torch._addmm_activation(bias, x, w.t(), use_gelu=True)  # noqa: E731
        return fused, lambda x, w, bias: torch.mm(x, w.t())

    from gemmlab.epilogue import Epilogue

    return Op(name, f"x @ w.T + bias{f', then {activation}' if activation else ''} (F.linear's operands)",
              _linear_inputs, ours=lambda gemmlab, p: partial(gemmlab.linear, activation=activation, precision=p),
              plan=lambda gemmlab, p, a: _linear_plan(gemmlab, p, a, activation), theirs=theirs,
              reference=reference,
              bytes=lambda c, size, c_size: size * ((c.m + c.n) * c.k + c.n) + c_size * c.m * c.n,
              epilogue=Epilogue(activation, addend="bias"),
              plain=lambda args: (args[0], args[1].t()), peer_epilogue=peer_epilogue)


def _linear_plan(gemmlab, precision, args, activation):
    """The plan gemmlab.linear runs: the GEMM of x and w.T with the bias and the activation in its epilogue."""
    from gemmlab import call
    from gemmlab.epilogue import Epilogue

    x, w, bias = args
    fa, fb = call.facts(x, "A"), call.facts(w.t(), "B")
    return call.checks.prepare(fa, fb, "auto", precision, fa.device, (None, None), None,
                               Epilogue(activation, addend="bias"), call.addend_facts(bias))


OPS = {"mm": Op("mm", "x @ w.T (B column-major)", _mm_inputs,
                ours=_mm_ours, plan=_mm_plan,
                theirs=_mm_theirs, reference=_mm_reference,
                bytes=lambda c, size, c_size: size * (c.m + c.n) * c.k + c_size * c.m * c.n),
       "bmm": Op("bmm", "A (batch, M, K) @ B (batch, K, N), both row-major", _bmm_inputs, ours=_bmm_ours,
                 plan=_bmm_plan, theirs=_bmm_theirs, reference=_bmm_reference,
                 bytes=lambda c, size, c_size: c.batch * (size * (c.m + c.n) * c.k + c_size * c.m * c.n),
                 matrix=lambda c: c.reshape(-1, c.shape[-1]), b_layout="row"),
       "linear_bias": _linear_op("linear_bias", None),
       "linear_bias_gelu": _linear_op("linear_bias_gelu", "gelu")}


# -- checks -------------------------------------------------------------------------------------------------------
def error_line(exc: Exception) -> str:
    """What a record keeps of a call's exception: its type and its message's first line."""
    text = str(exc)
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def checked_rows(m: int, n: int):
    """None (the whole product) while C is small, else SAMPLED_ROWS rows evenly spaced, the first and last in."""
    if m * n <= FULL_CHECK:
        return None
    step = (m - 1) / (SAMPLED_ROWS - 1)
    return sorted({round(i * step) for i in range(SAMPLED_ROWS)})


def check(torch, c, ref, rows, tolerance: float) -> tuple[float, bool]:
    """(relative error of the checked rows against float64, passed: that error and every checked element's within
    the tolerance as harness.reference holds them, ``within``): NaN or Inf anywhere in C never passes."""
    got = (c if rows is None else c[rows]).double()
    diff = got - ref
    ref_norm = float(torch.linalg.norm(ref))
    err = float(torch.linalg.norm(diff)) / ref_norm if ref_norm > 0 else float(torch.linalg.norm(diff))
    max_abs = float(diff.abs().max()) if diff.numel() else 0.0
    rms = ref_norm / ref.numel() ** 0.5 if ref.numel() else 0.0
    return err, bool(torch.isfinite(c).all()) and within(err, max_abs, tolerance, rms)


def verify_note(m: int, rows) -> str:
    return "full" if rows is None else f"rows: {len(rows)} of {m}, evenly spaced (first and last included)"


def peer_note(precision: str, k: int) -> str | None:
    """The known cause where torch's blockwise result is wrong."""
    if get_precision(precision).block_scaled and math.ceil(k / 128) % 4:
        return (f"torch's blockwise scaled mm is wrong where ceil(K/128) is not a multiple of 4 "
                f"(here {math.ceil(k / 128)})")
    return None
