"""epilogue.cuh's arithmetic run on the host: the header's own text, compiled with a host C++ compiler (__CUDACC__
defined, the qualifiers given host meanings, as tc/test_tc_epilogue_host.py does), against gemmlab.epilogue's float64
definitions. epi_act's accurate path (kSfu=false: expf, exp2f, IEEE division) is plain C++ and runs as it is, for each
EPI_ACT, over a dense grid of -10..10 and the edges (±0, ±inf, NaN, subnormals, exp's overflow, FLT_MAX): a broken
Abramowitz & Stegun coefficient or a flipped sign in silu's e^-x fails here. epi_apply_column (alpha·acc + the column's
bias, then epi_act<true>) runs with the SFU's two PTX instructions replaced by their exact host values (exp2f, 1/b),
and epi_apply<false> with a bias beside it."""
from __future__ import annotations

import ctypes
import re
import shutil
import subprocess

import numpy as np
import pytest

from gemmlab.epilogue import ACTIVATIONS, Epilogue, activate
from gemmlab.kernels.cuda.launch.nvrtc import source_path

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no host C++ compiler to run the device code with")

PRELUDE = r"""
#include <cmath>
#define __CUDACC__ 1
#define __device__
#define __forceinline__ inline
inline float __ldg(const float *p) { return *p; }
"""

HARNESS = r"""
extern "C" void act(const float *x, float *y, int n) {
  for (int i = 0; i < n; ++i) y[i] = epi_act<false>(x[i]);
}
#if EPI && EPI_ADDEND == 1
// acc: M×N row-major; out[r·N + c] = epi_apply_column(alpha·acc + bias[c]), and out2 the same by epi_apply<false>;
// bias_out[c] = epi_column_bias(c, inside = c < n_inside)
extern "C" void column(const float *acc, const float *bias, float *out, float *out2, float *bias_out, int M, int N,
                       int n_inside, float alpha) {
  const EpiArgs e{bias, 0, 1, alpha, 1.0f};
  for (int c = 0; c < N; ++c) {
    const float b = epi_column_bias(e, c, c < n_inside);
    bias_out[c] = b;
    for (int r = 0; r < M; ++r) {
      out[r * N + c] = epi_apply_column(e, acc[r * N + c], b, r, c, true);
      out2[r * N + c] = epi_apply<false>(e, acc[r * N + c], r, c, true);
    }
  }
}
#endif
"""

# the SFU's instructions, each replaced by the exact value it approximates (the host has no PTX)
SFU = [(re.compile(r'asm\("ex2\.approx\.ftz\.f32 %0, %1;" : "=f"\(r\) : "f"\(y\)\);'), "r = exp2f(y);"),
       (re.compile(r'asm\("rcp\.approx\.ftz\.f32 %0, %1;" : "=f"\(r\) : "f"\(b\)\);'), "r = 1.0f / b;")]


def header_text() -> str:
    text = source_path("epilogue.cuh").read_text().replace("#pragma once", "")  # the main file here
    for pattern, host in SFU:
        text, n = pattern.subn(host, text)
        assert n == 1, f"epilogue.cuh's {pattern.pattern!r} is not there once: update this test's SFU list"
    return text


def build(tmp_path_factory, defines: dict) -> ctypes.CDLL:
    tag = "_".join(f"{k}{v}" for k, v in defines.items())
    d = tmp_path_factory.mktemp(f"epi_{tag}")
    src, lib = d / "epi.cpp", d / "epi.so"
    head = "".join(f"#define {k} {v}\n" for k, v in defines.items())
    src.write_text(head + PRELUDE + header_text() + HARNESS)
    # no -ffast-math: NaN, inf and IEEE division as the GPU's accurate path has them
    subprocess.run([CXX, "-std=c++17", "-O2", "-fPIC", "-shared", "-o", str(lib), str(src)], check=True)
    return ctypes.CDLL(str(lib))


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def inputs() -> np.ndarray:
    f32 = np.finfo(np.float32)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 1e-45, 1e-40, f32.tiny, 0.5, 1.0, 2.0, 3.0, 5.0, 20.0, 50.0,
             87.0, 88.5, 89.0, 100.0, 200.0, 1e4, 1e6, 1.4e12, 1e13, 1e20, 3e38, float(f32.max)]
    edges = edges + [-v for v in edges]
    return np.concatenate([np.linspace(-10.0, 10.0, 20001), np.linspace(-60.0, 60.0, 2401), edges]).astype(np.float32)


