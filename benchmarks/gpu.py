"""clradix's sorts on one device (by default the first GPU) beside CUB (through CuPy) and torch.

Steps: the planner's uint32 sort at 2^log2n with the peers and a per-kernel breakdown (always);
``--check`` every algorithm and ranking back-end the device has against numpy (sizes 1 to
3,000,001, six dtypes, both directions, key-value and argsort); ``--types`` float32, uint64,
u32+u32 pairs, argsort and reduce-then-scan at 2^log2n; ``--variants`` policies (onesweep's wg x
items per thread, or another algorithm such as reduce-then-scan) at ``--variant-sizes``, on
``--variant-dists`` keys, with ``--variant-peers`` CuPy and torch on the same keys; ``--sweep``
2^10 to 2^log2n; ``--only T`` just dtype T; ``--ptxinfo`` registers
and spills of the onesweep pass (NVIDIA only). ``--quick``: every step but --ptxinfo, 2^16 keys,
a smaller check suite, 2 repeats.

Every timed output is compared with the stable order of the keys (computed by CuPy when it is
there, else numpy); torch sorts unsigned keys only as their signed view (rows say so by their
dtype). CuPy and torch are optional: their absence is reported (a failure with
``--require-peers``).
"""

import itertools

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools

import clradix
from clradix.core.device import DeviceProfile
from clradix.core.keys import parse_dtype
from clradix.policies.fit import ranking_backends
from clradix.policies.sort import ALGORITHMS

from . import common, impls, timing

H200_COPY_TBPS = 4.28  # measured device copy bandwidth of the H200 (bytes read + written)
COPY_BYTES = 1 << 31   # the buffer the run's own copy is timed on

CHECK_DTYPES = (np.uint32, np.float32, np.uint64, np.int16, np.float64, np.uint8)
# --variant-types: (key dtype, what the sort takes besides keys, the peers' operations)
KINDS = {"u32": (np.uint32, {}, ("sort",)), "f32": (np.float32, {}, ("sort",)),
         "u64": (np.uint64, {}, ("sort",)), "i64": (np.int64, {}, ("sort",)),
         "f64": (np.float64, {}, ("sort",)),
         "pairs": (np.uint32, dict(values=True), ("argsort", "sort_kv")),
         "argsort": (np.uint32, dict(argsort=True), ("argsort",)),
         "u64pairs": (np.uint64, dict(values=True), ("sort_kv",)),
         "argsort64": (np.uint64, dict(argsort=True), ("argsort",))}
QUICK_CHECK_DTYPES = (np.uint32, np.float32, np.uint64, np.int16)


def add_arguments(ap):
    common.add_common_options(ap, repeat=10)
    ap.add_argument("--check", action="store_true", help="the check suite")
    ap.add_argument("--types", action="store_true",
                    help="f32, u64, u32+u32, argsort and reduce-then-scan at 2^log2n")
    ap.add_argument("--variant-types", default="u32",
                    help="what each --variants policy sorts, comma list of " + ", ".join(KINDS)
                         + " (pairs: u32 + u32 values; u64pairs: u64 + u32 values; argsort, "
                         "argsort64: of u32, u64 keys); every variant sorts the same keys "
                         "(default: u32)")
    ap.add_argument("--variants", default="",
                    help="policies, comma list: [ALGORITHM:][WGxIPT][:field=value...], the "
                         "algorithm onesweep when not named (256x16, 512x8:ring_slots=2048; "
                         "256xauto: the planner's items per thread; reduce_then_scan, "
                         "reduce_then_scan:256x8; planner: the planner's own choice)")
    ap.add_argument("--variant-sizes", default="",
                    help="log2 sizes of the --variants cases, comma list (default: --log2n)")
    ap.add_argument("--variant-dists", default="uniform",
                    help="key distributions of the --variants cases, comma list of "
                         + ", ".join(common.SKEWED_DISTS) + " (default: uniform)")
    ap.add_argument("--variant-peers", action="store_true",
                    help="CuPy and torch on the keys of every --variants type, size and "
                         "distribution (pairs and argsort: their argsort; u64pairs: argsort and "
                         "a gather)")
    ap.add_argument("--variant-breakdown", action="store_true",
                    help="per-kernel device times of each --variants policy (random keys, the "
                         "first size and distribution)")
    ap.add_argument("--sweep", action="store_true", help="u32 from 2^10 to 2^log2n")
    ap.add_argument("--pool", action="store_true",
                    help="--sweep also without the default memory pool (ImmediateAllocator)")
    ap.add_argument("--only", help="time just this dtype (planner and peers) at 2^log2n")
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--sizes", default="",
                    help="more log2 sizes (comma list) for u32 and f32 with the peers")
    ap.add_argument("--breakdown-sizes", default="", help="log2 sizes for per-kernel timelines")
    ap.add_argument("--ptxinfo", action="store_true",
                    help="registers / local memory of the onesweep pass (NVIDIA only)")
    ap.add_argument("--seed", type=int, default=2026)
    common.add_peer_options(ap)


