"""clradix.dask on a LocalCluster: 1 worker on 1 device vs W workers on W devices.

Cases: ``sort``: clradix.dask.sort of 2^31 random uint32 keys (``--log2n``); ``topk``:
clradix.dask.topk of 2^32 standard normal float32 keys, k = 1000 (``--topk-log2n``, ``--k``).
Each beside the same Dask graph with numpy chunk functions (``engine="numpy"``), and the top-k
beside dask.array.topk (numpy; values only: clradix.dask computes topk and argtopk together, which
share their graph and select once). The keys are generated on the workers and persisted first; a
sort's result is persisted on the workers (not gathered), a top-k's gathered.

Per run: the wall time, and where it goes: per phase, the seconds the chunk tasks spent
(summed over task threads and workers: ``upload`` and ``download`` are the host-device copies,
``device`` clradix's kernels, ``host`` numpy), and from Dask's task stream the compute seconds
per task group and the shuffle: the bytes of the sort's pieces that moved between workers and
the seconds spent moving data. Correctness: ``--quick`` compares every result with numpy; full
sizes check on the workers that each output chunk is sorted, that chunks follow each other in
order and that count, sum and sum of squares (mod 2^64) equal the input's; top-k results must
equal the numpy engine's bit for bit.

Devices: ``--device NVIDIA`` registers clradix.dask.DevicePlugin("NVIDIA"), which gives worker
i the i-th matching device (so W workers need W GPUs); without --device, the GPUs of the first
platform that has one (else clradix's default device). ``--quick``: 2^20 and 2^21 keys in
chunks of 2^16, 1 repeat.
"""

import ast
import os
import time

import numpy as np

from clradix.core.device import all_devices

from . import common, timing


def add_arguments(ap):
    common.add_common_options(ap, repeat=2)
    ap.add_argument("--case", default="all", choices=["sort", "topk", "all"])
    ap.add_argument("--workers", default="1,2",
                    help="worker counts to run, one device each (1,2)")
    ap.add_argument("--threads-per-worker", type=int, default=4,
                    help="task threads per worker (4): chunks copy and sort on their own "
                         "queues at once")
    ap.add_argument("--log2n", type=int, help="log2 of the sort's key count (31)")
    ap.add_argument("--topk-log2n", type=int, help="log2 of the top-k's key count (32)")
    ap.add_argument("--chunk-log2", type=int, help="log2 of the keys per chunk (27)")
    ap.add_argument("--k", type=int, default=1000, help="top-k's k (1000)")
    ap.add_argument("--engines", default="clradix,numpy",
                    help="chunk engines to time (clradix,numpy)")


