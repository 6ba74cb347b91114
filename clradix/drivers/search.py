"""searchsorted (cl_templates/search.cl.mako): one binary search per value, in the sort's order
(NaN after +inf, -0.0 == +0.0), in one row of sorted keys or in each row of a 2-D array. In one
long row, each work-group keeps the top levels of the search (the row's splitters) in local
memory."""

import pyopencl as cl

from ..core.sizes import index_type
from .elementwise import MAX_GROUPS, KernelFamily, group_size, index_cl

#: levels of the search whose keys each work-group keeps in local memory: the 2^LOCAL_LEVELS - 1
#: splitters of one row of at least 2^LOCAL_LEVELS keys (fewer where the device's local memory
#: is small; 0: none)
LOCAL_LEVELS = 11
#: the same on CPU devices: none (a CPU's caches hold the top of every search, and a
#: work-group's splitter loads are one work-item's loop there)
CPU_LOCAL_LEVELS = 0
#: work-groups per compute unit of a launch with splitters: each loads them once, so the
#: launch is as wide as the device runs at once, not one group per WG values
SPLIT_GROUPS_PER_CU = 8


def local_levels(device, itemsize, row_len, rows):
    """The splitter levels of a search of ``rows`` rows of ``row_len`` keys of ``itemsize``
    bytes on ``device`` (0: none): one row, long enough, and at most half the device's local
    memory."""
    cpu = bool(device.type & cl.device_type.CPU)
    levels = CPU_LOCAL_LEVELS if cpu else LOCAL_LEVELS
    if rows != 1 or levels <= 0 or row_len < 1 << levels:
        return 0
    while levels > 0 and (1 << levels) * itemsize > int(device.local_mem_size) // 2:
        levels -= 1
    return levels


class Search(KernelFamily):
    template = "search.cl.mako"

    def search(self, queue, codec, sorted_, row_len, row_stride, values, per_row, total,
               sorter, out, out_dtype, right, wait):
        """Enqueue the insertion points of ``total`` values (``values``: (buffer, element
        offset)), value i in row i // per_row of ``sorted_`` ((buffer, element offset); rows of
        ``row_len`` keys, ``row_stride`` apart, 0 for one row), into ``out`` ((buffer, element
        offset) of ``out_dtype``); ``sorter`` None or (buffer, element offset, dtype); the
        event."""
        device = queue.device
        levels = local_levels(device, codec.itemsize, row_len, 1 if row_stride == 0 else 2)
        params = dict(codec.template_args(), index_t=index_type(row_len + 1)[0],
                      out_t=index_cl(out_dtype),
                      sorter_t=None if sorter is None else index_cl(sorter[2]), levels=levels)
        args = [sorted_[0], sorted_[1], row_len, row_stride, values[0], values[1],
                max(per_row, 1), total]
        if sorter is not None:
            args += [sorter[0], sorter[1]]
        args += [out[0], out[1], int(right)]
        if not levels:
            return self.launch_items(queue, params, "search_rows", args, total, wait)
        wg = group_size(device)
        groups = max(1, min(-(-total // wg), SPLIT_GROUPS_PER_CU * int(device.max_compute_units),
                            MAX_GROUPS))
        return self.launch(queue, params, "search_rows", args, groups * wg, wg, wait)
