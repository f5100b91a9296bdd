"""What every distributed GEMM shares: agreeing before communicating, and failing on every rank at once.

A rank that raises on its own leaves the others blocked in a collective it will never join. So each op goes
through the same steps:

1. **Agree.** Every rank checks its own operands (2-D torch tensors, one dtype and device, none requiring grad
   under grad mode, ``out`` as the op needs, a precision the dtype has; ``Plan.group_reason`` adds what the op
   needs of its group) and then all ranks exchange a fixed row of eleven integers (op, dtype, device, shapes,
   chunks, precision) plus an error flag: one all-gather of CPU tensors on the group's gloo backend
   (``runtime.init`` gives the group one), so agreeing never waits for the GPU. A flagged rank's message is
   gathered next and every rank raises ``DistributedError`` with it. The op's consistency check then runs on
   the same rows on every rank (K equal across shards, ...), so every rank reaches the same verdict and raises
   the same error without another message. The verdict is worked out once per distinct table of rows and kept
   (``agreed``); the exchange itself runs on every call, because it is what tells a rank that the others brought
   the same call this time: sizes decided from a remembered table would send mismatched ranks into a data
   collective that hangs or mixes pieces of different shapes. A group of one rank exchanges nothing.
2. **Run.** Only agreed sizes decide what is sent, so all ranks issue the same collectives in the same order.
   A local GEMM that raises is caught; that rank skips its remaining GEMMs but keeps taking part in every
   collective, so nobody waits on it.
3. **Finish, folded into the next agreement.** A rank whose GEMM failed keeps the failure as the group's pending
   one and returns; its flag and message travel in the group's next exchange (the next op called on the group,
   or ``check(group)``), where every rank raises it. So a failure in call i is raised on every rank no later
   than call i + 1 on the same group, or the ``check`` that closes it, and the outputs of call i are then
   undefined on every rank. On a group of one rank it is raised at once.

A rank that never arrives (dead, or calling something else) is caught by the process group's timeout
(``runtime.init``): the waiting ranks raise ``DistributedError`` saying so. Not covered by the agreement, and so
ended only by that timeout: a rank that dies, or fails to allocate its buffers, after the exchange; on NCCL, the
watchdog then ends every rank's process.
"""
from __future__ import annotations

import functools
import weakref
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.distributed as dist

import gemmlab
from gemmlab.distributed.runtime import control_device
from gemmlab.distributed.scaling import OPS
from gemmlab.errors import DistributedError, DTypeError
from gemmlab.problem import PRECISIONS

DTYPES = ("float32", "bfloat16", "float16", "float64")  # dtype codes in the exchanged row; others are -1
# precision codes in the exchanged row: the precisions of operands without scales (the ops take no scales); -1 is
# None, the operands' default
PRECISION_NAMES = tuple(name for name, p in PRECISIONS.items() if not p.scaled)
DEVICES = ("cpu", "cuda")
MESSAGE_BYTES = 512  # a failing rank's message, UTF-8, cut to this length
NO_OUT = (-1, -1)
# torch 2.13 renamed all_gather_into_tensor (and deprecated the old name); earlier versions have only the old one
all_gather_flat = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
FACT_COUNT = 11  # integers per rank in the exchanged row, the same for every op and for check()
CHECK = len(OPS)  # the op code check() sends: a rank closing the group while another calls an op is a mismatch


@functools.lru_cache(maxsize=None)
def output_dtype(dtype: torch.dtype) -> torch.dtype:
    """C's dtype for operands of ``dtype``: gemmlab's precision table (torch's rule: FP32, BF16 and FP16 in, the same
    out)."""
    name = str(dtype).removeprefix("torch.")
    outs = {p.output_dtype for p in PRECISIONS.values() if p.input_dtype == name}
    if len(outs) != 1:
        takes = sorted({p.input_dtype for p in PRECISIONS.values()})
        raise DTypeError(f"gemmlab's kernels take {', '.join(takes)} operands, got {name}")
    return getattr(torch, outs.pop())


