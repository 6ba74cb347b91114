"""The top-k driver: MSD radix select over (key, position) digits for every row at once
(cl_templates/radix_select.cl.mako), then the route's ordering of the selected keys.

Rows up to the policy's ``single_max`` (sorted k up to the local sort) take one launch of
``topk_single`` and no temporary memory. Otherwise, per call (``RadixSelect.temp_bytes``, exactly
what a call asks its allocator for, the radix sorts' own aside): one allocation (its parts at
byte offsets the kernels take: no sub-buffers) of two candidate buffers of ``cap`` keys and
positions per row, cap = min(row_len, max(row_len // 32, 1024)) unless the policy's
``cand_cap`` says otherwise (about 1/8 of the input for 32-bit keys, 16 bytes x 2048 per row for
short rows), a 2048-counter histogram, four counters and two row states per row, and for sorted
results k keys and indices per row (each part aligned to 4 KiB; on the global route those are
allocations of their own, the radix sorts' operands). The launches: topk_init, with the plan's
threshold pass (``plan.sample``) topk_sample and topk_pass_t (a program of their own), digits + 1
passes (a row's finished passes return at once), then the route's ordering.
"""

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pyopencl as cl

from .arguments import Operand
from .driver import Driver, WorkGroupLimitError, kernel_wg_limit
from .sizes import cl_index_name, round_up
from .topk_policy import RADIX, warp_aggregate

STATE_BYTES = 64  # sizeof(row_state) is at most 56
# The parts of the one allocation start at multiples of 4 KiB (any element type, any vector load).
_ALIGN = 4096


@dataclass
class TopkJob:
    """One top-k call as the driver sees it: the k largest (or smallest) of each of ``rows`` rows
    of ``row_len`` keys of ``keys``, into the Arrays ``values`` and ``indices``, as ``plan`` says
    (its kernel parameters those the driver was built with); ``sorter`` sorts on the global route
    (large sorted k)."""

    plan: Any
    keys: Operand
    rows: int
    row_len: int
    k: int
    largest: bool
    values: Any
    indices: Any
    sorter: Optional[Any] = None


