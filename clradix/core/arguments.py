"""Argument checks: turning what a caller passes (a Buffer or a pyopencl Array) into a checked view.

Every check here runs before anything is enqueued, so a refused call changes no byte.
"""

from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array


@dataclass
class Operand:
    """A contiguous run of ``n`` elements of ``dtype`` at element ``offset`` of ``buffer``."""

    buffer: object
    offset: int
    n: int
    dtype: np.dtype
    array: object = None  # the pyopencl Array it came from, if any
    events: list = field(default_factory=list)

    def at(self):
        """(buffer, element offset): how the kernels address it."""
        return self.buffer, self.offset


def buffer_size(buf, what):
    """The size in bytes of ``buf``; ValueError naming ``what`` when it is not usable."""
    try:
        return int(buf.size)
    except cl.Error as exc:
        raise ValueError(f"{what} buffer is not usable (released?): {exc}") from None


def check_context(ctx, obj_ctx, what):
    """ValueError unless ``obj_ctx`` (the context of ``what``; None: not known) is ``ctx``."""
    if obj_ctx is not None and obj_ctx != ctx:
        theirs, ours = _devices(obj_ctx), _devices(ctx)
        where = (f"two contexts of the same device ({ours})" if theirs == ours else
                 f"a context of {theirs}, used with one of {ours}")
        raise ValueError(f"{what} belongs to another OpenCL context than the one it is used "
                         f"with: {where}. Make arrays, buffers and queues of one "
                         f"pyopencl.Context (or copy the data to it)")


def _devices(ctx):
    return ", ".join(d.name.strip() for d in ctx.devices)


def check_queue(ctx, queue):
    """TypeError unless ``queue`` is a CommandQueue, ValueError unless it is one of ``ctx``."""
    if not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue: expected a pyopencl.CommandQueue, got {type(queue).__name__}")
    check_context(ctx, queue.context, "queue")


def in_order(queue):
    """Whether ``queue`` runs its commands in order (no out-of-order execution mode)."""
    return not (queue.properties
                & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)


def operand(obj, ctx, what, dtype=None, n=None, default_dtype=None):
    """Check ``obj`` (Buffer or Array) and describe ``n`` elements of it.

    For an Array, dtype and n come from the array (a conflicting ``dtype`` is a TypeError, a
    larger ``n`` a ValueError). For a Buffer, ``dtype`` (or ``default_dtype``) gives the element
    type and ``n`` defaults to ``buf.size // itemsize``.
    """
    if isinstance(obj, cl_array.Array):
        if dtype is not None and np.dtype(dtype) != obj.dtype:
            raise TypeError(f"{what}: dtype={np.dtype(dtype)} given, but the array holds {obj.dtype}")
        if obj.ndim != 1:
            raise ValueError(f"{what}: expected a 1-D array, got shape {obj.shape}")
        if not (obj.flags.c_contiguous or obj.size <= 1):
            raise ValueError(f"{what}: array is not contiguous (strides {obj.strides} for itemsize "
                             f"{obj.dtype.itemsize}): pass a contiguous copy (view.copy()), or "
                             f"use clradix.sort / argsort / topk, which gather strided views on "
                             f"the device")
        check_context(ctx, obj.context, what)
        size = int(obj.size)
        if n is None:
            n = size
        elif n > size:
            raise ValueError(f"{what}: n={n} exceeds the array's {size} elements by {n - size}")
        base = obj.base_data
        if base is not None:
            buffer_size(base, what)
        if obj.offset % obj.dtype.itemsize:
            raise ValueError(f"{what}: array offset {obj.offset} bytes is not a multiple of the "
                             f"itemsize {obj.dtype.itemsize}")
        return Operand(base, obj.offset // obj.dtype.itemsize, int(n), obj.dtype, obj,
                       list(obj.events))
    if isinstance(obj, cl.MemoryObjectHolder):
        d = np.dtype(dtype if dtype is not None else default_dtype)
        nbytes = buffer_size(obj, what)
        check_context(ctx, obj.context, what)
        cap = nbytes // d.itemsize
        if n is None:
            n = cap
        elif n * d.itemsize > nbytes:
            raise ValueError(f"{what}: buffer of {nbytes} bytes is too small for n={n} {d} "
                             f"({n * d.itemsize} bytes), short by {n * d.itemsize - nbytes} bytes")
        return Operand(obj, 0, int(n), d)
    raise TypeError(f"{what}: expected a pyopencl Buffer or pyopencl.array.Array, "
                    f"got {type(obj).__name__}")


