"""clradix on CPU devices beside what a numpy user calls instead, per call, as a user pays it.

One command, reproducible: ``python -m benchmarks cpu [--json FILE]``. It prints first what the
numbers depend on: the CPU (model, family and model numbers, cores this process may use, cache
sizes), numpy's SIMD dispatch (the baseline and the dispatched targets this CPU runs:
``np.sort`` takes a different kernel on an AVX-512 machine than on an AVX2 one), each OpenCL
device with PoCL's compile target (the LLVM CPU name in its device version: ``znver3`` compiles
for AVX2) and PoCL's thread count, the load average, and the memory-bandwidth floor: a numpy
copy of 64 MiB on one thread and on every core (GB/s, read plus write).

Cases (the CPU issue's table): sort of uint32 keys at 2^20, 2^22 and 2^24, float32 at 2^22 and
2^24; argsort of uint32 at 2^22; top-k (k = 100, the largest, ranked) of float32 at 2^22; rows
1024 x 4096 float32 sorted along the last axis. Each on every device given (``--device``,
repeatable) beside numpy's default kind (``np.sort``, ``np.argsort``, ``np.sort(axis=-1)``,
``np.argpartition`` and a sort of the k); ``--numpy-stable`` adds the stable kind.

Times are wall ms per call: clradix's call and the wait for its event (keys already on the
device; in-place sorts restore their input before each call, outside the clock); numpy's call.
One warm-up each (which builds the kernels), then ``--repeat`` rounds, each timing one call of
every implementation of the case in turn (the order rotating by round), so that all of them
see the same machine; reported: median and min-max of the rounds. Every clradix result is
checked against numpy (bit for bit; top-k positions exactly, ties by position). The floor of a
case is the time to read its input and write its output once at the all-core copy bandwidth;
"x floor" is a time over it (an LSD radix sort of 32-bit keys in 3 passes moves its keys about
3 times, plus the counting reads).

A warning marks a case measured while the machine was busy (the 1-minute load average above
``--busy-load`` before or after it) or whose spread (max - min over the median) exceeds
``--max-spread``: such numbers are the run's, not the machine's. numpy's dispatch can be
narrowed to what an AVX2 machine runs with ``NPY_DISABLE_CPU_FEATURES="AVX512_ICL X86_V4"``
(printed as the dispatch in effect).

``--variants NAME:FIELD=VALUE,...;...`` adds clradix Sorters with policy overrides
(``r8:radix_bits=8``; sorts and argsorts).

``--topk-orders`` times the chunked top-k (the k largest, ranked, float32) instead on rows whose
order is adversarial to a selection (sorted, reversed, rising then falling, rising-then-falling
blocks, a sawtooth, all equal) beside random keys of the same size, for every size of
``--orders-sizes`` and k of ``--orders-k``: median ms per call, the spread (slowest minus
fastest run over the median) and each order's time over random keys'.
"""

import os
import platform
import statistics
import threading
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clradix

from . import common, impls, timing
from .latency import parse_variants

CASES = [("sort", "uint32", (1 << 20,)), ("sort", "uint32", (1 << 22,)),
         ("sort", "uint32", (1 << 24,)), ("sort", "float32", (1 << 22,)),
         ("sort", "float32", (1 << 24,)), ("argsort", "uint32", (1 << 22,)),
         ("topk", "float32", (1 << 22,)), ("rows", "float32", (1024, 4096))]
QUICK_CASES = [("sort", "uint32", (1 << 12,)), ("sort", "float32", (1 << 14,)),
               ("argsort", "uint32", (1 << 14,)), ("topk", "float32", (1 << 15,)),
               ("rows", "float32", (16, 256))]
TOPK_K = 100


