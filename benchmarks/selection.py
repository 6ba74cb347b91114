"""Selection on one device (by default the first GPU) beside torch, CuPy and numpy, every result
checked: median of n float32 keys (``--log2n``, 2^28), five quantiles of them in one call, the
median of each row of a rows x cols float32 array (``--rows``, 4096x4096), and partition of
2^``--partition-log2`` float32 keys (2^24) at the middle.

Peers where importable with a CUDA device: torch.median, torch.quantile (it refuses inputs of
more than 2^24 keys: logged, not a failure), torch.median(dim=-1) (the lower median: checked
against it), cupy.median, cupy.quantile, cupy.partition; numpy always (numpy.median, quantile,
partition: its introselect). Each clradix row reports ``x_read``, its device time over one read
of the keys (pyopencl's sum of the same array: the copy-bandwidth floor), and ``x_numpy``, its
wall time over numpy's; every row keeps its samples, the median is reported with the spread
(``spread``: (max - min) / median of the samples). Data: uniform(0, 1) float32 (``--data
normal`` for standard normal ones). ``--quick``: 2^20 keys, 256x1024 rows, partition of 2^18,
2 repeats (runs on a CPU device: ``--device pocl``). The issue's PoCL target: ``--device pocl
--log2n 22 --partition-log2 22``.
"""

import numpy as np
import pyopencl.array as cl_array

import clradix

from . import common, timing

Q5 = [0.1, 0.25, 0.5, 0.75, 0.9]


def add_arguments(ap):
    common.add_common_options(ap, repeat=10)
    common.add_peer_options(ap)
    ap.add_argument("--log2n", type=int, help="keys of the median and quantile cases: 2^N "
                    "(28; --quick 20)")
    ap.add_argument("--partition-log2", type=int, help="keys of the partition case: 2^N (24; "
                    "--quick 18)")
    ap.add_argument("--rows", help="ROWSxCOLS of the rows case (4096x4096; --quick 256x1024)")
    ap.add_argument("--data", choices=("uniform", "normal"), default="uniform")
    ap.add_argument("--numpy-repeat", type=int, default=3,
                    help="timed runs of numpy's functions (3: seconds a call at 2^28)")
    ap.add_argument("--only", help="run only the cases whose name contains this text "
                    "(or one of these, comma-separated)")


def cases(args):
    """(name, shape, operation) of each case."""
    n = 1 << (args.log2n or (20 if args.quick else 28))
    part = 1 << (args.partition_log2 or (18 if args.quick else 24))
    rows = tuple(int(v) for v in (args.rows or ("256x1024" if args.quick else "4096x4096"))
                 .split("x"))
    return [("median", (n,), "median"), ("5 quantiles", (n,), "quantile"),
            ("median of rows", rows, "median rows"), ("partition", (part,), "partition")]


def make(rng, shape, kind):
    n = int(np.prod(shape))
    x = rng.random(n, dtype=np.float32) if kind == "uniform" else \
        rng.standard_normal(n, dtype=np.float32)
    return x.reshape(shape)


