"""What comes after a sort, on one device (by default the first GPU) beside CuPy and torch on the
GPU and numpy on the host, every result checked.

Operations (``--ops``, comma-separated; each at the sizes ``--sizes``, log2 of n, default 2^16,
2^20, 2^24 and 2^28):

- ``searchsorted``: n float32 values in n sorted float32 keys (side="left"), int64 positions:
  clradix.searchsorted, cupy.searchsorted, torch.searchsorted, numpy.searchsorted;
- ``unique_counts``: uint32 keys of n / 16 distinct values: clradix.unique_counts,
  cupy.unique(return_counts=True), torch.unique(sorted=True, return_counts=True), numpy.unique;
- ``unique_inverse``: the same keys, clradix.unique(return_inverse=True) and the peers' unique
  with return_inverse;
- ``run_lengths``: the same keys sorted: clradix.run_lengths, torch.unique_consecutive
  (return_counts=True), numpy's run heads (flatnonzero of the changes); CuPy has no public
  run-length encoding;
- ``lexsort``: a uint32 key and a uint16 primary key of 1024 values: clradix.lexsort,
  cupy.lexsort, torch (two stable sorts: the secondary key, then the primary gathered in its
  order), numpy.lexsort;
- ``sort_values``: uint32 keys with two value arrays, (n, 3) float32 positions (12 bytes) and
  int64 ids, sorted in place by ``Sorter.sort(values=[pos, ids])``; beside it
  ``clradix[argsort+gathers]`` (clradix.argsort then a gather of the keys and of each array into
  new ones, what the list form replaces), cupy (argsort + three gathers), torch (sort(stable=True)
  + two gathers), numpy (argsort + three gathers).

Each implementation: a warm-up, then ``--repeat`` timed calls: ``device_ms`` (OpenCL profiling
or CUDA events) and ``wall_ms`` (the call and its wait; the unique family and run_lengths read
the number of runs back inside the call, so wall time is their figure), median and min-max
printed. numpy runs up to 2^``--numpy-max`` (24: its calls take seconds beyond), with at most
3 repeats; results are checked against numpy up to 2^``--check-max`` and against the first CUDA
peer above it (unchecked without one, and said so). ``--search-levels 0,11``: searchsorted
also as ``clradix[levels=N]``, with N levels of splitters in local memory (0: none), beside the
library's own choice (the device's SearchPolicy with local_levels=N). ``--runs-ipt 1,16``:
run_lengths, unique_counts and unique_inverse also as ``clradix[runs_ipt=N]``, runs_write taking
N positions a work-item a round (the device's RunsPolicy with ipt and perm_ipt N), each checked
like the others (clradix.policies.families; the policies given to the context's kernel
families). ``--quick``: 2^12 and 2^16, 2 repeats (runs
on PoCL: ``--device pocl``).
"""

from dataclasses import replace

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clradix
from clradix.core.device import DeviceProfile
from clradix.planning.families import families_for
from clradix.policies.families import family_policy

from . import common, timing

OPS = ("searchsorted", "unique_counts", "unique_inverse", "run_lengths", "lexsort",
       "sort_values")


def add_arguments(ap):
    common.add_common_options(ap, repeat=10)
    common.add_peer_options(ap)
    ap.add_argument("--sizes", default="16,20,24,28", help="log2 sizes (16,20,24,28)")
    ap.add_argument("--ops", default=",".join(OPS), help=f"operations ({','.join(OPS)})")
    ap.add_argument("--numpy-max", type=int, default=24,
                    help="numpy runs up to 2^this many keys (24)")
    ap.add_argument("--search-levels", default="",
                    help="searchsorted once per value here, comma-separated: the levels of "
                         "splitters each work-group keeps in local memory (0: none; default: "
                         "the library's choice only), as clradix[levels=N]; non-CPU devices")
    ap.add_argument("--runs-ipt", default="",
                    help="run_lengths, unique_counts and unique_inverse once per value here, "
                         "comma-separated, 1 to 32: the positions a work-item of runs_write "
                         "takes a round (default: the library's choice only), as "
                         "clradix[runs_ipt=N]")
    ap.add_argument("--check-max", type=int, default=24,
                    help="results are checked against numpy up to 2^this (24), above against "
                         "the first CUDA peer")