def check_configs(prof, quick):
    """name -> (Sorter keywords, sizes) of the check suite on this device."""
    big = [] if quick else [3_000_001]
    sizes = [1, 2, 1000, 4097] + ([] if quick else [100_003])
    best = ranking_backends(prof)[0]
    configs = {"planner": {}}
    for r in ranking_backends(prof):
        configs[f"onesweep-{r}"] = dict(algorithm="onesweep", ranking=r)
    configs.update({
        f"onesweep-{best}-small-ring": dict(algorithm="onesweep", ranking=best, ring_slots=48,
                                            lookback=16, wg_size=128, items_per_thread=4),
        "onesweep-forced-fallback": dict(algorithm="onesweep", force_fallback=True, wg_size=128,
                                         items_per_thread=4),
        "onesweep-4bit": dict(algorithm="onesweep", radix_bits=4),
        "onesweep-2bit": dict(algorithm="onesweep", radix_bits=2),
        "rts": dict(algorithm="reduce_then_scan"),
    })
    out = {name: (kw, sizes + ([] if "fallback" in name else big)) for name, kw in configs.items()}
    out["single_wg"] = (dict(algorithm="single_wg"), [1, 2, 255, 1000] + ([] if quick else
                                                                         [2047, 2048]))
    return out


def check_suite(ctx, queue, prof, rng, quick, out):
    """Every configuration of check_configs against numpy; each wrong result and each
    configuration that raised is a failure (the other configurations still run)."""
    for name, (over, sizes) in check_configs(prof, quick).items():
        at = ["setup"]
        with out.guard(lambda: f"check {name} (at {at[-1]})"):
            sorter = clradix.Sorter(ctx, **over)
            for dtype in QUICK_CHECK_DTYPES if quick else CHECK_DTYPES:
                for n in sizes:
                    keys = common.random_keys(rng, dtype, n)
                    if np.dtype(dtype).kind == "f" and n > 10:
                        keys[::97] = np.nan
                        keys[5::101] = -0.0
                    for desc in (False, True):
                        at.append(f"{np.dtype(dtype)} n={n} descending={desc}")
                        d = cl_array.to_device(queue, keys)
                        v = cl_array.to_device(queue, np.arange(n, dtype=np.uint32))
                        sorter.sort(queue, d, values=v, descending=desc).wait()
                        order = impls.stable_order(keys, descending=desc)
                        idx, evt = sorter.argsort(queue, cl_array.to_device(queue, keys),
                                                  descending=desc)
                        evt.wait()
                        for what, good in (
                                ("keys", np.array_equal(d.get().view(np.uint8),
                                                        keys[order].view(np.uint8))),
                                ("values", np.array_equal(v.get(), order)),
                                ("argsort", np.array_equal(idx.get(), order))):
                            if not good:
                                out.fail(f"check {name} {at[-1]}", f"WRONG {what}")
            out.log(f"check {name}: done")


