"""numpy-like functions on pyopencl and numpy arrays: ``clradix.sort``, ``clradix.argsort`` and
``clradix.topk`` (also ``top_k``), with one shared Sorter and Selector per context.

Signatures follow numpy's positional order and the Array API's keywords:
``sort(a, axis=-1, kind=None, order=None, *, descending=False, stable=None, ...)``; everything
clradix adds is keyword-only. Any shape and any axis (``axis=None`` flattens, as numpy does);
strided views are gathered into rows on the device (clradix.drivers.layout), the sorted axis
last, and the results gathered back. numpy arrays are copied to a device (``queue``'s, else the
default one) and the results copied back; pyopencl Arrays stay on their device, with the call's
event as their only event. New results come from a memory pool per queue (``free_memory``
empties it), so a repeated call allocates nothing."""

from __future__ import annotations

import math
import operator
import sys
import threading
import weakref
from typing import (TYPE_CHECKING, Any, Callable, Generic, List, NamedTuple, Optional, Sequence,
                    Tuple, TypeVar, Union, cast, overload)

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.typing import DTypeLike

from ..core.arguments import (Operand, attach_event, check_aligned, check_context,
                              check_outputs, check_queue, host_array)
from ..core.device import default_device
from ..core.keys import key_codec
from ..core.memory import new_output, pooled_output, upload
from ..core.sizes import check_index_dtype
from ..planning.families import families_for
from . import segments as segmented
from .selector import Selector
from .sorter import Sorter, _events

try:   # numpy >= 1.25
    from numpy.exceptions import AxisError
except ImportError:  # pragma: no cover - older numpy
    AxisError = np.AxisError  # type: ignore[attr-defined,misc]

Allocator = Callable[[int], cl.MemoryObjectHolder]
Events = Optional[Sequence[Optional[cl.Event]]]

# The shared objects of each context, held weakly and under a lock for the reasons of
# core.render's program caches (pyopencl's first_arg_dependent_memoize keeps contexts alive).
_sorters: weakref.WeakKeyDictionary[cl.Context, Sorter] = weakref.WeakKeyDictionary()
_selectors: weakref.WeakKeyDictionary[cl.Context, Selector] = weakref.WeakKeyDictionary()
_shared_lock = threading.Lock()


def sorter_for(context: cl.Context) -> Sorter:
    """The shared default Sorter of ``context`` (built kernels are reused across calls)."""
    with _shared_lock:
        s = _sorters.get(context)
        if s is None:
            s = _sorters[context] = Sorter(context)
        return s


def selector_for(context: cl.Context) -> Selector:
    """The shared default Selector of ``context`` (it shares the context's Sorter)."""
    sorter = sorter_for(context)
    with _shared_lock:
        s = _selectors.get(context)
        if s is None:
            s = _selectors[context] = Selector(context, sorter=sorter)
        return s


def _context(a: cl_array.Array) -> cl.Context:
    """The Context object ``a`` holds: the shared Sorter and Selector are kept per context
    object (weakly), and the caller's object lives as long as its arrays."""
    return cast(cl.Context, a.context)


def free_memory(context: Optional[cl.Context] = None) -> None:
    """Release the memory that the functions' pools hold for reuse: the blocks of results that
    were freed (garbage collected) and of temporaries, in the shared Sorter and Selector of
    ``context`` (default: of every context). Results still referenced stay allocated."""
    with _shared_lock:
        owners: List[Union[Sorter, Selector]] = [
            o for c, o in list(_sorters.items()) if context is None or c == context]
        owners += [o for c, o in list(_selectors.items()) if context is None or c == context]
    for owner in owners:
        owner.free_memory()


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


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def _check_order(order):
    if order is not None:
        raise ValueError(f"order={order!r}: numpy's order= sorts structured arrays by field; "
                         f"clradix sorts numeric keys. Sort by several keys with argsort of "
                         f"each key, least significant first, gathering between them")


