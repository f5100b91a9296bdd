"""The racecheck probe's Gluon kernels (ws_racecheck.py runs them): Triton's own warp_specialize around as little as
possible, four default warps and one worker partition of four, so that the only shared memory racecheck can see is
what Triton's start and exit protocol writes and reads, and, in gluon_mbarrier, one mbarrier between the partitions.
Imported only by the Gluon variants, so the probe's other variants need no Triton."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

DEFAULT_WARPS = 4
WORKER_WARPS = gl.constexpr(4)
WORKER_REGS = gl.constexpr(24)  # setmaxnreg's least; with maxnreg MAXNREG Triton gives the default partition 232
MAXNREG = 128


@gluon.jit
def _mark(out_ptr, which: gl.constexpr):
    # one global store a partition: that it ran, and nothing in shared memory
    gl.store(out_ptr + which, which + 1)


@gluon.jit
def gluon_bare(out_ptr):
    gl.warp_specialize([(_mark, (out_ptr, 0)), (_mark, (out_ptr, 1))], [WORKER_WARPS], [WORKER_REGS])


@gluon.jit
def _arrive(bar, out_ptr):
    mbarrier.arrive(bar, count=1)
    gl.store(out_ptr, 1)


@gluon.jit
def _wait(bar, out_ptr):
    mbarrier.wait(bar, 0)
    gl.store(out_ptr + 1, 2)


@gluon.jit
def gluon_mbarrier(out_ptr):
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    gl.warp_specialize([(_arrive, (bar, out_ptr)), (_wait, (bar, out_ptr))], [WORKER_WARPS], [WORKER_REGS])
    mbarrier.invalidate(bar)


KERNELS = {"gluon_bare": gluon_bare, "gluon_mbarrier": gluon_mbarrier}
