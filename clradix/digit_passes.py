"""What the sort drivers share: the SortJob they enqueue, building their program and checking its
kernels, and the ping-pong streams of the multi-pass algorithms (the contract is driver.py's)."""

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
import pyopencl as cl

from .driver import Driver, check_wg_limits
from .launches import KEYS_IN, VALS_IN, VALS_OUT, Buf, KernelSlot, LaunchSequence, Off
from .sizes import index_bytes


@dataclass
class SortJob:
    """One sort as a driver sees it: ``n`` keys from ``keys_in`` to ``keys_out`` (None: the keys
    are only read, argsort) and, with values, from ``vals_in`` (None: the indices 0..n-1, argsort)
    to ``vals_out``; each a (buffer, element offset). Sorting by bits [begin_bit, end_bit) of the
    order key, descending or not."""

    n: int
    begin_bit: int
    end_bit: int
    descending: bool
    key_bytes: int
    keys_in: Tuple[object, int]
    keys_out: Optional[Tuple[object, int]]
    value_bytes: int = 0
    vals_in: Optional[Tuple[object, int]] = None
    vals_out: Optional[Tuple[object, int]] = None

    @property
    def iota(self):
        """Whether the values are made by the sort (argsort's indices)."""
        return self.vals_out is not None and self.vals_in is None


class DigitPasses(Driver):
    """Base of the sort drivers (reduce_then_scan.py, onesweep.py; contract in driver.py).
    ``temp_bytes(policy, profile, n, key_bytes, value_bytes, passes)`` is an in-place sort's
    temporary memory: a ping-pong buffer of the keys (and values) and the algorithm's own
    ``extra_bytes``. A call configuration becomes a ready :class:`~clradix.launches.LaunchSequence`
    once (``sequence``, remembered for the last READY_SEQUENCES configurations); multi-pass
    drivers describe their passes in ``sequence_passes``, the single work-group sort overrides
    ``sequence`` and ``temp_bytes``. ``arg_types`` types each kernel's arguments (None: a buffer).
    """

    template: Optional[str] = None   # the .cl.mako file
    kernel_names: Tuple[str, ...] = ()

    def __init__(self, programs, device, profile, policy, codec, value_t, index_name, index_np):
        self.device = device
        self.profile = profile
        self.policy = policy
        self.codec = codec
        self.value_t = value_t
        self.index_np = np.dtype(index_np).type
        self.index_bytes = np.dtype(index_np).itemsize
        params = dict(codec.template_args(), radix_bits=policy.radix_bits, wg=policy.wg_size,
                      ipt=policy.items_per_thread, value_t=value_t, index_t=index_name)
        params.update(self.template_params(policy))
        options = list(self.build_options())
        if getattr(policy, "max_registers", 0) and profile.is_nvidia:
            options.append(f"-cl-nv-maxrregcount={policy.max_registers}")
        # what the program was rendered and built from (benchmarks rebuild it to inspect it)
        self.render_params, self.build_opts = params, options
        self.program = programs.get(self.template, params, options)
        self.kernels = {name: cl.Kernel(self.program, name) for name in self.kernel_names}
        check_wg_limits(self.kernels, device, policy.wg_size, profile.describe())
        self.arg_types = {}
        self._slots = {}
        self._sequences = {}
        self.iota = None
        if value_t in ("uint", "ulong"):
            self.iota = cl.Kernel(self.program, "rts_iota")
            self.iota.set_scalar_arg_dtypes([None, np.uint64, self.index_np])

    def kernel_slot(self, name, position):
        """The kernel object of the ``position``-th launch of kernel ``name`` in a sequence (made
        on first use; the first position uses the driver's own kernel object)."""
        slot = self._slots.get((name, position))
        if slot is None:
            knl = self.kernels[name] if position == 0 else cl.Kernel(self.program, name)
            slot = self._slots[(name, position)] = KernelSlot(knl)
        return slot

    @classmethod
    def temp_bytes(cls, policy, profile, n, key_bytes, value_bytes, passes):
        return n * (key_bytes + value_bytes) + cls.extra_bytes(policy, profile, index_bytes(n), n,
                                                               passes)

    @classmethod
    def extra_bytes(cls, policy, profile, index_bytes, n, passes):
        """Temporary bytes beyond the ping-pong buffers."""
        return 0

    def template_params(self, policy):
        return {}

    def build_options(self):
        """Compiler options the algorithm's template needs on this device."""
        return []

    def pass_buffers(self, p, key_io, val_io, iota):
        """Kernel arguments naming pass ``p``'s inputs and outputs, and whether keys are written.

        Keys: (in, in offset, out, out offset); then, with values, (in, in offset, out, out
        offset, iota) where iota says the first pass makes the values (argsort's indices).
        """
        (kin, kin_off), kout = key_io[p]
        kout_buf, kout_off = kout if kout is not None else (kin, kin_off)
        args = [kin, kin_off, kout_buf, kout_off]
        if val_io is not None:
            vin, (vout, vout_off) = val_io[p]
            use_iota = iota and p == 0
            vin_buf, vin_off = (vout, vout_off) if use_iota else vin
            args += [vin_buf, vin_off, vout, vout_off, int(use_iota)]
        return args, int(kout is not None)

    def enqueue(self, queue, job, alloc, wait):
        """Enqueue ``job`` (a SortJob) by its configuration's ready launch sequence."""
        seq = self.sequence(job.n, job.begin_bit, job.end_bit, job.descending,
                            job.keys_out is None, job.vals_out is not None)
        kin, kout = job.keys_in, job.keys_out or (None, 0)
        vin, vout = job.vals_in or (None, 0), job.vals_out or (None, 0)
        return seq.run(queue, (kin[0], kout[0], vin[0], vout[0]),
                       (kin[1], kout[1], vin[1], vout[1]), alloc, wait, self.trace)

    def sequence(self, n, begin_bit, end_bit, descending, argsort, values):
        """The ready launch sequence of a call configuration: ``n`` keys sorted by bits
        [begin_bit, end_bit), in place (with values in place when ``values``) or, ``argsort``,
        from the keys (only read) to the indices (the VALS_OUT slot)."""
        key = (n, begin_bit, end_bit, descending, argsort, values)
        seq = self._sequences.get(key)
        if seq is None:
            seq = LaunchSequence(self)
            self.build_sequence(seq, n, begin_bit, end_bit, descending, argsort, values)
            self._sequences[key] = seq
            while len(self._sequences) > READY_SEQUENCES:
                self._sequences.pop(next(iter(self._sequences)))
        return seq

    def build_sequence(self, seq, n, begin_bit, end_bit, descending, argsort, values):
        """The digit passes between ping-pong buffers, and the copy home an in-place sort with an
        odd number of passes owes."""
        passes = digit_passes(self.policy.radix_bits, begin_bit, end_bit)
        kb = self.codec.itemsize
        vb = VALUE_BYTES[self.value_t] if self.value_t else 0
        keys = (Buf(KEYS_IN), Off(KEYS_IN))
        if argsort:
            key_io, key_copy = stream(keys, None, len(passes), seq.temp, n * kb)
            val_io, val_copy = stream(None, (Buf(VALS_OUT), Off(VALS_OUT)), len(passes),
                                      seq.temp, n * vb)
        else:
            key_io, key_copy = stream(keys, keys, len(passes), seq.temp, n * kb)
            val_io = val_copy = None
            if values:
                vals = (Buf(VALS_IN), Off(VALS_IN))
                val_io, val_copy = stream(vals, vals, len(passes), seq.temp, n * vb)
        self.sequence_passes(seq, n, passes, descending, key_io, val_io, argsort)
        for name, copy, width in (("copy keys", key_copy, kb), ("copy values", val_copy, vb)):
            if copy is not None:
                seq.copy(name, copy[0], copy[1], n * width, width)


