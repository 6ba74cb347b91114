"""Per-call cost of small and mid sorts, host included: clradix beside CuPy, torch and numpy.

For uint32 and float32 keys: in-place sort, key-value pairs (uint32 values) and argsort, at
2^10 .. 2^22 keys (``--sizes``); ``--ops argsort_out``: clradix's argsort into one reused ``out=``
array (no index array allocated per call). Per case and implementation:

- ``single``: one call and its wait (clradix: the returned event; CUDA: a device synchronize),
  the median of ``--repeat`` calls;
- ``stream``: ``--repeat`` calls back to back and one wait at the end, per call (the best of 3);
- ``host``: ``--repeat`` calls without waiting, the host time per call until the last returns
  (the best of 3), then the wait; and ``gated`` (OpenCL): the same behind a user event that is
  only completed afterwards, so that nothing runs on the device while the host enqueues (on a
  CPU device the kernels otherwise share the cores with the enqueueing thread);
- ``launches``: the commands a clradix call enqueues (its driver's trace), and ``floor``: the
  host time of one bare kernel launch on the same queue (``clEnqueueNDRangeKernel`` of a built
  kernel whose arguments are set), so that ``host / floor`` says how far a call is from it;
  ``runtime floors``: an empty kernel's launch and wait, eight chained launches with and without
  event wait lists, a fill and a launch (what the OpenCL runtime costs before any sort);
  ``--profile LOG2N``: where a cached call's host time goes (cProfile).

In-place sorts sort the same buffer again each call, as a code that re-sorts every step does
(CuPy likewise). Every output is checked against numpy (keys bit for bit, stable order); numpy's
``np.sort`` (default kind) and ``kind="stable"`` are timed on the host for scale. ``--variants
NAME:FIELD=VALUE,...;...`` times clradix Sorters with policy overrides (``os:algorithm=onesweep``)
beside the planner's choice.
"""

import statistics
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clradix
from clradix import bench
from clradix.core.device import DeviceProfile
from clradix.core.keys import key_codec
from clradix.core.errors import PolicyError
from clradix.planning.sort_plan import validate

from . import common, impls, report

OPS = ("sort", "sort_kv", "argsort")
# further ops on request: clradix only
EXTRA_OPS = ("argsort_out",)
DTYPES = ("uint32", "float32")
SIZES = (10, 14, 16, 18, 20, 22)
QUICK_SIZES = (10, 14, 16)


def add_arguments(ap):
    common.add_common_options(ap, repeat=200)
    common.add_peer_options(ap)
    ap.add_argument("--sizes", help="log2 sizes, comma separated (default 10,14,16,18,20,22; "
                                    "--quick: 10,14,16)")
    ap.add_argument("--ops", default=",".join(OPS), help=f"operations ({','.join(OPS + EXTRA_OPS)})")
    ap.add_argument("--dtypes", default=",".join(DTYPES), help="key dtypes (uint32,float32)")
    ap.add_argument("--variants", help="clradix variants, NAME:FIELD=VALUE,...;... (SortPolicy "
                                       "fields, e.g. 'os:algorithm=onesweep;rts:algorithm="
                                       "reduce_then_scan'), or a preset: " + ", ".join(
                                           f"{k} = '{v}'" for k, v in PRESETS.items())
                    + "; the planner's choice is always timed; a variant that cannot run a "
                      "case (a single work-group above its tile) skips it")
    ap.add_argument("--no-numpy", action="store_true", help="leave numpy out")
    ap.add_argument("--profile", type=int, action="append", metavar="LOG2N",
                    help="print a cProfile of 1000 cached sorts of 2^LOG2N uint32 keys "
                         "(host time only; repeatable)")


# --variants presets: the alternatives of the NVIDIA planner's small and mid sizes
PRESETS = {
    "nvidia": ("unfused:fused_passes=False;"
               "rts:algorithm=reduce_then_scan,fused_scan=True,items_per_thread=16,blocks_per_cu=8;"
               "wide:items_per_thread=32"),
}


