# Run on a GPU machine from the repository root (gemmlab importable):
#   python3 results/<gpu>/host_path/timeline.py bf16 1x4096x4096 64x4096x4096 1024x1024x1024
"""Where an eager call's time goes from an idle GPU, gemmlab.matmul(x, w.t()) against torch.matmul on the same
tensors: the call's host span, its launch API call and its kernels on one clock (torch.profiler's CUPTI trace), medians
over calls issued after an L2 flush and a synchronization. The suite's eager time is the call's start to its last
kernel's end; what a call does before its launch reaches the GPU counts there, what it does after does not."""
import json, os, statistics, sys, tempfile
import torch, gemmlab
from torch.profiler import ProfilerActivity, profile, record_function

prec, shapes = sys.argv[1], [tuple(int(v) for v in s.split("x")) for s in sys.argv[2:]]
dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[prec]
scratch = torch.empty(64 << 20, dtype=torch.int32, device="cuda")
REPS = 100

def sides(m, n, k):
    x = torch.randn(m, k, device="cuda").to(dt)
    wt = torch.randn(n, k, device="cuda").to(dt).t()
    return {"gemmlab": lambda: gemmlab.matmul(x, wt), "torch": lambda: torch.matmul(x, wt)}

calls = {s: sides(*s) for s in shapes}
for fns in calls.values():
    for fn in fns.values():
        for _ in range(10):
            fn()
torch.cuda.synchronize()

# the suite's eager time without the profiler: events around the call from an idle GPU
print(f"# {torch.cuda.get_device_name()}, git {os.environ.get('GEMMLAB_GIT_SHA', '?')}, {prec}, medians of {REPS} "
      "calls each after an L2 flush and a synchronization; µs")
for s, fns in calls.items():
    for side, fn in fns.items():
        t = []
        for _ in range(REPS):
            scratch.zero_(); torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); fn(); b.record(); b.synchronize()
            t.append(1e3 * a.elapsed_time(b))
        print(f"{'x'.join(map(str, s)):>16s} {side:8s} eager (events, no profiler) {statistics.median(t):7.2f}")

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for rep in range(REPS):
        for s, fns in calls.items():
            for side, fn in fns.items():
                scratch.zero_(); torch.cuda.synchronize()
                with record_function(f"call|{side}|{'x'.join(map(str, s))}"):
                    fn()
                torch.cuda.synchronize()
path = os.path.join(tempfile.mkdtemp(), "trace.json")
prof.export_chrome_trace(path)
ev = json.load(open(path))["traceEvents"]
ranges = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("call|")]
api = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")]
kern = {}
for e in ev:
    if e.get("cat") == "kernel":
        kern.setdefault(e["args"].get("correlation"), []).append(e)
rows = {}
for r in ranges:
    t0, t1 = r["ts"], r["ts"] + r["dur"]
    inside = [a for a in api if t0 <= a["ts"] <= t1 and a.get("tid") == r.get("tid")]
    launches = [a for a in inside if "aunch" in a["name"]]
    ks = [k for a in launches for k in kern.get(a["args"].get("correlation"), [])]
    if not launches or not ks:
        continue
    first = min(launches, key=lambda a: a["ts"])
    k0 = min(k["ts"] for k in ks)
    k1 = max(k["ts"] + k["dur"] for k in ks)
    rows.setdefault(r["name"], []).append({
        "launch at": first["ts"] - t0, "launch took": first["dur"],
        "kernel starts": k0 - t0, "kernels end": k1 - t0, "call returns": t1 - t0,
        "launches": len(launches), "kernels": len(ks), "api calls": len(inside),
        "names": sorted({a["name"] for a in inside})})
cols = ("launch at", "launch took", "kernel starts", "kernels end", "call returns")
print("# with the profiler (CUPTI adds its own cost to each API call): from the call's start")
for name, samples in rows.items():
    _, side, shape = name.split("|")
    med = {c: statistics.median(x[c] for x in samples) for c in cols}
    print(f"{shape:>16s} {side:8s} " + "  ".join(f"{c} {med[c]:6.2f}" for c in cols)
          + f"  launches {samples[0]['launches']} kernels {samples[0]['kernels']} api {samples[0]['names']}")
