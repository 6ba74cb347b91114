"""The segmented sort on CPUs (cl_templates/segmented_chunks.cl.mako): each work-item
sorts whole segments (or rows) on its own, short ones by insertion, longer ones by 8-bit LSD
passes through a scratch buffer; no work-group barrier, no pass across work-items. It takes the
same SegmentJob as the work-group driver (clradix.drivers.segmented) and gives the same results
bit for bit.

Offsets given on the device are checked by cs_check (one work-item) when the job asks: invalid
offsets make cs_segments return at once, and ``raise_invalid`` reads the verdict back.
"""

import numpy as np

from ..core.launches import KEYS_IN, SEGMENTS, VALS_IN, VALS_OUT, Buf, LaunchSequence, Off
from .base import Build, Driver

# work-items per compute unit: enough that a few long segments do not leave a core idle
ITEMS_PER_CU = 64


class SegmentChunks(Driver):
    template = "segmented_chunks.cl.mako"
    kernel_names = ("cs_check", "cs_segments")

    def __init__(self, programs, device, profile, policy, codec, value_t, index_name, index_np,
                 off_t):
        self.policy, self.codec, self.value_t = policy, codec, value_t
        self.index_np = np.dtype(index_np).type
        self.index_bytes = np.dtype(index_np).itemsize
        params = dict(codec.template_args(), radix_bits=8, value_t=value_t, index_t=index_name,
                      off_t=off_t, run_bits=8)
        self.render_params = params
        super().__init__(programs, device, profile, 1,
                         [Build(self.template, params, (), self.kernel_names)])

    @classmethod
    def temp_bytes(cls, policy, n, num_segments, row_len, key_bytes, value_bytes, index_bytes,
                   check, passes, argsort=False):
        """A scratch copy of the keys (and values), argsort's copy of the keys, the verdict."""
        return n * (key_bytes + value_bytes) + (n * key_bytes if argsort else 0) + 4 * index_bytes

    def sequence(self, job):
        seq = LaunchSequence(self)
        n, nseg = job.n, job.num_segments
        kb = self.codec.itemsize
        info = seq.temp(4 * self.index_bytes)   # the verdict: one index (INDEX_T), as read back
        offs = (Buf(SEGMENTS), Off(SEGMENTS)) if not job.row_len else (info[0], 0)
        if job.check:
            seq.launch("cs_check", "cs_check", (1,), (1,), [*offs, nseg, n, info[0]])
            if job.raise_invalid:
                seq.read_check("read cs_check verdict", info, self.index_np,
                               "segments: the offsets are not non-decreasing or lie outside "
                               f"[0, n={n}] (checked on the device; nothing was sorted)")
        kscr = seq.temp(n * kb)
        kcopy = seq.temp(n * kb) if job.argsort else kscr
        args = [Buf(KEYS_IN), Off(KEYS_IN), *kscr, *kcopy]
        if self.value_t:
            vals = (Buf(VALS_OUT), Off(VALS_OUT)) if job.argsort else (Buf(VALS_IN), Off(VALS_IN))
            args += [*vals, *seq.temp(n * job.value_bytes)]
        items = max(1, min(nseg, self.profile.compute_units * ITEMS_PER_CU))
        spi = -(-nseg // items)
        items = -(-nseg // spi)
        args += [*offs, nseg, job.row_len, spi, info[0], int(job.check), job.begin_bit,
                 job.end_bit, self.codec.flip(job.descending), int(job.argsort)]
        seq.launch("cs_segments", "cs_segments", (items,), (1,), args)
        return seq
