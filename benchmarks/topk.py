"""Top-k on one device (by default the first GPU) beside torch.topk, every result checked.

Cases (the top-k issue's targets): float32 n = 2^28 with k in {1, 1000, 2^20}, normal and
uniform(0, 1) data; keys sharing their top 20 bits (clustered: the adaptive re-read); 4096 rows x
32768 with k = 64 and 65536 rows x 1024 with k = 8 (one launch); 1-D 2^12 to 2^22 with k = 10,
100 and 1000 and 2^24 with k = 100, where one call + wait (wall_ms) is the figure (new output
arrays each call, as ``Selector.topk`` makes them; ``--reuse-outputs`` also times calls that
write into ``values_out`` / ``indices_out`` made once); unsorted and uint32 variants (torch has no
uint32 top-k). ``--quick``: 2^20 and smaller shapes, 2 repeats (runs on a CPU device).
Each clradix row also reports ``x_read``: its device time over that of one read of the input
(pyopencl's sum of the same array on the same queue: the one-read floor), and for single rows
``model_reads``: the bytes the passes read by the algorithm's model (pass by pass: the input, or
the candidates of the pass before) over the input's bytes.
Correctness: clradix's indices must equal the reference (ties by position, NaN largest); torch's
values must equal the reference values (its tie order is its own). CuPy has no top-k (CUB's
DeviceTopK is not exposed), so torch is the peer. ``--policy single_max=0,cand_cap=N`` sets
TopkPolicy fields of the Selector (any field); ``--alt "single_max=0;groups_per_cu=8"`` also
times each case with Selectors of those policies; ``--only TEXT`` runs the matching cases;
``--variants IPTxGROUPS`` times Selector variants
(float32 and uint32, k = 1000) instead; ``--trace`` logs each case's host enqueue time and
per-kernel device times.
"""

import numpy as np
import pyopencl.array as cl_array

import clradix
from clradix.core.sizes import output_index_dtype
from clradix.policies.topk import DIGIT_BITS

from . import common, timing
from .impls import topk_reference as reference


def add_arguments(ap):
    common.add_common_options(ap, repeat=20)
    common.add_peer_options(ap)
    ap.add_argument("--variants", help="IPTxGROUPS_PER_CU list (16x8,32x4): time float32 and "
                    "uint32 k=1000 at the largest size with each Selector, instead of the cases")
    ap.add_argument("--policy", default="", help="NAME=VALUE,... TopkPolicy fields for the "
                    "Selector (single_max, cand_cap, items_per_thread, groups_per_cu, ...)")
    ap.add_argument("--alt", default="", help="POLICY;POLICY...: also time each case with "
                    "Selectors of these policies (each like --policy), recorded as "
                    "clradix[POLICY]")
    ap.add_argument("--only", help="run only the cases whose name contains this text "
                    "(or one of these, comma-separated)")
    ap.add_argument("--trace", action="store_true", help="per-kernel times of each case")
    ap.add_argument("--reuse-outputs", action="store_true", help="also time each case with "
                    "values_out= and indices_out= arrays made once (a code that calls top-k in "
                    "a loop), recorded as clradix[reused outputs]")


def cases(quick):
    """(name, shape, k, sorted, data kind, figure) of each case; figure: "device" or "wall"."""
    big = 20 if quick else 28
    out = []
    for kind in ("normal", "uniform"):
        out += [(f"f32 {kind}", (1 << big,), k, True, kind, "device")
                for k in (1, 1000, 1 << (big - 8))]
    out.append(("f32 top 20 bits shared", (1 << big,), 1000, True, "shared20", "device"))
    out.append(("f32 top 20 bits shared", (1 << big,), 1 << (big - 8), True, "shared20", "device"))
    out.append(("f32 normal unsorted", (1 << big,), 1000, False, "normal", "device"))
    out.append(("u32 uniform", (1 << big,), 1000, True, "u32", "device"))
    rows = [((64, 32768), 64), ((1024, 1024), 8)] if quick else \
        [((4096, 32768), 64), ((65536, 1024), 8)]
    for shape, k in rows:
        out.append(("f32 rows", shape, k, True, "normal", "device"))
    out.append(("f32 rows unsorted", rows[0][0], rows[0][1], False, "normal", "device"))
    # one row per call, wall time of the call and its wait: the sizes a retrieval code calls
    # with (2^12 to 2^22, k up to 1000) and one larger
    for e in ((12, 16, 20) if quick else (12, 14, 16, 18, 20, 22, 24)):
        for k in ((100,) if quick or e == 24 else (10, 100, 1000)):
            out.append(("f32 1-D call+wait", (1 << e,), k, True, "normal", "wall"))
    return out