class GpuRun:
    """The steps of one ``gpu`` run on one OpenCL device."""

    def __init__(self, args, out):
        self.args, self.out = args, out
        self.dev, _ = common.select_device(args.device)
        self.prof = DeviceProfile.from_device(self.dev)
        self.where = common.opencl_device_fields(self.dev)
        self.queue = common.profiling_queue(self.dev)
        self.ctx = self.queue.context
        self.rng = np.random.default_rng(args.seed)
        self.n = 1 << args.log2n
        out.log(f"device {self.prof.describe()}, {out.meta['date']}")
        self.peers = common.cuda_peers(args, out)
        self.cupy = any(p.library == "cupy" for p in self.peers)
        self.copy_tbps = None

    def copy_bandwidth(self):
        """The device's copy bandwidth, timed in this run (bytes read + written per second of
        a buffer-to-buffer copy): the floor every "% of copy" figure is measured against."""
        nbytes = min(COPY_BYTES, self.dev.max_mem_alloc_size // 2)
        a = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, nbytes)
        b = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, nbytes)
        cl.enqueue_fill_buffer(self.queue, a, np.uint32(1), 0, nbytes)
        t = timing.time_opencl(self.queue, lambda: (cl.enqueue_copy(self.queue, b, a), ()),
                               max(self.args.repeat, 5), None)
        self.copy_tbps = 2 * nbytes / (t.median_device_ms * 1e-3) / 1e12
        self.out.record(self.where, "copy", "copy", np.uint8, nbytes, t, ok=True,
                        tbps=self.copy_tbps)
        self.out.log(f"copy bandwidth {self.copy_tbps:.2f} TB/s ({nbytes} bytes, read + write)")

    def variant_keys(self, dtype, nn, dist):
        """(keys, their stable order or None) of a variant case: made once per dtype, size and
        distribution, so that every variant and peer sorts the same keys."""
        memo = self.__dict__.setdefault("_same", {})
        key = (np.dtype(dtype), nn, dist)
        if key not in memo:
            memo[key] = [common.skewed_keys(self.rng, dtype, nn, dist), None]
        return memo[key]

    def bench(self, label, dtype, sorter_kwargs, values=False, argsort=False, nn=None,
              same_keys=False, dist="uniform"):
        """clradix: one case, timed and checked (``same_keys``: the keys and their order of the
        first such case of this dtype, size and distribution, so that variants sort the same
        data)."""
        q, nn = self.queue, nn or self.n
        entry = None
        if same_keys:
            entry = self.variant_keys(dtype, nn, dist)
            keys, order = entry
        else:
            keys, order = common.skewed_keys(self.rng, dtype, nn, dist), None
        src = cl_array.to_device(q, keys)
        work = cl_array.empty_like(src)
        vals0 = cl_array.to_device(q, np.arange(nn, dtype=np.uint32))
        vals = cl_array.empty_like(vals0) if values else None
        sorter = clradix.Sorter(self.ctx, **sorter_kwargs)

        def prep():
            cl.enqueue_copy(q, work.data, src.data)
            if vals is not None:
                cl.enqueue_copy(q, vals.data, vals0.data)

        def call():
            if argsort:
                idx, evt = sorter.argsort(q, src)
                return evt, (idx,)
            return sorter.sort(q, work, values=vals), (work,) if vals is None else (work, vals)
        t = timing.time_opencl(q, call, self.args.repeat, None if argsort else prep)
        if order is None:
            order = impls.stable_order(keys, cupy=self.cupy)
            if entry is not None:
                entry[1] = order
        want = (order,) if argsort else (keys[order],) + ((order,) if values else ())
        ok = impls.same(tuple(a.get() for a in t.out), want)
        policy = sorter.plan(self.dev, dtype, nn)
        kb = np.dtype(dtype).itemsize
        vb = 4 if (values or argsort) else 0
        passes = -(-kb * 8 // policy.radix_bits)
        moved = nn * (kb + passes * 2 * (kb + vb))
        floor = self.copy_tbps or H200_COPY_TBPS
        self.out.record(self.where, "clradix", label, dtype, nn, t, ok=ok, policy=str(policy),
                        note=f"{policy.algorithm}/{policy.radix_bits}b/{policy.wg_size}x"
                             f"{policy.items_per_thread}/{policy.ranking}",
                        bytes_moved=moved,
                        pct_of_copy_bw=100 * moved / (t.median_device_ms * 1e-3) / (floor * 1e12),
                        copy_bw_from="this run" if self.copy_tbps else "H200 4.28 TB/s")

    def bench_peers(self, dtype, nn=None, op="sort", keys=None, label=None):
        """CuPy and torch: one case each (torch: unsigned keys as their signed view); ``keys``:
        these keys (default: random ones)."""
        if keys is None:
            keys = common.random_keys(self.rng, dtype, nn or self.n)
        for im in self.peers:
            k = keys
            if not im.supports(op, k.dtype) and k.dtype.kind == "u":
                k = keys.view(f"i{keys.dtype.itemsize}")
            want = impls.reference(op, k, cupy=self.cupy)
            res, err = self.out.attempt(lambda: im.run(op, k, self.args.repeat, want))
            t, ok = res or (None, False)
            self.out.record(im.device_fields(), im.name, label or op, k.dtype, k.size, t, ok=ok,
                            error=err)

    def peer_breakdown(self, dtype, nn=None, values=False):
        """Per-kernel device times of one cupy.sort (CUB; with ``values`` cupy.argsort) and one
        torch.sort, read by torch's profiler (CUPTI sees every kernel of the process, CuPy's
        too). Logged like ``breakdown``; a missing peer is skipped."""
        try:
            import torch
            from torch.profiler import ProfilerActivity, profile
        except ImportError:
            self.out.log("  peer breakdown: torch is not importable")
            return
        keys = common.random_keys(self.rng, dtype, nn or self.n)
        runs = []
        try:
            import cupy
        except ImportError:
            cupy = None
        if cupy is not None:
            ck = cupy.asarray(keys)
            runs.append(("cupy.argsort" if values else "cupy.sort",
                         (lambda: cupy.argsort(ck)) if values else (lambda: cupy.sort(ck)),
                         cupy.cuda.Device().synchronize))
        tk = torch.from_numpy(keys.view(f"i{keys.dtype.itemsize}") if keys.dtype.kind == "u"
                              else keys).cuda()
        runs.append(("torch.sort", lambda: torch.sort(tk, stable=True), torch.cuda.synchronize))
        for name, fn, sync in runs:
            fn()
            sync()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                sync()
            kernels = sorted((e for e in prof.events() if e.device_type.name == "CUDA"),
                             key=lambda e: e.time_range.start)
            self.out.log(f"  breakdown {name} {np.dtype(dtype)} n={keys.size}:")
            for e in kernels:
                self.out.log(f"    {e.name[:60]:60s} {e.time_range.elapsed_us() * 1e-3:8.3f} ms")

    def breakdown(self, dtype, kwargs, nn=None, values=False):
        """Per-kernel device times of one sort (the kernels' profiling events)."""
        keys = common.random_keys(self.rng, dtype, nn or self.n)
        d = cl_array.to_device(self.queue, keys)
        v = cl_array.to_device(self.queue, np.arange(keys.size, dtype=np.uint32)) if values \
            else None
        sorter = clradix.Sorter(self.ctx, **kwargs)
        sorter.sort(self.queue, d, values=v).wait()
        d.set(keys)
        for algo in sorter.planner.drivers.values():
            algo.trace = []
        self.out.log(f"  breakdown {np.dtype(dtype)}{' + u32 values' if values else ''} "
                     f"n={keys.size}:")
        sorter.sort(self.queue, d, values=v).wait()
        for algo in sorter.planner.drivers.values():
            t0 = algo.trace[0][1].profile.queued if algo.trace else 0
            prev_end = None
            for name, evt in algo.trace:
                ms = (evt.profile.end - evt.profile.start) * 1e-6
                gap = (evt.profile.start - prev_end) * 1e-3 if prev_end else 0.0
                self.out.log(f"    {name:16s} {ms:8.3f} ms  (starts "
                             f"{(evt.profile.start - t0) * 1e-3:8.1f} us after the first was "
                             f"queued, {gap:6.1f} us after the previous kernel ended)")
                prev_end = evt.profile.end
            algo.trace = None

    def ptxinfo(self, label, kwargs, dtype=np.uint32, values=0):
        """Registers, spills and stack of os_pass for this policy (ptxas's report): the program
        the Sorter builds for 2^log2n uint32 keys, rebuilt from the same source and options."""
        from clradix.core.keys import key_codec
        from clradix.core.render import render
        sorter = clradix.Sorter(self.ctx, **kwargs)
        algo = sorter.planner.sort_driver(self.dev, key_codec(dtype), values, self.n)
        prg = cl.Program(self.ctx, render(algo.template, **algo.render_params)).build(
            options=algo.build_opts + ["-cl-nv-verbose"])
        text = prg.get_build_info(self.dev, cl.program_build_info.LOG)
        lines = [ln.strip() for ln in text.splitlines()]
        at = [i for i, ln in enumerate(lines) if "os_pass" in ln]
        info = " | ".join(ln for i in at for ln in lines[i + 1:i + 3]
                          if "stack" in ln or "Used" in ln)
        self.out.log(f"ptxas {label} {np.dtype(dtype)}{' + values' if values else ''}: {info}")


def _variant(spec):
    """"256x16", "256x16:ring_slots=65536:radix_bits=4", "reduce_then_scan:256x8"
    or "planner" -> Sorter keywords (the algorithm onesweep unless named; "256xauto": the
    planner's items per thread, the most that fit local memory for the key and value)."""
    parts = spec.split(":")
    kw = {}
    if parts[0] == "planner":
        parts = parts[1:]
    elif parts[0] in ALGORITHMS:
        kw["algorithm"] = parts.pop(0)
    else:
        kw["algorithm"] = "onesweep"
    if parts and "x" in parts[0] and "=" not in parts[0]:
        wg, ipt = parts.pop(0).split("x")
        kw["wg_size"] = int(wg)
        if ipt != "auto":
            kw["items_per_thread"] = int(ipt)
    for extra in parts:
        key, val = extra.split("=")
        kw[key] = (int(val) if val.isdigit() else
                   {"true": True, "false": False}.get(val.lower(), val))
    return kw


def _list(text, what, allowed=None):
    items = [t.strip() for t in text.split(",") if t.strip()]
    unknown = set(items) - set(allowed or items)
    if unknown:
        raise SystemExit(f"{what}: unknown {', '.join(sorted(unknown))} (expected "
                         f"{', '.join(allowed)})")
    return items


def variant_steps(g, args):
    """(case, function) of every --variants case: for each type, size and distribution, the
    peers (with --variant-peers) and then every variant, all on the same keys."""
    vtypes = _list(args.variant_types, "--variant-types", KINDS)
    dists = _list(args.variant_dists, "--variant-dists", common.SKEWED_DISTS)
    sizes = [int(x) for x in _list(args.variant_sizes, "--variant-sizes")] or [args.log2n]
    variants = _list(args.variants, "--variants")
    out = []
    if not variants:
        return out
    for lg, vt, dist in itertools.product(sizes, vtypes, dists):
        dt, extra, peer_ops = KINDS[vt]
        nn = 1 << lg
        where = f"{vt} 2^{lg}" + ("" if dist == "uniform" else f" {dist}")
        if args.variant_peers:
            for op in peer_ops:
                out.append((f"peers {op} {where}",
                            lambda dt=dt, nn=nn, dist=dist, op=op, where=where: g.bench_peers(
                                dt, nn, op, keys=g.variant_keys(dt, nn, dist)[0],
                                label=f"{op} {where}")))
        for v in variants:
            label = f"{v} {where}"
            out.append((label, lambda v=v, dt=dt, extra=extra, label=label, nn=nn, dist=dist:
                        g.bench(label, dt, _variant(v), same_keys=True, nn=nn, dist=dist,
                                **extra)))
            if args.variant_breakdown and lg == sizes[0] and dist == dists[0] and v == variants[0]:
                out.append((f"peer breakdown {where}", lambda dt=dt, nn=nn, extra=extra:
                            g.peer_breakdown(dt, nn, values=bool(extra.get("values")))))
            if args.variant_breakdown and lg == sizes[0] and dist == dists[0]:
                out.append((f"breakdown {label}", lambda v=v, dt=dt, nn=nn, extra=extra:
                            g.breakdown(dt, _variant(v), nn, values=bool(extra.get("values")))))
            if args.ptxinfo and "argsort" not in vt and lg == sizes[0]:
                out.append((f"ptxinfo {v} {vt}", lambda v=v, dt=dt, vt=vt: g.ptxinfo(
                    v, _variant(v), dt, 4 if vt == "pairs" else 0)))
    return out


def steps(g, args):
    """(case, function) of every step ``args`` asks for, in order."""
    u32 = np.uint32
    if args.only:
        dt = parse_dtype(args.only)
        return [(f"peers {dt}", lambda: g.bench_peers(dt)),
                (f"planner {dt}", lambda: g.bench("planner", dt, {}))] + variant_steps(g, args)
    out = [("copy bandwidth", g.copy_bandwidth)]
    if args.check:
        out.append(("check suite", lambda: check_suite(g.ctx, g.queue, g.prof, g.rng, args.quick,
                                                       g.out)))
    out += [("peers u32", lambda: g.bench_peers(u32)),
            ("planner u32", lambda: g.bench("planner", u32, {})),
            ("breakdown u32", lambda: g.breakdown(u32, {}))]
    for lg in (int(s) for s in filter(None, args.breakdown_sizes.split(","))):
        out.append((f"breakdown u32 2^{lg}", lambda lg=lg: g.breakdown(u32, {}, 1 << lg)))
    if args.ptxinfo:
        out.append(("ptxinfo planner", lambda: g.ptxinfo("planner", {})))
    out += variant_steps(g, args)
    if args.types:
        for dt in (np.int32, np.float32, np.uint64, np.float64):
            out += [(f"peers {np.dtype(dt)}", lambda dt=dt: g.bench_peers(dt)),
                    (f"planner {np.dtype(dt)}", lambda dt=dt: g.bench("planner", dt, {})),
                    (f"breakdown {np.dtype(dt)}", lambda dt=dt: g.breakdown(dt, {}))]
        out += [("breakdown u32+u32", lambda: g.breakdown(u32, {}, values=True)),
                ("peers argsort u32", lambda: g.bench_peers(u32, op="argsort")),
                ("planner key-value u32+u32", lambda: g.bench("planner key-value u32+u32", u32,
                                                              {}, values=True)),
                ("planner argsort u32", lambda: g.bench("planner argsort u32", u32, {},
                                                        argsort=True)),
                ("rts (portable)", lambda: g.bench("rts (portable)", u32,
                                                   dict(algorithm="reduce_then_scan")))]
    for lg in (int(x) for x in filter(None, args.sizes.split(","))):
        for dt in (u32, np.float32):
            out += [(f"peers {np.dtype(dt)} 2^{lg}", lambda dt=dt, lg=lg: g.bench_peers(
                        dt, 1 << lg)),
                    (f"planner {np.dtype(dt)} 2^{lg}", lambda dt=dt, lg=lg: g.bench(
                        "planner", dt, {}, nn=1 << lg))]
    if args.sweep:
        fresh = cl_tools.ImmediateAllocator(g.queue)
        for lg in range(10, args.log2n + 1, 2):
            nn = 1 << lg
            out += [(f"sweep peers 2^{lg}", lambda nn=nn: g.bench_peers(u32, nn)),
                    (f"sweep planner 2^{lg}", lambda nn=nn: g.bench("planner sweep", u32, {},
                                                                    nn=nn))]
            if args.pool:
                out.append((f"sweep fresh temporaries 2^{lg}", lambda nn=nn: g.bench(
                    "planner sweep, fresh temporaries", u32, dict(allocator=fresh), nn=nn)))
    return out


def main(args):
    if args.quick:
        args.log2n, args.repeat = min(args.log2n, 16), 2
        args.check = args.types = args.sweep = True
        args.variants = args.variants or "256x16"
    out = common.Run("gpu", args)
    g = GpuRun(args, out)
    if args.ptxinfo and not g.prof.is_nvidia:
        raise SystemExit(f"--ptxinfo needs NVIDIA's OpenCL (ptxas), not {g.prof.describe()}")
    for case, fn in steps(g, args):
        with out.guard(case):
            fn()
    return out.finish()
