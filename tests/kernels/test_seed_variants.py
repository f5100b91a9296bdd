"""The seed levels' registered variants (gemmlab chapter measures them on a GPU): V1 with threadIdx.x along M (the
uncoalesced access the second seed describes), the 16×16 block of V1 and V2. Without a GPU: NVRTC compiles them for
sm_90a, the CUDA C sources run on the host (hostsim) and the numba one on the CUDA simulator, at ragged shapes;
the registered builds' cubins are the ones their sources always gave (the variant defines are absent from them)."""
import hostsim
import pytest
from hostsim import host_builds  # noqa: F401  (the session's host libraries, a pytest fixture)

from gemmlab.harness import bench
from gemmlab.harness.verify import check
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

CUDA_VARIANTS = [("cuda/v1_naive", {"ROWS_ON_X": 1}), ("cuda/v1_naive", {"BX": 16, "BY": 16}),
                 ("cuda/v2_smem", {"TILE": 16})]
RAGGED = [(1, 1, 1), (33, 17, 65), (70, 45, 31)]


@pytest.mark.parametrize("name,changes", CUDA_VARIANTS)
def test_cuda_variants_compile_for_sm_90a(name, changes):
    report = bench.variant(name, changes).compile("sm_90a").report
    assert report.spills == 0 and report.registers <= 40


def test_variant_defines_leave_the_registered_build_alone():
    registered = get_kernel("cuda/v1_naive")
    uncoalesced = bench.variant("cuda/v1_naive", {"ROWS_ON_X": 1})
    assert "ROWS_ON_X" not in registered.defines() and uncoalesced.defines()["ROWS_ON_X"] == 1
    assert registered.compile("sm_90a").cubin != uncoalesced.compile("sm_90a").cubin


def test_uncoalesced_v1_launches_along_m_and_models_more_l1_sectors():
    problem = Problem(1024, 512, 256)
    base, rows = get_kernel("cuda/v1_naive"), bench.variant("cuda/v1_naive", {"ROWS_ON_X": 1})
    assert base.launch_geometry(problem).grid == (16, 32, 1) and rows.launch_geometry(problem).grid == (32, 16, 1)
    # per warp and k: 5 sectors (one of A, four of B) against 33 (one of A per lane, one of B)
    assert rows.traffic(problem).l1 / base.traffic(problem).l1 == pytest.approx(33 / 5)
    assert rows.traffic(problem).global_read == base.traffic(problem).global_read  # the seeds' count: the same


@pytest.mark.skipif(not hostsim.HAVE_GXX, reason="needs g++ (C++20) to run kernel sources on the CPU")
@pytest.mark.usefixtures("host_builds")
@pytest.mark.parametrize("shape", RAGGED + [(40, 30, 16)])
@pytest.mark.parametrize("name,changes", CUDA_VARIANTS)
def test_cuda_variant_source_on_cpu(name, changes, shape):
    hostsim.check_gemm_on_host(bench.variant(name, changes), Problem(*shape), 0, seed=sum(shape))


@pytest.mark.parametrize("shape", RAGGED)
def test_numba_16x16_block_on_the_simulator(shape):
    v = bench.variant("numba/v1_naive", {"BX": 16, "BY": 16})
    assert v.launch_geometry(Problem(*shape)).block == (16, 16, 1)
    result = check(v, Problem(*shape), seed=sum(shape))
    assert result.where == "simulator" and result.passed, result
