"""Probe: os_fused's tile at the one-launch sizes (device time of the one kernel)."""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cla
import clradix
plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name][0]
dev = plat.get_devices()[0]
ctx = cl.Context([dev])
pq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
q = cl.CommandQueue(ctx)
rng = np.random.default_rng(1)
shapes = [(256, 2), (256, 4), (256, 8), (256, 12), (256, 16), (256, 20), (128, 8), (128, 16), (512, 4), (512, 8)]
print("n      wg  ipt  ops   kernel us median (min)   stream us/call")
t0 = time.time()
for log2n in (14, 16, 18, 20, 21):
    n = 1 << log2n
    keys0 = rng.integers(0, 2**32, n, dtype=np.uint32)
    ref = np.sort(keys0)
    for wg, ipt in shapes:
        for op in ("keys", "pairs"):
            if op == "pairs" and log2n not in (16, 20):
                continue
            try:
                s = clradix.Sorter(ctx, algorithm="onesweep", ranking="ptx", sg_size=32,
                                   fused_passes=True, wg_size=wg, items_per_thread=ipt)
                src = cla.to_device(pq, keys0)
                k = cla.empty(pq, n, np.uint32)
                v = cla.empty(pq, n, np.uint32)
                call = (lambda queue: s.sort(queue, k)) if op == "keys" else (lambda queue: s.sort(queue, k, values=v))
                cl.enqueue_copy(pq, k.data, src.data); call(pq).wait()
                assert np.array_equal(k.get(), ref)
                dts = []
                for r in range(15):
                    cl.enqueue_copy(pq, k.data, src.data)
                    e = call(pq); e.wait()
                    dts.append((e.profile.end - e.profile.start) / 1e3)
                cl.enqueue_copy(q, k.data, src.data); q.finish()
                call(q); q.finish()
                t = time.perf_counter()
                for _ in range(50):
                    call(q)
                q.finish()
                st = (time.perf_counter() - t) / 50 * 1e6
                print(f"2^{log2n}  {wg:4} {ipt:3}  {op:5}  {np.median(dts):8.1f} ({min(dts):7.1f})   {st:8.1f}", flush=True)
            except Exception as exc:
                print(f"2^{log2n}  {wg:4} {ipt:3}  {op:5}  failed: {str(exc)[:150]}", flush=True)
print(f"elapsed {time.time() - t0:.0f} s")
