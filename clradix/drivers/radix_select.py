"""The top-k driver: MSD radix select over (key, position) digits for every row at once
(cl_templates/radix_select.cl.mako, its threshold pass radix_select_threshold.cl.mako; their shared
steps radix_select_steps.mako), then the route's ordering of the selected keys.

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
passes (a row's finished passes return at once; ``plan.fused``: all of them in one launch of
topk_fused, its work-groups in pass order), then the route's ordering.
"""

from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

import numpy as np

from ..core.launches import Buf, LaunchSequence, Off, SortOperands, slots
from ..core.sizes import cl_index_name, round_up
from ..policies.topk import DIGIT_BITS, RADIX
from .base import Build, Driver

# Bytes of one row state (the template's STATE_BYTES; its row_state struct, at most 56 bytes, is
# checked against it when the program compiles).
STATE_BYTES = 64
# The parts of the one allocation start at multiples of 4 KiB (any element type, any vector load).
_ALIGN = 4096
# The operands' slots: the keys, the values and the indices handed back.
class TopkOperands(NamedTuple):
    """A top-k call's operands, (buffer, element offset) pairs: the keys' rows, and where the
    values and the indices (positions in their rows) go."""

    keys: Any
    values: Any
    indices: Any


KEYS, VALUES, INDICES = slots(TopkOperands)


@dataclass(frozen=True)
class TopkJob:
    """One top-k configuration as the driver sees it: the k largest (or smallest) of each of
    ``rows`` rows of ``row_len`` keys (slot KEYS) into the values (slot VALUES) and indices (slot
    INDICES), as ``plan`` says (its kernel parameters those the driver was built with);
    ``sorts``: the global route's prepared sorts (large sorted k; GlobalSorts)."""

    plan: Any
    rows: int
    row_len: int
    k: int
    largest: bool
    sorts: Optional[Any] = None


