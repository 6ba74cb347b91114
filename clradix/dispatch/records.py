"""Several arrays permuted by one sort: ``Sorter.sort`` with a list of values (or values of any
record width), ``Sorter.lexsort`` and ``Sorter.sort_lex`` (several keys, numpy.lexsort's order
of significance), and ``clradix.lexsort``.

One design serves them all: the keys are sorted once with a 4-byte index as their value (the
identity permutation, made on the device), and every other array is then taken by that index
into a temporary and copied home (clradix.drivers.permute): one read and one write of each
record whatever its width, instead of moving every record in every digit pass. Several keys
sort least significant first (LSD): an argsort of the least significant key, then for each
more significant key its records taken in the order so far and sorted, stably, with the order
as their values. Nothing is read back to the host."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..core.arguments import (Operand, attach_event, check_aligned, check_context,
                              check_outputs, operand)
from ..core.keys import VALUE_CL_TYPES, key_codec
from ..drivers.permute import payload_dtype
from ..planning.families import families_for

__all__ = ["Record", "record_operand", "is_records",
           "sort_records", "lexsort_order", "sort_lex"]


@dataclass
class Record:
    """A checked array permuted along its first axis: ``n`` records of ``record_bytes`` from
    byte ``byte_off`` of ``buffer``."""

    array: Any
    buffer: Any
    byte_off: int
    record_bytes: int
    events: list = field(default_factory=list)


def is_records(values):
    """Whether ``values`` (Sorter.sort's) take the record path: a list or tuple, or an Array
    whose records are not one of the widths the sort moves in its passes (1-D, 1, 2, 4, 8 or
    16 bytes)."""
    if isinstance(values, (list, tuple)):
        return True
    return isinstance(values, cl_array.Array) and (
        values.ndim != 1 or values.dtype.itemsize not in VALUE_CL_TYPES)


def record_operand(obj, ctx, n, what):
    """Check ``obj``, an array permuted along its first axis with ``n`` keys: a C-contiguous
    pyopencl Array of at least n records (each ``obj[i]``: any dtype, structured or void too,
    and any trailing shape)."""
    if isinstance(obj, cl.MemoryObjectHolder):
        raise TypeError(f"{what}: a Buffer does not say its record width: wrap it in a "
                        f"pyopencl.array.Array (cl_array.Array(queue, (n, ...), dtype, "
                        f"data=buffer))")
    if not isinstance(obj, cl_array.Array):
        raise TypeError(f"{what}: expected a pyopencl.array.Array, got {type(obj).__name__}")
    if obj.ndim == 0:
        raise ValueError(f"{what}: a 0-d array has no records to permute")
    if not (obj.flags.c_contiguous or obj.size <= 1):
        raise ValueError(f"{what}: must be C-contiguous (strides {obj.strides}): pass a "
                         f"contiguous copy")
    check_context(ctx, obj.context, what)
    check_aligned(obj, what)
    rows = int(obj.shape[0])
    if rows < n:
        raise ValueError(f"{what}: {rows} records are fewer than the {n} keys (short by "
                         f"{n - rows})")
    record = obj.dtype.itemsize * math.prod(int(s) for s in obj.shape[1:])
    if record == 0 and n:
        raise ValueError(f"{what}: records of 0 bytes (shape {obj.shape})")
    return Record(obj, obj.base_data, int(obj.offset), int(record), list(obj.events))


def _extent_operand(rec, n):
    """The bytes of a record array's first n records, as an Operand for the overlap checks
    (None when there are none)."""
    return Operand(rec.buffer, rec.byte_off, n * rec.record_bytes, np.dtype(np.uint8)) \
        if n else None


def check_records(keys, records, names):
    """ValueError when the keys (an Operand) or any two records share memory (all are
    permuted in place)."""
    check_outputs([("the keys", keys)] + [
        (name, _extent_operand(rec, keys.n)) for name, rec in zip(names, records)])


def apply_order(sorter, queue, perm, perm_dtype, n, records, wait, allocator):
    """Permute each record array in place by ``perm`` (a Buffer of n indices of ``perm_dtype``,
    record i becoming record perm[i]), through one temporary of the widest record; the last
    event, and each array's events replaced by its copy's."""
    if not records or n == 0:
        return cl.enqueue_marker(queue, wait_for=list(wait) or None)
    permute = families_for(sorter.context)
    alloc = sorter.temporaries(queue, allocator)
    tmp = alloc(n * max(r.record_bytes for r in records))
    evt = None
    for rec in records:
        deps = list(wait) + rec.events + ([evt] if evt is not None else [])
        took = permute.take(queue, rec.buffer, rec.byte_off, perm, 0, perm_dtype, tmp, 0, n, n,
                            rec.record_bytes, deps)
        evt = cl.enqueue_copy(queue, rec.buffer, tmp, byte_count=n * rec.record_bytes,
                              src_offset=0, dst_offset=rec.byte_off, wait_for=[took])
        attach_event(rec.array, evt, rec.events)
    return evt


def sort_records(sorter, queue, buf, keys, vals, *, dtype, descending, begin_bit, end_bit,
                 wait, allocator, segments, check_offsets):
    """Sorter.sort of the keys (``buf``, checked as the Operand ``keys``) with ``vals`` (a
    list of values of any record width): the keys sorted with their positions as values, then
    each array taken in that order; the last event."""
    vals = list(vals) if isinstance(vals, (list, tuple)) else [vals]
    n = keys.n
    names = [f"values[{i}]" for i in range(len(vals))]
    records = [record_operand(v, sorter.context, n, name) for v, name in zip(vals, names)]
    check_records(keys, records, names)
    pd = payload_dtype(n)
    alloc = sorter.temporaries(queue, allocator)
    perm = alloc(max(n, 1) * pd.itemsize)
    evt = families_for(sorter.context).iota(queue, perm, 0, n, pd, [])
    evt = sorter.sort(queue, buf, dtype=dtype, n=n, values=perm, value_dtype=pd,
                      descending=descending, begin_bit=begin_bit, end_bit=end_bit,
                      wait_for=list(wait) + [evt], allocator=allocator, segments=segments,
                      check_offsets=check_offsets)
    return apply_order(sorter, queue, perm, pd, n, records, [evt], allocator)


def key_operands(sorter, keys, what="keys"):
    """The checked Operands of a sequence of 1-D key Arrays of one length (a 2-D Array: its
    rows), each of a key dtype."""
    if isinstance(keys, cl_array.Array):
        if keys.ndim != 2:
            raise ValueError(f"{what}: expected a sequence of 1-D arrays or a 2-D array (one key "
                             f"a row), got shape {keys.shape}")
        keys = [keys[i] for i in range(int(keys.shape[0]))]
    if not isinstance(keys, (list, tuple)):
        raise TypeError(f"{what}: expected a sequence of pyopencl Arrays, got "
                        f"{type(keys).__name__}")
    if not keys:
        raise TypeError(f"{what}: need at least one key (numpy's lexsort: a sequence of keys "
                        f"with len > 0)")
    ops = []
    for i, k in enumerate(keys):
        if not isinstance(k, cl_array.Array):
            raise TypeError(f"{what}[{i}]: expected a pyopencl.array.Array, got "
                            f"{type(k).__name__}")
        op = operand(k, sorter.context, f"{what}[{i}]")
        key_codec(op.dtype)
        if ops and op.n != ops[0].n:
            raise ValueError(f"{what}: all keys must have the same length, {what}[{i}] has "
                             f"{op.n} and {what}[0] {ops[0].n}")
        ops.append(op)
    return ops


def lexsort_order(sorter, queue, keys, perm, perm_dtype, *, descending, wait, allocator):
    """Enqueue the stable order of the keys (Operands, the last one most significant, as
    numpy.lexsort) into ``perm`` (a Buffer of n indices of ``perm_dtype``); the event. The keys
    are only read."""
    n = keys[0].n
    wait = list(wait) + [e for k in keys for e in k.events]
    if n == 0:
        return cl.enqueue_marker(queue, wait_for=wait or None)
    _, evt = sorter.argsort(queue, keys[0].array, n=n,
                            out=perm, index_dtype=perm_dtype, descending=descending,
                            wait_for=wait,
                            allocator=allocator)
    if len(keys) == 1 or n == 1:
        return evt
    permute = families_for(sorter.context)
    alloc = sorter.temporaries(queue, allocator)
    tmp = alloc(n * max(k.dtype.itemsize for k in keys[1:]))
    for k in keys[1:]:
        w = k.dtype.itemsize
        took = permute.take(queue, k.buffer, k.offset * w, perm, 0, perm_dtype, tmp, 0, n, n, w,
                            [evt])
        evt = sorter.sort(queue, tmp, dtype=k.dtype, n=n, values=perm, value_dtype=perm_dtype,
                          descending=descending, wait_for=[took], allocator=allocator)
    return evt


def sort_lex(sorter, queue, keys, values: Any = (), *, descending, wait,
             allocator):
    """Sorter.sort_lex: every key array and every value array permuted in place by the keys'
    lexsort order; the last event."""
    ops = key_operands(sorter, keys)
    n = ops[0].n
    vals = list(values) if isinstance(values, (list, tuple)) else [values]
    names = [f"values[{i}]" for i in range(len(vals))]
    records = [Record(k.array, k.buffer, k.offset * k.dtype.itemsize, k.dtype.itemsize,
                      list(k.events)) for k in ops]
    records += [record_operand(v, sorter.context, n, name) for v, name in zip(vals, names)]
    names = [f"keys[{i}]" for i in range(len(ops))] + names
    check_outputs([(name, _extent_operand(rec, n)) for name, rec in zip(names, records)])
    pd = payload_dtype(n)
    alloc = sorter.temporaries(queue, allocator)
    perm = alloc(max(n, 1) * pd.itemsize)
    evt = lexsort_order(sorter, queue, ops, perm, pd, descending=descending, wait=wait,
                        allocator=allocator)
    return apply_order(sorter, queue, perm, pd, n, records, [evt], allocator)

