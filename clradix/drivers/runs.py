"""Runs of equal keys (cl_templates/runs.cl.mako): the run-length encoding of an array in one
reduce-then-scan (count the run starts per block, scan the counts in one work-group, write each
run), which on a sorted array gives the unique values, their first positions and counts.

The number of runs decides the results' sizes: :meth:`Runs.count` leaves it on the device (the
last entry of its count table), the caller reads it (the one wait on the host) and sizes the
results, and :meth:`Runs.write` fills them."""

import numpy as np
import pyopencl as cl

from ..core.sizes import index_type
from .elementwise import KernelFamily, group_size, index_cl

#: each block's work-items count at least this many positions each (fewer blocks: a smaller scan)
PER_ITEM = 16
#: work-items per group on CPU devices: one, which walks its block alone (a CPU runtime runs
#: the work-items of a barrier one after another, each scan step a pass over the group); None:
#: as on other devices (elementwise.WG, or what the kernels run)
CPU_WG = 1


class Runs(KernelFamily):
    template = "runs.cl.mako"

    def __init__(self, programs):
        super().__init__(programs)
        self._wg = {}   # (device pointer, parameters) -> the work-group size the kernels run

    def _params(self, queue, codec, n, out_dtype, perm_dtype):
        base = dict(codec.template_args(), index_t=index_type(n + 1)[0],
                    out_t=index_cl(out_dtype),
                    perm_t=None if perm_dtype is None else index_cl(perm_dtype))
        cpu = bool(queue.device.type & cl.device_type.CPU) and CPU_WG is not None
        key = (queue.device.int_ptr, tuple(sorted(base.items())), cpu and CPU_WG, group_size(
            queue.device))
        wg = self._wg.get(key)
        if wg is None:
            # the kernels are built for one work-group size (reqd_work_group_size): a kernel that
            # runs fewer work-items on this device is rebuilt for what it runs
            wg = CPU_WG if cpu else group_size(queue.device)
            while wg > 1:
                limit = self.wg_limit(dict(base, wg=wg), ("runs_count", "runs_scan",
                                                           "runs_write"), queue.device)
                if limit >= wg:
                    break
                wg = group_size(queue.device, limit)
            self._wg[key] = wg
        return dict(base, wg=wg), wg

    def blocks(self, queue, n, wg):
        """(blocks, positions per block) of n keys."""
        cu = int(queue.device.max_compute_units)
        blocks = max(1, min(-(-n // (wg * PER_ITEM)), 8 * cu, 4096))
        chunk = -(-n // blocks)
        chunk = -(-chunk // wg) * wg
        return -(-n // chunk), chunk

    def count(self, queue, codec, keys, n, nan_distinct, out_dtype, perm_dtype, counts, wait):
        """Enqueue the count and scan of the runs of ``n`` >= 1 keys (``keys``: (buffer, element
        offset)) into ``counts`` (a buffer of at least :meth:`count_bytes`); the event. Then
        entry ``blocks`` of ``counts`` (an index of ``count_dtype``) is the number of runs."""
        params, wg = self._params(queue, codec, n, out_dtype, perm_dtype)
        blocks, chunk = self.blocks(queue, n, wg)
        evt = self.launch(queue, params, "runs_count",
                          [keys[0], keys[1], n, chunk, int(nan_distinct), counts],
                          blocks * wg, wg, wait)
        return self.launch(queue, params, "runs_scan", [counts, blocks], wg, wg, [evt])

    def count_layout(self, queue, codec, n, out_dtype, perm_dtype):
        """(bytes of the count table, the entry holding the number of runs, its dtype)."""
        _, wg = self._params(queue, codec, n, out_dtype, perm_dtype)
        blocks, _ = self.blocks(queue, n, wg)
        dtype = np.dtype(index_type(n + 1)[1])
        return (blocks + 1) * dtype.itemsize, blocks, dtype

    def write(self, queue, codec, keys, n, nan_distinct, out_dtype, counts, starts, values,
              perm, perm_dtype, index, inverse, wait):
        """Enqueue runs_write after :meth:`count`: ``starts``, ``values`` ((buffer, element
        offset) each) and with ``perm`` ((buffer, element offset) of ``perm_dtype``) ``index``
        and ``inverse``; the event."""
        params, wg = self._params(queue, codec, n, out_dtype, perm_dtype)
        blocks, chunk = self.blocks(queue, n, wg)
        args = [keys[0], keys[1], n, chunk, int(nan_distinct), counts, starts[0], starts[1],
                values[0], values[1]]
        if perm is not None:
            args += [perm[0], perm[1], index[0], index[1], inverse[0], inverse[1]]
        return self.launch(queue, params, "runs_write", args, blocks * wg, wg, wait)

    def lengths(self, queue, codec, n, m, out_dtype, perm_dtype, starts, lengths, wait):
        """Enqueue lengths[r] = starts[r + 1] - starts[r] (n - starts[r] for the last) for the
        ``m`` runs; the event."""
        params, _ = self._params(queue, codec, n, out_dtype, perm_dtype)
        return self.launch_items(queue, params, "runs_lengths",
                                 [starts[0], starts[1], n, m, lengths[0], lengths[1]], m, wait)