# ------------------------------------------------------------------ data

def make(op, rng, n):
    """The inputs of ``op`` at size n, as numpy arrays (a tuple)."""
    if op == "searchsorted":
        return (np.sort(rng.standard_normal(n, dtype=np.float32)),
                rng.standard_normal(n, dtype=np.float32))
    keys = rng.integers(0, max(n // 16, 1), n, dtype=np.uint32)
    if op in ("unique_counts", "unique_inverse"):
        return (keys,)
    if op == "run_lengths":
        return (np.sort(keys),)
    if op == "lexsort":
        return (rng.integers(0, 2 ** 32, n, dtype=np.uint32),
                rng.integers(0, 1024, n, dtype=np.uint16))
    return (rng.integers(0, 2 ** 32, n, dtype=np.uint32),
            rng.random((n, 3), dtype=np.float32), np.arange(n, dtype=np.int64))


# ------------------------------------------------------------------ numpy (the reference)

def numpy_call(op, data):
    """A function computing ``op`` with numpy; its result is a tuple of numpy arrays."""
    if op == "searchsorted":
        return lambda: (np.searchsorted(data[0], data[1]),)
    if op == "unique_counts":
        return lambda: np.unique(data[0], return_counts=True)
    if op == "unique_inverse":
        return lambda: np.unique(data[0], return_inverse=True)
    if op == "run_lengths":
        def rle():
            s = data[0]
            heads = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
            return s[heads], heads, np.diff(np.append(heads, s.size))
        return rle
    if op == "lexsort":
        return lambda: (np.lexsort(data),)

    def gathers():
        idx = np.argsort(data[0], kind="stable")
        return data[0][idx], data[1][idx], data[2][idx]
    return gathers


def same(got, want):
    return len(got) == len(want) and all(
        np.asarray(g).shape == np.asarray(w).shape and np.array_equal(g, w)
        for g, w in zip(got, want))


# ------------------------------------------------------------------ clradix

def runs_variants(text):
    """[ipt] of ``--runs-ipt`` (comma-separated, 1 to 32)."""
    out = []
    for item in (v.strip() for v in text.split(",") if v.strip()):
        if not item.isdigit() or not 1 <= int(item) <= 32:
            raise SystemExit(f"--runs-ipt: {item!r} is not a count of positions from 1 to 32")
        out.append(int(item))
    return out


def with_policy(q, family, call, **fields):
    """``call`` with the kernels of ``family`` under the device's policy with ``fields``
    changed (given to the context's families), the library's choice restored after it."""
    given = families_for(q.context).policies
    policy = replace(family_policy(family, DeviceProfile.from_device(q.device)), **fields)

    def varied():
        given[family] = policy
        try:
            return call()
        finally:
            given.pop(family, None)
    return varied


def clradix_calls(op, q, data, search_levels=(), run_variants=()):
    """[(implementation, prep or None, call)]: call() returns (event, outputs).
    ``search_levels``: searchsorted also with each of these splitter levels; ``run_variants``:
    the runs' operations also with each of these (load, ipt) of runs_write."""
    d = [cl_array.to_device(q, x) for x in data]

    def last(res):
        res = res if isinstance(res, tuple) else (res,)
        return res[-1].events[-1], res

    def with_variants(call):
        return [("clradix", None, call)] + [
            (f"clradix[runs_ipt={ipt}]", None,
             with_policy(q, "runs", call, ipt=ipt, perm_ipt=ipt))
            for ipt in run_variants]
    if op == "searchsorted":
        def searching():
            return last(clradix.searchsorted(d[0], d[1]))
        return [("clradix", None, searching)] + [
            (f"clradix[levels={lv}]", None,
             with_policy(q, "search", searching, local_levels=lv)) for lv in search_levels], d
    if op == "unique_counts":
        return with_variants(lambda: last(tuple(clradix.unique_counts(d[0])))), d
    if op == "unique_inverse":
        return with_variants(lambda: last(clradix.unique(d[0], return_inverse=True))), d
    if op == "run_lengths":
        return with_variants(lambda: last(tuple(clradix.run_lengths(d[0])))), d
    if op == "lexsort":
        return [("clradix", None, lambda: last(clradix.lexsort(d)))], d
    sorter = clradix.sorter_for(q.context)
    work = [cl_array.empty_like(x) for x in d]

    def restore():
        for w, x in zip(work, d):
            cl.enqueue_copy(q, w.base_data, x.base_data, byte_count=x.nbytes)
        q.finish()

    def in_place():
        return sorter.sort(q, work[0], values=[work[1], work[2]]), tuple(work)
    permute = families_for(q.context)

    def argsort_gathers():
        idx = clradix.argsort(d[0], index_dtype=np.uint32)
        outs = tuple(cl_array.empty_like(x) for x in d)
        evt = idx.events[-1]
        for x, o in zip(d, outs):
            rec = x.dtype.itemsize * (x.size // x.shape[0])
            evt = permute.take(q, x.base_data, 0, idx.base_data, 0, np.uint32, o.base_data, 0,
                               x.shape[0], x.shape[0], rec, [evt])
        return evt, outs
    return [("clradix", restore, in_place),
            ("clradix[argsort+gathers]", None, argsort_gathers)], d


def to_host(outs):
    return tuple(o.get() for o in outs)


# ------------------------------------------------------------------ CUDA peers

def cuda_call(library, op, data):
    """A function computing ``op`` with ``library`` (cupy or torch) on inputs already on the
    GPU, and a function turning its result into numpy arrays; None when the peer has no such
    operation."""
    if library == "cupy":
        import cupy as cp
        g = [cp.asarray(x) for x in data]

        def host(res):
            return tuple(cp.asnumpy(r) for r in res)
        if op == "searchsorted":
            return (lambda: (cp.searchsorted(g[0], g[1]),)), host
        if op == "unique_counts":
            return (lambda: cp.unique(g[0], return_counts=True)), host
        if op == "unique_inverse":
            return (lambda: cp.unique(g[0], return_inverse=True)), host
        if op == "lexsort":
            return (lambda: (cp.lexsort(cp.stack([g[0], g[1].astype(cp.uint32)])),)), host
        if op == "sort_values":
            def gathers():
                idx = cp.argsort(g[0])
                return g[0][idx], g[1][idx], g[2][idx]
            return gathers, host
        return None
    import torch
    g = [torch.as_tensor(x.astype(np.int64) if x.dtype in (np.uint32, np.uint16) else x,
                         device="cuda") for x in data]

    def host(res):
        return tuple(r.cpu().numpy() for r in res)
    if op == "searchsorted":
        return (lambda: (torch.searchsorted(g[0], g[1]),)), host
    if op == "unique_counts":
        return (lambda: torch.unique(g[0], sorted=True, return_counts=True)), host
    if op == "unique_inverse":
        return (lambda: torch.unique(g[0], sorted=True, return_inverse=True)), host
    if op == "run_lengths":
        def rle():
            values, counts = torch.unique_consecutive(g[0], return_counts=True)
            starts = torch.cumsum(counts, 0) - counts
            return values, starts, counts
        return rle, host
    if op == "lexsort":
        def lex():
            first = torch.sort(g[0], stable=True).indices
            return (first[torch.sort(g[1][first], stable=True).indices],)
        return lex, host
    if op == "sort_values":
        def gathers():
            keys, idx = torch.sort(g[0], stable=True)
            return keys, g[1][idx], g[2][idx]
        return gathers, host
    return None


def release_cuda(library):
    """Give the peer's cached device memory back (CuPy's pool, torch's caching allocator), so
    that the OpenCL allocations of the cases after it find the memory free."""
    if library == "cupy":
        import cupy as cp
        cp.get_default_memory_pool().free_all_blocks()
    else:
        import torch
        torch.cuda.empty_cache()


def cast_like(got, want):
    """Peer results in the reference's dtypes (torch holds uint32 keys as int64 here)."""
    return tuple(np.asarray(g).astype(np.asarray(w).dtype) for g, w in zip(got, want))


# ------------------------------------------------------------------ the run

def spread(t):
    """The min-max of the timed calls (the medians are the record's)."""
    wall = f"wall min {min(t.wall_ms):.3f} max {max(t.wall_ms):.3f} ms"
    if not t.device_ms:
        return wall
    return f"device min {min(t.device_ms):.3f} max {max(t.device_ms):.3f} ms; {wall}"


def main(args):
    if args.quick:
        args.repeat, args.sizes = 2, "12,16"
    out = common.Run("after_sort", args)
    dev, _ = common.select_device(args.device)
    where = common.opencl_device_fields(dev)
    q = common.profiling_queue(dev)
    out.log(f"device {where['device_full']}, driver {where['driver']}, {out.meta['date']}, "
            f"numpy {np.__version__}, pyopencl {cl.VERSION_TEXT}, clradix {clradix.__version__}")
    peers = common.cuda_peers(args, out)
    for p in peers:
        out.log(f"peer {p.library}: {p.device_fields()['device_full']}, "
                f"{p.device_fields()['driver']}")
    rng = np.random.default_rng(41)
    levels = [int(v) for v in args.search_levels.split(",") if v]
    variants = runs_variants(args.runs_ipt)
    ops = [o for o in args.ops.split(",") if o]
    for op in ops:
        if op not in OPS:
            raise SystemExit(f"--ops: unknown operation {op!r} (one of {', '.join(OPS)})")
    for e in (int(s) for s in args.sizes.split(",")):
        n = 1 << e
        for op in ops:
            data = make(op, rng, n)
            dtype = data[0].dtype
            want, checked_by = None, "numpy"
            if e <= args.numpy_max:
                t, err = out.attempt(lambda: timing.time_host(numpy_call(op, data),
                                                              min(args.repeat, 3)))
                if t is not None:
                    want = t.out
                    t.out = None
                out.record(common.host_fields(), "numpy", op, dtype, n, t, error=err,
                           note=spread(t) if t else "")
            elif e <= args.check_max:
                want = numpy_call(op, data)()
            peer_results = {}
            for p in peers:
                made = out.attempt(lambda: cuda_call(p.library, op, data))[0]
                if made is None:
                    continue
                call, host = made
                t, err = out.attempt(lambda: timing.time_cuda(p.library, call, args.repeat))
                got = None
                if t is not None:
                    got = host(t.out)
                    t.out = None
                    peer_results[p.library] = got
                ok = err is None and (want is None or same(cast_like(got, want), want))
                out.record(p.device_fields(), p.library, op, dtype, n, t, ok=ok, error=err,
                           note=spread(t) if t else "")
                made = call = t = None
                release_cuda(p.library)
            if want is None and peer_results:
                checked_by, want = next(iter(peer_results.items()))
            with out.guard(f"clradix {op} 2^{e}"):
                calls, _ = clradix_calls(op, q, data, levels, variants)
                for impl, prep, call in calls:
                    t = timing.time_opencl(q, call, args.repeat, prep=prep)
                    got = to_host(t.out)
                    t.out = None
                    ok = want is None or same(cast_like(got, want), want)
                    note = spread(t) + ("" if want is not None else "; UNCHECKED")
                    if want is not None and checked_by != "numpy":
                        note += f"; checked against {checked_by}"
                    out.record(where, impl, op, dtype, n, t, ok=ok, note=note)
            data = want = peer_results = None   # free the inputs before the next case
    return out.finish()
