"""Top-k on one device beside torch.topk (same run, same data), with every result checked.

    python -m benchmarks.gpu_topk [--device NAME] [--repeat 20] [--json out.json] [--quick]

Cases (the top-k issue's): float32 n = 2^28 with k in {1, 1000, 2^20}; 4096 rows x 32768 with
k = 64; an adversarial 2^28 whose values share their top 20 bits (k = 1000); unsorted variants.
clradix time: OpenCL profiling, from a marker before the call to the end of its last command.
torch time: CUDA events around torch.topk. Both report the median of ``--repeat`` runs after a
warm-up. Correctness: clradix's indices must equal the reference (ties by position, NaN largest);
torch's values must equal the reference values (its tie order is its own).
"""

import argparse
import datetime
import json
import statistics
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clradix
from clradix.device import DeviceProfile, all_devices, can_build


def cases(quick):
    big = 22 if quick else 28
    rows, cols = (256, 32768) if quick else (4096, 32768)
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
    samples = []
    for rep in range(repeat + 1):
        m0 = cl.enqueue_marker(queue)
        m0.wait()
        v, i, evt = sel.topk(queue, a, k, sorted=sorted_)
        evt.wait()
        if rep:
            samples.append((evt.profile.end - m0.profile.end) * 1e-6)
    return statistics.median(samples), v, i


def time_torch(x, k, sorted_, repeat):
    import torch
    t = torch.as_tensor(x, device="cuda")
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for rep in range(repeat + 1):
        torch.cuda.synchronize()
        s.record()
        v, i = torch.topk(t, k, dim=-1, largest=True, sorted=sorted_)
        e.record()
        torch.cuda.synchronize()
        if rep:
            samples.append(s.elapsed_time(e))
    out = v.cpu().numpy(), i.cpu().numpy()
    del t
    torch.cuda.empty_cache()
    return statistics.median(samples), out


def variants(q, ctx, args, rng):
    n = 1 << (22 if args.quick else 28)
    for kind in ("normal", "u32"):
        x = make(rng, (n,), kind)
        a = cl_array.to_device(q, x)
        want = reference(x, 1000)
        for spec in args.variants.split(","):
            ipt, gpc = (int(v) for v in spec.split("x"))
            sel = clradix.Selector(ctx, items_per_thread=ipt, groups_per_cu=gpc)
            ms, v, i = time_clradix(q, sel, a, 1000, True, args.repeat)
            ok = np.array_equal(i.get(), want[0])
            sel.trace = []
            sel.topk(q, a, 1000)[2].wait()
            parts = ", ".join(f"{nm} {(e.profile.end - e.profile.start) * 1e-6:.3f}"
                              for nm, e in sel.trace[:3])
            print(f"{kind} ipt {ipt} groups/CU {gpc}: {ms:.3f} ms {'ok' if ok else 'WRONG'}; {parts}",
                  flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="NVIDIA")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--variants", help="IPTxGROUPS_PER_CU list (16x8,32x4): time f32 2^28 k=1000 "
                    "with each and stop")
    ap.add_argument("--trace", action="store_true", help="per-kernel times of each case")
    args = ap.parse_args()
    dev = next(d for d in all_devices() if can_build(d) and args.device.lower() in
               f"{d.platform.name} {d.name}".lower())
    profile = DeviceProfile.from_device(dev)
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    sel = clradix.Selector(ctx)
    torch_ok = False
    if not args.no_torch:
        try:
            import torch
            torch_ok = torch.cuda.is_available()
        except ImportError:
            pass
    rng = np.random.default_rng(5)
    if args.variants:
        return variants(q, ctx, args, rng)
    print(f"# {profile.describe()}, driver {profile.driver_version}, {datetime.date.today()}")
    print("| case | shape | k | sorted | clradix ms | torch.topk ms | clradix / torch "
          "| GB/s (one read) |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |")
    rows = []
    for name, shape, k, sorted_, kind in cases(args.quick):
        x = make(rng, shape, kind)
        a = cl_array.to_device(q, x)
        t0 = time.perf_counter()
        ms, v, i = time_clradix(q, sel, a, k, sorted_, args.repeat)
        want = reference(x, k)
        got_i = i.get().reshape(-1, k)
        got_v = v.get().reshape(-1, k)
        if not sorted_:
            got_i = np.sort(got_i, axis=-1)
            want_cmp = np.sort(want, axis=-1)
        else:
            want_cmp = want
        x2 = x.reshape(-1, x.shape[-1])
        ok = np.array_equal(got_i, want_cmp) and np.array_equal(
            np.take_along_axis(x2, got_i.astype(np.int64), -1).view(np.uint8),
            np.take_along_axis(x2, want_cmp, -1).view(np.uint8)) and (
            not sorted_ or np.array_equal(got_v.view(np.uint8),
                                          np.take_along_axis(x2, want, -1).view(np.uint8)))
        tms = None
        tok = None
        if torch_ok and x.dtype != np.uint32:
            tms, (tv, ti) = time_torch(x, k, sorted_, args.repeat)
            tv = np.sort(tv.reshape(-1, k), axis=-1)
            tok = np.array_equal(tv.view(np.uint8),
                                 np.sort(np.take_along_axis(x2, want, -1), axis=-1).view(np.uint8))
        if args.trace and name == "f32 uniform" and k == 1:
            import cProfile
            import pstats
            prof = cProfile.Profile()
            prof.enable()
            sel.topk(q, a, k, sorted=sorted_)
            prof.disable()
            q.finish()
            pstats.Stats(prof).sort_stats("tottime").print_stats(3)
        if args.trace:
            sel.trace = []
            t_host = time.perf_counter()
            evt = sel.topk(q, a, k, sorted=sorted_)[2]
            t_host = (time.perf_counter() - t_host) * 1e3
            evt.wait()
            parts = [(nm, (e.profile.end - e.profile.start) * 1e-6) for nm, e in sel.trace]
            sel.trace = None
            print(f"    enqueue {t_host:.3f} ms on the host; "
                  + ", ".join(f"{nm} {t:.3f}" for nm, t in parts), flush=True)
        del a, v, i
        gbs = x.nbytes / (ms * 1e-3) / 1e9
        ratio = f"{ms / tms:.2f}x" if tms else "-"
        print(f"| {name} | {'x'.join(map(str, shape))} | {k} | {sorted_} | {ms:.3f} | "
              f"{tms if tms is None else f'{tms:.3f}'} | {ratio} | {gbs:.0f} |"
              + ("" if ok else " **clradix WRONG**") + ("" if tok in (None, True) else " torch differs"),
              flush=True)
        rows.append(dict(case=name, shape=list(shape), k=k, sorted=sorted_, clradix_ms=ms,
                         torch_ms=tms, correct=bool(ok), torch_values_equal=tok,
                         check_s=time.perf_counter() - t0))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=profile.describe(), driver=profile.driver_version,
                           date=str(datetime.date.today()), rows=rows), f, indent=1)
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