def _axis(axis, ndim):
    """``axis`` normalised (None stays None); numpy's AxisError when it is out of range."""
    if axis is None:
        return None
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"axis must be an integer or None, got {type(axis).__name__}")
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"axis must be an integer or None, got {type(axis).__name__}") from None
    if not -ndim <= ax < ndim:
        raise AxisError(f"axis {ax} is out of bounds for array of dimension {ndim}")
    return ax % ndim


def _checked_input(a, queue, what="a"):
    """The queue of a call on the pyopencl Array ``a`` (``queue``, checked, else ``a``'s own),
    once ``a`` is checked to be addressable by whole elements."""
    check_aligned(a, what)
    if queue is None:
        queue = a.queue
        if queue is None:
            raise ValueError("the array has no queue (it was made with queue=None): pass "
                             "queue=")
        return queue   # an array's own queue is of its context
    check_queue(a.context, queue)
    return queue


def _host_input(a, what):
    """A host input (anything numpy takes but a Buffer and the ndarray subclasses whose meaning
    would be lost) as a numpy array of a key dtype."""
    if isinstance(a, cl.MemoryObjectHolder):
        raise TypeError(f"{what}: a Buffer does not say its shape or type: wrap it in a "
                        f"pyopencl.array.Array, or use Sorter.sort / Sorter.argsort / "
                        f"Selector.topk, which take Buffers with dtype= and n=")
    host = host_array(a, what)
    key_codec(host.dtype)
    return host


def _to_device(a, queue, what):
    """A host input's device copy (C order) on ``queue``, else the default queue; MemoryError
    before anything is allocated when the device cannot hold it (clradix.core.memory.upload)."""
    host = _host_input(a, what)
    if not host.flags.c_contiguous:   # (ascontiguousarray would make a 0-d array 1-D)
        host = np.ascontiguousarray(host)
    if queue is not None and not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue: expected a pyopencl.CommandQueue, got {type(queue).__name__}")
    return upload(queue or default_queue(), host, f"the device copy of {what}")


def _row_length(shape, axis):
    """The positions an index along ``axis`` of an array of ``shape`` takes (``axis`` None, or a
    0-d array: the flattened array's); AxisError for an axis out of range."""
    if axis is None or not shape:
        return math.prod(shape)
    return int(shape[_axis(axis, len(shape))])


def _index_dtype_of(index_dtype, out, what="out"):
    """(the index dtype asked for, the argument that asked): ``index_dtype``, else the dtype of
    ``out`` (named ``what``), else None (int64)."""
    if index_dtype is None and out is not None and hasattr(out, "dtype"):
        return out.dtype, what
    return index_dtype, "index_dtype"


# ------------------------------------------------------------------ the layout of one call

