"""The one overlap rule (clradix.core.arguments.extent): the bytes an Operand or a pyopencl Array
may touch, strided views (negative strides too) and sub-buffers (by their parent) included, and
the calls that refuse outputs overlapping their inputs through it."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.core.arguments import Operand, check_disjoint, check_outputs, extent, overlaps


def test_strided_views(queue):
    a = cl_array.arange(queue, 20, dtype=np.float32)
    ptr = a.base_data.int_ptr
    assert extent(a) == (ptr, 0, 80)
    assert not overlaps(a[:10], a[10:])
    assert overlaps(a[:11], a[10:])
    assert extent(a[::2]) == (ptr, 0, 76)   # every byte between the first and the last element
    assert overlaps(a[::2], a[10:]) and not overlaps(a[:10:2], a[10:])
    rev = a[::-1]   # a negative stride: from the last element down to the first
    assert rev.strides[0] < 0 and extent(rev) == (ptr, 0, 80)
    assert overlaps(rev[15:], a[:5]) and not overlaps(rev[:5], a[:15])
    cols = a.reshape(4, 5)[:, :2]   # rows 0..3, columns 0 and 1: elements 0 .. 16
    assert extent(cols) == (ptr, 0, 68)
    assert overlaps(cols, a[16:]) and not overlaps(cols, a[17:])
    assert extent(a[:0]) is None and not overlaps(a[:0], a)
    # another allocation never overlaps
    assert not overlaps(a, cl_array.arange(queue, 20, dtype=np.float32))


def _sub_buffers(ctx):
    """A parent buffer and sub-buffers of it at the device's base-address alignment."""
    align = max(ctx.devices[0].mem_base_addr_align // 8, 4)
    parent = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * align)
    return align, parent, parent.get_sub_region(0, 2 * align), parent.get_sub_region(
        2 * align, 2 * align)


def test_sub_buffers(ctx, queue):
    align, parent, low, high = _sub_buffers(ctx)
    u8 = np.dtype(np.uint8)
    assert extent(Operand(high, 1, 3, u8)) == (parent.int_ptr, 2 * align + 1, 2 * align + 4)
    assert not overlaps(Operand(low, 0, 2 * align, u8), Operand(high, 0, 2 * align, u8))
    # the parent's bytes and a sub-buffer's, compared by position in the parent
    assert overlaps(Operand(parent, 2 * align, 1, u8), Operand(high, 0, 1, u8))
    assert not overlaps(Operand(parent, 0, 2 * align, u8), Operand(high, 0, 2 * align, u8))
    assert overlaps(Operand(parent, 2 * align - 1, 2, u8), Operand(high, 0, 1, u8))
    # arrays on sub-buffers: an array through one sub-buffer and a view of the parent
    n = align // 4
    whole = cl_array.Array(queue, (4 * n,), np.float32, data=parent)
    on_high = cl_array.Array(queue, (2 * n,), np.float32, data=high)
    on_low = cl_array.Array(queue, (2 * n,), np.float32, data=low)
    assert overlaps(whole[2 * n:], on_high) and overlaps(whole[::3], on_high)
    assert not overlaps(whole[:2 * n], on_high) and not overlaps(on_low, on_high)
    with pytest.raises(ValueError, match=r"out overlaps the keys \(bytes \["):
        check_disjoint(Operand(parent, 0, 4 * align, u8), on_high, "out", "the keys")
    with pytest.raises(ValueError, match="indices_out overlaps values_out"):
        check_outputs([("values_out", whole[3 * n:]), ("indices_out", on_high),
                       ("absent", None)], [("the keys", on_low)])
    check_outputs([("values_out", on_high), ("absent", None)], [("the keys", on_low)])


def test_calls_refuse_outputs_overlapping_through_a_sub_buffer(ctx, queue):
    align, parent, low, high = _sub_buffers(ctx)
    n = align // 4
    keys = cl_array.Array(queue, (4 * n,), np.float32, data=parent)
    keys.set(np.arange(4 * n, dtype=np.float32)[::-1].copy())
    # the numpy-like functions: an out= array whose bytes lie inside the input's
    with pytest.raises(ValueError, match="out overlaps the input array"):
        clradix.sort(keys[n:3 * n], out=cl_array.Array(queue, (2 * n,), np.float32, data=high))
    # the Selector: an output through a sub-buffer of the keys' buffer
    sel = clradix.Selector(ctx)
    with pytest.raises(ValueError, match="values_out overlaps the keys"):
        sel.topk(queue, keys, 2, values_out=cl_array.Array(queue, (2,), np.float32, data=high))
    # disjoint: the keys through one sub-buffer, the outputs through the other
    lo_keys = cl_array.Array(queue, (2 * n,), np.float32, data=low)
    out = cl_array.Array(queue, (2 * n,), np.float32, data=high)
    assert clradix.sort(lo_keys, out=out) is out
    np.testing.assert_array_equal(out.get(), np.sort(lo_keys.get()))
    np.testing.assert_array_equal(keys.get()[:2 * n], np.arange(4 * n, 2 * n, -1) - 1)
