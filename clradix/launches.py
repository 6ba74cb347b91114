"""Ready launch sequences: the commands of one call configuration, built once, replayed per call.

A sort driver turns a call configuration (n, bit range, direction, in place or argsort) into a
:class:`LaunchSequence` once: every kernel launch with its global and local sizes and its
constant arguments already packed, every fill and copy, and the sizes of the temporaries. A call
then only allocates the temporaries (from the queue's memory pool), sets the arguments that name
its buffers and offsets, and enqueues: no planning, rendering, argument typing or numpy scalars.

Operands are slots: the caller's four buffers (``KEYS_IN``, ``KEYS_OUT``, ``VALS_IN``,
``VALS_OUT``) and then the temporaries; in a launch's argument list ``Buf(slot)`` stands for the
slot's buffer and ``Off(slot)`` for its element offset (a temporary's offset is the constant 0).

Kernel arguments persist in an OpenCL kernel object, so each launch position of a driver (the
k-th launch of a kernel in its sequences) has a kernel object of its own, shared by the driver's
sequences: a launch sets its constants again only when another sequence used that object since
(one identity test per launch otherwise), and an offset only when it changed. Setting arguments
and enqueueing must therefore not happen in two threads at once for one driver: the Sorter's
lock guarantees it.
"""

import struct

import numpy as np
import pyopencl as cl

KEYS_IN, KEYS_OUT, VALS_IN, VALS_OUT = range(4)
CALLER_SLOTS = 4

# pyopencl's generated kernel invokers set packed scalars with this method (no numpy scalar, no
# argument-type lookup); Kernel.set_arg is the portable fallback (about 10 us per scalar on PoCL).
_SET_PACKED = getattr(cl.Kernel, "_set_arg_buf_multi", None)


class Buf(int):
    """A kernel argument: the buffer of operand slot ``int(self)``."""


class Off(int):
    """A kernel argument (ulong): the element offset of operand slot ``int(self)``."""


def _set_packed(kernel, index, packed, dtype):
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
    __slots__ = ("name", "slot", "gsize", "lsize", "consts", "bufs", "offs")

    def __init__(self, name, slot, gsize, lsize, consts, bufs, offs):
        self.name, self.slot, self.gsize, self.lsize = name, slot, gsize, lsize
        self.consts, self.bufs, self.offs = consts, bufs, offs

    def enqueue(self, queue, objs, offsets, wait):
        slot = self.slot
        knl = slot.kernel
        if slot.bound is not self:
            for i, packed, dtype in self.consts:
                _set_packed(knl, i, packed, dtype)
            slot.bound = self
            slot.offsets = {}
        for i, s in self.bufs:
            knl.set_arg(i, objs[s])
        if self.offs:
            held = slot.offsets
            for i, s in self.offs:
                v = offsets[s]
                if held.get(i) != v:
                    _set_packed(knl, i, _ULONG.pack(v), np.uint64)
                    held[i] = v
        return cl.enqueue_nd_range_kernel(queue, knl, self.gsize, self.lsize, wait_for=wait)


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


class LaunchSequence:
    """The commands of one call configuration of a driver (built by the driver's ``sequence``
    method through :meth:`launch`, :meth:`fill`, :meth:`copy` and :meth:`temp`)."""

    def __init__(self, driver):
        self.driver = driver
        self.steps = []
        self.temp_sizes = []
        self._positions = {}

    def temp(self, nbytes):
        """A temporary of ``nbytes`` bytes for each call: its slot, as ``(Buf(slot), 0)``."""
        self.temp_sizes.append(max(int(nbytes), 1))
        return Buf(CALLER_SLOTS + len(self.temp_sizes) - 1), 0

    def launch(self, name, kernel_name, gsize, lsize, args):
        """A launch of the driver's kernel ``kernel_name``; ``args`` in the kernel's order: Buf and
        Off markers, or constants (typed by the driver's ``arg_types[kernel_name]``)."""
        pos = self._positions.get(kernel_name, 0)
        self._positions[kernel_name] = pos + 1
        types = self.driver.arg_types[kernel_name]
        if len(types) != len(args):
            raise TypeError(f"{kernel_name}: {len(args)} arguments for {len(types)} parameters")
        consts, bufs, offs = [], [], []
        for i, (t, a) in enumerate(zip(types, args)):
            if isinstance(a, Buf):
                bufs.append((i, int(a)))
            elif isinstance(a, Off):
                offs.append((i, int(a)))
            elif t is None:
                raise TypeError(f"{kernel_name}: argument {i} is a buffer, got {a!r}")
            else:
                d = np.dtype(t)
                consts.append((i, np.asarray(a, d).tobytes(), d))
        self.steps.append(_Launch(name, self.driver.kernel_slot(kernel_name, pos),
                                  tuple(int(g) for g in gsize), tuple(int(x) for x in lsize),
                                  tuple(consts), tuple(bufs), tuple(offs)))

    def fill(self, name, target, pattern, nbytes):
        """Fill the first ``nbytes`` bytes of temporary ``target`` (a ``temp()`` result)."""
        self.steps.append(_Fill(name, int(target[0]), pattern, int(nbytes)))

    def copy(self, name, src, dst, nbytes, itemsize):
        """Copy ``nbytes`` from ``src`` to ``dst`` ((Buf, offset) pairs; offsets in items)."""
        self.steps.append(_Copy(name, (int(src[0]), src[1]), (int(dst[0]), dst[1]), int(nbytes),
                                itemsize))

    def names(self):
        """The commands' names, in order (what a driver's trace records)."""
        return [s.name for s in self.steps]

    def run(self, queue, buffers, offsets, alloc, wait, trace=None, in_order=False):
        """Enqueue the sequence after the events ``wait`` (a list, may be empty): ``buffers`` and
        ``offsets`` are the caller's four slots (None where unused), temporaries come from
        ``alloc(nbytes)``. Returns the last command's event; ``trace`` (a list or None) gets
        (name, event) of each command.

        On an out-of-order queue each command waits for the event of the one before. On an
        ``in_order`` queue only the first command waits (for ``wait``): the queue already runs the
        commands one after the other with the memory of each visible to the next, and an event
        wait list is not free there (NVIDIA's runtime spends host time on each).
        """
        objs = list(buffers)
        if self.temp_sizes:
            objs.extend([alloc(nb) for nb in self.temp_sizes])
        evt = None
        wait = wait or None
        for step in self.steps:
            evt = step.enqueue(queue, objs, offsets, wait)
            if trace is not None:
                trace.append((step.name, evt))
            wait = None if in_order else [evt]
        return evt
