"""Host side of the chunked CPU sort (cl_templates/chunks.cl.mako): one work-item per chunk of
the keys; a digit pass counts each chunk's digits, then scatters each chunk in order (digits
wider than 8 bits through a write-combining line per digit). ChunkBuckets (a policy's
bucket_keys): one such pass by the top digit, then each bucket sorted by a work-item of its own
within the cache."""

from typing import Tuple

from ..core.keys import VALUE_BYTES
from ..core.launches import KEYS_IN, VALS_IN, VALS_OUT, Buf, Off
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
    kernel_names: Tuple[str, ...] = ("cc_count", "cc_scatter")

    def template_params(self, policy, profile, device):
        # the whole-array kernels
        return dict(off_t=None, lines=self.uses_lines(policy), buckets=False)

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
        wc = self.wc_temps(seq, chunks, val_io is not None)
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

    def wc_temps(self, seq, chunks, values):
        """cc_scatter's write-combining lines (kernel arguments; none for 8-bit digits)."""
        if not self.uses_lines(self.policy):
            return []
        kb = self.codec.itemsize
        slots = self.policy.radix * (LINE_BYTES // kb) * chunks   # every chunk's lines
        wc = [seq.temp(slots * kb)[0]]
        if values:
            wc = [seq.temp(slots * VALUE_BYTES[self.value_t])[0]] + wc
        return wc


class ChunkBuckets(Chunks):
    """The bucket sort: a read of the keys for the bits that differ among them (cb_span: the top
    digit, radix_bits wide, ends at the highest, so that keys sharing their high bits still fill
    many buckets), one chunked pass by the top digit from the keys to a buffer A (argsort: the
    indices made on the way), the buckets' starts (cb_starts), then a work-item per bucket
    sorting the bits below the top digit between A and the keys' place, where they end
    (cb_buckets; argsort: a second key buffer and the indices' output). Temporary memory: A
    (keys and values), the count table, the starts, the span table (and argsort's second key
    buffer, as the LSD passes' second temporary)."""

    kernel_names = Chunks.kernel_names + ("cb_span", "cb_starts", "cb_buckets")

    def template_params(self, policy, profile, device):
        return dict(off_t=None, lines=self.uses_lines(policy), buckets=True)

    @classmethod
    def temp_bytes(cls, policy, profile, n, key_bytes, value_bytes, passes):
        return (super().temp_bytes(policy, profile, n, key_bytes, value_bytes, passes)
                + (policy.radix + 2) * index_bytes(n)
                + 2 * cls.grid(policy, profile, n)[1] * key_bytes)

    def build_sequence(self, seq, n, begin_bit, end_bit, descending, argsort, values):
        kb = self.codec.itemsize
        vb = VALUE_BYTES[self.value_t]
        top = min(self.policy.radix_bits, end_bit - begin_bit)
        shift = end_bit - top
        mask = (1 << top) - 1
        chunk_len, chunks = self.grid(self.policy, self.profile, n)
        keys = (Buf(KEYS_IN), Off(KEYS_IN))
        # (the ping-pong buffers first, as the other sorts ask for theirs)
        ka = seq.temp(n * kb)
        kb_ = seq.temp(n * kb) if argsort else keys      # where the keys end
        scatter = [*keys, *ka]
        vals_a = vals_b = None
        if argsort or values:
            vals_a = seq.temp(n * vb)
            vals_b = (Buf(VALS_OUT), Off(VALS_OUT)) if argsort else (Buf(VALS_IN), Off(VALS_IN))
            vin = vals_a if argsort else vals_b
            scatter += [*vin, *vals_a, int(argsort)]
        counts = seq.temp(self.policy.radix * chunks * self.index_bytes)[0]
        wc = self.wc_temps(seq, chunks, vals_a is not None)
        starts = seq.temp((self.policy.radix + 2) * self.index_bytes)[0]
        span = seq.temp(2 * chunks * kb)[0]
        flip = self.codec.flip(descending)
        one = (1,)
        seq.launch("cb_span", "cb_span", (chunks,), one,
                   [*keys, n, chunk_len, begin_bit, end_bit, flip, span])
        seq.launch("cc_count top", "cc_count", (chunks,), one,
                   [*keys, counts, n, chunk_len, chunks, shift, mask, flip, span, begin_bit])
        seq.launch("cc_scatter top", "cc_scatter", (chunks,), one,
                   scatter + [counts, n, chunk_len, chunks, shift, mask, flip, span, begin_bit]
                   + wc + [1])
        seq.launch("cb_starts", "cb_starts", (1,), one,
                   [counts, chunks, mask + 1, starts, span, begin_bit])
        args = [*ka, *kb_]
        if vals_a is not None:
            args += [*vals_a, *vals_b]
        seq.launch("cb_buckets", "cb_buckets", (mask + 1,), one,
                   args + [starts, begin_bit, flip, self.policy.bucket_keys])
