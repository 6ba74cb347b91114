"""``clradix.lexsort``: numpy's lexsort on pyopencl and numpy arrays, the last key the most
significant; one stable sort per key on the device (clradix.dispatch.records.lexsort_order)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.typing import DTypeLike

from ..core.arguments import Operand, attach_event, check_aligned, check_outputs, host_array
from ..core.keys import key_codec
from ..core.sizes import check_index_dtype
from ..planning.families import families_for
from .api import (WIDEN_FROM, Allocator, AxisError, Events, _checked_input, _context,
                  _contiguous, _host_result, _index_dtype_of, _result, _temp,
                  _to_device, default_queue, sorter_for)
from .records import lexsort_order
from .sorter import _events


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
    index_dtype, idx_what = _index_dtype_of(index_dtype, out)
    device_keys = _device_keys(keys)
    if device_keys is None:
        host = _host_keys(keys)
        if all(k.ndim == 0 for k in host):   # scalar keys, as numpy's: one position, 0
            return _host_result(_Scalar(), out, "out")
        index_dtype = check_index_dtype(index_dtype if index_dtype is not None else np.int64,
                                        max(int(k.size) for k in host), idx_what)
        q = queue or default_queue()
        res = lexsort([_to_device(k, q, f"keys[{i}]") for i, k in enumerate(host)], axis,
                      index_dtype=index_dtype, allocator=allocator)
        return _host_result(res, out, "out")
    if axis not in (-1, 0) or isinstance(axis, bool):
        raise AxisError(f"axis {axis} is out of bounds for keys of one axis")
    first = device_keys[0]
    queue = _checked_input(first, queue, "keys[0]")
    n = int(first.size)
    for i, k in enumerate(device_keys):
        check_aligned(k, f"keys[{i}]")
        key_codec(k.dtype)
        if k.ndim != 1:
            raise ValueError(f"keys[{i}]: lexsort takes keys of one axis, got shape {k.shape}")
        if int(k.size) != n:
            raise ValueError(f"all keys need to be the same shape: keys[{i}] has {k.size} "
                             f"elements, keys[0] {n}")
    sorter = sorter_for(_context(first))
    idx_dtype = check_index_dtype(index_dtype if index_dtype is not None else np.int64, n,
                                  idx_what)
    res = _result(out, queue, idx_dtype, (n,), "out", allocator, sorter)
    if out is not None:
        check_outputs([("out", res)], [(f"keys[{i}]", k) for i, k in enumerate(device_keys)])
    replaced_r = list(res.events)
    wait = _events(wait_for) + replaced_r
    ops = []
    for i, k in enumerate(device_keys):
        at, deps, own = _contiguous(k, queue, f"keys[{i}]", allocator, sorter, [])
        wait += deps
        ops.append(Operand(at[0], at[1], n, k.dtype,
                           k if own else cl_array.Array(queue, (n,), k.dtype, data=at[0]), []))
    if n == 0:
        evt = cl.enqueue_marker(queue, wait_for=wait or None)
        attach_event(res, evt, replaced_r)
        return res
    res_off = res.offset // idx_dtype.itemsize
    narrow = idx_dtype.itemsize == 8 and n < 2 ** 32 and n >= WIDEN_FROM
    if narrow or res_off:
        # 64-bit results of fewer than 2**32 keys: the sorts carry 4-byte positions and one
        # pass widens them (as argsort's)
        pd = np.dtype(np.uint32 if narrow else f"u{idx_dtype.itemsize}")
        perm = _temp(queue, "lexsort order", pd, (n,), allocator, sorter)
        evt = lexsort_order(sorter, queue, ops, perm.base_data, pd, descending=False, wait=wait,
                            allocator=allocator)
        if narrow:
            evt = families_for(_context(first)).widen(queue, perm.base_data, res.base_data,
                                                      res_off, n, [evt])
        else:
            evt = cl.enqueue_copy(queue, res.base_data, perm.base_data,
                                  byte_count=n * pd.itemsize, dst_offset=res.offset,
                                  wait_for=[evt])
    else:
        evt = lexsort_order(sorter, queue, ops, res.base_data,
                            np.dtype(f"u{idx_dtype.itemsize}"), descending=False, wait=wait,
                            allocator=allocator)
    for k in device_keys:
        attach_event(k, evt, list(k.events))
    attach_event(res, evt, replaced_r)
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
