# Run on a GPU machine from the repository root (gemmlab importable): python3 results/h100/host_path/probe.py 64x4096x4096 bf16
"""Where gemmlab's host time goes before its launch, from an idle GPU, against torch's whole call."""
import statistics, sys, time
import torch, gemmlab
from gemmlab import torch_op, driver

stamps = []
def wrap(obj, name, label):
    f = getattr(obj, name)
    def w(*a, **k):
        stamps.append((label, time.perf_counter()))
        return f(*a, **k)
    setattr(obj, name, w)

wrap(torch_op, "matmul", "torch_op.matmul")
wrap(torch_op, "direct", "direct")
wrap(torch_op, "run", "run")
wrap(driver.Launch, "launch", "Launch.launch")
m, n, k = (int(v) for v in sys.argv[1].split("x"))
prec = sys.argv[2]
dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[prec]
x = torch.randn(m, k, device="cuda").to(dt)
w = torch.randn(n, k, device="cuda").to(dt)
wt = w.t()
scratch = torch.empty(64 << 20, dtype=torch.int32, device="cuda")
for _ in range(20):
    gemmlab.matmul(x, wt); torch.matmul(x, wt)
torch.cuda.synchronize()

def idle(fn, reps=200):
    host = []
    for _ in range(reps):
        scratch.sum()
        torch.cuda.synchronize()
        stamps.clear()
        t0 = time.perf_counter(); fn(); t1 = time.perf_counter()
        host.append([("start", t0)] + list(stamps) + [("end", t1)])
    torch.cuda.synchronize()
    return host

def report(name, samples):
    labels = [l for l, _ in samples[0]]
    t = {l: statistics.median(1e6 * (s[i][1] - s[0][1]) for s in samples) for i, l in enumerate(labels)}
    print(f"{prec} {m}x{n}x{k} {name:8s} " + "  ".join(f"{l} {v:6.2f}" for l, v in t.items()))

for rnd in range(2):
    report("gemmlab", idle(lambda: gemmlab.matmul(x, wt)))
    report("torch", idle(lambda: torch.matmul(x, wt)))
# the same calls back to back, no synchronization between them (a loop's host time)
for name, fn in (("gemmlab", lambda: gemmlab.matmul(x, wt)), ("torch", lambda: torch.matmul(x, wt))):
    s = []
    for i in range(300):
        if i % 50 == 0: torch.cuda.synchronize()
        stamps.clear(); t0 = time.perf_counter(); fn(); s.append(1e6 * (time.perf_counter() - t0))
    print(f"{prec} loop {name}: {statistics.median(s):.2f} us")
# pieces alone, from idle
tmpl = x
def pieces():
    out = []
    for _ in range(200):
        scratch.sum(); torch.cuda.synchronize()
        t0 = time.perf_counter(); c = x.new_empty_strided((m, n), (n, 1)); t1 = time.perf_counter()
        key = (x.dtype, wt.dtype, x.shape, wt.shape, x.stride(), wt.stride(), x.device, wt.device, x.layout, wt.layout, x.is_neg(), wt.is_neg())
        t2 = time.perf_counter()
        s = torch._C._cuda_getCurrentRawStream(0); d = torch._C._cuda_getDevice(); t3 = time.perf_counter()
        out.append((t1 - t0, t2 - t1, t3 - t2))
    for i, l in enumerate(("new_empty_strided", "key", "stream+device")):
        print(f"  idle piece {l}: {1e6 * statistics.median(o[i] for o in out):.2f} us")
pieces()
