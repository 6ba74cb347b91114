"""Ready launch sequences: the commands of one call configuration, built once, replayed per call;
the one path by which every driver enqueues its kernels.

A driver turns a call configuration (n, bit range, direction, in place or argsort) into a
:class:`LaunchSequence` once: every kernel launch with its global and local sizes and its
constant arguments already packed and checked against the kernel's declaration (its parameters
as the rendered source declares them: clradix.core.declarations), every fill and copy, and the
sizes of the temporaries. A call then only allocates the temporaries (from the queue's memory
pool), sets the arguments that name its buffers and offsets, and enqueues: no planning,
rendering, argument typing or numpy scalars.

Operands are slots: each operation names its operands in a small NamedTuple of its own (the
sorts' :class:`SortOperands`, top-k's and the selection's beside their drivers), whose fields a
call fills with (buffer, element offset) pairs, None where it has no such operand; a field's
position is its slot (``slots(Operands)``), and the sequence's temporaries follow. In a launch's
argument list ``Buf(slot)`` stands for the slot's buffer and ``Off(slot)`` for its element
offset (a temporary's offset is the constant 0). A few integers are known only when a call runs
(the number of runs that a count, read back, found): ``Scalar(k)`` stands for the call's k-th
scalar, its parameter's type checked when the sequence is made and its value's range at each
call.

Kernel arguments persist in an OpenCL kernel object, so each launch position of a driver (the
k-th launch of a kernel in its sequences) has a kernel object of its own, shared by the driver's
sequences: a launch sets its constants again only when another sequence used that object since
(one identity test per launch otherwise), and an offset only when it changed. Setting arguments
and enqueueing must therefore not happen in two threads at once for one driver: the planner's
lock guarantees it.
"""

import struct
from typing import Any, NamedTuple

import numpy as np
import pyopencl as cl


class SortOperands(NamedTuple):
    """A sort's operands, each a (buffer, element offset) pair or None: the keys it reads and
    where it writes them (one buffer in place), the values likewise (argsort: the indices in
    ``vals_out``), and a segmented sort's offsets."""

    keys_in: Any
    keys_out: Any
    vals_in: Any = None
    vals_out: Any = None
    segments: Any = None


def slots(operands_type):
    """The slot of each field of an operation's operands type, in field order."""
    return tuple(range(len(operands_type._fields)))


KEYS_IN, KEYS_OUT, VALS_IN, VALS_OUT, SEGMENTS = slots(SortOperands)

# pyopencl's generated kernel invokers set packed scalars with this method (no numpy scalar, no
# argument-type lookup); Kernel.set_arg is the portable fallback (about 10 us per scalar on PoCL).
_SET_PACKED = getattr(cl.Kernel, "_set_arg_buf_multi", None)


class Buf(int):
    """A kernel argument: the buffer of operand slot ``int(self)``."""


class Off(int):
    """A kernel argument (ulong): the element offset of operand slot ``int(self)``."""


class Scalar(int):
    """A kernel argument (an integer parameter): the call's scalar ``int(self)`` (``scalars`` of
    :meth:`LaunchSequence.run`)."""


def set_packed(kernel, index, packed, dtype):
    """Set kernel argument ``index`` to the packed bytes of a scalar of ``dtype``."""
    if _SET_PACKED is not None:
        _SET_PACKED(kernel, (index, packed))
    else:  # pragma: no cover - pyopencl without the packed-argument method
        kernel.set_arg(index, np.frombuffer(packed, dtype)[0])


class KernelSlot:
    """One kernel object of a driver and what its arguments hold now: the launch whose constants
    were set last, and the offsets set since."""

    __slots__ = ("kernel", "bound", "offsets")

    def __init__(self, kernel):
        self.kernel = kernel
        self.bound = None
        self.offsets = {}


