"""V11 split-K: V10's register-prefetch tile over a tiles x S grid, S CTAs sharing each tile's K, the partials added
by the last split to arrive in a fixed order; the tile and S chosen per problem.

What changed against V10: a tile's k tiles are cut into S splits, one CTA each (blockIdx.y), so tiles x S CTAs fill
the GPU where the tiles alone would not. Each CTA writes its FP32 partial to the plan's workspace and takes a ticket
on its tile; whichever draws the last adds the S partials in split order 0..S-1 from zero, so C has the same bits on
every call, stores C through the fused epilogue, and sets the ticket back to zero (one launch, no memset): tc10's
design (tc/tc10_split_k.py), whose arithmetic (include/split_k.cuh), model (tc/model/split_k.py, with this level's
``ENGINE``) and workspace this level shares. The tiles are smaller than V10's (32x128, 64x64, 64x128, 128x128,
several CTAs an SM), chosen per problem with S by split_k.choose: waves of CTAs (three at most), the FFMAs of each
split, the warps resident on an SM (fewer than HIDING_WARPS leave the loop's load latencies showing), the reduction
one CTA does alone. B as w.t() is read in place, as V10 reads it.
Why: at long K and few tiles (256x256x65536: 4 of V10's 128x192 tiles on the H200, for 4 of 132 SMs) and at small
M against LLM weights (M = 32-128: 6-75 tiles) most SMs sit idle; split S ways, each CTA runs about 1/S of a
tile's K, plus S partials read back by one CTA.
Predicted gain (docs/fp32_ladder.md "v11": the chosen tile and S, DRAM and L2 bytes, the roofline's TFLOPS): at least
a wave of CTAs at every long-K and M = 32-128 shape of the suite, several an SM where one CTA's warps are few, so
V10's share of the FFMA roof there, 4-130x the roofline of V10's fallback tile; the DRAM bytes unchanged, the L2
bytes up to 2.7x (smaller tiles, the partials). At the squares of 2048 and up no split, and V10's larger tuned tile
ahead.
"""
from __future__ import annotations

from dataclasses import dataclass

from gemmlab.kernels.cuda.launch.gpu import RESOURCES, Resources, split_k_workspace
from gemmlab.kernels.cuda.launch.kernel import SEED_SIGNATURE, CudaKernel, CudaPlan
from gemmlab.kernels.cuda.sgemm.common.sgemm import KMajorBKernel
from gemmlab.kernels.cuda.sgemm.v10_register_prefetch import PARAM_NAMES as V10_PARAMS
from gemmlab.kernels.cuda.sgemm.v10_register_prefetch import constraints as v10_constraints
from gemmlab.kernels.cuda.sgemm.v10_register_prefetch import quads_per_thread, smem_bytes, threads
from gemmlab.kernels.cuda.tc.model import split_k
from gemmlab.kernels.geometry import Geometry
from gemmlab.kernels.plan import Layout
from gemmlab.kernels.spec import SM_COUNT, Traffic, tiled_traffic
from gemmlab.problem import Problem

# The builds, by (BM, BN): 8×4 or 8×8 results a lane, BK = 16 (the engine's one k-tile), MIN_BLOCKS CTAs an SM, the
# most whose register share (__launch_bounds__: 65536 / (MIN_BLOCKS · threads)) the loop fits without a spill
TILES = {
    (32, 128): {"BK": 16, "WM": 32, "WN": 32, "RM": 2, "RN": 1, "GROUP_M": 1, "MIN_BLOCKS": 4},
    (64, 64): {"BK": 16, "WM": 32, "WN": 32, "RM": 2, "RN": 1, "GROUP_M": 1, "MIN_BLOCKS": 4},
    (64, 128): {"BK": 16, "WM": 32, "WN": 64, "RM": 2, "RN": 2, "GROUP_M": 1, "MIN_BLOCKS": 3},
    (128, 128): {"BK": 16, "WM": 32, "WN": 64, "RM": 2, "RN": 2, "GROUP_M": 1, "MIN_BLOCKS": 1},
}
STAGES = 2  # V10's two shared stages (SplitPlan.stages)
FFMA_PER_SM_CLOCK = 128  # Hopper's FP32 lanes an SM
MIN_SPLIT_KTILES = 8  # k tiles a split at least: its first tile's load, not hidden, against 8 tiles of FFMAs


def ffma_share(bm: int, bn: int) -> float:
    """The FFMAs' share of a lane's issue slots in the loop at this tile (every other instruction takes an FFMA's
    slot): per k, 16·RM·RN FFMAs against RM + RN shared loads; per k tile, each quad of A and of B one global load
    and four transposing stores (B as w.t(), the case this level is for)."""
    p = {**TILES[(bm, bn)], "BM": bm, "BN": bn}
    ffma = 16 * p["RM"] * p["RN"]
    qa, qb = quads_per_thread(p)
    return ffma / (ffma + p["RM"] + p["RN"] + 5 * (qa + qb) / p["BK"])


# Warps an SM needs resident for the loop's rate: three a scheduler, one issuing FFMAs while the others wait on their
# shared and global loads. Fitted on the H200 over every (tile, S) at the suite's FP32 shapes (docs/fp32_ladder.md
# "v11"): with one CTA of 4 warps an SM, as the model without this term chose wherever it could, the loop ran well
# below its rate with 12 warps.
HIDING_WARPS = 12
# S up to three waves of CTAs (tc10's two): at mid sizes (1536³: 288 tiles of 64x128) two waves allow S = 2 at
# most, and three CTAs an SM over 2.9 waves ran faster in the same fit
MAX_WAVES = 3

