"""The autotune harness behind ``python -m clradix autotune``: time the candidate policies on a
device, rank them against the planner's default, and report the timings.

Saving the winners (and reading them back when sorting) is :mod:`clradix.policies.tuning`'s job.
"""

from dataclasses import replace

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools

from .bench import random_keys
from .core.device import DeviceProfile
from .core.keys import key_codec, parse_dtype
from .core.errors import PolicyError
from .policies.fit import ranking_backends, sg_size_of
from .planning.sort_plan import plan_sort, validate
from .policies.sort import RADIX_BITS, OnesweepPolicy, policy_from_fields
from .policies.sort_defaults import DEFAULTS
from .core.render import KernelBuildError
from .core.sizes import index_bytes
from .dispatch.sorter import Sorter

DEFAULT_SIZES = (16, 20, 24)


def candidates(profile, dtype, n):
    """The policies worth timing for n keys of dtype on this device (each validated)."""
    codec = key_codec(dtype)
    out = []
    shapes = [(256, 16), (256, 8), (128, 16)]
    for rb in RADIX_BITS:
        for wg, ipt in shapes:
            out.append(replace(DEFAULTS["cpu"], radix_bits=rb, wg_size=wg, items_per_thread=ipt))
    for ranking in ranking_backends(profile):
        sg = sg_size_of(ranking)
        for rb in RADIX_BITS:
            for wg, ipt in ([(256, 24), (256, 20), (256, 16), (256, 12)] if profile.is_gpu
                            else [(256, 16), (128, 16)]):
                out.append(OnesweepPolicy(rb, wg, ipt, ranking=ranking, sg_size=sg))
    if profile.is_cpu:   # the chunked CPU sort: digit widths and chunks per compute unit
        for rb in (8, 11):
            for bpc in (2, 4, 8):
                out.append(replace(DEFAULTS["cpu-chunks"], radix_bits=rb, blocks_per_cu=bpc))
    small = plan_sort(profile, codec, None, 1)
    if small.algorithm == "single_wg" and n <= small.tile:
        out.append(small)
    ok = []
    for pol in out:
        pol = replace(pol, wg_size=min(pol.wg_size, profile.max_wg_size))
        try:
            validate(pol, profile, codec.itemsize, index_bytes(n), 0, n)
        except PolicyError:
            continue
        if pol not in ok:
            ok.append(pol)
    return ok


def autotune(device, dtypes=("uint32", "float32"), log2_sizes=DEFAULT_SIZES, repeat=5,
             log=print, seconds=0.25):
    """Time every candidate on ``device``; return (winners, rows) where rows hold every timing.

    Each candidate is timed ``repeat`` times, or more where its sorts are short: as many as the
    planner default's fit in ``seconds`` (at most 500), since a few milliseconds' sorts need many
    pairs before the median ratio settles (on a shared 2-core machine, 15 pairs at 2**16 keys
    still moved a candidate by 10 %)."""
    profile = DeviceProfile.from_device(device)
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    # one pool for every candidate (all on this queue), as a Sorter's default pool would be, but
    # holding one sort's temporaries rather than one per candidate
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    rng = np.random.default_rng(2026)
    winners, rows = {}, []
    for dtype in dtypes:
        dt = parse_dtype(dtype)
        for lg in log2_sizes:
            keys = random_keys(rng, dt, 1 << lg, floats="normal")
            default = plan_sort(profile, key_codec(dt), None, 1 << lg)
            mine = [dict(dtype=str(dt), log2n=lg, policy=pol.fields(), ms=ms, ratio=ratio,
                         default=pol == default)
                    for pol, ms, ratio in _time_candidates(ctx, queue, pool, profile, keys, default,
                                                           repeat, seconds, log)]
            rows += mine
            if mine:
                best = min(mine, key=lambda r: r["ms"])
                winners[(str(dt), lg)] = policy_from_fields(best["policy"])
                dms = [r["ms"] for r in mine if r["default"]]
                gap = f"{dms[0] / best['ms']:.2f}x the best" if dms else "not among the candidates"
                log(f"{dt} 2^{lg}: best {best['ms']:.3f} ms {winners[(str(dt), lg)].label}; "
                    f"planner default {default.label} is {gap}")
            pool.free_held()
    return winners, rows


