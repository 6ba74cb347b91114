"""Runs of equal keys (cl_templates/runs.cl.mako): the run-length encoding of an array in two
launches (count the run starts per block; write each run, each block first summing the counts
before it), which on a sorted array gives the unique values, their first positions and counts.

The number of runs decides the results' sizes: :meth:`Runs.count` leaves the per-block counts on
the device (the first ``blocks`` entries of its table), the caller reads them (the one wait on
the host), sums them and sizes the results, and :meth:`Runs.write` fills them."""

from typing import Any, Dict, NamedTuple

import numpy as np
import pyopencl as cl

from ..core.sizes import index_type
from .elementwise import KernelFamily, group_size, index_cl

#: each block's work-items count at least this many positions each (fewer blocks: less for each
#: block of runs_write to sum before it starts)
PER_ITEM = 16
#: work-items per group on CPU devices: one, which walks its block alone (a CPU runtime runs
#: the work-items of a barrier one after another, each scan step a pass over the group); None:
#: as on other devices (elementwise.WG, or what the kernels run)
CPU_WG = 1
#: consecutive positions a work-item of runs_write takes a round on devices other than CPUs
#: (1 to 32; one work-group scan a round of WG x IPT positions): 8 measured best of 1, 8, 16
#: and 32 on an H200 (BENCHMARKS_NOTES.md)
IPT = 8
#: the same on CPU devices with CPU_WG (one work-item a group: a round is IPT positions, no
#: barrier, the previous key carried from one position to the next), and the IPT of a write
#: with a permutation there (its inverse's scattered writes: a short loop a position keeps
#: more of them in flight); measured on PoCL 3.0, BENCHMARKS_NOTES.md
CPU_IPT = 32
CPU_PERM_IPT = 1


def write_ipt(cpu, perm=False):
    """runs_write's positions a work-item a round (``cpu``: a CPU run at CPU_WG), with a
    permutation or not: the module's knobs."""
    ipt = (CPU_PERM_IPT if perm else CPU_IPT) if cpu else IPT
    if not 1 <= ipt <= 32:
        raise ValueError(f"runs_write: ipt {ipt}: the positions a work-item takes a round are "
                         f"1 to 32 (clradix.drivers.runs.IPT, CPU_IPT, CPU_PERM_IPT)")
    return ipt


class RunsCall(NamedTuple):
    """One call's kernels and grid: the program's parameters, work-items per group, blocks,
    positions per block, and the dtype of the count table's entries."""

    params: Dict[str, Any]
    wg: int
    blocks: int
    chunk: int
    table_dtype: np.dtype

    @property
    def table_bytes(self):
        """Bytes of the count table: each block's count of run starts, then its last start."""
        return 2 * self.blocks * self.table_dtype.itemsize


class Runs(KernelFamily):
    template = "runs.cl.mako"

    def __init__(self, programs):
        super().__init__(programs)
        self._wg = {}   # (device pointer, parameters) -> the work-group size the kernels run

    def prepare(self, queue, codec, n, out_dtype, perm_dtype, starts, lengths):
        """The :class:`RunsCall` of ``n`` >= 1 keys of ``codec``'s dtype on ``queue``'s device,
        writing results of ``out_dtype`` (and the ``starts`` and ``lengths`` of the runs as
        asked), with a permutation of ``perm_dtype`` (None: none)."""
        index_t, index_np = index_type(n + 1)
        base = dict(codec.template_args(), index_t=index_t, out_t=index_cl(out_dtype),
                    perm_t=None if perm_dtype is None else index_cl(perm_dtype),
                    starts=bool(starts), lengths=bool(lengths))
        device = queue.device
        cpu = bool(device.type & cl.device_type.CPU) and CPU_WG is not None
        ipt = write_ipt(cpu, perm_dtype is not None)
        base.update(ipt=ipt)
        key = (device.int_ptr, tuple(sorted(base.items())), cpu and CPU_WG, group_size(device))
        wg = self._wg.get(key)
        if wg is None:
            # the kernels are built for one work-group size (reqd_work_group_size): a kernel that
            # runs fewer work-items on this device is rebuilt for what it runs
            wg = CPU_WG if cpu else group_size(device)
            while wg > 1:
                limit = self.wg_limit(dict(base, wg=wg), ("runs_count", "runs_write"), device)
                if limit >= wg:
                    break
                wg = group_size(device, limit)
            self._wg[key] = wg
        cu = int(device.max_compute_units)
        blocks = max(1, min(-(-n // (wg * PER_ITEM)), 8 * cu, 4096))
        chunk = -(-n // blocks)
        chunk = -(-chunk // (wg * ipt)) * (wg * ipt)   # whole rounds of runs_write
        return RunsCall(dict(base, wg=wg), wg, -(-n // chunk), chunk, np.dtype(index_np))

    def count(self, queue, call, keys, n, nan_distinct, table, wait):
        """Enqueue the count of the run starts of ``n`` keys (``keys``: (buffer, element
        offset)) per block into ``table`` (a buffer of ``call.table_bytes``); the event. Then
        the sum of its first ``call.blocks`` entries is the number of runs."""
        return self.launch(queue, call.params, "runs_count",
                           [keys[0], keys[1], n, call.chunk, int(nan_distinct), table],
                           call.blocks * call.wg, call.wg, wait)

    def write(self, queue, call, keys, n, nan_distinct, table, m, values, starts, lengths,
              perm, index, inverse, wait):
        """Enqueue runs_write after :meth:`count` for the ``m`` runs: ``values`` and, as the
        call was prepared, ``starts``, ``lengths`` and with ``perm`` ``index`` and ``inverse``
        ((buffer, element offset) each); the event."""
        args = [keys[0], keys[1], n, call.chunk, int(nan_distinct), table, m, *values]
        for wanted, at in ((call.params["starts"], starts), (call.params["lengths"], lengths)):
            if wanted:
                args += at
        if call.params["perm_t"] is not None:
            args += [*perm, *index, *inverse]
        return self.launch(queue, call.params, "runs_write", args, call.blocks * call.wg,
                           call.wg, wait)
