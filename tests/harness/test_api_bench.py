"""gemmlab bench --api without a GPU: the cases it times, the FP8 operands it hands gemmlab.matmul and
torch._scaled_mm alike (quantized by gemmlab.fp8, in torch's scale layouts) with their float64 reference, and the
report of a run, including a precision this torch could not run."""
import numpy as np
import pytest
import torch

from gemmlab import fp8
from gemmlab.harness import api_bench, torch_side


def test_every_precision_is_timed_at_every_shape_fp8_as_x_at_w_t_and_host_overhead_at_the_first():
    cases = api_bench.cases(api_bench.PRECISIONS, api_bench.SHAPES, linear=True)
    # every precision record: fp16's too since it has one
    assert {p for p, *_ in cases} == {"fp32", "tf32", "bf16", "fp8", "fp8_block", "fp16"}
    for p in api_bench.PRECISIONS:
        mine = [c for c in cases if c[0] == p]
        assert [s for _, s, lin, _ in mine if lin == (p in torch_side.FP8)] == list(api_bench.SHAPES)
        assert [s for _, s, _, timed in mine if timed] == [api_bench.SHAPES[0]]
    # x @ w.T again for the precisions that also take a row-major B; FP8 takes only that layout
    assert [(p, lin) for p, s, lin, _ in cases[-4:]] == [("fp32", True), ("tf32", True), ("bf16", True),
                                                         ("fp16", True)]
    assert len(cases) == 6 * len(api_bench.SHAPES) + 4
    assert len(api_bench.cases(("fp8",), ((64, 64, 64),), linear=True)) == 1


def _source(m, n, k, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, generator=g), torch.randn(n, k, generator=g)


@pytest.mark.parametrize("m,n,k", [(64, 48, 256), (17, 130, 300)])
def test_per_tensor_fp8_operands_are_e4m3_b_as_w_t_with_one_scale_each(m, n, k):
    a, w = _source(m, n, k)
    (a8, b8, sa, sb), ref = torch_side.fp8_operands(torch, a, w, "fp8")
    assert a8.dtype == b8.dtype == torch.float8_e4m3fn and a8.shape == (m, k) and b8.shape == (k, n)
    assert b8.stride() == (1, k)  # the transpose of a row-major N×K w: column-major K×N, as FP8 wgmma reads B
    assert sa.shape == sb.shape == (1,) and sa.dtype == torch.float32
    assert float(sa) == pytest.approx(float(a.abs().max()) / 448, rel=1e-6)
    want = (a8.double() * sa.double()) @ (b8.double() * sb.double())
    assert torch.allclose(ref, want, rtol=1e-12, atol=0)
    exact = a.double() @ w.double().t()
    assert float(torch.linalg.norm(ref - exact) / torch.linalg.norm(exact)) < 0.05  # e4m3 keeps 3 mantissa bits


