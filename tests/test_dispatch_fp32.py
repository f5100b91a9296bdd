"""kernel="auto" for float32 operands: an FP32-precision tensor-core level (tc7) is ranked from its bench records
like any FP32 kernel, but "auto" passes over it (its splits turn an infinite input into NaN), so float32 callers get
IEEE FP32 products unless they name it."""
from gemmlab import dispatch
from gemmlab.device import GPUInfo
from gemmlab.kernels.plan import ROW_MAJOR, Layout, COL
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

H200 = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "13.0", "13.0")


def results(gpu: str, rows) -> dict:
    return {"env": {"gpu": {"name": gpu}},
            "records": [{"kernel": k, "backend": "peer" if k.startswith("peers/") else "cuda", "precision": p,
                         "m": 4096, "n": 4096, "k": 4096, "verified": True, "median_ms": ms} for k, p, ms in rows]}


def test_an_fp32_tensor_core_level_is_ranked_but_never_picked(monkeypatch):
    rows = [("cuda/v10_register_prefetch", "fp32", 2.92), ("cuda/tc7_3xtf32", "fp32", 1.30),
            ("peers/cublas_fp32", "fp32", 2.69), ("cuda/tc5_swap_ab_tf32", "tf32", 0.40)]
    table = dispatch.table_from_results(results("NVIDIA H200", rows))
    assert [r["kernel"] for r in table["NVIDIA H200"]["fp32"]["4096x4096x4096"]] == \
        ["cuda/tc7_3xtf32", "cuda/v10_register_prefetch"]  # fastest first, peers never
    monkeypatch.setattr(dispatch, "load_table", lambda: table)
    choice = dispatch.choose(Problem(4000, 4100, 4096, "fp32"), ROW_MAJOR, H200)
    assert choice.spec.name == "cuda/v10_register_prefetch" and "#2" in choice.why
    # v10 reads a transposed B in place (B_KMAJOR), and tc7 is still passed over
    choice = dispatch.choose(Problem(4096, 4096, 4096, "fp32"), Layout(b=COL), H200)
    assert choice.spec.name == "cuda/v10_register_prefetch" and choice.copies == ()
    assert "Inf" in get_kernel("cuda/tc7_3xtf32").not_auto
