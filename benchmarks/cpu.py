"""clradix on CPU devices beside what a numpy user calls instead, per call, as a user pays it.

Cases (the CPU issue's table): sort of uint32 keys at 2^16, 2^20, 2^22 and 2^24, float32 at
2^20, 2^22 and 2^24; argsort of uint32 at 2^22; top-k (k = 100, the largest, ranked) of float32
at 2^22; rows 1024 x 4096 float32 sorted along the last axis. Each is timed on every device
given (``--device``, repeatable: PoCL's platforms, Intel's CPU runtime) and beside numpy on the
host: the default kind (``np.sort``, ``np.argsort``, ``np.sort(axis=-1)``), the stable kind, and
for top-k ``np.argpartition`` with a sort of the k.

Times are wall ms per call: clradix's call and the wait for its event (keys already on the
device; in-place sorts restore their input before each call, outside the clock); numpy's call.
One warm-up (which builds the kernels), then the median of ``--repeat`` runs, clradix and numpy
interleaved per case so that both see the same machine. Every clradix result is checked against
numpy (bit for bit; top-k positions exactly, ties by position). ``--variants
NAME:FIELD=VALUE,...;...`` adds clradix Sorters with policy overrides
(``rts:algorithm=reduce_then_scan``; sorts and argsorts).

``--topk-orders`` times the chunked top-k (the k largest, ranked, float32) instead on rows whose
order is adversarial to a selection (sorted, reversed, rising then falling, rising-then-falling
blocks, a sawtooth, all equal) beside random keys of the same size, for every size of
``--orders-sizes`` and k of ``--orders-k``: median ms per call, the spread (slowest minus
fastest run over the median) and each order's time over random keys'.
"""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clradix

from . import common, impls, timing
from .latency import parse_variants

CASES = [("sort", "uint32", (1 << 16,)), ("sort", "uint32", (1 << 20,)),
         ("sort", "uint32", (1 << 22,)), ("sort", "uint32", (1 << 24,)),
         ("sort", "float32", (1 << 20,)), ("sort", "float32", (1 << 22,)),
         ("sort", "float32", (1 << 24,)), ("argsort", "uint32", (1 << 22,)),
         ("topk", "float32", (1 << 22,)), ("rows", "float32", (1024, 4096))]
QUICK_CASES = [("sort", "uint32", (1 << 12,)), ("sort", "float32", (1 << 14,)),
               ("argsort", "uint32", (1 << 14,)), ("topk", "float32", (1 << 15,)),
               ("rows", "float32", (16, 256))]
TOPK_K = 100


def add_arguments(ap):
    common.add_common_options(ap, repeat=5)
    ap.add_argument("--cases", help="comma-separated OP:DTYPE:SHAPE (SHAPE: N or ROWSxLEN), "
                                    "e.g. sort:uint32:1048576,rows:float32:1024x4096")
    ap.add_argument("--variants", help="clradix variants, NAME:FIELD=VALUE,...;... (SortPolicy "
                                       "fields)")
    ap.add_argument("--no-numpy", action="store_true", help="clradix only")
    ap.add_argument("--topk-orders", action="store_true",
                    help="time the chunked top-k on adversarial orders beside random keys "
                         "instead of the cases")
    ap.add_argument("--orders-sizes", default="16,18,20,22",
                    help="log2 of the row lengths of --topk-orders (16,18,20,22)")
    ap.add_argument("--orders-k", default="10,1000,32768", help="k of --topk-orders")
    ap.add_argument("--orders", default=",".join(TOPK_ORDERS),
                    help="the orders of --topk-orders, random first (all)")


def _parse_cases(text):
    out = []
    for item in text.split(","):
        op, dt, shape = item.split(":")
        out.append((op, dt, tuple(int(v) for v in shape.split("x"))))
    return out


def _keys(rng, dtype, shape):
    return common.random_keys(rng, dtype, int(np.prod(shape))).reshape(shape)


def _want(op, x):
    """numpy's answer in clradix's order (NaN last, ties by position)."""
    if op == "topk":
        pos = impls.topk_reference(x, TOPK_K)[0]
        return x[pos], pos
    if op == "rows":
        return np.sort(x, axis=-1, kind="stable")
    order = impls.stable_order(x)
    return x[order] if op == "sort" else order


