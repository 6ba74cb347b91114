"""Per-call wall time of the numpy-like functions (new results from the memory pool), beside
what their users would call instead: torch.sort / torch.argsort / torch.topk and cupy.sort /
cupy.argsort on the GPU, numpy on the host.

Cases (float32 keys): ``sort`` and ``argsort`` of 2^10 .. 2^22 keys; ``rows``: sort and argsort
of each row of a 4096 x 4096 array (``--quick``: 64 x 4096); ``topk`` of 2^12 and 2^16 keys,
k = 100; ``argsort`` and ``topk`` with int64 indices (the default, as numpy's and torch's) and
with ``index_dtype=np.uint32``: what the wider indices cost. Per case and implementation:
``--rounds`` rounds of ``--repeat`` calls back to back, each keeping its result (so the pool
gives the previous result's memory to the next call, as a loop that rebinds its result does),
then one wait; the wall time per call, median and min-max over the rounds. The first round is
a warm-up. clradix's ``host`` time: the same calls enqueued behind a user event completed
afterwards (the host's share of a call). For scale, clradix also runs each case into results
made once (``out=``) and through the queue-first call (Sorter / Selector) into them. Every
result is checked against numpy once per case.
"""

import os
import statistics
import time

import numpy as np
import pyopencl.array as cl_array

import clradix

from . import common

ROWS, ROWS_QUICK = (4096, 4096), (64, 4096)
SIZES, SIZES_QUICK = (10, 14, 16, 18, 20, 22), (10, 14)
TOPK_SIZES, TOPK_K = (12, 16), 100


def add_arguments(ap):
    common.add_common_options(ap, repeat=50)
    common.add_peer_options(ap)
    ap.add_argument("--rounds", type=int, default=7, help="timed rounds per case (7)")


def per_call(calls, finish, repeat, rounds):
    """[ms per call of each round]: ``calls(repeat)`` back to back, then ``finish()``."""
    out = []
    for r in range(rounds + 1):
        t0 = time.perf_counter()
        calls(repeat)
        finish()
        if r:
            out.append((time.perf_counter() - t0) * 1e3 / repeat)
    return out


def _loop(fn):
    def calls(repeat):
        res = None
        for _ in range(repeat):
            res = fn()   # the previous result is freed here, as in a user's loop
        return res
    return calls


def cases(quick):
    rng = np.random.default_rng(1)
    for lg in (SIZES_QUICK if quick else SIZES):
        x = rng.standard_normal(1 << lg).astype(np.float32)
        yield "sort", x, None
        yield "argsort int64", x, None
        yield "argsort uint32", x, None
    rows = ROWS_QUICK if quick else ROWS
    x = rng.standard_normal(rows).astype(np.float32)
    yield "rows sort", x, None
    yield "rows argsort int64", x, None
    for lg in TOPK_SIZES:
        x = rng.standard_normal(1 << lg).astype(np.float32)
        yield "topk int64", x, TOPK_K
        yield "topk uint32", x, TOPK_K


def _clradix_calls(case, queue, d, k):
    """[(label, call)]: the numpy-like function with new (pooled) results, and for scale the
    same into results made once (out=) and the queue-first call into them."""
    idx = np.uint32 if case.endswith("uint32") else np.int64
    if "topk" in case:
        shape = d.shape[:-1] + (k,)
        vo, io = cl_array.empty(queue, shape, d.dtype), cl_array.empty(queue, shape, idx)
        sel = clradix.selector_for(d.context)
        return [("clradix", lambda: clradix.topk(d, k, index_dtype=idx)),
                ("clradix out=", lambda: clradix.topk(d, k, out=(vo, io))),
                ("Selector.topk out", lambda: sel.topk(queue, d, k, values_out=vo,
                                                       indices_out=io)[:2])]
    if "argsort" in case:
        io = cl_array.empty(queue, d.shape, idx)
        calls = [("clradix", lambda: clradix.argsort(d, index_dtype=idx)),
                 ("clradix out=", lambda: clradix.argsort(d, out=io))]
        if d.ndim == 1:
            sorter = clradix.sorter_for(d.context)
            calls.append(("Sorter.argsort out", lambda: sorter.argsort(queue, d, out=io)[0]))
        return calls
    o = cl_array.empty_like(d)
    return [("clradix", lambda: clradix.sort(d)), ("clradix out=", lambda: clradix.sort(d, out=o))]


def host_per_call(queue, calls, repeat, rounds):
    """[us of host time per call of each round]: the calls enqueued behind a user event that
    is completed afterwards, so that the device runs nothing meanwhile (the host's share)."""
    import pyopencl as cl
    out = []
    for r in range(rounds + 1):
        gate = cl.UserEvent(queue.context)
        cl.enqueue_marker(queue, wait_for=[gate])
        t0 = time.perf_counter()
        calls(repeat)
        t1 = time.perf_counter()
        gate.set_status(cl.command_execution_status.COMPLETE)
        queue.finish()
        if r:
            out.append((t1 - t0) * 1e6 / repeat)
    return out