@pytest.mark.parametrize("m,n,k", [(64, 256, 256), (17, 130, 300)])
def test_block_fp8_operands_carry_deepgemms_scales_in_torchs_layouts(m, n, k):
    a, w = _source(m, n, k, seed=1)
    (a8, b8, sa, sb), ref = torch_side.fp8_operands(torch, a, w, "fp8_block")
    kb, nb = -(-k // 128), -(-n // 128)
    assert sa.shape == (m, kb) and sb.shape == (kb, nb)  # gemmlab.matmul's and torch._scaled_mm's blockwise shapes
    # the transposes of gemmlab.fp8's row-major storage, the only layout torch takes
    assert sa.stride() == (1, m) and sb.stride() == (1, kb)
    qa = fp8.quantize(a.numpy(), fp8.E4M3, fp8.ROWS_1X128)
    assert np.array_equal(sa.numpy(), qa.scale.T) and np.array_equal(a8.view(torch.uint8).numpy(), qa.data)
    full_a = sa.double().repeat_interleave(128, 1)[:, :k]
    full_b = sb.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:k, :n]
    want = (a8.double() * full_a) @ (b8.double() * full_b)
    assert torch.allclose(ref, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("precision,linear", [("bf16", False), ("tf32", True), ("fp8", True), ("fp8_block", True)])
def test_the_rotating_sets_hold_the_calls_arguments_and_the_first_ones_float64_product(precision, linear):
    """torch_side.inputs (on the CPU here): n sets of fresh operands in the layout the case names, FP8 with its scales, the
    same for the same seed, and the float64 product of the first set's operands (FP8: dequantized) as reference."""
    from gemmlab.problem import Problem

    problem = Problem(64, 48, 256, precision)
    sets, ref = torch_side.inputs(torch, problem, 3, 7, linear, device="cpu")
    again, _ = torch_side.inputs(torch, problem, 3, 7, linear, device="cpu")
    assert len(sets) == 3 and all(len(s) == (4 if precision in torch_side.FP8 else 2) for s in sets)
    a, b = sets[0][:2]
    assert a.shape == (64, 256) and b.shape == (256, 48) and b.stride() == ((1, 256) if linear else (48, 1))
    assert not torch.equal(sets[0][0].float(), sets[1][0].float())  # each set its own operands
    assert all(torch.equal(x.float(), y.float()) for s, t in zip(sets, again) for x, y in zip(s, t))
    if precision in torch_side.FP8:
        _, want = torch_side.fp8_operands(torch, *_source_like(problem, 7), precision)
        assert torch.equal(ref, want)
    else:
        assert torch.equal(ref, a.double() @ b.double())


def _source_like(problem, seed):
    """The first set's float32 x and w as torch_side.inputs draws them."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(problem.m, problem.k, generator=g), torch.randn(problem.n, problem.k, generator=g)


def _record(precision, **extra):
    rec = {"kernel": "cuda/tc8_block_scaled_fp8", "precision": precision, "m": 256, "n": 256, "k": 256,
           "layout": "x @ w.T (B column-major)", "verified": True, "rel_err": 1e-3, "api_ms": 0.02, "rounds": 10,
           "api_tflops": 1.7, "overhead_us": 12.0}
    return {**rec, **extra}


def test_the_report_renders_fp8_rows_and_says_which_torch_could_not_run():
    results = {"env": {"gpu": {"name": "NVIDIA H200"}, "git_sha": "abc"}, "records": [
        _record("fp8", torch_ms=0.03, api_ratio=1.5, torch_rel_err=2e-3, torch_overhead_us=20.0),
        _record("fp8_block", torch_error="RuntimeError: no blockwise scaling"),
        _record("fp8_block", m=512, verified=False, rel_err=0.5),
        _record("fp8_block", m=128, torch_ms=0.03, api_ratio=1.5, torch_rel_err=0.7, torch_verified=False)]}
    md = api_bench.markdown(results)
    rows = [line for line in md.splitlines() if line.startswith("| fp8")]
    assert rows[0].split(" | ")[4:7] == ["0.0200", "0.0300", "1.500"] and "12.0 / 20.0" in rows[0]
    assert rows[1].split(" | ")[5:7] == ["—", "—"] and "1.0e-03 / —" in rows[1]
    assert "FAILED" in rows[2] and "(torch wrong)" in rows[3] and "(torch wrong)" not in rows[0]
    assert "- fp8_block 128×256×256: torch's rel err 7.00e-01" in md
    assert md.rstrip().endswith("- fp8_block 256×256×256: RuntimeError: no blockwise scaling")
    assert "torch: RuntimeError: no blockwise scaling" in api_bench._line(results["records"][1])
    assert "×1.500" in api_bench._line(results["records"][0])
    # every row has the header's cells; a record from before eager samples kept their host time shows none
    header = next(line for line in md.splitlines() if line.startswith("| precision"))
    assert all(row.count("|") == header.count("|") for row in rows)
    assert rows[0].split(" | ")[8:10] == ["—", "12.0 / 20.0"]


def test_a_record_with_its_host_time_from_an_idle_gpu_shows_both_sides():
    rec = _record("bf16", torch_ms=0.03, api_ratio=1.5, torch_rel_err=2e-3, torch_overhead_us=11.0,
                  eager_host_us=19.5, torch_eager_host_us=20.25)
    md = api_bench.markdown({"env": {"gpu": {"name": "NVIDIA H100"}}, "records": [rec]})
    row = next(line for line in md.splitlines() if line.startswith("| bf16"))
    assert row.split(" | ")[8:10] == ["19.5 / 20.2", "12.0 / 11.0"]
    assert "host from idle 19.5 µs vs torch 20.2 µs  host in a loop 12.0 µs vs torch 11.0 µs" in api_bench._line(rec)
