"""The benchmark matrix: every device, operation, dtype and size, clradix beside its peers.

For every OpenCL device that builds kernels (``--device`` filters), every operation (sort keys,
sort key-value, argsort, top-k of 1000), dtype and size: clradix (the planner's policy, and
``--policy`` alternatives) beside pyopencl's RadixSort on the same device, numpy on the host, and
CuPy (CUB) / torch when they are importable with a CUDA GPU. Every cell is timed by
benchmarks.timing (device_ms and wall_ms) and its output compared with numpy's.

Writes a Markdown table (stdout, or ``--markdown``), PNG plots (``--plots DIR``; needs
matplotlib); ``--plot-from RUN.json`` only draws the plots (and ``--compare``) of a saved run.
"""

import sys
import time

import numpy as np
import pyopencl as cl

from clradix.core.keys import KEY_DTYPES, parse_dtype

from . import common, impls, report

DEFAULT_DTYPES = "u32,i32,f32,u64,f64"


def add_arguments(ap):
    common.add_common_options(ap, repeat=10)
    ap.add_argument("--ops", default="sort,sort_kv,argsort,topk")
    ap.add_argument("--dtypes", default=DEFAULT_DTYPES, help=f"comma list ({DEFAULT_DTYPES})")
    ap.add_argument("--all-dtypes", action="store_true", help="every key dtype clradix sorts")
    ap.add_argument("--min-log2n", type=int, default=10)
    ap.add_argument("--max-log2n", type=int, default=None,
                    help="default 28 on GPUs and 22 on CPUs, bounded by device memory")
    ap.add_argument("--step", type=int, default=2, help="log2 size step (2)")
    ap.add_argument("--host-max-log2n", type=int, default=24,
                    help="largest size numpy sorts on the host (24)")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--policy", action="append", default=[],
                    help="also time clradix with these policy fields, e.g. "
                         "'algorithm=onesweep;ranking=local' (repeatable)")
    common.add_peer_options(ap)
    ap.add_argument("--markdown", help="write the table here instead of stdout")
    ap.add_argument("--plots", help="write PNG plots into this folder (needs matplotlib)")
    ap.add_argument("--plot-from", metavar="RUN.json",
                    help="measure nothing: --plots (and --compare) of this saved --json run")


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


def _parse_policy(spec):
    out = {}
    for kv in filter(None, spec.split(";")):
        k, v = kv.split("=")
        out[k] = int(v) if v.lstrip("-").isdigit() else (v == "True" if v in ("True", "False")
                                                         else v)
    return out


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


def _targets(args, out):
    """(device fields, OpenCL device or None, implementation) of every column."""
    devices = common.select_devices(args.device)
    if not devices:
        raise SystemExit("no usable OpenCL device matches")
    targets = []
    for dev in devices:
        where = common.opencl_device_fields(dev)
        q = common.profiling_queue(dev)
        group = [impls.ClradixImpl(q)]
        group += [impls.ClradixImpl(q, _parse_policy(p), f"clradix [{p}]") for p in args.policy]
        if not args.no_peers:
            group.append(impls.PyopenclRadixSort(q))
        targets += [(where, dev, im) for im in group]
    if not args.no_peers:
        targets.append((common.host_fields(), None, impls.NumpyImpl()))
        targets += [(im.device_fields(), None, im) for im in common.cuda_peers(args, out)]
    return targets


def run_matrix(args, out):
    dtypes = [np.dtype(d) for d in KEY_DTYPES] if args.all_dtypes else \
        [parse_dtype(s) for s in args.dtypes.split(",")]
    ops = [o.strip() for o in args.ops.split(",")]
    for o in ops:
        if o not in impls.OPS:
            raise SystemExit(f"unknown operation {o!r}: expected {', '.join(impls.OPS)}")
    rng = np.random.default_rng(args.seed)
    cells = []
    for where, dev, im in _targets(args, out):
        for op in ops:
            for dt in dtypes:
                if im.supports(op, dt):
                    for n in _sizes(args, dev, host=isinstance(im, impls.NumpyImpl)):
                        cells.append((where, im, op, dt, n))
    # one (dtype, size) at a time, so that its keys and numpy's answers are made once
    order = {str(d): i for i, d in enumerate(dtypes)}
    cells.sort(key=lambda c: (order[str(c[3])], c[4]))
    prog = Progress(len(cells))
    keys_cache = {}
    for where, im, op, dt, n in cells:
        prog.step(f"{where['device'][:28]} {im.name} {op} {dt} 2^{n.bit_length() - 1}")
        ck = (str(dt), n)
        if ck not in keys_cache:
            keys_cache.clear()
            k = common.random_keys(rng, dt, n)
            keys_cache[ck] = (k, {o: impls.reference(o, k) for o in ops})
        keys, wants = keys_cache[ck]
        res, err = out.attempt(lambda: im.run(op, keys, args.repeat, wants[op]))
        t, ok = res or (None, False)
        out.record(where, im.name, op, dt, n, t, ok=ok, error=err, op=op,
                   policy=im.policy(dt, n) if hasattr(im, "policy") else None)
    prog.close()


def main(args):
    if args.quick:
        args.min_log2n, args.max_log2n, args.step, args.repeat = 10, 12, 2, 2
        args.dtypes = "u32,f32"
    out = common.Run("matrix", args, echo=False)
    if args.plot_from:
        out.rows = report.load(args.plot_from)
        args.json = None  # measuring nothing, writing nothing
    else:
        run_matrix(args, out)
        table = report.markdown(out.rows)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(table + "\n")
        else:
            print(table)
    if args.plots:
        for path in report.plots(out.rows, args.plots):
            print(f"wrote {path}", file=sys.stderr)
    return out.finish()
