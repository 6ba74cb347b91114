"""Host side of the chunked CPU sort (cl_templates/chunks.cl.mako; the bucket sort's
chunk_buckets.cl.mako; their shared steps in chunks_steps.mako): one work-item per chunk of
the keys; a digit pass counts each chunk's digits, then scatters each chunk in order (digits
wider than 8 bits through a write-combining line per digit). ChunkBuckets (a policy's
bucket_keys): one such pass by a bucket chosen from a sample of the keys, then each bucket
sorted by a work-item of its own within the cache."""

from typing import Tuple

from ..core.keys import VALUE_BYTES
from ..core.launches import VALS_IN, VALS_OUT, Buf, Off
from ..core.sizes import index_bytes
from ..policies.sort import NO_DEBUG
from .digit_passes import BlockCounts

# the bytes of one write-combining line (WC in chunks_steps.mako: a cache line)
LINE_BYTES = 64
# The scatter writes through lines for digits wider than this: 256 digits' lines (16 KiB) stay
# in the L1 cache, where the lines cost more than they save (2^22 and 2^24 uint32 on 2 EPYC
# cores, BENCHMARKS_NOTES.md "2026-11-27: the CPU sort against numpy's dispatch").
LINES_ABOVE_BITS = 8
# The bucket sort's fine digit (chunk_buckets.cl.mako, cb_sample): FINE_EXTRA bits wider than
# the top digit, so that a bucket is about 2^FINE_EXTRA fine values of the sample, at most
# FINE_MAX bits (the table of 2^FINE_MAX bucket numbers stays in the L1 or L2 cache), and at most
# log2(n) - FINE_BELOW_N bits (a table no larger than a quarter of the keys' count).
FINE_EXTRA = 6
FINE_MAX = 16
FINE_BELOW_N = 2
# The widest digit of the in-bucket passes by key size (digits of up to 9 bits: a bucket whose
# keys differ in 25 bits takes 3 passes, not 4, and 512 counters stay in L1; measured in
# BENCHMARKS_NOTES.md, "the bucket sort's buckets by the keys' distribution").
RUN_BITS = {4: 9}
# Runs of 32-bit keys in a bucket take passes of 12-bit digits where that saves a pass and the
# run has WIDE_MIN keys or more (chunk_buckets.cl.mako, cb_bucket_lsd; measured in
# BENCHMARKS_NOTES.md, "the CPU sort's in-bucket passes of 12-bit digits").
WIDE_RUNS = True