class RadixSelect(Driver):
    """Builds the top-k kernels of one TopkPlan's kernel parameters and makes TopkJobs ready
    (contract: base.py)."""

    template = "radix_select.cl.mako"
    Operands = TopkOperands
    #: the threshold pass's program (plan.sample): topk_sample and topk_pass_t
    threshold_template = "radix_select_threshold.cl.mako"

    def __init__(self, programs, device, plan, codec):
        self.codec = codec
        params = dict(codec.template_args(), index_t=plan.index_name,
                      out_index_t=cl_index_name(plan.out_index_np), idx_t=cl_index_name(plan.idx_np),
                      wg=plan.wg, ipt=plan.ipt, sort_size=plan.sort_size, sample=plan.sample,
                      digit_bits=DIGIT_BITS, state_bytes=STATE_BYTES,
                      ptx=plan.profile.has_ptx,
                      skip_idle_tiles=plan.profile.is_gpu, fused=plan.fused)
        # pass 0, pass 1 (their own kernels, p a constant) and every later pass (p its last
        # argument), from the program of sort size 0, whose kernels do not depend on k: each
        # local sort size (a power of two from k) is a program of the two kernels that sort in
        # local memory alone, so a new k builds only them; the threshold pass (plan.sample) is
        # a program of its own, which does not sort either
        select = ("topk_init", "topk_pass_0", "topk_pass_1", "topk_pass")
        select += ("topk_fused",) if plan.fused else ()
        unsorted = dict(params, sort_size=0)
        gather = ("topk_row_of", "topk_gather")
        if plan.sort_size:
            builds = [Build(self.template, dict(unsorted, passes=True), (), select, gather),
                      Build(self.template, dict(params, passes=False), (),
                            ("topk_single", "topk_sort_rows"))]
        else:
            builds = [Build(self.template, dict(unsorted, passes=True), (),
                            select + ("topk_single",), gather)]
        if plan.sample:
            builds.append(Build(self.threshold_template, unsorted, (),
                                ("topk_pass_t", "topk_sample")))
        super().__init__(programs, device, plan.profile, plan.wg, builds)

    @classmethod
    def temp_bytes(cls, plan, codec, rows, k):
        """Bytes a call asks its allocator for (the global route's sorts' own aside)."""
        block, apart = _temp_sizes(plan, codec, rows, k)
        return (carve_offsets(block)[1] if block else 0) + sum(max(n, 1) for n in apart)

    def sequence(self, job):
        """The ready launch sequence of a TopkJob."""
        seq = LaunchSequence(self)
        plan = job.plan
        flip = self.codec.flip(job.largest)
        keys = (Buf(KEYS), Off(KEYS))
        values, indices = (Buf(VALUES), Off(VALUES)), (Buf(INDICES), Off(INDICES))
        if plan.single:   # one launch, no temporaries
            seq.launch("topk_single", "topk_single", (job.rows * plan.wg,), (plan.wg,),
                       [*keys, job.row_len, job.k, plan.pos_bits, plan.digits, flip, *values,
                        *indices])
            return seq
        # the selection's temporaries: one allocation, each part at an offset the kernels take
        # (no sub-buffers); the global route's sort operands are allocations of their own
        parts, apart = _temp_parts(plan, self.codec, job.rows, job.k)
        offsets, total = carve_offsets([size for _, size in parts])
        off = {name: at for (name, _), at in zip(parts, offsets)}
        block = seq.temp(total)[0]
        own = [seq.temp(n)[0] for n in apart]
        seq.launch("topk_init", "topk_init", (job.rows * plan.wg,), (plan.wg,),
                   [block, off["state"], off["hist"], off["counters"], job.rows, job.k,
                    job.row_len, off["sync"]])
        if plan.route == "direct":
            sel = [*values, *indices]
        elif plan.route == "local":
            sel = [block, off["sel_key"] // self.codec.itemsize, block,
                   off["sel_idx"] // np.dtype(plan.out_index_np).itemsize]
        else:
            sel = [own[0], 0, own[1], 0]
        self._passes(seq, job, keys, block, off, sel, flip)
        if plan.route == "local":
            seq.launch("topk_sort_rows", "topk_sort_rows", (job.rows * plan.wg,), (plan.wg,),
                       [*sel, job.k, flip, *values, *indices])
        elif plan.route == "global":
            self._global_sort(seq, job, keys, values, indices, own)
        return seq

    def _passes(self, seq, job, keys, block, off, sel, flip):
        """The digit passes: pass p classifies by digit p - 1 and counts digit p; the last
        work-group of a row to finish a pass picks the next pivot (every pass after the last
        digit only writes)."""
        plan = job.plan
        row_mul = job.row_len if plan.route == "global" else 0
        args = [*keys, job.row_len, job.k, plan.cap, plan.pos_bits, plan.groups, flip, row_mul,
                block, off["state"], off["hist"], off["counters"],
                *(off[name] for name in CANDIDATES), *sel]
        gsize, lsize = (plan.groups * plan.wg, job.rows), (plan.wg, 1)
        if plan.sample:   # the row's threshold, then one read of the row for the candidates
            seq.launch("topk_sample", "topk_sample", (job.rows * plan.wg,), (plan.wg,),
                       [*keys, job.row_len, job.k, flip, plan.sample_rank, block, off["state"]])
            seq.launch("topk_pass_t", "topk_pass_t", gsize, lsize, args + [plan.sample_chunk])
        if plan.fused:   # every pass in one launch, work-groups in pass order
            groups = (plan.digits + 1) * job.rows * plan.groups
            seq.launch("topk_fused", "topk_fused", (groups * plan.wg,), (plan.wg,),
                       args + [job.rows, off["sync"]])
            return
        for p in range(plan.digits + 1):
            name = ("topk_pass_0", "topk_pass_1")[p] if p < 2 else "topk_pass"
            seq.launch(f"topk_pass {p}", name, gsize, lsize, args + [p])

    def _global_sort(self, seq, job, keys, values, indices, own):
        """Sorted results for large k: stable sorts by batch index, then key, then row (the
        job's prepared sorts, each in place on its keys with the other buffer as its values),
        then the gather into the outputs."""
        m, sorts = job.rows * job.k, job.sorts
        sel_key, gidx = int(own[0]), int(own[1])
        row_of = int(own[2]) if job.rows > 1 else None

        def in_place(sort, keys_slot, values_slot, queue, objs, alloc, wait):
            keys_at, values_at = (objs[keys_slot], 0), (objs[values_slot], 0)
            return sort.run(queue, SortOperands(keys_at, keys_at, values_at, values_at), alloc,
                            wait)

        def by_index_then_key(queue, objs, offsets, alloc, wait):
            evt = in_place(sorts.by_index, gidx, sel_key, queue, objs, alloc, wait)
            return in_place(sorts.by_key, sel_key, gidx, queue, objs, alloc, [evt])

        seq.call("sort by index, then key", by_index_then_key)
        size = (round_up(m, 256),)
        if row_of is not None:
            seq.launch("topk_row_of", "topk_row_of", size, None,
                       [own[1], own[2], m, job.row_len])
            seq.call("sort by row", lambda queue, objs, offsets, alloc, wait:
                     in_place(sorts.by_row, row_of, gidx, queue, objs, alloc, wait))
        seq.launch("topk_gather", "topk_gather", size, None,
                   [*keys, own[1], m, job.row_len, *values, *indices])


class GlobalSorts(NamedTuple):
    """The global route's prepared sorts (planning's Prepared: ``run(queue, buffers, offsets,
    alloc, wait)``): by index in the batch, by key, and by row (None for one row)."""

    by_index: Any
    by_key: Any
    by_row: Any


def global_sorts(codec, rows, row_len, gd):
    """(key dtype, value dtype, end_bit) of the global route's sorts, in order: by index in the
    batch, by key, and (several rows) by row."""
    sorts = [(np.dtype(gd), codec.dtype, max(rows * row_len - 1, 1).bit_length()),
             (codec.dtype, np.dtype(gd), None)]
    if rows > 1:
        sorts.append((np.dtype(np.uint32), np.dtype(gd), max(rows - 1, 1).bit_length()))
    return sorts


# The candidate buffers' parts, in the order the pass kernels take their offsets.
CANDIDATES = ("cand_key0", "cand_pos0", "cand_key1", "cand_pos1")


def _temp_parts(plan, codec, rows, k):
    """The temporaries of a call: ``([(name, bytes) of each part of the one allocation],
    [bytes of each allocation of its own])``. The parts: two row states per row (``state``),
    four counters per row (``counters``: output slots, candidate slots of even and odd passes,
    groups done with the pass), the histograms (``hist``), two candidate buffers (CANDIDATES), on
    the local route the selected keys and indices (``sel_key``, ``sel_idx``), and the words of
    topk_fused (``sync``: its virtual-id counter and each row's passes ready; zeroed by
    topk_init, present on every route). The global route's selected keys and indices (and, for
    several rows, each one's row) are sort operands: allocations of their own. Nothing on the
    one-launch route."""
    if plan.single:
        return [], []
    ib, kb, cap, m = plan.index_bytes, codec.itemsize, plan.cap, rows * k
    parts = [("state", 2 * rows * STATE_BYTES), ("counters", 4 * rows * ib),
             ("hist", rows * RADIX * ib)]
    parts += [(name, rows * cap * (kb if "key" in name else ib)) for name in CANDIDATES]
    sel = [m * kb, m * np.dtype(plan.out_index_np).itemsize]
    if plan.route == "local":
        parts += [("sel_key", sel[0]), ("sel_idx", sel[1])]
    parts.append(("sync", (1 + rows) * 4))
    apart = sel + ([m * 4] if rows > 1 else []) if plan.route == "global" else []
    return parts, apart


def _temp_sizes(plan, codec, rows, k):
    """``(bytes of each part of the one allocation, in _temp_parts' order, bytes of each
    allocation of its own)`` of a call."""
    parts, apart = _temp_parts(plan, codec, rows, k)
    return [size for _, size in parts], apart


def carve_offsets(sizes):
    """(byte offset of each part, total bytes): parts aligned to 4 KiB, so that every element
    type's pointer at an offset is aligned."""
    offsets, total = [], 0
    for size in sizes:
        offsets.append(total)
        total += round_up(max(size, 1), _ALIGN)
    return offsets, total
