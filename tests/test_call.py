"""The one pipeline of the numpy-like functions (clradix.dispatch.call): the identity layout of
the common call and the gathered one of the others, the events each array is left with, the
commands of the edge cases, and one index-widening rule for every layout."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.bench import count_commands
from clradix.dispatch.call import Call, Layout


def _commands(queue, fn):
    fn()
    queue.finish()
    with count_commands() as counted:
        fn()
    queue.finish()
    return counted.total


def test_the_common_call_is_the_identity_layout(queue):
    """A contiguous array along its last axis (or a 1-D one flattened) is seen as its own rows:
    no gather in, none out; every other view is a Layout with the gathers' arithmetic."""
    d = cl_array.to_device(queue, np.arange(24, dtype=np.float32).reshape(4, 6))
    call = Call(d, None, None, None)
    lay = call.layout(d, -1)
    assert (lay.rows, lay.row_len, lay.size, lay.direct, lay.restore) == (4, 6, 24, True, False)
    assert not hasattr(lay, "perm")   # made without the strides' arithmetic
    assert lay.result_shape(6) == (4, 6) and lay.result_shape(2) == (4, 2)
    flat = call.layout(d.reshape(24), None)
    assert (flat.rows, flat.row_len, flat.result_shape(3)) == (1, 24, (3,))
    other = call.layout(d, 0)
    assert isinstance(other, Layout) and other.direct is False and other.restore is True
    assert (other.rows, other.row_len, other.result_shape(2)) == (6, 4, (2, 6))
    whole = call.layout(d, None)   # contiguous, flattened: its own memory, one row
    assert whole.direct and not whole.restore and (whole.rows, whole.row_len) == (1, 24)
    strided = call.layout(d[:, ::2], -1)
    assert not strided.direct and not strided.restore
    call.done()


def test_inputs_and_outputs_get_the_calls_events(queue, rng):
    """After a call each array holds one event: an input the last command reading it, an output
    the last writing it (views of one array, which share their events, one event too)."""
    x = rng.standard_normal(300).astype(np.float32)
    d = cl_array.to_device(queue, x)
    s = cl_array.to_device(queue, np.sort(x))
    res = clradix.sort(d)
    assert len(d.events) == 1 and len(res.events) == 1
    assert d.events[0] is res.events[0]   # the sort read d and wrote res: no copy between
    v, i = clradix.topk(d, 5)
    assert len(v.events) == 1 and v.events[0] is i.events[0] is d.events[0]
    got = clradix.searchsorted(s, s[:64])   # x2 a view of x1: one events list
    assert len(s.events) == 1 and s.events[0] is got.events[0]
    order = clradix.lexsort([d, d])
    assert len(d.events) == 1 and d.events[0] is order.events[0]
    np.testing.assert_array_equal(got.get(), np.searchsorted(np.sort(x), np.sort(x)[:64]))


def test_the_call_waits_for_every_array(queue, rng):
    """The first command waits for wait_for and for the events of the inputs and of out=: a
    user event on any of them holds the call back."""
    x = rng.standard_normal((5, 40)).astype(np.float32)
    for where in ("wait_for", "input", "out"):
        d = cl_array.to_device(queue, x)
        out = cl_array.empty(queue, (5, 40), np.float32)
        d.finish()
        gate = cl.UserEvent(queue.context)
        wait = [gate] if where == "wait_for" else None
        (d if where == "input" else out).events[:] = [] if where == "wait_for" else [gate]
        res = clradix.sort(d, 0, out=out, wait_for=wait)
        assert res.events[0].command_execution_status != cl.command_execution_status.COMPLETE
        gate.set_status(cl.command_execution_status.COMPLETE)
        np.testing.assert_array_equal(res.get(), np.sort(x, 0))


def test_commands_of_the_edge_calls(queue):
    """A call with nothing to compute enqueues one marker; a contiguous array sorted in place,
    or into a new result, enqueues the sort's commands alone (no copy, no marker before them)."""
    d = cl_array.to_device(queue, np.arange(4096, dtype=np.float32)[::-1].copy())
    empty = cl_array.empty(queue, (0, 8), np.float32)
    assert _commands(queue, lambda: clradix.sort(empty)) == 1
    assert _commands(queue, lambda: clradix.argsort(empty)) == 1
    assert _commands(queue, lambda: clradix.topk(d, 0)) == 1
    assert _commands(queue, lambda: clradix.sort(d)) == _commands(
        queue, lambda: clradix.sort(d, out=d))
    np.testing.assert_array_equal(d.get(), np.arange(4096, dtype=np.float32))


@pytest.mark.parametrize("axis", [0, None])
def test_one_widening_rule_for_every_layout(queue, rng, monkeypatch, axis):
    """64-bit positions of large calls are carried as 32-bit ones and widened, whatever the
    layout (and lexsort's order, built from its buffer's start, at an offset of out=)."""
    import clradix.dispatch.call as call_module
    monkeypatch.setattr(call_module, "WIDEN_FROM", 1)
    x = rng.standard_normal((9, 13)).astype(np.float32)
    d = cl_array.to_device(queue, x)
    with count_commands() as counted:
        got = clradix.argsort(d[:, ::2], axis, index_dtype=np.uint64).get()
    queue.finish()
    assert counted.counts.get("enqueue_nd_range_kernel", 0) >= 2
    np.testing.assert_array_equal(got, np.argsort(x[:, ::2], axis, kind="stable"))
    keys = [cl_array.to_device(queue, x[r]) for r in range(3)]
    out = cl_array.zeros(queue, 20, np.int64)
    res = clradix.lexsort(keys, out=out[3:16])
    np.testing.assert_array_equal(res.get(), np.lexsort(x[:3]))
    assert not out.get()[:3].any() and not out.get()[16:].any()