def _numpy_calls(op, x):
    if op == "topk":
        def topk():
            part = np.argpartition(x, x.size - TOPK_K)[x.size - TOPK_K:]
            return part[np.argsort(x[part], kind="stable")[::-1]]
        return [("argpartition + sort of k", topk)]
    if op == "rows":
        return [("np.sort(axis=-1)", lambda: np.sort(x, axis=-1)),
                ("np.sort(axis=-1, stable)", lambda: np.sort(x, axis=-1, kind="stable"))]
    fn = np.sort if op == "sort" else np.argsort
    return [(f"np.{fn.__name__}", lambda: fn(x)),
            (f"np.{fn.__name__}(stable)", lambda: fn(x, kind="stable"))]


def _clradix_call(q, sorter, selector, op, x):
    """(prep, call, result) for one clradix operation on the keys ``x`` (uploaded once)."""
    src = cl_array.to_device(q, x)
    work = cl_array.empty_like(src)
    box = {}

    def prep():
        cl.enqueue_copy(q, work.data, src.data).wait()

    def call():
        if op == "topk":
            v, i, evt = selector.topk(q, src, TOPK_K)
            evt.wait()
            box["out"] = (v, i)
        elif op == "argsort":
            idx, evt = sorter.argsort(q, src)
            evt.wait()
            box["out"] = idx
        elif op == "rows":   # what a user calls: a sorted copy of the 2-D array
            box["out"] = clradix.sort(src, queue=q)
            q.finish()
        else:
            sorter.sort(q, work).wait()
            box["out"] = work
    return prep, call, box


def _check(op, got, want):
    if op == "topk":
        v, i = got
        return (np.array_equal(i.get().astype(np.int64), np.asarray(want[1]).ravel())
                and np.array_equal(v.get().view(np.uint8), want[0].ravel().view(np.uint8)))
    a = got.get().reshape(np.shape(want))
    if op == "argsort":
        return np.array_equal(a.astype(np.int64), want)
    return np.array_equal(a.view(np.uint8), want.view(np.uint8))


