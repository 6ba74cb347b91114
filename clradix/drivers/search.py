"""searchsorted (cl_templates/search.cl.mako): one binary search per value, in the sort's order
(NaN after +inf, -0.0 == +0.0), in one row of sorted keys or in each row of a 2-D array."""

from ..core.sizes import index_type
from .elementwise import KernelFamily, index_cl


class Search(KernelFamily):
    template = "search.cl.mako"

    def search(self, queue, codec, sorted_, row_len, row_stride, values, per_row, total,
               sorter, out, out_dtype, right, wait):
        """Enqueue the insertion points of ``total`` values (``values``: (buffer, element
        offset)), value i in row i // per_row of ``sorted_`` ((buffer, element offset); rows of
        ``row_len`` keys, ``row_stride`` apart, 0 for one row), into ``out`` ((buffer, element
        offset) of ``out_dtype``); ``sorter`` None or (buffer, element offset, dtype); the
        event."""
        params = dict(codec.template_args(), index_t=index_type(row_len + 1)[0],
                      out_t=index_cl(out_dtype),
                      sorter_t=None if sorter is None else index_cl(sorter[2]))
        args = [sorted_[0], sorted_[1], row_len, row_stride, values[0], values[1],
                max(per_row, 1), total]
        if sorter is not None:
            args += [sorter[0], sorter[1]]
        args += [out[0], out[1], int(right)]
        return self.launch_items(queue, params, "search_rows", args, total, wait)
