"""WgmmaKernel: the spec of a TMA + wgmma level (tc2..tc8): its defines, formats, launch geometry, the
configuration that runs a problem, its tensor maps and its plan (plan.py)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gemmlab.errors import LayoutError, Refusal, SizeLimitError
from gemmlab.fp8 import E4M3, E5M2
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.cuda.launch.tma import TiledMap
from gemmlab.kernels.cuda.tc.model.budget import smem_bytes
from gemmlab.kernels.cuda.tc.model.fp8 import is_fp8
from gemmlab.kernels.cuda.tc.model.stream_k import (SK_FILL, SK_MIN_KTILES, SK_SKIP_FILL, stream_k_dp_tiles,
                                                    stream_k_grid)
from gemmlab.kernels.cuda.tc.model.tiles import (b_box_rows, bk, narrow_fills_last_wave, narrow_pays,
                                                 rounds_a_in_place, short_pays, with_tile_rows)
from gemmlab.kernels.cuda.tc.model.timeline import TENSOR_FMA_PER_SM_CLOCK, TIMELINE_SOURCES, TL_SLOTS
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.spec import INT32_MAX, SM_COUNT, Instrumented, Traffic
from gemmlab.problem import BatchedProblem, Problem

TC_PRECISIONS = ("bf16", "fp16", "tf32")  # the unscaled tensor-core precisions: tc1..tc4 build one spec of each
C_TMA_TYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "fp32"}  # C's dtype -> its tensor map's element type
# tc5's and tc6's TF32 variant that rounds in the kernel: A by a pre-pass (in shared memory up to one_launch_mnk), B in
# registers, where the registered builds' tensor maps round both
PRE_PASS = {"TF32_ROUND": 3, "TMA_ROUND": 0}


def narrow_m(p: dict) -> dict:
    """The configuration of a NARROW_BM tile: NARROW_BM rows of A tall, its ring as many bytes as the base tile's
    (more stages of the smaller tile). Where A has that few rows the call streams the weight, and the bytes in flight
    a CTA, not the tensor cores, set its pace."""
    return with_tile_rows(p, p["NARROW_BM"], NARROW_BM=0)


@dataclass(frozen=True, kw_only=True)
class WgmmaKernel(CudaKernel):
    """A TMA + wgmma level. ``kind`` picks the launch shape: plain (tc2), specialized (tc3), persistent (tc4,
    tc5). ``swap_ab`` (tc5, TF32): the kernel computes Cᵀ = Bᵀ·Aᵀ from A and B as given, no pre-pass."""

    kind: str = "plain"
    swap_ab: bool = False
    # a swap_ab level whose source also loads B's fragments from a K-major tile (SWAP_B_KMAJOR, tc_swap.cuh), so B
    # handed over as the N×K Bᵀ is read in place (tc5 and tc6 TF32)
    swap_kmajor_b: bool = False
    int32_indices: bool = False  # C offsets are 64-bit; M, N, K themselves must fit an int (checked below)
    # STREAM_K=1 (tc6): what runs where no tile is split, the base level's parameters, its clusters included
    whole_tiles: dict | None = None
    # TF32_ROUND=3 levels: up to this many multiply-adds (M·N·K), A is rounded in shared memory (TF32_ROUND=2), one
    # launch instead of the pre-pass's two (for_problem, rounds_a_in_place)
    one_launch_mnk: int = 0
    # (K, changes): a batch of products with K up to this takes these parameters in its BATCHED build (for_problem)
    short_batch: tuple | None = None
    # a shorter tile's BM and the registers it takes (tc8's 128 rows): a problem that it runs sooner (short_pays)
    # runs on it, its ring the base tile's bytes (with_tile_rows)
    short_tile: dict | None = None
    TIMELINE_SLOTS: ClassVar[int] = TL_SLOTS
    # the levels that store through tc_epilogue.cuh (store_epi, TileStore) fuse an epilogue; tc5's and tc7's swapped
    # store (tc_swap.cuh's store_acc_t) does not
    fuses_epilogue: bool = True
    # the parameter that exchanges the call's operands (1: the kernel runs Cᵀ), on the levels whose parameters name it
    EXCHANGE: ClassVar[str] = "A_IN_REGS"

    @property
    def exchanges(self) -> bool:
        """The ``EXCHANGE`` parameter set: the kernel computes the transposed product Cᵀ = w·xᵀ from the call's
        operands in each other's roles. A_IN_REGS=1 (tc5 and tc6 TF32): x is wgmma's register operand, rounded in
        registers, and w its shared-memory operand, the one TF32_ROUND=3's pre-pass rounds: 8·N·K bytes through DRAM
        instead of 8·M·K, less where x has more rows than w. The binary differs from the base only in C's store
        (C_TRANSPOSED, from registers); its tiles, launch and model are the base level's on the transposed problem.
        Its methods take the call's problem; the kernel's own spec (``kernel_build``) takes the transposed one."""
        return bool(self.params.get(self.EXCHANGE, 0))

    def kernel_build(self) -> "WgmmaKernel":
        """An exchanging spec's kernel as a spec of the transposed problem: the base level's parameters with
        C_TRANSPOSED=1 (the same tiles and grid as the base on that problem, C stored transposed, from registers)."""
        return self.with_params({self.EXCHANGE: 0, "C_TRANSPOSED": 1})

    @property
    def k_tile(self) -> int:
        """K elements per k-tile: one 128-byte swizzle row of the operands."""
        return bk(self.precision)

    @property
    def layouts(self) -> frozenset:
        """Row-major operands; and B as the transpose of an N×K matrix wherever B is a shared-memory operand
        (wgmma reads it K-major: TF32 then needs no pre-pass) or, in a swap, where the source loads B's register
        fragments from a K-major tile too (``swap_kmajor_b``: tc5, tc6 TF32; not tc7). FP8: B as the transpose of
        an N×K matrix only, and so for a tile width off the 64-column atom (tiles.OFF_ATOM_WIDTHS)."""
        if self.fp8 or self.exchanges or self.kmajor_b_only:  # exchanged: the call's B is a kernel operand, K-major
            return frozenset({Layout(b=COL)})
        return frozenset({ROW_MAJOR} if self.swap_ab and not self.swap_kmajor_b else {ROW_MAJOR, Layout(b=COL)})

    @property
    def kmajor_b_only(self) -> bool:
        """Whether this build reads B K-major only: a tile width off the 64-column swizzle atom, which an N-major B
        tile is made of (tc_ktile.cuh)."""
        return not self.swap_ab and self.params["BN"] % 64 != 0

    def layout_refusal(self, layout: Layout) -> str:
        if self.kmajor_b_only and not self.fp8:
            return (f"{self.name} at BN={self.params['BN']}: a tile width off the 64-column swizzle atom reads B "
                    "K-major only, so B must come as the transpose of an N×K matrix (w.t())")
        if self.exchanges:
            return (f"{self.name}: {self.EXCHANGE} reads the call's B as a K-major operand of the kernel, as tf32 "
                    "wgmma reads its operands: B must come as the transpose of an N×K matrix (w.t())")
        if not self.fp8:
            return super().layout_refusal(layout)
        return (f"{self.name}: fp8 wgmma reads both operands K-major, so B must come as the transpose of an N×K "
                "matrix (w.t(), as torch._scaled_mm takes it), not row-major K×N: transposing B on every call would "
                "move as many bytes again as the product reads")

    @property
    def fp8(self) -> bool:
        return is_fp8(self.precision)

    @property
    def args_struct(self):
        """The kernel's one parameter (tc_args.cuh): TcArgs, Fp8Args with the scales' addresses, BatchArgs with the
        batch (BATCHED builds), each ending with EpiArgs in EPI=1 builds."""
        from gemmlab.kernels.cuda.tc.model.plan import BATCH_ARGS, FP8_ARGS, FP8_ARGS_EPI, TC_ARGS, TC_ARGS_EPI

        if self.epilogue is not None:  # EPI=1: TcArgs ends with the epilogue's EpiArgs
            return FP8_ARGS_EPI if self.fp8 else TC_ARGS_EPI
        return FP8_ARGS if self.fp8 else BATCH_ARGS if self.params.get("BATCHED", 0) else TC_ARGS

    def defines(self) -> dict:
        if self.exchanges:  # the host exchanges the operands; the kernel stores C as its product's transpose
            return self.kernel_build().defines()
        # host-side choices: the tile width per problem (for_problem), the stream-K grid (launch_geometry), the
        # operands' map type (TMA_ROUND: the binary is TF32_ROUND=0's)
        d = {k: v for k, v in self.params.items()
             if k not in ("NARROW_BN", "NARROW_BM", "SK_MIN_KTILES", self.EXCHANGE, "SHORT_K", "TMA_ROUND")}
        if self.swap_ab and d.get("C_TRANSPOSED"):  # ... and reads the call's A as its K-major B (tc_swap.cuh)
            d["SWAP_B_KMAJOR"] = 1
        if d.get("A_ROWS") in (0, d["BM"]):  # A's box of the tile's rows: the header's default, one binary
            d.pop("A_ROWS", None)
        d.update(self.prec.tensor_core_defines)
        if d["BN"] % 64 and self.prec.reads_b_n_major:  # a width off the 64-column atom reads B K-major only
            d["B_KMAJOR"] = 1
        d.update(self.epilogue_defines())
        if d.get("EPI_DEFER") and self._stores_every_box(d):
            d["EPI_DEFER"] = 0
        if not (d.get("EPI_ASYNC") and self._passes_async(d)):  # EPI_GAP spaces the held boxes of EPI_ASYNC only
            d.pop("EPI_ASYNC", None)
            d.pop("EPI_GAP", None)
        return d

    def _passes_async(self, d: dict) -> bool:
        """Whether EPI_ASYNC hands this build's fused epilogue to producer warps: a bias or alpha (no matrix addend)
        on tc4's source with boxes of C held (EPI_DEFER after _stores_every_box: 16-bit C through TMA on tc4's own
        walk, no activation), which leave under the next tile's k-tiles (with every box stored at the tile's end, a
        warpgroup would wait for each box's pass). An activation's pass beside the mainloop measured slower than at
        the tile's end (docs/tensor_cores/tc4.md, "The fused bias in producer warps"); a matrix addend's build
        spills; FP8's was neither measured nor run on a GPU. The pass takes producer warps 1 .. BM/64 (three at
        most beside the TMA warp) and their registers (PRODUCER_REGS of 40 or more: it spills at 24)."""
        return bool(d.get("EPI") and d.get("EPI_ADDEND") != 2 and d.get("EPI_DEFER") and not self.fp8
                    and self.source == "tc4_persistent.cu" and d["BM"] // 64 <= 3
                    and d.get("PRODUCER_REGS", 40) >= 40)

    def _stores_every_box(self, d: dict) -> bool:
        """Whether a build that EPI_DEFER would hold boxes of C in stores each box at its tile's end instead: FP32 C
        (the held boxes are 16-bit words), a batch (tc4_persistent.cu's BATCHED walk holds none), an activation
        (its pass over a held box under the next tile's k-tiles measured slower than at the tile's end, in the
        consumers or in producer warps: docs/tensor_cores/tc4.md), and any fused epilogue on tc8's source, whose
        pass beside its two accumulator sets spills."""
        return bool(d.get("BATCHED") or d.get("EPI_ACT")
                    or (d.get("EPI") and self.source == "tc8_block_scaled_fp8.cu")
                    or self.output_dtype(Problem(1, 1, 1, self.precision)).itemsize == 4)

    def _short_k(self, problem: Problem, sm_count: int = SM_COUNT) -> bool:
        """Whether SHORT_K (a K bound, 0: none) turns clusters off for ``problem``: K up to the bound and tiles for
        one wave at most (all that was measured), on a clustered build (the configuration it makes has SHORT_K=0, as
        a pinned build has)."""
        bound, p = self.params.get("SHORT_K", 0), self.params
        return (bool(bound) and problem.k <= bound and p.get("CM", 1) > 1
                and ceil_div(problem.m, p["BM"]) * ceil_div(problem.n, p["BN"]) <= sm_count)

    def _short_batch(self, flat: Problem) -> bool:
        """Whether a batch, as its flattened problem, takes ``short_batch``'s parameters: K up to its bound, on a
        build whose tile width is the host's choice (NARROW_BN set, the short batch's narrower), so a pinned build
        (a variant, or a narrow tile already chosen) runs as it is."""
        if self.short_batch is None or flat.k > self.short_batch[0]:
            return False
        narrow = self.short_batch[1].get("NARROW_BN", 0)
        return bool(self.params.get("NARROW_BN", 0)) and (not narrow or narrow < self.params["BN"])

    # ---- FP8 operand formats and output type ------------------------------------------------------------------
    @property
    def formats(self) -> tuple[str, str]:
        """The formats of A and B (ml_dtypes names): FP8's e4m3 or e5m2 each, else the precision's one dtype."""
        if not self.fp8:
            return (self.prec.input_dtype,) * 2
        return tuple(E5M2 if self.params.get(f"{x}_E5M2", 0) else E4M3 for x in "AB")

    def make_inputs(self, problem: Problem, seed: int = 0, xp=None):
        """A and B as verification draws them: in the kernel's formats (FP8), and where the operands are exchanged
        or the tile is off the 64-column atom B as the K×N transpose view of an N×K array, the one layout such a
        build reads (``natural_layout``)."""
        import numpy as np

        xp = np if xp is None else xp
        a, b = problem.make_inputs(seed, xp, formats=self.formats if self.fp8 else None)
        if (self.exchanges or self.kmajor_b_only) and not self.fp8:
            b = xp.ascontiguousarray(b.T).T
        return a, b

    def natural_layout(self, problem: Problem) -> Layout:
        if self.exchanges or self.kmajor_b_only:  # B as w.t() only (layouts)
            return Layout(b=COL)
        return super().natural_layout(problem)

    def for_formats(self, a: str, b: str, out: str) -> "WgmmaKernel":
        """This level for operands in formats ``a``, ``b`` and C in ``out``, each its own binary: an FP8 level's
        float8_e4m3fn or float8_e5m2 and bfloat16 or float32 C; a 16-bit level's C types (CudaKernel.for_formats)."""
        if (a, b, out) == (*self.formats, str(self.output_dtype(Problem(1, 1, 1, self.precision)))):
            return self
        bad = [x for x in (a, b) if x not in (E4M3, E5M2)] + ([out] if out not in ("bfloat16", "float32") else [])
        if not self.fp8 or bad:
            return super(WgmmaKernel, self).for_formats(a, b, out)
        changes = {"A_E5M2": int(a == E5M2), "B_E5M2": int(b == E5M2), "OUT_BF16": int(out == "bfloat16")}
        return self.with_params(changes)

    def with_params(self, changes: dict, **fields) -> "WgmmaKernel":
        """This spec with ``changes`` to its parameters (and other ``fields`` replaced); a stream-K level's
        whole-tile launches (``whole_tiles``, where no tile is split) take the changes to the parameters they have."""
        import dataclasses

        whole = self.whole_tiles and {**self.whole_tiles,
                                      **{k: v for k, v in changes.items() if k in self.whole_tiles}}
        return dataclasses.replace(self, params={**self.params, **changes}, whole_tiles=whole, **fields)

    def config_error(self) -> str | None:
        why = super().config_error()
        for name in ("TF32_ROUND", "TMA_ROUND"):
            if not why and not self.prec.tf32_multiply and self.params.get(name, 0):
                return f"{name}={self.params[name]}: rounding to TF32 is an option of the TF32 levels"
        if not why and self.params.get(self.EXCHANGE, 0) not in (0, 1):
            return (f"{self.EXCHANGE}={self.params[self.EXCHANGE]}: 0 (the operands in their own roles) or 1 "
                    "(exchanged: the kernel runs Cᵀ)")
        if not why and self.exchanges and self.swap_ab and not self.swap_kmajor_b:
            return ("A_IN_REGS=1: the kernel's register operand is then the call's A, read from a K-major tile: a "
                    "swapped level that loads its fragments so (swap_kmajor_b: tc5, tc6 TF32)")
        return why

    def unsupported(self, gpu) -> str | None:
        if tuple(gpu.cc) != (9, 0):
            return (f"{self.name} uses wgmma, TMA and setmaxnreg, which exist on sm_90a (Hopper) only; "
                    f"{gpu.name} is sm_{gpu.cc[0]}{gpu.cc[1]}")
        return None

    def is_valid(self, problem: Problem) -> str | None:
        why = super().is_valid(problem)
        if why:
            return why
        if max(problem.shape) > INT32_MAX // 2:
            return Refusal(f"{problem.label()}: a dimension past 2^30 does not fit the kernel's int coordinates",
                           SizeLimitError)
        if self.kind != "persistent" and ceil_div(problem.m, self.params["BM"]) > 65535:
            return Refusal(f"M={problem.m} needs more than 65535 row blocks in gridDim.y", SizeLimitError)
        if self.params.get("A_ROWS"):  # the tile's rows past A's box hold a stale stage's bytes
            runs = self.for_problem(problem).params  # the tile that runs: tc10 chooses it per problem
            rows = runs.get("A_ROWS") or runs["BM"]
            if rows < runs["BM"] and problem.m > rows:
                return Refusal(f"{self.name} with A_ROWS={rows} copies {rows} rows of A a {runs['BM']}-row tile: "
                               f"M={problem.m} needs a box of M rows at least (or A_ROWS=0, the tile's)",
                               SizeLimitError)
        if isinstance(problem, BatchedProblem):
            return self._batch_refusal(problem)
        return None

    def _batch_refusal(self, problem: BatchedProblem) -> Refusal | None:
        """Why the BATCHED build cannot take this batch: C's rows of every product and a product's padded rows are
        int coordinates, and TMA steps from matrix to matrix in multiples of 16 bytes."""
        if problem.batch * ceil_div(problem.m, 256) * 256 > INT32_MAX // 2:
            return Refusal(f"{problem.label()}: the batch's rows of C (batch x M) pass 2^30, past the kernel's int "
                           "coordinates", SizeLimitError)
        elem = self.prec.input_bytes
        for name, stride in (("A", problem.stride_a), ("B", problem.stride_b)):
            if (stride * elem) % 16:
                return Refusal(f"{name}'s batch stride of {stride} elements ({stride * elem} bytes) is not a multiple "
                               "of the 16 bytes TMA steps from matrix to matrix by", LayoutError)
        return None

    def staged_operands(self, problem: Problem, layout: Layout) -> tuple[str, ...]:
        """The operands ("A", "B") that this configuration's plan copies into a pitched workspace on every call,
        their rows off the 16 bytes TMA steps by: A's rows of K unless the rounding pre-pass writes A (TF32_ROUND=3),
        B's rows of K (handed over as w.t()) or of N (read as given, N-major), not a B that the transpose pre-pass
        writes. The plan (plan.make_plan) stages exactly these."""
        _, n, k = problem.shape
        elem = self.prec.input_bytes
        off = {"A": (k * elem) % 16 != 0 and self.params.get("TF32_ROUND", 0) != 3}
        if layout.b == COL:
            off["B"] = (k * elem) % 16 != 0
        elif self.prec.reads_b_n_major or self.swap_ab:
            off["B"] = (n * elem) % 16 != 0
        return tuple(x for x in "AB" if off.get(x))

    def in_place_refusal(self, problem: Problem, layout: Layout) -> Refusal | None:
        """A batch is read in place through rank-3 maps, whose row pitch TMA takes in multiples of 16 bytes: A's
        rows of K, and B's of N (row-major) or of K (the transpose of an N×K matrix). One product's rows off 16
        bytes are copied into a pitched workspace instead (plan.py)."""
        if not isinstance(problem, BatchedProblem):
            return None
        elem, (_, n, k) = self.prec.input_bytes, problem.shape
        for name, cols, what in (("A", k, "K"), ("B", k if layout.b == COL else n, "K" if layout.b == COL else "N")):
            if (cols * elem) % 16:
                return Refusal(f"{self.name}: {name}'s rows of {what} = {cols} elements ({cols * elem} bytes) are not "
                               "a multiple of the 16 bytes TMA strides by, and a batch is read in place", LayoutError)
        return None

    def launch_geometry(self, problem: Problem, sm_count: int = 132, max_clusters: int | None = None) -> Geometry:
        """Blocks, threads and shared memory of one launch. The persistent grid has one CTA per SM, or, with
        clusters, as many clusters as can be resident at once (``max_clusters``, from the occupancy query): a
        GPC with an odd number of free SMs cannot host a 2-CTA cluster on its last SM, and a cluster that is not
        resident would run after the others, doubling the time."""
        if self.exchanges:
            return self.kernel_build().launch_geometry(problem.transposed(), sm_count, max_clusters)
        runs = self.for_problem(problem, sm_count)
        if runs is not self:
            return runs.launch_geometry(problem, sm_count, max_clusters)
        p = dict(self.params)
        batch = problem.batch if isinstance(problem, BatchedProblem) else 1  # the persistent walk takes batch x tiles
        bm, bn = p["BM"], p["BN"]
        consumers = (bn if self.swap_ab else bm) // 64
        threads = (consumers + (0 if self.kind == "plain" else 1)) * 128
        smem = smem_bytes(self.defines())  # the build's: with a fused epilogue's EPI_ASYNC barriers or without
        if self.kind == "persistent":
            cm, cn = p.get("CM", 1), p.get("CN", 1)
            size = cm * cn
            tiles = batch * ceil_div(problem.m, bm * cm) * ceil_div(problem.n, bn * cn)
            if p.get("STREAM_K", 0):  # clusters off (constraints)
                grid = stream_k_grid(tiles, ceil_div(problem.k, bk(self.precision)), sm_count,
                                     p.get("SK_MIN_KTILES", SK_MIN_KTILES))
                return Geometry(grid=(grid, 1, 1), block=(threads, 1, 1), smem=smem)
            resident = sm_count // size if max_clusters is None else min(max_clusters, sm_count // size)
            clusters = max(1, min(tiles, resident))
            return Geometry(grid=(clusters * size, 1, 1), block=(threads, 1, 1), smem=smem)
        return Geometry(grid=(ceil_div(problem.n, bn), ceil_div(problem.m, bm), 1), block=(threads, 1, 1),
                        smem=smem)

    def cluster(self) -> tuple[int, int, int] | None:
        size = self.params.get("CM", 1) * self.params.get("CN", 1)
        return (size, 1, 1) if self.kind == "persistent" and size > 1 else None

    def traffic(self, problem: Problem, sm_count: int = SM_COUNT, layout=None) -> Traffic:
        """wgmma_traffic's model at this spec's own tile (BM, BN, CM, CN, GROUP_M, NARROW_BN): the registered
        level's, a pinned configuration's or a bench --variant's alike."""
        if self.exchanges:
            return self.kernel_build().traffic(problem.transposed(), sm_count, layout and layout.transposed())
        if self.shortens(problem) or self._short_k(problem, sm_count) or self._short_tile_runs(problem, sm_count):
            # another binary runs it: its model
            return self.for_problem(problem, sm_count).traffic(problem, sm_count, layout)
        return self.traffic_model(problem, sm_count, params=dict(self.params), layout=layout)

    def shortens(self, problem: Problem) -> bool:
        """Whether NARROW_BM (a swapped level) makes the tile NARROW_BM rows of A tall for ``problem``: A has no more
        rows, and A is not rounded in shared memory (by its maps, TMA_ROUND, or the pre-pass, TF32_ROUND=3; a
        problem small enough for the pass in shared memory keeps the base height, whose binary of that pass is the one
        the sanitizer and the compile tests check)."""
        if self.exchanges:
            return self.kernel_build().shortens(problem.transposed())
        p = self.params
        narrow = p.get("NARROW_BM", 0)
        return (0 < narrow < p["BM"] and problem.m <= narrow and p.get("TF32_ROUND", 0) != 2
                and not (p.get("TF32_ROUND", 0) == 3 and rounds_a_in_place(problem, self.one_launch_mnk)))

    def for_problem(self, problem: Problem, sm_count: int = 132) -> "WgmmaKernel":
        """The spec that runs ``problem``: a TF32_ROUND=3 level with ``one_launch_mnk``, TF32_ROUND=2 where
        rounds_a_in_place says so; with NARROW_BM (a swapped level), tiles NARROW_BM rows tall where ``shortens``
        says so; with NARROW_BN, NARROW_BN-wide tiles where they fill the last wave better (narrow_pays); with
        STREAM_K, the base level where no tile is split; a batch, the BATCHED build of what runs its flattened
        problem, with ``short_batch``'s parameters where its products are short (_short_batch); with SHORT_K,
        clusters off where K is short (_short_k); exchanging, the configuration that runs the transposed problem,
        exchanging; with ``short_tile``, its rows where they finish the problem sooner (short_pays); else this
        one."""
        import dataclasses

        if self.exchanges:  # the kernel's configuration for the transposed problem, exchanging again
            runs = self.kernel_build().for_problem(problem.transposed(), sm_count).with_params({self.EXCHANGE: 1})
            runs = dataclasses.replace(runs, params={k: v for k, v in runs.params.items() if k != "C_TRANSPOSED"})
            return self if runs == self else runs
        p = self.params
        if isinstance(problem, BatchedProblem):  # the batched build of what runs the batch's flattened shape
            if p.get("BATCHED", 0):
                return self
            flat = problem.flattened()
            base = self.with_params(self.short_batch[1]) if self._short_batch(flat) else self
            return base.for_problem(flat, sm_count).with_params({"BATCHED": 1})
        if self._short_k(problem, sm_count):
            return self.with_params({"CM": 1, "SHORT_K": 0}).for_problem(problem, sm_count)
        if p.get("TF32_ROUND", 0) == 3 and rounds_a_in_place(problem, self.one_launch_mnk):
            return dataclasses.replace(self, params={**p, "TF32_ROUND": 2}).for_problem(problem, sm_count)
        if self.shortens(problem):
            return dataclasses.replace(self, params=narrow_m(p)).for_problem(problem, sm_count)
        if p.get("STREAM_K", 0):
            if self.stream_k_tiles(problem, sm_count):
                return self
            return self.without_stream_k().for_problem(problem, sm_count)
        if narrow_pays(problem.m, problem.n, p, sm_count):
            return dataclasses.replace(self, params={**p, "BN": p["NARROW_BN"], "NARROW_BN": 0})
        if self._short_tile_runs(problem, sm_count):
            return self.short()
        return self

    def _short_tile_runs(self, problem: Problem, sm_count: int) -> bool:
        """Whether ``short_tile``'s rows run ``problem`` (short_pays) on this build, whose other choices are made."""
        return bool(self.short_tile) and short_pays(problem.m, problem.n, self.params, self.short_tile["BM"],
                                                    sm_count)

    def short(self) -> "WgmmaKernel":
        """The build on ``short_tile``'s rows (pinned: it takes no other per problem)."""
        return self.with_params(with_tile_rows(self.params, self.short_tile["BM"], **self.short_tile), short_tile=None)

    def instrumented(self, problem: Problem, sm_count: int = 132) -> Instrumented | None:
        """tc4_persistent.cu and tc8's source walking whole tiles stamp their cycles with TIMELINE=1 (the
        configuration that runs ``problem``: tc4's tile width is chosen per problem)."""
        runs = self.for_problem(problem, sm_count)
        if runs.source not in TIMELINE_SOURCES or runs.params.get("STREAM_K", 0):
            return None
        import dataclasses

        p = runs.params
        ideal = p["BM"] * p["BN"] * bk(self.precision) / TENSOR_FMA_PER_SM_CLOCK[self.precision]
        return Instrumented(dataclasses.replace(runs, params={**p, "TIMELINE": 1}), bk(self.precision), ideal)

    def configurations(self, formats: bool = False) -> list["WgmmaKernel"]:
        """Every binary this spec can launch whose memory accesses differ, each pinned (gemmlab verify --sanitize
        runs them all): the tile widths, a pre-pass build's two ways of rounding A (``one_launch_mnk``), and every
        output type its precision writes; with SHORT_K, each tile width also without clusters. A level whose maps
        round its TF32 operands and that has a pre-pass variant (tc5, tc6) lists that variant's binaries too, so that
        they stay right. With ``formats``, also every FP8 format pair, which changes only the wgmma instruction (the
        compile tests build them all)."""
        own = self._configurations(formats)
        if self.params.get("TMA_ROUND", 0) and self.one_launch_mnk:
            return own + self.with_params(PRE_PASS)._configurations(formats)
        return own

    def _configurations(self, formats: bool) -> list["WgmmaKernel"]:
        import dataclasses

        specs = [self]
        if 0 < self.params.get("NARROW_BN", 0) < self.params["BN"]:
            specs = [dataclasses.replace(self, params={**self.params, "NARROW_BN": 0}),
                     dataclasses.replace(self, params={**self.params, "NARROW_BN": 0, "BN": self.params["NARROW_BN"]})]
        if self.params.get("SHORT_K", 0):  # each with its clusters and without, where K is short
            specs = [s.with_params({"SHORT_K": 0, **cm}) for cm in ({}, {"CM": 1}) for s in specs]
        if 0 < self.params.get("NARROW_BM", 0) < self.params["BM"]:
            specs = ([dataclasses.replace(s, params={**s.params, "NARROW_BM": 0}) for s in specs]
                     + [dataclasses.replace(s, params=narrow_m(s.params)) for s in specs])
        if self.short_tile:
            specs = [s.with_params({}, short_tile=None) for s in specs] + [s.short() for s in specs]
        if self.one_launch_mnk and self.params.get("TF32_ROUND", 0) == 3:
            # small problems round A in shared memory: another binary, and each pinned
            specs = [dataclasses.replace(s, one_launch_mnk=0) for s in specs]
            specs.append(dataclasses.replace(specs[0], params={**specs[0].params, "TF32_ROUND": 2}))
        if not self.fp8:
            return self.output_builds(specs)
        pairs = [(a, b) for a in (E4M3, E5M2) for b in (E4M3, E5M2)] if formats else [self.formats]
        return [s.for_formats(a, b, out) for s in specs for a, b in pairs for out in ("bfloat16", "float32")]

    def stream_k_tiles(self, problem: Problem, sm_count: int = 132) -> int:
        """How many tiles of ``problem`` the stream-K walk splits (0: whole waves, a last wave nearly full, or a
        base level whose narrower tiles fill it)."""
        if self.exchanges:
            return self.kernel_build().stream_k_tiles(problem.transposed(), sm_count)
        if narrow_fills_last_wave(problem.m, problem.n, self.without_stream_k().params, sm_count):
            return 0
        p = self.params
        tiles = ceil_div(problem.m, p["BM"]) * ceil_div(problem.n, p["BN"])
        grid = stream_k_grid(tiles, ceil_div(problem.k, bk(self.precision)), sm_count,
                             p.get("SK_MIN_KTILES", SK_MIN_KTILES))
        return tiles - stream_k_dp_tiles(tiles, grid, p.get("SK_FILL", SK_FILL), p.get("SK_SKIP_FILL", SK_SKIP_FILL))

    def without_stream_k(self) -> "WgmmaKernel":
        """The kernel launched where no tile is split: the base level's (``whole_tiles``), the same binary; else
        this spec with STREAM_K=0 (the SK_* defines are read only under STREAM_K=1)."""
        import dataclasses

        params = self.whole_tiles or {k: v for k, v in self.params.items()
                                      if k not in ("STREAM_K", "SK_FILL", "SK_SKIP_FILL")}
        for name in ("TF32_ROUND", "TMA_ROUND", "BM", "STAGES", "C_TRANSPOSED"):  # how A and B are rounded, the
            # tile's height and ring (NARROW_BM), how C is stored
            if name in self.params:
                params = {**params, name: self.params[name]}
        return dataclasses.replace(self, params=dict(params), whole_tiles=None)

    def operand_maps(self, problem: Problem, lda: int, ldb: int, b_kmajor: bool = False) -> tuple[TiledMap, TiledMap]:
        """Tensor maps of the operands the kernel reads: A (M×K, row stride lda), and B (K×N, N-major, row stride
        ldb) for BF16 and swap_ab TF32, or K-major (N×K, row stride ldb: Bᵀ) with ``b_kmajor`` and for the other
        TF32 levels, whose pre-pass writes Bᵀ."""
        m, n, k = problem.shape
        bm, kt = self.params["BM"], bk(self.precision)
        dtype = "tf32" if self.params.get("TMA_ROUND", 0) else self.prec.tma_dtype
        if isinstance(problem, BatchedProblem):  # each a batch of matrices; a broadcast operand a batch of one
            a, b = self.operand_maps(problem.matrix(), lda, ldb, b_kmajor)

            def batched(m: TiledMap, stride: int) -> TiledMap:
                one = m.rows * m.row_stride  # any 16-byte multiple: a batch of one never steps
                return dataclasses.replace(m, batch=problem.batch if stride else 1, batch_stride=stride or one)

            return batched(a, problem.stride_a), batched(b, problem.stride_b)
        if self.swap_ab:  # each CTA of a cluster loads BM/CN rows of A; B in 32-column boxes (128-byte rows)
            a = TiledMap(dtype, m, k, lda, bm // self.params.get("CN", 1), kt)
            if b_kmajor:  # SWAP_B_KMAJOR: one box of BN rows of Bᵀ, 128 bytes of K each
                return a, TiledMap(dtype, n, k, ldb, self.params["BN"], kt)
            return a, TiledMap(dtype, k, n, ldb, kt, 32)
        a = TiledMap(dtype, m, k, lda, self.params.get("A_ROWS") or bm, kt)
        if b_kmajor or not self.prec.reads_b_n_major:  # B_BOX_ROWS rows of Bᵀ a box (tc_layout.cuh)
            return a, TiledMap(dtype, n, k, ldb, b_box_rows(self.params["BN"]), kt)
        return a, TiledMap(dtype, k, n, ldb, kt, 64)

    def c_map(self, problem: Problem) -> TiledMap:
        """C's tensor map for the EPI_TMA epilogue: M×N in boxes of 64 rows of 128 bytes, 32 FP32 or 64 BF16 or
        FP16 columns; a batch's C is one (batch·M)×N matrix."""
        rows = problem.m * (problem.batch if isinstance(problem, BatchedProblem) else 1)
        out = self.output_dtype(problem)
        return TiledMap(C_TMA_TYPES[str(out)], rows, problem.n, problem.n, 64, 128 // out.itemsize)

    def c_by_tma(self, problem: Problem, ptr: int) -> bool:
        """Whether TMA can store into C at ``ptr``: a 16-byte aligned base and whatever else C's map needs."""
        return ptr % 16 == 0 and self.c_map_fits(problem)

    def c_map_fits(self, problem: Problem) -> bool:
        """Whether C's map can take C: its errors, and for a batch a product's rows in whole 64-row boxes (a box that
        crossed into the next product's rows would write them; else the register path, which stops at M)."""
        if isinstance(problem, BatchedProblem) and problem.m % 64:
            return False
        return not self.c_map(problem).errors()

    def make_plan(self, problem: Problem, layout: Layout, info, gpu=None):
        from gemmlab.kernels.cuda.tc.model import plan

        if layout not in self.layouts:
            raise LayoutError(self.layout_refusal(layout) if self.exchanges or self.kmajor_b_only else
                              f"{self.name} reads {', '.join(sorted(x.label() for x in self.layouts))} in place, "
                              f"not {layout.label()}")
        runs = self.for_problem(problem, info.sm_count)
        if not self.exchanges:
            return plan.make_plan(runs, problem, layout, info, gpu or plan.RESOURCES)
        return plan.swapped_plan(runs, runs.kernel_build(), problem, layout, info, gpu or plan.RESOURCES,
                                 f"A and B exchanged ({self.EXCHANGE}): the kernel computes Cᵀ = B·Aᵀ "
                                 f"({problem.n}x{problem.m}); its A below is the call's B (w, the N×K weight), its B "
                                 "the call's A (x, read through registers), C stored transposed")
