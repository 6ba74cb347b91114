"""Segmented sort: every segment of the keys, or every row of a 2-D array, sorted on its own in one
launch sequence (cl_templates/segmented.cl.mako). Entry points: ``sort_segments`` (Sorter.sort and
Sorter.argsort with ``segments=``) and ``sort_rows`` (clradix.sort and clradix.argsort of a 2-D
array).

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

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, replace
from typing import Optional, Tuple

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .arguments import Operand, check_context, check_disjoint
from .device import Profiles
from .digit_passes import digit_passes, stream
from .driver import Driver, WorkGroupLimitError, check_wg_limits
from .render import KernelBuildError
from .keys import VALUE_CL_TYPES
from .memory import checked_allocator
from .policy import SEGMENTS_PER_GROUP_MAX, plan_segments, pow2_floor
from .sizes import index_type, round_up

RADIX = 256
_OFFSET_TYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long"}


@dataclass
class SegmentJob:
    """One segmented sort as the driver sees it (the streams as in digit_passes.SortJob), and its
    segments: ``num_segments`` segments whose bounds are the int32/int64 ``offsets`` (buffer,
    element offset), or rows of ``row_len`` keys (``offsets`` None). ``check``: the offsets came
    from the device and seg_plan checks them; ``raise_invalid``: read its verdict back."""

    n: int
    begin_bit: int
    end_bit: int
    descending: bool
    keys_in: Tuple[object, int]
    keys_out: Optional[Tuple[object, int]]
    vals_in: Optional[Tuple[object, int]]
    vals_out: Optional[Tuple[object, int]]
    value_bytes: int
    num_segments: int
    offsets: Optional[Tuple[object, int]] = None
    row_len: int = 0
    check: bool = False
    raise_invalid: bool = False


class SegmentedSort(Driver):
    """The kernels of segmented.cl.mako for one key type, value width, index and offset type."""

    template = "segmented.cl.mako"
    kernel_names = ("seg_local", "seg_plan", "seg_count", "seg_scan", "seg_scatter")

    def __init__(self, programs, device, profile, policy, codec, value_t, index_name, index_np,
                 off_t):
        self.profile, self.policy, self.codec, self.value_t = profile, policy, codec, value_t
        self.index_np = np.dtype(index_np).type
        self.index_bytes = np.dtype(index_np).itemsize
        params = dict(codec.template_args(), wg=policy.wg_size, ipt=policy.items_per_thread,
                      value_t=value_t, index_t=index_name, off_t=off_t, backend=policy.ranking,
                      sg_size=policy.sg_size)
        self.render_params = params
        self.program = programs.get(self.template, params, ())
        self.kernels = {name: cl.Kernel(self.program, name) for name in self.kernel_names}
        check_wg_limits(self.kernels, device, policy.wg_size, profile.describe())
        ulong, uint, idx = np.uint64, np.uint32, self.index_np
        key_np = codec.unsigned_dtype.type
        vals = [None, ulong, None, ulong, uint] if value_t else []
        k = self.kernels
        k["seg_local"].set_scalar_arg_dtypes(
            [None, ulong, None, ulong] + vals
            + [None, ulong, idx, idx, None, uint, uint, uint, uint, key_np, uint])
        k["seg_plan"].set_scalar_arg_dtypes([None, ulong, idx, idx, idx, uint, uint, None, None,
                                             None, None, idx, idx])
        k["seg_count"].set_scalar_arg_dtypes(
            [None, ulong, None, ulong, idx, None, None, None, None, None, uint, uint, uint,
             key_np])
        k["seg_scan"].set_scalar_arg_dtypes([None, ulong, idx, None, None, None, None, uint])
        k["seg_scatter"].set_scalar_arg_dtypes(
            [None, ulong, None, ulong] + vals
            + [None, ulong, idx, None, None, None, None, None, uint, uint, uint, key_np, uint])

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
        policy's number, or (0) the tile over twice the average segment length."""
        tile = self.policy.tile
        if job.row_len:
            spg = tile // job.row_len
        elif self.policy.segments_per_group:
            spg = self.policy.segments_per_group
        else:
            spg = tile // max(1, 2 * (job.n // max(1, job.num_segments)))
        return max(1, min(SEGMENTS_PER_GROUP_MAX, pow2_floor(max(spg, 1))))

    # ------------------------------------------------------------------ enqueue

    def enqueue(self, queue, job, alloc, wait):
        pol = self.policy
        wg, ib, idx = pol.wg_size, self.index_bytes, self.index_np
        n, nseg = job.n, job.num_segments
        flip = self.codec.flip(job.descending)
        large, blocks = self.shape(pol, n, nseg, job.row_len)
        evt_list = wait or None
        evt = None
        info = job.keys_in[0]   # any buffer where no kernel reads it
        if large or job.check:
            info = alloc(4 * ib)
        # rows have no offsets: the kernels get a buffer they do not read (not the keys, which
        # the digit passes' restrict parameters must not alias)
        offs, offs_off = job.offsets if job.offsets is not None else (info, 0)
        if large or job.check:
            large_list, lblk = alloc(max(large, 1) * ib), alloc(max(large, 1) * ib)
            blkmap = alloc(max(blocks, 1) * ib)
            evt = cl.enqueue_fill_buffer(queue, info, idx(0), 0, 4 * ib, wait_for=evt_list)
            evt = self._traced("seg_plan", self.kernels["seg_plan"](
                queue, (round_up(max(nseg, 1), wg),), (wg,), offs, offs_off, nseg, n,
                job.row_len, int(job.check), pol.blocks_per_segment, info, large_list, lblk,
                blkmap, large, blocks, wait_for=[evt]))
            evt_list = [evt]
            if job.raise_invalid:
                bad = np.zeros(1, idx)
                cl.enqueue_copy(queue, bad, info, wait_for=evt_list)
                if bad[0]:
                    raise ValueError("segments: the offsets are not non-decreasing or lie outside "
                                     f"[0, n={n}] (checked on the device; nothing was sorted)")
        kin, kout = job.keys_in, job.keys_out if job.keys_out is not None else job.keys_in
        write_keys = int(job.keys_out is not None)
        vals = []
        if self.value_t:
            vin = job.vals_in if job.vals_in is not None else job.vals_out
            vals = [vin[0], vin[1], job.vals_out[0], job.vals_out[1], int(job.vals_in is None)]
        if nseg and (not job.row_len or job.row_len <= pol.tile):
            spg = self.segments_per_group(job)
            groups = -(-nseg // spg)
            evt = self._traced("seg_local", self.kernels["seg_local"](
                queue, (groups * wg,), (wg,), kin[0], kin[1], kout[0], kout[1], *vals, offs,
                offs_off, nseg, job.row_len, info, int(job.check), spg, job.begin_bit,
                job.end_bit, flip, write_keys, wait_for=evt_list))
            evt_list = [evt]
        if large:
            evt = self._enqueue_passes(queue, job, alloc, evt_list, offs, offs_off, info,
                                       large_list, lblk, blkmap, large, blocks, flip)
        if evt is None:
            evt = cl.enqueue_marker(queue, wait_for=evt_list)
        return evt

    def _enqueue_passes(self, queue, job, alloc, evt_list, offs, offs_off, info, large_list, lblk,
                        blkmap, large, blocks, flip):
        pol = self.policy
        wg, ib = pol.wg_size, self.index_bytes
        counts = alloc(RADIX * blocks * ib)
        evt = evt_list[0]
        # (no bit to sort by: argsort's positions come from one pass by no bit, the identity)
        passes = digit_passes(8, job.begin_bit, job.end_bit) or [(job.begin_bit, 0)]
        in_place = (job.keys_out is not None and job.keys_in[0] is job.keys_out[0]
                    and job.keys_in[1] == job.keys_out[1])
        if in_place and len(passes) % 2:
            # an even number of passes ends in the caller's buffer: a pass by no bit (the
            # identity) goes first (a copy home would also copy what lies outside the segments)
            passes = [(job.begin_bit, 0)] + passes
        def temp(nbytes):
            return alloc(nbytes), 0
        key_io, _ = stream(job.keys_in, job.keys_out, len(passes), temp, job.n * self.codec.itemsize)
        val_io = None
        if self.value_t:
            val_io, _ = stream(job.vals_in, job.vals_out, len(passes), temp,
                               job.n * job.value_bytes)
        for p, (shift, bits) in enumerate(passes):
            mask = (1 << bits) - 1
            (kin, kin_off), kout = key_io[p]
            evt = self._traced(f"seg_count {p}", self.kernels["seg_count"](
                queue, (blocks * wg,), (wg,), kin, kin_off, offs, offs_off, job.row_len, info,
                large_list, lblk, blkmap, counts, pol.blocks_per_segment, shift, mask, flip,
                wait_for=[evt]))
            evt = self._traced(f"seg_scan {p}", self.kernels["seg_scan"](
                queue, (large * wg,), (wg,), offs, offs_off, job.row_len, info, large_list, lblk,
                counts, pol.blocks_per_segment, wait_for=[evt]))
            kout_buf, kout_off = kout if kout is not None else (kin, kin_off)
            vals = []
            if val_io is not None:
                vin, (vout, vout_off) = val_io[p]
                iota = job.vals_in is None and p == 0
                vin_buf, vin_off = (vout, vout_off) if iota else vin
                vals = [vin_buf, vin_off, vout, vout_off, int(iota)]
            evt = self._traced(f"seg_scatter {p}", self.kernels["seg_scatter"](
                queue, (blocks * wg,), (wg,), kin, kin_off, kout_buf, kout_off, *vals, offs,
                offs_off, job.row_len, info, large_list, lblk, blkmap, counts,
                pol.blocks_per_segment, shift, mask, flip, int(kout is not None),
                wait_for=[evt]))
        return evt


class SegmentedPlanner:
    """Plans and builds the segmented sorts of one Sorter (``overrides``: a SegmentPolicy whose
    set fields the planner keeps); a built kernel that runs fewer work-items per group than
    planned halves wg_size (once per configuration, with a warning) unless the caller set it."""

    def __init__(self, programs, overrides=None):
        self.programs = programs
        self.overrides = overrides
        self.profiles = Profiles()
        self._drivers = {}
        self._caps = {}
        self._local_ranking = set()
        self._ipt = {}
        self._lock = threading.RLock()

    def plan(self, device, codec, index_bytes):
        profile = self.profiles.get(device)
        cap = self._caps.get((device.int_ptr, codec.dtype))
        if cap:
            profile = replace(profile, max_wg_size=cap)
        return profile, plan_segments(profile, codec, index_bytes, self.overrides)

    def prepare(self, device, codec, value_bytes, index_name, index_np, off_t):
        key = (device.int_ptr, codec.dtype, value_bytes, index_name, off_t)
        with self._lock:
            drv = self._drivers.get(key)
            if drv is not None:
                return drv
            while True:
                profile, pol = self.plan(device, codec, np.dtype(index_np).itemsize)
                if key in self._local_ranking:
                    pol = replace(pol, ranking="local")
                elif key in self._ipt:
                    pol = replace(pol, items_per_thread=self._ipt[key])
                value_t = VALUE_CL_TYPES[value_bytes] if value_bytes else None
                try:
                    drv = SegmentedSort(self.programs, device, profile, pol, codec, value_t,
                                        index_name, index_np, off_t)
                    break
                except WorkGroupLimitError as exc:
                    user = self.overrides is not None and self.overrides.wg_size is not None
                    cap = pow2_floor(min(exc.limit, pol.wg_size // 2))
                    if user or cap < pol.sg_size:
                        raise
                    warnings.warn(f"{exc}; the planner shrinks the segmented sort's wg_size to "
                                  f"{cap} for {codec.dtype} keys on this device", RuntimeWarning,
                                  stacklevel=4)
                    self._caps[(device.int_ptr, codec.dtype)] = cap
                except KernelBuildError as exc:
                    # NVIDIA's ptxas (driver 580) fails register allocation ("register count of
                    # 7") for the keys-only program with the ballot ranking at 16 keys per
                    # work-item; 12 builds, and beat the local-memory ranking at 16 in 4 of 5
                    # shapes on the H100 (BENCHMARKS "Segmented rows"). Fewer keys per
                    # work-item first, then the local-memory ranking.
                    user = self.overrides is not None and self.overrides.ranking is not None
                    user_ipt = self.overrides is not None and \
                        self.overrides.items_per_thread is not None
                    if not user_ipt and pol.items_per_thread > 4:
                        ipt = pol.items_per_thread * 3 // 4
                        warnings.warn(f"{exc.__class__.__name__} with ranking={pol.ranking!r} "
                                      f"at {pol.items_per_thread} keys per work-item; the "
                                      f"segmented sort of {codec.dtype} keys tries {ipt} on "
                                      f"this device", RuntimeWarning, stacklevel=4)
                        self._ipt[key] = ipt
                        continue
                    if user or pol.ranking == "local":
                        raise
                    warnings.warn(f"{exc.__class__.__name__} with ranking={pol.ranking!r}; the "
                                  f"segmented sort of {codec.dtype} keys uses the local-memory "
                                  f"ranking on this device", RuntimeWarning, stacklevel=4)
                    self._local_ranking.add(key)
            self._drivers[key] = drv
            return drv

    def clear(self):
        with self._lock:
            self._drivers.clear()


def planner_of(sorter):
    """The SegmentedPlanner of ``sorter`` (made on first use)."""
    with sorter._lock:
        planner = getattr(sorter, "_segmented", None)
        if planner is None:
            planner = sorter._segmented = SegmentedPlanner(
                sorter._programs, getattr(sorter, "segment_policy", None))
        return planner


# ------------------------------------------------------------------ host-side checks

def segment_offsets(segments, ctx, queue, n):
    """(Operand of the offsets on the device, number of segments, whether the device must check
    them, the events to wait for). ``segments``: a 1-D int32/int64 pyopencl Array (checked on the
    device), or a numpy array or sequence of integers (checked here, then copied to the device).
    Errors are raised before anything is enqueued."""
    if isinstance(segments, cl_array.Array):
        if segments.ndim != 1 or not (segments.flags.c_contiguous or segments.size <= 1):
            raise ValueError(f"segments: expected a contiguous 1-D array of num_segments + 1 "
                             f"offsets, got shape {segments.shape}")
        _offset_type(segments.dtype)
        if segments.size < 1:
            raise ValueError("segments: expected num_segments + 1 offsets (at least one), got "
                             "an empty array")
        check_context(ctx, segments.context, "segments")
        if segments.offset % segments.dtype.itemsize:
            raise ValueError(f"segments: array offset {segments.offset} bytes is not a multiple "
                             f"of the itemsize {segments.dtype.itemsize}")
        op = Operand(segments.base_data, segments.offset // segments.dtype.itemsize,
                     int(segments.size), segments.dtype, segments, list(segments.events))
        return op, int(segments.size) - 1, True
    if isinstance(segments, cl.MemoryObjectHolder):
        raise TypeError("segments: a Buffer does not say its length or type; pass a pyopencl "
                        "Array of int32 or int64 offsets (cl_array.Array(queue, "
                        "(num_segments + 1,), np.int32, data=buffer))")
    host = np.asarray(segments)
    if not isinstance(segments, np.ndarray) and (host.dtype.kind in "iu" or host.size == 0):
        host = host.astype(np.int64)   # a sequence of Python ints
    _offset_type(host.dtype)
    if host.ndim != 1:
        raise ValueError(f"segments: expected a 1-D array of num_segments + 1 offsets, got shape "
                         f"{host.shape}")
    if host.size < 1:
        raise ValueError("segments: expected num_segments + 1 offsets (at least one), got an "
                         "empty array")
    if host[0] < 0 or host[-1] > n:
        raise ValueError(f"segments: offsets must lie in [0, n={n}], got first {host[0]} and last "
                         f"{host[-1]}")
    if host.size > 1:
        drop = np.flatnonzero(host[1:] < host[:-1])
        if drop.size:
            i = int(drop[0])
            raise ValueError(f"segments: offsets must be non-decreasing, but offsets[{i + 1}] = "
                             f"{host[i + 1]} < offsets[{i}] = {host[i]}")
    dev = cl_array.to_device(queue, np.ascontiguousarray(host))
    return Operand(dev.base_data, dev.offset // dev.dtype.itemsize, int(dev.size), dev.dtype,
                   None, []), int(host.size) - 1, False


def _offset_type(dtype):
    d = np.dtype(dtype)
    if d not in _OFFSET_TYPES:
        raise TypeError(f"segments: offsets must be int32 or int64, got {d}")
    return _OFFSET_TYPES[d]


# ------------------------------------------------------------------ entry points

def sort_segments(sorter, queue, codec, keys, vals, segments, *, descending, begin_bit, end_bit,
                  wait, allocator, argsort_out=None, check_offsets=False):
    """Sorter.sort (``keys`` in place, ``vals`` with them) or Sorter.argsort (``argsort_out``:
    the index Operand) of every segment; returns the event of the last command. ``keys``,
    ``vals``, ``argsort_out`` are checked Operands; ``wait`` the events to wait for."""
    n = keys.n
    seg, nseg, device_offsets = segment_offsets(segments, sorter.context, queue, n)
    wait = list(wait) + seg.events
    if argsort_out is not None:
        check_disjoint(argsort_out, seg, "out", "the segments")
    else:
        check_disjoint(keys, seg, "segments", "the keys")
        if vals is not None:
            check_disjoint(vals, seg, "segments", "the values")
    off_t = _offset_type(seg.dtype)
    job_vals = (None, None, 0)
    keys_out = None
    if argsort_out is not None:
        job_vals = (None, argsort_out.at(), argsort_out.dtype.itemsize)
    else:
        keys_out = keys.at()
        if vals is not None:
            job_vals = (vals.at(), vals.at(), vals.dtype.itemsize)
    # nothing to move (a call with nothing to sort does not check offsets on the device)
    if n == 0 or nseg == 0 or (argsort_out is None and (n <= 1 or begin_bit == end_bit)):
        return cl.enqueue_marker(queue, wait_for=wait or None)
    job = SegmentJob(n, begin_bit, end_bit, descending, keys.at(), keys_out, job_vals[0],
                     job_vals[1], job_vals[2], nseg, seg.at(), 0, device_offsets,
                     device_offsets and check_offsets)
    return _run(sorter, queue, codec, job, max(n, nseg + 1), off_t, wait, allocator)


def sort_rows(sorter, queue, codec, keys, rows, row_len, *, descending=False, argsort_out=None,
              wait=(), allocator=None):
    """clradix.sort / argsort of a C-contiguous 2-D array: ``keys`` (an Operand of rows x row_len
    keys) sorted in place, or with ``argsort_out`` (an Operand) the positions in each row."""
    n = rows * row_len
    if argsort_out is not None:
        vals = (None, argsort_out.at(), argsort_out.dtype.itemsize)
        keys_out = None
    else:
        vals = (None, None, 0)
        keys_out = keys.at()
        if row_len <= 1:
            return cl.enqueue_marker(queue, wait_for=list(wait) or None)
    if n == 0:
        return cl.enqueue_marker(queue, wait_for=list(wait) or None)
    job = SegmentJob(n, 0, codec.bits, descending, keys.at(), keys_out, vals[0], vals[1], vals[2],
                     rows, None, row_len)
    return _run(sorter, queue, codec, job, n, "int", list(wait), allocator)


def _run(sorter, queue, codec, job, size, off_t, wait, allocator):
    index_name, index_np = index_type(size)
    drv = planner_of(sorter).prepare(queue.device, codec, job.value_bytes, index_name, index_np,
                                     off_t)
    alloc = checked_allocator(queue, allocator or sorter.allocator, pools=sorter._pools)
    with sorter._lock:
        return drv.enqueue(queue, job, alloc, wait)