class Chunks(BlockCounts):
    template = "chunks.cl.mako"
    kernel_names: Tuple[str, ...] = ("cc_count", "cc_scatter")

    def template_params(self, policy, profile, device):
        return dict(lines=self.uses_lines(policy))

    @classmethod
    def local_bytes(cls, policy, key_bytes, index_bytes, value_bytes=0, debug=NO_DEBUG):
        return 0   # one work-item per work-group: private counters only

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
    """The bucket sort: a read of the keys for the bits that differ among them (cb_span: the fine
    digit ends at the highest, so that keys sharing their high bits still fill many buckets), a
    sample of the keys' fine digits (cb_sample) made a table from fine value to bucket, each
    bucket about as many keys of the sample (cb_lut: 2^radix_bits buckets), one chunked pass by
    the bucket from the keys to a buffer A (argsort: the indices made on the way), the buckets'
    starts (cb_starts), then a work-item per bucket sorting the bits that differ in it between A
    and the keys' place, where they end (cb_buckets; argsort: a second key buffer and the
    indices' output). Temporary memory: A (keys and values), the count table, the starts, the
    span table, the samples' counts, the table and each bucket's high bit (and argsort's second
    key buffer, as the LSD passes' second temporary)."""

    template = "chunk_buckets.cl.mako"
    kernel_names = Chunks.kernel_names + ("cb_span", "cb_sample", "cb_lut", "cb_starts",
                                          "cb_buckets")

    def template_params(self, policy, profile, device):
        return dict(lines=self.uses_lines(policy), run_bits=RUN_BITS.get(self.codec.itemsize, 8),
                    wide_runs=WIDE_RUNS and self.codec.itemsize == 4)

    @staticmethod
    def digits(policy, n, bits):
        """(top, fine): the widths of the top digit (the buckets' number) and of the fine digit
        for n keys sorted by `bits` bits. Only float keys are sampled (their top bits, sign and
        exponent, take few values); integer keys' fine digit is the top digit, placed at the
        highest differing bit (for them the sample and the table cost time and made the
        buckets no more even; BENCHMARKS_NOTES.md, "the bucket sort's buckets by the keys'
        distribution"); the tables are as large either way."""
        top = min(policy.radix_bits, bits)
        fine = max(top, min(top + FINE_EXTRA, FINE_MAX,
                            max(n, 1).bit_length() - 1 - FINE_BELOW_N))
        return top, min(fine, bits)

    @classmethod
    def tables(cls, policy, profile, n, bits, key_bytes, index_size):
        """The bytes of the bucket sort's tables beyond the LSD passes' (and their order): the
        starts, the span, the samples' counts, the fine digit's table, each bucket's high bit and
        base."""
        top, fine = cls.digits(policy, n, bits)
        chunks = cls.grid(policy, profile, n)[1]
        return [((1 << top) + 1) * index_size, 2 * chunks * key_bytes, chunks * (4 << fine),
                (1 << fine) * (1 if policy.radix_bits <= 8 else 2), (1 << top) * 4,
                (1 << top) * key_bytes]

    @classmethod
    def temp_bytes(cls, policy, profile, n, key_bytes, value_bytes, passes):
        bits = sum(b for _, b in passes)
        return (super().temp_bytes(policy, profile, n, key_bytes, value_bytes, passes)
                + sum(cls.tables(policy, profile, n, bits, key_bytes, index_bytes(n))))

    def build_sequence(self, seq, job):
        n, begin_bit, end_bit, descending = job.n, job.begin_bit, job.end_bit, job.descending
        argsort, values = job.argsort, job.values
        kb = self.codec.itemsize
        vb = VALUE_BYTES[self.value_t]
        top, fine = self.digits(self.policy, n, end_bit - begin_bit)
        shift = end_bit - top
        mask = (1 << top) - 1
        # without a sample the fine digit is the top digit, each bucket one value of it
        sampled = self.codec.kind == "float"
        fine_mask = (1 << fine) - 1 if sampled else mask
        chunk_len, chunks = self.grid(self.policy, self.profile, n)
        keys, dst = self.key_operands(job)
        # (the ping-pong buffers first, as the other sorts ask for theirs)
        ka = seq.temp(n * kb)
        kb_ = dst or seq.temp(n * kb)      # where the keys end
        scatter = [*keys, *ka]
        vals_a = vals_b = None
        if argsort or values:
            vals_a = seq.temp(n * vb)
            vals_b = (Buf(VALS_OUT), Off(VALS_OUT)) if argsort else (Buf(VALS_IN), Off(VALS_IN))
            vin = vals_a if argsort else vals_b
            scatter += [*vin, *vals_a, int(argsort)]
        counts = seq.temp(self.policy.radix * chunks * self.index_bytes)[0]
        wc = self.wc_temps(seq, chunks, vals_a is not None)
        starts, span, samples, lut, hi_bits, bases = (
            seq.temp(nbytes)[0] for nbytes in self.tables(
                self.policy, self.profile, n, end_bit - begin_bit, kb, self.index_bytes))
        flip = self.codec.flip(descending)
        one = (1,)
        seq.launch("cb_span", "cb_span", (chunks,), one,
                   [*keys, n, chunk_len, begin_bit, end_bit, flip, span])
        if sampled:
            seq.launch("cb_sample", "cb_sample", (chunks,), one,
                       [*keys, n, chunk_len, chunks, flip, span, begin_bit, fine_mask, samples])
        seq.launch("cb_lut", "cb_lut", (1,), one,
                   [samples, chunks, fine_mask, mask + 1, span, begin_bit, int(sampled), lut,
                    hi_bits, bases])
        bucket = [span, begin_bit, lut, fine_mask]
        seq.launch("cc_count top", "cc_count", (chunks,), one,
                   [*keys, counts, n, chunk_len, chunks, shift, mask, flip] + bucket)
        seq.launch("cc_scatter top", "cc_scatter", (chunks,), one,
                   scatter + [counts, n, chunk_len, chunks, shift, mask, flip] + bucket
                   + wc + [1])
        seq.launch("cb_starts", "cb_starts", (1,), one, [counts, chunks, mask + 1, starts])
        args = [*ka, *kb_]
        if vals_a is not None:
            args += [*vals_a, *vals_b]
        seq.launch("cb_buckets", "cb_buckets", (mask + 1,), one,
                   args + [starts, hi_bits, bases, begin_bit, flip, self.policy.bucket_keys])
