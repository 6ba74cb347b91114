"""Kernels whose work-groups wait on other work-groups, with the waiting paths forced: many sorts
and top-k calls in fresh processes, each with a time limit, on the device under test (PoCL with
1, 2 and 4 threads), the look-back falling back after one spin, and temporaries that start out as
words a look-back would take for counts (so that a read of a word nobody wrote this launch shows in
the keys). The forward-progress table in docs/guarantees.md names these tests.

Two faults showed here before they were fixed (BENCHMARKS_NOTES.md): a look-back that fell back on
tile 0 posted tile 0's counts as an aggregate, and a reader walked on past tile 0 into ring slots
no tile of the launch writes (os_fused sorted wrongly or wrote out of bounds on PoCL with 4
threads); and topk_fused's last work-group of a pass handed the next pass its state in a
work-item 0 block that PoCL 3.0 ran for every work-item, whose repeated counter resets undid the
next pass's counts (calls that never finished on PoCL with 2 and 4 threads;
tests/test_barrier_branches.py holds the reduced kernel).

The short runs here are CI's; CLRADIX_LONG_STRESS=1 runs ten times as many sorts and calls per
process, and more seeds (minutes each on two cores).
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyopencl as cl
import pytest

import clradix

# The child: sorts `count` key-value pairs of 8-bit keys with 2-bit digits (four passes), sizes
# from 1 to 60000 keys, seed fixed; prints WRONG per wrong result, exits 1 on any.
_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import pyopencl as cl
    import pyopencl.array as cla
    import clradix

    platform, device, fused, seed, count = sys.argv[1:6]
    dev = [d for p in cl.get_platforms() if p.name == platform
           for d in p.get_devices() if d.name == device][0]
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)

    def poisoned(nbytes):
        # every word 0xffffffff: a flag, the odd epoch and the largest count
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(int(nbytes), 4))
        cl.enqueue_fill_buffer(queue, buf, np.uint32(0xffffffff), 0, max(int(nbytes), 4) // 4 * 4)
        return buf

    sorter = clradix.Sorter(ctx, allocator=poisoned, algorithm="onesweep", radix_bits=2,
                            wg_size=64, items_per_thread=4, ranking="local", sg_size=32,
                            spin_limit=1, fused_passes=fused == "1")
    rng = np.random.default_rng(int(seed))
    bad = 0
    for i in range(int(count)):
        n = int(rng.integers(1, 60000))
        keys = rng.integers(0, 256, n, dtype=np.uint8)
        dk = cla.to_device(queue, keys)
        dv = cla.to_device(queue, np.arange(n, dtype=np.uint32))
        sorter.sort(queue, dk, values=dv)
        order = np.argsort(keys, kind="stable")
        if not (np.array_equal(dk.get(), keys[order]) and np.array_equal(dv.get(), order)):
            bad += 1
            print("WRONG sort", i, "of", n, "keys", flush=True)
    sys.exit(1 if bad else 0)
""")

LONG = os.environ.get("CLRADIX_LONG_STRESS", "").strip() not in ("", "0")
SORTS = 400 if LONG else 40
CALLS = 120 if LONG else 12
SORT_SEEDS = [7, 8, 9, 10] if LONG else [7]
TOPK_SEEDS = [5, 6, 7, 8] if LONG else [5]
# seconds per child; a build of the program takes most of a minute on 2 cores
TIME_LIMIT = 1800 if LONG else 400


def _is_pocl(device):
    return "portable computing language" in device.platform.name.lower()


