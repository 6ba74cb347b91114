"""Benchmark clradix beside its peers: ``python -m benchmarks [options]``.

For each OpenCL device (``--device`` filters by index or name), each dtype and size, time
clradix's sort (planner policy), ``pyopencl.algorithm.RadixSort`` and ``numpy.sort`` in the same
run. Device time comes from OpenCL profiling events (first to last command of the sort), wall time
from the host clock around enqueue and wait. Every timed output is checked against numpy.
Writes a Markdown table to stdout and, with ``--json``, every sample to a file.
"""

import argparse
import datetime
import json
import platform
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clradix
from clradix.device import DeviceProfile, all_devices, can_build
from clradix.keys import key_codec

SHORT = {"u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "i8": "int8",
         "i16": "int16", "i32": "int32", "i64": "int64", "f16": "float16", "f32": "float32",
         "f64": "float64"}


def random_keys(rng, dtype, n):
    d = np.dtype(dtype)
    if d.kind == "f":
        return rng.standard_normal(n).astype(d)
    return rng.integers(0, 256, n * d.itemsize, dtype=np.uint8).view(d)


def _device_ms(first, last):
    return (last.profile.end - first.profile.end) * 1e-6


def time_clradix(queue, sorter, keys, repeat):
    d_src = cl_array.to_device(queue, keys)
    work = cl_array.empty_like(d_src)
    ref = np.sort(keys, kind="stable")
    dev_ms, wall_ms = [], []
    for rep in range(repeat + 1):
        cl.enqueue_copy(queue, work.data, d_src.data)
        m0 = cl.enqueue_marker(queue)
        m0.wait()
        t0 = time.perf_counter()
        evt = sorter.sort(queue, work)
        evt.wait()
        t1 = time.perf_counter()
        if not np.array_equal(work.get().view(np.uint8), ref.view(np.uint8)):
            raise AssertionError(f"clradix output differs from numpy ({keys.dtype}, n={keys.size})")
        if rep:  # the first run is the warm-up (and builds the kernels)
            dev_ms.append(_device_ms(m0, evt))
            wall_ms.append((t1 - t0) * 1e3)
    return dev_ms, wall_ms


_pyopencl_sorters = {}


def time_pyopencl(queue, keys, repeat):
    """pyopencl.algorithm.RadixSort; floats go through an order-preserving key expression."""
    from pyopencl.algorithm import RadixSort
    d = np.dtype(keys.dtype)
    if d not in (np.dtype(np.uint32), np.dtype(np.float32), np.dtype(np.uint64)):
        return None
    ctype = {np.dtype(np.uint32): "unsigned int", np.dtype(np.float32): "float",
             np.dtype(np.uint64): "unsigned long"}[d]
    key_expr = "ary[i]"
    key_type = ctype
    if d == np.float32:
        key_expr = ("(as_uint(ary[i]) ^ ((as_uint(ary[i]) >> 31) ? 0xffffffffu : 0x80000000u))")
        key_type = "unsigned int"
    cache_key = (queue.context, d)
    if cache_key not in _pyopencl_sorters:
        _pyopencl_sorters[cache_key] = RadixSort(
            queue.context, f"{ctype} *ary", key_expr=key_expr, sort_arg_names=["ary"],
            key_dtype=np.uint32 if key_type == "unsigned int" else np.uint64)
    rs = _pyopencl_sorters[cache_key]
    d_src = cl_array.to_device(queue, keys)
    ref = np.sort(keys, kind="stable")
    dev_ms, wall_ms = [], []
    for rep in range(repeat + 1):
        m0 = cl.enqueue_marker(queue)
        m0.wait()
        t0 = time.perf_counter()
        (out,), evt = rs(d_src, key_bits=d.itemsize * 8)
        evt.wait()
        t1 = time.perf_counter()
        if not np.array_equal(out.get().view(np.uint8), ref.view(np.uint8)):
            raise AssertionError(f"pyopencl RadixSort output differs from numpy ({d})")
        if rep:
            dev_ms.append(_device_ms(m0, evt))
            wall_ms.append((t1 - t0) * 1e3)
    return dev_ms, wall_ms