def make(rng, shape, kind):
    n = int(np.prod(shape))
    if kind == "normal":
        return rng.standard_normal(n, dtype=np.float32).reshape(shape)
    if kind == "uniform":
        return rng.random(n, dtype=np.float32).reshape(shape)
    if kind == "u32":
        return rng.integers(0, 2 ** 32, n, dtype=np.uint32).reshape(shape)
    # positive floats sharing their top 20 bits: only the low 12 bits differ
    bits = np.uint32(0x3F912 << 12) | rng.integers(0, 1 << 12, n, dtype=np.uint32)
    return bits.view(np.float32).reshape(shape)


def model_reads(x, k, cap, key_bits=32, largest=True, sample=0, rank=0):
    """Bytes the multi-group passes read for one row ``x``, over its bytes, by the algorithm's
    model: pass 0 reads the row; pass p reads the candidates of pass p - 1 (keys and 4-byte
    positions) when pass p - 1 wrote them (its pivot bucket fit ``cap``), else the row again;
    the passes end once a pivot bucket is exactly what is still needed (position digits, which
    read few candidates, are left out). With a threshold pass (``sample`` keys, the order key of
    ``rank`` among them): one read of the row, then pass 1 reads the keys at or below the
    threshold when they are at least k and at most ``cap``; else the passes above follow."""
    okey = clradix.key_codec(x.dtype).order_key(x.ravel())
    if largest:
        okey = ~okey
    okey = okey.astype(np.uint64)
    n, kb = okey.size, x.dtype.itemsize
    total, need, alive, wrote = n * kb, k, okey, False
    if sample:
        at = (np.arange(sample, dtype=np.uint64) * np.uint64(n) + np.uint64(n // 2)) \
            // np.uint64(sample)
        passed = okey[okey <= np.sort(okey[at])[rank - 1]]
        if k <= passed.size <= cap:
            alive, wrote = passed, True
        else:
            total += n * kb   # the threshold pass's read, then the passes as without it
    for j in range(-(-key_bits // DIGIT_BITS)):
        shift = max(key_bits - DIGIT_BITS * (j + 1), 0)
        d = ((alive >> np.uint64(shift)) & np.uint64((1 << DIGIT_BITS) - 1)).astype(np.int64)
        h = np.bincount(d, minlength=1 << DIGIT_BITS)
        below = np.cumsum(h) - h
        piv = int(np.flatnonzero((below < need) & (need <= below + h))[0])
        # pass j + 1 classifies by digit j: it reads the candidates of pass j, or the row
        total += alive.size * (kb + 4) if wrote else n * kb
        need -= int(below[piv])
        alive = alive[d == piv]
        if alive.size == need:
            break
        wrote = alive.size <= cap
    return total / (n * kb)


def time_clradix(queue, sel, a, k, sorted_, repeat, outs=None):
    """``outs``: (values, indices) arrays every call writes instead of new ones."""
    vo, io = outs or (None, None)

    def call():
        v, i, evt = sel.topk(queue, a, k, sorted=sorted_, values_out=vo, indices_out=io)
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


def one_read_ms(queue, a, repeat):
    """Device time of one read of ``a``: a sum reduction (pyopencl's ReductionKernel)."""
    from pyopencl.reduction import ReductionKernel
    from pyopencl.tools import dtype_to_ctype
    knl = ReductionKernel(queue.context, np.float32, neutral="0", reduce_expr="a+b",
                          map_expr="(float)x[i]",
                          arguments=f"const __global {dtype_to_ctype(a.dtype)} *x")
    flat = a.reshape(-1)
    t = timing.time_opencl(queue, lambda: knl(flat, queue=queue, return_event=True)[::-1],
                           max(repeat // 2, 1))
    return t.median_device_ms


def parse_policy(text):
    """{field: int} from "name=value,..." (TopkPolicy fields)."""
    fields = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        fields[name.strip()] = int(value)
    return fields


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
    policy = parse_policy(args.policy)
    out.meta["policy"] = policy
    selectors = [("clradix", clradix.Selector(q.context))]
    selectors[0][1].overrides.update(policy)
    for alt in filter(None, args.alt.split(";")):
        selectors.append((f"clradix[{alt}]", clradix.Selector(q.context)))
        selectors[-1][1].overrides.update(policy, **parse_policy(alt))
    if args.reuse_outputs:
        selectors.append(("clradix[reused outputs]", selectors[0][1]))
    for name, shape, k, sorted_, kind, figure in cases(args.quick):
        case = f"{name} {'x'.join(map(str, shape))} k={k}"
        if args.only and not any(t in case for t in args.only.split(",")):
            continue
        x = make(rng, shape, kind)
        a, models = None, {}
        with out.guard(f"reference {case}"):
            want = reference(x, k)
            a = cl_array.to_device(q, x)
            floor = one_read_ms(q, a, args.repeat)
        if a is None:
            continue
        for impl, sel in selectors:
            with out.guard(f"{impl} {case}"):
                outs = None
                if impl == "clradix[reused outputs]":
                    outs = (cl_array.empty(q, shape[:-1] + (k,), x.dtype),
                            cl_array.empty(q, shape[:-1] + (k,), output_index_dtype(shape[-1])))
                t = time_clradix(q, sel, a, k, sorted_, args.repeat, outs)
                v, i = (o.get() for o in t.out)
                t.out = None
                plan = sel.planner.plan_topk(dev, clradix.key_codec(x.dtype),
                                             *((1,) + shape)[-2:], k, sorted_)
                extra = dict(figure=figure, one_read_ms=floor,
                             x_read=t.median_device_ms / floor,
                             path="single" if plan.single else f"passes ({plan.route}"
                             + (f", threshold of {plan.sample})" if plan.sample else ")"))
                if len(shape) == 1 and not plan.single:
                    mkey = (plan.cap, plan.sample, plan.sample_rank)
                    if mkey not in models:
                        models[mkey] = model_reads(x, k, plan.cap, x.dtype.itemsize * 8,
                                                   sample=plan.sample, rank=plan.sample_rank)
                    extra["model_reads"] = models[mkey]
                extra["note"] = " ".join(f"{n} {v:.2f}" if isinstance(v, float) else f"{n} {v}"
                                         for n, v in extra.items() if n not in ("figure",
                                                                                "one_read_ms"))
                out.record(where, impl, case, x.dtype, x.size, t,
                           ok=clradix_correct(x, k, sorted_, want, v, i), k=k,
                           shape=list(shape), sorted=sorted_, **extra)
                if args.trace:
                    trace(out, q, sel, a, k, sorted_)
        del a
        if torch_peer and x.dtype != np.uint32:
            res, err = out.attempt(lambda: time_torch(x, k, sorted_, args.repeat))
            tt, values = res or (None, None)
            out.record(torch_peer[0].device_fields(), "torch.topk", case, x.dtype, x.size,
                       tt, error=err,
                       ok=err is None and torch_correct(x, k, want, values), k=k,
                       shape=list(shape), sorted=sorted_, figure=figure)
    return out.finish()
