"""Calls that once blocked, scrambled data or failed in the wrong way: each test here failed before
its fix (host waits, guessed value widths, aliasing, return values, size queries that built
kernels, the numpy-like API's queue checks)."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.core import render

from conftest import returns_within
from reference import ref_argsort


@pytest.mark.parametrize("op", ["sort", "sort_values", "argsort_out"])
def test_no_host_wait_behind_a_user_event(ctx, queue, rng, op):
    """Twenty calls on one Array gated on a user event: none may wait on the host (pyopencl's
    Array.add_event waits once an array holds more than 12 events)."""
    sorter = clradix.Sorter(ctx)
    keys = rng.integers(0, 1000, 3000).astype(np.uint32)
    d = cl_array.to_device(queue, keys)
    v = cl_array.to_device(queue, np.arange(keys.size, dtype=np.uint32))
    out = cl_array.empty(queue, keys.size, np.uint32)
    queue.finish()
    gate = cl.UserEvent(ctx)

    def calls():
        for _ in range(20):
            if op == "sort":
                sorter.sort(queue, d, wait_for=[gate])
            elif op == "sort_values":
                sorter.sort(queue, d, values=v, wait_for=[gate])
            else:
                sorter.argsort(queue, d, out=out, wait_for=[gate])
    returned = returns_within(calls, lambda: gate.set_status(cl.command_execution_status.COMPLETE))
    assert returned, "a call waited on the host for an event completed only afterwards"
    queue.finish()
    assert len(d.events) <= 2 and len(out.events) <= 1
    if op == "argsort_out":
        np.testing.assert_array_equal(out.get(), ref_argsort(keys))
    else:
        np.testing.assert_array_equal(d.get(), np.sort(keys))
    if op == "sort_values":
        # sorting sorted keys again keeps their order: the values are the first sort's order
        np.testing.assert_array_equal(v.get(), ref_argsort(keys))


def test_new_results_behind_a_user_event(ctx, queue, rng):
    """Calls that each take new memory (results, temporaries) behind one unset user event, then
    the event set: every result right. On NVIDIA's OpenCL (H200, driver 580.159.04) the second
    such call once crashed the process when the event was set: its pool's new block was migrated
    to the queue behind the first call's waiting commands (core/memory.py, block_allocator)."""
    x = rng.standard_normal((2, 700)).astype(np.float32)
    d = cl_array.to_device(queue, x)
    wide = cl_array.to_device(queue, np.tile(x, (1, 50)))   # (uploads wait on the host)
    queue.finish()
    gate = cl.UserEvent(ctx)
    out = {}

    def calls():
        w = [gate]
        out["sort"] = clradix.sort(d, wait_for=w)
        out["median"] = clradix.median(d, axis=1, wait_for=w)
        out["argsort"] = clradix.argsort(d, wait_for=w)
        out["kth"] = clradix.kthvalue(d, 3, wait_for=w)
        out["big"] = clradix.sort(wide, wait_for=w)
        out["topk"] = clradix.topk(d, 5, wait_for=w)
        out["part"] = clradix.partition(d, 11, wait_for=w)
    assert returns_within(calls, lambda: gate.set_status(cl.command_execution_status.COMPLETE))
    queue.finish()
    np.testing.assert_array_equal(out["sort"].get(), np.sort(x, axis=1))
    np.testing.assert_array_equal(out["median"].get(), np.median(x, axis=1))
    np.testing.assert_array_equal(out["argsort"].get(), np.argsort(x, axis=1, kind="stable"))
    np.testing.assert_array_equal(out["kth"].values.get(), np.sort(x, axis=1)[:, 2])
    np.testing.assert_array_equal(out["big"].get(), np.sort(np.tile(x, (1, 50)), axis=1))
    np.testing.assert_array_equal(np.sort(out["topk"].values.get(), axis=1),
                                  np.sort(np.sort(x, axis=1)[:, -5:], axis=1))
    np.testing.assert_array_equal(out["part"].get()[:, 11], np.sort(x, axis=1)[:, 11])


