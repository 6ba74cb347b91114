"""Host side of the reduce-then-scan digit passes (cl_templates/reduce_then_scan.cl.mako)."""

from .digit_passes import BlockCounts


class ReduceThenScan(BlockCounts):
    template = "reduce_then_scan.cl.mako"
    kernel_names = ("rts_count", "rts_scan", "rts_scatter")

    def template_params(self, policy, profile, device):
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