def numpy_call(op, x):
    if op == "median":
        return lambda: np.median(x)
    if op == "quantile":
        return lambda: np.quantile(x, Q5)
    if op == "median rows":
        return lambda: np.median(x, axis=-1)
    return lambda: np.partition(x, x.size // 2)


def clradix_call(op, a):
    """``call()`` returning (its last event, its result)."""
    def last(r):
        return r.events[-1], r
    if op == "median":
        return lambda: last(clradix.median(a))
    if op == "quantile":
        return lambda: last(clradix.quantile(a, Q5))
    if op == "median rows":
        return lambda: last(clradix.median(a, axis=-1))
    return lambda: last(clradix.partition(a, a.size // 2))


def correct(op, x, want, got):
    """clradix's result against numpy's: equal medians and quantiles; a partition whose middle
    key is the sorted one, none larger before it, none smaller after it."""
    if op != "partition":
        return np.array_equal(np.asarray(got), np.asarray(want))
    k = x.size // 2
    return bool(got[k] == want[k] and (got[:k] <= got[k]).all() and (got[k + 1:] >= got[k]).all())


def peer_calls(library, op, x):
    """(name, call, check(result) -> bool) of a CUDA peer's operation, or None where the
    library has none; the array is put on the device here."""
    if library == "torch":
        import torch
        t = torch.as_tensor(x, device="cuda")
        if op == "median":
            return "torch.median", lambda: torch.median(t), None
        if op == "quantile":
            qt = torch.tensor(Q5, device="cuda", dtype=torch.float32)
            return "torch.quantile", lambda: torch.quantile(t, qt), None
        if op == "median rows":
            # the lower of the two middle keys of an even row
            return "torch.median(dim=-1)", lambda: torch.median(t, dim=-1).values, "lower"
        return None
    import cupy
    c = cupy.asarray(x)
    if op == "median":
        return "cupy.median", lambda: cupy.median(c), None
    if op == "quantile":
        return "cupy.quantile", lambda: cupy.quantile(c, cupy.asarray(Q5)), None
    if op == "median rows":
        return "cupy.median(axis=-1)", lambda: cupy.median(c, axis=-1), None
    return "cupy.partition", lambda: cupy.partition(c, x.size // 2), None


def peer_correct(op, x, want, got, rule):
    """A peer's result: torch computes in float32 (its quantiles within 1e-6 relative of
    numpy's); its median of rows is the lower one."""
    got = np.asarray(got.cpu().numpy() if hasattr(got, "cpu") else got.get())
    if rule == "lower":
        want = np.sort(x, axis=-1)[..., (x.shape[-1] - 1) // 2]
    if op == "partition":
        return correct(op, x, want, got)
    return np.allclose(got, want, rtol=1e-6, atol=0)


def one_read_ms(queue, a, repeat):
    """Device time of one read of ``a``: a sum reduction (pyopencl's ReductionKernel)."""
    from pyopencl.reduction import ReductionKernel
    knl = ReductionKernel(queue.context, np.float32, neutral="0", reduce_expr="a+b",
                          map_expr="x[i]", arguments="const __global float *x")
    flat = a.reshape(-1)
    t = timing.time_opencl(queue, lambda: knl(flat, queue=queue, return_event=True)[::-1],
                           max(repeat // 2, 1))
    return t.median_device_ms


def spread(t):
    samples = t.device_ms or t.wall_ms
    mid = t.median_device_ms or t.median_wall_ms
    return (max(samples) - min(samples)) / mid if mid else 0.0


def main(args):
    if args.quick:
        args.repeat = 2
        args.numpy_repeat = min(args.numpy_repeat, 2)
    out = common.Run("selection", args)
    dev, _ = common.select_device(args.device)
    where = common.opencl_device_fields(dev)
    q = common.profiling_queue(dev)
    out.log(f"device {where['device_full']}, {out.meta['date']}")
    peers = common.cuda_peers(args, out, ("cupy", "torch"))
    rng = np.random.default_rng(7)
    for name, shape, op in cases(args):
        case = f"{name} {'x'.join(map(str, shape))}"
        if args.only and not any(t in case for t in args.only.split(",")):
            continue
        x = make(rng, shape, args.data)
        want = numpy_ms = a = None
        with out.guard(f"numpy {case}"):
            tn = timing.time_host(numpy_call(op, x), args.numpy_repeat)
            want, numpy_ms = tn.out, tn.median_wall_ms
            out.record(common.host_fields(), "numpy", case, x.dtype, x.size, tn,
                       note=f"spread {spread(tn):.2f}")
        if want is None:
            continue
        with out.guard(f"one read {case}"):
            a = cl_array.to_device(q, x)
            floor = one_read_ms(q, a, args.repeat)
            out.record(where, "one read (sum)", case, x.dtype, x.size,
                       timing.Timing(wall_ms=[floor], device_ms=[floor]),
                       note=f"{x.nbytes / floor / 1e6:.1f} GB/s")
        if a is not None:
            with out.guard(f"clradix {case}"):
                t = timing.time_opencl(q, clradix_call(op, a), args.repeat)
                got = t.out.get()
                t.out = None
                extra = dict(x_read=t.median_device_ms / floor, x_numpy=t.median_wall_ms
                             / numpy_ms, spread=spread(t), one_read_ms=floor)
                extra["note"] = " ".join(f"{k} {v:.2f}" for k, v in extra.items()
                                         if k != "one_read_ms")
                out.record(where, "clradix", case, x.dtype, x.size, t,
                           ok=correct(op, x, want, got), shape=list(shape), **extra)
            del a
        for peer in peers:
            made, err = out.attempt(lambda: peer_calls(peer.library, op, x))
            if made is None and err is None:
                continue
            if err is not None:
                out.record(peer.device_fields(), peer.library, case, x.dtype, x.size, error=err)
                continue
            impl, call, rule = made
            res, err = out.attempt(lambda: timing.time_cuda(peer.library, call, args.repeat))
            if err is not None and "too large" in err:
                out.log(f"peer skipped: {impl} {case}: {err}")
                continue
            ok = err is None and peer_correct(op, x, want, res.out, rule)
            if res is not None:
                res.out = None
            out.record(peer.device_fields(), impl, case, x.dtype, x.size, res, error=err, ok=ok,
                       shape=list(shape), note=f"spread {spread(res):.2f}" if res else "")
    return out.finish()
