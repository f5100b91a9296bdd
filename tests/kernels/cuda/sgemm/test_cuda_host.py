"""The FP32 CUDA C ladder's kernel sources run on the CPU (hostsim: g++, one std::thread per CUDA thread), so CI
checks every level's index math, edge tiles and guards against float64 without a GPU: ragged shapes, K and N
not multiples of 4 (the per-float paths next to the 128-bit ones), operands off a 16-byte boundary, NaN guard
bands around every matrix and NaN-filled shared memory. Levels whose source needs inline PTX are skipped with
the instructions that are missing on the host."""
import importlib

import hostsim
import pytest
from hostsim import host_builds  # noqa: F401  (the session's host libraries, a pytest fixture)

from gemmlab.problem import Problem

pytestmark = [pytest.mark.skipif(not hostsim.HAVE_GXX, reason="needs g++ (C++20) to run kernel sources on the CPU"),
              pytest.mark.usefixtures("host_builds")]

LEVELS = ["v1_naive", "v2_smem", "v3_1d_blocktile", "v4_2d_blocktile", "v5_vectorized", "v6_bank_conflict_free",
          "v7_warptile", "v8_cp_async", "v9_autotuned", "v10_register_prefetch", "v11_split_k"]

SHAPES = {
    "1x1x1": (1, 1, 1),
    "33x17x65": (33, 17, 65),  # ragged everywhere, several k tiles
    "127x129x255": (127, 129, 255),  # one short of / past a tile edge, a ragged last k tile
    "K13": (36, 40, 13),  # K % 4 != 0: A's rows are not 16-byte aligned, B's are
    "N30": (40, 30, 16),  # N % 4 != 0: B's and C's rows are not 16-byte aligned, A's are
    "multi_tile": (257, 260, 36),  # several block tiles each way for every level (2×3 of v10's 256×128), ragged
    # last row and column of tiles
}


def spec_of(module: str):
    (spec,) = importlib.import_module(f"gemmlab.kernels.cuda.sgemm.{module}").SPECS
    return spec


@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "misaligned"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("module", LEVELS)
def test_level_source_on_cpu(module, shape, offset):
    spec = spec_of(module)
    blockers = hostsim.ptx_blockers(spec.source)
    if blockers:
        pytest.skip(f"{module}: {spec.source} needs inline PTX that has no host version: {'; '.join(blockers)}")
    hostsim.check_gemm_on_host(spec, Problem(*SHAPES[shape]), offset, seed=sum(SHAPES[shape]))


# Each variant breaks one level's source text in one place (the files are untouched); the host run must notice.
# v2 on 33×17×13: ragged in M and N, K under one tile.
BROKEN = {  # variant: (module, text, replacement, shape, operand offset, what the host run reports)
    # the seeds' store guard: the edge blocks' threads write past C's rows and past its end
    "v2_seed_store_guard": ("v2_smem", "if (row < M && col < N) C[row * N + col] = acc;",
                            "if (row < M || col < N) C[row * N + col] = acc;", (33, 17, 13), 0,
                            "stores landed outside C"),
    # no k guard on A's loads: the k tile reads into the next row of A and, on the last row, past its end
    "v2_unguarded_a_load": ("v2_smem", "(row < M && k0 + tx < K) ? A[", "(row < M) ? A[", (33, 17, 13), 0,
                            "relative error"),
    # rows of Bs past K are not staged; with K under one tile no thread of the block ever writes them, so they
    # hold what shared memory held before the block (NaN here) and 0·NaN poisons C, as 0·Inf from stale shared
    # memory would on a GPU
    "v2_unstaged_b_rows": ("v2_smem", "Bs[ty][tx] = (col < N && k0 + ty < K) ? B[(k0 + ty) * N + col] : 0.0f;",
                           "if (col < N && k0 + ty < K) Bs[ty][tx] = B[(k0 + ty) * N + col];", (33, 17, 13), 0,
                           "relative error"),
    # 128-bit paths chosen on the leading dimension alone: operands one float off a 16-byte boundary
    "v5_vector_path_ignores_base": ("v5_vectorized", "return (ld & 3) == 0 && aligned16(base);",
                                    "return (ld & 3) == 0;", (40, 40, 40), 1, "not 16-byte aligned"),
    # a pad of one float breaks the 16-byte alignment of the transposed A tile's rows read by LDS.128
    "v6_pad_of_one": ("v6_bank_conflict_free", "<BM, BN, BK, BM + 4,", "<BM, BN, BK, BM + 1,", (40, 40, 40), 0,
                      "not 16-byte aligned"),
    # cp.async: a wait that leaves one group more in flight reads a stage before its copies land (NaN here)
    "v8_wait_one_group_short": ("v8_cp_async", "sgemm::cp_async_wait<STAGES - 2>();",
                                "sgemm::cp_async_wait<STAGES - 1>();", (127, 129, 255), 0, "relative error"),
    # the zero-fill of copies past K dropped (a full 4-byte copy whatever the guard): the last k tile adds
    # what lies past A's rows
    "v8_no_zero_fill": ("v8_cp_async", '"r"(ok ? 4 : 0)', '"r"(4)', (33, 17, 65), 0, "relative error"),
}


