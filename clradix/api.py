"""numpy-like conveniences on pyopencl arrays: ``clradix.sort``, ``clradix.argsort`` and
``clradix.topk``, with one shared Sorter and Selector per context."""

from __future__ import annotations

import threading
import weakref
from typing import Optional, Tuple

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .keys import key_codec
from .arguments import check_queue, operand
from .selector import Selector
from .sorter import Sorter

_sorters = weakref.WeakKeyDictionary()
_sorters_lock = threading.Lock()


def sorter_for(context: cl.Context) -> Sorter:
    """The shared default Sorter of ``context`` (built kernels are reused across calls)."""
    with _sorters_lock:
        s = _sorters.get(context)
        if s is None:
            s = _sorters[context] = Sorter(context)
        return s


def _check_array(array, queue):
    """Refuse what the Sorter would refuse before anything (even the copy) is enqueued; the
    queue to run on (``queue``, else the array's)."""
    if not isinstance(array, cl_array.Array):
        raise TypeError(f"expected a pyopencl.array.Array, got {type(array).__name__}")
    key_codec(array.dtype)
    operand(array, array.context, "array")
    queue = queue if queue is not None else array.queue
    if queue is None:
        raise ValueError("the array has no queue (it was made with queue=None): pass queue=")
    check_queue(array.context, queue)
    return queue


def sort(array: cl_array.Array, descending: bool = False, *,
         queue: Optional[cl.CommandQueue] = None) -> cl_array.Array:
    """A sorted copy of the 1-D pyopencl Array ``array`` (stable; numpy's NaN and -0.0 rules)."""
    queue = _check_array(array, queue)
    out = array.copy(queue=queue)
    sorter_for(array.context).sort(queue, out, descending=descending)
    return out


def argsort(array: cl_array.Array, descending: bool = False, *,
            queue: Optional[cl.CommandQueue] = None) -> cl_array.Array:
    """Indices that sort the 1-D pyopencl Array ``array`` stably (uint32, or uint64 from 2**32)."""
    queue = _check_array(array, queue)
    idx, _ = sorter_for(array.context).argsort(queue, array, descending=descending)
    return idx


_selectors = weakref.WeakKeyDictionary()


def selector_for(context: cl.Context) -> Selector:
    """The shared default Selector of ``context``."""
    sorter = sorter_for(context)
    with _sorters_lock:
        s = _selectors.get(context)
        if s is None:
            s = _selectors[context] = Selector(context, sorter=sorter)
        return s


def topk(array: cl_array.Array, k: int, *, largest: bool = True, sorted: bool = True,
         axis: int = -1, queue: Optional[cl.CommandQueue] = None
         ) -> Tuple[cl_array.Array, cl_array.Array]:
    """``(values, indices)``: the k largest (or smallest) entries of a 1-D pyopencl Array, or of
    each row of a 2-D one, and their positions along the last axis.

    Ties go to the smaller position; NaN counts as the largest value. ``sorted=True`` orders the
    results (largest first for ``largest=True``, ties by position). Indices are uint32 (uint64
    for rows of 2**32 entries or more).
    """
    if not isinstance(array, cl_array.Array):
        raise TypeError(f"expected a pyopencl.array.Array, got {type(array).__name__}")
    if array.ndim not in (1, 2):
        raise ValueError(f"expected a 1-D or 2-D array, got shape {array.shape}")
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"axis must be an integer, got {type(axis).__name__}")
    if axis not in (-1, array.ndim - 1):
        raise ValueError(f"axis={axis}: top-k runs along the last axis of a C-contiguous array; "
                         f"for another axis pass a transposed contiguous copy")
    queue = queue or array.queue
    values, indices, _ = selector_for(array.context).topk(queue, array, k, largest=largest,
                                                           sorted=sorted)
    return values, indices
