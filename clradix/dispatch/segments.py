"""The segmented sort's entry points: ``sort_segments`` (Sorter.sort and Sorter.argsort with
``segments=``) and ``sort_rows`` (clradix.sort and clradix.argsort of a 2-D array), and the
host-side checks of the offsets. The driver and what it runs: clradix.drivers.segmented.

Offsets given on the host (numpy arrays, sequences) are checked here, before anything is
enqueued; offsets on the device by seg_plan (``check_offsets=True`` reads its verdict back).
"""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..core.arguments import (Operand, check_aligned, check_context, check_outputs, host_array,
                              refuse_pending_user_events)
from ..core.launches import SortOperands
from ..core.sizes import index_type
from ..drivers.segmented import SegmentJob

_OFFSET_TYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long"}


# ------------------------------------------------------------------ host-side checks

def segment_offsets(segments, ctx, queue, n):
    """(Operand of the offsets on the device, number of segments, whether the device must check
    them, the events to wait for). ``segments``: a 1-D int32/int64 pyopencl Array (checked on the
    device), or a numpy array or sequence of integers (checked here, then copied into a new
    buffer as it is created: nothing is enqueued, nothing waits). Errors are raised before
    anything is enqueued."""
    if isinstance(segments, cl_array.Array):
        if segments.ndim != 1 or not (segments.flags.c_contiguous or segments.size <= 1):
            raise ValueError(f"segments: expected a contiguous 1-D array of num_segments + 1 "
                             f"offsets, got shape {segments.shape}")
        _offset_type(segments.dtype)
        if segments.size < 1:
            raise ValueError("segments: expected num_segments + 1 offsets (at least one), got "
                             "an empty array")
        check_context(ctx, segments.context, "segments")
        check_aligned(segments, "segments")
        op = Operand(segments.base_data, segments.offset // segments.dtype.itemsize,
                     int(segments.size), segments.dtype, segments, list(segments.events))
        return op, int(segments.size) - 1, True
    if isinstance(segments, cl.MemoryObjectHolder):
        raise TypeError("segments: a Buffer does not say its length or type; pass a pyopencl "
                        "Array of int32 or int64 offsets (cl_array.Array(queue, "
                        "(num_segments + 1,), np.int32, data=buffer))")
    host = host_array(segments, "segments")
    if not isinstance(segments, np.ndarray) and (host.dtype.kind in "iu" or host.size == 0):
        host = host.astype(np.int64)   # a sequence of Python ints
    _offset_type(host.dtype)
    if host.ndim != 1:
        raise ValueError(f"segments: expected a 1-D array of num_segments + 1 offsets, got shape "
                         f"{host.shape}")
    if host.size < 1:
        raise ValueError("segments: expected num_segments + 1 offsets (at least one), got an "
                         "empty array")
    if host[0] < 0 or host[-1] > n:
        raise ValueError(f"segments: offsets must lie in [0, n={n}], got first {host[0]} and last "
                         f"{host[-1]}")
    if host.size > 1:
        drop = np.flatnonzero(host[1:] < host[:-1])
        if drop.size:
            i = int(drop[0])
            raise ValueError(f"segments: offsets must be non-decreasing, but offsets[{i + 1}] = "
                             f"{host[i + 1]} < offsets[{i}] = {host[i]}")
    # copied when the buffer is created, not by a command on the queue: a write enqueued behind
    # the queue's earlier commands would have to wait for them before the call could return
    # (for ever, behind a user event the caller completes after the call)
    host = np.ascontiguousarray(host)
    dev = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    return Operand(dev, 0, int(host.size), host.dtype, None, []), int(host.size) - 1, False


def _offset_type(dtype):
    d = np.dtype(dtype)
    if d not in _OFFSET_TYPES:
        raise TypeError(f"segments: offsets must be int32 or int64, got {d}")
    return _OFFSET_TYPES[d]


# ------------------------------------------------------------------ entry points

