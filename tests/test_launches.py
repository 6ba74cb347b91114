"""Ready launch sequences (clradix/launches.py): a call configuration is planned and built once,
later calls only set buffers and offsets; results stay right when what a call passes changes
between calls, and when configurations that share a driver's kernel objects alternate."""

import zlib

import numpy as np
import pytest
import pyopencl.array as cl_array

import clradix
from clradix.core import launches
from clradix.core.keys import key_codec
from clradix.drivers.digit_passes import SortJob

from conftest import check_sort, one_group_tile
from data import float_specials

from test_threads import THREADS, _run_threads


def _tile(ctx):
    return one_group_tile(clradix.Sorter(ctx), ctx.devices[0], np.uint32)


def test_a_repeated_call_builds_nothing(ctx, queue, rng, monkeypatch):
    """The second call of a configuration plans nothing and makes no launch sequence."""
    sorter = clradix.Sorter(ctx)
    n = 3 * _tile(ctx) + 1
    keys = float_specials(rng, np.float32, n)
    check_sort(queue, sorter, keys, "pairs")
    made, prepared = [], []
    init = launches.LaunchSequence.__init__
    monkeypatch.setattr(launches.LaunchSequence, "__init__",
                        lambda self, driver: (made.append(driver), init(self, driver))[1])
    prepare = sorter.planner.sort_driver
    monkeypatch.setattr(sorter.planner, "sort_driver",
                        lambda *a: (prepared.append(a), prepare(*a))[1])
    for _ in range(3):
        check_sort(queue, sorter, keys, "pairs")
    assert made == [] and prepared == []
    check_sort(queue, sorter, keys, "pairs", descending=True)   # a new configuration
    assert len(made) == 1


