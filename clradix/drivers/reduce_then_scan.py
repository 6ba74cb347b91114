"""Host side of the reduce-then-scan digit passes (cl_templates/reduce_then_scan.cl.mako)."""

from ..policies.sort import NO_DEBUG
from .digit_passes import BlockCounts


def tile_bytes(policy, key_bytes):
    """Local memory of a tile ranked by split passes of up to 4 bits (rts_scatter, rts_small):
    the tile's keys and their source positions, the split counters, the scan scratch."""
    sub = 1 << min(policy.radix_bits, 4)
    return (policy.tile * (key_bytes + 2)      # keys of the tile + their source positions
            + sub * policy.wg_size * 4         # split counters
            + policy.wg_size * 4)              # scan scratch


class ReduceThenScan(BlockCounts):
    template = "reduce_then_scan.cl.mako"
    kernel_names = ("rts_count", "rts_scan", "rts_scatter")

    def template_params(self, policy, profile, device):
        return dict(fused_scan=bool(self.debug.fused_scan))

    @classmethod
    def local_bytes(cls, policy, key_bytes, index_bytes, value_bytes=0, debug=NO_DEBUG):
        """rts_scatter's: a tile (tile_bytes), the digits' run starts and ends and running
        offsets, and with fused_scan the digit totals it scans itself."""
        return (tile_bytes(policy, key_bytes)
                + policy.radix * (8 + index_bytes)
                + (policy.radix + policy.wg_size) * index_bytes * debug.fused_scan)

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
            if not self.debug.fused_scan:
                seq.launch(f"rts_scan {p}", "rts_scan", lsize, lsize, [counts, m])
            bufs, write_keys = self.pass_buffers(p, key_io, val_io, iota)
            seq.launch(f"rts_scatter {p}", "rts_scatter", gsize, lsize,
                       bufs + [counts, n, tpb, blocks, shift, mask, flip, write_keys])
