"""Onesweep under stress: the small-ring cases many times, each run in a fresh process with a time
limit, several runs at once (contention is what exposes races between work-groups).

    python -m benchmarks stress --device NAME [--runs 200] [--jobs 3] [--timeout 120]

One run sorts, for every subgroup ranking back-end the device has, keys whose status ring wraps
many times (64 x 4 tiles, a 24-slot ring, look-back 8, 41 tiles): uint32, float64 and int16 keys
with their positions as values, ascending and descending; the tail ring guard; forced fallback.
Every result is compared with numpy (keys bit for bit, values = numpy's stable argsort).
A run is ok, failed (wrong result or an error: exit 1), crashed (killed by a signal) or hung
(still running at the time limit: killed). The summary line counts each; the command exits
non-zero unless every run was ok. The --json row's wall_ms samples are the runs' durations
(process start to exit). ``--quick``: 4 runs, 2 at a time.

Devices: as `python -m clradix info` lists them (index or name substring). Intel's CPU runtime and
oclgrind need their ICD registered, e.g.
    OCL_ICD_VENDORS=$(bash scripts/intel-opencl-icd.sh) python -m benchmarks stress --device Intel
    OCL_ICD_VENDORS=$(bash scripts/oclgrind-icd.sh) python -m benchmarks stress --device Oclgrind \
        --runs 4 --jobs 2 --timeout 1200
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from . import common, timing

WG, IPT = 64, 4
TILE = WG * IPT
N = 40 * TILE + 3            # 41 tiles
RING = dict(ring_slots=24, lookback=8)


def _cases():
    """(name, Sorter keywords) of one run, before the ranking back-ends are known."""
    yield "ring", dict(RING)
    yield "small-ring", dict(ring_slots=12, lookback=4)
    yield "fallback", dict(RING, force_fallback=True)


def child(device_index, seed):
    """One run: every case on device ``device_index`` of all_devices(); exit 1 on the first wrong
    result."""
    import pyopencl as cl
    import pyopencl.array as cl_array

    import clradix
    from clradix.core.device import DeviceProfile
    from clradix.core.keys import key_codec
    from clradix.policies.fit import ranking_backends

    dev, _ = common.select_device([str(device_index)])
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)
    rng = np.random.default_rng(seed)
    for ranking in ranking_backends(DeviceProfile.from_device(dev)):
        sg = 32 if ranking in ("ptx", "local") else 16
        for name, kw in _cases():
            sorter = clradix.Sorter(ctx, algorithm="onesweep", ranking=ranking, sg_size=sg,
                                    wg_size=WG, items_per_thread=IPT, **kw)
            for dtype in (np.uint32, np.float64, np.int16):
                codec = key_codec(dtype)
                keys = rng.integers(0, 256, N * codec.itemsize, dtype=np.uint8).view(dtype)
                for descending in (False, True):
                    d_keys = cl_array.to_device(queue, keys)
                    d_vals = cl_array.to_device(queue, np.arange(N, dtype=np.uint32))
                    sorter.sort(queue, d_keys, values=d_vals, descending=descending).wait()
                    okey = codec.order_key(keys)
                    order = np.argsort(~okey if descending else okey, kind="stable")
                    ut = codec.unsigned_dtype
                    if not (np.array_equal(d_vals.get(), order)
                            and np.array_equal(d_keys.get().view(ut), keys[order].view(ut))):
                        print(f"WRONG RESULT: {ranking} {name} {np.dtype(dtype)} descending="
                              f"{descending} seed={seed}", file=sys.stderr)
                        return 1
    return 0


def _child_command(args, seed):
    return [sys.executable, "-m", "benchmarks", "stress", "--child", "--device",
            str(args.device_index), "--seed", str(seed)]


def _warm_up(args, out):
    """One run without the time limit first: it builds every kernel into pyopencl's disk cache, so
    that the timed runs measure sorting, not compiling on a busy machine."""
    t0 = time.time()
    p = subprocess.run(_child_command(args, args.seed + args.runs), stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    out.log(f"warm-up run (builds the kernels): exit {p.returncode}, {time.time() - t0:.0f} s")
    if p.returncode:
        out.fail("warm-up run", f"exit {p.returncode}\n{p.stderr[-2000:]}")
    return p.returncode == 0


def _runs(args, out):
    """Every run, ``--jobs`` at a time: [(run, outcome, seconds)]."""
    procs, results = {}, []
    next_run = 0
    started = time.time()
    while next_run < args.runs or procs:
        while next_run < args.runs and len(procs) < args.jobs:
            procs[next_run] = (subprocess.Popen(_child_command(args, args.seed + next_run),
                                                stdout=subprocess.DEVNULL,
                                                stderr=subprocess.PIPE, text=True), time.time())
            next_run += 1
        time.sleep(0.05)
        for i, (p, t0) in list(procs.items()):
            rc = p.poll()
            if rc is None and time.time() - t0 < args.timeout:
                continue
            if rc is None:
                p.kill()
                p.wait()
                outcome = "hung"
            else:
                outcome = "ok" if rc == 0 else "crashed" if rc < 0 else "failed"
            err = p.stderr.read()
            results.append((i, outcome, time.time() - t0))
            del procs[i]
            if outcome != "ok":
                out.fail(f"run {i} (seed {args.seed + i})", f"{outcome}\n{err[-2000:]}")
            if len(results) % 20 == 0:
                out.log(f"{len(results)} runs, {time.time() - started:.0f} s")
    return results


def add_arguments(ap):
    common.add_common_options(ap, repeat=None)
    ap.add_argument("--runs", type=int, default=200, help="runs, each in a fresh process")
    ap.add_argument("--jobs", type=int, default=3, help="runs at once")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a run is hung")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first run (then +1 each)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)


def main(args):
    if args.child:  # one run, on the device of this index (the parent resolved --device)
        return child(int(args.device[0]), args.seed)
    if args.quick:
        args.runs, args.jobs = 4, 2
    if args.runs < 1 or args.jobs < 1 or args.timeout <= 0:
        raise SystemExit("--runs and --jobs must be at least 1 and --timeout positive")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    out = common.Run("stress", args)
    dev, args.device_index = common.select_device(args.device)
    where = common.opencl_device_fields(dev)
    started = time.time()
    results = _runs(args, out) if _warm_up(args, out) else []
    counts = {k: sum(1 for r in results if r[1] == k) for k in ("ok", "failed", "crashed", "hung")}
    slowest = max((r[2] for r in results), default=0.0)
    out.log(f"device {where['device_full']}: {len(results)} runs ({args.jobs} at a time, limit "
            f"{args.timeout:.0f} s each): {counts['ok']} ok, {counts['failed']} failed, "
            f"{counts['crashed']} crashed, {counts['hung']} hung; slowest run {slowest:.1f} s; "
            f"{time.time() - started:.0f} s in all")
    if results:
        out.echo = False  # the summary line above says it
        out.record(where, "clradix", "stress runs", None, N,
                   timing.Timing(wall_ms=[r[2] * 1e3 for r in results]),
                   ok=counts["ok"] == len(results), runs=counts)
    return out.finish()