def parse_variants(text):
    """[(name, overrides)] from 'name:field=value,field=value;name2:...' (or a preset name)."""
    out = []
    text = PRESETS.get((text or "").strip(), text)
    for part in filter(None, (p.strip() for p in (text or "").split(";"))):
        name, _, fields = part.partition(":")
        overrides = {}
        for item in filter(None, (f.strip() for f in fields.split(","))):
            key, _, value = item.partition("=")
            overrides[key.strip()] = _value(value.strip())
        out.append((name.strip(), overrides))
    return out


def _value(text):
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        return text


# ------------------------------------------------------------------ the three ways to time a call

def _best_per_call(run_calls, finish, repeat, rounds=3):
    """(best host seconds per call of ``repeat`` calls until the last returns, best seconds per
    call until ``finish()`` returned)."""
    host, total = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run_calls(repeat)
        t1 = time.perf_counter()
        finish()
        t2 = time.perf_counter()
        host.append((t1 - t0) / repeat)
        total.append((t2 - t0) / repeat)
    return min(host), min(total)


def time_opencl_calls(queue, call, repeat):
    """``call(wait_for)`` enqueues one call and returns its event. Returns microseconds:
    single (median), stream, host, gated."""
    call(None).wait()
    single = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call(None).wait()
        single.append(time.perf_counter() - t0)

    def calls(k):
        for _ in range(k):
            call(None)
    host, stream = _best_per_call(calls, queue.finish, repeat)
    gated = []
    for _ in range(3):
        gate = cl.UserEvent(queue.context)
        call([gate])
        t0 = time.perf_counter()
        calls(repeat)
        gated.append((time.perf_counter() - t0) / repeat)
        gate.set_status(cl.command_execution_status.COMPLETE)
        queue.finish()
    us = 1e6
    return dict(single_us=statistics.median(single) * us, stream_us=stream * us,
                host_us=host * us, gated_us=min(gated) * us)


def time_cuda_calls(sync, call, repeat):
    """``call()`` runs one call on the current CUDA stream; ``sync()`` waits for the device."""
    call()
    sync()
    single = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        sync()
        single.append(time.perf_counter() - t0)

    def calls(k):
        for _ in range(k):
            call()
    host, stream = _best_per_call(calls, sync, repeat)
    us = 1e6
    return dict(single_us=statistics.median(single) * us, stream_us=stream * us,
                host_us=host * us)