def test_values_buffer_needs_its_dtype(ctx, queue, rng):
    """Sorting the first 500 of 1000 keys with a 1000-element values Buffer: the width is never
    guessed from the size (it once read them as 8-byte values and wrote past values[500])."""
    keys = rng.integers(0, 2 ** 32, 1000, dtype=np.uint32)
    vals = np.arange(1000, dtype=np.uint32) * 7
    mf = cl.mem_flags
    kbuf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=keys)
    vbuf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=vals)
    sorter = clradix.Sorter(ctx)
    with pytest.raises(ValueError, match="a Buffer does not say its element type; pass "
                                         "value_dtype="):
        sorter.sort(queue, kbuf, n=500, values=vbuf)
    sorter.sort(queue, kbuf, n=500, values=vbuf, value_dtype=np.uint32).wait()
    out_k, out_v = np.empty_like(keys), np.empty_like(vals)
    cl.enqueue_copy(queue, out_k, kbuf)
    cl.enqueue_copy(queue, out_v, vbuf).wait()
    order = ref_argsort(keys[:500])
    np.testing.assert_array_equal(out_k[:500], keys[:500][order])
    np.testing.assert_array_equal(out_v[:500], vals[:500][order])
    np.testing.assert_array_equal(out_k[500:], keys[500:])
    np.testing.assert_array_equal(out_v[500:], vals[500:])


def test_overlapping_operands_are_refused(ctx, queue, rng):
    """Values that share memory with the keys, or argsort's ``out`` on the keys, are refused
    before anything is enqueued (a kernel reading one while writing the other scrambles both)."""
    keys = rng.integers(0, 2 ** 32, 2000, dtype=np.uint32)
    d = cl_array.to_device(queue, keys)
    sorter = clradix.Sorter(ctx)
    with pytest.raises(ValueError, match="values overlaps the keys"):
        sorter.sort(queue, d[:1000], values=d[500:1500])
    with pytest.raises(ValueError, match="values must be another buffer than the keys"):
        sorter.sort(queue, d, values=d)
    with pytest.raises(ValueError, match="out overlaps the keys"):
        sorter.argsort(queue, d[:1000], out=d[999:1999])
    parent = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8192)
    sub_a, sub_b = parent.get_sub_region(0, 4096), parent.get_sub_region(0, 4096)
    with pytest.raises(ValueError, match="values overlaps the keys"):
        sorter.sort(queue, sub_a, values=sub_b, value_dtype=np.uint32)
    np.testing.assert_array_equal(d.get(), keys)
    # adjacent views of one buffer do not overlap: allowed
    sorter.sort(queue, d[:1000], values=d[1000:2000]).wait()
    order = ref_argsort(keys[:1000])
    np.testing.assert_array_equal(d.get()[:1000], keys[:1000][order])
    np.testing.assert_array_equal(d.get()[1000:], keys[1000:][order])


def test_argsort_returns_the_given_out(ctx, queue, rng):
    keys = rng.standard_normal(5000).astype(np.float32)
    d = cl_array.to_device(queue, keys)
    sorter = clradix.Sorter(ctx)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * keys.size)
    idx, evt = sorter.argsort(queue, d, out=buf)
    assert idx is buf
    evt.wait()
    got = np.empty(keys.size, np.uint32)
    cl.enqueue_copy(queue, got, buf).wait()
    np.testing.assert_array_equal(got, ref_argsort(keys))
    arr = cl_array.empty(queue, keys.size, np.uint32)
    idx, evt = sorter.argsort(queue, d, out=arr)
    assert idx is arr


def test_temp_bytes_builds_nothing(ctx, monkeypatch):
    """A size query plans but compiles no kernel."""
    built = []
    real = render.ProgramCache.get

    def spy(self, *args, **kw):
        built.append(args[0])
        return real(self, *args, **kw)
    monkeypatch.setattr(render.ProgramCache, "get", spy)
    sorter = clradix.Sorter(ctx)
    for n in (10, 5000, 10 ** 6):
        for algorithm in (None, "onesweep", "reduce_then_scan"):
            s = sorter if algorithm is None else clradix.Sorter(ctx, algorithm=algorithm)
            assert s.temp_bytes(n, np.float32, np.uint32) >= 0
    assert built == []


def test_numpy_like_api_checks_the_queue(ctx, queue):
    other_ctx = cl.Context([ctx.devices[0]])
    other_queue = cl.CommandQueue(other_ctx)
    a = cl_array.to_device(queue, np.arange(10, dtype=np.uint32)[::-1].copy())
    for fn in (clradix.sort, clradix.argsort):
        with pytest.raises(ValueError, match="queue belongs to another OpenCL context"):
            fn(a, queue=other_queue)
        with pytest.raises(TypeError, match="queue: expected a pyopencl.CommandQueue"):
            fn(a, queue="q")
    no_queue = cl_array.Array(ctx, 10, np.uint32, data=a.base_data)
    for fn in (clradix.sort, clradix.argsort):
        with pytest.raises(ValueError, match="the array has no queue"):
            fn(no_queue)
    np.testing.assert_array_equal(clradix.sort(no_queue, queue=queue).get(), np.arange(10))


# ----------------------------------------------------------------------------- outputs over inputs