class _Layout:
    """How a call sees array ``a`` along ``axis``: ``rows`` rows of ``row_len`` keys (the sorted
    axis last, the others in order), where those keys are, and where results go back.

    ``direct``: the rows are ``a``'s own memory, C-contiguous (no gather on the way in);
    ``restore``: the results are made in row order and gathered back into ``a``'s axis order
    (only when the axis is not last). ``a`` has passed :func:`_checked_input` (its offset and
    strides are whole elements)."""

    def __init__(self, a, axis):
        shape = tuple(int(s) for s in a.shape)
        itemsize = a.dtype.itemsize
        strides = tuple(int(s) // itemsize for s in a.strides)
        self.itemsize = itemsize
        self.context = a.context   # the object the array keeps alive (caches are weak-keyed)
        self.size = math.prod(shape)
        if axis is None:
            self.src_shape, self.src_strides = shape, strides
            self.perm = None
            self.rows, self.row_len = 1, self.size
            self.moved_shape = (self.size,)
        else:
            perm = [d for d in range(len(shape)) if d != axis] + [axis]
            self.perm = perm
            self.src_shape = tuple(shape[d] for d in perm)
            self.src_strides = tuple(strides[d] for d in perm)
            self.row_len = shape[axis]
            self.rows = self.size // self.row_len if self.row_len else 0
            self.moved_shape = self.src_shape
        self.shape = shape
        self.axis = axis
        self.direct = _c_contiguous(self.src_shape, self.src_strides)
        self.restore = axis is not None and axis != len(shape) - 1 and self.size > 0
        self.offset = a.offset // itemsize

    def rows_view(self, a, queue, flat=False):
        """``a`` itself, or an Array over its memory, as C-contiguous rows (rows, row_len) (or
        1-D when ``flat`` or the array is 1-D); for a ``direct`` layout only."""
        shape = (self.size,) if flat or a.ndim == 1 or self.axis is None else \
            (self.rows, self.row_len)
        if tuple(a.shape) == shape and (a.flags.c_contiguous or a.size <= 1):
            return a
        if a.flags.c_contiguous and self.perm == list(range(a.ndim)):
            return a.reshape(shape)
        view = cl_array.Array(queue, shape, a.dtype, data=a.base_data, offset=a.offset)
        view.events[:] = list(a.events)
        return view

    def result_shape(self, m):
        """The result's shape when each row gives ``m`` entries."""
        if self.axis is None:
            return (m,)
        shape = list(self.shape)
        shape[self.axis] = m
        return tuple(shape)

    def gather_in(self, queue, a, dst, dst_off, wait):
        """Enqueue the rows of ``a`` into ``dst`` at element ``dst_off``; the event."""
        return families_for(self.context).gather(queue, a.base_data, self.offset,
                                                 self.src_shape, self.src_strides, dst, dst_off,
                                                 self.itemsize, wait)

    def gather_out(self, queue, src, m, dst, dst_off, itemsize, wait):
        """Enqueue rows of ``m`` results (contiguous in ``src``) into ``dst`` in ``a``'s axis
        order, C-contiguous; the event."""
        moved = self.moved_shape[:-1] + (m,)
        c_strides = _c_strides(moved)
        # the result's axis d is the rows' axis perm.index(d)
        where = {d: j for j, d in enumerate(self.perm)}
        shape = tuple(moved[where[d]] for d in range(len(moved)))
        strides = tuple(c_strides[where[d]] for d in range(len(moved)))
        return families_for(self.context).gather(queue, src, 0, shape, strides, dst, dst_off,
                                                 itemsize, wait)


#: argsorts of this many keys or more into 64-bit indices sort with 32-bit ones and widen them:
#: below it the call is bound by the host, whose time the extra temporary and launch add to
#: (measured: BENCHMARKS_NOTES.md, "The top-k and segment defaults: where each value came from")
WIDEN_FROM = 1 << 20


def _along_last(a, axis):
    """(rows, row_len) when a call is the common one: a non-empty C-contiguous array along its
    last axis (or a 1-D one flattened); else None."""
    if not a.size or not a.flags.c_contiguous:
        return None
    if axis is None:
        if a.ndim != 1:
            return None
    elif axis != a.ndim - 1:
        return None
    row_len = int(a.shape[-1])
    return int(a.size) // row_len, row_len


def _c_strides(shape):
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(int(s), 1)
    return tuple(reversed(strides))


def _c_contiguous(shape, strides):
    """Whether a view of ``shape`` and element ``strides`` is C-contiguous (axes of length 1
    and empty views are, whatever their strides)."""
    if 0 in shape:
        return True
    step = 1
    for s, t in zip(reversed(shape), reversed(strides)):
        if s != 1 and t != step:
            return False
        step *= s
    return True


def _result(out, queue, dtype, shape, what, allocator, sorter):
    """The array a result is written to: ``out`` checked (a C-contiguous pyopencl Array of
    ``dtype`` and ``shape`` on the context, at an aligned offset; its overlaps with the inputs
    are the caller's to check, with :func:`check_outputs`), else a new one from ``allocator``
    or the queue's pool."""
    if out is None:
        if allocator is None:
            pool = sorter._pools.allocator(queue)
            if pool is not None:
                return pooled_output(queue, what, dtype, shape, pool)
        return new_output(queue, what, dtype, shape, allocator)
    if not isinstance(out, cl_array.Array):
        raise TypeError(f"{what}: expected a pyopencl.array.Array, got {type(out).__name__}")
    if out.dtype != np.dtype(dtype):
        raise TypeError(f"{what}: expected dtype {np.dtype(dtype)}, got {out.dtype}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{what}: expected shape {tuple(shape)}, got {tuple(out.shape)}")
    if not (out.flags.c_contiguous or out.size <= 1):
        raise ValueError(f"{what}: must be C-contiguous (strides {out.strides}); pass a "
                         f"contiguous array")
    check_aligned(out, what, "pass an output array at an aligned offset")
    check_context(sorter.context, out.context, what)
    return out


def _flat(arr):
    return arr if arr.ndim == 1 else arr.reshape(-1)


def _rows_operand(arr_or_buf, offset, n, dtype):
    if isinstance(arr_or_buf, cl_array.Array):
        return Operand(arr_or_buf.base_data, arr_or_buf.offset // arr_or_buf.dtype.itemsize, n,
                       arr_or_buf.dtype)
    return Operand(arr_or_buf, offset, n, np.dtype(dtype))


def _temp(queue, what, dtype, shape, allocator, sorter):
    """A temporary Array of the call, from ``allocator`` or the queue's pool (freed on return,
    while its commands may still run: a pool block goes only to later commands of its queue)."""
    alloc = sorter.temporaries(queue, allocator)
    return new_output(queue, what, dtype, shape, lambda nbytes: alloc(nbytes))


def _contiguous(a, queue, what, allocator, sorter, wait):
    """(``a``'s elements in C order as (Buffer, element offset), the events to wait for, whether
    they are ``a``'s own memory): ``a`` itself when it is C-contiguous, else a temporary that
    a gather fills (``a``'s events then replaced by the gather's)."""
    if a.flags.c_contiguous or a.size <= 1:
        return (a.base_data, a.offset // a.dtype.itemsize), list(wait) + list(a.events), True
    lay = _Layout(a, None)
    tmp = _temp(queue, what, a.dtype, (lay.size,), allocator, sorter)
    replaced = list(a.events)
    evt = lay.gather_in(queue, a, tmp.base_data, 0, list(wait) + replaced)
    attach_event(a, evt, replaced)
    return (tmp.base_data, 0), [evt], False


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
    descending = _check_bool(descending, "descending")
    if not isinstance(a, cl_array.Array):
        dev = _to_device(a, queue, "a")
        res = sort(dev, axis, descending=descending, allocator=allocator)
        return _host_result(res, out, "out")
    queue = _checked_input(a, queue)
    ax = _axis(axis, a.ndim)
    codec = key_codec(a.dtype)
    sorter = sorter_for(_context(a))
    fast = _along_last(a, ax)
    if fast:
        # the common call: a contiguous array along its last axis, into a new result (or out)
        rows, row_len = fast
        res = _result(out, queue, a.dtype, tuple(a.shape), "out", allocator, sorter)
        if out is not None:
            _check_sort_out(a, res)
        n = rows * row_len
        replaced, replaced_r = list(a.events), list(res.events) if res is not a else []
        wait = _events(wait_for) + replaced + replaced_r
        res_off = res.offset // a.dtype.itemsize
        if res is a:   # in place
            done = cl.enqueue_marker(queue, wait_for=wait or None)
        else:
            done = cl.enqueue_copy(queue, res.base_data, cast(cl.Buffer, a.base_data),
                                   byte_count=n * a.dtype.itemsize, src_offset=a.offset,
                                   dst_offset=res.offset, wait_for=wait or None)
            attach_event(a, done, replaced)
            replaced = replaced_r
        if row_len > 1 and rows == 1:
            done = sorter.enqueue_keys(queue, codec, n, res.base_data, res_off, descending,
                                       [done], allocator)
        elif row_len > 1:
            done = segmented.sort_rows(sorter, queue, codec,
                                       Operand(res.base_data, res_off, n, a.dtype), rows,
                                       row_len, descending=descending, wait=[done],
                                       allocator=allocator)
        attach_event(res, done, replaced)
        return res
    lay = _Layout(a, ax)
    res = _result(out, queue, a.dtype, lay.result_shape(lay.row_len), "out", allocator, sorter)
    if out is not None:
        _check_sort_out(a, res)
    replaced_a, replaced_r = list(a.events), list(res.events)
    wait = _events(wait_for) + replaced_a + (replaced_r if res is not a else [])
    if lay.restore:
        rows = _temp(queue, "sort rows", a.dtype, lay.moved_shape, allocator, sorter)
    else:
        rows = res
    in_place = res is a and lay.direct
    if in_place:
        evt = cl.enqueue_marker(queue, wait_for=wait or None) if wait else None
    elif lay.direct:
        evt = cl.enqueue_copy(queue, rows.base_data, cast(cl.Buffer, a.base_data),
                              byte_count=lay.size * lay.itemsize, src_offset=a.offset,
                              dst_offset=rows.offset, wait_for=wait or None) \
            if lay.size else cl.enqueue_marker(queue, wait_for=wait or None)
    else:
        evt = lay.gather_in(queue, a, rows.base_data, rows.offset // lay.itemsize, wait)
    if not in_place:
        attach_event(a, evt, replaced_a)
    evt = _sort_rows(sorter, queue, codec, rows, lay, descending, evt, allocator)
    if lay.restore:
        evt = lay.gather_out(queue, rows.base_data, lay.row_len, res.base_data,
                             res.offset // lay.itemsize, lay.itemsize, [evt])
    attach_event(res, evt, replaced_r)
    return res


def _check_sort_out(a, out):
    """sort's ``out``: sharing no byte with ``a``, unless it is ``a`` itself (a contiguous
    array, sorted in place: its rows sorted where they are, or gathered, sorted and gathered
    back)."""
    check_outputs([("out", out)], [("the input array", a)], in_place=a,
                  remedy="pass a separate array, or the input itself (out=a) to sort in place")


def _sort_rows(sorter, queue, codec, rows, lay, descending, evt, allocator):
    """Sort each row of the contiguous Array ``rows`` in place, after ``evt``; the event."""
    wait = [evt] if evt is not None else []
    if lay.row_len <= 1:
        return evt if evt is not None else cl.enqueue_marker(queue)
    if lay.rows <= 1:
        flat = _flat(rows)
        return sorter.sort(queue, flat, descending=descending, wait_for=wait,
                           allocator=allocator)
    keys = _rows_operand(rows, 0, lay.size, rows.dtype)
    return segmented.sort_rows(sorter, queue, codec, keys, lay.rows, lay.row_len,
                               descending=descending, wait=wait, allocator=allocator)


def _check_host_out(out, shape, dtype, what):
    """TypeError / ValueError unless ``out`` is a numpy array (no subclass but np.memmap, as
    for inputs) of ``shape`` and ``dtype``, the result of a numpy input. It may share memory
    with the input: the input was copied to the device first."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{what}: a numpy input writes into a numpy array, got "
                        f"{type(out).__name__}")
    host_array(out, what)
    if out.shape != tuple(shape) or out.dtype != dtype:
        raise ValueError(f"{what}: expected a numpy array of shape {tuple(shape)} and dtype "
                         f"{dtype}, got shape {out.shape} and dtype {out.dtype}")


def _host_result(res, out, what):
    """A device result copied back: a new numpy array, or into the numpy array ``out``."""
    if out is None:
        return res.get()
    _check_host_out(out, res.shape, res.dtype, what)
    out[...] = res.get()
    return out


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
    descending = _check_bool(descending, "descending")
    index_dtype, idx_what = _index_dtype_of(index_dtype, out)
    if not isinstance(a, cl_array.Array):
        host = _host_input(a, "a")
        if host.ndim == 0 and axis is not None:
            _axis(axis, 1)   # numpy sorts a 0-d array's one element (axis -1 or 0)
            axis = None
        # checked here, where the argument that chose it is known
        index_dtype = check_index_dtype(index_dtype if index_dtype is not None else np.int64,
                                        _row_length(host.shape, axis), idx_what)
        res = argsort(_to_device(host, queue, "a"), axis, descending=descending,
                      index_dtype=index_dtype, allocator=allocator)
        return _host_result(res, out, "out")
    queue = _checked_input(a, queue)
    if a.ndim == 0 and axis is not None:
        _axis(axis, 1)
        axis = None
    ax = _axis(axis, a.ndim)
    codec = key_codec(a.dtype)
    sorter = sorter_for(_context(a))
    fast = _along_last(a, ax)
    if fast and fast[1] > 1:
        # the common call: a contiguous array along its last axis, into a new result (or out)
        rows, row_len = fast
        idx_dtype = check_index_dtype(index_dtype if index_dtype is not None else np.int64,
                                      row_len, idx_what)
        res = _result(out, queue, idx_dtype, tuple(a.shape), "out", allocator, sorter)
        if out is not None:
            check_outputs([("out", res)], [("the input array", a)])
        n = rows * row_len
        replaced, replaced_r = list(a.events), list(res.events)
        wait = _events(wait_for) + replaced + replaced_r
        kbuf, koff = cast(cl.Buffer, a.base_data), a.offset // a.dtype.itemsize
        res_off = res.offset // idx_dtype.itemsize
        # 64-bit indices of rows shorter than 2**32: the sort carries 4-byte indices through
        # its passes and one more pass widens them (12 bytes a key, against 8 more bytes a key
        # in every pass)
        narrow = idx_dtype.itemsize == 8 and row_len < 2 ** 32 and n >= WIDEN_FROM
        if narrow:
            tmp = _temp(queue, "argsort indices", np.uint32, (n,), allocator, sorter)
            obuf, ooff, obytes = tmp.base_data, 0, 4
        else:
            obuf, ooff, obytes = res.base_data, res_off, idx_dtype.itemsize
        if rows == 1:
            evt = sorter.enqueue_keys(queue, codec, n, kbuf, koff, descending, wait, allocator,
                                      obuf, ooff, obytes)
        else:
            evt = segmented.sort_rows(sorter, queue, codec, Operand(kbuf, koff, n, a.dtype),
                                      rows, row_len, descending=descending,
                                      argsort_out=Operand(obuf, ooff, n,
                                                          np.dtype(f"u{obytes}")),
                                      wait=wait, allocator=allocator)
        if narrow:
            evt = families_for(_context(a)).widen(queue, obuf, res.base_data, res_off, n, [evt])
        attach_event(a, evt, replaced)
        attach_event(res, evt, replaced_r)
        return res
    lay = _Layout(a, ax)
    idx_dtype = check_index_dtype(index_dtype if index_dtype is not None else np.int64,
                                  lay.row_len, idx_what)
    res = _result(out, queue, idx_dtype, lay.result_shape(lay.row_len), "out", allocator,
                  sorter)
    if out is not None:
        check_outputs([("out", res)], [("the input array", a)])
    replaced_a, replaced_r = list(a.events), list(res.events)
    wait = _events(wait_for) + replaced_a + replaced_r
    if lay.direct:
        keys = a
    else:
        keys = _temp(queue, "argsort keys", a.dtype, lay.moved_shape, allocator, sorter)
        evt = lay.gather_in(queue, a, keys.base_data, 0, wait)
        attach_event(a, evt, replaced_a)
        replaced_a, wait = [], [evt]
    idx = _temp(queue, "argsort rows", idx_dtype, lay.moved_shape, allocator, sorter) \
        if lay.restore else res
    if lay.rows <= 1 or lay.row_len <= 1:
        # one row (or rows of one key: each position is 0)
        if lay.row_len <= 1 and lay.rows > 1:
            evt = cl.enqueue_fill_buffer(queue, idx.base_data, np.zeros(1, idx_dtype),
                                         idx.offset, lay.size * idx_dtype.itemsize,
                                         wait_for=wait or None)
        else:
            _, evt = sorter.argsort(queue, lay.rows_view(keys, queue, flat=True), out=_flat(idx),
                                    descending=descending, index_dtype=idx_dtype, wait_for=wait,
                                    allocator=allocator)
    else:
        evt = segmented.sort_rows(sorter, queue, codec,
                                  _rows_operand(keys, 0, lay.size, a.dtype), lay.rows,
                                  lay.row_len, descending=descending,
                                  argsort_out=_rows_operand(idx, 0, lay.size, idx_dtype),
                                  wait=wait, allocator=allocator)
    if keys is a:
        attach_event(a, evt, replaced_a)
    if lay.restore:
        evt = lay.gather_out(queue, idx.base_data, lay.row_len, res.base_data,
                             res.offset // idx_dtype.itemsize, idx_dtype.itemsize, [evt])
    attach_event(res, evt, replaced_r)
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
    sorted = _check_bool(sorted, "sorted")
    outs: Tuple[Any, Any] = (None, None)
    if out is not None:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"out: expected a pair (values, indices) of arrays, got "
                            f"{type(out).__name__}")
        outs = (out[0], out[1])
    index_dtype, idx_what = _index_dtype_of(index_dtype, outs[1], "out[1] (indices)")
    if not isinstance(a, cl_array.Array):
        host = _host_input(a, "a")
        index_dtype = check_index_dtype(index_dtype if index_dtype is not None else np.int64,
                                        _row_length(host.shape, axis), idx_what)
        values, indices = topk(_to_device(host, queue, "a"), k, axis, largest, sorted,
                               index_dtype=index_dtype, allocator=allocator)
        # both outputs checked before either is written
        for o, r, what in ((outs[0], values, "out[0] (values)"),
                           (outs[1], indices, "out[1] (indices)")):
            if o is not None:
                _check_host_out(o, r.shape, r.dtype, what)
        if outs[0] is not None and outs[1] is not None and np.shares_memory(outs[0], outs[1]):
            raise ValueError("out: the values and indices arrays overlap: pass separate arrays")
        return TopkResult(_host_result(values, outs[0], "out[0] (values)"),
                          _host_result(indices, outs[1], "out[1] (indices)"))
    queue = _checked_input(a, queue)
    ax = _axis(axis, a.ndim)
    codec = key_codec(a.dtype)
    sel = selector_for(_context(a))
    sorter = sorter_for(_context(a))
    if not isinstance(k, (int, np.integer)) or isinstance(k, (bool, np.bool_)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    if a.ndim <= 2 and ax == a.ndim - 1 and 0 < k <= a.shape[-1] and a.size \
            and a.flags.c_contiguous:
        # the common call, a contiguous array along its last axis into new results: the
        # Selector's enqueue on the array itself, with no layout, view or check to repeat
        row_len = int(a.shape[-1])
        rows = int(a.size) // row_len
        idx_dtype = check_index_dtype(index_dtype if index_dtype is not None else np.int64,
                                      row_len, idx_what)
        prepared = sel.prepared(queue, codec, rows, row_len, int(k), sorted, largest,
                                idx_dtype.itemsize)
        shape = tuple(a.shape[:-1]) + (int(k),)
        values = _result(outs[0], queue, a.dtype, shape, "out[0] (values)", allocator, sorter)
        indices = _result(outs[1], queue, idx_dtype, shape, "out[1] (indices)", allocator,
                          sorter)
        if outs != (None, None):
            _check_topk_outputs(a, values, indices)
        replaced_v, replaced_i = list(values.events), list(indices.events)
        wait = _events(wait_for) + list(a.events) + replaced_v + replaced_i
        evt = sel.enqueue(queue, prepared, a.base_data, a.offset // a.dtype.itemsize, values,
                          indices, wait, allocator)
        attach_event(values, evt, replaced_v)
        attach_event(indices, evt, replaced_i)
        return TopkResult(values, indices)
    lay = _Layout(a, ax)
    if k < 0:
        raise ValueError(f"k must be non-negative, got {k}")
    if k > lay.row_len:
        raise ValueError(f"k={k} exceeds the length {lay.row_len} of the axis (the row length)")
    k = int(k)
    idx_dtype = check_index_dtype(index_dtype if index_dtype is not None else np.int64,
                                  lay.row_len, idx_what)
    shape = lay.result_shape(k)
    values = _result(outs[0], queue, a.dtype, shape, "out[0] (values)", allocator, sorter)
    indices = _result(outs[1], queue, idx_dtype, shape, "out[1] (indices)", allocator, sorter)
    if outs != (None, None):
        _check_topk_outputs(a, values, indices)
    replaced_v, replaced_i = list(values.events), list(indices.events)
    wait = _events(wait_for)
    rows = lay.rows
    if rows * k == 0:   # nothing to select: the outputs are empty
        evt = cl.enqueue_marker(queue, wait_for=(wait + replaced_v + replaced_i) or None)
        attach_event(values, evt, replaced_v)
        attach_event(indices, evt, replaced_i)
        return TopkResult(values, indices)
    if lay.direct:
        keys = lay.rows_view(a, queue)
        wait = wait + list(a.events)
    else:
        keys = _temp(queue, "top-k keys", a.dtype, (rows, lay.row_len), allocator, sorter)
        replaced_a = list(a.events)
        evt = lay.gather_in(queue, a, keys.base_data, 0, wait + replaced_a)
        attach_event(a, evt, replaced_a)
        keys.events[:] = [evt]
        wait = []
    if lay.restore:
        v_rows = _temp(queue, "top-k values", a.dtype, (rows, k), allocator, sorter)
        i_rows = _temp(queue, "top-k indices", idx_dtype, (rows, k), allocator, sorter)
    else:
        v_rows = _reshape(values, (rows, k) if keys.ndim == 2 else (k,))
        i_rows = _reshape(indices, (rows, k) if keys.ndim == 2 else (k,))
    v_rows.events[:] = replaced_v
    i_rows.events[:] = replaced_i
    _, _, evt = sel.topk(queue, keys, k, largest=largest, sorted=sorted, values_out=v_rows,
                         indices_out=i_rows, index_dtype=idx_dtype, wait_for=wait,
                         allocator=allocator)
    if lay.restore:
        e1 = lay.gather_out(queue, v_rows.base_data, k, values.base_data,
                            values.offset // lay.itemsize, lay.itemsize, [evt])
        e2 = lay.gather_out(queue, i_rows.base_data, k, indices.base_data,
                            indices.offset // idx_dtype.itemsize, idx_dtype.itemsize, [evt])
        attach_event(values, e1, replaced_v)
        attach_event(indices, e2, replaced_i)
    elif v_rows is not values:
        attach_event(values, evt, replaced_v)
        attach_event(indices, evt, replaced_i)
    return TopkResult(values, indices)


#: the Array API's and numpy's name
top_k = topk
# documented, and referred to by the signatures, as clradix.TopkResult
TopkResult.__module__ = "clradix"


def _largest(largest, mode):
    """topk's direction: ``largest`` (a bool, or None: True) and the Array API's ``mode``
    ("largest" or "smallest"), which must agree when both are given."""
    if largest is not None:
        largest = _check_bool(largest, "largest")
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


def _reshape(arr, shape):
    return arr if tuple(arr.shape) == tuple(shape) else arr.reshape(shape)


# ------------------------------------------------------------------ numpy inputs

_default: List[Tuple[cl.CommandQueue, cl.Context]] = []
_default_lock = threading.Lock()


def default_queue() -> cl.CommandQueue:
    """The queue numpy inputs run on: one context and in-order queue on clradix's default device
    (``clradix.core.device.default_device``), made on first use and kept."""
    with _default_lock:
        if not _default:
            # the context is kept beside its queue: Intel's CPU runtime frees a context whose
            # last handle is released although a queue still holds it
            ctx = cl.Context([default_device()])
            _default.append((cl.CommandQueue(ctx), ctx))
        return _default[0][0]


__all__ = ["sort", "argsort", "topk", "top_k", "TopkResult", "sorter_for", "selector_for",
           "free_memory", "default_queue"]