class _Launch:
    __slots__ = ("name", "slot", "gsize", "lsize", "consts", "bufs", "offs", "scalars")

    def __init__(self, name, slot, gsize, lsize, consts, bufs, offs, scalars=()):
        self.name, self.slot, self.gsize, self.lsize = name, slot, gsize, lsize
        self.consts, self.bufs, self.offs, self.scalars = consts, bufs, offs, scalars

    def enqueue(self, queue, objs, offsets, wait, scalars=()):
        slot = self.slot
        knl = slot.kernel
        if slot.bound is not self:
            for i, packed, dtype in self.consts:
                set_packed(knl, i, packed, dtype)
            slot.bound = self
            slot.offsets = {}
        for i, s in self.bufs:
            knl.set_arg(i, objs[s])
        if self.offs:
            held = slot.offsets
            for i, s in self.offs:
                v = offsets[s]
                if held.get(i) != v:
                    set_packed(knl, i, _ULONG.pack(v), np.uint64)
                    held[i] = v
        for i, k, param, kernel_name in self.scalars:
            set_packed(knl, i, _packed_int(kernel_name, param, scalars[k], i), param.dtype)
        return cl.enqueue_nd_range_kernel(queue, knl, self.gsize, self.lsize, wait_for=wait)


def _where(kernel_name, param, index):
    return f"kernel {kernel_name}: parameter {index} ({param.cl_type} {param.name})"


def _packed_int(kernel_name, param, arg, index):
    """The bytes of integer ``arg`` as the integer parameter ``param`` takes it; TypeError naming
    the kernel and the parameter when it is not an integer of the parameter's range."""
    if not isinstance(arg, (int, np.integer)):
        raise TypeError(f"{_where(kernel_name, param, index)} takes an integer, got {arg!r} "
                        f"({type(arg).__name__})")
    d = param.dtype
    info = np.iinfo(d)
    if not info.min <= int(arg) <= info.max:
        raise TypeError(f"{_where(kernel_name, param, index)} takes values from {info.min} to "
                        f"{info.max}, got {arg!r}")
    return np.asarray(int(arg), d).tobytes()


def _checked_arg(kernel_name, param, arg, index):
    """``arg`` of the kernel parameter ``param`` as a launch holds it: ("buf", slot), ("off",
    slot), ("scalar", the call's scalar) or ("const", packed bytes); TypeError naming the
    kernel, the parameter and what was given when it is not one the parameter takes."""
    where = _where(kernel_name, param, index)
    if param.dtype is None:
        if isinstance(arg, Buf):
            return "buf", int(arg)
        raise TypeError(f"{where} takes a buffer, got {arg!r} ({type(arg).__name__})")
    if isinstance(arg, Buf):
        raise TypeError(f"{where} takes a {param.cl_type} scalar, got the buffer of slot "
                        f"{int(arg)}")
    if isinstance(arg, Off):
        if param.dtype != np.uint64:
            raise TypeError(f"{where} takes a {param.cl_type}, got the element offset of slot "
                            f"{int(arg)} (a ulong)")
        return "off", int(arg)
    d = param.dtype
    if isinstance(arg, Scalar):
        if d.kind not in "iu":
            raise TypeError(f"{where} takes a {param.cl_type}, got the call's integer "
                            f"{int(arg)}")
        return "scalar", int(arg)
    if d.kind in "iu":
        return "const", _packed_int(kernel_name, param, arg, index)
    if not isinstance(arg, (int, float, np.integer, np.floating)) or isinstance(arg, bool):
        raise TypeError(f"{where} takes a number, got {arg!r} ({type(arg).__name__})")
    return "const", np.asarray(arg, d).tobytes()


_ULONG = struct.Struct("<Q")


class _Fill:
    __slots__ = ("name", "slot", "pattern", "nbytes")

    def __init__(self, name, slot, pattern, nbytes):
        self.name, self.slot, self.pattern, self.nbytes = name, slot, pattern, nbytes

    def enqueue(self, queue, objs, offsets, wait):
        return cl.enqueue_fill_buffer(queue, objs[self.slot], self.pattern, 0, self.nbytes,
                                      wait_for=wait)


class _Copy:
    __slots__ = ("name", "src", "dst", "nbytes", "itemsize")

    def __init__(self, name, src, dst, nbytes, itemsize):
        self.name, self.src, self.dst, self.nbytes, self.itemsize = name, src, dst, nbytes, itemsize

    def enqueue(self, queue, objs, offsets, wait):
        (sb, so), (db, do) = self.src, self.dst
        w = self.itemsize
        return cl.enqueue_copy(queue, objs[db], objs[sb], byte_count=self.nbytes,
                               src_offset=_offset(offsets, so) * w,
                               dst_offset=_offset(offsets, do) * w, wait_for=wait)


