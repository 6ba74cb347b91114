"""Top-k on one device (by default the first GPU) beside torch.topk, every result checked.

Cases (the top-k issue's): float32 n = 2^28 with k in {1, 1000, 2^20}; 4096 rows x 32768 with
k = 64; an adversarial 2^28 whose values share their top 20 bits (k = 1000); unsorted variants;
uint32 (clradix only: torch has no uint32 top-k). ``--quick``: 2^20 and 64 rows, 2 repeats.
Correctness: clradix's indices must equal the reference (ties by position, NaN largest); torch's
values must equal the reference values (its tie order is its own). ``--variants IPTxGROUPS``
times Selector variants (float32 and uint32, k = 1000) instead; ``--trace`` logs each case's
host enqueue time and per-kernel device times.
"""

import numpy as np
import pyopencl.array as cl_array

import clradix

from . import common, timing


def add_arguments(ap):
    common.add_common_options(ap, repeat=20)
    common.add_peer_options(ap)
    ap.add_argument("--variants", help="IPTxGROUPS_PER_CU list (16x8,32x4): time float32 and "
                    "uint32 k=1000 at the largest size with each Selector, instead of the cases")
    ap.add_argument("--trace", action="store_true", help="per-kernel times of each case")


def cases(quick):
    big = 20 if quick else 28
    rows, cols = (64, 32768) if quick else (4096, 32768)
    out = [("f32 uniform", (1 << big,), k, True, "normal") for k in (1, 1000, 1 << (big - 8))]
    out.append(("f32 uniform unsorted", (1 << big,), 1000, False, "normal"))
    out.append(("f32 rows", (rows, cols), 64, True, "normal"))
    out.append(("f32 rows unsorted", (rows, cols), 64, False, "normal"))
    out.append(("f32 top 20 bits shared", (1 << big,), 1000, True, "shared20"))
    out.append(("u32 uniform", (1 << big,), 1000, True, "u32"))
    return out


def make(rng, shape, kind):
    n = int(np.prod(shape))
    if kind == "normal":
        return rng.standard_normal(n, dtype=np.float32).reshape(shape)
    if kind == "u32":
        return rng.integers(0, 2 ** 32, n, dtype=np.uint32).reshape(shape)
    # positive floats sharing their top 20 bits: only the low 12 bits differ
    bits = np.uint32(0x3F912 << 12) | rng.integers(0, 1 << 12, n, dtype=np.uint32)
    return bits.view(np.float32).reshape(shape)


def reference(x, k, largest=True):
    """numpy: indices of the k largest per row, ties by position (argpartition + stable sort)."""
    x2 = x.reshape(-1, x.shape[-1])
    okey = clradix.key_codec(x.dtype).order_key(x2.ravel()).reshape(x2.shape)
    if largest:
        okey = ~okey
    part = np.argpartition(okey, k - 1, axis=-1)[:, :k] if k < x2.shape[1] else \
        np.tile(np.arange(x2.shape[1]), (x2.shape[0], 1))
    # the k-th pair is unique only with positions: fix ties at the boundary exactly
    kth = np.take_along_axis(okey, part, -1).max(axis=-1, keepdims=True)
    out = []
    for r in range(x2.shape[0]):
        less = np.flatnonzero(okey[r] < kth[r])
        eq = np.flatnonzero(okey[r] == kth[r])[:k - less.size]
        sel = np.concatenate([less, eq])
        out.append(sel[np.lexsort((sel, okey[r][sel]))])
    return np.array(out)


def time_clradix(queue, sel, a, k, sorted_, repeat):
    def call():
        v, i, evt = sel.topk(queue, a, k, sorted=sorted_)
        return evt, (v, i)
    return timing.time_opencl(queue, call, repeat)


def clradix_correct(x, k, sorted_, want, got_v, got_i):
    """Indices equal the reference's (as sets when unsorted), values the keys at them."""
    x2 = x.reshape(-1, x.shape[-1])
    got_i, got_v = got_i.reshape(-1, k).astype(np.int64), got_v.reshape(-1, k)
    want_cmp = want
    if not sorted_:
        got_i, want_cmp = np.sort(got_i, axis=-1), np.sort(want, axis=-1)
    return (np.array_equal(got_i, want_cmp)
            and (not sorted_ or np.array_equal(got_v.view(np.uint8),
                                               np.take_along_axis(x2, want, -1).view(np.uint8))))


