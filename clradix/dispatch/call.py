"""One call of a numpy-like function, from its arguments to its results: the one pipeline of
``sort``, ``argsort``, ``topk``, ``searchsorted``, ``lexsort``, the unique family and the
selection functions.

A function on pyopencl Arrays is a short composition of a :class:`Call`::

    call = Call(a, queue, wait_for, allocator)    # the queue, the wait list, a's events
    lay = call.layout(a, axis)                    # a as rows, the axis last
    res = call.result(out, dtype, lay.result_shape(m), "out")   # out= checked, or a new array
    keys = call.keys_in(a, lay, "keys")           # layout in: the rows' (Buffer, offset)
    rows = call.rows_out(res, lay, m, "rows")     # where the operation writes m results a row
    call.then(operation(..., call.wait))          # the operation, on contiguous rows
    call.lay_out(rows, res, lay, m)               # layout out: rows back into res's axis order
    call.done()                                   # every array's events replaced

and a numpy input takes one step more on each side: :func:`to_device` before (the input copied
to ``queue``'s device, else the default one), :func:`host_result` after (the result copied
back, or into a numpy ``out``).

**Layouts.** ``a`` along an axis (:class:`Layout`) is ``rows`` rows of ``row_len`` keys, the
axis last and the other axes before it in their order. When those rows are ``a``'s own memory,
C-contiguous (the common call: a contiguous array along its last axis), the layout is the
identity: no command on the way in, and results made in row order are already in the result's
axis order. That identity is the fast path, not a second pipeline: it is recognised first and
made without the strides' arithmetic. Otherwise a gather (clradix.drivers.layout) copies the rows
into a temporary, and results are made in row order and gathered back.

**Events**, pyopencl's conventions: an array's ``events`` are what its later users wait for.
The call's first command waits for ``wait_for`` and for the events of every input and output
(``call.wait``); each command after waits for the one before (:meth:`Call.then`). An input's
events are replaced by the last command that reads it (:meth:`Call.read`), an output's by the
last that writes it; nothing waits on the host.

**Memory.** A result is ``out`` (checked: a C-contiguous Array of the result's dtype and shape
on the call's context, at an aligned offset), else a new Array from ``allocator``, else from
the queue's memory pool of the context's shared Sorter (``free_memory`` empties it), so a
repeated call allocates nothing. Temporaries come from the same place and are freed on return
while their commands may still run: a pool block goes only to later commands of its queue.

**Indices** are int64 (numpy's ``intp``) unless the call says otherwise; 64-bit positions of
rows shorter than 2**32 in large calls are carried as 4-byte ones and widened in one pass
(:meth:`Call.positions`), the one rule of argsort and lexsort."""

from __future__ import annotations

import math
import operator
from typing import Callable, Optional, Sequence

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..core.arguments import (attach_event, check_aligned, check_context, check_queue,
                              host_array, wait_list)
from ..core.keys import key_codec
from ..core.memory import new_output, upload
from ..core.sizes import check_index_dtype
from ..planning.families import families_for
from .shared import default_queue, sorter_for

try:   # numpy >= 1.25
    from numpy.exceptions import AxisError
except ImportError:  # pragma: no cover - older numpy
    AxisError = np.AxisError  # type: ignore[attr-defined,misc]

Allocator = Callable[[int], cl.MemoryObjectHolder]
Events = Optional[Sequence[Optional[cl.Event]]]

_INT64 = np.dtype(np.int64)
_UINT32 = np.dtype(np.uint32)
_UNSIGNED = {4: _UINT32, 8: np.dtype(np.uint64)}


# ------------------------------------------------------------------ argument checks

def check_bool(value, name):
    """``value`` as a bool; TypeError naming ``name`` unless it is one."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def normalize_axis(axis, ndim):
    """``axis`` normalised (None stays None); numpy's AxisError when it is out of range."""
    if axis.__class__ is int and -ndim <= axis < ndim:
        return axis % ndim   # the common call: a Python int in range
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


