"""Kernels launched one by one, outside the sorts' launch sequences: the permutations
(permute.py), searchsorted (search.py) and the runs of equal keys (runs.py). Each is a
:class:`KernelFamily`: one template, built per parameter set, whose kernels take their scalar
arguments as the rendered source declares them (clradix.core.declarations), so that a scalar of
the wrong width or out of range is a TypeError here, not a kernel reading garbage."""

import struct
import threading
from typing import NamedTuple

import numpy as np
import pyopencl as cl

from ..core.launches import set_packed
from ..core.limits import kernel_wg_limit
from ..core.sizes import pow2_floor, round_up

#: work-items per group of the families' kernels (fewer where a device or kernel runs fewer)
WG = 256
#: the most work-groups of a grid-stride launch
MAX_GROUPS = 4096


class _Scalar(NamedTuple):
    """How a launch sets an integer parameter: its dtype, its range and its packing."""

    dtype: np.dtype
    lo: int
    hi: int
    packing: struct.Struct


def _scalar(dtype):
    info = np.iinfo(dtype)
    return _Scalar(dtype, int(info.min), int(info.max), struct.Struct("<" + {
        (1, "u"): "B", (1, "i"): "b", (2, "u"): "H", (2, "i"): "h", (4, "u"): "I", (4, "i"): "i",
        (8, "u"): "Q", (8, "i"): "q"}[dtype.itemsize, dtype.kind]))


class KernelFamily:
    """The kernels of ``template`` on one context. One kernel object per (parameters, name), its
    arguments set and enqueued under a lock (they persist in the object), so that threads may
    share a family."""

    template = ""

    def __init__(self, programs):
        self.programs = programs
        self._kernels = {}
        self._lock = threading.Lock()

    def _kernel(self, params, name):
        key = (tuple(sorted(params.items())), name)
        found = self._kernels.get(key)
        if found is None:
            prg = self.programs.get(self.template, params)
            decl = self.programs.declarations(self.template, params)[name]
            scalars = tuple(None if p.dtype is None else _scalar(p.dtype) for p in decl)
            found = self._kernels[key] = (cl.Kernel(prg, name), decl, scalars)
        return found

    def wg_limit(self, params, names, device):
        """The most work-items per group every kernel of ``names`` runs on ``device``."""
        with self._lock:
            return min(kernel_wg_limit(self._kernel(params, name)[0], device) for name in names)

    def launch(self, queue, params, name, args, gsize, lsize, wait):
        """Enqueue kernel ``name`` of the program of ``params`` with ``args`` (buffers, and
        numbers packed as their parameters' types) over ``gsize`` work-items in groups of
        ``lsize``; the event."""
        with self._lock:
            knl, decl, scalars = self._kernel(params, name)
            if len(args) != len(decl):
                raise TypeError(f"kernel {name}: expected {len(decl)} arguments, got {len(args)}")
            for i, (scalar, arg) in enumerate(zip(scalars, args)):
                if scalar is None:
                    knl.set_arg(i, arg)
                    continue
                v = int(arg)
                if not scalar.lo <= v <= scalar.hi:
                    raise TypeError(f"kernel {name}: parameter {decl[i].name} ({decl[i].cl_type}) "
                                    f"takes {scalar.lo} to {scalar.hi}, got {arg}")
                set_packed(knl, i, scalar.packing.pack(v), scalar.dtype)
            return cl.enqueue_nd_range_kernel(queue, knl, (int(gsize),),
                                              None if lsize is None else (int(lsize),),
                                              wait_for=list(wait or ()) or None)

    def launch_items(self, queue, params, name, args, n, wait):
        """Launch a grid-stride kernel over ``n`` items (at most MAX_GROUPS groups)."""
        wg = group_size(queue.device)
        groups = max(1, min(-(-int(n) // wg), MAX_GROUPS))
        return self.launch(queue, params, name, args, groups * wg, wg, wait)


def group_size(device, limit=None):
    """The work-group size of the families' launches on ``device``: a power of two, at most
    ``limit`` (default WG) and the device's maximum."""
    return pow2_floor(min(WG if limit is None else limit, int(device.max_work_group_size)))


def index_cl(dtype):
    """The unsigned OpenCL C type of an integer dtype's width (uint or ulong)."""
    return {4: "uint", 8: "ulong"}[np.dtype(dtype).itemsize]


__all__ = ["KernelFamily", "group_size", "index_cl", "round_up", "WG", "MAX_GROUPS"]
