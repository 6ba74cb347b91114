"""Command line: ``python -m clradix [demo|info|plan|autotune] ...``.

``demo`` (the default) sorts random keys, or the keys of a ``.npy`` file, on one device and prints
the device, the time and a bit-exact comparison with numpy's stable sort. ``info`` lists the devices.
"""

import argparse
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import __version__
from .device import DeviceProfile, all_devices, can_build, default_device
from .keys import KEY_DTYPES, key_codec
from .sorter import Sorter


def _pick_device(spec):
    if spec is None:
        return default_device()
    devices = all_devices()
    if spec.isdigit() and int(spec) < len(devices):
        return devices[int(spec)]
    for d in devices:
        if spec.lower() in f"{d.platform.name} {d.name}".lower():
            return d
    raise SystemExit(f"no OpenCL device matches {spec!r}; `python -m clradix info` lists them")


def random_keys(rng, dtype, n):
    """Uniformly random bits of ``dtype`` (floats include NaN, inf, zeros and subnormals)."""
    d = np.dtype(dtype)
    return rng.integers(0, 256, n * d.itemsize, dtype=np.uint8).view(d)


def _reference(keys, descending):
    if not descending:
        return np.sort(keys, kind="stable")
    okey = key_codec(keys.dtype).order_key(keys)
    return keys[np.argsort(~okey, kind="stable")]


def cmd_demo(args):
    dev = _pick_device(args.device)
    if args.file:
        keys = np.load(args.file).ravel()
    else:
        keys = random_keys(np.random.default_rng(args.seed), args.dtype, args.n)
    codec = key_codec(keys.dtype)
    keys = np.ascontiguousarray(keys)
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    sorter = Sorter(ctx)
    d_keys = cl_array.to_device(queue, keys)
    work = cl_array.empty_like(d_keys)
    times = []
    for rep in range(args.repeat + 1):  # the first run builds the kernels
        cl.enqueue_copy(queue, work.data, d_keys.data).wait()
        t0 = time.perf_counter()
        evt = sorter.sort(queue, work, descending=args.descending)
        evt.wait()
        if rep:
            times.append(time.perf_counter() - t0)
    out = work.get()
    t0 = time.perf_counter()
    ref = _reference(keys, args.descending)
    t_np = time.perf_counter() - t0
    ok = np.array_equal(out.view(codec.unsigned_dtype), ref.view(codec.unsigned_dtype))
    med = float(np.median(times)) if times else float("nan")
    policy = sorter.plan(dev, keys.dtype, keys.size)
    print(f"clradix {__version__} on {DeviceProfile.from_device(dev).describe()}")
    print(f"policy  {policy}")
    print(f"sorted  {keys.size} {keys.dtype} keys{' descending' if args.descending else ''}: "
          f"{med * 1e3:.2f} ms median of {len(times)} "
          f"({keys.size / med / 1e6 if med else 0:.1f} Mkeys/s); numpy.sort {t_np * 1e3:.2f} ms")
    print(f"check   {'OK: bit-exact equal to numpy stable sort' if ok else 'MISMATCH'}")
    return 0 if ok else 1


def cmd_info(args):
    devices = all_devices()
    if not devices:
        print("no OpenCL platforms found")
        return 1
    for i, d in enumerate(devices):
        p = DeviceProfile.from_device(d)
        status = "builds kernels" if can_build(d) else "CANNOT build kernels (unusable)"
        print(f"[{i}] {p.describe()}")
        print(f"    {p.device_type}, {p.compute_units} compute units, max work-group "
              f"{p.max_wg_size}, local memory {p.local_mem_bytes // 1024} KiB: {status}")
    try:
        print(f"default device: {default_device().name}")
    except RuntimeError as exc:
        print(exc)
        return 1
    return 0


def _devices(spec):
    if spec:
        return [_pick_device(spec)]
    return [d for d in all_devices() if can_build(d)]


def cmd_plan(args):
    from .tuning import tuned_table
    for dev in _devices(args.device):
        prof = DeviceProfile.from_device(dev)
        sorter = Sorter(cl.Context([dev]))
        tuned = tuned_table(prof)
        print(f"{prof.describe()}: {'autotuned' if tuned else 'built-in'} policies")
        for dtype in args.dtypes.split(","):
            for lg in (10, 16, 20, 24, 28):
                pol = sorter.plan(dev, np.dtype(dtype), 1 << lg)
                extra = f" ranking={pol.ranking}" if pol.algorithm == "onesweep" else ""
                print(f"  {dtype:8s} 2^{lg:<3d} {pol.algorithm:17s} radix_bits={pol.radix_bits} "
                      f"wg={pol.wg_size} items={pol.items_per_thread}{extra}")
    return 0


def cmd_autotune(args):
    import json
    from .tuning import autotune, cache_path, report, save
    sizes = [int(s) for s in args.sizes.split(",")]
    everything = []
    for dev in _devices(args.device):
        prof = DeviceProfile.from_device(dev)
        print(f"autotuning {prof.describe()}")
        winners, rows = autotune(dev, args.dtypes.split(","), sizes, args.repeat,
                                 seconds=args.seconds)
        if winners:
            save(prof, winners)
        print(report(rows, prof.describe()))
        everything.append(dict(device=prof.describe(), rows=rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)
    print(f"saved to {cache_path()}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m clradix", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    demo = sub.add_parser("demo", help="sort random keys or a .npy file and check against numpy")
    demo.add_argument("--n", type=int, default=1 << 22, help="number of random keys (2^22)")
    demo.add_argument("--dtype", default="uint32",
                      choices=[str(d) for d in KEY_DTYPES], help="key dtype (uint32)")
    demo.add_argument("--file", help="a .npy file of keys to sort instead of random ones")
    demo.add_argument("--device", help="device index or name substring (default: see info)")
    demo.add_argument("--descending", action="store_true")
    demo.add_argument("--repeat", type=int, default=5, help="timed runs after one warm-up")
    demo.add_argument("--seed", type=int, default=0)
    sub.add_parser("info", help="list OpenCL devices and which one clradix uses by default")
    plan = sub.add_parser("plan", help="print the policy the planner picks per device and size")
    plan.add_argument("--device")
    plan.add_argument("--dtypes", default="uint32,float32,uint64")
    tune = sub.add_parser("autotune", help="time candidate policies and remember the fastest")
    tune.add_argument("--device")
    tune.add_argument("--dtypes", default="uint32,float32")
    tune.add_argument("--sizes", default="16,20,24", help="log2 sizes (16,20,24)")
    tune.add_argument("--repeat", type=int, default=5,
                      help="timed pairs per candidate, at least (5)")
    tune.add_argument("--seconds", type=float, default=0.25,
                      help="more pairs for short sorts: as many as fit in this many seconds "
                           "of the default's time (0.25)")
    tune.add_argument("--json", help="also write every timing here")
    args = ap.parse_args(argv)
    if args.cmd is None:
        args = ap.parse_args(["demo"] + (argv if argv is not None else sys.argv[1:]))
    return {"demo": cmd_demo, "info": cmd_info, "plan": cmd_plan,
            "autotune": cmd_autotune}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