def check_n(n, what="n"):
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"{what} must be an integer, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"{what} must be non-negative, got {n}")
    return int(n)


def attach_event(array, evt, replaced=()):
    """Make ``evt`` the event that later users of the pyopencl ``array`` wait for.

    ``evt`` waits for ``replaced`` (the array's events when the call started, passed to the call's
    first command), so those are dropped from ``array.events`` and ``evt`` takes their place.
    pyopencl's ``Array.add_event`` is not used: once an array holds more than 12 events it waits
    for some of them on the host, which can block a call (for ever, behind a user event).
    """
    if array is None:
        return
    events = array.events
    if len(events) == len(replaced) <= 1 and (not events or events[0] is replaced[0]):
        events[:] = [evt]   # the common case: the array's one event (or none) is replaced
        return
    gone = {e.int_ptr for e in replaced}
    array.events[:] = [e for e in array.events if e.int_ptr not in gone] + [evt]


def extent(x):
    """(memory object, first byte, end byte) of the bytes ``x`` may touch, or None when it
    touches none: an :class:`Operand`'s ``n`` elements, or every element of a pyopencl Array,
    a strided view included (negative strides too). A sub-buffer resolves to its parent, so that
    views of one allocation through different sub-buffers compare."""
    if isinstance(x, cl_array.Array):
        if x.size == 0 or x.base_data is None:
            return None
        buf, start, last = x.base_data, x.offset, x.offset
        for count, stride in zip(x.shape, x.strides):
            span = (count - 1) * stride
            start, last = (start + span, last) if span < 0 else (start, last + span)
        end = last + x.dtype.itemsize
    else:
        if not x.n:
            return None
        buf, start = x.buffer, x.offset * x.dtype.itemsize
        end = start + x.n * x.dtype.itemsize
    try:
        parent = buf.get_info(cl.mem_info.ASSOCIATED_MEMOBJECT)
    except (cl.Error, AttributeError):
        parent = None
    if parent is not None:
        shift = int(buf.get_info(cl.mem_info.OFFSET))
        buf, start, end = parent, start + shift, end + shift
    return buf.int_ptr, start, end


def overlaps(a, b):
    """Whether ``a`` and ``b`` (Operands or pyopencl Arrays, see :func:`extent`) share a byte."""
    ea, eb = extent(a), extent(b)
    return (ea is not None and eb is not None and ea[0] == eb[0]
            and ea[1] < eb[2] and eb[1] < ea[2])


def check_disjoint(a, b, what, other):
    """ValueError when ``b`` (named ``what``) shares memory with ``a`` (``other``), each an
    Operand or a pyopencl Array: a kernel reading one while writing the other would scramble
    both."""
    ea, eb = extent(a), extent(b)
    if ea is None or eb is None:
        return
    (ma, sa, end_a), (mb, sb, end_b) = ea, eb
    if ma == mb and sa < end_b and sb < end_a:
        raise ValueError(f"{what} overlaps {other} (bytes [{sb}, {end_b}) and [{sa}, {end_a}) of "
                         f"one buffer): pass a separate buffer")


def check_all_disjoint(named):
    """ValueError when any two of ``named`` ((name, Operand, pyopencl Array or None) pairs, the
    None ones left out) share memory (see :func:`check_disjoint`)."""
    named = [(what, x) for what, x in named if x is not None]
    for i, (other, a) in enumerate(named):
        for what, b in named[i + 1:]:
            check_disjoint(a, b, what, other)
