"""``clradix.searchsorted``: numpy's and the Array API's searchsorted on pyopencl and numpy arrays,
one binary search per value on the device (clradix.drivers.search), in the sort's order: NaN
after +inf, -0.0 == +0.0, so that the insertion points are numpy's for arrays sorted by numpy
(or clradix). A sorted array of two or more axes is searched row by row, as
``torch.searchsorted`` does: each row of ``values`` in the same row of ``x1``."""

from __future__ import annotations

from typing import Any, Optional, overload

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.typing import DTypeLike

from ..core.arguments import check_aligned, check_context, check_outputs, host_array
from ..core.memory import upload
from ..core.keys import key_codec
from .call import (Allocator, Call, Events, host_result, index_dtype_for, index_dtype_of,
                   to_device)
from ..planning.families import families_for
from .shared import default_queue

_SORTER_DTYPES = tuple(np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64))


@overload
def searchsorted(x1: cl_array.Array, x2: Any, side: str = "left",
                 sorter: Optional[cl_array.Array] = None, *,
                 index_dtype: Optional[DTypeLike] = None, out: Optional[cl_array.Array] = None,
                 allocator: Optional[Allocator] = None, queue: Optional[cl.CommandQueue] = None,
                 wait_for: Events = None) -> cl_array.Array: ...


@overload
def searchsorted(x1: Any, x2: Any, side: str = "left", sorter: Any = None, *,
                 index_dtype: Optional[DTypeLike] = None, out: Optional[np.ndarray] = None,
                 allocator: Optional[Allocator] = None, queue: Optional[cl.CommandQueue] = None,
                 wait_for: Events = None) -> Any: ...


def searchsorted(x1: Any, x2: Any, side: str = "left", sorter: Any = None, *,
                 index_dtype: Optional[DTypeLike] = None, out: Any = None,
                 allocator: Optional[Allocator] = None, queue: Optional[cl.CommandQueue] = None,
                 wait_for: Events = None) -> Any:
    """Where the values ``x2`` would be inserted into the sorted ``x1`` to keep it sorted, as
    ``numpy.searchsorted(a, v, side, sorter)`` and the Array API's ``searchsorted(x1, x2, /, *,
    side, sorter)``: for ``side="left"`` the number of keys below each value, for ``"right"``
    the number at or below it, in the sort's order (NaN after +inf, every NaN equal; -0.0 ==
    +0.0).

    ``x1`` 1-D: ``x2`` of any shape, the result of its shape. ``x1`` of two or more axes (as
    ``torch.searchsorted``; numpy has no such form): each row (last axis) is a sorted sequence,
    ``x2`` has the same leading axes and each of its rows is searched in the same row of
    ``x1``. ``sorter`` (numpy's): the indices that sort ``x1`` (along its last axis), of an
    integer type; on the device an index outside ``[0, row length)`` is not checked and gives
    an unspecified position (never a read outside the row); numpy inputs are checked as numpy
    does. ``x1`` and ``x2`` hold one key dtype (numpy inputs are first brought to the dtype
    numpy compares them in, ``numpy.result_type`` of the two arrays; a numpy or Python ``x2``
    with a pyopencl ``x1`` is cast to ``x1``'s dtype when that keeps numpy's insertion points: a
    Python float rounded by the keys' float type moves to its neighbour on the side's side, and
    an integer outside the keys' integer type is an OverflowError). Results are int64 (numpy's
    ``intp``) unless ``index_dtype`` (int32, uint32, uint64) or ``out``'s dtype says otherwise.
    pyopencl Arrays in, a pyopencl Array out (``out``, ``allocator``, ``queue``, ``wait_for`` as for
    :func:`clradix.sort`); anything else is numpy's, copied to the device and back (a scalar
    ``x2`` gives a numpy scalar)."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    index_dtype, idx_what = index_dtype_of(index_dtype, out)
    if not isinstance(x1, cl_array.Array):
        return _host_search(x1, x2, side, sorter, index_dtype, idx_what, out, allocator, queue)
    call = Call(x1, queue, wait_for, allocator, "x1")
    queue = call.queue
    if isinstance(x2, cl_array.Array):
        check_aligned(x2, "x2")
    else:
        x2 = _values_to(x1, x2, queue, side)
    check_context(x1.context, x2.context, "x2")
    if x2.dtype != x1.dtype:
        raise TypeError(f"x2: {x2.dtype} values searched in {x1.dtype} keys: pass values of the "
                        f"keys' dtype (x2.astype({str(x1.dtype)!r}))")
    codec = key_codec(x1.dtype)
    if x1.ndim == 0:
        raise ValueError("x1 must have at least one axis (a sorted sequence), got a 0-d array")
    row_len = int(x1.shape[-1])
    if x1.ndim == 1:
        rows, per_row = 1, int(x2.size)
    else:
        if x2.ndim != x1.ndim or tuple(x2.shape[:-1]) != tuple(x1.shape[:-1]):
            raise ValueError(f"x2: searching each row of x1 (shape {tuple(x1.shape)}) needs "
                             f"values of shape {tuple(x1.shape[:-1])} + (m,), got "
                             f"{tuple(x2.shape)}")
        rows, per_row = int(x1.size) // row_len if row_len else 0, int(x2.shape[-1])
    idx_dtype = index_dtype_for(index_dtype, row_len + 1, idx_what)
    res = call.result(out, idx_dtype, tuple(x2.shape), "out")
    dev_sorter = sorter if isinstance(sorter, cl_array.Array) else None
    if dev_sorter is not None:
        check_aligned(dev_sorter, "sorter")
    if out is not None:
        check_outputs([("out", res)], [("x1", x1), ("x2", x2), ("sorter", dev_sorter)])
    if sorter is not None:
        if not isinstance(sorter, cl_array.Array):
            sorter = upload(queue, _host_sorter(sorter, tuple(x1.shape)),
                            "the device copy of sorter")
        check_context(x1.context, sorter.context, "sorter")
        if tuple(sorter.shape) != tuple(x1.shape):
            raise ValueError(f"sorter: expected the shape of x1, {tuple(x1.shape)}, got "
                             f"{tuple(sorter.shape)}")
        if sorter.dtype not in _SORTER_DTYPES:
            raise TypeError(f"sorter: expected int32, int64, uint32 or uint64 indices, got "
                            f"{sorter.dtype}")
    call.input(x2)
    call.input(sorter)
    total = int(x2.size)
    if total and row_len == 0:   # nothing to search: every insertion point is 0
        call.then(cl.enqueue_fill_buffer(queue, res.base_data, np.zeros(1, idx_dtype),
                                         res.offset, total * idx_dtype.itemsize,
                                         wait_for=call.wait or None))
    elif total:
        keys = _at(call.flat_in(x1, "searchsorted keys"))
        vals = _at(call.flat_in(x2, "searchsorted values"))
        order = None
        if sorter is not None:
            order = _at(call.flat_in(sorter, "searchsorted sorter")) + (sorter.dtype,)
        call.then(families_for(call.context).search(
            queue, codec, keys, row_len, row_len if rows > 1 else 0, vals, per_row, total,
            order, (res.base_data, res.offset // idx_dtype.itemsize), idx_dtype,
            side == "right", call.wait))
    call.done()
    return res


def _at(arr):
    """(Buffer, element offset) of a contiguous Array."""
    return arr.base_data, arr.offset // arr.dtype.itemsize


def _values_to(x1, x2, queue, side):
    """A numpy or Python ``x2`` on ``x1``'s device as ``x1``'s dtype: TypeError when the cast
    would change a value's type class (numpy.result_type of the two is not x1's dtype). The
    insertion points stay numpy's, which compares in the wider type: a value that the keys'
    float type rounds is replaced by its neighbour on the side's side (side "left": the least
    key value not below it; "right": the greatest not above it), and an integer outside the
    keys' integer type is refused (OverflowError), never wrapped around."""
    host = host_array(x2, "x2")
    kd = x1.dtype
    if host.dtype != kd:
        weak = x2 if isinstance(x2, (int, float, bool)) else host
        if np.result_type(kd, weak) != kd:
            raise TypeError(f"x2: {host.dtype} values searched in {kd} keys would need "
                            f"another key type: pass values of the keys' dtype")
        host = _in_key_dtype(host, kd, side)
    return upload(queue, np.require(host, requirements="C"),   # 0-d stays 0-d
                  "the device copy of x2")


