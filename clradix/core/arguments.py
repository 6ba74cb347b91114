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
        check_aligned(obj, what)
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


def wait_list(wait_for):
    """A call's ``wait_for`` (None, or a sequence of events and Nones) as a new list of its
    events."""
    if wait_for is None:
        return []
    return [e for e in wait_for if e is not None]


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
    if len(events) == 1 and events[0] is evt:
        return   # views of one array share their events: another view was given evt
    gone = {e.int_ptr for e in replaced}
    gone.add(evt.int_ptr)   # (once, however many views of the array the call took)
    array.events[:] = [e for e in events if e.int_ptr not in gone] + [evt]


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


_SEPARATE = "pass arrays or buffers that share no byte"


def check_disjoint(a, b, what, other, remedy=_SEPARATE):
    """ValueError when ``b`` (named ``what``) shares memory with ``a`` (``other``), each an
    Operand or a pyopencl Array: a kernel reading one while writing the other would scramble
    both. ``remedy``: the message's advice."""
    if overlaps(a, b):
        (_, sa, end_a), (_, sb, end_b) = extent(a), extent(b)
        raise ValueError(f"{what} overlaps {other} (bytes [{sb}, {end_b}) and [{sa}, {end_a}) of "
                         f"one buffer): {remedy}")


def check_outputs(outputs, inputs=(), in_place=None, remedy=_SEPARATE):
    """The overlap rule of every call, checked before anything is enqueued: ValueError when an
    output shares a byte with an input or with another output (:func:`check_disjoint`: views,
    strides and sub-buffers included). A kernel writing an output while another reads an input
    of the same bytes gives wrong results (and may change the input), whatever the order of
    the work-items.

    ``outputs`` and ``inputs``: (name, Operand or pyopencl Array or None) pairs, the None ones
    left out. ``in_place``: the one array (the same object among the outputs and the inputs)
    that a call writing its result over its input may take, as ``clradix.sort(a, out=a)``;
    only an operation that really runs in place passes it. ``remedy``: the message's advice."""
    outs = [(what, x) for what, x in outputs if x is not None]
    ins = [(what, x) for what, x in inputs if x is not None]
    for i, (what, out) in enumerate(outs):
        for other, x in ins + outs[:i]:
            if in_place is not None and out is in_place and x is in_place:
                continue
            check_disjoint(x, out, what, other, remedy)


def check_aligned(arr, what, remedy=None):
    """ValueError unless the pyopencl Array ``arr``'s byte offset and strides are multiples of
    its itemsize. Kernels address an array by whole elements from its buffer's start (element
    offset = byte offset // itemsize), so a view that starts between two elements (an Array
    made with ``offset=`` over another type's data) would be read or written at the wrong
    bytes. ``remedy``: what to pass instead (default: an aligned copy of an input)."""
    size = arr.dtype.itemsize
    misaligned = arr.offset % size
    for s in arr.strides:   # (a loop: no generator made for the one or two strides)
        misaligned = misaligned or int(s) % size
    if misaligned:
        raise ValueError(f"{what}: a view at byte offset {arr.offset} with strides "
                         f"{tuple(int(s) for s in arr.strides)}, not multiples of its itemsize "
                         f"{size}, where kernels address whole elements: "
                         + (remedy or f"pass an aligned copy ({what}.copy() of a contiguous "
                                      f"view makes one)"))


def refuse_pending_user_events(wait, why):
    """ValueError when ``wait`` holds a user event not yet complete, for a call that reads a
    result back on the host (``why`` says which and how to avoid it) and so waits for every
    event in ``wait``: a caller that completes the event after the call returns would wait for
    ever. (A user event gating earlier commands of an in-order queue, not among the call's
    events, cannot be seen here.)"""
    for evt in wait:
        if isinstance(evt, cl.UserEvent) and \
                evt.command_execution_status > cl.command_execution_status.COMPLETE:
            raise ValueError(f"one of the events the call waits for (wait_for, or the events "
                             f"of its input arrays) is a user event not yet complete, and "
                             f"{why}")


def host_array(x, what):
    """``x`` (anything numpy takes) as a numpy array, refusing the ndarray subclasses whose
    meaning a plain array of their values would lose (TypeError naming the remedy): a masked
    array's mask (its masked entries would be sorted, searched or counted as values), a
    matrix's two axes (``np.sort(m, axis=None)`` is a 1 x n matrix in numpy) and any other
    subclass's own attributes (a unit, a grid). ``np.memmap`` is a plain array of the values in
    a file, and taken."""
    if isinstance(x, np.ndarray) and type(x) is not np.ndarray and not isinstance(x, np.memmap):
        if isinstance(x, np.ma.MaskedArray):
            raise TypeError(f"{what}: a numpy masked array, whose mask clradix would lose "
                            f"(the values under the mask would count as data): pass "
                            f"{what}.filled(value) to give masked entries a value, "
                            f"{what}.compressed() for the unmasked entries alone (1-D), or "
                            f"np.asarray({what}) to drop the mask")
        kind = "a numpy matrix" if isinstance(x, np.matrix) else \
            f"an ndarray subclass ({type(x).__module__}.{type(x).__qualname__})"
        raise TypeError(f"{what}: {kind}, which clradix would take as a plain array of its "
                        f"values and return plain arrays: pass np.asarray({what}) if that is "
                        f"what you mean")
    return np.asarray(x)
