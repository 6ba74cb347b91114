"""Layout copies (cl_templates/layout.cl.mako): a strided view gathered into C order in one kernel,
and 32-bit indices widened to 64 bits.

The numpy-like functions sort along any axis of any view by gathering it into rows (the sorted
axis last, C-contiguous), running the row sort, and gathering the result back into the caller's
axis order. A view here is (buffer, element offset, shape, strides in elements).
"""

import threading

import numpy as np
import pyopencl as cl

from ..core.launches import set_packed
from ..core.sizes import round_up

#: the most axes a view may have (numpy's limit is 64; beyond 8 the axes are merged first)
MAX_DIMS = 8

_ELEM_TYPES = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}
_WG = 256
_MAX_GROUPS = 4096


def simplify(shape, strides):
    """(shape, strides) of the same view with axes of length 1 dropped and neighbouring axes that
    step evenly merged (at least one axis): fewer divisions per element, and views of any rank
    whose merged form has at most MAX_DIMS axes."""
    dims = [(int(s), int(t)) for s, t in zip(shape, strides) if s != 1]
    if not dims:
        return (1,), (1,)
    merged = [dims[0]]
    for s, t in dims[1:]:
        ps, pt = merged[-1]
        if pt == s * t:   # the outer axis steps over exactly the inner one's extent
            merged[-1] = (ps * s, t)
        else:
            merged.append((s, t))
    return tuple(s for s, _ in merged), tuple(t for _, t in merged)


class Gather:
    """The gather kernels of one context: ``enqueue`` copies a strided view into C order. One
    kernel object per program, its arguments set and enqueued under a lock (they persist in the
    object), so that threads may share a Gather."""

    def __init__(self, programs):
        self.programs = programs
        self._kernels = {}
        self._lock = threading.Lock()

    def enqueue(self, queue, src, src_off, shape, strides, dst, dst_off, itemsize, wait=None):
        """Enqueue dst[dst_off:dst_off + prod(shape)] = the view (``src``, element offset
        ``src_off``, ``shape``, ``strides`` in elements) in C order; the event. ValueError for a
        view of more than MAX_DIMS axes once merged, or elements of another width than 1, 2, 4
        or 8 bytes."""
        n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
        if n == 0:
            return cl.enqueue_marker(queue, wait_for=list(wait or ()) or None)
        shape, strides = simplify(shape, strides)
        if len(shape) > MAX_DIMS:
            raise ValueError(f"a view whose axes do not merge into {MAX_DIMS} or fewer (shape "
                             f"{shape}, strides {strides} elements) is not supported: make it "
                             f"contiguous first")
        elem_t = _ELEM_TYPES.get(int(itemsize))
        if elem_t is None:
            raise ValueError(f"gather copies elements of 1, 2, 4 or 8 bytes, not {itemsize}")
        index_t = "uint" if n < 2 ** 32 else "ulong"   # i and its coordinates; addresses are long
        args = [src, np.uint64(src_off), dst, np.uint64(dst_off), np.uint64(n)]
        for s, t in zip(shape, strides):
            args += [np.uint64(s), np.int64(t)]
        return self._launch(queue, "gather", (elem_t, index_t, len(shape)), args, n, wait)

    def widen(self, queue, src, dst, dst_off, n, wait=None):
        """Enqueue dst[dst_off:dst_off + n] = the n uint32 of ``src`` as uint64; the event."""
        args = [src, dst, np.uint64(dst_off), np.uint64(n)]
        return self._launch(queue, "widen", ("uint", "uint", 1), args, n, wait)

    def _launch(self, queue, name, params, args, n, wait):
        """Set ``args`` on the program's kernel ``name`` and enqueue it over n items."""
        groups = min(-(-n // _WG), _MAX_GROUPS)
        wg = min(_WG, queue.device.max_work_group_size)
        with self._lock:
            knl = self._kernels.get((name, params))
            if knl is None:
                elem_t, index_t, ndim = params
                prg = self.programs.get("layout.cl.mako", dict(elem_t=elem_t, index_t=index_t,
                                                               ndim=ndim))
                knl = self._kernels[(name, params)] = cl.Kernel(prg, name)
            for i, arg in enumerate(args):
                if isinstance(arg, np.generic):   # scalars as their bytes (no type inference)
                    set_packed(knl, i, arg.tobytes(), arg.dtype)
                else:
                    knl.set_arg(i, arg)
            return cl.enqueue_nd_range_kernel(queue, knl, (round_up(groups * wg, wg),), (wg,),
                                              wait_for=list(wait or ()) or None)