def time_torch(x, k, sorted_, repeat):
    import torch
    t = torch.as_tensor(x, device="cuda")
    res = timing.time_cuda("torch", lambda: torch.topk(t, k, dim=-1, largest=True,
                                                        sorted=sorted_), repeat)
    values = res.out[0].cpu().numpy()
    res.out = t = None
    torch.cuda.empty_cache()
    return res, values


def torch_correct(x, k, want, values):
    x2 = x.reshape(-1, x.shape[-1])
    return np.array_equal(np.sort(values.reshape(-1, k), axis=-1).view(np.uint8),
                          np.sort(np.take_along_axis(x2, want, -1), axis=-1).view(np.uint8))


def trace(out, q, sel, a, k, sorted_):
    """One timed run (after a warm-up), with its kernels' device times."""
    t = timing.time_opencl(q, lambda: (sel.topk(q, a, k, sorted=sorted_)[2], None), 1,
                           prep=lambda: setattr(sel, "trace", []))
    parts = [(nm, (e.profile.end - e.profile.start) * 1e-6) for nm, e in sel.trace]
    sel.trace = None
    out.log(f"    wall {t.wall_ms[0]:.3f} ms, device {t.device_ms[0]:.3f} ms; "
            + ", ".join(f"{nm} {ms:.3f}" for nm, ms in parts))


def variants(args, out, q, where, rng):
    n = 1 << (20 if args.quick else 28)
    for kind in ("normal", "u32"):
        x = make(rng, (n,), kind)
        a = cl_array.to_device(q, x)
        want = reference(x, 1000)
        for spec in args.variants.split(","):
            ipt, gpc = (int(v) for v in spec.split("x"))
            case = f"{kind} k=1000 ipt {ipt} groups/CU {gpc}"
            with out.guard(case):
                sel = clradix.Selector(q.context, items_per_thread=ipt, groups_per_cu=gpc)
                t = time_clradix(q, sel, a, 1000, True, args.repeat)
                v, i = (o.get() for o in t.out)
                out.record(where, "clradix", case, x.dtype, n, t,
                           ok=clradix_correct(x, 1000, True, want, v, i), k=1000)
                trace(out, q, sel, a, 1000, True)


def main(args):
    if args.quick:
        args.repeat = 2
    out = common.Run("topk", args)
    dev, _ = common.select_device(args.device)
    where = common.opencl_device_fields(dev)
    q = common.profiling_queue(dev)
    out.log(f"device {where['device_full']}, {out.meta['date']}")
    torch_peer = common.cuda_peers(args, out, ("torch",))
    rng = np.random.default_rng(5)
    if args.variants:
        variants(args, out, q, where, rng)
        return out.finish()
    sel = clradix.Selector(q.context)
    for name, shape, k, sorted_, kind in cases(args.quick):
        case = f"{name} {'x'.join(map(str, shape))} k={k}"
        x = make(rng, shape, kind)
        with out.guard(f"clradix {case}"):
            a = cl_array.to_device(q, x)
            want = reference(x, k)
            t = time_clradix(q, sel, a, k, sorted_, args.repeat)
            v, i = (o.get() for o in t.out)
            t.out = None
            out.record(where, "clradix", case, x.dtype, x.size, t,
                       ok=clradix_correct(x, k, sorted_, want, v, i), k=k, shape=list(shape),
                       sorted=sorted_, gbs_one_read=x.nbytes / (t.median_device_ms * 1e-3) / 1e9)
            if args.trace:
                trace(out, q, sel, a, k, sorted_)
            del a
            if torch_peer and x.dtype != np.uint32:
                res, err = out.attempt(lambda: time_torch(x, k, sorted_, args.repeat))
                tt, values = res or (None, None)
                out.record(torch_peer[0].device_fields(), "torch.topk", case, x.dtype, x.size,
                           tt, error=err,
                           ok=err is None and torch_correct(x, k, want, values), k=k,
                           shape=list(shape), sorted=sorted_)
    return out.finish()
