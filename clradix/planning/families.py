"""The kernel families of a context (the permutations, the layout copies, searchsorted, the runs
of equal keys) on the one launch path: each call becomes a job of its family's driver
(drivers/elementwise.py), which the context's :class:`~clradix.planning.planner.Planner`
plans (the family's policy for the device: policies.families), builds and makes ready once per
call configuration; a call then runs the ready sequence with its operands.

One :class:`Families` per context (:func:`families_for`), shared by every thread: the planner's
lock guards its caches and the kernels' arguments while a sequence is enqueued."""

import threading
import weakref

import numpy as np
import pyopencl as cl

from ..core.keys import KeyCodec
from ..core.render import programs_for
from ..core.sizes import index_type
from ..drivers.elementwise import index_cl
from ..drivers.layout import Layout, LayoutOperands, WidenJob, gather_job
from ..drivers.permute import IotaJob, Permute, PermuteOperands, TakeJob, word_of
from ..drivers.runs import Runs, RunsJob, RunsOperands
from ..drivers.search import Search, SearchJob, SearchOperands
from .planner import Planner


class RunsCall:
    """One run-length encoding made ready (:meth:`Families.runs`): the per-block count table's
    ``blocks`` entries of ``table_dtype`` (``table_bytes`` in all, each block's count of run
    starts, then its last start), :meth:`count`, then :meth:`write` with the number of runs."""

    __slots__ = ("blocks", "table_dtype", "_count", "_write")

    def __init__(self, count, write, blocks, table_dtype):
        self._count, self._write = count, write
        self.blocks, self.table_dtype = blocks, table_dtype

    @property
    def table_bytes(self):
        """Bytes of the count table: each block's count of run starts, then its last start."""
        return 2 * self.blocks * self.table_dtype.itemsize

    def count(self, queue, keys, table, wait):
        """Enqueue the count of the run starts of the keys (``keys``: (buffer, element offset))
        per block into ``table`` (a buffer of ``table_bytes``); the event. Then the sum of its
        first ``blocks`` entries is the number of runs."""
        return self._count.run(queue, RunsOperands(keys, (table, 0)), None, wait)

    def write(self, queue, keys, table, m, values, starts, lengths, perm, index, inverse,
              wait):
        """Enqueue runs_write after :meth:`count` for the ``m`` runs: ``values`` and, as the
        call was prepared, ``starts``, ``lengths`` and with a permutation ``perm``, ``index``
        and ``inverse`` ((buffer, element offset) each, None where not written); the event."""
        return self._write.run(queue, RunsOperands(keys, (table, 0), values, starts, lengths,
                                                   perm, index, inverse), None, wait,
                               scalars=(m,))