def _time_candidates(ctx, queue, pool, profile, keys, default, repeat, seconds, log):
    """(policy, ms, ratio to the default) of every candidate that runs ``keys`` correctly."""
    dt, n = keys.dtype, keys.size
    ref = np.sort(keys, kind="stable")
    src = cl_array.to_device(queue, keys)
    work = cl_array.empty_like(src)
    # what a candidate this device cannot run raises: a policy it refuses, a kernel its compiler
    # refuses, an OpenCL error launching or running it, too little memory (anything else is a bug)
    cannot_run = (PolicyError, KernelBuildError, cl.Error, MemoryError)

    def run_once(sorter):
        cl.enqueue_copy(queue, work.data, src.data)
        m0 = cl.enqueue_marker(queue)
        evt = sorter.sort(queue, work)
        evt.wait()
        return (evt.profile.end - m0.profile.end) * 1e-6

    # build, warm up and check every candidate (and the planner's default) first ...
    timed = []
    pols = candidates(profile, dt, n)
    for pol in ([default] if default not in pols else []) + pols:
        sorter = Sorter(ctx, allocator=pool, **pol.fields())
        try:
            run_once(sorter)
        except cannot_run as exc:
            log(f"  skipped {pol}: {_reason(exc)}")
            continue
        if not np.array_equal(work.get().view(np.uint8), ref.view(np.uint8)):
            raise AssertionError(f"{pol} sorted {dt} n={n} wrongly on {profile.describe()}")
        timed.append((pol, sorter))
    ref_at = next((i for i, (pol, _) in enumerate(timed) if pol == default), None)
    reps = repeat
    if ref_at is not None:
        one = min(run_once(timed[ref_at][1]) for _ in range(3)) * 1e-3
        reps = max(repeat, min(500, int(seconds / max(one, 1e-6))))
    return list(_time_paired(timed, ref_at, run_once, reps))


def _reason(exc, keep=300):
    """``exc`` on one line: its type and message, the middle of a long message (a build log's)
    left out."""
    text = " ".join(str(exc).split())
    if len(text) > 2 * keep:
        text = f"{text[:keep]} ... {text[-keep:]}"
    return f"{type(exc).__name__}: {text}"


def _time_paired(timed, ref_at, run_once, repeat):
    """Time each (policy, sorter) of ``timed``; yield (policy, ms, ratio to the reference).

    A machine shared with others runs at different speeds from one second to the next (2-3x on a
    2-core virtual machine), and a run of slow seconds can fall on a few candidates of a round.
    So each candidate is timed right after the reference (``timed[ref_at]``, the planner's
    default), and ranked by the median of its time over the reference's time just before: the
    machine's speed changes little within a pair. The ms reported is that median ratio times the
    reference's median time. Without a reference, medians of round-robin times are used."""
    times = [[] for _ in timed]
    ratios = [[] for _ in timed]
    for rep in range(repeat):
        shift = rep % max(len(timed), 1)
        for i in list(range(shift, len(timed))) + list(range(shift)):
            if ref_at is None:
                times[i].append(run_once(timed[i][1]))
            elif i != ref_at:
                r = run_once(timed[ref_at][1])
                c = run_once(timed[i][1])
                times[ref_at].append(r)
                times[i].append(c)
                ratios[i].append(c / r)
    if ref_at is not None and len(timed) == 1:
        times[ref_at] = [run_once(timed[ref_at][1]) for _ in range(repeat)]
    ref_ms = float(np.median(times[ref_at])) if ref_at is not None else None
    for i, (pol, _) in enumerate(timed):
        if ref_at is None:
            yield pol, float(np.median(times[i])), None
        else:
            ratio = 1.0 if i == ref_at else float(np.median(ratios[i]))
            yield pol, ratio * ref_ms, ratio


def report(rows, device_label):
    """Markdown: per dtype and size, the best time of each (algorithm, radix bits), the planner's
    default and the autotuned winner."""
    out = [f"#### {device_label}", "",
           "| dtype | n | " + " | ".join(f"{a} {b}-bit" for a, b in _COLUMNS)
           + " | planner default | autotuned pick |",
           "| --- | --- |" + " ---: |" * len(_COLUMNS) + " --- | --- |"]
    keys = sorted({(r["dtype"], r["log2n"]) for r in rows})
    for dtype, lg in keys:
        rs = [r for r in rows if r["dtype"] == dtype and r["log2n"] == lg]
        best = min(rs, key=lambda r: r["ms"])
        cells = []
        for alg, rb in _COLUMNS:
            ms = [r["ms"] for r in rs if r["policy"]["algorithm"] == alg
                  and r["policy"]["radix_bits"] == rb]
            cells.append(f"{min(ms):.3f}" if ms else "-")
        dflt = [r for r in rs if r["default"]]
        dtext = (f"{dflt[0]['ms']:.3f} ms ({dflt[0]['ms'] / best['ms']:.2f}x best)" if dflt
                 else "-")
        pol = policy_from_fields(best["policy"])
        out.append(f"| {dtype} | 2^{lg} | " + " | ".join(cells)
                   + f" | {dtext} | {best['ms']:.3f} ms {pol.label} |")
    out += ["", "Milliseconds per sort: each candidate's median time over the planner default's "
            "time just before it (back-to-back pairs), times the default's median."]
    return "\n".join(out) + "\n"


_COLUMNS = [("reduce_then_scan", 2), ("reduce_then_scan", 4), ("reduce_then_scan", 8),
            ("onesweep", 2), ("onesweep", 4), ("onesweep", 8), ("single_wg", 4)]
