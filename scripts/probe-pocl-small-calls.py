"""Probe: the numpy-like calls on the default CPU device (PoCL) per call, as a user pays them:
sort, argsort, top-k (k = 100), searchsorted (n values), unique_counts and unique_inverse
(uint32 keys of n / 16 values) of float32 keys at 2^10, 2^16 and 2^20; wall time of the call and
its wait, median and min of 7 rounds of 20 calls (5 at 2^20). Run it from two trees in
alternating processes to compare them: `python scripts/probe-pocl-small-calls.py TAG`."""
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clradix


def main():
    tag = sys.argv[1] if len(sys.argv) > 1 else "-"
    platform = [p for p in cl.get_platforms() if "Portable" in p.name][0]
    ctx = cl.Context([platform.get_devices()[0]])
    q = cl.CommandQueue(ctx)
    rng = np.random.default_rng(11)
    for log2n in (10, 16, 20):
        n = 1 << log2n
        x = cla.to_device(q, rng.standard_normal(n).astype(np.float32))
        s = cla.to_device(q, np.sort(rng.standard_normal(n).astype(np.float32)))
        u = cla.to_device(q, rng.integers(0, max(n // 16, 1), n).astype(np.uint32))
        calls = {"sort": lambda: clradix.sort(x), "argsort": lambda: clradix.argsort(x),
                 "topk": lambda: clradix.topk(x, 100), "searchsorted": lambda: clradix.searchsorted(s, x),
                 "unique_counts": lambda: clradix.unique_counts(u),
                 "unique_inverse": lambda: clradix.unique_inverse(u)}
        reps = 5 if log2n >= 20 else 20
        for name, fn in calls.items():
            fn()
            q.finish()
            rounds = []
            for _ in range(7):
                t = time.perf_counter()
                for _ in range(reps):
                    fn()
                    q.finish()
                rounds.append((time.perf_counter() - t) / reps * 1e6)
            print(f"{tag:7} {name:15} 2^{log2n}  {np.median(rounds):9.1f} us (min {min(rounds):9.1f})",
                  flush=True)


if __name__ == "__main__":
    main()