def row_length(shape, axis):
    """The positions an index along ``axis`` of an array of ``shape`` takes (``axis`` None, or a
    0-d array: the flattened array's); AxisError for an axis out of range."""
    if axis is None or not shape:
        return math.prod(shape)
    return int(shape[normalize_axis(axis, len(shape))])


def index_dtype_of(index_dtype, out, what="out"):
    """(the index dtype asked for, the argument that asked): ``index_dtype``, else the dtype of
    ``out`` (named ``what``), else None (int64)."""
    if index_dtype is None and out is not None and hasattr(out, "dtype"):
        return out.dtype, what
    return index_dtype, "index_dtype"


def index_dtype_for(index_dtype, n, what="index_dtype"):
    """The dtype of positions below ``n``: ``index_dtype`` checked (named ``what``), by default
    int64, numpy's ``intp`` and the type torch gathers with."""
    return check_index_dtype(_INT64 if index_dtype is None else index_dtype, n, what)


#: 64-bit positions of this many keys or more are carried as 32-bit ones and widened: below it
#: the call is bound by the host, whose time the extra temporary and launch add to
#: (measured: BENCHMARKS_NOTES.md, "The top-k and segment defaults: where each value came from")
WIDEN_FROM = 1 << 20


def device_queue(a, queue, what="a"):
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


def check_out(out, context, dtype, shape, what):
    """``out`` as a result: a C-contiguous pyopencl Array of ``dtype`` and ``shape`` on
    ``context``, at an aligned offset (its overlaps with the inputs are the caller's to check,
    with core.arguments.check_outputs)."""
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
    check_context(context, out.context, what)
    return out


# ------------------------------------------------------------------ numpy inputs and results

def host_input(a, what):
    """A host input (anything numpy takes but a Buffer and the ndarray subclasses whose meaning
    would be lost) as a numpy array of a key dtype."""
    if isinstance(a, cl.MemoryObjectHolder):
        raise TypeError(f"{what}: a Buffer does not say its shape or type: wrap it in a "
                        f"pyopencl.array.Array, or use Sorter.sort / Sorter.argsort / "
                        f"Selector.topk, which take Buffers with dtype= and n=")
    host = host_array(a, what)
    key_codec(host.dtype)
    return host


def to_device(a, queue, what):
    """A host input's device copy (C order) on ``queue``, else the default queue; MemoryError
    before anything is allocated when the device cannot hold it (clradix.core.memory.upload)."""
    host = host_input(a, what)
    if not host.flags.c_contiguous:   # (ascontiguousarray would make a 0-d array 1-D)
        host = np.ascontiguousarray(host)
    if queue is not None and not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue: expected a pyopencl.CommandQueue, got {type(queue).__name__}")
    return upload(queue or default_queue(), host, f"the device copy of {what}")


def check_host_out(out, shape, dtype, what):
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


def host_result(res, out, what):
    """A device result copied back: a new numpy array, or into the numpy array ``out``."""
    if out is None:
        return res.get()
    check_host_out(out, res.shape, res.dtype, what)
    out[...] = res.get()
    return out


# ------------------------------------------------------------------ layouts

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


