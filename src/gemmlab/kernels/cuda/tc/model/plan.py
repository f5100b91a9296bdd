"""The wgmma levels' plans (tc2..tc8): everything a launch needs, resolved once per problem and operand layout.

At plan time: the configuration that runs the problem (for_problem: NARROW_BN, stream-K or the base level), the
binary, the grid (with clusters, as many as the occupancy query says are resident at once), the TcArgs parameter
struct (tc_args.cuh) with M, N, K, the tensor maps encoded in it, and the workspaces: a padded copy of an operand
whose rows TMA cannot stride (16-byte row pitch), the TF32 Bᵀ of the transpose pre-pass, the stream-K partials and
flags, the timeline stamps. A launch then only rewrites what moved: an operand's address in its map
(cuTensorMapReplaceAddress in place), C's pointer and whether TMA can store into it, the FP8 levels' scale
addresses, and runs the pre-passes the layout needs (a pitched copy, the transpose) before the kernel, all on the
caller's stream. No allocation, no synchronization, no file access.

Workspaces belong to the plan: two launches of one plan on two streams at once would share them, so
gemmlab.matmul keys plans that have any, or may make one (a staged operand), by stream, and makes one for each call
under CUDA graph capture; a stream's plan is this function again with launch.gpu.StreamResources (the first plan's
kernels and occupancy answers, workspaces from the caller's allocator on that stream).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from gemmlab import driver
from gemmlab.errors import LayoutError, SizeLimitError
from gemmlab.kernels.cuda.launch.gpu import RESOURCES, Resources, split_k_workspace
from gemmlab.kernels.cuda.launch.kernel import EPI_ARGS, MAX_GRID_Z, bind_epilogue, run_on_cupy
from gemmlab.kernels.cuda.launch.nvrtc import compile_cuda
from gemmlab.kernels.cuda.launch.tma import LinearMap, TiledMap
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.plan import COL, Layout, Plan
from gemmlab.problem import BatchedProblem

# tc_args.cuh's TcArgs, field for field, and Fp8Args: TcArgs (its base), then the scales' addresses
TC_ARGS = driver.Struct((("a", driver.MAP), ("b", driver.MAP), ("c", driver.MAP), ("C", "ptr"), ("M", "i32"),
                         ("N", "i32"), ("K", "i32"), ("c_tma", "i32"), ("sk_ws", "ptr"), ("sk_flags", "ptr"),
                         ("timeline", "ptr")))
FP8_ARGS = driver.Struct((("base", TC_ARGS), ("scale_a", "ptr"), ("scale_b", "ptr"), ("sa", driver.MAP),
                          ("sb", driver.MAP)))
# BatchArgs (BATCHED builds): TcArgs, then the batch and whether A and B step through it
BATCH_ARGS = driver.Struct((("base", TC_ARGS), ("batch", "i32"), ("a_batched", "i32"), ("b_batched", "i32")))
# EPI=1 builds (a fused epilogue): TcArgs ends with EpiArgs
TC_ARGS_EPI = driver.Struct((*TC_ARGS.fields, ("epi", EPI_ARGS)))
FP8_ARGS_EPI = driver.Struct((("base", TC_ARGS_EPI), *FP8_ARGS.fields[1:]))
TRANSPOSE_SIGNATURE = (("B", "ptr"), ("BT", "ptr"), ("K", "i32"), ("N", "i32"), ("LDT", "i32"))
ROUND_COPY_SIGNATURE = (("src", "ptr"), ("dst", "ptr"), ("rows", "i32"), ("cols", "i32"), ("ld_src", "i32"),
                        ("ld_dst", "i32"), ("vec", "i32"))
_PLACEHOLDER = 1 << 20  # a 16-byte aligned address to encode maps with before a launch supplies the real one


class _MapAddress:
    """Sets the global address of one tensor map inside the argument struct: an 8-byte store where the driver keeps
    the address as a plain word (driver.address_offset), else cuTensorMapReplaceAddress."""

    def __init__(self, map_address: int):
        offset = driver.address_offset()
        self.map_address = map_address
        self.view = None if offset is None else driver.ctypes.c_uint64.from_address(map_address + offset)

    def set(self, ptr: int) -> None:
        if self.view is not None:
            self.view.value = ptr
        else:
            driver.replace_address(self.map_address, ptr)


@dataclass
class _Operand:
    """How one operand reaches its tensor map (field ``slot`` of TcArgs): read in place, its address replaced in the
    map when it changes, or first copied into a workspace whose rows are 16-byte pitched, which TMA needs. An operand
    whose rows are not (``direct`` is None) is always copied; one at an address off 16 bytes (a view into another
    tensor) is copied for that call, into a workspace allocated the first time it is needed."""

    slot: str
    rows: int
    cols: int  # elements of a stored row
    padded: int  # elements of a workspace row: cols rounded up to 16 bytes
    elem: int
    map_for: object  # row pitch in elements -> the operand's TiledMap
    gpu: Resources = RESOURCES
    direct: bytes | None = None
    staged: bytes | None = None
    workspace: object = None
    address: _MapAddress | None = None
    mode: str | None = None  # what TcArgs' map holds now: "direct" or "staged"
    current: int | None = None  # the address the direct map holds (None when staged: every call copies)
    batched: bool = False  # a batch's map: read in place only (a staged copy would hold one matrix)

    def stage(self) -> None:
        self.workspace = self.gpu.buffer(self.rows * self.padded * self.elem)
        self.staged = _encoded(self.map_for(self.padded), self.gpu.address(self.workspace))

    def bind(self, ptr: int, stream: int) -> None:
        if ptr == self.current:
            return
        if self.direct is not None and not ptr & 15:
            if self.mode != "direct":
                driver.ctypes.memmove(self.address.map_address, self.direct, driver.MAP_BYTES)
                self.mode = "direct"
            self.address.set(ptr)
            self.current = ptr
            return
        if self.batched:
            raise LayoutError(f"{self.slot.upper()} at {ptr:#x} is not 16-byte aligned, where TMA reads a batch's "
                              "first matrix from; a batch is read in place")
        if self.workspace is None:
            self.stage()
        width = self.cols * self.elem
        driver.copy_2d(self.gpu.address(self.workspace), self.padded * self.elem, ptr, width, width, self.rows, stream)
        if self.mode != "staged":
            driver.ctypes.memmove(self.address.map_address, self.staged, driver.MAP_BYTES)
            self.mode, self.current = "staged", None


@dataclass
class _RoundedOperand:
    """A (TF32_ROUND=3): rounded to TF32 into a workspace by a launch of its own before the kernel, every call; the
    kernel's map holds the workspace, set once."""

    copy: driver.Launch
    current = None  # no address is ever the one bound: A's values may have changed, so every call rounds them

    def __post_init__(self):
        self._src, self._vec = self.copy.params.views("src", "vec")
        self._rows_align = self.copy.params.ld_src % 4 == 0  # 16-byte rows, so 16-byte loads where A is aligned

    def bind(self, ptr: int, stream: int) -> None:
        self._src.value, self._vec.value = ptr, int(self._rows_align and not ptr & 15)
        self.copy.launch(stream)


