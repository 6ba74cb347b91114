"""Host side of the chunked CPU sort (cl_templates/chunks.cl.mako): one work-item per chunk of
the keys; a digit pass counts each chunk's digits, then scatters each chunk in order (digits
wider than 8 bits through a write-combining line per digit)."""

from ..core.keys import VALUE_BYTES
from ..core.sizes import index_bytes
from .digit_passes import BlockCounts

# the bytes of one write-combining line (WC in chunks.cl.mako: a cache line)
LINE_BYTES = 64
# The scatter writes through lines for digits wider than this: 256 digits' lines (16 KiB) stay
# in the L1 cache, where the lines cost more than they save (2^22 and 2^24 uint32 on 2 EPYC
# cores, BENCHMARKS_NOTES.md "2026-11-27: the CPU sort against numpy's dispatch").
LINES_ABOVE_BITS = 8


class Chunks(BlockCounts):
    template = "chunks.cl.mako"
    kernel_names = ("cc_count", "cc_scatter")

    def template_params(self, policy, profile, device):
        return dict(off_t=None, lines=self.uses_lines(policy))   # the whole-array kernels

    @staticmethod
    def uses_lines(policy):
        return policy.radix_bits > LINES_ABOVE_BITS

    @staticmethod
    def grid(policy, profile, n):
        """(keys per chunk, chunks) for n keys: blocks_per_cu chunks per compute unit, fewer when
        a chunk would hold under min_chunk keys (policy.tile)."""
        chunks = max(1, min(profile.compute_units * policy.blocks_per_cu, -(-n // policy.tile)))
        chunk_len = -(-n // chunks)
        return chunk_len, -(-n // chunk_len)

    @classmethod
    def wc_bytes(cls, policy, profile, n, key_bytes, value_bytes):
        """The write-combining lines of every chunk: RADIX lines of keys (and their values)."""
        if not cls.uses_lines(policy):
            return 0
        per_line = LINE_BYTES // key_bytes
        return (cls.grid(policy, profile, n)[1] * policy.radix * per_line
                * (key_bytes + value_bytes))

    @classmethod
    def temp_bytes(cls, policy, profile, n, key_bytes, value_bytes, passes):
        return (n * (key_bytes + value_bytes) + cls.extra_bytes(policy, profile, index_bytes(n),
                                                                 n, passes)
                + cls.wc_bytes(policy, profile, n, key_bytes, value_bytes))

    def sequence_passes(self, seq, n, passes, descending, key_io, val_io, iota):
        chunk_len, chunks = self.grid(self.policy, self.profile, n)
        counts = seq.temp(self.policy.radix * chunks * self.index_bytes)[0]
        kb = self.codec.itemsize
        wc = []
        if self.uses_lines(self.policy):
            slots = self.policy.radix * (LINE_BYTES // kb) * chunks   # every chunk's lines
            wc = [seq.temp(slots * kb)[0]]
            if val_io is not None:
                wc = [seq.temp(slots * VALUE_BYTES[self.value_t])[0]] + wc
        flip = self.codec.flip(descending)
        one = (1,)
        for p, (shift, bits) in enumerate(passes):
            (kin, kin_off), _ = key_io[p]
            mask = (1 << bits) - 1
            seq.launch(f"cc_count {p}", "cc_count", (chunks,), one,
                       [kin, kin_off, counts, n, chunk_len, chunks, shift, mask, flip])
            bufs, write_keys = self.pass_buffers(p, key_io, val_io, iota)
            seq.launch(f"cc_scatter {p}", "cc_scatter", (chunks,), one,
                       bufs + [counts, n, chunk_len, chunks, shift, mask, flip] + wc
                       + [write_keys])