class RadixSelect(Driver):
    """Builds the top-k kernels of one TopkPlan's kernel parameters and enqueues TopkJobs
    (contract: driver.py)."""

    template = "radix_select.cl.mako"

    def __init__(self, programs, device, plan, codec):
        self.codec = codec
        params = dict(codec.template_args(), index_t=plan.index_name,
                      out_index_t=cl_index_name(plan.out_index_np), idx_t=cl_index_name(plan.idx_np),
                      wg=plan.wg, ipt=plan.ipt, sort_size=plan.sort_size, sample=plan.sample,
                      part="select",
                      warp_aggregate=warp_aggregate(plan.profile),
                      skip_idle_tiles=plan.profile.is_gpu)
        prg = programs.get(self.template, params)
        uint, ulong, idx = np.uint32, np.uint64, plan.index_np
        key_np, out_np = codec.unsigned_dtype.type, plan.out_index_np
        self.init = cl.Kernel(prg, "topk_init")
        self.init.set_scalar_arg_dtypes([None, ulong, ulong, ulong, uint, idx, idx])
        # pass 0, pass 1 (their own kernels, p a constant) and every later pass (p its last
        # argument): every other argument is the same for each pass of a call
        self.passes = [cl.Kernel(prg, name) for name in ("topk_pass_0", "topk_pass_1", "topk_pass")]
        launched = [("topk_pass", knl) for knl in self.passes]
        # the threshold pass (plan.sample), a program of its own: the sample kernel, and a pass
        # kernel (the passes' arguments) run before pass 0
        self.sample = self.threshold = None
        if plan.sample:
            prg_t = programs.get(self.template, dict(params, part="threshold"))
            self.sample = cl.Kernel(prg_t, "topk_sample")
            self.sample.set_scalar_arg_dtypes([None, ulong, idx, idx, key_np, uint, None, ulong])
            self.threshold = cl.Kernel(prg_t, "topk_pass_t")
            launched += [("topk_pass_t", self.threshold), ("topk_sample", self.sample)]
        for knl in self.passes + ([self.threshold] if self.threshold is not None else []):
            knl.set_scalar_arg_dtypes([None, ulong, idx, idx, idx, uint, uint, key_np, out_np]
                                      + [None] + [ulong] * 7 + [None, ulong, None, ulong, uint])
        self.single = cl.Kernel(prg, "topk_single")
        self.single.set_scalar_arg_dtypes([None, ulong, idx, idx, uint, uint, key_np, None, ulong,
                                           None, ulong])
        launched.append(("topk_single", self.single))
        if plan.sort_size:
            self.sort_rows = cl.Kernel(prg, "topk_sort_rows")
            self.sort_rows.set_scalar_arg_dtypes([None, ulong, None, ulong, idx, key_np, None,
                                                  ulong, None, ulong])
            launched.append(("topk_sort_rows", self.sort_rows))
        self.row_of = cl.Kernel(prg, "topk_row_of")
        self.row_of.set_scalar_arg_dtypes([None, None, ulong, out_np])
        self.gather = cl.Kernel(prg, "topk_gather")
        self.gather.set_scalar_arg_dtypes([None, ulong, None, ulong, out_np, None, ulong, None,
                                           ulong])
        _check_work_groups(launched, device, plan.wg)

    @classmethod
    def temp_bytes(cls, plan, codec, rows, k):
        """Bytes a call asks its allocator for (the global route's sorts' own aside)."""
        block, apart = _temp_sizes(plan, codec, rows, k)
        return (_carve_offsets(block)[1] if block else 0) + sum(max(n, 1) for n in apart)

    def enqueue(self, queue, job, alloc, wait):
        plan = job.plan
        flip = self.codec.flip(job.largest)
        if plan.single:   # one launch, no temporaries
            return self._traced("topk_single", self.single(
                queue, (job.rows * plan.wg,), (plan.wg,), job.keys.buffer, job.keys.offset,
                plan.index_np(job.row_len), plan.index_np(job.k), plan.pos_bits, plan.digits,
                flip, *_at(job.values), *_at(job.indices), wait_for=wait or None))
        # the selection's temporaries: one allocation, each part at an offset the kernels take
        # (no sub-buffers); the global route's sort operands are allocations of their own
        sizes, apart = _temp_sizes(plan, self.codec, job.rows, job.k)
        off, total = _carve_offsets(sizes)
        block = alloc(total)
        own = [alloc(max(n, 1)) for n in apart]
        evt = self._traced("topk_init", self.init(
            queue, (job.rows * plan.wg,), (plan.wg,), block, off[0], off[1], off[2],
            np.uint32(job.rows), plan.index_np(job.k), plan.index_np(job.row_len),
            wait_for=wait or None))
        if plan.route == "direct":
            sel = (*_at(job.values), *_at(job.indices))
        elif plan.route == "local":
            sel = (block, off[7] // self.codec.itemsize, block,
                   off[8] // np.dtype(plan.out_index_np).itemsize)
        else:
            sel = (own[0], 0, own[1], 0)
        evt = self._passes(queue, job, block, off, sel, flip, evt)
        if plan.route == "local":
            evt = self._traced("topk_sort_rows", self.sort_rows(
                queue, (job.rows * plan.wg,), (plan.wg,), *sel, plan.index_np(job.k), flip,
                *_at(job.values), *_at(job.indices), wait_for=[evt]))
        elif plan.route == "global":
            evt = self._global_sort(queue, job, own[0], own[1], own[2] if job.rows > 1 else None,
                                    alloc, evt)
        del block, own   # (a pool's blocks go back to its pool: for later commands of this queue)
        return evt

    def _passes(self, queue, job, block, off, sel, flip, evt):
        """The digit passes: pass p classifies by digit p - 1 and counts digit p; the last
        work-group of a row to finish a pass picks the next pivot (every pass after the last
        digit only writes). The arguments are set once per kernel; the general pass kernel's p
        (its last argument) once per pass."""
        plan = job.plan
        row_mul = job.row_len if plan.route == "global" else 0
        ix = plan.index_np
        args = (job.keys.buffer, job.keys.offset, ix(job.row_len), ix(job.k), ix(plan.cap),
                plan.pos_bits, plan.groups, flip, row_mul, block, off[0], off[2], off[1],
                *off[3:7], *sel)
        gsize, lsize = (plan.groups * plan.wg, job.rows), (plan.wg, 1)
        if plan.sample:   # the row's threshold, then one read of the row for the candidates
            evt = self._traced("topk_sample", self.sample(
                queue, (job.rows * plan.wg,), (plan.wg,), job.keys.buffer, job.keys.offset,
                ix(job.row_len), ix(job.k), flip, np.uint32(plan.sample_rank), block, off[0],
                wait_for=[evt]))
            self.threshold.set_args(*args, np.uint32(plan.sample_chunk))   # (in p's place)
            evt = self._traced("topk_pass_t", cl.enqueue_nd_range_kernel(
                queue, self.threshold, gsize, lsize, wait_for=[evt]))
        for p in range(plan.digits + 1):
            knl = self.passes[min(p, 2)]
            if p <= 2:
                knl.set_args(*args, p)
            else:
                knl.set_arg(len(args), np.uint32(p))
            evt = self._traced(f"topk_pass {p}", cl.enqueue_nd_range_kernel(
                queue, knl, gsize, lsize, wait_for=[evt]))
        return evt

    def _global_sort(self, queue, job, sel_key, gidx, row_of, alloc, evt):
        """Sorted results for large k: stable sorts by batch index, then key, then row."""
        sorter, m, codec = job.sorter, job.rows * job.k, self.codec
        gd = np.dtype(job.plan.out_index_np)
        (_, _, g_bits), _, *row_sort = global_sorts(codec, job.rows, job.row_len, gd)
        evt = sorter.sort(queue, gidx, dtype=gd, n=m, values=sel_key, value_dtype=codec.dtype,
                          end_bit=g_bits, wait_for=[evt], allocator=alloc)
        evt = sorter.sort(queue, sel_key, dtype=codec.dtype, n=m, values=gidx, value_dtype=gd,
                          descending=job.largest, wait_for=[evt], allocator=alloc)
        size = (round_up(m, 256),)
        if row_sort:
            evt = self._traced("topk_row_of", self.row_of(
                queue, size, None, gidx, row_of, np.uint64(m), gd.type(job.row_len),
                wait_for=[evt]))
            evt = sorter.sort(queue, row_of, dtype=np.uint32, n=m, values=gidx, value_dtype=gd,
                              end_bit=row_sort[0][2], wait_for=[evt], allocator=alloc)
        return self._traced("topk_gather", self.gather(
            queue, size, None, job.keys.buffer, job.keys.offset, gidx, np.uint64(m),
            gd.type(job.row_len), *_at(job.values), *_at(job.indices), wait_for=[evt]))


def global_sorts(codec, rows, row_len, gd):
    """(key dtype, value dtype, end_bit) of the global route's sorts, in order: by index in the
    batch, by key, and (several rows) by row."""
    sorts = [(np.dtype(gd), codec.dtype, max(rows * row_len - 1, 1).bit_length()),
             (codec.dtype, np.dtype(gd), None)]
    if rows > 1:
        sorts.append((np.dtype(np.uint32), np.dtype(gd), max(rows - 1, 1).bit_length()))
    return sorts


def _at(array):
    """(buffer, element offset) of a pyopencl Array, as the kernels take it."""
    return array.base_data, array.offset // array.dtype.itemsize


def _check_work_groups(kernels, device, wg):
    """WorkGroupLimitError unless the kernels ((name, Kernel) pairs) launched with wg work-items
    per group run that many and fit the local memory on ``device``."""
    for name, knl in kernels:
        limit = kernel_wg_limit(knl, device)
        local = knl.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, device)
        if limit < wg or local > device.local_mem_size:
            raise WorkGroupLimitError(
                f"wg_size={wg}: {name} runs at most {limit} work-items per group and needs "
                f"{local} bytes of local memory on {device.name.strip()} (which has "
                f"{device.local_mem_size}); use a Selector with a smaller wg_size",
                name, limit, wg)