def local_matmul(a, b, out, kernel: str | None, precision: str | None) -> None:
    """The one call into gemmlab's GEMM: ``kernel`` None leaves the choice to gemmlab.matmul's default, ``precision``
    None the operands' default precision; a kernel that cannot compute ``precision`` raises."""
    if kernel is None:
        gemmlab.matmul(a, b, precision=precision, out=out)
    else:
        gemmlab.matmul(a, b, kernel=kernel, precision=precision, out=out)


def resolve_group(group):
    """``group``, or the world for None, once it is a process group this rank belongs to: torch's own answer to
    anything else is an AttributeError or TypeError deep inside the op."""
    if group is None:
        if not dist.is_initialized():
            raise DistributedError("no process group: call gemmlab.distributed.init() on every rank first (under "
                                   "torchrun), or pass group=")
        return dist.group.WORLD
    if isinstance(group, dist.ProcessGroup):
        return group
    if group is dist.GroupMember.NON_GROUP_MEMBER:  # what torch.distributed.new_group returns to ranks outside it
        raise DistributedError(f"rank {dist.get_rank()} is not a member of the group passed as group=; call the op "
                               "on the group's ranks only")
    raise DistributedError(f"group must be a torch.distributed process group, got {type(group).__name__}")


@dataclass(frozen=True)
class Facts:
    """What one rank brought to the call, as every rank sees it after the exchange."""

    op: int
    dtype: int
    device: int
    a: tuple[int, int]
    b: tuple[int, int]
    out: tuple[int, int]  # NO_OUT when the op allocates C
    chunks: int
    precision: int  # an index into PRECISION_NAMES, -1 for None

    def row(self) -> list[int]:
        return [self.op, self.dtype, self.device, *self.a, *self.b, *self.out, self.chunks, self.precision]

    @classmethod
    def from_row(cls, row: list[int]) -> "Facts":
        op, dtype, device, a0, a1, b0, b1, o0, o1, chunks, precision = row
        return cls(op, dtype, device, (a0, a1), (b0, b1), (o0, o1), chunks, precision)


def _code(value: str, table: tuple[str, ...]) -> int:
    return table.index(value) if value in table else -1


def local_facts(op: str, a, b, out, chunks: int, inner: bool, precision: str | None) -> tuple[Facts, str | None]:
    """This rank's row and, if its own operands are unusable, why. ``inner``: A's columns must equal B's rows
    on this rank (true unless A and B are blocks of different grid positions, as in SUMMA)."""
    facts = Facts(OPS.index(op), _code(str(getattr(a, "dtype", "")).removeprefix("torch."), DTYPES),
                  _code(getattr(getattr(a, "device", None), "type", ""), DEVICES), _shape(a), _shape(b),
                  _shape(out) if out is not None else NO_OUT, chunks if isinstance(chunks, int) else -1,
                  _code(precision, PRECISION_NAMES))
    return facts, _local_reason(a, b, out, chunks, inner, precision)


def _shape(x) -> tuple[int, int]:
    return tuple(x.shape) if isinstance(x, torch.Tensor) and x.ndim == 2 else (0, 0)


