"""Host side of the hybrid radix sort (cl_templates/hybrid.cl.mako): most-significant 8-bit digits
first, over global memory, until a bucket holds at most ``SortPolicy.local_capacity`` keys; then
every such bucket sorted in local memory in one read and one write.

The host enqueues one fixed sequence per call configuration, every decision taken on the device:
``hy_init``; per level (one per 8 bits of the range: a level can only shorten a bucket's unsorted
bits by 8 or more) ``hy_count``, ``hy_scan``, ``hy_scatter``; then ``hy_local``. Their launch
sizes are bounds (grid-stride loops over the lists the kernels fill), so nothing is read back; a
level with no bucket left costs its three launches.

Temporary memory (:meth:`Hybrid.sizes` computes the bounds): the keys' other buffer (an in-place
sort; argsort: two, the caller's keys being read only) and the values' other buffer, n keys and n
values each, as for the LSD sorts; then the tables: two lists of buckets (5 index words and 4
uint words each, ``lcap`` = n // (capacity + 1) entries: every listed bucket holds more keys than
a run), two maps from blocks to buckets and a count table of 256 index words per block (``bcap`` =
n / (tiles_per_block x tile) + lcap blocks), and the runs for the local sort (3 index words each,
``rcap``, from the bound that every run but one per bucket and per larger sibling holds more than
half the capacity together with its successor).
"""

from ..core.keys import VALUE_BYTES
from ..core.launches import KEYS_IN, VALS_IN, VALS_OUT, Buf, Off
from ..core.sizes import index_bytes, round_up
from .digit_passes import DigitPasses

# A block of a bucket's pass walks at least this many tiles: fewer blocks, a smaller count table
# and scan, at the cost of parallelism only in buckets of fewer than ~4 x compute units tiles.
TILES_PER_BLOCK = 4
# Entries of the device's info words (the template's INFO_WORDS), list entries' words.
INFO_WORDS, DESC_WORDS, BITS_WORDS, RUN_WORDS = 8, 5, 4, 3
RADIX = 256


class Hybrid(DigitPasses):
    template = "hybrid.cl.mako"
    kernel_names = ("hy_init", "hy_count", "hy_scan", "hy_scatter", "hy_local")

    def template_params(self, policy, profile, device):
        return dict(backend=policy.ranking, sg_size=policy.sg_size, cap=policy.local_capacity,
                    tpb=TILES_PER_BLOCK)

    # ------------------------------------------------------------------ sizes

    @staticmethod
    def max_blocks(policy, profile):
        """The most blocks one bucket's pass takes (a bucket of more tiles walks more per block):
        blocks_per_cu per compute unit, which is also each grid-stride launch's width."""
        return max(1, profile.compute_units * policy.blocks_per_cu)

    @staticmethod
    def bucket_blocks(policy, length, maxb):
        """Blocks of a bucket of ``length`` keys (the template's bucket_blocks)."""
        tiles = -(-length // policy.tile)
        tpb = max(TILES_PER_BLOCK, -(-tiles // maxb))
        return -(-tiles // tpb)

    @classmethod
    def sizes(cls, policy, profile, n, levels):
        """(lcap, bcap, rcap): entries of a bucket list, blocks of a level, runs of the local
        sort, bounds for n keys and ``levels`` levels (see the module's docstring)."""
        cap = policy.local_capacity
        lcap = max(1, n // (cap + 1))
        bcap = -(-n // (policy.tile * TILES_PER_BLOCK)) + lcap
        per = -(-n // cap)
        rcap = 2 + (4 + 2 * levels) * per + levels * lcap
        return lcap, bcap, rcap

    @classmethod
    def table_bytes(cls, policy, profile, n, levels):
        """Bytes of the tables (info, lists, block maps, count table, runs)."""
        ib = index_bytes(n)
        lcap, bcap, rcap = cls.sizes(policy, profile, n, levels)
        return (INFO_WORDS * ib + 2 * lcap * (DESC_WORDS * ib + BITS_WORDS * 4)
                + 2 * bcap * ib + bcap * RADIX * ib + rcap * RUN_WORDS * ib)

    @classmethod
    def temp_bytes(cls, policy, profile, n, key_bytes, value_bytes, passes):
        """An in-place sort's temporaries: the keys' and values' other buffers and the tables
        (``passes``: the 8-bit digits of the bit range, one level each)."""
        return n * (key_bytes + value_bytes) + cls.table_bytes(policy, profile, n, len(passes))

    # ------------------------------------------------------------------ sequence

    def build_sequence(self, seq, n, begin_bit, end_bit, descending, argsort, values):
        pol, prof = self.policy, self.profile
        wg, kb = pol.wg_size, self.codec.itemsize
        levels = -(-(end_bit - begin_bit) // 8)
        lcap, bcap, rcap = self.sizes(pol, prof, n, levels)
        maxb = self.max_blocks(pol, prof)
        ib = self.index_bytes
        info = seq.temp(INFO_WORDS * ib)[0]
        desc = seq.temp(2 * lcap * DESC_WORDS * ib)[0]
        dbits = seq.temp(2 * lcap * BITS_WORDS * 4)[0]
        blkmap = seq.temp(2 * bcap * ib)[0]
        counts = seq.temp(bcap * RADIX * ib)[0]
        runs = seq.temp(rcap * RUN_WORDS * ib)[0]
        keys0 = [Buf(KEYS_IN), Off(KEYS_IN)]
        keys1 = seq.temp(n * kb)[0]
        # in place: buffer 2 is the input (and the output); argsort: the keys are only read
        keys2 = [seq.temp(n * kb)[0], 0] if argsort else keys0
        home = 0b100 if argsort else 0b101
        vals = []
        vals_out = []
        if argsort or values:
            vb = VALUE_BYTES[self.value_t]
            own = [Buf(VALS_OUT), Off(VALS_OUT)] if argsort else [Buf(VALS_IN), Off(VALS_IN)]
            vals1 = seq.temp(n * vb)[0]
            # argsort: buffer 0 is never read (the indices are made), buffer 2 is the output
            vals = own + [vals1] + own
            vals_out = own
        iota = [int(argsort)] if vals else []
        flip = self.codec.flip(descending)
        nb0 = self.bucket_blocks(pol, n, maxb)
        seq.launch("hy_init", "hy_init", (round_up(max(nb0, 1), wg),), (wg,),
                   [n, end_bit, nb0, info, desc, dbits, blkmap, runs])
        grid = lambda bound: (min(bound, maxb) * wg,)   # noqa: E731 (grid-stride launches)
        for level in range(levels):
            p = level % 2
            seq.launch(f"hy_count {level}", "hy_count", grid(bcap), (wg,),
                       keys0 + [keys1] + keys2 + [info, desc, dbits, blkmap, counts, p, lcap,
                                                  bcap, maxb, begin_bit, flip])
            seq.launch(f"hy_scan {level}", "hy_scan", grid(lcap), (wg,),
                       [info, desc, dbits, blkmap, counts, runs, p, lcap, bcap, rcap, maxb,
                        begin_bit, home])
            seq.launch(f"hy_scatter {level}", "hy_scatter", grid(bcap), (wg,),
                       keys0 + [keys1] + keys2 + vals + iota
                       + [info, desc, blkmap, counts, p, lcap, bcap, maxb, begin_bit, flip])
        seq.launch("hy_local", "hy_local", grid(rcap), (wg,),
                   keys0 + [keys1] + keys2 + keys0 + vals + vals_out + iota
                   + [info, runs, begin_bit, flip, int(not argsort)])
