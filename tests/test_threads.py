"""One Sorter used from several threads at once, each on its own queue of the same context."""

import sys
import threading
import time
import zlib

import numpy as np
import pyopencl as cl
import pytest

import clradix
from clradix.core.launches import LaunchSequence

from conftest import SORT_OPS, check_sort, one_group_tile
from data import DISTRIBUTIONS

THREADS = 4
ROUNDS = 20
DTYPES = [np.uint8, np.int16, np.float16, np.uint32, np.float32, np.int64, np.float64]


def _sizes(ctx):
    """Sizes for both algorithms the planner uses here: within one tile and of several tiles."""
    tile = one_group_tile(clradix.Sorter(ctx), ctx.devices[0], np.uint32)
    return [0, 1, 17, tile - 1, tile + 1, 3 * tile + 5, 7 * tile]


def _one_round(sorter, queue, rng, sizes):
    dtype = np.dtype(DTYPES[rng.integers(len(DTYPES))])
    n = int(sizes[rng.integers(len(sizes))])
    mode = SORT_OPS[rng.integers(len(SORT_OPS))]
    desc = bool(rng.integers(2))
    dist = ("uniform", "distinct16", "float_specials")[rng.integers(3)]
    keys = DISTRIBUTIONS[dist](rng, dtype, n)
    check_sort(queue, sorter, keys, mode, descending=desc, what=dist)


def _run_threads(target, count):
    errors = []
    start = threading.Barrier(count)

    def body(t):
        try:
            start.wait()
            target(t)
        except BaseException as exc:  # reported below
            errors.append((t, exc))
    threads = [threading.Thread(target=body, args=(t,)) for t in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=600)
    assert not any(th.is_alive() for th in threads), "a thread hangs"
    if errors:
        t, exc = errors[0]
        raise AssertionError(f"{len(errors)} thread(s) failed; thread {t}: {exc!r}") from exc


@pytest.fixture
def busy_switching(monkeypatch):
    """Threads switch as often as the interpreter can (races show up more often), and every
    launch sequence's run records how many run at once (the Sorter's lock allows one)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    active = [0]
    peak = [0]
    guard = threading.Lock()

    def wrap(cls, name):
        inner = getattr(cls, name)

        def watched(self, *args, **kw):
            with guard:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            try:
                time.sleep(0.002)  # widen the window in which another enqueue could start
                return inner(self, *args, **kw)
            finally:
                with guard:
                    active[0] -= 1
        monkeypatch.setattr(cls, name, watched)
    wrap(LaunchSequence, "run")   # sets the kernels' arguments and enqueues
    yield peak
    sys.setswitchinterval(interval)


def test_one_sorter_four_queues(ctx, busy_switching):
    """A fresh Sorter (empty caches: the first rounds plan and build concurrently), 4 threads x
    20 rounds of mixed dtypes, sizes, modes and directions, every result checked."""
    ctx = cl.Context(ctx.devices)  # built programs are cached per context: start with none
    sorter = clradix.Sorter(ctx)
    sizes = _sizes(ctx)
    queues = [cl.CommandQueue(ctx) for _ in range(THREADS)]
    done = [0] * THREADS
    builds = {}
    build = sorter._programs._build

    def counting_build(template, params, options):
        key = (template, tuple(sorted(params.items())), tuple(options))
        builds[key] = builds.get(key, 0) + 1
        return build(template, params, options)
    sorter._programs._build = counting_build

    def work(t):
        rng = np.random.default_rng(zlib.crc32(f"threads {t}".encode()))
        for _ in range(ROUNDS):
            _one_round(sorter, queues[t], rng, sizes)
            done[t] += 1
    _run_threads(work, THREADS)
    assert done == [ROUNDS] * THREADS
    # concurrent first uses of a configuration built its program once
    assert builds and max(builds.values()) == 1, builds
    assert busy_switching[0] == 1  # enqueues (which set kernel arguments) never overlapped
    assert len(sorter.planner.drivers) <= len(builds)


def test_sorts_while_caches_are_cleared(ctx):
    """clear_caches from another thread while sorts run: sorts rebuild what they need and stay
    correct (a Sorter's kernels in use are never torn down under a running sort)."""
    ctx = cl.Context(ctx.devices)  # clearing empties the context's programs: not the shared ones
    sorter = clradix.Sorter(ctx)
    sizes = _sizes(ctx)
    queues = [cl.CommandQueue(ctx) for _ in range(THREADS - 1)]
    stop = threading.Event()

    def work(t):
        if t == THREADS - 1:
            while not stop.is_set():
                sorter.clear_caches()
                stop.wait(0.05)
            return
        try:
            rng = np.random.default_rng(zlib.crc32(f"clear {t}".encode()))
            for _ in range(ROUNDS // 2):
                _one_round(sorter, queues[t], rng, sizes)
        finally:
            if t == 0:
                stop.set()
    _run_threads(work, THREADS)


def test_module_functions_from_threads(ctx):
    """clradix.sort / clradix.argsort share one Sorter per context across threads."""
    queues = [cl.CommandQueue(ctx) for _ in range(THREADS)]
    tile = one_group_tile(clradix.Sorter(ctx), ctx.devices[0], np.float32)

    def work(t):
        rng = np.random.default_rng(zlib.crc32(f"module {t}".encode()))
        for r in range(ROUNDS // 2):
            keys = DISTRIBUTIONS["float_specials"](rng, np.float32, int(rng.integers(1, 4 * tile)))
            check_sort(queues[t], None, keys, descending=bool(r % 2))
            check_sort(queues[t], None, keys, "argsort")
    _run_threads(work, THREADS)