def _offset(offsets, off):
    return offsets[off] if isinstance(off, Off) else off


class _ReadCheck:
    """Read a count from a temporary (blocking) and raise ValueError when it is not zero: a
    verdict a kernel wrote, read back before the commands after it are enqueued."""

    __slots__ = ("name", "slot", "dtype", "message")

    def __init__(self, name, slot, dtype, message):
        self.name, self.slot, self.dtype, self.message = name, slot, dtype, message

    def enqueue(self, queue, objs, offsets, wait):
        bad = np.zeros(1, self.dtype)
        evt = cl.enqueue_copy(queue, bad, objs[self.slot], wait_for=wait)
        if bad[0]:
            raise ValueError(self.message)
        return evt


class _Call:
    """Commands another object enqueues (the radix sorts of top-k's global route): ``fn(queue,
    objs, offsets, alloc, wait)`` returns the event of its last command."""

    __slots__ = ("name", "fn")

    def __init__(self, name, fn):
        self.name, self.fn = name, fn


class LaunchSequence:
    """The commands of one call configuration of a driver (built by the driver's ``sequence``
    method through :meth:`launch`, :meth:`fill`, :meth:`copy`, :meth:`read_check`, :meth:`call`
    and :meth:`temp`). ``driver`` provides ``declaration(kernel name)`` (its parameters) and
    ``kernel_slot(kernel name, position)``."""

    def __init__(self, driver):
        self.driver = driver
        #: the operation's operands type (``driver.Operands``): its fields are the first slots
        self.operands = driver.Operands
        self._caller_slots = len(self.operands._fields)
        self.steps = []
        self.temp_sizes = []
        #: how many scalars a call passes (``Scalar`` arguments: 0 to scalar_count - 1)
        self.scalar_count = 0
        self._positions = {}
        #: (index in temp_sizes, fill name) of the state block (:meth:`state`), or None
        self.state_temp = None

    def temp(self, nbytes):
        """A temporary of ``nbytes`` bytes for each call: its slot, as ``(Buf(slot), 0)``."""
        self.temp_sizes.append(max(int(nbytes), 1))
        return Buf(self._caller_slots + len(self.temp_sizes) - 1), 0

    def launch(self, name, kernel_name, gsize, lsize, args):
        """A launch of the driver's kernel ``kernel_name``; ``args`` in the kernel's order: Buf,
        Off and Scalar markers, or constants. Each is checked against the kernel's declaration
        here, when the sequence is made (TypeError naming the kernel, the parameter and what was
        given); a call only replays what passed."""
        params = self.driver.declaration(kernel_name)
        if len(params) != len(args):
            raise TypeError(f"kernel {kernel_name}: expected {len(params)} arguments "
                            f"({', '.join(p.name for p in params)}), got {len(args)}")
        consts, bufs, offs, scalars = [], [], [], []
        for i, (param, a) in enumerate(zip(params, args)):
            kind, value = _checked_arg(kernel_name, param, a, i)
            if kind == "buf":
                bufs.append((i, value))
            elif kind == "off":
                offs.append((i, value))
            elif kind == "scalar":
                scalars.append((i, value, param, kernel_name))
                self.scalar_count = max(self.scalar_count, value + 1)
            else:
                consts.append((i, value, param.dtype))
        pos = self._positions.get(kernel_name, 0)
        self._positions[kernel_name] = pos + 1
        self.steps.append(_Launch(name, self.driver.kernel_slot(kernel_name, pos),
                                  tuple(int(g) for g in gsize),
                                  None if lsize is None else tuple(int(x) for x in lsize),
                                  tuple(consts), tuple(bufs), tuple(offs), tuple(scalars)))

    def state(self, name, nbytes):
        """A block of ``nbytes`` zero bytes when the launches that use it start, which they
        leave zero when they end (os_fused's counters): on an in-order queue the block that
        ``states`` (of :meth:`run`) keeps for the queue, filled only when it is made; else a
        temporary filled (the fill named ``name``) before the first command. Its slot, as
        ``(Buf(slot), 0)``; one a sequence."""
        if self.state_temp is not None:
            raise AssertionError("one state block a sequence")
        at = self.temp(nbytes)
        self.state_temp = (int(at[0]) - self._caller_slots, name)
        return at

    def fill(self, name, target, pattern, nbytes):
        """Fill the first ``nbytes`` bytes of temporary ``target`` (a ``temp()`` result)."""
        self.steps.append(_Fill(name, int(target[0]), pattern, int(nbytes)))

    def copy(self, name, src, dst, nbytes, itemsize):
        """Copy ``nbytes`` from ``src`` to ``dst`` ((Buf, offset) pairs; offsets in items)."""
        self.steps.append(_Copy(name, (int(src[0]), src[1]), (int(dst[0]), dst[1]), int(nbytes),
                                itemsize))

    def read_check(self, name, target, dtype, message):
        """Read one ``dtype`` count from temporary ``target`` and raise ValueError(``message``)
        when it is not zero (the commands after it are not enqueued)."""
        self.steps.append(_ReadCheck(name, int(target[0]), np.dtype(dtype), message))

    def call(self, name, fn):
        """Commands another object enqueues: ``fn(queue, objs, offsets, alloc, wait)`` returns
        its last event."""
        self.steps.append(_Call(name, fn))

    def names(self):
        """The commands' names, in order (what a driver's trace records, but for the fill of a
        state block, which a call enqueues first when it makes the block: a temporary's, or a
        queue's new one)."""
        return [s.name for s in self.steps]

    def run(self, queue, operands, alloc, wait, trace=None, in_order=False, scalars=(),
            states=None):
        """Enqueue the sequence after the events ``wait`` (a list, may be empty): ``operands`` is
        the call's operands (the driver's ``Operands``: (buffer, element offset) pairs, None where
        unused), temporaries come from ``alloc(nbytes)``, ``scalars`` are the integers of its
        Scalar arguments. Returns the last command's event; ``trace`` (a list or None) gets
        (name, event) of each command.

        On an out-of-order queue each command waits for the event of the one before. On an
        ``in_order`` queue only the first command waits (for ``wait``): the queue already runs the
        commands one after the other with the memory of each visible to the next, and an event
        wait list is not free there (NVIDIA's runtime spends host time on each).

        ``states(nbytes)`` (on an in-order queue; None: none kept) gives the queue's kept state
        block of at least ``nbytes`` and the event of its fill when it was just made (the fill
        enqueued where it was made, else None); without it the state block is a temporary,
        filled first.
        """
        if operands.__class__ is not self.operands:
            raise TypeError(f"expected {self.operands.__name__}, got "
                            f"{operands.__class__.__name__}")
        if len(scalars) != self.scalar_count:
            raise TypeError(f"expected {self.scalar_count} scalars, got {len(scalars)}")
        objs = [None if o is None else o[0] for o in operands]
        offsets = [0 if o is None else o[1] for o in operands]
        evt = None
        wait = wait or None
        if self.temp_sizes:
            temps = self.temp_sizes
            kept = self.state_temp
            if kept is None:
                objs.extend([alloc(nb) for nb in temps])
            else:
                at, name = kept
                block, filled = (states(temps[at]) if states is not None and in_order
                                 else (None, None))
                objs.extend([block if i == at and block is not None else alloc(nb)
                             for i, nb in enumerate(temps)])
                if block is None:
                    evt = filled = cl.enqueue_fill_buffer(queue, objs[self._caller_slots + at],
                                                          np.uint32(0), 0, temps[at],
                                                          wait_for=wait)
                    wait = None if in_order else [evt]
                if filled is not None and trace is not None:
                    trace.append((name, filled))
        for step in self.steps:
            if step.__class__ is _Call:
                evt = step.fn(queue, objs, offsets, alloc, wait)
            elif scalars and step.__class__ is _Launch:
                evt = step.enqueue(queue, objs, offsets, wait, scalars)
            else:
                evt = step.enqueue(queue, objs, offsets, wait)
            if trace is not None:
                trace.append((step.name, evt))
            wait = None if in_order else [evt]
        return evt
