"""numpy-like conveniences on pyopencl arrays: ``clradix.sort``, ``clradix.argsort`` and
``clradix.topk``, with one shared Sorter and Selector per context. 1-D arrays, and each row of a
C-contiguous 2-D array (the last axis only; sort and argsort through clradix.dispatch.segments); numpy
arrays are copied to the default device (``default_queue``) and the results copied back.

The signatures follow numpy's and torch's where they meet: ``kind`` (numpy) and ``stable``
(torch) are accepted, and every value of either gives the stable order, which is the only one a
radix sort produces. The overloads state the types: numpy in, numpy out; a pyopencl Array in, a
pyopencl Array out."""

from __future__ import annotations

import threading
import weakref
from typing import List, Optional, Tuple, Union, cast, overload

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..core.arguments import attach_event, check_queue, operand
from ..core.device import default_device
from ..core.keys import key_codec
from ..core.sizes import output_index_dtype
from . import segments as segmented
from .selector import Selector
from .sorter import Sorter

#: numpy's sort kinds; clradix gives the stable order for each
SORT_KINDS = ("quicksort", "mergesort", "heapsort", "stable")

_sorters: weakref.WeakKeyDictionary[cl.Context, Sorter] = weakref.WeakKeyDictionary()
_sorters_lock = threading.Lock()


def sorter_for(context: cl.Context) -> Sorter:
    """The shared default Sorter of ``context`` (built kernels are reused across calls)."""
    with _sorters_lock:
        s = _sorters.get(context)
        if s is None:
            s = _sorters[context] = Sorter(context)
        return s


def _check_array(array, queue, axis=-1):
    """Refuse what the Sorter would refuse before anything (even the copy) is enqueued; the
    queue to run on (``queue``, else the array's)."""
    if not isinstance(array, cl_array.Array):
        raise TypeError(f"expected a pyopencl.array.Array or a numpy array, got "
                        f"{type(array).__name__}")
    key_codec(array.dtype)
    _check_axis(array, axis, "sort")
    if array.ndim == 2:
        if not (array.flags.c_contiguous or array.size <= 1):
            raise ValueError(f"array: a 2-D array must be C-contiguous (strides {array.strides} "
                             f"for shape {array.shape})")
        operand(array.reshape(-1), array.context, "array")
    else:
        operand(array, array.context, "array")
    queue = queue if queue is not None else array.queue
    if queue is None:
        raise ValueError("the array has no queue (it was made with queue=None): pass queue=")
    check_queue(array.context, queue)
    return queue


def _context(array) -> cl.Context:
    """The Context object ``array`` holds: the shared Sorter and Selector are kept per context
    object (weakly), and the caller's object lives as long as its arrays."""
    return array.context


def _check_axis(array, axis, what):
    if array.ndim not in (1, 2):
        raise ValueError(f"expected a 1-D or 2-D array, got shape {array.shape}")
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"axis must be an integer, got {type(axis).__name__}")
    if axis not in (-1, array.ndim - 1):
        raise ValueError(f"axis={axis}: {what} runs along the last axis of a C-contiguous array; "
                         f"for another axis pass a transposed contiguous copy")


_default: List[Tuple[cl.CommandQueue, cl.Context]] = []
_default_lock = threading.Lock()


def default_queue() -> cl.CommandQueue:
    """The queue numpy inputs run on: one context and in-order queue on clradix's default device
    (``clradix.device.default_device``), made on first use and kept."""
    with _default_lock:
        if not _default:
            # the context is kept beside its queue: Intel's CPU runtime frees a context whose
            # last handle is released although a queue still holds it
            ctx = cl.Context([default_device()])
            _default.append((cl.CommandQueue(ctx), ctx))
        return _default[0][0]


def _from_numpy(array, queue):
    """(device copy of the numpy ``array``, queue): the copy is made on ``queue``, else on the
    default queue."""
    host = np.ascontiguousarray(array)
    key_codec(host.dtype)
    return cl_array.to_device(queue or default_queue(), host)


def _check_kind(kind, stable):
    """Refuse a ``kind`` numpy does not know and a ``stable`` that is not a bool; every accepted
    value gives the stable order (the radix sort's only one), so nothing else depends on them."""
    if kind is not None and not (isinstance(kind, str) and kind in SORT_KINDS):
        raise ValueError(f"kind={kind!r}: expected None or one of "
                         f"{', '.join(repr(k) for k in SORT_KINDS)}")
    if stable is not None and not isinstance(stable, (bool, np.bool_)):
        raise TypeError(f"stable must be a bool or None, got {type(stable).__name__}")


@overload
def sort(array: np.ndarray, axis: int = -1, descending: bool = False, *,
         kind: Optional[str] = None, stable: Optional[bool] = None,
         queue: Optional[cl.CommandQueue] = None) -> np.ndarray: ...


@overload
def sort(array: cl_array.Array, axis: int = -1, descending: bool = False, *,
         kind: Optional[str] = None, stable: Optional[bool] = None,
         queue: Optional[cl.CommandQueue] = None) -> cl_array.Array: ...


