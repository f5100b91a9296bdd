"""The seed's CUDA C kernels (V1, V2): NVRTC compiles them without a GPU; ptxas reports, geometry, constraints."""
import pytest

from gemmlab.errors import InvalidConfigError
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.cuda.launch.nvrtc import parse_ptxas
from gemmlab.kernels.cuda.sgemm.v2_smem import _constraints, _geometry
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

SEED_KERNELS = ("cuda/v1_naive", "cuda/v2_smem")


@pytest.mark.parametrize("name", SEED_KERNELS)
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_compiles_without_spills(name, arch):
    report = get_kernel(name).compile(arch).report
    assert report.spills == 0 and report.stack_bytes == 0
    assert 8 <= report.registers <= 40


def test_v2_uses_two_32x32_float_tiles():
    assert get_kernel("cuda/v2_smem").compile().report.smem_bytes == 2 * 32 * 32 * 4


@pytest.mark.parametrize("m,n", [(1, 1), (33, 17), (2048, 3072), (4097, 31)])
def test_grid_covers_ragged_outputs(m, n):
    for name in SEED_KERNELS:
        spec = get_kernel(name)
        geo = spec.launch_geometry(Problem(m, n, 5))
        assert geo.grid[0] * geo.block[0] >= n and (geo.grid[0] - 1) * geo.block[0] < n
        assert geo.grid[1] * geo.block[1] >= m and (geo.grid[1] - 1) * geo.block[1] < m
        assert geo.threads == 1024


def test_invalid_tile_is_rejected_before_compiling():
    assert _constraints({"TILE": 64})
    with pytest.raises(InvalidConfigError, match="1024"):
        CudaKernel(name="cuda/v2_bad", level=2, precision="fp32", title="", source="v2_smem.cu", entry="v2_smem",
                   params={"TILE": 64}, geometry=_geometry, constraints=_constraints)


def test_index_range_limit_is_a_reason_not_a_crash():
    spec = get_kernel("cuda/v2_smem")
    assert spec.is_valid(Problem(2048, 3072, 4096)) is None
    reason = spec.is_valid(Problem(70000, 70000, 8))
    assert reason and "32-bit index range" in reason
    assert "fp32" in spec.is_valid(Problem(8, 8, 8, "bf16"))


def test_parse_ptxas_picks_the_named_entry():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'a' for 'sm_90a'
ptxas info    : Function properties for a
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 8192 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function 'b' for 'sm_90a'
ptxas info    : Function properties for b
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers, 380 bytes cmem[0]
"""
    a, b = parse_ptxas(log, "a"), parse_ptxas(log, "b")
    assert (a.registers, a.spill_stores, a.spill_loads, a.stack_bytes, a.smem_bytes, a.barriers) == (255, 8, 12, 16, 8192, 1)
    assert (b.registers, b.spills, b.smem_bytes) == (40, 0, 0)
