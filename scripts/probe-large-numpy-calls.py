"""Probe: numpy-like sort and argsort from 2^22 to 2^28 keys, per call, beside cupy.sort."""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cla
import clradix
tag = sys.argv[1] if len(sys.argv) > 1 else "?"
plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name][0]
ctx = cl.Context([plat.get_devices()[0]])
q = cl.CommandQueue(ctx)
try:
    import cupy
except Exception:
    cupy = None
rng = np.random.default_rng(5)
for log2n in (22, 24, 26, 28):
    n = 1 << log2n
    for dt in (np.uint32, np.float32):
        h = (rng.integers(0, 2**32, n, dtype=np.uint32) if dt == np.uint32
             else rng.standard_normal(n).astype(np.float32))
        a = cla.to_device(q, h)
        for op in ("sort", "argsort"):
            fn = clradix.sort if op == "sort" else clradix.argsort
            r = fn(a); q.finish()
            if log2n <= 24:
                got = r.get()
                ref = np.sort(h) if op == "sort" else np.argsort(h, kind="stable")
                assert np.array_equal(got, ref), (op, n)
            del r
            reps = 20 if log2n <= 24 else 5
            rounds = []
            for _ in range(5):
                q.finish()
                t = time.perf_counter()
                for _ in range(reps):
                    r = fn(a)
                q.finish()
                rounds.append((time.perf_counter() - t) / reps * 1e3)
                del r
            line = f"{tag:7} {op:8} {np.dtype(dt).name:8} 2^{log2n}  clradix {np.median(rounds):8.3f} ms [{min(rounds):.3f}-{max(rounds):.3f}]"
            if cupy is not None and tag == "after":
                c = cupy.asarray(h)
                cfn = cupy.sort if op == "sort" else (lambda x: cupy.argsort(x))
                cfn(c); cupy.cuda.Device().synchronize()
                cr = []
                for _ in range(5):
                    t = time.perf_counter()
                    for _ in range(reps):
                        cfn(c)
                    cupy.cuda.Device().synchronize()
                    cr.append((time.perf_counter() - t) / reps * 1e3)
                line += f"   cupy {np.median(cr):8.3f} ms [{min(cr):.3f}-{max(cr):.3f}]"
                del c
            print(line, flush=True)
        del a
