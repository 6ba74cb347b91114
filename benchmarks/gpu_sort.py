"""Check and time clradix's sorts on a GPU beside CUB (through CuPy) and torch, in one run.

    python benchmarks/gpu_sort.py [--check] [--variants 256x16,512x8] [--sweep] [--out DIR]

--check     correctness of every algorithm and ranking back-end on the GPU against numpy
--variants  onesweep (wg x items per thread) policies to time at 2^28 u32 keys
--sweep     GKeys/s from 2^10 to 2^log2n (u32 keys) for clradix's planner policy and the peers
--only T    just dtype T (planner and peers) at 2^log2n
Timings are device times: OpenCL profiling events (clradix), CUDA events (CuPy, torch); median of
--repeat runs after a warm-up; every timed clradix output is compared with CuPy's sort.

Writes gpu_sort.json and gpu_sort.log into --out, also when a step fails. The exit status is 1
when anything failed (a check-suite mismatch, a WRONG timed output, an exception: its traceback is
logged, and each failure is listed under "failures" in the JSON and at the end of the log).
"""

import argparse
import datetime
import json
import os
import sys
import traceback

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import clradix  # noqa: E402
from clradix.device import DeviceProfile  # noqa: E402
from clradix.keys import parse_dtype  # noqa: E402

COPY_TBPS = 4.28  # measured device copy bandwidth of the H200 (bytes read + written)


def find_gpu():
    for p in cl.get_platforms():
        for d in p.get_devices():
            if d.type & cl.device_type.GPU:
                return d
    raise SystemExit("no OpenCL GPU found")


def rand_keys(rng, dtype, n):
    d = np.dtype(dtype)
    if d.kind == "f":
        return rng.standard_normal(n, dtype=np.float32).astype(d)
    return rng.integers(0, 256, n * d.itemsize, dtype=np.uint8).view(d)


def cl_time(queue, fn, repeat):
    """Median device ms of fn() (which returns the last event), after one warm-up run."""
    times = []
    for rep in range(repeat + 1):
        m0 = cl.enqueue_marker(queue)
        evt = fn()
        evt.wait()
        if rep:
            times.append((evt.profile.end - m0.profile.end) * 1e-6)
    return float(np.median(times)), times


def cuda_time(fn, repeat, prep=None):
    import cupy as cp
    times = []
    for rep in range(repeat + 1):
        if prep:
            prep()
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        fn()
        e.record()
        e.synchronize()
        if rep:
            times.append(cp.cuda.get_elapsed_time(s, e))
    return float(np.median(times)), times