def assert_matches(got: np.ndarray, x: np.ndarray, ref: np.ndarray, what: str) -> None:
    """FP32 against float64: a few ulp of the result (rtol) plus A&S erf's |error| < 1.5e-7, which gelu scales by
    |x|/2 (atol); NaN where the reference is NaN, infinities equal."""
    got = got.astype(np.float64)
    x64 = x.astype(np.float64)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(got), nan), (what, x[np.isnan(got) != nan][:8])
    inf = np.isinf(ref) & ~nan
    assert np.array_equal(got[inf], ref[inf]), (what, x[inf], got[inf])
    ok = ~nan & ~inf
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.abs(got[ok] - ref[ok])
        tol = 4e-6 * np.abs(ref[ok]) + 2e-7 * np.minimum(np.abs(x64[ok]), 1e30) + 1e-37
    bad = ~(err <= tol)
    worst = np.argmax(np.where(bad, err / tol, 0)) if bad.any() else None
    assert not bad.any(), (f"{what}: {bad.sum()} of {ok.sum()} outside the tolerance; worst x={x[ok][worst]!r} "
                           f"got={got[ok][worst]!r} ref={ref[ok][worst]!r}")


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_epi_act_accurate_path_matches_the_float64_definition(tmp_path_factory, activation):
    code = Epilogue(activation=activation).act_code
    lib = build(tmp_path_factory, {"EPI_ACT": code})
    x = inputs()
    y = np.empty_like(x)
    lib.act(_ptr(x), _ptr(y), ctypes.c_int(x.size))
    with np.errstate(all="ignore"):
        ref = activate(activation, x.astype(np.float64))
    assert_matches(y, x, ref, activation)
    if activation == "relu":  # exact, and NaN kept
        np.testing.assert_array_equal(y, np.where(x < 0, np.float32(0), x))


@pytest.mark.parametrize("alpha", [1.0, -0.75, 2.5])
def test_epi_apply_column_scales_adds_the_bias_and_activates(tmp_path_factory, alpha):
    epi = Epilogue(activation="gelu", alpha=alpha, addend="bias")
    lib = build(tmp_path_factory, {"EPI": 1, **{k: v for k, v in epi.defines().items() if k != "EPI"}})
    rng = np.random.default_rng(0)
    M, N, inside = 37, 29, 25
    acc = (rng.standard_normal((M, N)) * 3).astype(np.float32)
    bias = (rng.standard_normal(N) * 2).astype(np.float32)
    out, out2 = np.empty_like(acc), np.empty_like(acc)
    bias_out = np.empty_like(bias)
    lib.column(_ptr(acc), _ptr(bias), _ptr(out), _ptr(out2), _ptr(bias_out), M, N, inside, ctypes.c_float(alpha))
    np.testing.assert_array_equal(bias_out, np.where(np.arange(N) < inside, bias, np.float32(0)))
    # the columns past C (inside=false) take no bias; the rest the column's. x is alpha·acc + bias as the host rounds
    # it in FP32 (the product, then the sum): the activation is checked on it, where a cancelling sum's own rounding
    # would swamp FP32's few ulp; Epilogue.apply_numpy (the sum in float64) agrees within that rounding.
    used = np.where(np.arange(N) < inside, bias, np.float32(0))
    for got, b, what in ((out, used, "epi_apply_column"), (out2, bias, "epi_apply<false>")):
        x = (np.float32(alpha) * acc + b).astype(np.float32)
        assert_matches(got, x, activate(epi.activation, x.astype(np.float64)), f"{what} alpha={alpha}")
        scale = np.abs(alpha * acc.astype(np.float64)) + np.abs(b)
        np.testing.assert_array_less(np.abs(got - epi.apply_numpy(acc, b)), 4e-7 * scale + 1e-30)
