import pytest

from gemmlab.errors import UnknownKernelError
from gemmlab.kernels.registry import get_kernel, list_kernels, select


def test_every_seed_level_is_registered_in_each_backend():
    names = {s.name for s in list_kernels()}
    assert {"cpu/v0_naive", "cpu/blas", "cuda/v1_naive", "cuda/v2_smem", "numba/v1_naive", "numba/v2_smem",
            "peers/cublas_fp32", "peers/cublas_tf32", "peers/cublas_bf16"} <= names


def test_globs_and_unions():
    assert {s.name for s in list_kernels("*/v2_*")} >= {"cuda/v2_smem", "numba/v2_smem"}
    assert all(s.backend == "cuda" for s in list_kernels("cuda/*"))
    union = {s.name for s in list_kernels("cpu/*,peers/cublas_fp32")}
    assert "cpu/v0_naive" in union and "peers/cublas_fp32" in union and "cuda/v1_naive" not in union


def test_unknown_names_are_clear_errors():
    with pytest.raises(UnknownKernelError, match="no kernel named 'cuda/v99'"):
        get_kernel("cuda/v99")
    with pytest.raises(UnknownKernelError, match="no kernel matches"):
        select("nothing/*")


def test_same_level_means_same_algorithm_across_backends():
    from gemmlab.problem import Problem

    p = Problem(100, 70, 50)
    for a, b in (("cuda/v1_naive", "numba/v1_naive"), ("cuda/v2_smem", "numba/v2_smem")):
        assert get_kernel(a).traffic(p) == get_kernel(b).traffic(p)


def test_every_kernel_documents_itself():
    for spec in list_kernels():
        assert spec.title, spec.name
        assert len(spec.doc.strip().splitlines()) >= 2, f"{spec.name} needs a module docstring on what changed and why"
        assert spec.name.startswith({"peer": "peers"}.get(spec.backend, spec.backend) + "/")


def test_numba_kernels_reach_the_simulator_after_numba_is_imported_by_the_cpu_levels():
    """cpu/v0_naive's first run imports numba (its JIT) before the numba backend decides on the simulator; the
    decision must still reach numba.cuda, so a numba kernel runs on the simulator without a GPU."""
    import os
    import subprocess
    import sys

    from gemmlab import device

    if device.gpu() is not None:
        return
    code = ("import gemmlab; from gemmlab.harness.verify import check; from gemmlab.problem import Problem; "
            "assert check(gemmlab.get_kernel('cpu/v0_naive'), Problem(3, 5, 4)).passed; "
            "import sys; assert 'numba' in sys.modules and 'numba.cuda' not in sys.modules; "
            "r = check(gemmlab.get_kernel('numba/v2_smem'), Problem(33, 17, 65)); print(r.status, r.where)")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["passed", "simulator"]