def _brief(exc):
    """One line for the failure list (the log has the whole traceback)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}"


# the check suite's sizes (module constants, so that a short run can shrink them)
CHECK_SIZES = [1, 2, 1000, 4097, 100_003]
CHECK_LARGE = [3_000_001]  # not for the forced fallback (slow)
CHECK_SINGLE_WG_SIZES = [1, 2, 255, 1000, 2047, 2048]
CHECK_DTYPES = (np.uint32, np.float32, np.uint64, np.int16, np.float64, np.uint8)


def check_suite(ctx, queue, rng, log, failed=None):
    """Every algorithm / ranking back-end on this GPU against numpy. Returns the number of
    failures: each wrong result, and each configuration that raised (its traceback is logged;
    the other configurations still run). ``failed``, a list, gets a line for each."""
    failed = [] if failed is None else failed
    configs = {
        "planner": {},
        "onesweep-local": dict(algorithm="onesweep", ranking="local"),
        "onesweep-ptx-small-ring": dict(algorithm="onesweep", ranking="ptx", ring_slots=48,
                                        lookback=16, wg_size=128,
                                        items_per_thread=4),
        "onesweep-forced-fallback": dict(algorithm="onesweep", force_fallback=True, wg_size=128,
                                         items_per_thread=4),
        "onesweep-4bit": dict(algorithm="onesweep", radix_bits=4),
        "onesweep-2bit": dict(algorithm="onesweep", radix_bits=2),
        "rts": dict(algorithm="reduce_then_scan"),
        "single_wg": dict(algorithm="single_wg"),
    }
    fails = 0
    for name, over in configs.items():
        sizes = CHECK_SIZES + ([] if "fallback" in name else CHECK_LARGE)
        if name == "single_wg":
            sizes = CHECK_SINGLE_WG_SIZES
        at = "setup"
        try:
            sorter = clradix.Sorter(ctx, **over)
            for dtype in CHECK_DTYPES:
                for n in sizes:
                    keys = rand_keys(rng, dtype, n)
                    if np.dtype(dtype).kind == "f" and n > 10:
                        keys[::97] = np.nan
                        keys[5::101] = -0.0
                    for desc in (False, True):
                        at = f"{np.dtype(dtype)} n={n} desc={desc}"
                        d = cl_array.to_device(queue, keys)
                        v = cl_array.to_device(queue, np.arange(n, dtype=np.uint32))
                        sorter.sort(queue, d, values=v, descending=desc).wait()
                        ok = clradix.key_codec(dtype).order_key(keys)
                        order = np.argsort(~ok if desc else ok, kind="stable")
                        good = (np.array_equal(d.get().view(np.uint8),
                                               keys[order].view(np.uint8))
                                and np.array_equal(v.get(), order))
                        idx, evt = sorter.argsort(queue, cl_array.to_device(queue, keys),
                                                  descending=desc)
                        evt.wait()
                        good = good and np.array_equal(idx.get(), order)
                        if not good:
                            fails += 1
                            failed.append(f"{name} {at}: wrong")
                            log(f"CHECK FAIL {name} {at}")
        except Exception as exc:
            fails += 1
            failed.append(f"{name} {at}: {_brief(exc)}")
            log(f"CHECK FAIL {name}: crashed at {at}:\n{traceback.format_exc()}")
            continue
        log(f"check {name}: done")
    log(f"check suite: {fails} failures")
    return fails


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--variants", default="")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--types", action="store_true", help="f32, u64, u32+u32 and argsort at 2^28")
    ap.add_argument("--only", help="time just this dtype (planner and peers) at 2^log2n")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--ptxinfo", action="store_true", help="print registers / local memory")
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--breakdown-sizes", default="", help="log2 sizes for per-kernel timelines")
    ap.add_argument("--pool", action="store_true",
                    help="--sweep also without the default memory pool (ImmediateAllocator): "
                         "what reusing temporaries saves")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args(argv)
    lines = []
    results = []
    failures = []  # one line per failure: a wrong result or an exception
    state = dict(device=None, check_failures=None, check_failed=[])

    def log(msg):
        print(msg, flush=True)
        lines.append(msg)

    def fail(what, exc_info=True):
        """Record a failure; inside an ``except`` block, log the traceback with it."""
        failures.append(what)
        log(f"FAILED: {what}" + (":\n" + traceback.format_exc() if exc_info else ""))

    try:
        run(args, log, fail, results, state)
    except Exception as exc:
        fail(f"crashed: {_brief(exc)}")
    except BaseException as exc:  # SystemExit (no GPU), KeyboardInterrupt: recorded, then raised
        fail(f"stopped by {_brief(exc)}", exc_info=False)
        raise
    finally:
        if failures:
            log(f"{len(failures)} failure(s):\n" + "\n".join(f"  {f}" for f in failures))
        else:
            log("no failures")
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "gpu_sort.json"), "w") as f:
            json.dump(dict(device=state["device"], date=datetime.date.today().isoformat(),
                           ok=not failures, failures=failures,
                           check_failures=state["check_failures"],
                           check_failed=state["check_failed"], results=results), f, indent=1)
        with open(os.path.join(args.out, "gpu_sort.log"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if failures else 0


def run(args, log, fail, results, state):
    """The steps ``args`` asks for. A wrong result or a failed step calls ``fail`` (and the run
    goes on where the next step does not depend on it); an exception it does not catch ends it."""
    dev = find_gpu()
    prof = DeviceProfile.from_device(dev)
    state["device"] = prof.describe()
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    rng = np.random.default_rng(2026)
    log(f"device {prof.describe()}, {datetime.date.today().isoformat()}")
    if args.check:
        fails = state["check_failures"] = check_suite(ctx, queue, rng, log,
                                                      state["check_failed"])
        if fails:
            fail(f"check suite: {fails} failures", exc_info=False)

    import cupy as cp
    import torch
    log(f"peers: cupy {cp.__version__} (CUB), torch {torch.__version__}")
    n = 1 << args.log2n

    def bench(label, dtype, sorter_kwargs, values=False, argsort=False, nn=None):
        nn = nn or n
        keys = rand_keys(rng, dtype, nn)
        d_src = cl_array.to_device(queue, keys)
        work = cl_array.empty_like(d_src)
        vals = cl_array.to_device(queue, np.arange(nn, dtype=np.uint32)) if values else None
        sorter = clradix.Sorter(ctx, **sorter_kwargs)
        d_vals0 = vals.copy() if vals is not None else None
        # time: the copies are outside the timed interval (marker after them)
        times = []
        idx = None
        for rep in range(args.repeat + 1):
            if argsort:
                idx = None  # release the previous run's indices first
                m0 = cl.enqueue_marker(queue)
                idx, evt = sorter.argsort(queue, d_src)
            else:
                cl.enqueue_copy(queue, work.data, d_src.data)
                if vals is not None:
                    cl.enqueue_copy(queue, vals.data, d_vals0.data)
                m0 = cl.enqueue_marker(queue)
                evt = sorter.sort(queue, work, values=vals)
            evt.wait()
            if rep:
                times.append((evt.profile.end - m0.profile.end) * 1e-6)
        ms = float(np.median(times))
        # correctness of the last timed output against CuPy
        x = cp.asarray(keys)
        if argsort or values:
            ref = cp.argsort(x, kind="stable").get().astype(np.uint32)
        if argsort:
            ok = np.array_equal(idx.get(), ref)
        else:
            ref_k = cp.sort(x).get()
            ok = np.array_equal(work.get().view(np.uint8), ref_k.view(np.uint8))
            if values:
                ok = ok and np.array_equal(vals.get(), ref)
        policy = sorter.plan(dev, dtype, nn)
        kb = np.dtype(dtype).itemsize
        vb = 4 if (values or argsort) else 0
        passes = -(-kb * 8 // policy.radix_bits)
        moved = nn * (kb + passes * 2 * (kb + vb))
        row = dict(label=label, impl="clradix", dtype=str(np.dtype(dtype)), n=nn, ms=ms,
                   gkeys=nn / ms / 1e6, ok=bool(ok), policy=str(policy),
                   pct_copy_bw=100 * moved / (ms * 1e-3) / (COPY_TBPS * 1e12), samples=times)
        results.append(row)
        log(f"{label:34s} {str(np.dtype(dtype)):8s} 2^{nn.bit_length() - 1} clradix "
            f"{ms:8.3f} ms {row['gkeys']:6.2f} GK/s {row['pct_copy_bw']:5.1f}% bw "
            f"{'OK' if ok else 'WRONG'}  {policy.algorithm}/{policy.radix_bits}b/"
            f"{policy.wg_size}x{policy.items_per_thread}/{policy.ranking}")
        if not ok:
            fail(f"{label} {np.dtype(dtype)} 2^{nn.bit_length() - 1}: WRONG output", exc_info=False)
        return row

    def peers(dtype, nn=None, values=False):
        nn = nn or n
        keys = rand_keys(rng, dtype, nn)
        x = cp.asarray(keys)
        y = cp.empty_like(x)

        def prep():
            y[...] = x
        if values:
            ms, _ = cuda_time(lambda: cp.argsort(y, kind="stable"), args.repeat, prep)
            name = "cupy.argsort (CUB pairs)"
        else:
            ms, _ = cuda_time(lambda: y.sort(), args.repeat, prep)
            name = "cupy ndarray.sort (CUB)"
        results.append(dict(impl=name, dtype=str(np.dtype(dtype)), n=nn, ms=ms))
        log(f"{'':34s} {str(np.dtype(dtype)):8s} 2^{nn.bit_length() - 1} {name:24s} {ms:8.3f} ms "
            f"{nn / ms / 1e6:6.2f} GK/s")
        t = torch.as_tensor(keys.view(np.int64) if np.dtype(dtype) == np.uint64 else
                            (keys.view(np.int32) if np.dtype(dtype) == np.uint32 else keys),
                            device="cuda")
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        tt = []
        for rep in range(args.repeat + 1):
            s.record()
            torch.sort(t, stable=True)
            e.record()
            torch.cuda.synchronize()
            if rep:
                tt.append(s.elapsed_time(e))
        ms = float(np.median(tt))
        results.append(dict(impl="torch.sort (values+indices)", dtype=str(np.dtype(dtype)), n=nn,
                            ms=ms))
        log(f"{'':34s} {str(np.dtype(dtype)):8s} 2^{nn.bit_length() - 1} "
            f"{'torch.sort (+indices)':24s} {ms:8.3f} ms {nn / ms / 1e6:6.2f} GK/s")
        x = y = t = None  # noqa: F841 (release the device memory before the next size)
        cp.get_default_memory_pool().free_all_blocks()
        torch.cuda.empty_cache()

    def breakdown(dtype, kwargs, nn=None):
        keys = rand_keys(rng, dtype, nn or n)
        d = cl_array.to_device(queue, keys)
        sorter = clradix.Sorter(ctx, **kwargs)
        sorter.sort(queue, d).wait()
        d.set(keys)
        for algo in sorter._kernels.values():
            algo.trace = []
        sorter.sort(queue, d).wait()
        for algo in sorter._kernels.values():
            t0 = algo.trace[0][1].profile.queued if algo.trace else 0
            prev_end = None
            for name, evt in algo.trace:
                ms = (evt.profile.end - evt.profile.start) * 1e-6
                gap = (evt.profile.start - prev_end) * 1e-3 if prev_end else 0.0
                log(f"    {name:16s} {ms:8.3f} ms  (starts {(evt.profile.start - t0) * 1e-3:8.1f} us "
                    f"after the first was queued, {gap:6.1f} us after the previous kernel ended)")
                prev_end = evt.profile.end
            algo.trace = None

    def ptxinfo(label, kwargs):
        """Registers, spills and stack of os_pass for this policy (ptxas's report): the program
        the Sorter builds for 2^log2n uint32 keys, rebuilt from the same source and options."""
        from clradix.keys import key_codec
        from clradix.render import render
        sorter = clradix.Sorter(ctx, **kwargs)
        _, algo = sorter._prepare(dev, key_codec(np.uint32), None, "uint", np.uint32, n)
        try:
            prg = cl.Program(ctx, render(algo.template, **algo.render_params)).build(
                options=algo.build_opts + ["-cl-nv-verbose"])
            text = prg.get_build_info(dev, cl.program_build_info.LOG)
            lines_ = [ln.strip() for ln in text.splitlines()]
            at = [i for i, ln in enumerate(lines_) if "os_pass" in ln]
            info = " | ".join(ln for i in at for ln in lines_[i + 1:i + 3]
                              if "stack" in ln or "Used" in ln)
            log(f"ptxas {label}: {info}")
        except Exception as exc:
            fail(f"ptxas {label}: {_brief(exc)}")

    if args.only:
        dt = parse_dtype(args.only)
        peers(dt)
        bench("planner", dt, {})
        return
    peers(np.uint32)
    bench("planner", np.uint32, {})
    breakdown(np.uint32, {})
    if args.breakdown_sizes:
        for lg in map(int, args.breakdown_sizes.split(",")):
            log(f"breakdown at 2^{lg}:")
            breakdown(np.uint32, {}, 1 << lg)
    if args.ptxinfo:
        ptxinfo("planner", {})
    for v in filter(None, args.variants.split(",")):
        parts = v.split("x") if ":" not in v else v.split(":")[0].split("x") + v.split(":")[1:]
        kw = dict(algorithm="onesweep", wg_size=int(parts[0]), items_per_thread=int(parts[1]))
        for extra in parts[2:]:  # e.g. "ring_slots=65536", "ring_guard=tail", "radix_bits=4"
            key, val = extra.split("=")
            kw[key] = int(val) if val.isdigit() else val
        try:
            bench(f"onesweep {v}", np.uint32, kw)
        except Exception as exc:  # the other variants still run
            fail(f"onesweep {v}: {_brief(exc)}")
            continue
        if args.ptxinfo:
            ptxinfo(v, kw)
    if args.types:
        for dt in (np.float32, np.uint64):
            peers(dt)
            bench("planner", dt, {})
        peers(np.uint32, values=True)
        bench("planner key-value u32+u32", np.uint32, {}, values=True)
        bench("planner argsort u32", np.uint32, {}, argsort=True)
        bench("rts (portable)", np.uint32, dict(algorithm="reduce_then_scan"))
    if args.sweep:
        import pyopencl.tools as cl_tools
        fresh = cl_tools.ImmediateAllocator(queue)
        for lg in range(10, args.log2n + 1, 2):
            peers(np.uint32, nn=1 << lg)
            bench("planner sweep", np.uint32, {}, nn=1 << lg)
            if args.pool:
                bench("planner sweep, fresh temporaries", np.uint32, dict(allocator=fresh),
                      nn=1 << lg)


if __name__ == "__main__":
    sys.exit(main())
