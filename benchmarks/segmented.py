"""Batched and segmented sorts on one device (by default the first GPU) beside torch.sort(dim=-1),
cupy.sort(axis=-1) and, on CPU devices, numpy.sort(axis=-1); every result checked.

Cases (the segmented-sort issue's): float32 rows 4096 x 4096, 65536 x 64, 256 x 65536, 16 x 2^20
(sort; 4096 x 4096 also argsort, beside torch.sort's indices); key-value rows (float32 keys +
int32 values, 4096 x 4096, given as device offsets); 2^24 float32 keys in 2^16 segments whose
lengths follow a power law, beside the plain sort of the same 2^24 keys. ``--trace`` logs the
device time of each kernel of one more clradix run per case. clradix sorts in place
(the input restored before each run, untimed); torch and CuPy return new arrays. ``--quick``:
smaller shapes (runs on PoCL in a minute or two), 2 repeats. ``--variants WGxIPT,...`` times the
4096 x 4096 rows with each SegmentPolicy tile (wg_size x items_per_thread) instead.
"""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clradix
from clradix.dispatch import segments as segmented
from clradix.core.arguments import operand

from . import common, timing


def add_arguments(ap):
    common.add_common_options(ap, repeat=20)
    common.add_peer_options(ap)
    ap.add_argument("--variants", help="WGxIPT list (256x16,128x16,256x8): time the 4096 x 4096 "
                    "float32 rows with each segmented tile, instead of the cases")
    ap.add_argument("--trace", action="store_true", help="per-kernel device times of one more "
                    "run of each clradix case")


def row_cases(quick):
    if quick:
        return [(256, 4096), (4096, 64), (8, 65536), (2, 1 << 18)]
    return [(4096, 4096), (65536, 64), (256, 65536), (16, 1 << 20)]


def power_law_offsets(rng, n, segments):
    """``segments + 1`` offsets over n keys whose lengths follow a power law (Pareto, alpha 1.2):
    a few huge segments, most tiny; the last one takes what is left."""
    w = rng.pareto(1.2, segments) + 1e-3
    lens = np.floor(w / w.sum() * n).astype(np.int64)
    lens[-1] += n - lens.sum()
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)


def time_rows(q, sorter, x, repeat, argsort=False, traced=None):
    """clradix on rows, in place (sort) or into an index array (argsort)."""
    rows, row_len = x.shape
    pristine = cl_array.to_device(q, x.ravel())
    a = cl_array.empty_like(pristine)
    codec = clradix.key_codec(x.dtype)
    keys = operand(a, q.context, "keys")
    idx = cl_array.empty(q, x.size, np.uint32)
    out = operand(idx, q.context, "out") if argsort else None

    def prep():
        cl.enqueue_copy(q, a.data, pristine.data).wait()

    def call():
        evt = segmented.sort_rows(sorter, q, codec, keys, rows, row_len, argsort_out=out)
        return evt, None
    t = timing.time_opencl(q, call, repeat, prep)
    got = (idx if argsort else a).get().reshape(x.shape)
    if traced is not None:
        prep()
        trace(traced, q, sorter, lambda: call()[0])
    return t, got


def time_segments(q, sorter, x, offsets, repeat, values=None, traced=None):
    """clradix's Sorter.sort with segments= (device offsets), in place; returns the keys (and
    values) after the last run."""
    pristine = cl_array.to_device(q, x)
    a = cl_array.empty_like(pristine)
    seg = cl_array.to_device(q, offsets)
    v = vp = None
    if values is not None:
        vp = cl_array.to_device(q, values)
        v = cl_array.empty_like(vp)

    def prep():
        cl.enqueue_copy(q, a.data, pristine.data)
        if v is not None:
            cl.enqueue_copy(q, v.data, vp.data)
        q.finish()

    def call():
        return sorter.sort(q, a, values=v, segments=seg), None
    t = timing.time_opencl(q, call, repeat, prep)
    got = a.get(), (v.get() if v is not None else None)
    if traced is not None:
        prep()
        trace(traced, q, sorter, lambda: call()[0])
    return (t,) + got


def time_plain(q, sorter, x, repeat):
    pristine = cl_array.to_device(q, x)
    a = cl_array.empty_like(pristine)
    t = timing.time_opencl(q, lambda: (sorter.sort(q, a), None), repeat,
                           lambda: cl.enqueue_copy(q, a.data, pristine.data).wait())
    return t, a.get()


def trace(out, q, sorter, call):
    """One more run of ``call`` (after its timed runs) with every segmented driver of
    ``sorter`` tracing its commands: their device times."""
    drivers = [d for d in sorter.planner.drivers.values() if hasattr(d, "segments_per_group")]
    for d in drivers:
        d.trace = []
    call().wait()
    parts = [(nm, (e.profile.end - e.profile.start) * 1e-6) for d in drivers for nm, e in d.trace]
    for d in drivers:
        d.trace = None
    out.log("    " + ", ".join(f"{nm} {ms:.3f}" for nm, ms in parts))


def segment_reference(x, offsets, values=None):
    out, vout = x.copy(), None if values is None else values.copy()
    for s, e in zip(offsets[:-1], offsets[1:]):
        o = np.argsort(x[s:e], kind="stable")
        out[s:e] = x[s:e][o]
        if vout is not None:
            vout[s:e] = values[s:e][o]
    return out, vout


def time_torch(x, repeat):
    import torch
    t = torch.as_tensor(x, device="cuda")
    res = timing.time_cuda("torch", lambda: torch.sort(t, dim=-1), repeat)
    got = res.out[0].cpu().numpy()
    res.out = t = None
    torch.cuda.empty_cache()
    return res, got