def _child_env(dev, threads):
    """The child's environment: this checkout's clradix first; PoCL on `threads` threads."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(clradix.__file__).parents[1])]
                                        + env.get("PYTHONPATH", "").split(os.pathsep))
    env["CLRADIX_QUIET_BUILDS"] = "1"
    if _is_pocl(dev):
        env["POCL_MAX_PTHREAD_COUNT"] = str(threads)
    return env


def stress(ctx, fused, threads, seed=7, sorts=SORTS):
    """Runs the child on ctx's device; returns (exit status, output). PoCL runs its work-groups
    on `threads` threads (POCL_MAX_PTHREAD_COUNT); another device on its own."""
    dev = ctx.devices[0]
    env = _child_env(dev, threads)
    args = [sys.executable, "-c", _CHILD, dev.platform.name, dev.name, "1" if fused else "0",
            str(seed), str(sorts)]
    try:
        run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{sorts} sorts did not finish within {TIME_LIMIT} s (a wait that never "
                    f"ended?): {exc.stdout}")
    return run.returncode, run.stdout + run.stderr


def _threads_or_skip(ctx, threads):
    dev = ctx.devices[0]
    if "oclgrind" in dev.platform.name.lower():
        pytest.skip("too slow on the simulator: tests/test_oclgrind.py runs its own cases")
    if not _is_pocl(dev) and threads != 1:
        pytest.skip("the thread count is PoCL's (POCL_MAX_PTHREAD_COUNT)")
    if not dev.type & cl.device_type.CPU and threads != 1:
        pytest.skip("a thread count applies to CPU devices")


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("fused", [True, False], ids=["os_fused", "os_pass"])
def test_look_back_falls_back_on_tile_0(ctx, fused, threads):
    """Onesweep's look-back, one spin before the fallback, in one launch of every pass
    (os_fused: the passes also wait for one another) and a launch per pass (os_pass): exact
    results, no crash, no hang, with PoCL on 1, 2 and 4 threads."""
    _threads_or_skip(ctx, threads)
    for seed in SORT_SEEDS:
        status, out = stress(ctx, fused, threads, seed=seed)
        assert status == 0, f"seed {seed}: exit status {status}:\n{out[-3000:]}"


# The child for the fused top-k passes: calls on rows of 2000 to 60000 keys and one row past the
# threshold pass's minimum, seed fixed; the refusal on CPUs set aside (the kernel is tested, not
# the planner's choice). Prints WRONG per wrong result, exits 1 on any.
_TOPK_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import pyopencl as cl
    import pyopencl.array as cla
    import clradix

    platform, device, seed, count = sys.argv[1:5]
    dev = [d for p in cl.get_platforms() if p.name == platform
           for d in p.get_devices() if d.name == device][0]
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)
    sel = clradix.Selector(ctx)
    sel.overrides.update(single_max=0, fused=True)
    rng = np.random.default_rng(int(seed))
    bad = 0
    for i in range(int(count) + 1):
        rows, n = (2, 1 << 18) if i == int(count) else (int(rng.integers(1, 4)),
                                                        int(rng.integers(2000, 60000)))
        k = int(rng.integers(1, 200))
        a = rng.random((rows, n)).astype(np.float32)
        values, _, event = sel.topk(queue, cla.to_device(queue, a), k)
        event.wait()
        if not np.array_equal(values.get(), -np.sort(-a, axis=1)[:, :k]):
            bad += 1
            print("WRONG call", i, rows, "x", n, "k", k, flush=True)
    sys.exit(1 if bad else 0)
""")


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_fused_topk_passes_wait(ctx, threads):
    """The fused top-k passes (work-groups of pass p wait for their row's state of pass p) on the
    device under test, with PoCL on 1, 2 and 4 threads: every call finishes and matches numpy.
    Before the fix calls on 2 and 4 threads never finished (every thread spinning for a state
    whose pass had lost its counts)."""
    _threads_or_skip(ctx, threads)
    dev = ctx.devices[0]
    env = _child_env(dev, threads)
    for seed in TOPK_SEEDS:
        args = [sys.executable, "-c", _TOPK_CHILD, dev.platform.name, dev.name, str(seed),
                str(CALLS)]
        try:
            run = subprocess.run(args, env=env, capture_output=True, text=True,
                                 timeout=TIME_LIMIT)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"seed {seed}: fused top-k calls did not finish within {TIME_LIMIT} s: "
                        f"{exc.stdout}")
        assert run.returncode == 0, (f"seed {seed}: exit status {run.returncode}:\n"
                                     f"{(run.stdout + run.stderr)[-3000:]}")
