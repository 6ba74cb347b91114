"""Host side of the reduce-then-scan digit passes (cl_templates/reduce_then_scan.cl.mako)."""

import numpy as np

from .digit_passes import DigitPasses
from .launches import KEYS_IN, VALS_IN, VALS_OUT, Buf, Off


class ReduceThenScan(DigitPasses):
    template = "reduce_then_scan.cl.mako"
    kernel_names = ("rts_count", "rts_scan", "rts_scatter")

    def __init__(self, *args):
        super().__init__(*args)
        ulong, uint, idx = np.uint64, np.uint32, self.index_np
        key_np = self.codec.unsigned_dtype.type
        vals = [None, ulong, None, ulong, uint] if self.value_t else []
        self.arg_types = {
            "rts_count": [None, ulong, None, idx, idx, uint, uint, uint, key_np],
            "rts_scan": [None, uint],
            "rts_scatter": [None, ulong, None, ulong] + vals
                           + [None, idx, idx, uint, uint, uint, key_np, uint]}

    def template_params(self, policy):
        return dict(fused_scan=bool(policy.fused_scan))

    @staticmethod
    def grid(policy, profile, n):
        """(tiles per block, blocks) for n keys."""
        num_tiles = -(-n // policy.tile)
        # at least one block per compute unit (validate: blocks_per_cu >= 1), and enough blocks
        # that none walks 2**31 keys or more
        max_blocks = max(profile.compute_units * policy.blocks_per_cu, -(-n // (2 ** 31)))
        tpb = -(-num_tiles // min(num_tiles, max_blocks))
        return tpb, -(-num_tiles // tpb)

    @classmethod
    def extra_bytes(cls, policy, profile, index_bytes, n, passes):
        _, blocks = cls.grid(policy, profile, n)
        return policy.radix * blocks * index_bytes

    def sequence_passes(self, seq, n, passes, descending, key_io, val_io, iota):
        wg = self.policy.wg_size
        tpb, blocks = self.grid(self.policy, self.profile, n)
        m = self.policy.radix * blocks
        counts = seq.temp(m * self.index_bytes)[0]
        flip = self.codec.flip(descending)
        gsize, lsize = (blocks * wg,), (wg,)
        for p, (shift, bits) in enumerate(passes):
            (kin, kin_off), _ = key_io[p]
            mask = (1 << bits) - 1
            seq.launch(f"rts_count {p}", "rts_count", gsize, lsize,
                       [kin, kin_off, counts, n, tpb, blocks, shift, mask, flip])
            if not self.policy.fused_scan:
                seq.launch(f"rts_scan {p}", "rts_scan", lsize, lsize, [counts, m])
            bufs, write_keys = self.pass_buffers(p, key_io, val_io, iota)
            seq.launch(f"rts_scatter {p}", "rts_scatter", gsize, lsize,
                       bufs + [counts, n, tpb, blocks, shift, mask, flip, write_keys])


class OneLaunch:
    """What the single work-group sorts share (rts_small here, os_small in onesweep.py: the same
    parameters): the whole sort of at most one tile in one launch of ``kernel_names[0]``, every
    pass in local memory, so no temporary memory. Listed before its driver base class."""

    def __init__(self, *args):
        DigitPasses.__init__(self, *args)   # not the base's own: it sets up multi-pass kernels
        ulong, uint = np.uint64, np.uint32
        vals = [None, ulong, None, ulong, uint] if self.value_t else []
        self.arg_types = {self.kernel_names[0]: [None, ulong, None, ulong] + vals
                          + [uint, uint, uint, self.codec.unsigned_dtype.type, uint]}

    @classmethod
    def temp_bytes(cls, policy, profile, n, key_bytes, value_bytes, passes):
        return 0   # the keys stay in local memory

    def build_sequence(self, seq, n, begin_bit, end_bit, descending, argsort, values):
        """keys_in to keys_out (or only read, argsort), values from vals_in (or the indices) to
        vals_out, in one launch."""
        keys = [Buf(KEYS_IN), Off(KEYS_IN)]
        args = keys + keys
        if argsort:
            out = [Buf(VALS_OUT), Off(VALS_OUT)]
            args += out + out + [1]
        elif values:
            vals = [Buf(VALS_IN), Off(VALS_IN)]
            args += vals + vals + [0]
        args += [n, begin_bit, end_bit, self.codec.flip(descending), int(not argsort)]
        wg = self.policy.wg_size
        kernel = self.kernel_names[0]
        seq.launch(kernel, kernel, (wg,), (wg,), args)


class SingleWorkGroup(OneLaunch, DigitPasses):
    """A sort of at most one tile of keys by one work-group in one launch (rts_small): every
    split pass happens in local memory, so a small sort costs one kernel launch."""

    template = "reduce_then_scan.cl.mako"
    kernel_names = ("rts_small",)

    def template_params(self, policy):
        return dict(fused_scan=False)