def test_what_changes_between_calls(ctx, queue, rng):
    """One Sorter, calls that alternate n, buffers, offsets (views), dtype, direction, values,
    bit range and sort/argsort: every result checked (a stale argument would show)."""
    sorter = clradix.Sorter(ctx)
    tile = _tile(ctx)
    cases = [
        (np.uint32, 3 * tile + 1, "keys", {}),
        (np.uint32, 5 * tile - 3, "keys", {}),          # another n, the same driver
        (np.uint32, 3 * tile + 1, "keys", dict(pad=7)),  # the first n, at an offset
        (np.uint32, 3 * tile + 1, "pairs", dict(pad=3)),
        (np.uint32, 3 * tile + 1, "keys", dict(descending=True)),
        (np.float32, 3 * tile + 1, "argsort", {}),
        (np.uint32, 3 * tile + 1, "argsort", dict(out=True)),
        (np.uint32, 3 * tile + 1, "pairs", dict(begin_bit=4, end_bit=20)),
        (np.int64, 2 * tile + 9, "pairs", {}),
        (np.uint32, tile - 1, "keys", {}),              # one work-group
        (np.uint32, tile - 5, "pairs", dict(pad=2)),
        (np.uint32, tile - 1, "argsort", {}),
        (np.float16, tile // 2, "keys", dict(descending=True)),
    ]
    for rnd in range(2):
        for dtype, n, op, kw in cases:
            keys = float_specials(rng, dtype, n)
            check_sort(queue, sorter, keys, op, what=f"round {rnd}", **kw)


def test_offsets_change_under_one_configuration(ctx, queue, rng):
    """The same configuration on views at different offsets of one buffer, in turn."""
    sorter = clradix.Sorter(ctx)
    n = 2 * _tile(ctx) + 5
    keys = float_specials(rng, np.uint32, n + 40)
    d = cl_array.to_device(queue, keys)
    vals = cl_array.to_device(queue, np.arange(n + 40, dtype=np.uint32))
    expect, evals = keys.copy(), np.arange(n + 40, dtype=np.uint32)
    for off in (0, 11, 40, 11, 0, 23):
        sorter.sort(queue, d[off:off + n], values=vals[off:off + n]).wait()
        order = np.argsort(expect[off:off + n], kind="stable")
        expect[off:off + n] = expect[off:off + n][order]
        evals[off:off + n] = evals[off:off + n][order]
        np.testing.assert_array_equal(d.get(), expect)
        np.testing.assert_array_equal(vals.get(), evals)


def test_sequence_names_match_the_trace(ctx, queue, rng):
    """A ready sequence's commands are what the driver's trace records, in order (after a first
    call, which may also fill a state block it makes for the queue)."""
    sorter = clradix.Sorter(ctx)
    n = 4 * _tile(ctx) + 3
    driver = sorter.planner.sort_driver(ctx.devices[0], key_codec(np.uint32), 4, n)
    seq = driver.sequence(SortJob(n, 0, 32, False, False, True))
    d = cl_array.to_device(queue, float_specials(rng, np.uint32, n))
    v = cl_array.to_device(queue, np.arange(n, dtype=np.uint32))
    sorter.sort(queue, d, values=v).wait()
    driver.trace = []
    evt = sorter.sort(queue, d, values=v)
    evt.wait()
    assert [name for name, _ in driver.trace] == seq.names()
    assert driver.trace[-1][1] == evt
    driver.trace = None


def test_threads_alternate_sizes_of_one_driver(ctx, rng):
    """Threads share a Sorter whose configurations share kernel objects (one driver, several n,
    offsets): each call rebinds what another one changed, under the Sorter's lock."""
    import pyopencl as cl
    sorter = clradix.Sorter(ctx)
    tile = _tile(ctx)
    sizes = [2 * tile + 1, 3 * tile - 7, tile - 3, tile // 2]
    queues = [cl.CommandQueue(ctx) for _ in range(THREADS)]

    def work(t):
        r = np.random.default_rng(zlib.crc32(f"launches {t}".encode()))
        for i in range(8):
            n = sizes[(t + i) % len(sizes)]
            keys = float_specials(r, np.uint32, n)
            check_sort(queues[t], sorter, keys, ("keys", "pairs", "argsort")[i % 3],
                       pad=(t + i) % 3, what=f"thread {t}")
    _run_threads(work, THREADS)


def test_a_launch_is_checked_against_the_kernel_declaration(ctx):
    """Each kernel's parameters come from its rendered source; a launch with a wrong count or a
    wrong type is refused when its sequence is made (before anything is enqueued), naming the
    kernel, the parameter and what was given."""
    sorter = clradix.Sorter(ctx, algorithm="reduce_then_scan")
    driver = sorter.planner.sort_driver(ctx.devices[0], key_codec(np.uint32), 0, 1 << 16)
    params = driver.declaration("rts_scan")
    assert [p.name for p in params] and params[0].dtype is None and params[1].dtype == np.uint32
    seq = launches.LaunchSequence(driver)
    buf = launches.Buf(len(launches.SortOperands._fields))   # the first temporary's slot
    with pytest.raises(TypeError, match=r"kernel rts_scan: expected 2 arguments .*got 3"):
        seq.launch("scan", "rts_scan", (64,), (64,), [buf, 5, 6])
    with pytest.raises(TypeError, match=rf"kernel rts_scan: parameter 1 \(uint {params[1].name}\) "
                                        r"takes an integer, got 2.5"):
        seq.launch("scan", "rts_scan", (64,), (64,), [buf, 2.5])
    with pytest.raises(TypeError, match=rf"parameter 0 \(.*{params[0].name}\) takes a buffer, "
                                        r"got 7"):
        seq.launch("scan", "rts_scan", (64,), (64,), [7, 1])
    with pytest.raises(TypeError, match=r"takes values from 0 to 4294967295, got -1"):
        seq.launch("scan", "rts_scan", (64,), (64,), [buf, -1])
    with pytest.raises(TypeError, match=r"takes a uint, got the element offset"):
        seq.launch("scan", "rts_scan", (64,), (64,), [buf, launches.Off(0)])
    assert seq.steps == []   # nothing refused was kept
    seq.launch("scan", "rts_scan", (64,), (64,), [buf, 3])
    assert seq.names() == ["scan"]


def test_declarations_resolve_defines_and_typedefs():
    from clradix.core.declarations import parse_kernels
    src = """#define KEY_T uint
    typedef unsigned long idx_t;
    /* a comment (with parentheses) */
    __kernel __attribute__((reqd_work_group_size(64, 1, 1))) void k(__global const KEY_T* restrict a,
        ulong a_off, idx_t n, KEY_T flip, float scale) {}
    __kernel void none(void) {}"""
    decls = parse_kernels(src)
    assert decls["none"] == ()
    assert [(p.name, p.cl_type, p.dtype) for p in decls["k"]] == [
        ("a", "uint*", None), ("a_off", "ulong", np.dtype(np.uint64)),
        ("n", "unsigned long", np.dtype(np.uint64)), ("flip", "uint", np.dtype(np.uint32)),
        ("scale", "float", np.dtype(np.float32))]