def _aliasing_calls(queue):
    """(name, the call, the arrays it must leave unchanged) of every public function with an
    output over one of its inputs: each was accepted and gave wrong results (the numpy-like
    functions skipped the check when ``out`` was the input itself, and never checked
    searchsorted's values, its sorter or lexsort's keys)."""
    rng = np.random.default_rng(51)

    def dev(x):
        return cl_array.to_device(queue, np.ascontiguousarray(x))
    a = dev(rng.permutation(40).astype(np.int64))
    a2 = dev(rng.permutation(40).astype(np.int64).reshape(5, 8))
    idx = dev(np.zeros(40, np.int64))
    vals = dev(np.zeros(5, np.int64))
    s = dev(np.arange(1000, dtype=np.int64))
    v = dev(rng.integers(0, 1000, 1000))
    big = dev(rng.integers(0, 1000, 1001))
    order = dev(np.arange(1000, dtype=np.int64))
    k0, k1 = dev(rng.integers(0, 3, 60)), dev(rng.integers(0, 3, 60))
    pair = dev(rng.integers(0, 3, 120))
    sorter, sel = clradix.Sorter(queue.context), clradix.Selector(queue.context)
    return [
        ("topk out values = a", lambda: clradix.topk(a, 40, out=(a, idx)), [a, idx]),
        ("topk out indices = a", lambda: clradix.topk(a, 5, out=(vals, a[:5])), [a, vals]),
        ("topk axis 0 out = a", lambda: clradix.topk(a2, 5, 0, out=(a2, idx.reshape(5, 8))),
         [a2, idx]),
        ("topk out pair one array", lambda: clradix.topk(a, 5, out=(vals, vals)), [a, vals]),
        ("argsort out = a", lambda: clradix.argsort(a, out=a), [a]),
        ("argsort axis 0 out = a", lambda: clradix.argsort(a2, 0, out=a2), [a2]),
        ("sort out = another view of a", lambda: clradix.sort(
            a, out=cl_array.Array(queue, (40,), np.int64, data=a.base_data)), [a]),
        ("searchsorted out = x1", lambda: clradix.searchsorted(s, v, out=s), [s, v]),
        ("searchsorted out over x2", lambda: clradix.searchsorted(s, big[:1000],
                                                                  out=big[1:]), [s, big]),
        ("searchsorted out = sorter", lambda: clradix.searchsorted(s, v, sorter=order,
                                                                   out=order), [s, v, order]),
        ("lexsort out = a key", lambda: clradix.lexsort([k0, k1], out=k1), [k0, k1]),
        ("lexsort out over rows", lambda: clradix.lexsort(pair.reshape(2, 60), out=pair[30:90]),
         [pair]),
        ("Sorter.argsort out = keys", lambda: sorter.argsort(queue, a, out=a), [a]),
        ("Sorter.lexsort out = a key", lambda: sorter.lexsort(queue, [k0, k1], out=k0),
         [k0, k1]),
        ("Selector.topk values_out = keys", lambda: sel.topk(queue, a, 40, values_out=a), [a]),
    ]


def test_outputs_over_inputs_are_refused(queue):
    """One rule for every function: an output sharing a byte with an input (or with another
    output) is a ValueError raised before anything is enqueued, so no input changes; the one
    exception, sort(a, out=a), sorts in place."""
    for name, call, arrays in _aliasing_calls(queue):
        before = [x.get() for x in arrays]
        with pytest.raises(ValueError, match="overlaps") as info:
            call()
        assert "of one buffer): pass " in str(info.value), (name, str(info.value))
        queue.finish()
        for x, want in zip(arrays, before):
            np.testing.assert_array_equal(x.get(), want, err_msg=name)
    # sort's in-place form stays, along the last axis and along another one
    x = np.random.default_rng(5).permutation(40).astype(np.int64).reshape(5, 8)
    for axis in (-1, 0):
        d = cl_array.to_device(queue, x)
        assert clradix.sort(d, axis, out=d) is d
        np.testing.assert_array_equal(d.get(), np.sort(x, axis))
    with pytest.raises(ValueError, match=r"or the input itself \(out=a\) to sort in place"):
        clradix.sort(d, out=cl_array.Array(queue, (5, 8), np.int64, data=d.base_data))


def test_numpy_outputs_may_share_the_input_not_each_other(queue):
    """numpy inputs are copied to the device before anything is written, so a numpy out over
    the input gives the right result; topk's two numpy outs over each other are refused before
    either is written."""
    x = np.random.default_rng(6).permutation(30).astype(np.int64)
    b = x.copy()
    assert clradix.argsort(b, out=b, queue=queue) is b
    np.testing.assert_array_equal(b, np.argsort(x, kind="stable"))
    o = np.full(3, -1, np.int64)
    with pytest.raises(ValueError, match="the values and indices arrays overlap"):
        clradix.topk(x, 3, out=(o, o), queue=queue)
    np.testing.assert_array_equal(o, -1)
    with pytest.raises(ValueError, match=r"out\[1\] \(indices\): expected a numpy array of "
                                         r"shape \(3,\)"):
        clradix.topk(x, 3, out=(o, np.empty(4, np.int64)), queue=queue)
    np.testing.assert_array_equal(o, -1)   # values not written when indices are refused


