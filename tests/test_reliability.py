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