def add_arguments(ap):
    common.add_common_options(ap, repeat=7)
    ap.add_argument("--numpy-stable", action="store_true",
                    help="numpy's stable kind too (slow: 0.3-2 s a call at 2^22-2^24)")
    ap.add_argument("--busy-load", type=float, default=0.5,
                    help="warn when the 1-minute load average exceeds this before or after a "
                         "case (0.5)")
    ap.add_argument("--max-spread", type=float, default=0.25,
                    help="warn when a case's (max - min) / median exceeds this (0.25)")
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


def _numpy_calls(op, x, stable):
    """(name, call) of numpy's default kind for the case, and with ``stable`` its stable kind."""
    if op == "topk":
        def topk():
            part = np.argpartition(x, x.size - TOPK_K)[x.size - TOPK_K:]
            return part[np.argsort(x[part], kind="stable")[::-1]]
        return [("argpartition + sort of k", topk)]
    if op == "rows":
        calls = [("np.sort(axis=-1)", lambda: np.sort(x, axis=-1)),
                 ("np.sort(axis=-1, stable)", lambda: np.sort(x, axis=-1, kind="stable"))]
    else:
        fn = np.sort if op == "sort" else np.argsort
        calls = [(f"np.{fn.__name__}", lambda: fn(x)),
                 (f"np.{fn.__name__}(stable)", lambda: fn(x, kind="stable"))]
    return calls if stable else calls[:1]


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


