"""numpy-like conveniences on pyopencl arrays: ``clradix.sort`` and ``clradix.argsort``."""

import threading
import weakref

import pyopencl.array as cl_array

from .keys import key_codec
from .operands import operand
from .sorter import Sorter

_sorters = weakref.WeakKeyDictionary()
_sorters_lock = threading.Lock()


def sorter_for(context):
    """The shared default Sorter of ``context`` (built kernels are reused across calls)."""
    with _sorters_lock:
        s = _sorters.get(context)
        if s is None:
            s = _sorters[context] = Sorter(context)
        return s


def _check_array(array):
    """Refuse what the Sorter would refuse before anything (even the copy) is enqueued."""
    if not isinstance(array, cl_array.Array):
        raise TypeError(f"expected a pyopencl.array.Array, got {type(array).__name__}")
    key_codec(array.dtype)
    operand(array, array.context, "array")


def sort(array, descending=False, *, queue=None):
    """A sorted copy of the 1-D pyopencl Array ``array`` (stable; numpy's NaN and -0.0 rules)."""
    _check_array(array)
    queue = queue or array.queue
    out = array.copy(queue=queue)
    sorter_for(array.context).sort(queue, out, descending=descending)
    return out


def argsort(array, descending=False, *, queue=None):
    """Indices that sort the 1-D pyopencl Array ``array`` stably (uint32, or uint64 from 2**32)."""
    _check_array(array)
    queue = queue or array.queue
    idx, _ = sorter_for(array.context).argsort(queue, array, descending=descending)
    return idx
