"""``clradix.lexsort``: numpy's lexsort on pyopencl and numpy arrays, the last key the most
significant; one stable sort per key on the device (clradix.dispatch.records.lexsort_order)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.typing import DTypeLike

from ..core.arguments import Operand, check_aligned, check_outputs, host_array
from ..core.keys import key_codec
from .call import (Allocator, AxisError, Call, Events, host_result, index_dtype_for,
                   index_dtype_of, to_device)
from .records import lexsort_order
from .shared import default_queue


def lexsort(keys: Any, axis: int = -1, *, index_dtype: Optional[DTypeLike] = None,
            out: Any = None, allocator: Optional[Allocator] = None,
            queue: Optional[cl.CommandQueue] = None, wait_for: Events = None) -> Any:
    """The stable order of several keys, as ``numpy.lexsort(keys)``: the **last** key is the
    most significant (the primary sort key), the one before it breaks its ties, and so on.

    ``keys``: a sequence of 1-D arrays of one length (any key dtypes, mixed), or a 2-D array
    whose rows are the keys (a 1-D numpy array is a sequence of scalar keys, as numpy takes
    it; a 1-D pyopencl Array is refused: pass ``[a]``). ``axis`` must be -1 or 0 (the keys' only
    axis; keys of more axes are not supported). Returns int64 positions (numpy's ``intp``)
    unless ``index_dtype`` (int32, uint32, uint64) or ``out``'s dtype says otherwise.
    pyopencl Arrays in (every key), a pyopencl Array out; anything else is numpy's, copied to
    the device and back. ``allocator``, ``queue``, ``wait_for``: as for :func:`clradix.sort`.
    One stable sort per key: the least significant is argsorted, then each more significant
    one is taken in the order so far and sorted with it; nothing is read back."""
    index_dtype, idx_what = index_dtype_of(index_dtype, out)
    device_keys = _device_keys(keys)
    if device_keys is None:
        host = _host_keys(keys)
        if all(k.ndim == 0 for k in host):   # scalar keys, as numpy's: one position, 0
            return host_result(_Scalar(), out, "out")
        index_dtype = index_dtype_for(index_dtype, max(int(k.size) for k in host), idx_what)
        q = queue or default_queue()
        res = lexsort([to_device(k, q, f"keys[{i}]") for i, k in enumerate(host)], axis,
                      index_dtype=index_dtype, allocator=allocator)
        return host_result(res, out, "out")
    if axis not in (-1, 0) or isinstance(axis, bool):
        raise AxisError(f"axis {axis} is out of bounds for keys of one axis")
    call = Call(device_keys[0], queue, wait_for, allocator, "keys[0]")
    n = int(device_keys[0].size)
    for i, k in enumerate(device_keys):
        check_aligned(k, f"keys[{i}]")
        key_codec(k.dtype)
        if k.ndim != 1:
            raise ValueError(f"keys[{i}]: lexsort takes keys of one axis, got shape {k.shape}")
        if int(k.size) != n:
            raise ValueError(f"all keys need to be the same shape: keys[{i}] has {k.size} "
                             f"elements, keys[0] {n}")
    idx_dtype = index_dtype_for(index_dtype, n, idx_what)
    res = call.result(out, idx_dtype, (n,), "out")
    if out is not None:
        check_outputs([("out", res)], [(f"keys[{i}]", k) for i, k in enumerate(device_keys)])
    for k in device_keys:
        call.input(k)
    ops = []
    for i, k in enumerate(device_keys):
        flat = call.flat_in(k, f"keys[{i}]")
        ops.append(Operand(flat.base_data, flat.offset // k.dtype.itemsize, n, k.dtype, flat,
                           []))
    if n:
        # the order is built from its buffer's start (the sorts' values)
        at = call.positions(res, n, n, "lexsort order", at_start=True)
        call.then(lexsort_order(call.sorter, call.queue, ops, at[0], at[2], descending=False,
                                wait=call.wait, allocator=allocator))
        call.positions_home(at, res, n)
    call.done()
    return res


class _Scalar:
    """The order of scalar keys (numpy's lexsort of a 1-D array): position 0, 0-d."""

    shape = ()
    dtype = np.dtype(np.int64)

    def get(self):
        return np.zeros((), np.int64)


def _device_keys(keys):
    """The keys as a list of pyopencl Arrays, or None when they are numpy's (not every one a
    pyopencl Array)."""
    if isinstance(keys, cl_array.Array):
        if keys.ndim == 1:
            raise ValueError("keys: a 1-D array is a sequence of scalar keys to numpy's "
                             "lexsort; pass [a] to sort by the one key a")
        if keys.ndim == 2:
            return [keys[i] for i in range(int(keys.shape[0]))]
        raise ValueError(f"keys: lexsort takes keys of one axis (a 2-D array of keys), got "
                         f"shape {keys.shape}")
    if isinstance(keys, (list, tuple)) and keys and all(
            isinstance(k, cl_array.Array) for k in keys):
        return list(keys)
    if isinstance(keys, (list, tuple)) and any(isinstance(k, cl_array.Array) for k in keys):
        raise TypeError("keys: mix of pyopencl Arrays and other arrays: pass every key on the "
                        "device, or every key on the host")
    return None


def _host_keys(keys):
    """numpy's keys as a list of 1-D arrays (each keeps its own dtype, as numpy's lexsort)."""
    if isinstance(keys, (list, tuple)):
        host = [host_array(k, f"keys[{i}]") for i, k in enumerate(keys)]
    else:
        arr = host_array(keys, "keys")
        if arr.ndim == 0:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        host = list(arr)
    if not host:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    return host


__all__ = ["lexsort"]