# --topk-orders: rows of n float32 keys (integers, exact) in an order adversarial to a selection
TOPK_ORDERS = {
    "random": lambda rng, n: rng.random(n, dtype=np.float32),
    "ascending": lambda rng, n: np.arange(n, dtype=np.float32),
    "descending": lambda rng, n: np.arange(n, dtype=np.float32)[::-1].copy(),
    "organ_pipe": lambda rng, n: np.concatenate([np.arange(n // 2), np.arange(n - n // 2)[::-1]]
                                                ).astype(np.float32),
    "pipe_blocks": lambda rng, n: np.resize(TOPK_ORDERS["organ_pipe"](rng, min(n, 1 << 18)), n),
    "sawtooth": lambda rng, n: (np.arange(n) % max(n // 16, 1)).astype(np.float32),
    "all_equal": lambda rng, n: np.full(n, 7, np.float32),
}


def topk_orders(args, out):
    """The chunked top-k on every order of TOPK_ORDERS at each size and k: a table of median ms,
    spread and time over random keys'."""
    devices = common.select_devices(args.device) or []
    sizes = [1 << int(v) for v in args.orders_sizes.split(",")]
    ks = [int(v) for v in args.orders_k.split(",")]
    orders = {o: TOPK_ORDERS[o] for o in ["random"] + args.orders.split(",") if o}
    rng = np.random.default_rng(5)
    for dev in devices:
        where = common.opencl_device_fields(dev)
        ctx = cl.Context([dev])
        q = cl.CommandQueue(ctx)
        sel = clradix.Selector(ctx)
        out.log(f"\ntop-k (largest, ranked) of float32 rows on {where['device']}: median ms per "
                f"call (spread), time / random keys'")
        out.log("| n | k | " + " | ".join(orders) + " | worst / random |")
        out.log("|" + " --- |" * (3 + len(orders)))
        for n in sizes:
            for k in (k for k in ks if k <= n):
                cells, ms = [], {}
                for order, make in orders.items():
                    x = make(rng, n)
                    with out.guard(f"topk {order} n={n} k={k} on {where['device']}"):
                        src = cl_array.to_device(q, x)
                        box = {}

                        def call():
                            box["out"] = sel.topk(q, src, k)
                            box["out"][2].wait()
                        t = timing.time_host(call, args.repeat)
                        t.out = None
                        pos = impls.topk_reference(x, k)[0]
                        ok = _check("topk", box["out"][:2], (x[pos], pos))
                        out.record(where, "clradix", f"topk {order} k={k}", np.dtype(np.float32),
                                   n, t, ok=ok)
                        ms[order] = t.median_wall_ms
                        spread = (max(t.wall_ms) - min(t.wall_ms)) / t.median_wall_ms
                        ratio = "" if order == "random" else \
                            f", {t.median_wall_ms / ms['random']:.2f}x"
                        cells.append(f"{t.median_wall_ms:.2f} ({100 * spread:.0f}%{ratio})")
                worst = max([v for o, v in ms.items() if o != "random"] or [ms["random"]]
                            ) / ms["random"]
                out.log(f"| 2^{n.bit_length() - 1} | {k} | " + " | ".join(cells)
                        + f" | {worst:.2f}x |")


def main(args):
    out = common.Run("cpu", args)
    if args.topk_orders:
        if args.quick:
            args.repeat, args.orders_sizes, args.orders_k = min(args.repeat, 2), "12,14", "10,1000"
        topk_orders(args, out)
        return out.finish()
    cases = _parse_cases(args.cases) if args.cases else (QUICK_CASES if args.quick else CASES)
    if args.quick:
        args.repeat = min(args.repeat, 2)
    devices = common.select_devices(args.device)
    if not devices:
        raise SystemExit("no usable OpenCL device matches --device")
    variants = [("clradix", {})]
    if args.variants:
        variants += [(f"clradix[{name}]", fields) for name, fields in parse_variants(args.variants)]
    rng = np.random.default_rng(3)
    ctxs = {}
    for dev in devices:
        ctx = cl.Context([dev])
        q = cl.CommandQueue(ctx)
        ctxs[dev.int_ptr] = (q, [(name, clradix.Sorter(ctx, **fields))
                                  for name, fields in variants], ctx)
    summary = []
    for op, dt, shape in cases:
        x = _keys(rng, dt, shape)
        n = int(np.prod(shape))
        want = _want(op, x)
        label = f"{op} {dt} {'x'.join(map(str, shape))}"
        best = {}
        for dev in devices:
            q, sorters, ctx = ctxs[dev.int_ptr]
            where = common.opencl_device_fields(dev)
            for name, sorter in sorters:
                if op in ("topk", "rows") and name != "clradix":   # (default policies)
                    continue
                with out.guard(f"{name} {label} on {where['device']}"):
                    selector = clradix.Selector(ctx, sorter=sorter)
                    prep, call, box = _clradix_call(q, sorter, selector, op, x)
                    t = timing.time_host(call, args.repeat, prep if op == "sort" else None)
                    t.out = None
                    ms = t.median_wall_ms
                    ok = _check(op, box["out"], want)
                    pol = "" if op == "topk" else str(sorter.plan(dev, np.dtype(dt), n))
                    out.record(where, name, op, np.dtype(dt), n, t, ok=ok, shape=list(shape),
                               policy=pol)
                    best.setdefault(name + " on " + where["device"], ms)
        numpy_ms = {}
        if not args.no_numpy:
            for (name, fn), col in zip(_numpy_calls(op, x), ("numpy default", "numpy stable")):
                t = timing.time_host(fn, args.repeat)
                t.out = None
                out.record(common.host_fields(), name, op, np.dtype(dt), n, t,
                           shape=list(shape))
                numpy_ms[col] = (name, t.median_wall_ms)
        summary.append((label, best, numpy_ms))
    out.log("")
    cols = list(dict.fromkeys(c for _, best, _ in summary for c in best))
    out.log("| case | " + " | ".join(cols) + " | numpy default | numpy stable | "
            + " | ".join(f"{c.split(' on ')[0]} / default" for c in cols) + " |")
    out.log("|" + " --- |" * (3 + 2 * len(cols)))
    for label, best, numpy_ms in summary:
        dflt = numpy_ms.get("numpy default")
        cells = [f"{best[c]:.2f}" if c in best else "" for c in cols]
        cells += [f"{numpy_ms[c][1]:.2f} ({numpy_ms[c][0]})" if c in numpy_ms else ""
                  for c in ("numpy default", "numpy stable")]
        cells += [f"{best[c] / dflt[1]:.2f}x" if c in best and dflt else "" for c in cols]
        out.log(f"| {label} | " + " | ".join(cells) + " |")
    return out.finish()
