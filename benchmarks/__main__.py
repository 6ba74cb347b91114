"""Benchmark matrix: ``python -m benchmarks [options]``.

For every OpenCL device that builds kernels (``--device`` filters by index or name), every
operation (sort keys, sort key-value, argsort, top-k of 1000), dtype and size, time clradix (the
planner's policy, and ``--policy`` alternatives) beside pyopencl's RadixSort on the same device,
numpy on the host, and CuPy (CUB) / torch when they are importable with a CUDA GPU. Every cell:
a warm-up, then the median of ``--repeat`` runs, device time (OpenCL profiling events / CUDA
events) and wall time; every timed output is compared with numpy.

Writes a Markdown table (stdout, or ``--markdown``), JSON with every sample (``--json``), PNG plots
(``--plots DIR``; needs matplotlib), and with ``--compare OLD.json`` the speed-up of each cell.
``--plot-from RUN.json`` only draws the plots of a saved run. ``--quick`` is the CI-sized run.
"""

import argparse
import datetime
import json
import platform
import sys
import time

import numpy as np
import pyopencl as cl

import clradix
from clradix.device import DeviceProfile, all_devices, can_build
from clradix.keys import KEY_DTYPES, parse_dtype

from . import impls, report

DEFAULT_DTYPES = "u32,i32,f32,u64,f64"


def random_keys(rng, dtype, n):
    """Uniform random bits (floats: normal values, so every implementation agrees on NaN-free
    input; clradix's own tests cover NaN and -0.0)."""
    d = np.dtype(dtype)
    if d.kind == "f":
        return rng.standard_normal(n).astype(d)
    return rng.integers(0, 256, n * d.itemsize, dtype=np.uint8).view(d)


class Progress:
    def __init__(self, total):
        self.total, self.done, self.t0 = total, 0, time.perf_counter()

    def step(self, label):
        self.done += 1
        width = 30
        fill = int(width * self.done / max(self.total, 1))
        el = time.perf_counter() - self.t0
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} "
                         f"{el:6.0f}s {label[:70]:70s}")
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")


_PLATFORM_SHORT = {"Portable Computing Language": "PoCL", "Intel(R) OpenCL": "Intel CPU RT",
                   "NVIDIA CUDA": "NVIDIA OpenCL"}


def short_label(prof):
    plat = _PLATFORM_SHORT.get(prof.platform, prof.platform)
    return f"{prof.name} ({plat} {prof.driver_version[:12]})"


def _parse_policy(spec):
    out = {}
    for kv in filter(None, spec.split(";")):
        k, v = kv.split("=")
        out[k] = int(v) if v.lstrip("-").isdigit() else (v == "True" if v in ("True", "False")
                                                         else v)
    return out


def _select_devices(specs):
    devices = [d for d in all_devices() if can_build(d)]
    if specs:
        devices = [d for i, d in enumerate(devices)
                   if any(s == str(i) or s.lower() in f"{d.platform.name} {d.name}".lower()
                          for s in specs)]
    return devices


def _sizes(args, dev, host=False):
    lo = args.min_log2n
    hi = args.max_log2n
    if hi is None:
        hi = 28 if dev is None or dev.type & cl.device_type.GPU else 22
    if host:
        hi = min(hi, args.host_max_log2n)
    if dev is not None:  # keys, values, two temporaries, indices: stay well inside memory
        while hi > lo and (1 << hi) * 8 * 6 > dev.global_mem_size // 2:
            hi -= 1
    return [1 << k for k in range(lo, hi + 1, args.step)]