class Families:
    """The kernel families of one context. ``policies`` maps a family's name ("permute",
    "layout", "search", "runs") to a policy given instead of the device's (tests and
    benchmarks set it; a call made ready with another policy is not reused)."""

    def __init__(self, context) -> None:
        #: plans, builds and makes ready every family's jobs on the context
        self.planner = Planner(programs_for(context), {})
        self.policies: dict = {}

    def work(self, device, cls, job):
        """The Prepared of ``job`` of family driver ``cls`` on ``device``."""
        return self.planner.family_work(device, cls, job, self.policies.get(cls.family))

    def search(self, queue, codec: KeyCodec, sorted_, row_len, row_stride, values, per_row,
               total, sorter, out, out_dtype, right, wait):
        """Enqueue the insertion points of ``total`` values (``values``: (buffer, element
        offset)), value i in row i // per_row of ``sorted_`` ((buffer, element offset); rows of
        ``row_len`` keys, ``row_stride`` apart, 0 for one row), into ``out`` ((buffer, element
        offset) of ``out_dtype``); ``sorter`` None or (buffer, element offset, dtype); the
        event."""
        job = SearchJob(codec, index_type(row_len + 1)[0], index_cl(out_dtype),
                        None if sorter is None else index_cl(sorter[2]), int(row_len),
                        int(row_stride), int(per_row), int(total), bool(right))
        return self.work(queue.device, Search, job).run(
            queue, SearchOperands(sorted_, values, None if sorter is None else sorter[:2], out),
            None, wait)

    def runs(self, queue, codec: KeyCodec, n, out_dtype, perm_dtype, starts, lengths,
             nan_distinct):
        """The :class:`RunsCall` of ``n`` >= 1 keys of ``codec``'s dtype on ``queue``'s device,
        writing results of ``out_dtype`` (and the ``starts`` and ``lengths`` of the runs as
        asked), with a permutation of ``perm_dtype`` (None: none); NaN each a run of its own
        with ``nan_distinct``."""
        index_t, index_np = index_type(n + 1)
        job = RunsJob(codec, index_t, index_cl(out_dtype),
                      None if perm_dtype is None else index_cl(perm_dtype), bool(starts),
                      bool(lengths), int(n), bool(nan_distinct))
        device = queue.device
        count = self.work(device, Runs, job)
        blocks, _ = count.driver.grid(job.n)
        return RunsCall(count, self.work(device, Runs, job._replace(write=True)), blocks,
                        np.dtype(index_np))

    def take(self, queue, src, src_byte_off, idx, idx_off, idx_dtype, dst, dst_byte_off, n,
             limit, record_bytes, wait):
        """Enqueue: record i of ``dst`` (from byte ``dst_byte_off``) = record ``idx[idx_off +
        i]`` of ``src`` (from byte ``src_byte_off``; ``limit`` records), records of
        ``record_bytes`` bytes, for i < n; the event. ``idx`` holds unsigned (or non-negative)
        integers of ``idx_dtype``'s width."""
        width, word_t = word_of(record_bytes, src_byte_off, dst_byte_off)
        job = TakeJob(word_t, index_cl(idx_dtype), int(n), int(limit), record_bytes // width)
        return self.work(queue.device, Permute, job).run(
            queue, PermuteOperands((src, src_byte_off // width), (idx, idx_off),
                                   (dst, dst_byte_off // width)), None, wait)

    def iota(self, queue, dst, dst_off, n, idx_dtype, wait):
        """Enqueue dst[dst_off + i] = i for i < n (``idx_dtype``: uint32 or uint64); the
        event."""
        return self.work(queue.device, Permute, IotaJob(index_cl(idx_dtype), int(n))).run(
            queue, PermuteOperands(None, None, (dst, dst_off)), None, wait)

    def gather(self, queue, src, src_off, shape, strides, dst, dst_off, itemsize, wait=None):
        """Enqueue dst[dst_off:dst_off + prod(shape)] = the view (``src``, element offset
        ``src_off``, ``shape``, ``strides`` in elements) in C order; the event. ValueError for a
        view of more than MAX_DIMS axes once merged, or elements of another width than 1, 2, 4
        or 8 bytes."""
        n = 1
        for s in shape:
            n *= int(s)
        if n == 0:
            return cl.enqueue_marker(queue, wait_for=list(wait or ()) or None)
        job = gather_job(shape, strides, itemsize, n)
        return self.work(queue.device, Layout, job).run(
            queue, LayoutOperands((src, src_off), (dst, dst_off)), None, wait)

    def widen(self, queue, src, dst, dst_off, n, wait=None):
        """Enqueue dst[dst_off:dst_off + n] = the n uint32 of ``src`` as uint64; the event."""
        return self.work(queue.device, Layout, WidenJob(int(n))).run(
            queue, LayoutOperands((src, 0), (dst, dst_off)), None, wait)


# Per context, held weakly and under a lock, as core.render's program caches are.
_families: "weakref.WeakKeyDictionary[cl.Context, Families]" = weakref.WeakKeyDictionary()
_families_lock = threading.Lock()


def families_for(context):
    """The :class:`Families` of ``context``, shared by every caller on it."""
    with _families_lock:
        found = _families.get(context)
        if found is None:
            found = _families[context] = Families(context)
        return found


__all__ = ["Families", "RunsCall", "families_for"]