def _local_reason(a, b, out, chunks, inner: bool, precision: str | None) -> str | None:
    for name, x in (("A", a), ("B", b)):
        if not isinstance(x, torch.Tensor):
            return f"{name} must be a torch tensor (torch.distributed sends tensors), got {type(x).__name__}"
        if x.ndim != 2:
            return f"{name} must be a 2-D matrix, got {x.ndim}-D with shape {tuple(x.shape)}"
    # the ops record no autograd graph: C would come back without grad_fn (and gemmlab.matmul refuses to write
    # out= for a graph, leaving C unwritten), so a gradient the caller expects would be silently missing
    grads = [name for name, x in (("A", a), ("B", b), ("out", out)) if isinstance(x, torch.Tensor) and x.requires_grad]
    if grads and torch.is_grad_enabled():
        return (f"{' and '.join(grads)} require{'s' if len(grads) == 1 else ''} grad, and the distributed GEMMs "
                "have no backward (autograd is not offered): call them under torch.no_grad() or pass .detach()ed "
                "tensors")
    if a.dtype != b.dtype:
        return f"A is {a.dtype} but B is {b.dtype}; both operands must have one dtype"
    if a.device != b.device:
        return f"A is on {a.device} but B on {b.device}; both operands must be on one device"
    if inner and a.shape[1] != b.shape[0]:
        return (f"inner dimensions differ: A is {a.shape[0]}×{a.shape[1]} but B is {b.shape[0]}×{b.shape[1]}; "
                "A's columns must equal B's rows")
    if not isinstance(chunks, int) or chunks < 1:
        return f"chunks must be an integer of at least 1, got {chunks!r}"
    try:
        want = output_dtype(a.dtype)
    except DTypeError as exc:
        return str(exc)
    if precision is not None:
        if precision not in PRECISION_NAMES:
            return (f"precision must be one of {', '.join(PRECISION_NAMES)} (or None: the operands' default), got "
                    f"{precision!r}")
        takes = PRECISIONS[precision].input_dtype
        if str(a.dtype).removeprefix("torch.") != takes:
            return f"precision {precision} takes {takes} operands, A and B are {str(a.dtype).removeprefix('torch.')}"
    if out is not None:
        if not isinstance(out, torch.Tensor) or out.ndim != 2:
            return "out must be a 2-D torch tensor"
        if out.dtype != want or out.device != a.device or not out.is_contiguous():
            return (f"out must be a contiguous {want} tensor on {a.device}, got {out.dtype} on {out.device}"
                    f"{'' if out.is_contiguous() else ', not contiguous'}")
    return None


def gather_rows(values: list, group, dtype=torch.int64) -> list[list]:
    """Every rank's equally long list of numbers, by rank, through the group's control device (gloo's CPU)."""
    mine, table = _buffers(group, len(values), dtype)
    if mine.is_cpu:  # written through NumPy: a tensor built from a Python list costs more than the exchange itself
        mine.numpy()[:] = values
    else:
        mine.copy_(torch.tensor(values, dtype=dtype))
    all_gather_flat(table, mine, group=group)
    return table.view(group.size(), -1).tolist()


# per group: its control device's send and receive buffers by (length, dtype), reused by every exchange (each
# returns only when the exchange is complete), and the failure of its last call waiting for the next agreement
_BUFFERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_PENDING: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _buffers(group, n: int, dtype):
    kept = _BUFFERS.setdefault(group, {})
    if (n, dtype) not in kept:
        device = control_device(group)
        kept[(n, dtype)] = (torch.empty(n, dtype=dtype, device=device),
                            torch.empty(group.size() * n, dtype=dtype, device=device))  # flat: gloo takes no other
    return kept[(n, dtype)]


def exchange(group, op: str, row: list[int], reason: str | None) -> list[list[int]]:
    """Every rank's ``row``, once all ranks have said whether they can go on; raises on every rank otherwise."""
    with _translated(group, op, "while the ranks agreed on the call (a rank failed before calling "
                                f"{op}, called something else, or did not arrive within the group's timeout)"):
        rows = gather_rows([int(reason is not None), *row], group)
        flags = [r[0] for r in rows]
        if not any(flags):
            return [r[1:] for r in rows]
        encoded = (reason or "").encode()[:MESSAGE_BYTES]
        texts = gather_rows(list(encoded) + [0] * (MESSAGE_BYTES - len(encoded)), group, torch.uint8)
    messages = [bytes(t).rstrip(b"\0").decode(errors="replace") for t in texts]
    raise DistributedError(_failed(op, messages, flags, group.rank()))


def _failed(op: str, messages: list[str], flags: list[int], rank: int) -> str:
    ranks = len(flags)
    failed = "; ".join(f"rank {r}: {messages[r]}" for r in range(ranks) if flags[r])
    return f"{op} failed on {sum(flags)} of {ranks} ranks: {failed} (raised on every rank; this is rank {rank})"