class Layout:
    """How a call sees array ``a`` along ``axes`` (None: every axis, the flattened array; else
    a sorted tuple): ``rows`` rows of ``row_len`` keys, the axes last in their order and the
    others before them in theirs (numpy's order for a reduction over several axes).

    ``direct``: the rows are ``a``'s own memory, C-contiguous (no command on the way in);
    ``restore``: results made in row order are gathered back into ``a``'s axis order (the axes
    are not last). ``a`` has passed :func:`device_queue` (its offset and strides are whole
    elements). The identity layout of the common call is made by :meth:`Call.layout`."""

    __slots__ = ("shape", "axes", "rows", "row_len", "size", "direct", "restore", "perm",
                 "src_shape", "src_strides", "offset", "itemsize", "context")

    def __init__(self, a, axes):
        # (list comprehensions, not generators: a call makes one Layout, and a generator costs
        # more than the few axes it runs over)
        shape = tuple([int(s) for s in a.shape])
        itemsize = a.dtype.itemsize
        strides = [int(s) // itemsize for s in a.strides]
        order = range(len(shape)) if axes is None else axes
        others = [d for d in range(len(shape)) if d not in order]
        self.perm = perm = others + list(order)
        self.shape, self.axes, self.itemsize = shape, axes, itemsize
        self.src_shape = tuple([shape[d] for d in perm])
        self.src_strides = tuple([strides[d] for d in perm])
        self.size = math.prod(shape)
        self.rows = math.prod([shape[d] for d in others])
        self.row_len = math.prod([shape[d] for d in order])
        self.direct = _c_contiguous(self.src_shape, self.src_strides)
        self.restore = axes is not None and perm != list(range(len(shape))) and self.size > 0
        self.offset = a.offset // itemsize
        self.context = a.context   # the object the array keeps alive (caches are weak-keyed)

    def result_shape(self, m):
        """The result's shape when each row of the one axis gives ``m`` entries."""
        if self.axes is None:
            return (m,)
        if m == self.row_len:
            return self.shape
        shape = list(self.shape)
        shape[self.axes[0]] = m
        return tuple(shape)

    def reduced_shape(self, keepdims):
        """The shape of a reduction over the axes."""
        axes = range(len(self.shape)) if self.axes is None else self.axes
        if keepdims:
            return tuple(1 if d in axes else s for d, s in enumerate(self.shape))
        return tuple(s for d, s in enumerate(self.shape) if d not in axes)

    def gather_in(self, queue, a, dst, dst_off, wait):
        """Enqueue the rows of ``a`` into ``dst`` at element ``dst_off``; the event."""
        return families_for(self.context).gather(queue, a.base_data, self.offset,
                                                  self.src_shape, self.src_strides, dst, dst_off,
                                                  self.itemsize, wait)

    def gather_out(self, queue, src, m, dst, dst_off, itemsize, wait):
        """Enqueue rows of ``m`` results (contiguous in ``src``) into ``dst`` in ``a``'s axis
        order, C-contiguous; the event. (``m`` other than ``row_len``: the axes are one.)"""
        moved = self.src_shape if m == self.row_len else self.src_shape[:-1] + (m,)
        c_strides = _c_strides(moved)
        # the result's axis d is the rows' axis perm.index(d)
        where = {d: j for j, d in enumerate(self.perm)}
        shape = tuple([moved[where[d]] for d in range(len(moved))])
        strides = tuple([c_strides[where[d]] for d in range(len(moved))])
        return families_for(self.context).gather(queue, src, 0, shape, strides, dst, dst_off,
                                                  itemsize, wait)


# ------------------------------------------------------------------ the call

class _Identity(Layout):
    """The identity layout: ``size`` keys of ``shape`` along its last axis ``ax`` (None: a 1-D
    array flattened), ``a``'s own C-contiguous memory."""

    __slots__ = ()
    direct, restore = True, False

    def __init__(self, shape, ax, size):
        self.shape, self.size = shape, size
        self.axes = None if ax is None else (ax,)
        self.row_len = row_len = int(shape[-1])
        self.rows = size // row_len


#: a direct layout standing for any C-contiguous array (Call.keys_in reads only ``direct``)
_CONTIGUOUS = _Identity((1,), None, 1)


class Call:
    """One call on pyopencl Arrays: its queue (``queue``, checked, else the first input's), the
    shared Sorter of the context (results' and temporaries' memory), the caller's allocator,
    the events its next command waits for (``wait``), and the inputs and outputs whose events
    the call replaces. Made from the first input ``a`` (named ``what`` in messages)."""

    __slots__ = ("queue", "context", "sorter", "allocator", "wait", "last", "_inputs",
                 "_outputs")

    def __init__(self, a, queue, wait_for, allocator, what="a"):
        self.queue = device_queue(a, queue, what)
        self.context = a.context   # the object the array keeps alive (caches are weak-keyed)
        self.sorter = sorter_for(self.context)
        self.allocator = allocator
        replaced = list(a.events)
        self.wait = wait_list(wait_for) + replaced
        #: the event of the call's last command so far (None: none enqueued)
        self.last = None
        # id(array): (array, its events when the call took it), until it is given its event
        self._inputs = {id(a): (a, replaced)}
        self._outputs = {}

    # ---------------------------------------------------------------- arrays

    def input(self, x):
        """Take ``x`` (a pyopencl Array, or None) as one more input of the call."""
        if x is None or id(x) in self._inputs:
            return
        replaced = list(x.events)
        self.wait += replaced
        self._inputs[id(x)] = (x, replaced)

    def result(self, out, dtype, shape, what):
        """The array a result is written to: ``out`` checked (:func:`check_out`), else a new one
        from the allocator or the queue's pool; an output of the call. ``out`` may be an input
        (``sort(a, out=a)``): it stays one, its events replaced once."""
        if out is None:
            res = self.sorter.new_result(self.queue, what, dtype, shape, self.allocator)
            self._outputs[id(res)] = (res, [])
            return res
        res = check_out(out, self.context, dtype, shape, what)
        if id(res) not in self._inputs:
            replaced = list(res.events)
            self.wait += replaced
            self._outputs[id(res)] = (res, replaced)
        return res

    def temp(self, what, dtype, shape):
        """A temporary Array of the call, from the allocator or the queue's pool."""
        alloc = self.sorter.temporaries(self.queue, self.allocator)
        return new_output(self.queue, what, dtype, shape, lambda nbytes: alloc(nbytes))

    # ---------------------------------------------------------------- events

    def then(self, evt):
        """``evt`` (None: nothing was enqueued) is the call's last command: the next one waits
        for it. Returns it."""
        if evt is not None:
            self.wait = [evt]
            self.last = evt
        return evt

    def read(self, x, evt):
        """``evt`` is the last command that reads the input ``x``: its events become ``evt``."""
        taken = self._inputs.pop(id(x), None)
        if taken is not None:
            attach_event(x, evt, taken[1])

    def wrote(self, res, evt):
        """``evt`` is the last command that writes the output ``res``."""
        taken = self._outputs.pop(id(res), None)
        if taken is not None:
            attach_event(res, evt, taken[1])

    def marker(self):
        """Enqueue a marker waiting for ``wait`` (a call with nothing to compute); the event."""
        return self.then(cl.enqueue_marker(self.queue, wait_for=self.wait or None))

    def done(self):
        """The call is enqueued: every input and output not yet given its event gets the last
        command's (a marker when none was enqueued); that event."""
        evt = self.last if self.last is not None else self.marker()
        for x, replaced in self._inputs.values():
            attach_event(x, evt, replaced)
        for x, replaced in self._outputs.values():
            attach_event(x, evt, replaced)
        return evt

    # ---------------------------------------------------------------- layouts

    def layout(self, a, axis):
        """``a`` along ``axis`` (an int, normalised here, or None: flattened): the identity
        when ``a`` is a non-empty C-contiguous array along its last axis (or a 1-D one
        flattened), made without the strides' arithmetic (its gathers are never asked for);
        else a :class:`Layout`."""
        ax = normalize_axis(axis, a.ndim)
        size = a.size
        if size and a.flags.c_contiguous:
            shape = a.shape
            if ax == len(shape) - 1 if ax is not None else len(shape) == 1:
                return _Identity(shape, ax, size)
        axes = None if ax is None else (ax,)
        return Layout(a, axes)

    def keys_in(self, a, lay, what, into=None):
        """The layout in: ``a``'s rows as (Buffer, element offset). Identity: ``a``'s own memory
        and no command; else one command writes them into ``into`` (an Array; ``a`` itself, a
        contiguous array sorted in place, is left where it is) or into a new temporary: a copy
        when ``lay`` is direct, else a gather. ``a``'s events become that command's."""
        if lay.direct and (into is None or into is a):
            return a.base_data, a.offset // a.dtype.itemsize
        itemsize = a.dtype.itemsize
        size = int(a.size)
        if into is None:
            into = self.temp(what, a.dtype, (size,))
        dst_off = into.offset // itemsize
        if size:
            if lay.direct:
                evt = cl.enqueue_copy(self.queue, into.base_data, a.base_data,
                                      byte_count=size * itemsize, src_offset=a.offset,
                                      dst_offset=into.offset, wait_for=self.wait or None)
            else:
                evt = lay.gather_in(self.queue, a, into.base_data, dst_off, self.wait)
            self.then(evt)
            self.read(a, evt)
        return into.base_data, dst_off

    def flat_in(self, x, what):
        """``x``'s elements in C order as a C-contiguous Array: ``x`` itself when it is one,
        else a temporary that a gather fills (``x``'s events then the gather's)."""
        if x.flags.c_contiguous or x.size <= 1:
            return x
        tmp = self.temp(what, x.dtype, (int(x.size),))
        self.keys_in(x, Layout(x, None), what, tmp)
        return tmp

    def copy_in(self, x, what, into):
        """``x``'s elements in C order copied into the Array ``into``; its (Buffer, offset)."""
        contiguous = x.flags.c_contiguous or x.size <= 1
        return self.keys_in(x, _CONTIGUOUS if contiguous else Layout(x, None), what, into)

    def rows_out(self, res, lay, m, what):
        """Where an operation writes ``m`` results a row for the output ``res``: ``res`` itself,
        or (``lay.restore``) a temporary in row order for :meth:`lay_out`."""
        return self.temp(what, res.dtype, (lay.rows * m,)) if lay.restore else res

    def lay_out(self, rows, res, lay, m):
        """The layout out: ``rows`` (from :meth:`rows_out`) gathered into ``res`` in its axis
        order after the call's last command, when they are not ``res`` itself."""
        if rows is not res:
            self.wrote(res, lay.gather_out(self.queue, rows.base_data, m, res.base_data,
                                           res.offset // res.dtype.itemsize,
                                           res.dtype.itemsize, self.wait))

    # ---------------------------------------------------------------- positions

    def positions(self, idx, n, row_len, what, at_start=False):
        """Where an operation writes the ``n`` positions (each below ``row_len``) that the
        index Array ``idx`` receives: (Buffer, element offset, the unsigned dtype written,
        the temporary or None) for :meth:`positions_home`. 64-bit positions of rows shorter than
        2**32 in calls of ``WIDEN_FROM`` keys or more are written 4-byte into a temporary and
        widened after (12 bytes a key, against 8 more bytes a key in every sort pass);
        ``at_start``: for an operation writing from its buffer's start (a temporary when
        ``idx`` does not start its buffer)."""
        size = idx.dtype.itemsize
        off = idx.offset // size
        if size == 8 and row_len < 2 ** 32 and n >= WIDEN_FROM:
            carried = _UINT32
        elif at_start and off:
            carried = _UNSIGNED[size]
        else:
            return idx.base_data, off, _UNSIGNED[size], None
        tmp = self.temp(what, carried, (n,))
        return tmp.base_data, 0, carried, tmp

    def positions_home(self, at, idx, n):
        """After the call's last command, move positions written at ``at`` (from
        :meth:`positions`) into ``idx``: widened, or copied, when they went to a temporary."""
        tmp = at[3]
        if tmp is None:
            return
        dst_off = idx.offset // idx.dtype.itemsize
        if tmp.dtype.itemsize < idx.dtype.itemsize:
            self.then(families_for(self.context).widen(self.queue, tmp.base_data, idx.base_data,
                                                      dst_off, n, self.wait))
        else:
            self.then(cl.enqueue_copy(self.queue, idx.base_data, tmp.base_data,
                                      byte_count=n * tmp.dtype.itemsize, dst_offset=idx.offset,
                                      wait_for=self.wait))


__all__ = ["Call", "Layout", "Allocator", "Events", "AxisError", "WIDEN_FROM", "check_bool",
           "normalize_axis", "row_length", "index_dtype_of", "index_dtype_for", "device_queue",
           "check_out", "host_input", "to_device", "check_host_out", "host_result"]
