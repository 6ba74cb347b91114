"""The unique family and the run-length encoding on pyopencl and numpy arrays: numpy's
``unique``, the Array API's ``unique_values``, ``unique_counts``, ``unique_inverse`` and
``unique_all``, and ``run_lengths`` (the runs of equal keys of an array: on a sorted one, the
cell-start table of a particle code).

Each is one sort of a copy of the keys (with their positions as 4-byte values when indices or
the inverse are asked for) and the runs' two launches, a count per block and the write
(clradix.drivers.runs). The number of unique values decides the results' shapes, so the counts
are read back once, right after they are counted and before the results are made, as CuPy
does: the one wait on the host of these calls (a user event not yet complete among the events
waited for is refused first: the call would never return).

NaN: numpy's ``unique`` collapses every NaN into one (``equal_nan=True``); the Array API's
functions count each NaN as distinct, as numpy's own ``unique_*`` do. -0.0 and +0.0 are one
value, which appears as the first of them in the input. Results are sorted (the Array API
leaves the order unspecified; numpy's ``unique(sorted=False)`` too)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict, Generic, NamedTuple, Optional, TypeVar

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..core.arguments import refuse_pending_user_events
from ..core.keys import key_codec
from ..drivers.permute import payload_dtype
from .call import Allocator, Call, Events, check_bool, to_device
from ..planning.families import families_for

_A = TypeVar("_A")
_INDEX = np.dtype(np.int64)

if TYPE_CHECKING or sys.version_info >= (3, 11):   # generic named tuples: Python 3.11
    class UniqueAllResult(NamedTuple, Generic[_A]):
        """``unique_all``'s result, as the Array API names it."""

        values: _A
        indices: _A
        inverse_indices: _A
        counts: _A

    class UniqueCountsResult(NamedTuple, Generic[_A]):
        """``unique_counts``'s result, as the Array API names it."""

        values: _A
        counts: _A

    class UniqueInverseResult(NamedTuple, Generic[_A]):
        """``unique_inverse``'s result, as the Array API names it."""

        values: _A
        inverse_indices: _A

    class RunLengths(NamedTuple, Generic[_A]):
        """``run_lengths``'s result: each run's value, first position and length."""

        values: _A
        starts: _A
        lengths: _A
else:  # pragma: no cover - Python 3.9 and 3.10
    class UniqueAllResult(NamedTuple):
        """``unique_all``'s result, as the Array API names it."""

        values: Any
        indices: Any
        inverse_indices: Any
        counts: Any

    class UniqueCountsResult(NamedTuple):
        """``unique_counts``'s result, as the Array API names it."""

        values: Any
        counts: Any

    class UniqueInverseResult(NamedTuple):
        """``unique_inverse``'s result, as the Array API names it."""

        values: Any
        inverse_indices: Any

    class RunLengths(NamedTuple):
        """``run_lengths``'s result: each run's value, first position and length."""

        values: Any
        starts: Any
        lengths: Any

for _t in (UniqueAllResult, UniqueCountsResult, UniqueInverseResult, RunLengths):
    _t.__module__ = "clradix"   # documented, and referred to by the signatures, as clradix.X


