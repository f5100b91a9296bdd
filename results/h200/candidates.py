"""results/h200/candidates.json: the builds that decided TF32 rounding (tc4-tc6, TF32_ROUND) and tc7's promotion
interval (PROMOTE), each pinned by its parameters: checked on ragged shapes with a float64 reference, its error on the
same inputs at 4096³ and 4097x3001x2049, and its time interleaved with its cuBLAS peer at the three bar shapes.
Usage (from results/h200/run.sh): python3 results/h200/candidates.py OUT_DIR; it writes OUT_DIR/candidates.json
after every part, so a run cut short keeps what it measured."""
import json
import sys

import cupy
from gemmlab import device
from gemmlab.harness.accuracy import naive_split
from gemmlab.harness.bench import _gpu_sets, _set_bytes
from gemmlab.harness.timing import TimingOptions, rotation_sets, time_interleaved
from gemmlab.harness.verify import check, run_once
from gemmlab.kernels.peers._cublas import gemm
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

out = sys.argv[1]
info = device.require_gpu("candidates")


def var(name, **p):  # the build the label names, at every shape (no switch to one launch for small problems)
    return get_kernel(name).with_params(p, one_launch_mnk=0)


TF32 = {"tc5 truncated (ROUND=0)": var("cuda/tc5_swap_ab_tf32", TF32_ROUND=0),
        "tc5 B rounded (ROUND=1)": var("cuda/tc5_swap_ab_tf32", TF32_ROUND=1),
        "tc5 rounded (ROUND=2)": var("cuda/tc5_swap_ab_tf32", TF32_ROUND=2),
        "tc5 A by pre-pass (ROUND=3)": var("cuda/tc5_swap_ab_tf32", TF32_ROUND=3),
        "tc6 rounded": var("cuda/tc6_stream_k_tf32", TF32_ROUND=2),
        "tc4 truncated (ROUND=0)": var("cuda/tc4_persistent_tf32", TF32_ROUND=0),
        "tc4 rounded (ROUND=2)": var("cuda/tc4_persistent_tf32", TF32_ROUND=2)}
FP32 = {"tc7 PROMOTE=1": var("cuda/tc7_3xtf32", PROMOTE=1), "tc7 PROMOTE=2": var("cuda/tc7_3xtf32", PROMOTE=2),
        "tc7 PROMOTE=4": var("cuda/tc7_3xtf32", PROMOTE=4), "tc7 PROMOTE=0 (none)": var("cuda/tc7_3xtf32", PROMOTE=0)}
res = {"env": {"gpu": info.name, "registers": {}}, "verify": [], "errors": [], "timing": []}


def save():  # after every part, so a step cut short by its time limit keeps what it measured
    json.dump(res, open(f"{out}/candidates.json", "w"), indent=1, default=float)


for name, s in {**TF32, **FP32}.items():
    rep = s.compile(info.arch).report
    res["env"]["registers"][name] = {"registers": rep.registers, "spills": rep.spills}

# (a) every candidate on ragged shapes, NaN-poisoned C, float64 reference
for shape in ((4097, 3001, 2049), (1023, 1025, 1027), (16384, 64, 4096), (2047, 3071, 4097), (33, 17, 65),
              (257, 255, 1), (1, 1, 4097), (300, 520, 200)):
    for name, s in {**TF32, **FP32}.items():
        r = check(s, Problem(*shape, s.precision), seed=sum(shape))
        res["verify"].append({"variant": name, "shape": shape, "status": r.status,
                              "rel_err": r.error.rel_err if r.error else None, "reason": r.reason})
        if not r.passed:
            print(f"VERIFY {r.status}: {name} {shape} {r.reason or r.error}")
print(f"verify: {sum(v['status'] == 'passed' for v in res['verify'])}/{len(res['verify'])} passed")
save()

# (b) errors of every way on the same inputs
for shape in ((4096, 4096, 4096), (4097, 3001, 2049)):
    a, b = Problem(*shape).make_inputs(19, cupy)
    ref = cupy.matmul(a.astype(cupy.float64), b.astype(cupy.float64))
    norm = float(cupy.linalg.norm(ref))
    def err(c):
        return float(cupy.linalg.norm(c.astype(cupy.float64) - ref)) / norm
    row = {"shape": shape}
    for peer in ("fp32", "tf32"):
        c = cupy.empty(ref.shape, cupy.float32)
        gemm(a, b, c, peer)
        row[f"cublas_{peer}"] = err(c)
    row["naive split (3 cuBLAS TF32)"] = err(naive_split(a, b))
    for name, s in {**TF32, **FP32}.items():
        row[name] = err(run_once(s, Problem(*shape, s.precision), a, b))
    res["errors"].append(row)
    save()
    print(f"errors at {shape}: " + ", ".join(f"{k} {v:.3e}" for k, v in row.items() if k != "shape"))
    del a, b, ref
    cupy.get_default_memory_pool().free_all_blocks()

# (c) interleaved times: each group with its peer in the same interval
opts = TimingOptions(repeat=30, min_repeat=20, max_seconds=1.5)
for shape in ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 3072, 4096)):
    for prec, group in (("tf32", TF32), ("fp32", FP32)):
        problem = Problem(*shape, prec)
        sb = _set_bytes(problem)
        sets = _gpu_sets(problem, rotation_sets(sb, info.l2_bytes, True, 16), 7)
        names = [n for n in group if not n.startswith("tc6") and "none" not in n]
        launches = [group[n].build(problem) for n in names] + [get_kernel(f"peers/cublas_{prec}").build(problem)]
        names.append(f"peers/cublas_{prec}")
        ts = time_interleaved(launches, sets, opts, info.max_sm_clock_mhz, sb, info.l2_bytes)
        peer_ms = ts[names.index(f"peers/cublas_{prec}")].median_ms
        for n, t in zip(names, ts):
            res["timing"].append({"shape": shape, "precision": prec, "variant": n, "median_ms": t.median_ms,
                                  "iqr_ms": t.iqr_ms, "x_peer": peer_ms / t.median_ms,
                                  "tflops": problem.flops() / t.median_ms / 1e9, "mhz": t.clock.get("median_mhz")})
            print(f"time {shape} {prec:4s} {n:32s} {t.median_ms:8.4f} ms  {peer_ms / t.median_ms:5.3f}x peer")
        save()
        del sets
        cupy.get_default_memory_pool().free_all_blocks()
