"""Segmented sort: every segment of the keys, or every row of a 2-D array, sorted on its own in one
launch sequence (cl_templates/segmented.cl.mako): the driver. The entry points are
clradix.dispatch.segments.

Segment s is ``keys[offsets[s]:offsets[s + 1]]`` (CUB's begin/end form with shared bounds). The
kernels read the offsets on the device and choose per segment (nothing is read back):

- a segment of at most one tile (SegmentPolicy: wg_size x items_per_thread keys) is sorted in
  local memory by one work-group (seg_local), several consecutive short segments together;
- a longer one goes through 8-bit digit passes of reduce-then-scan inside the segment, with
  min(tiles, blocks_per_segment) work-groups per pass (seg_plan lists them and maps
  work-groups to them, then seg_count, seg_scan, seg_scatter per pass).

Rows (all segments of one known length) skip what cannot happen: rows of at most a tile are one
launch (seg_local), longer rows skip seg_local.

Offsets are checked where they are: offsets given on the host (numpy arrays, sequences) on the
host, before anything is enqueued; offsets on the device by seg_plan, which makes the whole call
a no-op when they are invalid (not non-decreasing, or outside [0, n]) and, with
``check_offsets=True``, reads its verdict back (one 4- or 8-byte read) to raise ValueError
before any sorting kernel is enqueued.
"""

from dataclasses import dataclass

import numpy as np

from ..core.launches import KEYS_IN, SEGMENTS, VALS_IN, VALS_OUT, Buf, LaunchSequence, Off
from ..core.sizes import pow2_floor, round_up
from ..policies.segment import SEGMENTS_PER_GROUP_MAX
from .base import Build, Driver
from .digit_passes import digit_passes, stream

RADIX = 256
# seg_local keeps at least this many work-groups per compute unit when it packs short segments
GROUPS_PER_CU = 4


@dataclass(frozen=True)
class SegmentJob:
    """One segmented sort configuration as the driver sees it: ``n`` keys in slot KEYS_IN sorted
    in place (with ``values``-byte values in VALS_IN; 0: none) or, ``argsort``, only read with the
    positions in VALS_OUT; ``num_segments`` segments whose int32/int64 bounds are in slot
    SEGMENTS, or rows of ``row_len`` keys (no offsets). ``check``: the offsets came from the
    device and seg_plan checks them; ``raise_invalid``: read its verdict back."""

    n: int
    begin_bit: int
    end_bit: int
    descending: bool
    argsort: bool
    value_bytes: int
    num_segments: int
    row_len: int = 0
    check: bool = False
    raise_invalid: bool = False


