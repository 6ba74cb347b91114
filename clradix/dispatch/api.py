"""numpy-like functions on pyopencl and numpy arrays: ``clradix.sort``, ``clradix.argsort`` and
``clradix.topk`` (also ``top_k``), with one shared Sorter and Selector per context.

Signatures follow numpy's positional order and the Array API's keywords:
``sort(a, axis=-1, kind=None, order=None, *, descending=False, stable=None, ...)``; everything
clradix adds is keyword-only. Any shape and any axis (``axis=None`` flattens, as numpy does);
strided views are gathered into rows on the device (clradix.drivers.layout), the sorted axis
last, and the results gathered back. numpy arrays are copied to a device (``queue``'s, else the
default one) and the results copied back; pyopencl Arrays stay on their device, with the call's
event as their only event. New results come from a memory pool per queue (``free_memory``
empties it), so a repeated call allocates nothing.

Each function is one composition of clradix.dispatch.call's :class:`~clradix.dispatch.call.Call`:
the arguments checked, the layout in (the identity for the common call: a contiguous array
along its last axis), the operation on contiguous rows, the layout out."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Optional, Tuple, TypeVar, Union, overload

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.typing import DTypeLike

from ..core.arguments import Operand, check_outputs
from ..core.keys import key_codec
from . import segments as segmented
from .call import (Allocator, Call, Events, check_bool, check_host_out, host_input, host_result,
                   index_dtype_for, index_dtype_of, normalize_axis, row_length, to_device)
from .shared import default_queue, free_memory, selector_for, sorter_for

_A = TypeVar("_A")

if TYPE_CHECKING or sys.version_info >= (3, 11):   # generic named tuples: Python 3.11
    class TopkResult(NamedTuple, Generic[_A]):
        """What ``topk`` returns, as ``torch.topk`` does: ``(values, indices)`` by position or
        by name; numpy arrays for a numpy input, pyopencl Arrays for an Array."""

        values: _A
        indices: _A
else:  # pragma: no cover - Python 3.9 and 3.10
    class TopkResult(NamedTuple):
        """What ``topk`` returns, as ``torch.topk`` does: ``(values, indices)`` by position or
        by name; numpy arrays for a numpy input, pyopencl Arrays for an Array."""

        values: Any
        indices: Any


# ------------------------------------------------------------------ argument checks

_KINDS_OK: set = set()


def _check_kind(kind, stable):
    """Refuse a ``kind`` numpy refuses, with numpy's exception class (numpy itself is asked,
    once per value, so its spellings and abbreviations hold), and a ``stable`` that is not a
    bool. Every accepted value gives the stable order, the radix sort's only one
    (``stable=False`` allows any order of equal keys, and the stable one is one)."""
    if kind is not None and not (isinstance(kind, str) and kind in _KINDS_OK):
        try:
            np.sort(np.zeros(1), kind=kind)
        except (TypeError, ValueError) as exc:
            hint = "; descending order is descending=True" if isinstance(
                kind, (bool, np.bool_)) else ""
            raise type(exc)(f"kind={kind!r}: {exc}{hint} (every kind numpy takes gives "
                            f"clradix's stable order)") from None
        if isinstance(kind, str):
            _KINDS_OK.add(kind)
    if stable is not None and not isinstance(stable, (bool, np.bool_)):
        raise TypeError(f"stable must be a bool or None, got {type(stable).__name__}")


def _check_order(order):
    if order is not None:
        raise ValueError(f"order={order!r}: numpy's order= sorts structured arrays by field; "
                         f"clradix sorts numeric keys. Sort by several keys with argsort of "
                         f"each key, least significant first, gathering between them")



# ------------------------------------------------------------------ sort

@overload
def sort(a: np.ndarray, axis: Optional[int] = -1, kind: Optional[str] = None,
         order: None = None, *, descending: bool = False, stable: Optional[bool] = None,
         out: Optional[np.ndarray] = None, allocator: Optional[Allocator] = None,
         queue: Optional[cl.CommandQueue] = None, wait_for: Events = None) -> np.ndarray: ...


@overload
def sort(a: cl_array.Array, axis: Optional[int] = -1, kind: Optional[str] = None,
         order: None = None, *, descending: bool = False, stable: Optional[bool] = None,
         out: Optional[cl_array.Array] = None, allocator: Optional[Allocator] = None,
         queue: Optional[cl.CommandQueue] = None, wait_for: Events = None) -> cl_array.Array: ...


def sort(a: Union[np.ndarray, cl_array.Array], axis: Optional[int] = -1,
         kind: Optional[str] = None, order: None = None, *, descending: bool = False,
         stable: Optional[bool] = None, out: Any = None, allocator: Optional[Allocator] = None,
         queue: Optional[cl.CommandQueue] = None, wait_for: Events = None
         ) -> Union[np.ndarray, cl_array.Array]:
    """A sorted copy of ``a`` along ``axis`` (stable; numpy's NaN and -0.0 rules), as
    ``numpy.sort``: any shape, any axis (negative counts from the end; None sorts the flattened
    array), any strides.

    ``kind`` (numpy's; a kind numpy refuses is a ValueError) and ``stable`` (the Array API's and
    torch's) are accepted for code written for them: every clradix sort is stable, so each gives
    the stable order. ``order`` (numpy's structured-array fields) is refused. ``descending``
    (a bool): largest first, NaN first, equal keys in their original order.

    ``a``: a pyopencl Array (the result is a new C-contiguous Array on its device, or ``out``:
    an Array of the result's shape and dtype, or ``a`` itself to sort a contiguous array in
    place) or anything numpy takes (copied to ``queue``'s device, else the default device, and
    the result copied back: a numpy array, or written into the numpy array ``out``). New
    results come from ``allocator``, else from the queue's memory pool (``free_memory``).
    The call waits for ``wait_for`` and the arrays' events; nothing waits on the host.
    """
    _check_kind(kind, stable)
    _check_order(order)
    descending = check_bool(descending, "descending")
    if not isinstance(a, cl_array.Array):
        res = sort(to_device(a, queue, "a"), axis, descending=descending, allocator=allocator)
        return host_result(res, out, "out")
    call = Call(a, queue, wait_for, allocator)
    lay = call.layout(a, axis)
    codec = key_codec(a.dtype)
    res = call.result(out, a.dtype, lay.result_shape(lay.row_len), "out")
    if out is not None:
        _check_sort_out(a, res)
    rows = call.rows_out(res, lay, lay.row_len, "sort rows")
    if lay.rows == 1 and lay.direct and rows is not a and lay.row_len > 1:
        # one row in a's own memory: the sort reads it there and writes the result, no copy
        evt = call.sorter.enqueue_keys(call.queue, codec, lay.size, rows.base_data,
                                       rows.offset // rows.dtype.itemsize, descending,
                                       call.wait, call.allocator,
                                       src=(a.base_data, a.offset // a.dtype.itemsize))
        call.read(a, call.then(evt))
        call.done()
        return res
    keys = call.keys_in(a, lay, "sort rows", into=rows)   # (a sorted in place: a itself)
    if lay.row_len > 1 and lay.size:
        call.then(_sort_rows(call, codec, lay, keys, a.dtype, descending))
    call.lay_out(rows, res, lay, lay.row_len)
    call.done()
    return res


def _check_sort_out(a, out):
    """sort's ``out``: sharing no byte with ``a``, unless it is ``a`` itself (a contiguous
    array, sorted in place: its rows sorted where they are, or gathered, sorted and gathered
    back)."""
    check_outputs([("out", out)], [("the input array", a)], in_place=a,
                  remedy="pass a separate array, or the input itself (out=a) to sort in place")


def _sort_rows(call, codec, lay, keys, dtype, descending, positions=None):
    """Enqueue the sort of the contiguous rows at ``keys`` (Buffer, element offset; at least
    two keys a row) in place, or with ``positions`` (from Call.positions) the write of their
    stable argsort there, after the call's last command; the event."""
    n = lay.size
    if lay.rows == 1:
        out = () if positions is None else (positions[0], positions[1], positions[2].itemsize)
        return call.sorter.enqueue_keys(call.queue, codec, n, keys[0], keys[1], descending,
                                        call.wait, call.allocator, *out)
    rows_out = None if positions is None else Operand(positions[0], positions[1], n,
                                                      positions[2])
    return segmented.sort_rows(call.sorter, call.queue, codec, Operand(keys[0], keys[1], n, dtype),
                               lay.rows, lay.row_len, descending=descending, argsort_out=rows_out,
                               wait=call.wait, allocator=call.allocator)


# ------------------------------------------------------------------ argsort

@overload
def argsort(a: np.ndarray, axis: Optional[int] = -1, kind: Optional[str] = None,
            order: None = None, *, descending: bool = False, stable: Optional[bool] = None,
            index_dtype: Optional[DTypeLike] = None, out: Optional[np.ndarray] = None,
            allocator: Optional[Allocator] = None, queue: Optional[cl.CommandQueue] = None,
            wait_for: Events = None) -> np.ndarray: ...


@overload
def argsort(a: cl_array.Array, axis: Optional[int] = -1, kind: Optional[str] = None,
            order: None = None, *, descending: bool = False, stable: Optional[bool] = None,
            index_dtype: Optional[DTypeLike] = None, out: Optional[cl_array.Array] = None,
            allocator: Optional[Allocator] = None, queue: Optional[cl.CommandQueue] = None,
            wait_for: Events = None) -> cl_array.Array: ...


def argsort(a: Union[np.ndarray, cl_array.Array], axis: Optional[int] = -1,
            kind: Optional[str] = None, order: None = None, *, descending: bool = False,
            stable: Optional[bool] = None, index_dtype: Optional[DTypeLike] = None,
            out: Any = None, allocator: Optional[Allocator] = None,
            queue: Optional[cl.CommandQueue] = None, wait_for: Events = None
            ) -> Union[np.ndarray, cl_array.Array]:
    """The indices that sort ``a`` stably along ``axis``, as ``numpy.argsort``: positions along
    the axis (in the flattened array for ``axis=None``), int64 as numpy's ``intp`` and as torch
    gathers with; ``index_dtype`` int32, uint32 or uint64 for other widths (a 32-bit type must
    hold every position). ``out`` (a pyopencl Array of the result's shape and that dtype, or for
    numpy inputs a numpy array) receives them; its dtype is the index dtype when
    ``index_dtype`` is not given. ``kind``, ``order``, ``stable``, ``descending``, numpy
    inputs, ``allocator``, ``queue`` and ``wait_for``: as for :func:`sort`."""
    _check_kind(kind, stable)
    _check_order(order)
    descending = check_bool(descending, "descending")
    index_dtype, idx_what = index_dtype_of(index_dtype, out)
    if not isinstance(a, cl_array.Array):
        host = host_input(a, "a")
        if host.ndim == 0 and axis is not None:
            normalize_axis(axis, 1)   # numpy sorts a 0-d array's one element (axis -1 or 0)
            axis = None
        # checked here, where the argument that chose it is known
        index_dtype = index_dtype_for(index_dtype, row_length(host.shape, axis), idx_what)
        res = argsort(to_device(host, queue, "a"), axis, descending=descending,
                      index_dtype=index_dtype, allocator=allocator)
        return host_result(res, out, "out")
    call = Call(a, queue, wait_for, allocator)
    if a.ndim == 0 and axis is not None:
        normalize_axis(axis, 1)
        axis = None
    lay = call.layout(a, axis)
    codec = key_codec(a.dtype)
    idx_dtype = index_dtype_for(index_dtype, lay.row_len, idx_what)
    res = call.result(out, idx_dtype, lay.result_shape(lay.row_len), "out")
    if out is not None:
        check_outputs([("out", res)], [("the input array", a)])
    keys = call.keys_in(a, lay, "argsort keys")
    idx = call.rows_out(res, lay, lay.row_len, "argsort rows")
    n = lay.size
    if n and lay.row_len > 1:
        at = call.positions(idx, n, lay.row_len, "argsort indices")
        call.read(a, call.then(_sort_rows(call, codec, lay, keys, a.dtype, descending, at)))
        call.positions_home(at, idx, n)
    elif n:   # rows of one key: each position is 0
        call.then(cl.enqueue_fill_buffer(call.queue, idx.base_data, np.zeros(1, idx_dtype),
                                         idx.offset, n * idx_dtype.itemsize,
                                         wait_for=call.wait or None))
    call.lay_out(idx, res, lay, lay.row_len)
    call.done()
    return res


# ------------------------------------------------------------------ top-k

@overload
def topk(a: np.ndarray, k: int, axis: Optional[int] = -1, largest: Optional[bool] = None,
         sorted: bool = True, *, mode: Optional[str] = None,
         index_dtype: Optional[DTypeLike] = None,
         out: Optional[Tuple[np.ndarray, np.ndarray]] = None,
         allocator: Optional[Allocator] = None, queue: Optional[cl.CommandQueue] = None,
         wait_for: Events = None) -> TopkResult[np.ndarray]: ...


@overload
def topk(a: cl_array.Array, k: int, axis: Optional[int] = -1,
         largest: Optional[bool] = None,
         sorted: bool = True, *, mode: Optional[str] = None,
         index_dtype: Optional[DTypeLike] = None,
         out: Optional[Tuple[cl_array.Array, cl_array.Array]] = None,
         allocator: Optional[Allocator] = None, queue: Optional[cl.CommandQueue] = None,
         wait_for: Events = None) -> TopkResult[cl_array.Array]: ...


def topk(a: Union[np.ndarray, cl_array.Array], k: int, axis: Optional[int] = -1,
         largest: Optional[bool] = None, sorted: bool = True, *, mode: Optional[str] = None,
         index_dtype: Optional[DTypeLike] = None, out: Any = None,
         allocator: Optional[Allocator] = None, queue: Optional[cl.CommandQueue] = None,
         wait_for: Events = None) -> TopkResult[Any]:
    """The ``k`` largest (``largest=False``: smallest) entries of ``a`` along ``axis`` and their
    positions, as ``torch.topk(input, k, dim, largest, sorted)`` and numpy's ``top_k``: a
    :class:`~clradix.TopkResult` ``(values, indices)``, each of ``a``'s shape with the axis of
    length ``k`` (``axis=None``: of the flattened array).

    Ties go to the smaller position; NaN counts as the largest value; bool keys have False
    below True. ``sorted=True`` orders the results (largest first for ``largest=True``, ties
    by position); ``sorted=False`` gives the same set in an unspecified order. ``mode``
    ("largest" or "smallest", the Array API's spelling) may stand for ``largest`` (None, the
    default, is True unless ``mode`` says otherwise; both given must agree). Indices are
    int64 unless ``index_dtype`` says otherwise (int32, uint32, uint64; a 32-bit type must hold
    every position). ``out``: a pair ``(values, indices)`` of arrays to write into, sharing no
    byte with each other nor, for pyopencl Arrays, with ``a``. numpy inputs, ``allocator``,
    ``queue`` and ``wait_for``: as for :func:`sort`."""
    largest = _largest(largest, mode)
    sorted = check_bool(sorted, "sorted")
    outs: Tuple[Any, Any] = (None, None)
    if out is not None:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"out: expected a pair (values, indices) of arrays, got "
                            f"{type(out).__name__}")
        outs = (out[0], out[1])
    index_dtype, idx_what = index_dtype_of(index_dtype, outs[1], "out[1] (indices)")
    if not isinstance(a, cl_array.Array):
        host = host_input(a, "a")
        index_dtype = index_dtype_for(index_dtype, row_length(host.shape, axis), idx_what)
        values, indices = topk(to_device(host, queue, "a"), k, axis, largest, sorted,
                               index_dtype=index_dtype, allocator=allocator)
        # both outputs checked before either is written
        for o, r, what in ((outs[0], values, "out[0] (values)"),
                           (outs[1], indices, "out[1] (indices)")):
            if o is not None:
                check_host_out(o, r.shape, r.dtype, what)
        if outs[0] is not None and outs[1] is not None and np.shares_memory(outs[0], outs[1]):
            raise ValueError("out: the values and indices arrays overlap: pass separate arrays")
        return TopkResult(host_result(values, outs[0], "out[0] (values)"),
                          host_result(indices, outs[1], "out[1] (indices)"))
    call = Call(a, queue, wait_for, allocator)
    lay = call.layout(a, axis)
    codec = key_codec(a.dtype)
    sel = selector_for(call.context)
    if not isinstance(k, (int, np.integer)) or isinstance(k, (bool, np.bool_)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    if k < 0:
        raise ValueError(f"k must be non-negative, got {k}")
    if k > lay.row_len:
        raise ValueError(f"k={k} exceeds the length {lay.row_len} of the axis (the row length)")
    k = int(k)
    idx_dtype = index_dtype_for(index_dtype, lay.row_len, idx_what)
    if lay.rows * k:   # planned and built first: a refused configuration allocates nothing
        prepared = sel.prepared(call.queue, codec, lay.rows, lay.row_len, k, sorted, largest,
                                idx_dtype.itemsize)
    shape = lay.result_shape(k)
    values = call.result(outs[0], a.dtype, shape, "out[0] (values)")
    indices = call.result(outs[1], idx_dtype, shape, "out[1] (indices)")
    if outs != (None, None):
        _check_topk_outputs(a, values, indices)
    if lay.rows * k:   # (else nothing to select: the outputs are empty)
        keys = call.keys_in(a, lay, "top-k keys")
        v_rows = call.rows_out(values, lay, k, "top-k values")
        i_rows = call.rows_out(indices, lay, k, "top-k indices")
        call.then(sel.enqueue(call.queue, prepared, keys[0], keys[1], v_rows, i_rows, call.wait,
                              allocator))
        call.lay_out(v_rows, values, lay, k)
        call.lay_out(i_rows, indices, lay, k)
    call.done()
    return TopkResult(values, indices)


#: the Array API's and numpy's name
top_k = topk
# documented, and referred to by the signatures, as clradix.TopkResult
TopkResult.__module__ = "clradix"


def _largest(largest, mode):
    """topk's direction: ``largest`` (a bool, or None: True) and the Array API's ``mode``
    ("largest" or "smallest"), which must agree when both are given."""
    if largest is not None:
        largest = check_bool(largest, "largest")
    if mode is None:
        return True if largest is None else largest
    if mode not in ("largest", "smallest"):
        raise ValueError(f"mode must be 'largest' or 'smallest', got {mode!r}")
    if largest is not None and largest != (mode == "largest"):
        raise ValueError(f"mode={mode!r} contradicts largest={largest}: pass one of them")
    return mode == "largest"


def _check_topk_outputs(a, values, indices):
    """topk's ``out`` pair: sharing no byte with each other or with the input."""
    check_outputs([("out[0] (values)", values), ("out[1] (indices)", indices)],
                  [("the input array", a)])


__all__ = ["sort", "argsort", "topk", "top_k", "TopkResult", "sorter_for", "selector_for",
           "free_memory", "default_queue"]