def run_matrix(args):
    dtypes = [np.dtype(d) for d in KEY_DTYPES] if args.all_dtypes else \
        [parse_dtype(s) for s in args.dtypes.split(",")]
    ops = [o.strip() for o in args.ops.split(",")]
    for o in ops:
        if o not in impls.OPS:
            raise SystemExit(f"unknown operation {o!r}: expected {', '.join(impls.OPS)}")
    devices = _select_devices(args.device)
    if not devices:
        raise SystemExit("no usable OpenCL device matches")
    date = datetime.date.today().isoformat()
    meta = dict(date=date, clradix=clradix.__version__, host=platform.node(),
                numpy=np.__version__, pyopencl=cl.VERSION_TEXT)
    rng = np.random.default_rng(args.seed)
    # (device label, driver, implementation object)
    targets = []
    for dev in devices:
        prof = DeviceProfile.from_device(dev)
        ctx = cl.Context([dev])
        q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        group = [impls.ClradixImpl(q)]
        group += [impls.ClradixImpl(q, _parse_policy(p), f"clradix [{p}]") for p in args.policy]
        if not args.no_peers:
            group.append(impls.PyopenclRadixSort(q))
        for im in group:
            targets.append((short_label(prof), (prof.describe(), prof.driver_version), dev, im))
    if not args.no_peers:
        targets.append(("host CPU", (platform.processor() or platform.machine(), ""), None,
                        impls.NumpyImpl()))
        for im in impls.gpu_peers():
            targets.append(("CUDA", (im.device_name(), im.driver()), None, im))
    cells = []
    for label, full, dev, im in targets:
        for op in ops:
            for dt in dtypes:
                if im.supports(op, dt):
                    for n in _sizes(args, dev, host=isinstance(im, impls.NumpyImpl)):
                        cells.append((label, full, dev, im, op, dt, n))
    # one (dtype, size) at a time, so that its keys and numpy's answers are made once
    order = {str(d): i for i, d in enumerate(dtypes)}
    cells.sort(key=lambda c: (order[str(c[5])], c[6]))
    rows = []
    prog = Progress(len(cells))
    keys_cache = {}
    for label, full, dev, im, op, dt, n in cells:
        prog.step(f"{label[:28]} {im.name} {op} {dt} 2^{n.bit_length() - 1}")
        ck = (str(dt), n)
        if ck not in keys_cache:
            keys_cache.clear()
            k = random_keys(rng, dt, n)
            keys_cache[ck] = (k, {o: impls.reference(o, k) for o in ops})
        keys, wants = keys_cache[ck]
        try:
            dev_ms, wall_ms = im.run(op, keys, args.repeat, wants[op])
            err = None
        except AssertionError:
            raise
        except Exception as exc:  # a cell that cannot run (memory, missing feature) is reported
            dev_ms, wall_ms, err = None, [], f"{type(exc).__name__}: {exc}"[:300]
        row = dict(meta, device=label, device_full=full[0], driver=full[1], impl=im.name, op=op,
                   dtype=str(dt), n=n,
                   device_ms=float(np.median(dev_ms)) if dev_ms else None,
                   wall_ms=float(np.median(wall_ms)) if wall_ms else None,
                   samples_device_ms=dev_ms, samples_wall_ms=wall_ms, error=err,
                   policy=im.policy(dt, n) if hasattr(im, "policy") else None)
        rows.append(row)
        if args.json:  # keep what is measured even if the run is cut short
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
    prog.close()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", action="append", help="index or name substring (repeatable)")
    ap.add_argument("--ops", default="sort,sort_kv,argsort,topk")
    ap.add_argument("--dtypes", default=DEFAULT_DTYPES, help=f"comma list ({DEFAULT_DTYPES})")
    ap.add_argument("--all-dtypes", action="store_true", help="every key dtype clradix sorts")
    ap.add_argument("--min-log2n", type=int, default=10)
    ap.add_argument("--max-log2n", type=int, default=None,
                    help="default 28 on GPUs and 22 on CPUs, bounded by device memory")
    ap.add_argument("--step", type=int, default=2, help="log2 size step (2)")
    ap.add_argument("--host-max-log2n", type=int, default=24,
                    help="largest size numpy sorts on the host (24)")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--policy", action="append", default=[],
                    help="also time clradix with these policy fields, e.g. "
                         "'algorithm=onesweep;ranking=local' (repeatable)")
    ap.add_argument("--no-peers", action="store_true", help="clradix only")
    ap.add_argument("--quick", action="store_true",
                    help="CI-sized: 2^10 and 2^12, u32 and f32, 2 repeats")
    ap.add_argument("--json", help="write every sample here")
    ap.add_argument("--markdown", help="write the table here instead of stdout")
    ap.add_argument("--plots", help="write PNG plots into this folder (needs matplotlib)")
    ap.add_argument("--compare", help="a previous --json run: print speed-ups per cell")
    ap.add_argument("--plot-from", help="only draw --plots from this saved --json run")
    args = ap.parse_args(argv)
    if args.quick:
        args.min_log2n, args.max_log2n, args.step, args.repeat = 10, 12, 2, 2
        args.dtypes = "u32,f32"
    if args.plot_from:
        with open(args.plot_from) as f:
            rows = json.load(f)
    else:
        rows = run_matrix(args)
        table = report.markdown(rows)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(table + "\n")
        else:
            print(table)
    if args.plots:
        for path in report.plots(rows, args.plots):
            print(f"wrote {path}", file=sys.stderr)
    if args.compare:
        with open(args.compare) as f:
            print(report.compare(json.load(f), rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
