"""Sorts too large for the CI machine, checked in full on the host (reliability, not speed).

u32: 2^31 + 12345 uint32 keys, in place (64-bit indices, onesweep in portions). Checked against
numpy.sort of the same keys.
u64kv: 2^30 uint64 keys with uint32 values (each value its key's original position). Checked
without a host sort: keys non-decreasing, values a permutation, every key equal to the original
key at its value's position, and equal keys in increasing value order (stability).
``--quick``: 2^20 + 12345 and 2^18 keys. Each sort is timed like every benchmark (a warm-up, then
``--repeat`` runs, the input uploaded again before each).
"""

import numpy as np
import pyopencl as cl

import clradix

from . import common, timing


def add_arguments(ap):
    common.add_common_options(ap, repeat=1)
    ap.add_argument("--case", default="all", choices=["u32", "u64kv", "all"])


def _sort(out, sorter, queue, keys, values=None):
    """Sorts on the device (timed, recorded); returns the sorted keys and values."""
    ctx = queue.context
    kbuf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, keys.nbytes)
    vbuf = None if values is None else cl.Buffer(ctx, cl.mem_flags.READ_WRITE, values.nbytes)

    def prep():
        cl.enqueue_copy(queue, kbuf, keys)
        if values is not None:
            cl.enqueue_copy(queue, vbuf, values)

    def call():
        return sorter.sort(queue, kbuf, dtype=keys.dtype, n=keys.size, values=vbuf,
                           value_dtype=None if values is None else values.dtype), None
    t = timing.time_opencl(queue, call, out.args.repeat, prep)
    out_k = np.empty_like(keys)
    cl.enqueue_copy(queue, out_k, kbuf)
    out_v = None
    if values is not None:
        out_v = np.empty_like(values)
        cl.enqueue_copy(queue, out_v, vbuf)
    queue.finish()
    plan = sorter.plan(queue.device, keys.dtype, keys.size,
                       None if values is None else values.dtype)
    return out_k, out_v, t, str(plan)


def case_u32(out, where, queue, sorter, rng, n):
    out.log(f"u32: generating {n} keys")
    keys = rng.integers(0, 2 ** 32, n, dtype=np.uint32)
    got, _, t, plan = _sort(out, sorter, queue, keys)
    ok = np.array_equal(got, np.sort(keys))
    out.log(f"u32: {'equal to numpy.sort' if ok else 'DIFFERS from numpy.sort'}")
    out.record(where, "clradix", "u32 in place", keys.dtype, n, t, ok=ok, policy=plan)


def case_u64kv(out, where, queue, sorter, rng, n):
    out.log(f"u64kv: generating {n} keys")
    keys = rng.integers(0, 2 ** 64, n, dtype=np.uint64, endpoint=False)
    keys[rng.integers(0, n, n // 8)] = keys[:n // 8]   # ties, to check stability
    values = np.arange(n, dtype=np.uint32)
    out_k, out_v, t, plan = _sort(out, sorter, queue, keys, values)
    checks = {}
    checks["keys non-decreasing"] = bool(np.all(out_k[1:] >= out_k[:-1]))
    seen = np.zeros(n, dtype=bool)
    seen[out_v] = True
    checks["values a permutation"] = bool(seen.all())
    del seen
    checks["keys[i] == original[values[i]]"] = bool(np.array_equal(out_k, keys[out_v]))
    tie = out_k[1:] == out_k[:-1]
    checks["ties in value order"] = bool(np.all(out_v[1:][tie] > out_v[:-1][tie]))
    out.log(f"u64kv: {checks}, {int(tie.sum())} ties")
    out.record(where, "clradix", "u64 + u32 values", keys.dtype, n, t, ok=all(checks.values()),
               policy=plan, checks=checks)


def main(args):
    out = common.Run("large", args)
    dev, _ = common.select_device(args.device)
    where = common.opencl_device_fields(dev)
    out.log(f"{where['device_full']}, clradix {clradix.__version__}, {out.meta['date']}")
    queue = common.profiling_queue(dev)
    sorter = clradix.Sorter(queue.context)
    rng = np.random.default_rng(31)
    if args.case in ("u32", "all"):
        with out.guard("u32"):
            case_u32(out, where, queue, sorter, rng, (1 << (20 if args.quick else 31)) + 12345)
    if args.case in ("u64kv", "all"):
        with out.guard("u64kv"):
            case_u64kv(out, where, queue, sorter, rng, 1 << (18 if args.quick else 30))
    return out.finish()
