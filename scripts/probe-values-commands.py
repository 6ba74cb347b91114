"""Probe: the commands of Sorter.sort(keys, values=[pos, ids]) at 2^20 on NVIDIA, each one's
start and end after a marker (profiling queue), median of 15 calls."""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cla
import clradix
tag = sys.argv[1]
plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name][0]
ctx = cl.Context([plat.get_devices()[0]])
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
ENQ = ["enqueue_nd_range_kernel", "enqueue_copy", "enqueue_fill_buffer", "enqueue_marker"]
real = {n: getattr(cl, n) for n in ENQ}
got = []
def wrap(n):
    def f(*a, **k):
        e = real[n](*a, **k); got.append((n, e)); return e
    return f
for n in ENQ: setattr(cl, n, wrap(n))
rng = np.random.default_rng(0)
for log2n in (16, 20):
    N = 1 << log2n
    k0 = rng.integers(0, 2**32, N, dtype=np.uint32)
    src = cla.to_device(q, k0); keys = cla.empty_like(src)
    pos = cla.to_device(q, rng.random((N, 3), dtype=np.float32)); ids = cla.to_device(q, np.arange(N, dtype=np.int64))
    s = clradix.Sorter(ctx)
    rows = []
    for r in range(16):
        real["enqueue_copy"](q, keys.data, src.data).wait()
        m = real["enqueue_marker"](q); m.wait()
        got.clear()
        t0 = time.perf_counter()
        e = s.sort(q, keys, values=[pos, ids]); e.wait()
        wall = (time.perf_counter() - t0) * 1e6
        if r:
            base = m.profile.end
            rows.append([wall] + [((ev.profile.start - base) / 1e3, (ev.profile.end - base) / 1e3) for _, ev in got])
    names = [n.replace("enqueue_", "") for n, _ in got]
    med = lambda xs: float(np.median(xs))
    print(f"{tag} 2^{log2n}: wall {med([r[0] for r in rows]):.0f} us; " + "  ".join(
        f"{nm} {med([r[i+1][0] for r in rows]):.0f}-{med([r[i+1][1] for r in rows]):.0f}" for i, nm in enumerate(names)), flush=True)