# A tile outside TILES is a variant's, pinned with its S: its clocks are compared with nothing, and taken at one CTA
# an SM and every issue slot an FFMA
ENGINE = split_k.Engine(k_tile=16, operand_bytes=4, fma_per_clock=FFMA_PER_SM_CLOCK, output_bytes=4,
                        tiles=tuple((bm, bn, STAGES) for bm, bn in TILES), min_split_ktiles=MIN_SPLIT_KTILES,
                        per_sm=lambda bm, bn: TILES[(bm, bn)]["MIN_BLOCKS"] if (bm, bn) in TILES else 1,
                        share=lambda bm, bn: ffma_share(bm, bn) if (bm, bn) in TILES else 1.0,
                        warps=lambda bm, bn: threads({**TILES[(bm, bn)], "BM": bm, "BN": bn}) // 32
                        if (bm, bn) in TILES else HIDING_WARPS, hiding_warps=HIDING_WARPS,
                        max_waves=MAX_WAVES)
PINNED_SPLITS = 3  # configurations(): S where the tile is pinned
MAX_GRID_Y = 65535  # S is gridDim.y
PARAM_NAMES = (*V10_PARAMS, "SPLITS")


def constraints(p: dict) -> list[str]:
    errors = v10_constraints(p)
    if not 0 <= p.get("SPLITS", -1) <= MAX_GRID_Y:
        errors.append(f"SPLITS={p.get('SPLITS')}: 0 (chosen per problem) or the number of splits of K, gridDim.y's "
                      f"at most {MAX_GRID_Y}")
    if p.get("BK") != ENGINE.k_tile:
        errors.append(f"BK={p.get('BK')}: the split model's k tile is {ENGINE.k_tile}")
    return errors


@dataclass(frozen=True, kw_only=True)
class SplitKKernel(KMajorBKernel):
    """V10's tile over a tiles x S grid; the plan holds the partials' workspace and the tickets."""

    signature: tuple = (*SEED_SIGNATURE, ("ws", "ptr"), ("tickets", "ptr"))

    def defines(self) -> dict:
        d = super().defines()
        d.pop("SPLITS")  # the kernel reads S from gridDim.y: one binary a tile
        return d

    def split_plan(self, problem: Problem, sm_count: int = SM_COUNT) -> split_k.SplitPlan:
        m, n, k = problem.shape
        p = self.params
        if p["SPLITS"]:
            return split_k.pinned(m, n, k, self.precision, p["BM"], p["BN"], STAGES, p["SPLITS"], sm_count, ENGINE)
        return split_k.choose(m, n, k, self.precision, sm_count, ENGINE)

    def for_problem(self, problem: Problem, sm_count: int = SM_COUNT) -> "SplitKKernel":
        """The build that runs ``problem``: the chosen tile's (SPLITS = 0), else this tile, S at most KT."""
        s = self.split_plan(problem, sm_count)
        tile = TILES[(s.bm, s.bn)] if not self.params["SPLITS"] else {}
        return self.with_params({**tile, "BM": s.bm, "BN": s.bn, "SPLITS": s.splits})

    def launch_geometry(self, problem: Problem, sm_count: int = SM_COUNT) -> Geometry:
        runs = self.for_problem(problem, sm_count)
        p = dict(runs.params)
        return Geometry(grid=runs.split_plan(problem, sm_count).grid, block=(threads(p), 1, 1), smem=smem_bytes(p))

    def traffic(self, problem: Problem, sm_count: int = SM_COUNT, layout=None) -> Traffic:
        """V10's tiled traffic at the chosen tile, plus each partial written once and read once (S > 1)."""
        runs = self.for_problem(problem, sm_count)
        p = runs.params
        t = tiled_traffic(problem, p["BM"], p["BN"], warp=(p["WM"], p["WN"]), group_m=p["GROUP_M"])
        return split_k.with_partials(t, runs.split_plan(problem, sm_count), sm_count)

    def configurations(self) -> list["SplitKKernel"]:
        """A build per tile, pinned at PINNED_SPLITS (at most KT), so that a sanitizer run at any shape of 3 k tiles
        or more goes through the partials and the tickets on every tile."""
        return [self.with_params({**t, "BM": bm, "BN": bn, "SPLITS": PINNED_SPLITS}) for (bm, bn), t in TILES.items()]

    def make_plan(self, problem: Problem, layout: Layout, info, gpu: Resources = RESOURCES) -> CudaPlan:
        runs = self.for_problem(problem, info.sm_count).for_layout(layout)
        plan = CudaKernel.make_plan(runs, problem, layout, info, gpu)
        s = runs.split_plan(problem, info.sm_count)
        if s.splits > 1:
            plan.buffers = list(split_k_workspace(gpu, s.tiles, s.splits, s.bm, s.bn))
            plan.main.params.ws, plan.main.params.tickets = (gpu.address(b) for b in plan.buffers)
            gpu.synchronize()  # the tickets' zeroing: done before any caller's launch
            plan.steps.append(f"split-K: {s.splits} splits of K a {s.bm}x{s.bn} tile, their FP32 partials in a "
                              "workspace and a ticket a tile; the last split of a tile adds them in split order and "
                              "stores C")
        return plan


PARAMS = {**TILES[(64, 128)], "BM": 64, "BN": 128, "SPLITS": 0}  # SPLITS = 0: the tile and S chosen per problem
SPECS = [SplitKKernel(name="cuda/v11_split_k", level=11, precision="fp32", source="v11_split_k.cu",
                      entry="v11_split_k", params=PARAMS, constraints=constraints, doc=__doc__, fuses_epilogue=True,
                      varies=PARAM_NAMES,
                      title="split-K over tiles x S CTAs of v10's loop, the last split of a tile adds the S partials "
                            "in split order (deterministic), tile and S per problem",
                      unmodeled="the reduction's latency: the last split of a tile reads the S partials back alone; "
                                "issue slots, as v10's")]