def time_host_calls(call, repeat):
    s = bench.median_ms(call, max(repeat // 4, 3)) * 1e3
    return dict(single_us=s, stream_us=s)


_NOP = """__kernel void nop(__global uint* p, uint n)
{
    if (get_global_id(0) == n)
        p[0] = 0u;
}
"""


def launch_floors(queue, repeat):
    """What the OpenCL runtime itself costs, in microseconds: an empty kernel's launch and wait
    (``one``); eight launches each waiting on the event of the one before, then a wait
    (``chain8_events``), and the same without wait lists (``chain8_plain``, in-order queue);
    a 4-byte fill and a launch (``fill_launch``); the host time per launch without waiting
    (``host``) and per launch in a stream of ``repeat`` (``stream``)."""
    knl = cl.Program(queue.context, _NOP).build().nop
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 64)
    knl.set_args(buf, np.uint32(1 << 30))
    g = (256,)

    def median_us(fn):
        return bench.median_ms(fn, repeat) * 1e3

    def one():
        cl.enqueue_nd_range_kernel(queue, knl, g, g).wait()

    def chain(events):
        def fn():
            evt = None
            for _ in range(8):
                evt = cl.enqueue_nd_range_kernel(queue, knl, g, g,
                                                 wait_for=[evt] if events and evt else None)
            evt.wait()
        return fn

    def fill_launch():
        cl.enqueue_fill_buffer(queue, buf, np.uint32(0), 0, 4)
        cl.enqueue_nd_range_kernel(queue, knl, g, g).wait()

    def calls(k):
        for _ in range(k):
            cl.enqueue_nd_range_kernel(queue, knl, g, g)
    out = dict(one=median_us(one), chain8_events=median_us(chain(True)),
               chain8_plain=median_us(chain(False)), fill_launch=median_us(fill_launch))
    host, stream = _best_per_call(calls, queue.finish, max(repeat, 100))
    out.update(host=host * 1e6, stream=stream * 1e6)
    return out


def profile_calls(queue, lg, calls, top=18):
    """cProfile of ``calls`` cached in-place sorts of 2^lg uint32 keys, enqueued behind an
    unfinished user event (host time only); prints the functions by their own time."""
    import cProfile
    import io
    import pstats
    sorter = clradix.Sorter(queue.context)
    d = cl_array.to_device(queue, np.random.default_rng(1).integers(0, 2**32, 1 << lg,
                                                                    dtype=np.uint32))
    sorter.sort(queue, d).wait()
    gate = cl.UserEvent(queue.context)
    sorter.sort(queue, d, wait_for=[gate])
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    for _ in range(calls):
        sorter.sort(queue, d)
    prof.disable()
    per_call = (time.perf_counter() - t0) / calls * 1e6
    gate.set_status(cl.command_execution_status.COMPLETE)
    queue.finish()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    print(f"profile: sort 2^{lg} uint32, {calls} cached calls behind a gate, "
          f"{per_call:.1f} us host per call under the profiler")
    print("\n".join(line for line in text.getvalue().splitlines()
                    if line.strip() and not line.startswith(("   Ordered", "         "))))


# ------------------------------------------------------------------ one case

def run_calls(impl, op, keys, repeat):
    """(times, outputs of the last call on the host) of ``op`` by ``impl`` (one of impls'
    implementations): OpenCL ones timed by time_opencl_calls, with the commands of one call
    (``launches``, from its drivers' trace); CUDA ones by time_cuda_calls; numpy by
    time_host_calls. In-place sorts sort the same array again each call."""
    p = impl.prepare(op, keys)
    box = {}
    if isinstance(impl, impls.ClradixImpl):
        times = time_opencl_calls(impl.queue, lambda wait: p.call(wait)[0], repeat)
        trace = []
        drivers = list(impl.sorter.planner.drivers.values())
        for driver in drivers:
            driver.trace = trace
        evt, box["out"] = p.call()
        evt.wait()
        for driver in drivers:
            driver.trace = None
        times["launches"] = len(trace)
    else:
        def call():
            box["out"] = p.call()
        if isinstance(impl, impls.NumpyImpl):
            times = time_host_calls(call, repeat)
        else:
            times = time_cuda_calls(impl.synchronize, call, repeat)
    got = p.result(box.pop("out"))
    release = p.release
    p = None
    release()
    return times, got


def _ok(op, got, want, stable):
    if stable:
        return impls.same(got, want)
    # numpy's default kind and the peers' unstable orders: keys must match, indices must sort
    return impls.same(got[:1], want[:1]) if op != "argsort" else True


# ------------------------------------------------------------------ the command

def main(args):
    device, _ = common.select_device(args.device)
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    run = common.Run("latency", args, echo=False)
    where = common.opencl_device_fields(device)
    repeat = 20 if args.quick and args.repeat == 200 else args.repeat
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else \
        list(QUICK_SIZES if args.quick else SIZES)
    ops = [o for o in args.ops.split(",") if o]
    unknown = sorted(set(ops) - set(OPS + EXTRA_OPS))
    if unknown:
        raise SystemExit(f"latency: unknown op(s) {', '.join(unknown)}; expected some of "
                         f"{', '.join(OPS + EXTRA_OPS)}")
    dtypes = [d for d in args.dtypes.split(",") if d]
    clr = [impls.ClradixImpl(queue)]
    clr += [impls.ClradixImpl(queue, ov, f"clradix {name}") for name, ov in parse_variants(
        args.variants)]
    peers = common.cuda_peers(args, run)
    hosts = [] if args.no_numpy else [impls.NumpyImpl(None, "numpy default"),
                                      impls.NumpyImpl("stable", "numpy stable")]
    floors = launch_floors(queue, repeat)
    run.meta["runtime_floors_us"] = floors
    floor = run.meta["launch_floor_us"] = floors["host"]
    print("runtime floors, us: " + ", ".join(f"{k} {v:.1f}" for k, v in floors.items()))
    for lg in args.profile or ():
        profile_calls(queue, lg, 1000)
    print(f"device: {where['device_full']}; bare kernel launch: {floor:.1f} us host per call; "
          f"{repeat} calls per measurement")
    header = (f"{'impl':22s} {'op':11s} {'dtype':8s} {'n':>6s} {'single':>9s} {'stream':>9s} "
              f"{'host':>8s} {'gated':>8s} {'launch':>6s} {'host/floor':>10s}  policy")
    print(header + "\n" + "-" * len(header), flush=True)
    rng = np.random.default_rng(15)
    for lg in sizes:
        n = 1 << lg
        for dtype in dtypes:
            keys = common.random_keys(rng, dtype, n)
            order = np.argsort(key_codec(keys.dtype).order_key(keys), kind="stable")
            for op in ops:
                want = {"sort": (keys[order],), "sort_kv": (keys[order], order.astype(np.uint32)),
                        "argsort": (order.astype(np.uint32),)}[op.replace("_out", "")]
                for impl in (clr if op in EXTRA_OPS else clr + peers + hosts):
                    if not impl.supports(op, dtype):
                        continue
                    _case(run, where, impl, op, dtype, n, keys, want, repeat, floor)
    return run.finish()


def _case(run, where, impl, op, dtype, n, keys, want, repeat, floor):
    host = isinstance(impl, impls.NumpyImpl)
    cuda = isinstance(impl, (impls.CupyImpl, impls.TorchImpl))
    fields = common.host_fields() if host else where if not cuda else dict(
        device="CUDA", device_full="CUDA", driver="")
    if isinstance(impl, impls.ClradixImpl) and impl.name != "clradix":
        try:   # a variant that cannot run this case (single_wg above its tile) skips it
            impl.sorter.temp_bytes(n, dtype, np.uint32 if op != "sort" else None)
            pol = impl.sorter.plan(impl.queue.device, dtype, n, np.uint32 if op != "sort" else None)
            validate(pol, DeviceProfile.from_device(impl.queue.device), np.dtype(dtype).itemsize,
                     4, 4 if op != "sort" else 0, n, impl.sorter.planner.debug)
        except PolicyError as exc:
            print(f"{impl.name[:22]:22s} {op:11s} {dtype:8s} {report.size_label(n):>6s} "
                  f"skipped: {str(exc)[:70]}", flush=True)
            return
    with run.guard(f"{impl.name} {op} {dtype} n={report.size_label(n)}"):
        times, got = run_calls(impl, op, keys.copy(), repeat)
        stable = isinstance(impl, impls.ClradixImpl) or (host and impl.kind == "stable") \
            or isinstance(impl, impls.TorchImpl)
        ok = _ok(op, got, want, stable)
        policy = ""
        if isinstance(impl, impls.ClradixImpl):
            pol = impl.sorter.plan(impl.queue.device, dtype, n,
                                   np.uint32 if op != "sort" else None)
            policy = (f"{pol.algorithm} {pol.radix_bits}b {pol.wg_size}x{pol.items_per_thread}"
                      + (" fused_scan" if impl.sorter.planner.debug.fused_scan
                         and pol.algorithm == "reduce_then_scan" else "")
                      + (f" {pol.ranking}" if pol.ranks_by_subgroups else ""))
            times["host_per_floor"] = times["host_us"] / floor
        run.record(fields, impl.name, op, dtype, n, ok=ok, policy=policy, **times)
        f = lambda k, w, p=1: f"{times[k]:{w}.{p}f}" if k in times else " " * w  # noqa: E731
        print(f"{impl.name[:22]:22s} {op:11s} {dtype:8s} {report.size_label(n):>6s} "
              f"{f('single_us', 9)} {f('stream_us', 9)} {f('host_us', 8)} {f('gated_us', 8)} "
              f"{times.get('launches', ''):>6} {f('host_per_floor', 10)}  {policy}"
              f"{'' if ok else '  WRONG'}", flush=True)
