"""Host side of the reduce-then-scan digit passes (cl_templates/reduce_then_scan.cl.mako)."""

import numpy as np

from .digit_passes import DigitPasses


class ReduceThenScan(DigitPasses):
    template = "reduce_then_scan.cl.mako"
    kernel_names = ("rts_count", "rts_scan", "rts_scatter")

    def __init__(self, *args):
        super().__init__(*args)
        ulong, uint, idx = np.uint64, np.uint32, self.index_np
        key_np = self.codec.unsigned_dtype.type
        self.count = self.kernels["rts_count"]
        self.count.set_scalar_arg_dtypes([None, ulong, None, idx, idx, uint, uint, uint, key_np])
        self.scan = self.kernels["rts_scan"]
        self.scan.set_scalar_arg_dtypes([None, uint])
        self.scatter = self.kernels["rts_scatter"]
        vals = [None, ulong, None, ulong, uint] if self.value_t else []
        self.scatter.set_scalar_arg_dtypes(
            [None, ulong, None, ulong] + vals + [None, idx, idx, uint, uint, uint, key_np, uint])

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

    def enqueue_passes(self, queue, n, passes, descending, key_io, val_io, iota, alloc, wait):
        wg = self.policy.wg_size
        tpb, blocks = self.grid(self.policy, self.profile, n)
        m = self.policy.radix * blocks
        counts = alloc(m * self.index_bytes)
        flip = self.codec.flip(descending)
        gsize = (blocks * wg,)
        evt_list = wait or None
        for p, (shift, bits) in enumerate(passes):
            (kin, kin_off), _ = key_io[p]
            mask = (1 << bits) - 1
            evt = self._traced(f"rts_count {p}", self.count(
                queue, gsize, (wg,), kin, kin_off, counts, n, tpb, blocks, shift, mask, flip,
                wait_for=evt_list))
            evt = self._traced(f"rts_scan {p}", self.scan(queue, (wg,), (wg,), counts, m,
                                                         wait_for=[evt]))
            bufs, write_keys = self.pass_buffers(p, key_io, val_io, iota)
            args = bufs + [counts, n, tpb, blocks, shift, mask, flip, write_keys]
            evt = self._traced(f"rts_scatter {p}", self.scatter(queue, gsize, (wg,), *args,
                                                               wait_for=[evt]))
            evt_list = [evt]
        return evt


class SingleWorkGroup(DigitPasses):
    """A sort of at most one tile of keys by one work-group in one launch (rts_small): every
    split pass happens in local memory, so a small sort costs one kernel launch."""

    template = "reduce_then_scan.cl.mako"
    kernel_names = ("rts_small",)

    def __init__(self, *args):
        super().__init__(*args)
        ulong, uint = np.uint64, np.uint32
        key_np = self.codec.unsigned_dtype.type
        vals = [None, ulong, None, ulong, uint] if self.value_t else []
        self.small = self.kernels["rts_small"]
        self.small.set_scalar_arg_dtypes([None, ulong, None, ulong] + vals
                                         + [uint, uint, uint, key_np, uint])

    @classmethod
    def temp_bytes(cls, policy, profile, n, key_bytes, value_bytes, passes):
        return 0   # the keys stay in local memory

    def enqueue(self, queue, job, alloc, wait):
        """The whole of ``job`` in one launch: keys_in to keys_out (or only read), values from
        vals_in (or the indices) to vals_out, every split pass in local memory."""
        kin, kin_off = job.keys_in
        kout, kout_off = job.keys_out if job.keys_out is not None else job.keys_in
        args = [kin, kin_off, kout, kout_off]
        if self.value_t:
            (vin, vin_off), (vout, vout_off) = job.vals_in or job.vals_out, job.vals_out
            args += [vin, vin_off, vout, vout_off, int(job.iota)]
        args += [job.n, job.begin_bit, job.end_bit, self.codec.flip(job.descending),
                 int(job.keys_out is not None)]
        wg = self.policy.wg_size
        return self._traced("rts_small", self.small(queue, (wg,), (wg,), *args,
                                                    wait_for=wait or None))