def _cluster(workers, threads):
    import distributed
    import clradix
    # the worker processes import this clradix (a checkout run in place, not installed)
    root = os.path.dirname(os.path.dirname(os.path.abspath(clradix.__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=threads,
                                       processes=True, memory_limit=0, dashboard_address=None,
                                       worker_dashboard_address=None)
    return cluster, distributed.Client(cluster)


def _task_group(key):
    """The task group of a key: 'clradix-split', 'clradix-piece', ..."""
    name = key[0] if isinstance(key, tuple) else str(key)
    if name.startswith("('"):
        name = name[2:].split("'")[0]
    parts = name.split("-")
    return "-".join(p for p in parts if not (len(p) >= 16 and all(c in "0123456789abcdef"
                                                                    for c in p)))


def _stream_summary(data):
    """Compute seconds per task group, transfer seconds, and the bytes of sort pieces that
    crossed workers (each piece's worker vs its partition's merge worker)."""
    compute, transfer = {}, 0.0
    piece_at, merge_at = {}, {}
    for t in data:
        group = _task_group(t["key"])
        for ss in t.get("startstops", ()):
            dt = ss["stop"] - ss["start"]
            if ss["action"] == "compute":
                compute[group] = compute.get(group, 0.0) + dt
            elif ss["action"] == "transfer":
                transfer += dt
        key = t["key"]
        k = ast.literal_eval(key) if isinstance(key, str) and key.startswith("(") else key
        if isinstance(k, tuple):
            if group == "clradix-piece":
                piece_at[(k[1], k[2])] = (t["worker"], t.get("nbytes", 0))
            elif group in ("clradix-sort", "clradix-argsort"):
                merge_at[k[1]] = t["worker"]
    sent = {}
    for (i, j), (w, nb) in piece_at.items():
        if merge_at.get(j, w) != w:
            sent[w] = sent.get(w, 0) + nb
    return dict(compute_s={g: round(v, 3) for g, v in sorted(compute.items())},
                transfer_s=round(transfer, 3), shuffle_bytes_sent=sent)


def _phases(client, reset=True):
    import clradix.dask as crd
    per = client.run(crd.task_times, reset)
    total = {}
    for d in per.values():
        for k, v in d.items():
            total[k] = total.get(k, 0) + v
    return {k: round(v, 3) for k, v in total.items()}


def _check_sorted(x, s):
    """On the workers: each chunk sorted, chunks in order, count / sum / sum of squares equal."""
    import dask
    import dask.array as da

    def stats(b):
        b = np.asarray(b)
        u = b.astype(np.uint64)
        ok = bool(np.all(b[1:] >= b[:-1])) if b.size else True
        lo, hi = (int(b[0]), int(b[-1])) if b.size else (None, None)
        return np.array([[b.size, int(u.sum()), int((u * u).sum()), ok, lo, hi]], dtype=object)

    got = da.map_blocks(stats, s, dtype=object, chunks=((1,) * s.numblocks[0], (6,)),
                        new_axis=1, meta=np.empty((0, 0), object))
    want = da.map_blocks(stats, x, dtype=object, chunks=((1,) * x.numblocks[0], (6,)),
                         new_axis=1, meta=np.empty((0, 0), object))
    got, want = dask.compute(got, want)
    m = 1 << 64
    same = (sum(got[:, 0]) == sum(want[:, 0]) and sum(got[:, 1]) % m == sum(want[:, 1]) % m
            and sum(got[:, 2]) % m == sum(want[:, 2]) % m)
    bounds = [(lo, hi) for _, _, _, _, lo, hi in got if lo is not None]
    ordered = all(a[1] <= b[0] for a, b in zip(bounds[:-1], bounds[1:]))
    return bool(same and ordered and all(got[:, 3])), [int(c) for c in got[:, 0]]


def _time(client, fn, repeat):
    """Warm-up, then ``repeat`` timed runs of ``fn()``: (Timing, phases, stream summary) of the
    last run."""
    from distributed import get_task_stream
    fn()
    t = timing.Timing()
    for _ in range(repeat):
        _phases(client)
        with get_task_stream(client) as ts:
            t0 = time.perf_counter()
            t.out = fn()
            t.wall_ms.append((time.perf_counter() - t0) * 1e3)
    return t, _phases(client), _stream_summary(ts.data)


def run_sort(out, client, where, workers, args, engines):
    import dask.array as da
    import clradix.dask as crd
    from distributed import wait
    n, chunk = 1 << args.log2n, 1 << args.chunk_log2
    x = da.random.default_rng(7).integers(0, 2 ** 32, n, chunks=chunk, dtype=np.uint32)
    x = x.persist()
    wait(x)
    ref = np.sort(x.compute()) if args.quick else None
    for eng in engines:
        case = f"sort u32 {workers} worker(s)"
        with out.guard(f"{eng} {case}"):
            def fn():
                s = crd.sort(x, engine=eng).persist()
                wait(s)
                return s
            t, phases, stream = _time(client, fn, args.repeat)
            if ref is not None:
                ok = np.array_equal(t.out.compute(), ref)
                sizes = None
            else:
                ok, sizes = _check_sorted(x, t.out)
            t.out = None
            out.record(where if eng == "clradix" else common.host_fields(), f"clradix.dask[{eng}]",
                       case, np.uint32, n, t, ok=ok, workers=workers,
                       threads=args.threads_per_worker, chunk=chunk, phases_s=phases,
                       partition_sizes=sizes, **stream,
                       note=f"phases {phases} {stream}")


def run_topk(out, client, where, workers, args, engines):
    import dask
    import dask.array as da
    import clradix.dask as crd
    from distributed import wait
    n, chunk, k = 1 << args.topk_log2n, 1 << args.chunk_log2, args.k
    x = da.random.default_rng(11).standard_normal(n, chunks=chunk, dtype=np.float32).persist()
    wait(x)
    ref = None
    impls = [(f"clradix.dask[{e}]", e) for e in engines] + [("dask.array.topk", None)]
    for impl, eng in impls:
        case = f"topk f32 k={k} {workers} worker(s)"
        with out.guard(f"{impl} {case}"):
            if eng is None:
                def fn():
                    return dask.compute(da.topk(x, k))[0]
            else:
                def fn(eng=eng):
                    return dask.compute(crd.topk(x, k, engine=eng), crd.argtopk(x, k, engine=eng))
            t, phases, stream = _time(client, fn, args.repeat)
            got = t.out
            t.out = None
            if eng is None:   # dask's own: the values (its tie order is its own)
                ok = ref is None or np.array_equal(np.sort(got), np.sort(ref[0]))
            else:
                if ref is None:
                    ref = got if not args.quick else _topk_reference(x.compute(), k)
                ok = (np.array_equal(got[0].view(np.uint32), ref[0].view(np.uint32))
                      and np.array_equal(got[1], ref[1]))
            out.record(where if eng == "clradix" else common.host_fields(), impl, case,
                       np.float32, n, t, ok=ok, workers=workers, k=k, chunk=chunk,
                       threads=args.threads_per_worker, phases_s=phases, **stream,
                       note=f"phases {phases} {stream['compute_s']}")


def _topk_reference(x, k):
    from clradix.core.keys import key_codec
    okey = ~key_codec(x.dtype).order_key(x)
    order = np.argsort(okey, kind="stable")[:k]
    return x[order], order.astype(np.int64)


def main(args):
    import clradix.dask as crd
    if args.quick:
        args.repeat = 1
    args.log2n = args.log2n or (20 if args.quick else 31)
    args.topk_log2n = args.topk_log2n or (21 if args.quick else 32)
    args.chunk_log2 = args.chunk_log2 or (16 if args.quick else 27)
    out = common.Run("dask", args)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    spec = args.device[0] if args.device else None
    for workers in (int(w) for w in args.workers.split(",")):
        cluster, client = _cluster(workers, args.threads_per_worker)
        try:
            client.register_plugin(crd.DevicePlugin(spec))
            got = client.run(lambda: crd.current().describe())
            out.log(f"{workers} worker(s), {args.threads_per_worker} threads each: "
                    + "; ".join(f"{w}: {d}" for w, d in sorted(got.items())))
            if workers > 1 and len(set(got.values())) < workers:
                out.log("  note: workers share a device (fewer matching devices than workers)")
            where = common.opencl_device_fields(
                all_devices()[next(iter(client.run(_device_index).values()))])
            where["device"] = f"{workers} x {where['device']}"
            if args.case in ("sort", "all"):
                run_sort(out, client, where, workers, args, engines)
            if args.case in ("topk", "all"):
                run_topk(out, client, where, workers, args, engines)
        finally:
            client.close()
            cluster.close()
    _scaling(out)
    return out.finish()


def _device_index():
    """(on a worker) its device's index in all_devices(): the same list on the client's machine"""
    import clradix.dask as crd
    from clradix.core.device import all_devices
    return [d.int_ptr for d in all_devices()].index(crd.current().device.int_ptr)


def _scaling(out):
    """Wall time of 1 worker / W workers, per implementation and case."""
    base = {}
    for r in out.rows:
        if r["wall_ms"] and r.get("workers") == 1:
            base[(r["impl"], r["case"].rsplit(" 1 worker", 1)[0])] = r["wall_ms"]
    for r in out.rows:
        w = r.get("workers")
        if r["wall_ms"] and w and w > 1:
            b = base.get((r["impl"], r["case"].rsplit(f" {w} worker", 1)[0]))
            if b:
                out.log(f"scaling {r['impl']} {r['case']}: {b / r['wall_ms']:.2f}x of 1 worker "
                        f"({b:.0f} -> {r['wall_ms']:.0f} ms)")