@dataclass
class TcPlan(Plan):
    main: driver.Launch | None = None
    operands: list = field(default_factory=list)  # [_Operand for A, _Operand for B]
    transpose: driver.Launch | None = None  # TF32 tc2..tc4 with a row-major B: Bᵀ before the kernel
    epi_tma: bool = False  # the binary can store C through TMA
    c_rows_ok: bool = False  # C's row pitch suits TMA (N % 4 == 0)
    c_address: _MapAddress | None = None
    c_current: int | None = None
    c_tma: int = -1  # the flag TcArgs holds now
    buffers: list = field(default_factory=list)  # workspaces, kept alive with the plan
    timeline: object = None  # TIMELINE builds: the stamps

    def __post_init__(self):
        self._c, = self.main.params.views("C")

    @property
    def may_stage(self) -> bool:
        """Whether a launch may copy an operand into a workspace made then (one at an address off 16 bytes): a plan
        that holds no workspace yet may hold one after any call, so it serves one stream only, as one that holds
        workspaces does (gemmlab.call)."""
        return any(isinstance(op, _Operand) and op.direct is not None
                   for op in (*self.operands, *getattr(self, "scale_maps", ())))

    def bind_epilogue(self, strides: tuple | None) -> None:
        bind_epilogue(self.main.params, self.spec.epilogue, strides, bool(self.spec.params.get("C_TRANSPOSED", 0)))

    def set_addend(self, d: int) -> None:
        self.main.params.D = d

    def launch(self, a, b, c, stream: int = 0) -> None:
        p = self.main.params
        ops = self.operands  # an operand at the address its map holds needs nothing: bind's first test, unframed
        if a != ops[0].current:
            ops[0].bind(a, stream)
        if self.transpose is not None:
            self.transpose.params.B = b
            self.transpose.launch(stream)
        elif b != ops[1].current:
            ops[1].bind(b, stream)
        self._c.value = c
        if self.epi_tma:
            tma = int(self.c_rows_ok and not c & 15)
            if tma != self.c_tma:
                p.c_tma = self.c_tma = tma
            if tma and c != self.c_current:
                self.c_address.set(c)
                self.c_current = c
        self.main.launch(stream)