def agree(group, op: str, row: list[int], reason: str | None) -> list[list[int]]:
    """``exchange`` with the group's pending failure folded in: the closing agreement of the previous call.

    A group of one rank has nobody to agree with: its own row, or its own failure raised at once."""
    pending = _PENDING.pop(group, None)
    if pending is not None:
        reason = pending if reason is None else f"{pending}; then {reason}"
    if group.size() == 1:
        if reason is not None:
            raise DistributedError(_failed(op, [reason], [1], 0))
        return [row]
    return exchange(group, op, row, reason)


def keep_failure(group, op: str, failure: str) -> None:
    """A failure of this rank's part of ``op``, raised on every rank by the group's next agreement."""
    if group.size() == 1:
        raise DistributedError(_failed(op, [failure], [1], 0))
    _PENDING[group] = f"{failure} (in an earlier {op} call on this group)"


def check(group=None) -> None:
    """The closing agreement on its own: raises DistributedError on every rank of ``group`` (default: the world)
    if a rank's part of the last op called on it failed. Every rank calls it at the same point, as an op."""
    group = resolve_group(group)
    rows = agree(group, "check", [CHECK] + [0] * (FACT_COUNT - 1), None)
    reason = disagreement([call_name(r[0]) for r in rows], "the call")
    if reason:
        raise DistributedError(f"check: {reason} (raised on every rank; this is rank {group.rank()})")


def call_name(code: int) -> str:
    return "check()" if code == CHECK else OPS[code]


@contextmanager
def _translated(group, op: str, when: str):
    """torch.distributed's own errors (timeouts, lost peers) as DistributedError naming the op and the rank."""
    try:
        yield
    except DistributedError:
        raise
    except RuntimeError as exc:
        raise DistributedError(f"{op}: rank {group.rank()} of {group.size()}: communication failed {when}: "
                               f"{exc}") from exc


def disagreement(values: list, what: str) -> str | None:
    """None when every rank has the same value, else which ranks hold which: 'K differs: 29 on ranks 0, 1; ...'."""
    holders: dict = {}
    for rank, value in enumerate(values):
        holders.setdefault(value, []).append(rank)
    if len(holders) == 1:
        return None
    return f"{what} differs: " + "; ".join(
        f"{value} on rank{'s' if len(r) > 1 else ''} {', '.join(map(str, r))}" for value, r in holders.items())


def common_check(facts: list[Facts]) -> str | None:
    """What every op needs the ranks to share: the op itself, the dtype, the device type, the chunk count."""
    return (disagreement([call_name(f.op) for f in facts], "the op called")
            or disagreement([DTYPES[f.dtype] if f.dtype >= 0 else "other" for f in facts], "the operand dtype")
            or disagreement([DEVICES[f.device] if f.device >= 0 else "other" for f in facts], "the device type")
            or disagreement([f.chunks for f in facts], "chunks")
            or disagreement([PRECISION_NAMES[f.precision] if f.precision >= 0 else "None" for f in facts],
                            "precision"))


@functools.lru_cache(maxsize=256)
def agreed(plan: type, table: tuple[tuple[int, ...], ...]) -> tuple[tuple[Facts, ...], str | None]:
    """The ranks' facts and the verdict on them (None: go on), worked out once per distinct op and table."""
    facts = tuple(Facts.from_row(list(row)) for row in table)
    return facts, common_check(facts) or plan.check(facts)