# How many call configurations a driver keeps the ready launch sequence of.
READY_SEQUENCES = 64
VALUE_BYTES = {"uchar": 1, "ushort": 2, "uint": 4, "ulong": 8, "uint4": 16}


def digit_passes(radix_bits, begin_bit, end_bit):
    """(shift, bits) of each digit pass over bits [begin_bit, end_bit)."""
    return [(s, min(radix_bits, end_bit - s)) for s in range(begin_bit, end_bit, radix_bits)]


def stream(src, dst, npasses, temp, nbytes):
    """(input, output) of each pass for one stream (keys or values), and the copy still owed.

    ``src`` None means the first pass generates the data (argsort's indices); ``dst`` None means the
    last pass need not write (argsort's keys). In place (src == dst: the same slot and offset),
    passes alternate between a temporary (``temp(nbytes)``, a (buffer, offset) pair) and the
    buffer; an odd pass count leaves the result in the temporary, and the returned copy
    ``(from, to)`` moves it home.
    """
    if src is not None and dst is not None and src == dst:
        tmp = temp(nbytes)
        outs = [tmp if p % 2 == 0 else dst for p in range(npasses)]
        copy = (tmp, dst) if npasses % 2 else None
    else:
        temps = []
        outs = []
        for p in range(npasses):
            back = npasses - 1 - p  # passes after this one
            if dst is not None and back % 2 == 0:
                outs.append(dst)
                continue
            if dst is None and back == 0:
                outs.append(None)
                continue
            slot = (back - 1) % 2 if dst is None else 0
            while len(temps) <= slot:
                temps.append(temp(nbytes))
            outs.append(temps[slot])
        copy = None
    return list(zip([src] + outs[:-1], outs)), copy
