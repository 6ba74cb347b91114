"""Host side of the chunked CPU sort (cl_templates/chunks.cl.mako): one work-item per chunk of
the keys; a digit pass counts each chunk's digits, then scatters each chunk in order."""

from .digit_passes import BlockCounts


class Chunks(BlockCounts):
    template = "chunks.cl.mako"
    kernel_names = ("cc_count", "cc_scatter")

    def template_params(self, policy, profile, device):
        return dict(off_t=None)   # the whole-array kernels only

    @staticmethod
    def grid(policy, profile, n):
        """(keys per chunk, chunks) for n keys: blocks_per_cu chunks per compute unit, fewer when
        a chunk would hold under min_chunk keys (policy.tile)."""
        chunks = max(1, min(profile.compute_units * policy.blocks_per_cu, -(-n // policy.tile)))
        chunk_len = -(-n // chunks)
        return chunk_len, -(-n // chunk_len)

    def sequence_passes(self, seq, n, passes, descending, key_io, val_io, iota):
        chunk_len, chunks = self.grid(self.policy, self.profile, n)
        counts = seq.temp(self.policy.radix * chunks * self.index_bytes)[0]
        flip = self.codec.flip(descending)
        one = (1,)
        for p, (shift, bits) in enumerate(passes):
            (kin, kin_off), _ = key_io[p]
            mask = (1 << bits) - 1
            seq.launch(f"cc_count {p}", "cc_count", (chunks,), one,
                       [kin, kin_off, counts, n, chunk_len, chunks, shift, mask, flip])
            bufs, write_keys = self.pass_buffers(p, key_io, val_io, iota)
            seq.launch(f"cc_scatter {p}", "cc_scatter", (chunks,), one,
                       bufs + [counts, n, chunk_len, chunks, shift, mask, flip, write_keys])