def sort_segments(sorter, queue, codec, keys, vals, segments, *, descending, begin_bit, end_bit,
                  wait, allocator, argsort_out=None, check_offsets=False):
    """Sorter.sort (``keys`` in place, ``vals`` with them) or Sorter.argsort (``argsort_out``:
    the index Operand) of every segment; returns the event of the last command. ``keys``,
    ``vals``, ``argsort_out`` are checked Operands; ``wait`` the events to wait for."""
    n = keys.n
    seg, nseg, device_offsets = segment_offsets(segments, sorter.context, queue, n)
    wait = list(wait) + seg.events
    if argsort_out is not None:
        check_outputs([("out", argsort_out)], [("the segments", seg)])
    else:   # the keys and values are sorted in place (their overlap is checked by the caller)
        check_outputs([("the key array", keys), ("the value array", vals)],
                      [("the segments", seg)])
    off_t = _offset_type(seg.dtype)
    job_vals = (None, None, 0)
    if argsort_out is not None:
        job_vals = (None, argsort_out.at(), argsort_out.dtype.itemsize)
    else:
        if vals is not None:
            job_vals = (vals.at(), vals.at(), vals.dtype.itemsize)
    # nothing to move (a call with nothing to sort does not check offsets on the device)
    if n == 0 or nseg == 0 or (argsort_out is None and (n <= 1 or begin_bit == end_bit)):
        return cl.enqueue_marker(queue, wait_for=wait or None)
    argsort = argsort_out is not None
    job = SegmentJob(n, begin_bit, end_bit, bool(descending), argsort, job_vals[2], nseg, 0,
                     device_offsets, bool(device_offsets and check_offsets))
    if job.raise_invalid:
        refuse_pending_user_events(
            wait, "check_offsets=True reads the offsets' verdict back on the host, which waits "
                  "for those events: the call would not return until the event completes. "
                  "Complete it first, or pass check_offsets=False (invalid offsets then make "
                  "the call sort nothing)")
    vals_io = job_vals[0] or (None, 0)
    out = job_vals[1] if argsort else (None, 0)
    operands = SortOperands(keys.at(), None, vals_io if vals_io[0] is not None else None,
                            out if argsort else None, seg.at())
    return _run(sorter, queue, codec, job, max(n, nseg + 1), off_t, operands, wait,
                allocator)


def sort_rows(sorter, queue, codec, keys, rows, row_len, *, descending=False, argsort_out=None,
              wait=(), allocator=None):
    """clradix.sort / argsort of a C-contiguous 2-D array: ``keys`` (an Operand of rows x row_len
    keys) sorted in place, or with ``argsort_out`` (an Operand) the positions in each row."""
    n = rows * row_len
    if argsort_out is not None:
        vals = (None, argsort_out.at(), argsort_out.dtype.itemsize)
    else:
        vals = (None, None, 0)
        if row_len <= 1:
            return cl.enqueue_marker(queue, wait_for=list(wait) or None)
    if n == 0:
        return cl.enqueue_marker(queue, wait_for=list(wait) or None)
    argsort = argsort_out is not None
    if _rows_as_whole_sorts(queue.device, rows, row_len):
        done = []
        for r in range(rows):
            at = keys.offset + r * row_len
            if argsort:
                done.append(sorter.enqueue_keys(
                    queue, codec, row_len, keys.buffer, at, descending, list(wait), allocator,
                    out=argsort_out.buffer, out_off=argsort_out.offset + r * row_len,
                    index_bytes=argsort_out.dtype.itemsize))
            else:
                done.append(sorter.enqueue_keys(queue, codec, row_len, keys.buffer, at,
                                                descending, list(wait), allocator))
        return cl.enqueue_marker(queue, wait_for=done)
    job = SegmentJob(n, 0, codec.bits, bool(descending), argsort, vals[2], rows, row_len)
    out = vals[1] if argsort else (None, 0)
    operands = SortOperands(keys.at(), None, vals_out=out if argsort else None)
    return _run(sorter, queue, codec, job, n, "int", operands, list(wait), allocator)


# On a CPU, rows of at least this many keys, fewer than two per compute unit, are each sorted by
# the whole-array sort (its chunks on every core) instead of one work-item a row, which would
# leave cores idle: one row of 2^24 keys would sort on one core.
WHOLE_SORT_ROW_LEN = 1 << 16


def _rows_as_whole_sorts(device, rows, row_len):
    return (bool(device.type & cl.device_type.CPU) and row_len >= WHOLE_SORT_ROW_LEN
            and rows < 2 * device.max_compute_units)


def _run(sorter, queue, codec, job, size, off_t, operands, wait, allocator):
    """Enqueue the prepared work of ``job`` through the Sorter's planner."""
    index_name, index_np = index_type(size)
    key = ("segments", queue.device.int_ptr, codec.dtype, index_name, off_t, job)
    prepared = sorter.planner.ready(key)
    if prepared is None:
        prepared = sorter.planner.prepare_segments(key, queue.device, codec, index_name,
                                                   index_np, off_t, job)
    alloc = sorter.temporaries(queue, allocator)
    evt = prepared.run(queue, operands, alloc, wait)
    return evt if evt is not None else cl.enqueue_marker(queue, wait_for=wait or None)