class Plan:
    """One call of a distributed op once the ranks agree: its pieces, its buffers, this rank's failure if any.

    Subclasses set ``op``, check the agreed facts in ``check(facts)``, build their pieces and buffers, and
    write ``schedule(communicate, compute)``. The bench calls ``execute`` with one of the two switched off to
    time communication alone and computation alone on the same schedule; callers use ``run()``.
    """

    op = ""
    inner = True  # A's columns equal B's rows on every rank

    def __init__(self, a, b, out, chunks: int, group, kernel: str | None, precision: str | None):
        self.group = resolve_group(group)
        self.rank, self.ranks = self.group.rank(), self.group.size()
        self.kernel, self.chunks, self.precision = kernel, chunks, precision
        self.failure: str | None = None
        facts, reason = local_facts(self.op, a, b, out, chunks, self.inner, precision)
        rows = agree(self.group, self.op, facts.row(), reason or self.group_reason())
        self.facts, reason = agreed(type(self), tuple(map(tuple, rows)))
        if reason:
            raise DistributedError(f"{self.op}: {reason} (raised on every rank; this is rank {self.rank})")
        self.out_dtype = output_dtype(a.dtype)

    @staticmethod
    def check(facts: list[Facts]) -> str | None:
        """Why the agreed facts (by rank) make no product: the same answer on every rank; None if they do."""
        raise NotImplementedError

    def group_reason(self) -> str | None:
        """Why this rank cannot run the op on its group whatever the operands, or None; agreed on like a bad
        operand, so a rank that cannot go on stops every rank instead of leaving them waiting."""
        return None

    def schedule(self, communicate: bool, compute: bool):
        """Issue the op's collectives and GEMMs in its order; returns this rank's C."""
        raise NotImplementedError

    def execute(self, communicate: bool = True, compute: bool = True):
        """The schedule without the agreements; a group of one rank has nothing to send."""
        return self.schedule(communicate and self.ranks > 1, compute)

    def run(self):
        """execute; a failure of this rank's GEMMs is raised on every rank by the group's next agreement."""
        with self.talking():
            result = self.execute()
        if self.failure is not None:
            keep_failure(self.group, self.op, self.failure)
        return result

    def talking(self):
        return _translated(self.group, self.op, "while sending the operands' pieces")

    def gemm(self, a, b, out) -> None:
        """out = a @ b through gemmlab.matmul, once this rank has not failed; a failure is kept for finish."""
        if self.failure is None:
            self.failure = guarded_gemm(a, b, out, self.kernel, self.precision)


def guarded_gemm(a, b, out, kernel: str | None, precision: str | None) -> str | None:
    """out = a @ b through gemmlab.matmul; what went wrong, or None. Never raises: a failure must reach every
    rank, not end this one alone."""
    if out.numel() == 0:
        return None
    if a.shape[1] == 0:  # a rank holding no K columns contributes zeros; matmul refuses a zero dimension
        out.zero_()
        return None
    try:
        local_matmul(a, b, out, kernel, precision)
    except Exception as exc:  # noqa: BLE001 - reported to every rank by the caller
        return f"{type(exc).__name__} in the local GEMM ({a.shape[0]}×{b.shape[1]}×{a.shape[1]}): {exc}"
    return None


def solo(plan: type, a, b, out, chunks: int, kernel: str | None, precision: str | None):
    """``plan``'s op on a group of one rank: nothing to send, so it is its one local GEMM, out = a @ b, after
    the same checks and with the same errors as the op's own path (the verdict kept per distinct call). This is
    what keeps a one-rank call as cheap on the host as a plain gemmlab.matmul: no pieces, no buffers."""
    facts, reason = local_facts(plan.op, a, b, out, chunks, plan.inner, precision)
    if reason is not None:
        raise DistributedError(_failed(plan.op, [reason], [1], 0))
    _, reason = agreed(plan, (tuple(facts.row()),))
    if reason:
        raise DistributedError(f"{plan.op}: {reason} (raised on every rank; this is rank 0)")
    if out is None:
        out = torch.empty((a.shape[0], b.shape[1]), dtype=output_dtype(a.dtype), device=a.device)
    failure = guarded_gemm(a, b, out, kernel, precision)
    if failure is not None:  # a group of one rank raises its failure at once, as keep_failure does
        raise DistributedError(_failed(plan.op, [failure], [1], 0))
    return out