def _encode(x, name, *, sort, nan_distinct, perm, counts, starts=False, allocator=None,
            queue=None, wait_for=None) -> Dict[str, Any]:
    """The runs of ``x`` flattened in C order (``sort``: of its sorted copy), on the device:
    {"values", and as asked "starts", "index", "inverse" (``perm``; of x's shape), "counts"}
    as pyopencl Arrays; numpy inputs give numpy arrays. ``name``: the public function, for
    the messages."""
    what = {"unique": "ar", "run_lengths": "a"}.get(name, "x")   # the parameter's name
    if not isinstance(x, cl_array.Array):
        dev = to_device(x, queue, what)
        got = _encode(dev, name, sort=sort, nan_distinct=nan_distinct, perm=perm,
                      counts=counts, starts=starts, allocator=allocator)
        return {k: v.get() for k, v in got.items()}
    call = Call(x, queue, wait_for, allocator, what)
    queue = call.queue
    codec = key_codec(x.dtype)
    ctx = call.context
    sorter = call.sorter
    n = int(x.size)
    out: Dict[str, Any] = {}

    def result(name, dtype, shape):
        out[name] = call.result(None, dtype, shape, name)
        return out[name]

    if n == 0:
        result("values", x.dtype, (0,))
        for name, wanted, shape in (("starts", starts, (0,)), ("index", perm, (0,)),
                                    ("inverse", perm, tuple(x.shape)), ("counts", counts, (0,))):
            if wanted:
                result(name, _INDEX, shape)
        call.done()
        return out
    counted = "runs" if name == "run_lengths" else "unique values"
    refuse_pending_user_events(
        call.wait,
        f"{name} reads the number of {counted} back on the host to size its results, which "
        f"waits for those events: the call would not return until the event completes. "
        f"Complete it before the call (or make the call once it has completed)")
    pd = payload_dtype(n)
    order = None
    if sort:
        # the sorted keys (and their positions) in one sort from x's own memory (a strided x
        # gathered into a temporary first), never in place: the sort reads x, writes keys
        flat = call.flat_in(x, "unique keys")
        keys = call.temp("unique keys", x.dtype, (n,))
        order = call.temp("unique positions", pd, (n,)) if perm else None
        evt = call.then(sorter.enqueue_keys(
            queue, codec, n, keys.base_data, 0, False, call.wait, allocator,
            out=None if order is None else order.base_data, index_bytes=pd.itemsize,
            src=(flat.base_data, flat.offset // x.dtype.itemsize)))
        call.read(x, evt)
        key_at = (keys.base_data, 0)
    else:
        flat = call.flat_in(x, "run keys")
        key_at = (flat.base_data, flat.offset // x.dtype.itemsize)
    prepared = families_for(ctx).runs(queue, codec, n, _INDEX, pd if perm else None, starts,
                                      counts, nan_distinct)
    table = sorter.temporaries(queue, allocator)(prepared.table_bytes)
    evt = call.then(prepared.count(queue, key_at, table, call.wait))
    # the one wait on the host: the number of runs is the results' length. The per-block counts
    # are read as soon as they are counted; the inverse (of x's shape) is made meanwhile.
    per_block = np.empty(prepared.blocks, prepared.table_dtype)
    read = cl.enqueue_copy(queue, per_block, table, wait_for=[evt], is_blocking=False)
    inverse = result("inverse", _INDEX, tuple(x.shape)) if perm else None
    read.wait()
    m = int(per_block.sum(dtype=np.uint64))
    values = result("values", x.dtype, (m,))
    first = result("starts", _INDEX, (m,)) if starts else None
    lengths = result("counts", _INDEX, (m,)) if counts else None
    index = result("index", _INDEX, (m,)) if perm else None

    def at(arr):
        return None if arr is None else (arr.base_data, 0)
    call.then(prepared.write(queue, key_at, table, m, at(values), at(first), at(lengths),
                             at(order), at(index), at(inverse), call.wait))
    call.done()
    return out


# ------------------------------------------------------------------ numpy's unique

def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: Optional[int] = None, *, equal_nan: bool = True,
           sorted: bool = True, allocator: Optional[Allocator] = None,
           queue: Optional[cl.CommandQueue] = None, wait_for: Events = None) -> Any:
    """The sorted unique values of ``ar`` (flattened), as ``numpy.unique``, with as asked the
    position of each one's first occurrence (``return_index``), the position in the unique
    values of each element of ``ar`` (``return_inverse``; of ``ar``'s shape, as numpy 2's) and
    each one's count (``return_counts``), int64: the values alone, or a tuple in numpy's order.

    ``equal_nan=True`` (numpy's default) collapses every NaN into one, its first occurrence;
    ``equal_nan=False`` keeps each NaN. -0.0 and +0.0 are one value. ``axis`` (unique
    sub-arrays) is not supported: only None. ``sorted`` (numpy 2.3's) is accepted; the values
    are always sorted. pyopencl Arrays in, pyopencl Arrays out (new ones from the queue's pool
    or ``allocator``); anything else is numpy's, copied to the device and back. The number of
    unique values is read back to size the results: the call's one wait on the host."""
    if axis is not None:
        raise NotImplementedError(f"unique(axis={axis!r}): unique sub-arrays along an axis are "
                                  f"not supported; clradix's unique flattens (axis=None)")
    flags = [check_bool(v, name) for v, name in (
        (return_index, "return_index"), (return_inverse, "return_inverse"),
        (return_counts, "return_counts"), (equal_nan, "equal_nan"), (sorted, "sorted"))]
    want_index, want_inverse, want_counts, equal_nan_b, _ = flags
    got = _encode(ar, "unique", sort=True, nan_distinct=not equal_nan_b,
                  perm=want_index or want_inverse, counts=want_counts, allocator=allocator,
                  queue=queue, wait_for=wait_for)
    parts = [got["values"]]
    if want_index:
        parts.append(got["index"])
    if want_inverse:
        parts.append(got["inverse"])
    if want_counts:
        parts.append(got["counts"])
    return parts[0] if len(parts) == 1 else tuple(parts)


# ------------------------------------------------------------------ the Array API's

def unique_values(x: Any, /, *, allocator: Optional[Allocator] = None,
                  queue: Optional[cl.CommandQueue] = None, wait_for: Events = None) -> Any:
    """The Array API's ``unique_values(x)``: the unique values of ``x`` (flattened), sorted,
    every NaN distinct (numpy's ``unique_values``). Arguments and the one read of the count:
    as for :func:`unique`."""
    return _encode(x, "unique_values", sort=True, nan_distinct=True, perm=False, counts=False,
                   allocator=allocator, queue=queue, wait_for=wait_for)["values"]


def unique_counts(x: Any, /, *, allocator: Optional[Allocator] = None,
                  queue: Optional[cl.CommandQueue] = None,
                  wait_for: Events = None) -> UniqueCountsResult[Any]:
    """The Array API's ``unique_counts(x)``: a :class:`UniqueCountsResult` ``(values,
    counts)``, every NaN distinct, int64 counts. As for :func:`unique_values`."""
    got = _encode(x, "unique_counts", sort=True, nan_distinct=True, perm=False, counts=True,
                  allocator=allocator, queue=queue, wait_for=wait_for)
    return UniqueCountsResult(got["values"], got["counts"])


def unique_inverse(x: Any, /, *, allocator: Optional[Allocator] = None,
                   queue: Optional[cl.CommandQueue] = None,
                   wait_for: Events = None) -> UniqueInverseResult[Any]:
    """The Array API's ``unique_inverse(x)``: a :class:`UniqueInverseResult` ``(values,
    inverse_indices)``, the inverse of ``x``'s shape (``values[inverse_indices]`` is ``x``),
    every NaN distinct, int64. As for :func:`unique_values`."""
    got = _encode(x, "unique_inverse", sort=True, nan_distinct=True, perm=True, counts=False,
                  allocator=allocator, queue=queue, wait_for=wait_for)
    return UniqueInverseResult(got["values"], got["inverse"])


def unique_all(x: Any, /, *, allocator: Optional[Allocator] = None,
               queue: Optional[cl.CommandQueue] = None,
               wait_for: Events = None) -> UniqueAllResult[Any]:
    """The Array API's ``unique_all(x)``: a :class:`UniqueAllResult` ``(values, indices,
    inverse_indices, counts)``: each value's first position in the flattened ``x``, the
    inverse of ``x``'s shape and the counts, every NaN distinct, int64. As for
    :func:`unique_values`."""
    got = _encode(x, "unique_all", sort=True, nan_distinct=True, perm=True, counts=True,
                  allocator=allocator, queue=queue, wait_for=wait_for)
    return UniqueAllResult(got["values"], got["index"], got["inverse"], got["counts"])


# ------------------------------------------------------------------ run lengths

def run_lengths(a: Any, /, *, equal_nan: bool = True, allocator: Optional[Allocator] = None,
                queue: Optional[cl.CommandQueue] = None,
                wait_for: Events = None) -> RunLengths[Any]:
    """The run-length encoding of ``a`` (flattened in C order): a :class:`RunLengths`
    ``(values, starts, lengths)``, each run of equal consecutive keys given by its key, its
    first position and its length (int64), as CUB's ``DeviceRunLengthEncode`` and
    ``torch.unique_consecutive``. On a sorted array the runs are its unique values: sort
    particles by cell key and ``starts``, ``lengths`` are each occupied cell's first particle
    and count. Keys are equal in the sort's order (-0.0 == +0.0; every NaN equal unless
    ``equal_nan=False``). Nothing is sorted here; the number of runs is read back to size the
    results (the call's one wait on the host). Arguments: as for :func:`unique`."""
    equal = check_bool(equal_nan, "equal_nan")
    got = _encode(a, "run_lengths", sort=False, nan_distinct=not equal, perm=False,
                  counts=True, starts=True,
                  allocator=allocator, queue=queue, wait_for=wait_for)
    return RunLengths(got["values"], got["starts"], got["counts"])


__all__ = ["unique", "unique_values", "unique_counts", "unique_inverse", "unique_all",
           "run_lengths", "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult",
           "RunLengths"]