def _in_key_dtype(host, kd, side):
    """``host`` values as ``kd`` keys giving numpy's insertion points on ``side``."""
    if kd.kind in "iu":
        info = np.iinfo(kd)
        outside = (host < info.min) | (host > info.max)
        if np.any(outside):
            bad = host[outside] if host.ndim else host
            raise OverflowError(f"x2: {int(np.ravel(bad)[0])} lies outside the range of the "
                                f"{kd} keys [{info.min}, {info.max}]: pass values of the keys' "
                                f"dtype, or keys of a wider one")
        return host.astype(kd)
    with np.errstate(over="ignore", invalid="ignore"):
        cast = host.astype(kd)
        if kd.kind != "f":
            return cast
        if side == "left":   # rounded down: the next key value up has the same keys below it
            return np.where(cast < host, np.nextafter(cast, kd.type(np.inf)), cast).astype(kd)
        return np.where(cast > host, np.nextafter(cast, kd.type(-np.inf)), cast).astype(kd)


def _host_sorter(sorter, shape):
    """numpy's ``sorter`` checked as numpy checks it, as int64."""
    order = host_array(sorter, "sorter")
    if order.dtype.kind not in "iu":
        raise TypeError(f"sorter must hold integers, got {order.dtype}")
    if order.shape != shape:
        raise ValueError(f"sorter: expected the shape of x1, {shape}, got {order.shape}")
    if order.size and (order.min() < 0 or order.max() >= shape[-1]):
        raise ValueError("Sorter index out of range.")
    return np.ascontiguousarray(order.astype(np.int64))


def _host_search(x1, x2, side, sorter, index_dtype, idx_what, out, allocator, queue):
    """numpy inputs: brought to one key dtype as numpy.searchsorted brings them (the dtype of
    ``numpy.asarray(x2)``, a Python scalar included, promoted with ``x1``'s: the comparisons
    are numpy's), checked as numpy checks, searched on the device and copied back."""
    a, v = host_array(x1, "x1"), host_array(x2, "x2")
    if a.dtype != v.dtype:
        common = np.result_type(a.dtype, v.dtype)
        key_codec(common)
        a, v = a.astype(common), v.astype(common)
    if sorter is not None:
        sorter = _host_sorter(sorter, a.shape)
    if a.ndim:   # (a 0-d x1 is refused on the device)
        index_dtype = index_dtype_for(index_dtype, int(a.shape[-1]) + 1, idx_what)
    q = queue or default_queue()
    d1 = to_device(a, q, "x1")
    d2 = to_device(v, q, "x2")
    ds = None if sorter is None else upload(q, sorter, "the device copy of sorter")
    res = searchsorted(d1, d2, side, ds, index_dtype=index_dtype, allocator=allocator)
    if v.ndim == 0 and out is None:
        return res.get()[()]
    return host_result(res, out, "out")


__all__ = ["searchsorted"]