@pytest.mark.parametrize("variant", BROKEN)
def test_host_run_catches_broken_source(variant):
    module, old, new, shape, offset, symptom = BROKEN[variant]
    spec, problem = spec_of(module), Problem(*shape)
    text = hostsim.kernel_source(spec.source)
    assert text.count(old) == 1, f"{spec.source} changed: {old!r} is not in it once"
    if module == "v2_smem":  # the furthest unguarded store stays inside the band as long as C that follows C
        (m, n, _), t = shape, spec.params["TILE"]
        assert (-(-m // t) * t - 1) * n + -(-n // t) * t - 1 < 2 * m * n + hostsim.GUARD
    hostsim.check_gemm_on_host(spec, problem, offset, source_text=text)  # the source as it is passes
    with pytest.raises(AssertionError, match=symptom):
        hostsim.check_gemm_on_host(spec, problem, offset, source_text=text.replace(old, new))


# B handed over as the N×K Bᵀ (x @ w.t(), B_KMAJOR=1): ragged in every dimension over 1, 17, 33 and 127 (one row
# or column of a tile, a K under one k tile, K % 4 != 0 so Bᵀ's rows are not 16-byte aligned), and several
# block tiles each way.
KMAJOR_SHAPES = [(1, 1, 1), (1, 17, 33), (17, 33, 127), (33, 127, 1), (127, 1, 17), (127, 33, 33), (33, 17, 127),
                 (257, 260, 36)]


@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "misaligned"])
@pytest.mark.parametrize("shape", KMAJOR_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_v10_reads_a_transposed_b_in_place_on_cpu(shape, offset):
    spec = spec_of("v10_register_prefetch")
    hostsim.check_gemm_on_host(spec, Problem(*shape), offset, seed=sum(shape), b_kmajor=True)


def test_host_run_catches_a_transposed_b_read_with_the_row_major_stride():
    """The K-major build's B tile is stored with its padded stride: an FFMA loop that read it with the row-major
    one would take the wrong k rows, and the host run sees it."""
    spec = spec_of("v10_register_prefetch")
    text = hostsim.kernel_source(spec.source)
    old = "(as + k * LDA, bs + k * LDB, acc)"
    assert text.count(old) == 1
    hostsim.check_gemm_on_host(spec, Problem(33, 17, 65), 0, source_text=text, b_kmajor=True)
    with pytest.raises(AssertionError, match="relative error"):
        hostsim.check_gemm_on_host(spec, Problem(33, 17, 65), 0, source_text=text.replace(old, "(as + k * LDA, bs + k * BN, acc)"),
                                   b_kmajor=True)