def time_cupy(x, repeat):
    import cupy as cp
    t = cp.asarray(x)
    res = timing.time_cuda("cupy", lambda: cp.sort(t, axis=-1), repeat)
    got = cp.asnumpy(res.out)
    res.out = t = None
    cp.get_default_memory_pool().free_all_blocks()
    return res, got


def peers(args, out, want, x, case, repeat, cuda, is_cpu):
    """torch.sort(dim=-1) and cupy.sort(axis=-1) on the GPU; numpy.sort(axis=-1) beside a CPU
    device."""
    for peer in cuda:
        fn = time_torch if peer.library == "torch" else time_cupy
        name = "torch.sort(dim=-1)" if peer.library == "torch" else "cupy.sort(axis=-1)"
        res, err = out.attempt(lambda: fn(x, repeat))
        t, got = res or (None, None)
        out.record(peer.device_fields(), name, case, x.dtype, x.size, t, error=err,
                   ok=err is None and np.array_equal(got, want), shape=list(x.shape))
    if is_cpu:
        t = timing.time_host(lambda: np.sort(x, axis=-1), min(repeat, 3))
        out.record(common.host_fields(), "numpy.sort(axis=-1)", case, x.dtype, x.size, t,
                   ok=np.array_equal(t.out, want), shape=list(x.shape))


def variants(args, out, q, where, rng):
    rows, row_len = (256, 4096) if args.quick else (4096, 4096)
    x = rng.standard_normal((rows, row_len), dtype=np.float32)
    want = np.sort(x, axis=-1)
    for spec in args.variants.split(","):
        wg, ipt = (int(v) for v in spec.split("x"))
        case = f"rows {rows}x{row_len} tile {wg}x{ipt}"
        with out.guard(case):
            sorter = clradix.Sorter(q.context, segment_policy=clradix.SegmentPolicy(
                wg_size=wg, items_per_thread=ipt))
            t, got = time_rows(q, sorter, x, args.repeat)
            out.record(where, "clradix rows", case, x.dtype, x.size, t,
                       ok=np.array_equal(got, want), shape=[rows, row_len], tile=[wg, ipt])


def main(args):
    if args.quick:
        args.repeat = 2
    out = common.Run("segmented", args)
    dev, _ = common.select_device(args.device)
    where = common.opencl_device_fields(dev)
    is_cpu = bool(dev.type & cl.device_type.CPU)
    q = common.profiling_queue(dev)
    out.log(f"device {where['device_full']}, {out.meta['date']}")
    cuda = common.cuda_peers(args, out, ("cupy", "torch"))
    rng = np.random.default_rng(17)
    if args.variants:
        variants(args, out, q, where, rng)
        return out.finish()
    sorter = clradix.Sorter(q.context)
    tile = sorter.planner.plan_segments(dev, clradix.key_codec(np.float32), 4)[1]
    out.log(f"segmented policy for float32 keys: {tile}")

    for rows, row_len in row_cases(args.quick):
        case = f"rows {rows}x{row_len}"
        x = rng.standard_normal((rows, row_len), dtype=np.float32)
        want = np.sort(x, axis=-1)
        with out.guard(f"clradix {case}"):
            t, got = time_rows(q, sorter, x, args.repeat, traced=out if args.trace else None)
            out.record(where, "clradix rows", case, x.dtype, x.size, t,
                       ok=np.array_equal(got, want), shape=[rows, row_len],
                       gkeys_s=x.size / (t.median_device_ms * 1e-3) / 1e9)
        peers(args, out, want, x, case, args.repeat, cuda, is_cpu)
        if (rows, row_len) == row_cases(args.quick)[0]:
            with out.guard(f"clradix argsort {case}"):
                t, got = time_rows(q, sorter, x, args.repeat, argsort=True)
                out.record(where, "clradix rows argsort", case, x.dtype, x.size, t,
                           ok=np.array_equal(got, np.argsort(x, axis=-1, kind="stable")),
                           shape=[rows, row_len], note="torch.sort returns these indices too")
            with out.guard(f"clradix pairs {case}"):
                vals = rng.integers(-2 ** 31, 2 ** 31, x.size, dtype=np.int32)
                offs = (np.arange(rows + 1) * row_len).astype(np.int32)
                t, gk, gv = time_segments(q, sorter, x.ravel(), offs, args.repeat, vals)
                wk, wv = segment_reference(x.ravel(), offs, vals)
                out.record(where, "clradix pairs (segments=)", case + " f32+i32", None, x.size,
                           t, ok=np.array_equal(gk, wk) and np.array_equal(gv, wv),
                           shape=[rows, row_len])

    n, nseg = (1 << 18, 1 << 10) if args.quick else (1 << 24, 1 << 16)
    x = rng.standard_normal(n, dtype=np.float32)
    offs = power_law_offsets(rng, n, nseg)
    lens = np.diff(offs)
    case = f"power law {nseg} segments"
    out.log(f"{case}: longest {lens.max()}, median {int(np.median(lens))}, "
            f"{(lens > tile.tile).sum()} longer than a tile ({tile.tile})")
    with out.guard(f"clradix {case}"):
        t, got, _ = time_segments(q, sorter, x, offs, args.repeat,
                                  traced=out if args.trace else None)
        out.record(where, "clradix segments", case, x.dtype, n, t,
                   ok=np.array_equal(got, segment_reference(x, offs)[0]), segments=nseg,
                   longest=int(lens.max()))
    with out.guard("clradix plain sort"):
        t, got = time_plain(q, sorter, x, args.repeat)
        out.record(where, "clradix sort (plain)", f"one sort of {n}", x.dtype, n, t,
                   ok=np.array_equal(got, np.sort(x)), note="the segmented target: within 2x")
    return out.finish()
