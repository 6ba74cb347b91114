"""Per-command device times of one call of each selection case on a device (the selection
benchmark's cases: the median and 5 quantiles of 2^28 float32, the median of each row of 4096 x
4096, a partition of 2^24 at the middle), read from the profiling events of every command the
drivers enqueue (a shared trace list on every driver). Usage: probe-selection-breakdown.py
[DEVICE-SUBSTRING] [LOG2N]."""
import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clradix
from clradix.drivers.base import Driver

want = (sys.argv[1] if len(sys.argv) > 1 else "").lower()
lg = int(sys.argv[2]) if len(sys.argv) > 2 else 28
dev = next(d for p in cl.get_platforms() for d in p.get_devices() if want in d.name.lower()
           or want in p.name.lower())
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
rng = np.random.default_rng(5)
print(dev.name, dev.platform.name, dev.driver_version)
big = cla.to_device(q, rng.random(1 << lg, dtype=np.float32))
rows = cla.to_device(q, rng.random((4096, 4096), dtype=np.float32))
mid = cla.to_device(q, rng.random(1 << 24, dtype=np.float32))
cases = {
    f"median 2^{lg}": lambda: clradix.median(big, queue=q),
    f"5 quantiles 2^{lg}": lambda: clradix.quantile(big, [0.1, 0.25, 0.5, 0.75, 0.9], queue=q),
    "median of rows 4096 x 4096": lambda: clradix.median(rows, axis=1, queue=q),
    "partition 2^24 at the middle": lambda: clradix.partition(mid, 1 << 23, queue=q),
}
for name, call in cases.items():
    call()
    q.finish()
    trace = []
    Driver.trace = trace
    call()
    q.finish()
    Driver.trace = None
    if not trace:
        print(name, ": no commands traced")
        continue
    t0 = trace[0][1].profile.start
    total = (trace[-1][1].profile.end - t0) * 1e-6
    print(f"{name}: {len(trace)} commands, {total:.3f} ms first start to last end")
    prev = None
    for cname, evt in trace:
        ms = (evt.profile.end - evt.profile.start) * 1e-6
        gap = (evt.profile.start - prev) * 1e-3 if prev else 0.0
        print(f"    {cname:24s} {ms:8.3f} ms  (+{gap:6.1f} us gap)")
        prev = evt.profile.end