def _cpu_fields():
    """The host CPU: model, family / model numbers, cores this process may use, caches."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model", "stepping", "flags") \
                        and key not in info:
                    info[key] = val.strip()
    except OSError:
        pass
    flags = set(info.pop("flags", "").split())
    caches = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            with open(f"{base}/{entry}/level") as f:
                level = f.read().strip()
            with open(f"{base}/{entry}/type") as f:
                kind = f.read().strip()
            with open(f"{base}/{entry}/size") as f:
                size = f.read().strip()
        except OSError:
            continue
        if kind != "Instruction":
            caches[f"L{level}{'d' if kind == 'Data' else ''}"] = size
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return dict(cpu_model=info.get("model name") or platform.processor() or platform.machine(),
                cpu_family=info.get("cpu family"), cpu_model_number=info.get("model"),
                cpu_stepping=info.get("stepping"), cpu_count=os.cpu_count(),
                cores_usable=affinity, caches=caches,
                cpu_simd=[f for f in ("sse4_2", "avx2", "avx512f", "avx512bw") if f in flags])


def _numpy_simd():
    """numpy's baseline and the dispatched targets it runs here (NPY_DISABLE_CPU_FEATURES
    honoured)."""
    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:   # numpy 1.x
        from numpy.core import _multiarray_umath as mu
    feats = mu.__cpu_features__
    return dict(numpy=np.__version__, numpy_baseline=list(mu.__cpu_baseline__),
                numpy_dispatch=[f for f in mu.__cpu_dispatch__ if feats.get(f)],
                numpy_not_dispatched=[f for f in mu.__cpu_dispatch__ if not feats.get(f)],
                npy_disable=os.environ.get("NPY_DISABLE_CPU_FEATURES", ""))


def _opencl_fields(device):
    """An OpenCL device: its name, platform, driver, compute units and, for PoCL, the LLVM CPU
    its kernels are compiled for (the last field of the version's HSTR) and its thread count."""
    fields = dict(common.opencl_device_fields(device), compute_units=device.max_compute_units,
                  version=device.version)
    if "Portable Computing Language" in device.platform.name:
        hstr = device.version.split("HSTR:")[-1].split()[0] if "HSTR:" in device.version else ""
        fields["pocl_target"] = hstr.rsplit("-", 1)[-1] if hstr else "unknown"
        fields["pocl_threads"] = os.environ.get("POCL_MAX_PTHREAD_COUNT",
                                                f"default ({device.max_compute_units})")
    return fields


def copy_bandwidth(nbytes=64 << 20, threads=1, repeat=7):
    """GB/s (bytes read plus written) of the fastest of ``repeat`` numpy copies of ``nbytes``,
    split over ``threads`` threads (numpy releases the GIL in a large copy)."""
    a = np.ones(nbytes // 8, np.uint64)
    b = np.empty_like(a)
    parts = np.array_split(np.arange(a.size), threads)
    spans = [(p[0], p[-1] + 1) for p in parts if p.size]

    def one(lo, hi):
        np.copyto(b[lo:hi], a[lo:hi])
    best = float("inf")
    for _ in range(repeat):
        workers = [threading.Thread(target=one, args=span) for span in spans]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best = min(best, time.perf_counter() - t0)
    return 2 * a.nbytes / best / 1e9


def _case_bytes(op, x):
    """Bytes a call reads and writes at least: the input once, the output once (sorted keys,
    int64 indices, top-k's k values and positions)."""
    if op == "sort" or op == "rows":
        return 2 * x.nbytes
    if op == "argsort":
        return x.nbytes + 8 * x.size
    return x.nbytes + TOPK_K * (x.itemsize + 8)


def _stats(ms):
    med = statistics.median(ms)
    return med, min(ms), max(ms), (max(ms) - min(ms)) / med if med else 0.0


def _cell(ms):
    med, lo, hi, _ = _stats(ms)
    return f"{med:.2f} ({lo:.2f}-{hi:.2f})"


def print_machine(out, devices, bw):
    m = out.meta["machine"]
    caches = ", ".join(f"{k} {v}" for k, v in m["caches"].items())
    out.log(f"CPU: {m['cpu_model']} (family {m['cpu_family']}, model {m['cpu_model_number']}, "
            f"stepping {m['cpu_stepping']}; {' '.join(m['cpu_simd'])}), {m['cpu_count']} "
            f"logical CPUs, {m['cores_usable']} usable here; caches per core / shared: {caches}")
    disabled = f" (NPY_DISABLE_CPU_FEATURES={m['npy_disable']!r})" if m["npy_disable"] else ""
    out.log(f"numpy {m['numpy']}: baseline {' '.join(m['numpy_baseline'])}, dispatch "
            f"{' '.join(m['numpy_dispatch']) or 'none'}{disabled}; not dispatched here: "
            f"{' '.join(m['numpy_not_dispatched']) or 'none'}")
    for dev in m["opencl"]:
        extra = (f"; PoCL compiles for {dev['pocl_target']}, threads {dev['pocl_threads']}"
                 if "pocl_target" in dev else "")
        out.log(f"OpenCL: {dev['device_full']}, {dev['compute_units']} compute units{extra}")
    out.log(f"memory: numpy copy of 64 MiB {bw[1]:.1f} GB/s on 1 thread, {bw[0]:.1f} GB/s on "
            f"{m['cores_usable']} (read + write; the floor below uses the faster)")
    out.log(f"load average at the start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


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
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    bw_all = copy_bandwidth(threads=cores or 1)
    bw_one = copy_bandwidth(threads=1)
    out.meta["machine"] = dict(_cpu_fields(), **_numpy_simd(),
                               opencl=[_opencl_fields(d) for d in devices],
                               copy_gbps_one_thread=bw_one, copy_gbps_all_cores=bw_all,
                               load_at_start=list(os.getloadavg()))
    print_machine(out, devices, (bw_all, bw_one))
    bw = max(bw_all, bw_one)
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
    summary, warnings = [], []
    for op, dt, shape in cases:
        x = _keys(rng, dt, shape)
        n = int(np.prod(shape))
        want = _want(op, x)
        label = f"{op} {dt} {'x'.join(map(str, shape))}"
        load_before = os.getloadavg()[0]
        # (impl, where, prep, call, box, extra): every implementation of the case
        impls_ = []
        for dev in devices:
            q, sorters, ctx = ctxs[dev.int_ptr]
            where = common.opencl_device_fields(dev)
            for name, sorter in sorters:
                if op in ("topk", "rows") and name != "clradix":   # (default policies)
                    continue
                with out.guard(f"{name} {label} on {where['device']}"):
                    selector = clradix.Selector(ctx, sorter=sorter)
                    prep, call, box = _clradix_call(q, sorter, selector, op, x)
                    prep()
                    call()   # the warm-up (builds the kernels)
                    pol = "" if op == "topk" else str(sorter.plan(dev, np.dtype(dt), n))
                    impls_.append((f"{name} on {where['device']}", name, where,
                                   prep if op == "sort" else None, call, box, dict(policy=pol)))
        if not args.no_numpy:
            for (name, fn), col in zip(_numpy_calls(op, x, args.numpy_stable),
                                       ("numpy default", "numpy stable")):
                fn()
                impls_.append((col, name, common.host_fields(), None, fn, None, {}))
        samples = {key: [] for key, *_ in impls_}
        for r in range(args.repeat):
            for j in range(len(impls_)):
                key, _, _, prep, call, _, _ = impls_[(j + r) % len(impls_)]
                if prep:
                    prep()
                t0 = time.perf_counter()
                call()
                samples[key].append((time.perf_counter() - t0) * 1e3)
        load_after = os.getloadavg()[0]
        floor = _case_bytes(op, x) / bw / 1e6
        row = dict(label=label, floor=floor, cells={}, load=(load_before, load_after))
        numpy_names = [name for key, name, *_ in impls_ if key.startswith("numpy")]
        if numpy_names:
            row["label"] += f" ({', '.join(numpy_names)})"
        for key, name, where, _, _, box, extra in impls_:
            t = timing.Timing(wall_ms=samples[key])
            ok = _check(op, box["out"], want) if box is not None else True
            out.record(where, name, op, np.dtype(dt), n, t, ok=ok, shape=list(shape),
                       floor_ms=floor, load_before=load_before, load_after=load_after, **extra)
            row["cells"][key] = samples[key]
            spread = _stats(samples[key])[3]
            if spread > args.max_spread:
                warnings.append(f"{label}, {key}: spread {100 * spread:.0f}% of the median")
        if max(load_before, load_after) > args.busy_load:
            warnings.append(f"{label}: load average {load_before:.2f} before, {load_after:.2f} "
                            f"after (busy above {args.busy_load})")
        summary.append(row)
    _summary(out, summary, warnings, args)
    return out.finish()


def _summary(out, summary, warnings, args):
    """The table: every implementation's median (min-max) per case, clradix over numpy's
    default, the floor and clradix over it."""
    cols = list(dict.fromkeys(k for row in summary for k in row["cells"]))
    mine = [c for c in cols if c.startswith("clradix")]
    out.log(f"\nms per call, median (min-max) of {args.repeat} interleaved rounds; floor: input "
            f"read and output written once at the copy bandwidth")
    head = ["case"] + cols + [f"{c.split(' on ')[0]} / numpy" for c in mine] + \
        ["floor ms"] + [f"{c.split(' on ')[0]} x floor" for c in mine] + ["load before/after"]
    out.log("| " + " | ".join(head) + " |")
    out.log("|" + " --- |" * len(head))
    for row in summary:
        cells = row["cells"]
        ref = statistics.median(cells["numpy default"]) if "numpy default" in cells else None
        line = [row["label"]] + [_cell(cells[c]) if c in cells else "" for c in cols]
        line += [f"{statistics.median(cells[c]) / ref:.2f}x" if c in cells and ref else ""
                 for c in mine]
        line += [f"{row['floor']:.3g}"]
        line += [f"{statistics.median(cells[c]) / row['floor']:.1f}x" if c in cells else ""
                 for c in mine]
        line += [f"{row['load'][0]:.2f} / {row['load'][1]:.2f}"]
        out.log("| " + " | ".join(line) + " |")
    if warnings:
        out.log("\nWARNING: measured on a busy machine or with a large spread (these numbers "
                "are this run's, not the machine's):")
        for w in warnings:
            out.log(f"  {w}")