# ----------------------------------------------------------------------------- misaligned views

def _misaligned(queue, x):
    """A view of int32 ``x`` at byte offset 2 of a buffer (an Array made with offset= over
    uint16 data): its get() is ``x``, its offset not a multiple of its itemsize."""
    halves = np.concatenate([[0], x.view(np.uint16), [0]]).astype(np.uint16)
    buf = cl_array.to_device(queue, halves)
    m = cl_array.Array(queue, x.shape, np.int32, data=buf.base_data, offset=2)
    np.testing.assert_array_equal(m.get(), x)
    return m, buf


def test_misaligned_views_are_refused_everywhere(queue):
    """A view whose byte offset is not a multiple of its itemsize was read as garbage by
    argsort's and top-k's contiguous paths, searchsorted's values, unique and run_lengths
    (element offset = byte offset // itemsize), while other paths refused it: every function
    now refuses it as an input or an output, with one message naming the remedy."""
    x = np.array([0x10000, 1, 0x20000, 2], np.int32)
    m, buf = _misaligned(queue, x)
    before = buf.get()
    d = cl_array.to_device(queue, x)
    s = cl_array.to_device(queue, np.sort(x))
    sorter, sel = clradix.Sorter(queue.context), clradix.Selector(queue.context)
    inputs = [
        ("sort", lambda: clradix.sort(m)), ("argsort", lambda: clradix.argsort(m)),
        ("topk", lambda: clradix.topk(m, 2)), ("topk 2-D", lambda: clradix.topk(
            cl_array.Array(queue, (2, 2), np.int32, data=buf.base_data, offset=2), 1)),
        ("argsort axis 0", lambda: clradix.argsort(
            cl_array.Array(queue, (2, 2), np.int32, data=buf.base_data, offset=2), 0)),
        ("searchsorted x1", lambda: clradix.searchsorted(m, d)),
        ("searchsorted x2", lambda: clradix.searchsorted(s, m)),
        ("searchsorted sorter", lambda: clradix.searchsorted(s, d, sorter=m)),
        ("unique", lambda: clradix.unique(m)), ("unique_all", lambda: clradix.unique_all(m)),
        ("unique_counts", lambda: clradix.unique_counts(m)),
        ("run_lengths", lambda: clradix.run_lengths(m)),
        ("lexsort", lambda: clradix.lexsort([d, m])),
        ("Sorter.sort", lambda: sorter.sort(queue, m)),
        ("Sorter.argsort", lambda: sorter.argsort(queue, m)),
        ("Sorter.sort values list", lambda: sorter.sort(queue, d, values=[m, d.astype(
            np.float64)])),
        ("Sorter.sort segments", lambda: sorter.sort(queue, d, segments=cl_array.Array(
            queue, (2,), np.int32, data=cl_array.to_device(queue, np.array(
                [0, 0, 4, 0, 0], np.int16)).base_data, offset=2))),
        ("Selector.topk", lambda: sel.topk(queue, m, 2)),
    ]
    for name, call in inputs:
        with pytest.raises(ValueError, match="not multiples of its itemsize") as info:
            call()
        assert ".copy()" in str(info.value), (name, str(info.value))
    outputs = [
        ("sort out", lambda: clradix.sort(d, out=m)),
        ("argsort out", lambda: clradix.argsort(d, out=m)),
        ("topk out", lambda: clradix.topk(d, 4, out=(m, cl_array.empty(queue, 4, np.int64)))),
        ("searchsorted out", lambda: clradix.searchsorted(s, d, out=m)),
        ("lexsort out", lambda: clradix.lexsort([d], out=m)),
        ("Sorter.argsort out", lambda: sorter.argsort(queue, d, out=m)),
    ]
    for name, call in outputs:
        with pytest.raises(ValueError, match="not multiples of its itemsize") as info:
            call()
        assert "aligned" in str(info.value), (name, str(info.value))
    queue.finish()
    np.testing.assert_array_equal(buf.get(), before)
    np.testing.assert_array_equal(d.get(), x)
    # the remedy the message names gives numpy's results
    np.testing.assert_array_equal(clradix.argsort(m.copy()).get(), np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(clradix.unique(m.copy()).get(), np.unique(x))