class SegmentedSort(Driver):
    """The kernels of segmented.cl.mako for one key type, value width, index and offset type."""

    template = "segmented.cl.mako"
    kernel_names = ("seg_local", "seg_plan", "seg_count", "seg_scan", "seg_scatter")

    def __init__(self, programs, device, profile, policy, codec, value_t, index_name, index_np,
                 off_t):
        self.policy, self.codec, self.value_t = policy, codec, value_t
        self.index_np = np.dtype(index_np).type
        self.index_bytes = np.dtype(index_np).itemsize
        params = dict(codec.template_args(), wg=policy.wg_size, ipt=policy.items_per_thread,
                      value_t=value_t, index_t=index_name, off_t=off_t, backend=policy.ranking,
                      sg_size=policy.sg_size)
        self.render_params = params
        super().__init__(programs, device, profile, policy.wg_size,
                         [Build(self.template, params, (), self.kernel_names)])

    # ------------------------------------------------------------------ sizes

    @staticmethod
    def shape(policy, n, num_segments, row_len):
        """(large, blocks): bounds of the segments longer than a tile and of their work-groups
        per digit pass (0, 0 when no segment can be longer than a tile)."""
        tile = policy.tile
        if row_len:
            large = num_segments if row_len > tile else 0
        else:
            large = min(num_segments, n // (tile + 1))
        if not large:
            return 0, 0
        blocks = min(-(-n // tile) + large, large * policy.blocks_per_segment)
        return large, blocks

    @classmethod
    def temp_bytes(cls, policy, n, num_segments, row_len, key_bytes, value_bytes, index_bytes,
                   check, passes):
        """Bytes a call asks its allocator for: the plan's lists, and for segments that may be
        longer than a tile the count table and ping-pong buffers of the keys (and values)."""
        large, blocks = cls.shape(policy, n, num_segments, row_len)
        total = 0
        if large or check:
            total += (4 + 2 * max(large, 1) + max(blocks, 1)) * index_bytes
        if large:
            total += RADIX * blocks * index_bytes
            total += 2 * n * (key_bytes + value_bytes)
        return total

    def segments_per_group(self, job):
        """Segments per seg_local work-group: rows of at most a tile fill one; otherwise the
        policy's number, or (0) twice the tile over the average segment length, halved while
        that leaves fewer than GROUPS_PER_CU work-groups per compute unit. (A run of segments
        shorter than a tile is spread over every subgroup, so fuller runs cost little more than
        short ones; H200, 2^24 float32 keys in 65536 power-law segments, average 256: 8 per group
        1.24 ms, 16 1.05, 32 1.00.)"""
        tile = self.policy.tile
        if job.row_len:
            spg = tile // job.row_len
        elif self.policy.segments_per_group:
            spg = self.policy.segments_per_group
        else:
            spg = 2 * tile // max(1, job.n // max(1, job.num_segments))
            floor = self.profile.compute_units * GROUPS_PER_CU
            while spg > 1 and -(-job.num_segments // spg) < floor:
                spg //= 2
        return max(1, min(SEGMENTS_PER_GROUP_MAX, pow2_floor(max(spg, 1))))

    # ------------------------------------------------------------------ sequence

    def sequence(self, job):
        """The ready launch sequence of a SegmentJob."""
        seq = LaunchSequence(self)
        pol = self.policy
        wg, ib = pol.wg_size, self.index_bytes
        n, nseg = job.n, job.num_segments
        flip = self.codec.flip(job.descending)
        large, blocks = self.shape(pol, n, nseg, job.row_len)
        info = (Buf(KEYS_IN), 0)   # any buffer where no kernel reads it
        if large or job.check:
            info = seq.temp(4 * ib)
        # rows have no offsets: the kernels get a buffer they do not read (not the keys, which
        # the digit passes' restrict parameters must not alias)
        offs = (Buf(SEGMENTS), Off(SEGMENTS)) if not job.row_len else (info[0], 0)
        plan = None
        if large or job.check:
            plan = (seq.temp(max(large, 1) * ib)[0], seq.temp(max(large, 1) * ib)[0],
                    seq.temp(max(blocks, 1) * ib)[0])
            seq.fill("fill seg_plan info", info, self.index_np(0), 4 * ib)
            seq.launch("seg_plan", "seg_plan", (round_up(max(nseg, 1), wg),), (wg,),
                       [*offs, nseg, n, job.row_len, int(job.check), pol.blocks_per_segment,
                        info[0], *plan, large, blocks])
            if job.raise_invalid:
                seq.read_check("read seg_plan verdict", info, self.index_np,
                               "segments: the offsets are not non-decreasing or lie outside "
                               f"[0, n={n}] (checked on the device; nothing was sorted)")
        keys = (Buf(KEYS_IN), Off(KEYS_IN))
        write_keys = int(not job.argsort)
        vals = []
        if self.value_t:
            vout = (Buf(VALS_OUT), Off(VALS_OUT)) if job.argsort else (Buf(VALS_IN), Off(VALS_IN))
            vals = [*vout, *vout, int(job.argsort)]
        if nseg and (not job.row_len or job.row_len <= pol.tile):
            spg = self.segments_per_group(job)
            groups = -(-nseg // spg)
            seq.launch("seg_local", "seg_local", (groups * wg,), (wg,),
                       [*keys, *keys, *vals, *offs, nseg, job.row_len, info[0], int(job.check),
                        spg, job.begin_bit, job.end_bit, flip, write_keys])
        if large:
            self._sequence_passes(seq, job, offs, info[0], plan, large, blocks, flip)
        return seq

    def _sequence_passes(self, seq, job, offs, info, plan, large, blocks, flip):
        pol = self.policy
        wg, ib = pol.wg_size, self.index_bytes
        counts = seq.temp(RADIX * blocks * ib)[0]
        # (no bit to sort by: argsort's positions come from one pass by no bit, the identity)
        passes = digit_passes(8, job.begin_bit, job.end_bit) or [(job.begin_bit, 0)]
        if not job.argsort and len(passes) % 2:
            # in place, an even number of passes ends in the caller's buffer: a pass by no bit
            # (the identity) goes first (a copy home would also copy what lies outside the
            # segments)
            passes = [(job.begin_bit, 0)] + passes
        keys = (Buf(KEYS_IN), Off(KEYS_IN))
        key_io, _ = stream(keys, None if job.argsort else keys, len(passes), seq.temp,
                           job.n * self.codec.itemsize)
        val_io = None
        if self.value_t:
            if job.argsort:
                val_io, _ = stream(None, (Buf(VALS_OUT), Off(VALS_OUT)), len(passes), seq.temp,
                                   job.n * job.value_bytes)
            else:
                vals = (Buf(VALS_IN), Off(VALS_IN))
                val_io, _ = stream(vals, vals, len(passes), seq.temp, job.n * job.value_bytes)
        large_list, lblk, blkmap = plan
        for p, (shift, bits) in enumerate(passes):
            mask = (1 << bits) - 1
            (kin, kin_off), kout = key_io[p]
            seq.launch(f"seg_count {p}", "seg_count", (blocks * wg,), (wg,),
                       [kin, kin_off, *offs, job.row_len, info, large_list, lblk, blkmap, counts,
                        pol.blocks_per_segment, shift, mask, flip])
            seq.launch(f"seg_scan {p}", "seg_scan", (large * wg,), (wg,),
                       [*offs, job.row_len, info, large_list, lblk, counts,
                        pol.blocks_per_segment])
            kout_buf, kout_off = kout if kout is not None else (kin, kin_off)
            vals = []
            if val_io is not None:
                vin, (vout, vout_off) = val_io[p]
                iota = job.argsort and p == 0
                vin_buf, vin_off = (vout, vout_off) if iota else vin
                vals = [vin_buf, vin_off, vout, vout_off, int(iota)]
            seq.launch(f"seg_scatter {p}", "seg_scatter", (blocks * wg,), (wg,),
                       [kin, kin_off, kout_buf, kout_off, *vals, *offs, job.row_len, info,
                        large_list, lblk, blkmap, counts, pol.blocks_per_segment, shift, mask,
                        flip, int(kout is not None)])