@dataclass
class Fp8Plan(TcPlan):
    """The FP8 levels' plan: each launch also takes the device addresses of the two operands' FP32 scales (Fp8Args),
    since a caller's scales are tensors that change with its operands; a scale as a host float would have to be read
    back from the device first, a synchronization per call. Where the kernel copies block scales by TMA
    (SCALE_TMA), ``scale_maps`` puts the same addresses into their 1-D maps, as the operands' are."""

    scale_maps: list = field(default_factory=list)  # [_Operand for scale_a, _Operand for scale_b], or none

    def __post_init__(self):
        super().__post_init__()
        self._scales = self.main.params.views("scale_a", "scale_b")

    def launch(self, a, b, c, stream: int, scale_a: int, scale_b: int) -> None:
        self._scales[0].value, self._scales[1].value = scale_a, scale_b
        for op, ptr in zip(self.scale_maps, (scale_a, scale_b)):
            op.bind(ptr, stream)
        super().launch(a, b, c, stream)

    def run(self, a, b, c) -> None:
        """The harness's call: gemmlab.fp8.Scaled operands of CuPy arrays (B stored N×K), on CuPy's current
        stream."""
        import cupy

        self.launch(a.data.data.ptr, b.data.data.ptr, c.data.ptr, cupy.cuda.get_current_stream().ptr,
                    a.scale.data.ptr, b.scale.data.ptr)


@dataclass
class SwapPlan(Plan):
    """The plan of a kernel that computes the transposed product Cᵀ = Bᵀ·Aᵀ (tc9; tc5 and tc6 TF32 with A_IN_REGS):
    a launch hands ``inner``, the kernel's plan for it, the call's operands (and FP8 scales) in each other's roles."""

    inner: Plan = None

    @property
    def buffers(self) -> list:  # the stream-K workspace: one plan per stream (gemmlab.call)
        return self.inner.buffers

    @property
    def may_stage(self) -> bool:
        return self.inner.may_stage

    def bind_epilogue(self, strides: tuple | None) -> None:
        self.inner.bind_epilogue(strides)  # the inner plan's kernel stores C transposed (C_TRANSPOSED): it swaps them

    def set_addend(self, d: int) -> None:
        self.inner.set_addend(d)

    def launch(self, a, b, c, stream: int = 0, *scales) -> None:
        self.inner.launch(b, a, c, stream, *scales[::-1])

    def run(self, a, b, c) -> None:
        run_on_cupy(self, a, b, c)


def swapped_plan(spec, inner_spec, problem, layout, info, gpu: Resources, step: str) -> SwapPlan:
    """``spec``'s plan for ``problem`` where its kernel (``inner_spec``, configured for the transposed problem) computes
    Cᵀ from B as its A, read K-major, and A as its B: the kernel's plan, ``step`` saying so first."""
    inner = make_plan(inner_spec, problem.transposed(), Layout(b=COL), info, gpu)
    return SwapPlan(spec, problem, layout, steps=[step, *inner.steps], inner=inner)


