"""clradix.dask's sample sort without Dask: the split and merge chunk functions of one process
run by a pool of threads (as a Dask worker's task threads run them), to separate what the chunk
work costs from what Dask's scheduling adds.

    python -m benchmarks.dask_engine_threads --device NVIDIA --log2n 28 --chunk-log2 25

Per configuration (the device memory pool on and off; 4 threads and 1; keys from host memory,
or already on the device with the result left there): the wall time of all the splits, then of
all the merges (best of ``--repeat``), and the phase seconds of the last run
(``clradix.dask.task_times``, summed over the threads). The first run of each thread count
checks the result against numpy's sort.
"""

import argparse
import concurrent.futures as cf
import os
import sys
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="CLRADIX_DEVICE spec (default: clradix's)")
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--chunk-log2", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", default="4,1")
    ap.add_argument("--devices", type=int, default=1,
                    help="devices the process drives (clradix.dask.devices.use_devices): "
                         "splits spread over them, one merge group each (1)")
    ap.add_argument("--pools", default="1,0", help="device memory pool on (1) and off (0)")
    ap.add_argument("--sample", action="store_true",
                    help="sample the task threads' Python stacks every millisecond during the "
                         "splits and print where they were most often (the innermost frame "
                         "in clradix or pyopencl, and the line of clradix that called it)")
    ap.add_argument("--resident", default="1,0",
                    help="keys already on the device (1) and from host memory (0)")
    args = ap.parse_args(argv)

    import clradix.dask  # noqa: F401  (the package, for its modules below)
    from clradix.dask import devices, engines
    from clradix.dask.chunk import DeviceChunk
    crs = sys.modules["clradix.dask.sort"]
    n, c = 1 << args.log2n, 1 << min(args.chunk_log2, args.log2n)
    parts = n // c
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    chunks = [x[i:i + c] for i in range(0, n, c)]
    sample = np.sort(x[::max(1, n // 4096)])
    splitters = (sample[np.arange(1, parts) * sample.size // parts],
                 np.arange(1, parts) * (n // parts))
    for pool in args.pools.split(","):
        devices._forget()
        devs = devices.use_devices(args.device, count=args.devices)
        if pool == "0":   # each buffer allocated and released (the pool's counterfactual)
            for dev in devs:
                dev.copies.allocator = None
        eng = engines.DeviceEngine()
        groups = len(devs)
        bounds = [g * parts // groups for g in range(groups + 1)]
        for threads in (int(t) for t in args.threads.split(",")):
            ex = cf.ThreadPoolExecutor(threads)
            for resident in (r == "1" for r in args.resident.split(",")):
                src = ([DeviceChunk(devs[i % groups].copies.to_device(devs[i % groups].queue, ch))
                        for i, ch in enumerate(chunks)] if resident else chunks)
                spans = []

                def split(i, src=src, spans=spans):
                    t = time.perf_counter()
                    got = crs._split(eng, src[i], splitters, i * c, parts, False)
                    spans.append(time.perf_counter() - t)
                    return got

                def merge(split_lists, resident=resident, ex=ex):
                    futs = [ex.submit(crs._merge, eng, split_lists, bounds[g], bounds[g + 1],
                                      False, x.dtype, resident) for g in range(groups)]
                    return [p for f in futs for p in f.result()]
                best = None
                for rep in range(args.repeat):
                    engines.task_times(True)
                    spans.clear()
                    t0 = time.perf_counter()
                    sampler = _Sampler(ex) if args.sample else None
                    lists = list(ex.map(split, range(parts)))
                    t1 = time.perf_counter()
                    if sampler:
                        sampler.stop()
                    outs = merge(lists)
                    t2 = time.perf_counter()
                    if best is None or t2 - t0 < best[2]:
                        best = (t1 - t0, t2 - t1, t2 - t0)
                    if rep == 0:
                        got = np.concatenate([np.asarray(o) for o in outs])
                        if not np.array_equal(got, np.sort(x)):
                            print("WRONG result", flush=True)
                            return 1
                    del lists, outs
                phases = {k: round(v, 3) for k, v in engines.task_times().items()}
                if sampler:
                    sampler.report()
                sp = np.array(spans) * 1e3
                print(f"devices={groups} pool={pool} threads={threads} resident={resident}: "
                      f"split {best[0] * 1e3:.1f} ms, merge {best[1] * 1e3:.1f}, total "
                      f"{best[2] * 1e3:.1f}; phases of the last run {phases}; its split calls "
                      f"{sp.sum():.0f} ms summed (min {sp.min():.1f}, median "
                      f"{np.median(sp):.1f}, max {sp.max():.1f})", flush=True)
            ex.shutdown()
    return 0


class _Sampler:
    """Counts, every millisecond, where each thread of the executor is: its innermost frame in
    clradix or pyopencl, and the nearest clradix line above it."""

    def __init__(self, ex):
        import collections
        import threading
        self.counts = collections.Counter()
        self.ticks = 0
        self._stop = threading.Event()
        self._ids = None
        self._ex = ex
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        import threading
        while not self._stop.wait(0.001):
            self.ticks += 1
            ids = {t.ident for t in getattr(self._ex, "_threads", ())}
            for tid, frame in sys._current_frames().items():
                if tid not in ids or tid == threading.get_ident():
                    continue
                inner, ours = None, None
                f = frame
                while f is not None:
                    fn = f.f_code.co_filename
                    here = f"{os.path.basename(fn)}:{f.f_lineno} {f.f_code.co_name}"
                    if inner is None and ("pyopencl" in fn or "clradix" in fn):
                        inner = here
                    if ours is None and "clradix" in fn:
                        ours = here
                    f = f.f_back
                self.counts[(inner, ours)] += 1

    def stop(self):
        self._stop.set()
        self._thread.join()

    def report(self):
        total = sum(self.counts.values()) or 1
        print(f"  samples: {self.ticks} ticks, {total} thread samples", flush=True)
        for (inner, ours), c in self.counts.most_common(12):
            print(f"  {100 * c / total:5.1f}%  {inner}  <- {ours}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
