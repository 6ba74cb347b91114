"""Probe: the host side of the numpy-like calls: behind an unset user event (gated), with every
enqueue stubbed (Python only), and where the Python time goes (cProfile)."""
import cProfile, io, os, pstats, sys, time
import numpy as np, pyopencl as cl, pyopencl.array as cla
import clradix
from clradix.dispatch.shared import sorter_for

want = os.environ.get("PROBE_PLATFORM", "NVIDIA")
plat = [p for p in cl.get_platforms() if want in p.name][0]
dev = plat.get_devices()[0]
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx)
rng = np.random.default_rng(3)
N = 200
data = {}
def arr(n):
    if n not in data:
        data[n] = cla.to_device(q, rng.standard_normal(n).astype(np.float32))
    return data[n]
sorted16 = cla.to_device(q, np.sort(rng.standard_normal(1 << 16).astype(np.float32)))
cases = [
    ("sort 2^10", lambda: clradix.sort(arr(1 << 10))),
    ("sort 2^16", lambda: clradix.sort(arr(1 << 16))),
    ("argsort 2^10", lambda: clradix.argsort(arr(1 << 10))),
    ("argsort 2^16", lambda: clradix.argsort(arr(1 << 16))),
    ("topk k=100 2^12", lambda: clradix.topk(arr(1 << 12), 100)),
    ("searchsorted 2^16", lambda: clradix.searchsorted(sorted16, arr(1 << 16))),
    ("Sorter.sort 2^16", lambda: sorter_for(ctx).sort(q, arr(1 << 16))),
]
only = os.environ.get("PROBE_CASES")
if only:
    cases = [c for c in cases if any(o in c[0] for o in only.split(","))]
ENQ = ["enqueue_nd_range_kernel", "enqueue_copy", "enqueue_fill_buffer", "enqueue_marker",
       "enqueue_barrier"]
real = {n: getattr(cl, n) for n in ENQ}
done_evt = cl.enqueue_marker(q); q.finish()
def stub(on):
    for n in ENQ:
        setattr(cl, n, (lambda *a, **k: done_evt) if on else real[n])
print(f"device {dev.name} clradix from {clradix.__file__}")
print(f"{'call':20} {'gated us':>9} {'python-only us':>15} {'commands':>9}")
profiles = {}
for name, fn in cases:
    for _ in range(3):
        r = fn()
    q.finish()
    # commands
    count = [0]
    def counting(n):
        def f(*a, **k):
            count[0] += 1
            return real[n](*a, **k)
        return f
    for n in ENQ: setattr(cl, n, counting(n))
    fn(); q.finish()
    for n in ENQ: setattr(cl, n, real[n])
    cmds = count[0]
    gated = []
    for r in range(5):
        gate = cl.UserEvent(ctx)
        for a in data.values():
            a.add_event(gate)
        sorted16.add_event(gate)
        keep = []
        t = time.perf_counter()
        for _ in range(N):
            keep.append(fn())
        gated.append((time.perf_counter() - t) / N * 1e6)
        gate.set_status(cl.command_execution_status.COMPLETE)
        q.finish()
        for a in list(data.values()) + [sorted16]:
            a.finish()
        del keep
    stub(True)
    py = []
    try:
        for r in range(5):
            keep = []
            t = time.perf_counter()
            for _ in range(N):
                keep.append(fn())
            py.append((time.perf_counter() - t) / N * 1e6)
            del keep
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(N):
            fn()
        pr.disable()
    finally:
        stub(False)
    for a in list(data.values()) + [sorted16]:
        a.events.clear()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(12)
    profiles[name] = s.getvalue()
    print(f"{name:20} {np.median(gated):9.1f} {np.median(py):15.1f} {cmds:9d}", flush=True)
for name, text in profiles.items():
    print("=" * 30, name)
    print("\n".join(l for l in text.splitlines()[6:26] if l.strip()))