def _host(a):
    """A result on the host: pyopencl and CuPy arrays (get), torch tensors (cpu), numpy."""
    if hasattr(a, "cpu"):
        return a.cpu().numpy()
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _check(case, x, k, got):
    if "topk" in case:
        v, i = (_host(g) for g in got)
        want = np.argsort(-x, axis=-1, kind="stable")[..., :k]
        return np.array_equal(i.astype(np.int64), want)
    g = _host(got)
    if "argsort" in case:
        return np.array_equal(g.astype(np.int64), np.argsort(x, axis=-1, kind="stable"))
    return np.array_equal(g, np.sort(x, axis=-1))


def _peer_calls(peer, case, x, k):
    """(call, finish, device array) of a CUDA peer for ``case``, or None."""
    lib = peer.library
    if lib == "torch":
        import torch
        d = torch.from_numpy(x).cuda()
        if "topk" in case:
            if case.endswith("uint32"):
                return None
            return (lambda: torch.topk(d, k), torch.cuda.synchronize)
        if "argsort" in case:
            if case.endswith("uint32"):
                return None
            return (lambda: torch.argsort(d, dim=-1, stable=True), torch.cuda.synchronize)
        return (lambda: torch.sort(d, dim=-1, stable=True)[0], torch.cuda.synchronize)
    if lib == "cupy":
        import cupy
        d = cupy.asarray(x)
        sync = cupy.cuda.Device().synchronize
        if "topk" in case:
            return None
        if "argsort" in case:
            if case.endswith("uint32"):
                return None
            return (lambda: cupy.argsort(d, axis=-1), sync)
        return (lambda: cupy.sort(d, axis=-1), sync)
    return None


def main(args):
    out = common.Run("api", args)
    device, _ = common.select_device(args.device)
    queue = common.profiling_queue(device)
    where = common.opencl_device_fields(device)
    peers = common.cuda_peers(args, out)
    repeat = 2 if args.quick else args.repeat
    rounds = 2 if args.quick else args.rounds
    out.log(f"# per call (wall, {repeat} calls back to back, {rounds} rounds) on "
            f"{where['device_full']}; host: {_cpu_model()}, {os.cpu_count()} cores, numpy "
            f"{np.__version__}, load average {os.getloadavg()[0]:.2f} at the start")
    for case, x, k in cases(args.quick):
        n = x.size
        d = cl_array.to_device(queue, x)
        for label, call in _clradix_calls(case, queue, d, k):
            with out.guard(f"{label} {case} n={n}"):
                ok = _check(case, x, k, call())
                samples = per_call(_loop(call), queue.finish, repeat, rounds)
                host = host_per_call(queue, _loop(call), repeat, rounds)
                _record(out, where, label, case, x, samples, ok, host)
        for peer in peers:
            with out.guard(f"{peer.library} {case} n={n}"):
                made = _peer_calls(peer, case, x, k)
                if made is None:
                    continue
                call, finish = made
                ok = _check(case, x, k, call())
                samples = per_call(_loop(call), finish, repeat, rounds)
                _record(out, peer.device_fields(), peer.library, case, x, samples, ok)
        if "topk" not in case and not case.endswith("uint32"):
            fn = {"sort": np.sort, "rows sort": np.sort}.get(case, np.argsort)
            samples = per_call(_loop(lambda: fn(x, axis=-1)), lambda: None,
                               max(1, repeat // 10), rounds)
            _record(out, common.host_fields(), f"numpy.{fn.__name__}", case, x, samples, True)
    load = os.getloadavg()[0]
    out.log(f"# load average {load:.2f} at the end" + (
        f": more than {os.cpu_count()} cores' worth, the host was busy and CPU-side times are "
        f"unreliable" if load > (os.cpu_count() or 1) else ""))
    return out.finish()


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def _record(out, where, impl, case, x, samples, ok, host=None):
    med = statistics.median(samples)
    extra = {}
    note = f"per call {med:.4f} ms ({min(samples):.4f}-{max(samples):.4f})"
    if host:
        extra = dict(host_us=statistics.median(host), samples_host_us=host)
        note += f", host {statistics.median(host):.1f} us"
    out.record(where, impl, case, x.dtype, int(x.size), ok=ok, per_call_ms=med,
               per_call_min_ms=min(samples), per_call_max_ms=max(samples),
               samples_per_call_ms=samples, shape=list(x.shape), note=note, **extra)