def _temp_sizes(plan, codec, rows, k):
    """Bytes of the temporaries of a call: ``(parts of the one allocation, in the kernels'
    order, allocations of their own)``. The parts: two row states per row, four counters per
    row (output slots, candidate slots of even and odd passes, groups done with the pass), the
    histograms, two candidate buffers (keys, positions; keys, positions), and on the local route
    the selected keys and indices. The global route's selected keys and indices (and, for
    several rows, each one's row) are sort operands: allocations of their own. Nothing on the
    one-launch route."""
    if plan.single:
        return [], []
    ib, kb, cap, m = plan.index_bytes, codec.itemsize, plan.cap, rows * k
    sizes = ([2 * rows * STATE_BYTES, 4 * rows * ib, rows * RADIX * ib]
             + [rows * cap * kb, rows * cap * ib] * 2)
    sel = [m * kb, m * np.dtype(plan.out_index_np).itemsize]
    if plan.route == "local":
        return sizes + sel, []
    if plan.route == "global":
        return sizes, sel + ([m * 4] if rows > 1 else [])
    return sizes, []


def _carve_offsets(sizes):
    """(byte offset of each part, total bytes): parts aligned to 4 KiB, so that every element
    type's pointer at an offset is aligned."""
    offsets, total = [], 0
    for size in sizes:
        offsets.append(total)
        total += round_up(max(size, 1), _ALIGN)
    return offsets, total
