"""The top-k driver: MSD radix select over (key, position) digits for every row at once
(cl_templates/radix_select.cl.mako), then the route's ordering of the selected keys.

Rows up to the policy's ``single_max`` (sorted k up to the local sort) take one launch of
``topk_single`` and no temporary memory. Otherwise, per call (``RadixSelect.temp_bytes``, exactly
what a call asks its allocator for, the radix sorts' own aside): one allocation, split into
sub-buffers, of two candidate buffers of ``cap`` keys and positions per row, cap = min(row_len,
max(row_len // 32, 1024)) unless the policy's ``cand_cap`` says otherwise (about 1/8 of the input
for 32-bit keys, 16 bytes x 2048 per row for short rows), a 2048-counter histogram, four counters
and a row state per row, and for sorted results k keys and indices per row (each part aligned to
4 KiB). The launches: topk_init, digits + 1 passes (a row's finished passes return at once),
then the route's ordering.
"""

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pyopencl as cl

from .arguments import Operand
from .driver import Driver, WorkGroupLimitError, kernel_wg_limit
from .sizes import cl_index_name, round_up
from .topk_policy import RADIX

STATE_BYTES = 64  # sizeof(row_state) is at most 56
# Sub-buffer origins must be aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN (at most 4096 bits on the
# devices here; 4096 bytes covers any).
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
                      wg=plan.wg, ipt=plan.ipt, sort_size=plan.sort_size,
                      warp_aggregate=plan.profile.is_nvidia and plan.profile.is_gpu)
        prg = programs.get(self.template, params)
        uint, ulong, idx = np.uint32, np.uint64, plan.index_np
        key_np, out_np = codec.unsigned_dtype.type, plan.out_index_np
        self.init = cl.Kernel(prg, "topk_init")
        self.init.set_scalar_arg_dtypes([None, None, None, uint, idx, idx])
        # pass 0, pass 1 (their own kernels, p a constant) and every later pass (p its last
        # argument): every other argument is the same for each pass of a call
        self.passes = [cl.Kernel(prg, name) for name in ("topk_pass_0", "topk_pass_1", "topk_pass")]
        for knl in self.passes:
            knl.set_scalar_arg_dtypes([None, ulong, idx, idx, idx, uint, uint, key_np, out_np]
                                      + [None] * 7 + [None, ulong, None, ulong, uint])
        self.single = cl.Kernel(prg, "topk_single")
        self.single.set_scalar_arg_dtypes([None, ulong, idx, idx, uint, uint, key_np, None, ulong,
                                           None, ulong])
        launched = [("topk_pass", knl) for knl in self.passes] + [("topk_single", self.single)]
        if plan.sort_size:
            self.sort_rows = cl.Kernel(prg, "topk_sort_rows")
            self.sort_rows.set_scalar_arg_dtypes([None, None, idx, key_np, None, ulong, None, ulong])
            launched.append(("topk_sort_rows", self.sort_rows))
        self.row_of = cl.Kernel(prg, "topk_row_of")
        self.row_of.set_scalar_arg_dtypes([None, None, ulong, out_np])
        self.gather = cl.Kernel(prg, "topk_gather")
        self.gather.set_scalar_arg_dtypes([None, ulong, None, ulong, out_np, None, ulong, None,
                                           ulong])
        _check_work_groups(launched, device, plan.wg)

    @classmethod
    def temp_bytes(cls, plan, codec, rows, k):
        """Bytes of the one allocation a call carves (the global route's sorts' own aside)."""
        sizes = _temp_sizes(plan, codec, rows, k)
        return _carve_offsets(sizes)[1] if sizes else 0

    def enqueue(self, queue, job, alloc, wait):
        plan = job.plan
        flip = self.codec.flip(job.largest)
        if plan.single:   # one launch, no temporaries
            return self._traced("topk_single", self.single(
                queue, (job.rows * plan.wg,), (plan.wg,), job.keys.buffer, job.keys.offset,
                plan.index_np(job.row_len), plan.index_np(job.k), plan.pos_bits, plan.digits,
                flip, *_at(job.values), *_at(job.indices), wait_for=wait or None))
        # every temporary of the call but the sorts' own: one allocation (_carve)
        block, parts = _carve(alloc, _temp_sizes(plan, self.codec, job.rows, job.k))
        state, counters, hist, cands = parts[0], parts[1], parts[2], parts[3:7]
        sel = self._selection(job, parts[7:9])
        evt = self._traced("topk_init", self.init(
            queue, (job.rows * plan.wg,), (plan.wg,), state, counters, hist, np.uint32(job.rows),
            plan.index_np(job.k), plan.index_np(job.row_len), wait_for=wait or None))
        evt = self._passes(queue, job, state, counters, hist, cands, sel, flip, evt)
        if plan.route == "local":
            evt = self._traced("topk_sort_rows", self.sort_rows(
                queue, (job.rows * plan.wg,), (plan.wg,), sel[0], sel[2], plan.index_np(job.k),
                flip, *_at(job.values), *_at(job.indices), wait_for=[evt]))
        elif plan.route == "global":
            evt = self._global_sort(queue, job, sel[0], sel[2], parts[9] if job.rows > 1 else None,
                                    alloc, evt)
        del block   # (a pool's block goes back to its pool: for later commands of this queue)
        return evt

    def _selection(self, job, parts):
        """(keys, key offset, indices, index offset) the passes write the selected elements to:
        the outputs themselves (direct route), or temporaries that the route then orders."""
        if job.plan.route == "direct":
            return (*_at(job.values), *_at(job.indices))
        return parts[0], 0, parts[1], 0

    def _passes(self, queue, job, state, counters, hist, cands, sel, flip, evt):
        """The digit passes: pass p classifies by digit p - 1 and counts digit p; the last
        work-group of a row to finish a pass picks the next pivot (every pass after the last
        digit only writes). The arguments are set once per kernel; the general pass kernel's p
        (its last argument) once per pass."""
        plan = job.plan
        row_mul = job.row_len if plan.route == "global" else 0
        ix = plan.index_np
        args = (job.keys.buffer, job.keys.offset, ix(job.row_len), ix(job.k), ix(plan.cap),
                plan.pos_bits, plan.groups, flip, row_mul, state, hist, counters, *cands, *sel)
        gsize, lsize = (plan.groups * plan.wg, job.rows), (plan.wg, 1)
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
    """Bytes of each temporary a call carves from its one allocation, in enqueue's order: the row
    states, four counters per row (output slots, candidate slots of even and odd passes, groups
    done with the pass), the histograms, two candidate buffers (keys, positions; keys,
    positions); then for sorted results the selected keys and indices, and for the global route
    of several rows each selected element's row. None on the one-launch route."""
    if plan.single:
        return []
    ib, kb, cap = plan.index_bytes, codec.itemsize, plan.cap
    sizes = ([rows * STATE_BYTES, 4 * rows * ib, rows * RADIX * ib]
             + [rows * cap * kb, rows * cap * ib] * 2)
    m = rows * k
    if plan.route != "direct":
        sizes += [m * kb, m * np.dtype(plan.out_index_np).itemsize]
    if plan.route == "global" and rows > 1:
        sizes.append(m * 4)
    return sizes


def _carve_offsets(sizes):
    offsets, total = [], 0
    for size in sizes:
        offsets.append(total)
        total += round_up(max(size, 1), _ALIGN)
    return offsets, total


def _carve(alloc, sizes):
    """One allocation split into sub-buffers of ``sizes`` bytes (allocating is the costly part,
    and a pool then holds one block per call): ``(block, parts)``; keep ``block`` while the parts
    are in use. The block may be a Buffer or a pool's PooledBuffer. An allocator that hands out
    sub-buffers gets one request per part instead: sub-buffers carved from the memory object
    beneath such a block crashed NVIDIA's OpenCL driver (580.159) in a later launch."""
    offsets, total = _carve_offsets(sizes)
    block = alloc(total)
    if block.get_info(cl.mem_info.ASSOCIATED_MEMOBJECT) is not None:
        del block
        return None, [alloc(max(size, 1)) for size in sizes]
    root = block if isinstance(block, cl.Buffer) else \
        cl.Buffer.from_int_ptr(block.int_ptr, retain=True)   # a PooledBuffer's memory object
    return block, [root.get_sub_region(off, max(size, 1)) for off, size in zip(offsets, sizes)]