def time_numpy(keys, repeat):
    wall = []
    for _ in range(max(repeat // 2, 1)):
        t0 = time.perf_counter()
        np.sort(keys, kind="stable")
        wall.append((time.perf_counter() - t0) * 1e3)
    return None, wall


def _med(x):
    return float(np.median(x)) if x else None


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    ap.add_argument("--device", action="append",
                    help="device index or name substring (repeatable); default: every usable one")
    ap.add_argument("--dtypes", default="u32,f32", help="comma list of u32,f32,u64,... (u32,f32)")
    ap.add_argument("--sizes", default="20,22", help="comma list of log2 sizes (20,22)")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--no-peers", action="store_true", help="skip pyopencl and numpy")
    ap.add_argument("--policy", action="append", default=[],
                    help="also time clradix with these policy fields, e.g. "
                         "'algorithm=onesweep;ranking=local' (repeatable)")
    ap.add_argument("--json", help="write every sample here")
    ap.add_argument("--quick", action="store_true", help="CI-sized: 2^12 and 2^14, 2 repeats")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.repeat = "12,14", 2
    dtypes = [np.dtype(SHORT.get(s.strip(), s.strip())) for s in args.dtypes.split(",")]
    sizes = [1 << int(s) for s in args.sizes.split(",")]
    devices = [d for d in all_devices() if can_build(d)]
    if args.device:
        devices = [d for i, d in enumerate(devices)
                   if any(s == str(i) or s.lower() in f"{d.platform.name} {d.name}".lower()
                          for s in args.device)]
    if not devices:
        print("no usable OpenCL device matches", file=sys.stderr)
        return 1
    date = datetime.date.today().isoformat()
    rng = np.random.default_rng(12345)
    rows = []
    for dev in devices:
        prof = DeviceProfile.from_device(dev)
        ctx = cl.Context([dev])
        queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        sorter = clradix.Sorter(ctx)
        for dtype in dtypes:
            key_codec(dtype)
            for n in sizes:
                keys = random_keys(rng, dtype, n)
                policy = sorter.plan(dev, dtype, n)
                impls = [("clradix", lambda: time_clradix(queue, sorter, keys, args.repeat))]
                for spec in args.policy:
                    over = dict(kv.split("=") for kv in spec.split(";") if kv)
                    over = {k: (int(v) if v.isdigit() else v) for k, v in over.items()}
                    alt = clradix.Sorter(ctx, **over)
                    impls.append((f"clradix {spec}",
                                  lambda alt=alt: time_clradix(queue, alt, keys, args.repeat)))
                if not args.no_peers:
                    impls += [("pyopencl RadixSort", lambda: time_pyopencl(queue, keys, args.repeat)),
                              ("numpy.sort (host)", lambda: time_numpy(keys, args.repeat))]
                for name, fn in impls:
                    res = fn()
                    if res is None:
                        continue
                    dev_ms, wall_ms = res
                    row = dict(device=prof.describe(), driver=prof.driver_version,
                               impl=name, dtype=str(dtype), n=n, date=date,
                               device_ms=_med(dev_ms), wall_ms=_med(wall_ms),
                               samples_device_ms=dev_ms, samples_wall_ms=wall_ms,
                               policy=str(policy) if name.startswith("clradix") else None,
                               clradix=clradix.__version__, host=platform.node())
                    rows.append(row)
                    print(f"  {prof.name[:30]:30s} {str(dtype):8s} 2^{n.bit_length() - 1:<3d} "
                          f"{name:20s} device {row['device_ms'] or float('nan'):9.2f} ms  "
                          f"wall {row['wall_ms']:9.2f} ms", file=sys.stderr)
    print(markdown(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def markdown(rows):
    out = ["| device | dtype | n | implementation | device ms (median) | wall ms (median) "
           "| Mkeys/s (wall) |",
           "| --- | --- | --- | --- | ---: | ---: | ---: |"]
    for r in rows:
        dm = f"{r['device_ms']:.2f}" if r["device_ms"] is not None else "-"
        out.append(f"| {r['device']} | {r['dtype']} | 2^{r['n'].bit_length() - 1} | {r['impl']} "
                   f"| {dm} | {r['wall_ms']:.2f} | {r['n'] / r['wall_ms'] / 1e3:.1f} |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