def sort(array: Union[np.ndarray, cl_array.Array], axis: int = -1, descending: bool = False, *,
         kind: Optional[str] = None, stable: Optional[bool] = None,
         queue: Optional[cl.CommandQueue] = None) -> Union[np.ndarray, cl_array.Array]:
    """A sorted copy of ``array`` (stable; numpy's NaN and -0.0 rules): a 1-D pyopencl Array, or
    each row of a C-contiguous 2-D one (``axis`` -1 or 1 only). A numpy array is copied to the
    device (``queue``'s, else the default device's), sorted there, and copied back: the result is
    a numpy array.

    ``kind`` (numpy's: None, "quicksort", "mergesort", "heapsort" or "stable"; another value is a
    ValueError) and ``stable`` (torch's: None, True or False) are accepted for code written for
    numpy or torch. Every clradix sort is stable, so each of them gives the stable order,
    ``stable=False`` included (it allows any order of equal keys, and the stable one is one).
    """
    _check_kind(kind, stable)
    if isinstance(array, np.ndarray):
        return sort(_from_numpy(array, queue), axis, descending).get()
    queue = _check_array(array, queue, axis)
    out = array.copy(queue=queue)
    sorter = sorter_for(_context(array))
    if array.ndim == 2:
        flat = out.reshape(-1)
        keys = operand(flat, array.context, "array")
        codec = key_codec(array.dtype)
        evt = segmented.sort_rows(sorter, queue, codec, keys, array.shape[0], array.shape[1],
                                  descending=descending, wait=list(out.events))
        attach_event(out, evt, list(out.events))
        return out
    sorter.sort(queue, out, descending=descending)
    return out


@overload
def argsort(array: np.ndarray, axis: int = -1, descending: bool = False, *,
            kind: Optional[str] = None, stable: Optional[bool] = None,
            queue: Optional[cl.CommandQueue] = None) -> np.ndarray: ...


@overload
def argsort(array: cl_array.Array, axis: int = -1, descending: bool = False, *,
            kind: Optional[str] = None, stable: Optional[bool] = None,
            queue: Optional[cl.CommandQueue] = None) -> cl_array.Array: ...


def argsort(array: Union[np.ndarray, cl_array.Array], axis: int = -1, descending: bool = False,
            *, kind: Optional[str] = None, stable: Optional[bool] = None,
            queue: Optional[cl.CommandQueue] = None) -> Union[np.ndarray, cl_array.Array]:
    """Indices that sort ``array`` stably: a 1-D pyopencl Array (uint32, or uint64 from 2**32
    keys), or each row of a C-contiguous 2-D one (positions within the row, uint32 below 2**32
    keys in all). A numpy array is copied to the device (``queue``'s, else the default device's)
    and the indices are copied back: the result is a numpy array.

    ``kind`` (numpy's: None, "quicksort", "mergesort", "heapsort" or "stable"; another value is a
    ValueError) and ``stable`` (torch's: None, True or False) are accepted for code written for
    numpy or torch. Every clradix argsort is stable, so each of them gives the stable order
    (equal keys in increasing position), ``stable=False`` included.
    """
    _check_kind(kind, stable)
    if isinstance(array, np.ndarray):
        return argsort(_from_numpy(array, queue), axis, descending).get()
    queue = _check_array(array, queue, axis)
    sorter = sorter_for(_context(array))
    if array.ndim == 2:
        rows, row_len = array.shape
        flat = array.reshape(-1)
        keys = operand(flat, array.context, "array")
        idx = cl_array.empty(queue, array.shape, output_index_dtype(array.size))
        out = operand(idx.reshape(-1), array.context, "out")
        evt = segmented.sort_rows(sorter, queue, key_codec(array.dtype), keys, rows, row_len,
                                  descending=descending, argsort_out=out,
                                  wait=list(array.events))
        attach_event(array, evt, list(array.events))
        attach_event(idx, evt)
        return idx
    indices, _ = sorter.argsort(queue, array, descending=descending)
    return cast(cl_array.Array, indices)   # a new Array: no out= was given


_selectors: weakref.WeakKeyDictionary[cl.Context, Selector] = weakref.WeakKeyDictionary()


def selector_for(context: cl.Context) -> Selector:
    """The shared default Selector of ``context``."""
    sorter = sorter_for(context)
    with _sorters_lock:
        s = _selectors.get(context)
        if s is None:
            s = _selectors[context] = Selector(context, sorter=sorter)
        return s


@overload
def topk(array: np.ndarray, k: int, *, largest: bool = True, sorted: bool = True,
         axis: int = -1, queue: Optional[cl.CommandQueue] = None
         ) -> Tuple[np.ndarray, np.ndarray]: ...


@overload
def topk(array: cl_array.Array, k: int, *, largest: bool = True, sorted: bool = True,
         axis: int = -1, queue: Optional[cl.CommandQueue] = None
         ) -> Tuple[cl_array.Array, cl_array.Array]: ...


def topk(array: Union[np.ndarray, cl_array.Array], k: int, *, largest: bool = True,
         sorted: bool = True, axis: int = -1, queue: Optional[cl.CommandQueue] = None
         ) -> Union[Tuple[np.ndarray, np.ndarray], Tuple[cl_array.Array, cl_array.Array]]:
    """``(values, indices)``: the k largest (or smallest) entries of a 1-D pyopencl Array, or of
    each row of a 2-D one, and their positions along the last axis.

    Ties go to the smaller position; NaN counts as the largest value; bool keys have False
    below True. ``sorted=True`` orders the results (largest first for ``largest=True``, ties by
    position). Indices are uint32 (uint64 for rows of 2**32 entries or more). A numpy array is
    copied to the device (``queue``'s, else the default device's) and both results are copied
    back as numpy arrays.
    """
    if isinstance(array, np.ndarray):
        values, indices = topk(_from_numpy(array, queue), k, largest=largest, sorted=sorted,
                               axis=axis)
        return values.get(), indices.get()
    if not isinstance(array, cl_array.Array):
        raise TypeError(f"expected a pyopencl.array.Array or a numpy array, got "
                        f"{type(array).__name__}")
    _check_axis(array, axis, "top-k")
    queue = queue or array.queue
    if queue is None:
        raise ValueError("the array has no queue (it was made with queue=None): pass queue=")
    values, indices, _ = selector_for(_context(array)).topk(queue, array, k, largest=largest,
                                                            sorted=sorted)
    return values, indices
