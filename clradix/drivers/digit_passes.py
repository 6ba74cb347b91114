"""What the sort drivers share: the SortJob they make ready, building their program from a sort
policy (and the debugging switches, SortDebug), the local memory of their kernels, and the
ping-pong streams of the multi-pass algorithms (the contract: base.py)."""

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..core.keys import VALUE_BYTES
from ..core.launches import KEYS_IN, KEYS_OUT, VALS_IN, VALS_OUT, Buf, LaunchSequence, Off
from ..core.sizes import index_bytes, round_up
from ..policies.sort import NO_DEBUG
from .base import Build, Driver


@dataclass(frozen=True)
class SortJob:
    """One sort configuration as a driver sees it: ``n`` keys sorted by bits [begin_bit, end_bit)
    of the order key, descending or not; in place (the keys in slot KEYS_IN, with ``values`` in
    VALS_IN) or, ``argsort``, from the keys (only read) to the indices (slot VALS_OUT).
    ``keys_out``: the sorted keys are written to slot KEYS_OUT and those in KEYS_IN only read
    (a sorted copy without a copy command; with ``argsort``, the keys and their indices)."""

    n: int
    begin_bit: int
    end_bit: int
    descending: bool
    argsort: bool
    values: bool
    keys_out: bool = False


class DigitPasses(Driver):
    """Base of the sort drivers (reduce_then_scan.py, onesweep.py, single_wg.py).
    ``temp_bytes(policy, profile, n, key_bytes, value_bytes, passes)`` is an in-place sort's
    temporary memory: a ping-pong buffer of the keys (and values) and the algorithm's own
    ``extra_bytes``. ``sequence(job)`` makes a SortJob ready: multi-pass drivers describe their
    passes in ``sequence_passes``, single work-group ones override ``build_sequence`` and
    ``temp_bytes``; a job with no pass to run (argsort of one key, or of no bit) is rts_iota.
    ``local_bytes(policy, key_bytes, index_bytes, value_bytes, debug)`` is the local memory of
    the largest kernel of the driver's program, computed beside the template parameters that
    size its local arrays: the sort planner fits a policy to the device by it.
    ``debug`` (SortDebug) holds the switches the driver's template renders beside the policy.
    """

    template: Optional[str] = None   # the .cl.mako file
    kernel_names: Tuple[str, ...] = ()

    def __init__(self, programs, device, profile, policy, codec, value_t, index_name, index_np,
                 debug=NO_DEBUG):
        self.policy = policy
        self.debug = debug
        self.codec = codec
        self.value_t = value_t
        self.index_np = np.dtype(index_np).type
        self.index_bytes = np.dtype(index_np).itemsize
        params = dict(codec.template_args(), radix_bits=policy.radix_bits, wg=policy.wg_size,
                      ipt=policy.items_per_thread, value_t=value_t, index_t=index_name)
        params.update(self.template_params(policy, profile, device))
        options = list(self.build_options(profile, device))
        if getattr(policy, "max_registers", 0) and profile.is_nvidia:
            options.append(f"-cl-nv-maxrregcount={policy.max_registers}")
        iota = ("rts_iota",) if value_t in ("uint", "ulong") else ()
        builds = self.builds(params, options, iota)
        # what the program of the passes was rendered and built from (the last build; benchmarks
        # and tests rebuild it to read the compiler's report)
        self.render_params, self.build_opts = builds[-1].params, list(builds[-1].options)
        super().__init__(programs, device, profile, policy.wg_size, builds)

    def builds(self, params, options, iota):
        """The programs of the driver (base.Build), the one of the digit passes last: one
        program of every kernel."""
        return [Build(self.template, params, options, self.kernel_names, iota)]

    @classmethod
    def temp_bytes(cls, policy, profile, n, key_bytes, value_bytes, passes):
        return n * (key_bytes + value_bytes) + cls.extra_bytes(policy, profile, index_bytes(n), n,
                                                               passes)

    @classmethod
    def extra_bytes(cls, policy, profile, index_bytes, n, passes):
        """Temporary bytes beyond the ping-pong buffers."""
        return 0

    @classmethod
    def local_bytes(cls, policy, key_bytes, index_bytes, value_bytes=0,
                    debug=NO_DEBUG):  # pragma: no cover - every driver defines it
        """Local memory of the largest kernel of the driver's program under ``policy``."""
        raise NotImplementedError

    def template_params(self, policy, profile, device):
        """Template parameters of the algorithm beyond the keys', values' and tile's."""
        return {}

    def build_options(self, profile, device):
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

    def sequence(self, job):
        """The ready launch sequence of a SortJob."""
        seq = LaunchSequence(self)
        if job.n <= 1 or job.begin_bit == job.end_bit:
            # nothing to sort: the indices in order, the keys copied where they are asked for
            if job.argsort:
                seq.launch("rts_iota", "rts_iota", (round_up(job.n, 256),), None,
                           [Buf(VALS_OUT), Off(VALS_OUT), job.n])
            if job.keys_out and job.n:
                kb = self.codec.itemsize
                seq.copy("copy keys", (Buf(KEYS_IN), Off(KEYS_IN)), (Buf(KEYS_OUT), Off(KEYS_OUT)),
                         job.n * kb, kb)
            if job.argsort or job.keys_out:
                return seq
        self.build_sequence(seq, job)
        return seq

    @staticmethod
    def key_operands(job):
        """(where the keys are read, where the sorted keys go: None for an argsort that leaves
        them unwritten) of a SortJob, as (Buf, Off) pairs."""
        keys = (Buf(KEYS_IN), Off(KEYS_IN))
        if job.keys_out:
            return keys, (Buf(KEYS_OUT), Off(KEYS_OUT))
        return keys, None if job.argsort else keys

    def build_sequence(self, seq, job):
        """The digit passes between ping-pong buffers, and the copy home an in-place sort with an
        odd number of passes owes."""
        n = job.n
        passes = digit_passes(self.policy.radix_bits, job.begin_bit, job.end_bit)
        kb = self.codec.itemsize
        vb = VALUE_BYTES[self.value_t]
        keys, keys_dst = self.key_operands(job)
        key_io, key_copy = stream(keys, keys_dst, len(passes), seq.temp, n * kb)
        val_io = val_copy = None
        if job.argsort:
            val_io, val_copy = stream(None, (Buf(VALS_OUT), Off(VALS_OUT)), len(passes),
                                      seq.temp, n * vb)
        elif job.values:
            vals = (Buf(VALS_IN), Off(VALS_IN))
            val_io, val_copy = stream(vals, vals, len(passes), seq.temp, n * vb)
        self.sequence_passes(seq, n, passes, job.descending, key_io, val_io, job.argsort)
        for name, copy, width in (("copy keys", key_copy, kb), ("copy values", val_copy, vb)):
            if copy is not None:
                seq.copy(name, copy[0], copy[1], n * width, width)

    def sequence_passes(self, seq, n, passes, descending, key_io, val_io, iota):
        """The launches of the digit passes (multi-pass drivers)."""
        raise NotImplementedError  # pragma: no cover


class BlockCounts(DigitPasses):
    """Drivers whose passes count digits per block (reduce-then-scan's blocks, the chunks of the
    CPU sort) into one table of radix x blocks offsets, ``grid(policy, profile, n)[1]`` blocks."""

    @staticmethod
    def grid(policy, profile, n):  # pragma: no cover - each driver defines it
        raise NotImplementedError

    @classmethod
    def extra_bytes(cls, policy, profile, index_bytes, n, passes):
        return policy.radix * cls.grid(policy, profile, n)[1] * index_bytes


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
