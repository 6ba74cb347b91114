"""Sorts too large for the CI machine, checked in full on the host (reliability, not speed).

    python -m benchmarks.large_n [--device NAME] [--case u32|u64kv|all]

u32: 2^31 + 12345 uint32 keys, in place (64-bit indices, onesweep in portions). Checked against
numpy.sort of the same keys.
u64kv: 2^30 uint64 keys with uint32 values (each value its key's original position). Checked
without a host sort: keys non-decreasing, values a permutation, every key equal to the original
key at its value's position, and equal keys in increasing value order (stability).
"""

import argparse
import time

import numpy as np
import pyopencl as cl

import clradix
from clradix.device import DeviceProfile, all_devices, can_build


def _log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _sort(queue, sorter, keys, values=None):
    ctx = queue.context
    kbuf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, keys.nbytes)
    cl.enqueue_copy(queue, kbuf, keys)
    vbuf = None
    if values is not None:
        vbuf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, values.nbytes)
        cl.enqueue_copy(queue, vbuf, values)
    queue.finish()
    plan = sorter.plan(queue.device, keys.dtype, keys.size,
                       None if values is None else values.dtype)
    t0 = time.perf_counter()
    evt = sorter.sort(queue, kbuf, dtype=keys.dtype, n=keys.size, values=vbuf,
                      value_dtype=None if values is None else values.dtype)
    evt.wait()
    dt = time.perf_counter() - t0
    out_k = np.empty_like(keys)
    cl.enqueue_copy(queue, out_k, kbuf)
    out_v = None
    if values is not None:
        out_v = np.empty_like(values)
        cl.enqueue_copy(queue, out_v, vbuf)
    queue.finish()
    return out_k, out_v, dt, plan


def case_u32(queue, sorter, rng):
    n = 2 ** 31 + 12345
    _log(f"u32: generating {n} keys")
    keys = rng.integers(0, 2 ** 32, n, dtype=np.uint32)
    out, _, dt, plan = _sort(queue, sorter, keys)
    _log(f"u32: sorted on the device in {dt * 1e3:.1f} ms (wall, {plan})")
    ref = np.sort(keys)
    ok = np.array_equal(out, ref)
    _log(f"u32: {'equal to numpy.sort' if ok else 'DIFFERS from numpy.sort'}")
    return ok


def case_u64kv(queue, sorter, rng):
    n = 2 ** 30
    _log(f"u64kv: generating {n} keys")
    keys = rng.integers(0, 2 ** 64, n, dtype=np.uint64, endpoint=False)
    keys[rng.integers(0, n, n // 8)] = keys[:n // 8]   # ties, to check stability
    values = np.arange(n, dtype=np.uint32)
    out_k, out_v, dt, plan = _sort(queue, sorter, keys, values)
    _log(f"u64kv: sorted on the device in {dt * 1e3:.1f} ms (wall, {plan})")
    checks = {}
    checks["keys non-decreasing"] = bool(np.all(out_k[1:] >= out_k[:-1]))
    seen = np.zeros(n, dtype=bool)
    seen[out_v] = True
    checks["values a permutation"] = bool(seen.all())
    del seen
    checks["keys[i] == original[values[i]]"] = bool(np.array_equal(out_k, keys[out_v]))
    tie = out_k[1:] == out_k[:-1]
    checks["ties in value order"] = bool(np.all(out_v[1:][tie] > out_v[:-1][tie]))
    checks["ties present"] = int(tie.sum())
    _log(f"u64kv: {checks}")
    return all(v for k, v in checks.items() if k != "ties present")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="NVIDIA")
    ap.add_argument("--case", default="all", choices=["u32", "u64kv", "all"])
    args = ap.parse_args()
    dev = next(d for d in all_devices() if can_build(d) and args.device.lower() in
               f"{d.platform.name} {d.name}".lower())
    prof = DeviceProfile.from_device(dev)
    _log(f"{prof.describe()}, driver {prof.driver_version}, clradix {clradix.__version__}")
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)
    sorter = clradix.Sorter(ctx)
    rng = np.random.default_rng(31)
    ok = True
    if args.case in ("u32", "all"):
        ok &= case_u32(queue, sorter, rng)
    if args.case in ("u64kv", "all"):
        ok &= case_u64kv(queue, sorter, rng)
    _log("all checks passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
