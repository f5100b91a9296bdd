"""tc10: split-K over a tiles x S grid, the partials added by the last split to arrive, in a fixed order.

What changed against tc3 (and tc6's stream-K): each output tile's k-tiles are cut into S splits, one CTA each, so
tiles x S CTAs fill the GPU where the tiles alone would not (256x256x16384 is 2 tiles of 128x256: tc2 and tc4 run
them on 2 of 132 SMs; tc6's owner CTA waits for its peers, then adds their partials after its own k-range). Here no
CTA waits: each writes its FP32 partial to the plan's workspace and takes a ticket on its tile; whichever draws the
last adds the S partials in split order 0..S-1 from zero, so C has the same bits on every call, stores C through
the levels' epilogue (TileStore), and sets the ticket back to zero for the next call (one launch, no memset). The
tile (64x64, 64x128 or 128x128) and S are chosen per problem by tc/model/split_k.py: waves of CTAs, k-tiles per CTA
(at least 4: a pipeline's depth), and the reduction one CTA does alone; at the problems where a sweep of every tile
and S measured another choice faster, that one (split_k.measured, the GPU's own table first), 128x64 (two consumer
warpgroups of m64n64) and 128x256 (two of m64n256, a ring of 4: 3/4 of 128x128's L2 bytes a multiply-add, partials
twice as large) among them. BF16 and FP8 per tensor (tc3's mainloop, the
scales on the summed tile, BF16 C for FP8); FP8 block-scaled (``_fp8_block``) promotes each k-tile into FP32 with
its scales as tc8 does, on the tiles whose BN divides 128. TF32 (``_tf32``, TMA_ROUND=1) runs the truncating
mainloop (TF32_ROUND=0: both operands from shared memory) on operands that A's and B's tensor maps, of TMA's TF32
element type, round to nearest (ties to even) on their copy into shared memory: cuBLAS TF32's accuracy with no
rounding work in the kernel and no pre-pass (B handed over K-major, as x @ w.t() hands w over, is read in place; a
row-major B goes through the transpose pre-pass, as tc4 TF32's does).
Why: at long K and few tiles a launch takes one CTA's whole K; split S ways, about 1/S of it plus S partial tiles
read back by one CTA. Predicted (split_k.choose's clocks): the long-K shapes of the suite within 1.5x of their DRAM
bytes' time and 1.0-1.3x torch; the 256-1024 squares about tc4's time or better; elsewhere slower than tc4, whose
persistent grid overlaps the epilogue. TF32: the truncating build's time, where every way of rounding in the kernel
costs shared-memory bandwidth or registers the mainloop needs (docs/tensor_cores/tc10.md).
TF32_ROUND=2 (a variant, TF32, with TMA_ROUND=0): both rounded in the kernel: A as wgmma's register operand, its
fragments loaded from the landed A tile and rounded in registers; B, the shared-memory operand, rounded in place by
the consumer threads, the next k-tile's tile under the current one's wgmmas, then a named barrier. Measured slower
than the maps' rounding (docs/tensor_cores/tc10.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from gemmlab.kernels.cuda.launch.kernel import output_params
from gemmlab.kernels.cuda.tc.model import split_k
from gemmlab.kernels.cuda.tc.model.budget import smem_bytes, stage_bytes
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.fp8 import fp8_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic
from gemmlab.kernels.geometry import Geometry
from gemmlab.kernels.spec import SM_COUNT, Traffic
from gemmlab.problem import Problem

# SPLITS = 0: the tile and S chosen per problem (split_k.measured where a sweep timed the problem, else split_k.choose);
# a configuration that names S (> 0) keeps its tile
# SK_CLUSTER = 1 (a --variant): S of at most split_k.CLUSTER_MAX add their partials across a cluster of the tile's S
# CTAs instead of through the workspace; measured slower on the H200 (docs/tensor_cores/tc10.md), so off
# SK_SPREAD = 1 (a --variant): where the tiles x S CTAs are resident at once (split_k.spreads), the S CTAs of a tile
# each add a share of it over the partials in the workspace, instead of the last to arrive adding all of it
# A_ROWS = 0: A's box is the tile's BM rows; a --variant may name fewer (a multiple of 8), so that at M below the
# tile the box stops near M instead of TMA filling the tile's rows past M with zeros. Not yet timed: no problem
# chooses it (docs/tensor_cores/tc10.md, "A's box at decode sizes")
BASE = {"BM": 128, "BN": 128, "STAGES": 6, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232, "SPLITS": 0, "EPI_TMA": 1,
        "SK_CLUSTER": 0, "SK_SPREAD": 0, "A_ROWS": 0}
FP8 = {**BASE, "A_E5M2": 0, "B_E5M2": 0, "OUT_BF16": 1}
FP8_BLOCK = {**FP8, "BLOCK_SCALED": 1}
# both operands rounded to nearest by their tensor maps; TF32_ROUND = 2 (a --variant, with TMA_ROUND = 0): in the
# kernel, A in registers, B in shared memory
TF32 = {**BASE, "TF32_ROUND": 0, "TMA_ROUND": 1}
IN_KERNEL = {"TF32_ROUND": 2, "TMA_ROUND": 0}  # the variant rounding both operands in the kernel
PINNED_SPLITS = 3  # configurations(): S where the tile is pinned
REDUCTION = ("latency: the last split of a tile reads the S partials back alone, and stores C (through shared "
             "memory and TMA) with no mainloop to hide it under")


@dataclass(frozen=True, kw_only=True)
class SplitK(WgmmaKernel):
    """A wgmma level over a tiles x S grid; the plan holds the partials' workspace and the tickets."""

    kind: str = "specialized"

    def defines(self) -> dict:
        d = super().defines()
        d.pop("SPLITS")  # the kernel reads S from gridDim.y
        d["SK_CLUSTER"] = int(self.cluster() is not None)
        if d["SK_CLUSTER"]:
            d["SK_CLUSTER_MAX"] = split_k.CLUSTER_MAX  # the bound of the kernel's loops over a cluster's partials
        return d

    def cluster(self) -> tuple[int, int, int] | None:
        """(1, S, 1): a tile's S CTAs (gridDim.y) in one cluster, where its partials are added across the cluster's
        shared memory (SK_CLUSTER=1 and 1 < S <= split_k.CLUSTER_MAX); None where they go through the workspace,
        SK_CLUSTER=1 asked for or not (S = 1, S past a cluster, or S still to be chosen: SPLITS=0)."""
        s = self.params["SPLITS"]
        return (1, s, 1) if split_k.reduces_in_cluster(s, self.params.get("SK_CLUSTER", 0)) else None

    def split_plan(self, problem: Problem, sm_count: int = SM_COUNT) -> split_k.SplitPlan:
        m, n, k = problem.shape
        p = self.params
        if p["SPLITS"]:
            return split_k.pinned(m, n, k, self.precision, p["BM"], p["BN"], p["STAGES"], p["SPLITS"], sm_count)
        hit = split_k.measured(m, n, k, self.precision, sm_count)
        if hit and self.constraints({**p, "BM": hit.bm, "BN": hit.bn, "STAGES": hit.stages, "SPLITS": hit.splits,
                                     "A_ROWS": 0}):  # A's box follows the tile (for_problem)
            hit = None  # a tile this build's options do not run (128x256 across a cluster, or rounding A itself)
        return hit or split_k.choose(m, n, k, self.precision, sm_count, spread=bool(p.get("SK_SPREAD", 0)))

    def for_problem(self, problem: Problem, sm_count: int = SM_COUNT) -> "SplitK":
        """The build at the plan's tile and S; A's box the variant's A_ROWS where they are fewer than its rows."""
        s = self.split_plan(problem, sm_count)
        spread = int(split_k.spreads(s, self.params.get("SK_SPREAD", 0), sm_count))
        rows = self.params.get("A_ROWS", 0)
        return self.with_params({"BM": s.bm, "BN": s.bn, "STAGES": s.stages, "SPLITS": s.splits, "SK_SPREAD": spread,
                                 "A_ROWS": rows if rows < s.bm else 0})

    def make_plan(self, problem: Problem, layout, info, gpu=None):
        """The plan for the GPU ``info`` describes (its own measured table where gemmlab ships one), whose explanation
        says where its tile and S come from: a sweep on this GPU or one of its chip, or the model."""
        with split_k.planning_for(info.name):
            return self._make_plan(problem, layout, info, gpu)

    def _make_plan(self, problem: Problem, layout, info, gpu=None):
        made = super().make_plan(problem, layout, info, gpu)
        if not self.params["SPLITS"]:
            runs = self.split_plan(problem, info.sm_count)
            model = split_k.choose(*problem.shape, self.precision, info.sm_count,
                                   spread=bool(self.params.get("SK_SPREAD", 0)))
            why = "the model's choice (split_k.choose)"
            table = split_k.source(*problem.shape, self.precision, info.sm_count)
            if (runs.bm, runs.bn, runs.splits) != (model.bm, model.bn, model.splits):
                source = split_k.choices_of(self.precision, table)
                sweep = "" if source == self.precision else f" in {source}'s sweep"
                why = (f"measured fastest at this shape{sweep} on the {table['gpu']} "
                       f"(data/{table['file']}), where the model takes "
                       f"{model.bm}x{model.bn} with S = {model.splits}")
            made.steps.append(f"tile {runs.bm}x{runs.bn}, S = {runs.splits}: {why}")
        return made

    def launch_geometry(self, problem: Problem, sm_count: int = SM_COUNT, max_clusters: int | None = None) -> Geometry:
        runs = self.for_problem(problem, sm_count)
        s = runs.split_plan(problem, sm_count)
        return Geometry(grid=s.grid, block=((s.bm // 64 + 1) * 128, 1, 1), smem=smem_bytes(runs.params))

    def traffic(self, problem: Problem, sm_count: int = SM_COUNT, layout=None) -> Traffic:
        """tc3's at the chosen tile, plus each partial written once and read once (S > 1); the walk's tiles are all
        split along K over the grid's CTAs (a wave of them, as stream-K's split tail), so the busiest SM holds about
        1/S of a tile's arithmetic."""
        runs = self.for_problem(problem, sm_count)
        return split_k.with_partials(self.traffic_model(problem, sm_count, params=dict(runs.params), layout=layout),
                                     runs.split_plan(problem, sm_count), sm_count, runs.cluster() is not None,
                                     bool(runs.params["SK_SPREAD"]))

    def configurations(self, formats: bool = False) -> list[WgmmaKernel]:
        """A build per tile of the precision (split_k.tiles_for, the measured tables' too), each in every FP8 output
        type, pinned at PINNED_SPLITS (at most KT), so that a sanitizer run at any shape of 3 k-tiles or more goes
        through the partials on every tile, added each of the three ways its constraints allow: across a cluster
        (SK_CLUSTER=1), through the workspace by the last split (both 0) and by every split (SK_SPREAD=1). TF32 also
        the variant that rounds in the kernel, so that it stays right: TF32_ROUND=2 with and without the pass over
        B's tiles (ROUND_B_SMEM=1, what the plan builds for a K-major B)."""
        ways = [{"BM": bm, "BN": bn, "STAGES": st, "SPLITS": PINNED_SPLITS, "SK_CLUSTER": c, "SK_SPREAD": spread}
                for bm, bn, st in split_k.tiles_for(self.precision, measured=True)
                for c, spread in ((1, 0), (0, 0), (0, 1))]
        # 128x256 adds no partials across a cluster: its partial and sums do not fit the ring of 4 (a constraint)
        builds = [self.with_params(w) for w in ways if not self.constraints({**self.params, **w})]
        if self.prec.tf32_multiply:
            rounded = [b.with_params(IN_KERNEL) for b in builds if not self.constraints({**b.params, **IN_KERNEL})]
            passes = [b.with_params({"ROUND_B_SMEM": 1}) for b in rounded]
            builds += [b for b in rounded if b not in builds] + passes
        return [c for b in builds for c in WgmmaKernel.configurations(b, formats)]


def _constraints(p: dict, fp8: bool, block: bool) -> list[str]:
    e = wgmma_constraints(p, specialized=True)
    if fp8:
        e += fp8_constraints({**p, "BN": 128}, promoted=block)  # the formats and options; tc10's widths below
    if p.get("SPLITS", 0) < 0:
        e.append(f"SPLITS={p['SPLITS']}: 0 (chosen per problem) or the number of splits of K")
    if p.get("SK_CLUSTER", 0) not in (0, 1):
        e.append(f"SK_CLUSTER={p['SK_CLUSTER']}: 1 (a tile's splits added across a cluster where S <= "
                 f"{split_k.CLUSTER_MAX}) or 0 (through the workspace)")
    elif p.get("SK_CLUSTER", 0) and 2 * p["BM"] * p["BN"] * 4 > p["STAGES"] * stage_bytes(p["BM"], p["BN"]):
        e.append(f"SK_CLUSTER=1 at {p['BM']}x{p['BN']}: a partial and its sums past the ring of {p['STAGES']} "
                 "stages, where the cluster's reduction keeps them")
    if p.get("SK_SPREAD", 0) not in (0, 1):
        e.append(f"SK_SPREAD={p['SK_SPREAD']}: 1 (every split of a tile adds a share of it, where the grid is "
                 "resident at once) or 0 (the last split adds all of it)")
    elif p.get("SK_SPREAD", 0) and p.get("SK_CLUSTER", 0):
        e.append("SK_SPREAD=1 and SK_CLUSTER=1: two ways of adding a tile's partials; one at most")
    if p.get("TF32_ROUND", 0) == 2 and p["BN"] > 128:
        e.append(f"TF32_ROUND=2 at BN={p['BN']}: A's rounded fragments beside BN / 2 accumulators spill (128 at most)")
    if block and 128 % p["BN"]:
        e.append(f"BN={p['BN']}: a block-scaled tile's columns sit in one 128-wide block of B's scales (64 or 128)")
    if block and p["BN"] > p.get("CONSUMER_REGS", 232) - 32:
        e.append(f"BN={p['BN']}: the k-tile's and the accumulated sets take BN registers, more than CONSUMER_REGS - 32")
    if p.get("BLOCK_SCALED", 0) not in (0, 1) or (p.get("BLOCK_SCALED", 0) and not fp8):
        e.append(f"BLOCK_SCALED={p.get('BLOCK_SCALED')}: 0, or 1 for the block-scaled fp8 build")
    return e


def _spec(precision: str, params: dict, title: str) -> SplitK:
    fp8, block = precision.startswith("fp8"), precision == "fp8_block"
    return SplitK(name=f"cuda/tc10_split_k_{precision}", level=10, precision=precision, title=title,
                  source="tc10_split_k.cu", entry="tc10_split_k", params=dict(params),
                  constraints=lambda p: _constraints(p, fp8, block),
                  traffic_model=wgmma_traffic(precision, params["BM"], params["BN"], block_scales=block),
                  doc=__doc__, unmodeled=REDUCTION)


SPECS = [
    *(_spec(prec, {**BASE, **output_params(prec)},
            f"{prec} split-K: tiles x S CTAs of tc3's warpgroups, the last split of a tile adds the S FP32 partials in "
            "split order (deterministic), tile and S per problem") for prec in ("bf16", "fp16")),
    _spec("fp8", FP8, "fp8 e4m3 split-K, per-tensor scales on the summed tile, BF16 C, deterministic reduction"),
    _spec("fp8_block", FP8_BLOCK, "fp8 block-scaled split-K, each k-tile promoted into FP32 with its 1x128 and "
                                  "128x128 scales, deterministic reduction, BF16 C"),
    _spec("tf32", TF32, "tf32 split-K, both operands rounded to nearest by their TMA copies (TFLOAT32 maps), "
                        "deterministic reduction"),
]