def _encoded(m: TiledMap, ptr: int) -> bytes:
    """The 128 bytes of ``m``'s tensor map at ``ptr``, to copy into an argument struct."""
    args = m.encode_args(ptr)
    buf = driver.ctypes.create_string_buffer(driver.MAP_BYTES + 64)
    dest = -(-driver.ctypes.addressof(buf) // 64) * 64
    driver.encode_tiled(dest, args["dtype"], args["global_dim"], args["global_strides"], args["box_dim"], ptr,
                        swizzle=bool(args["swizzle"]))
    return driver.ctypes.string_at(dest, driver.MAP_BYTES)


def _check_resident(spec, kernel, geo: Geometry, sm_count: int, gpu: Resources, what: str) -> int:
    """The grid's CTAs, where every one of them is resident at once (the occupancy query); else a RuntimeError: a
    CTA that spins until others have counted (``what``) cannot deadlock only then."""
    grid, per_sm = math.prod(geo.grid), gpu.blocks_per_sm(kernel, geo)
    if per_sm < 1 or grid > per_sm * sm_count:
        raise RuntimeError(f"{spec.name}: a grid of {grid} CTAs is not co-resident ({per_sm} per SM x {sm_count} "
                           f"SMs); {what} could deadlock")
    return grid


def _stream_k_workspace(spec, kernel, geo: Geometry, problem, sm_count: int, gpu: Resources):
    """A workspace of one BM×BN FP32 partial per CTA and one u32 flag per tile, zeroed once (each owner resets its
    tile's flag for the next launch). An owner spins until its peers' partials are counted, which cannot deadlock
    only if every CTA of the grid is resident at once: checked here against the occupancy query, and the launch is
    cooperative, which has the driver run the grid only as a whole (two such grids on two streams, each holding
    part of the SMs, could otherwise wait for CTAs that never start)."""
    grid = _check_resident(spec, kernel, geo, sm_count, gpu, "its stream-K fixup")
    p = spec.params
    tiles = ceil_div(problem.m, p["BM"]) * ceil_div(problem.n, p["BN"])
    return gpu.buffer(4 * grid * p["BM"] * p["BN"]), gpu.buffer(4 * tiles, zero=True)


def make_plan(spec, problem, layout, info, gpu: Resources = RESOURCES) -> TcPlan:
    """The plan of ``spec`` (already the configuration that runs ``problem``) on the GPU described by ``info``."""
    b_kmajor = layout.b == COL
    defines = spec.defines()
    if b_kmajor and spec.swap_ab:  # B's register fragments from a K-major tile (tc_swap.cuh)
        defines["SWAP_B_KMAJOR"] = 1
    elif b_kmajor and spec.prec.reads_b_n_major:  # the other types read B K-major always (tc_ktile.cuh)
        defines["B_KMAJOR"] = 1
    rounds_smem = spec.params.get("TF32_ROUND", 0) == 2  # TF32 operands rounded to nearest in shared memory
    if b_kmajor and rounds_smem and not spec.swap_ab:  # no pre-pass rounds this B: the consumers do
        defines["ROUND_B_SMEM"] = 1
    geo = spec.launch_geometry(problem, info.sm_count)
    kernel = gpu.kernel(compile_cuda(spec.source, spec.entry, defines, info.arch), geo.smem)
    cluster = spec.cluster()
    if cluster and spec.kind == "persistent":  # a persistent grid holds as many clusters as are resident at once
        geo = spec.launch_geometry(problem, info.sm_count, gpu.clusters(kernel, geo, cluster))
    m, n, k = problem.shape
    elem = problem.prec.input_bytes
    align = 16 // elem  # elements per 16 bytes: TMA's row-pitch unit
    params = driver.Params((("args", spec.args_struct),))
    params.M, params.N, params.K = m, n, k
    buffers, steps, cooperative = [], [], False
    batched = isinstance(problem, BatchedProblem)
    if batched:
        params.batch, params.a_batched, params.b_batched = problem.batch, int(problem.stride_a > 0), \
            int(problem.stride_b > 0)
        steps.append(f"batched: {problem.batch} products in one launch, A's matrices {problem.stride_a} and B's "
                     f"{problem.stride_b} elements apart (0: broadcast), the persistent walk over batch x tiles")

    staged = spec.staged_operands(problem, layout)

    def operand(slot: str, rows: int, cols: int, map_for) -> _Operand:
        """An operand stored rows×cols row-major, whose ``map_for(pitch)`` TMA reads."""
        op = _Operand(slot, rows, cols, ceil_div(cols, align) * align, elem, map_for, gpu,
                      address=_MapAddress(params.map_address(slot)), batched=batched)
        if slot.upper() not in staged:
            op.direct = _encoded(map_for(cols), _PLACEHOLDER)
        elif batched:  # a pitched copy would be of one matrix
            raise LayoutError(f"{spec.name}: {slot.upper()}'s {cols * elem}-byte rows are not a multiple of the 16 "
                              "bytes TMA strides by; a batch is read in place")
        else:
            op.stage()
            buffers.append(op.workspace)
            steps.append(f"{slot.upper()} copied into a {rows}x{op.padded} workspace first: its {cols * elem}-byte "
                         "rows are not a multiple of the 16 bytes TMA strides by")
        return op

    if spec.params.get("TF32_ROUND", 0) == 3:  # A rounded by a pre-pass into a pitched workspace
        kp = ceil_div(k, align) * align
        ws = gpu.buffer(m * kp * 4)
        buffers.append(ws)
        driver.ctypes.memmove(params.map_address("a"), _encoded(spec.operand_maps(problem, kp, n)[0], gpu.address(ws)),
                              driver.MAP_BYTES)
        threads = 256
        rk = gpu.kernel(compile_cuda("tc_round_copy.cu", "tc_round_copy", {"THREADS": threads}, info.arch), 0)
        rp = driver.Params(ROUND_COPY_SIGNATURE)
        rp.dst, rp.rows, rp.cols, rp.ld_src, rp.ld_dst = gpu.address(ws), m, k, k, kp
        grid = (ceil_div(k, 4 * threads), min(m, 65535), 1)
        ops = [_RoundedOperand(driver.Launch(int(rk.handle), grid, (threads, 1, 1), 0, rp))]
        steps.append(f"rounding pre-pass: A ({m}x{k}) rounded to TF32 into a {m}x{kp} workspace")
    else:
        ops = [operand("a", m, k, lambda ld: spec.operand_maps(problem, ld, n, b_kmajor)[0])]
    transpose = None
    if b_kmajor:  # B handed over as the N×K row-major Bᵀ: the layout K-major wgmma reads
        ops.append(operand("b", n, k, lambda ld: spec.operand_maps(problem, k, ld, True)[1]))
    elif spec.prec.reads_b_n_major or spec.swap_ab:  # B read as given, N-major
        ops.append(operand("b", k, n, lambda ld: spec.operand_maps(problem, k, ld, False)[1]))
    else:  # TF32 tc2..tc4 on a row-major B: the transpose pre-pass writes Bᵀ (N×K, rows padded to 16 bytes)
        if ceil_div(k, 32) > MAX_GRID_Z:  # the pre-pass's K tiles in gridDim.y, whose limit is z's
            raise SizeLimitError(f"{spec.name}: B's transpose pre-pass takes K up to {32 * MAX_GRID_Z:,} (K = {k:,}); "
                                 "pass B as the transpose of an N×K matrix (w.t()), which is read in place")
        kp = ceil_div(k, align) * align
        bt = gpu.buffer(n * kp * 4)
        buffers.append(bt)
        driver.ctypes.memmove(params.map_address("b"), _encoded(spec.operand_maps(problem, k, kp, False)[1],
                                                                 gpu.address(bt)), driver.MAP_BYTES)
        tk = gpu.kernel(compile_cuda("tc_transpose.cu", "tc_transpose",
                                     {"TILE_T": 32, **({"ROUND": 1} if rounds_smem else {})},
                                     info.arch), 0)
        tp = driver.Params(TRANSPOSE_SIGNATURE)
        tp.BT, tp.K, tp.N, tp.LDT = gpu.address(bt), k, n, kp
        transpose = driver.Launch(int(tk.handle), (ceil_div(n, 32), ceil_div(k, 32), 1), (32, 8, 1), 0, tp)
        steps.append(f"transpose pre-pass: B ({k}x{n}) into Bᵀ ({n}x{kp})"
                     f"{', rounded to TF32' if rounds_smem else ''}; "
                     "tf32 wgmma reads K-major operands only")
    scale_maps = []
    if spec.params.get("SCALE_TMA", 0):  # tc8's block scales, as gemmlab.fp8 stores them, through 1-D maps
        kb = ceil_div(k, 128)
        # scale_a (KB x M): a tile's BM of one k-block, from 16 bytes below; scale_b (NB x KB): 4 floats about one
        for slot, count, box in (("sa", kb * m, spec.params["BM"] + 4), ("sb", ceil_div(n, 128) * kb, 4)):
            op = _Operand(slot, 1, count, count, 4, lambda ld, count=count, box=box: LinearMap("fp32", count, box),
                          gpu, address=_MapAddress(params.map_address(slot)))
            op.direct = _encoded(op.map_for(count), _PLACEHOLDER)
            scale_maps.append(op)
        where = ("into each ring slot beside its k-tile" if spec.params["SCALE_TMA"] == 1
                 else "into a ring of their own, by producer warp 1")
        steps.append(f"block scales copied by TMA {where} (a scale tensor at an address off 16 bytes is copied first)")
    zeroed = False
    if spec.params.get("STREAM_K", 0):
        ws, flags = _stream_k_workspace(spec, kernel, geo, problem, info.sm_count, gpu)
        buffers += [ws, flags]
        params.sk_ws, params.sk_flags = gpu.address(ws), gpu.address(flags)
        cooperative = zeroed = True
    elif spec.params.get("SPLITS", 0) > 1 and cluster:
        resident = gpu.clusters(kernel, geo, cluster)
        waves = f", {ceil_div(geo.grid[0], resident)} wave(s) of the {resident} resident at once" if resident else ""
        steps.append(f"split-K: {geo.grid[1]} splits of K a tile, one cluster of {geo.grid[1]} CTAs a tile{waves}; "
                     "each CTA adds its share of the tile over the cluster's partials in split order, in their shared "
                     "memory, and the first stores C")
    elif spec.params.get("SPLITS", 0) > 1:
        bm, bn = spec.params["BM"], spec.params["BN"]
        ws, tickets = split_k_workspace(gpu, ceil_div(m, bm) * ceil_div(n, bn), spec.params["SPLITS"], bm, bn)
        buffers += [ws, tickets]
        params.sk_ws, params.sk_flags = gpu.address(ws), gpu.address(tickets)
        if spec.params.get("SK_SPREAD", 0):  # a split waits for its tile's others: the driver starts the grid only
            # when every CTA can be resident (a cooperative launch)
            grid = _check_resident(spec, kernel, geo, info.sm_count, gpu, "a split waiting for its tile's others")
            cooperative = True
            steps.append(f"split-K: {geo.grid[1]} splits of K a tile, their FP32 partials in a workspace and a ticket a "
                         f"tile; once all are written (the {grid} CTAs resident at once: a cooperative launch), each "
                         "split adds its share of the tile over them in split order, and the last to finish stores C")
        else:
            steps.append(f"split-K: {geo.grid[1]} splits of K a tile, their FP32 partials in a workspace and a ticket "
                         "a tile; the last split of a tile adds them in split order and stores C")
        zeroed = True
    timeline = None
    if spec.params.get("TIMELINE", 0):  # gemmlab timeline reads plan.timeline after a launch
        warpgroups = geo.threads // 128 - 1
        timeline = gpu.buffer(8 * geo.grid[0] * warpgroups * spec.TIMELINE_SLOTS, zero=True)
        params.timeline = gpu.address(timeline)
        timeline = timeline.view("uint64").reshape(geo.grid[0], warpgroups, spec.TIMELINE_SLOTS)
        zeroed = True
    epi_tma = bool(spec.params.get("EPI_TMA", 0))
    c_rows_ok = epi_tma and spec.c_map_fits(problem)
    c_address = None
    if c_rows_ok:
        driver.ctypes.memmove(params.map_address("c"), _encoded(spec.c_map(problem), _PLACEHOLDER),
                              driver.MAP_BYTES)
        c_address = _MapAddress(params.map_address("c"))
    if zeroed:
        gpu.synchronize()  # the zeroing ran on CuPy's stream: done before any caller's launch
    main = driver.Launch(int(kernel.handle), geo.grid, geo.block, geo.smem, params, cluster=cluster,
                         cooperative=cooperative)
    steps.append(f"{spec.entry}: {geo.grid[0] * geo.grid[1]} CTAs of {geo.threads} threads"
                 f"{f' in clusters of {math.prod(cluster)}' if cluster else ''}, {geo.smem} B shared memory, "
                 f"{ceil_div(k, spec.k_tile)} k-tiles of {spec.k_tile}"
                 f"{', A and B rounded to TF32 by their TMA copies' if spec.params.get('TMA_ROUND') else ''}"
                 f"{', C through TMA stores where it is 16-byte aligned' if c_rows_ok else ''}")
    extra = {"scale_maps": scale_maps} if spec.fp8 else {}
    return (Fp8Plan if spec.fp8 else TcPlan)(spec, problem, layout, steps=steps, main=main, operands=ops,
                                             transpose=transpose, epi_tma=epi_tma, c_rows_ok=c_rows_ok,
                                             c_address=c_address, buffers=buffers, timeline=timeline, **extra)
