"""Permutations by an index array (cl_templates/permute.cl.mako): records of any width taken in
an argsort's order, and the identity permutation that a sort carries as its values.

Several arrays permuted with one sort (Sorter.sort with a list of values, lexsort, unique's
indices) sort their keys once with a 4-byte index as the value, then take each array's
records by that index: one read and one write of each record, whatever its width, instead of
moving it in every digit pass."""

import numpy as np

from ..core.sizes import round_up
from .elementwise import KernelFamily, group_size, index_cl

_WORDS = ((16, "uint4"), (8, "ulong"), (4, "uint"), (2, "ushort"), (1, "uchar"))


def word_of(record_bytes, *byte_offsets):
    """(word bytes, OpenCL type): the widest word that divides a record and every offset."""
    for width, name in _WORDS:
        if record_bytes % width == 0 and all(off % width == 0 for off in byte_offsets):
            return width, name
    raise AssertionError("a byte always divides")  # pragma: no cover


class Permute(KernelFamily):
    template = "permute.cl.mako"

    def take(self, queue, src, src_byte_off, idx, idx_off, idx_dtype, dst, dst_byte_off, n,
             limit, record_bytes, wait):
        """Enqueue: record i of ``dst`` (from byte ``dst_byte_off``) = record ``idx[idx_off +
        i]`` of ``src`` (from byte ``src_byte_off``; ``limit`` records), records of
        ``record_bytes`` bytes, for i < n; the event. ``idx`` holds unsigned (or non-negative)
        integers of ``idx_dtype``'s width."""
        width, word_t = word_of(record_bytes, src_byte_off, dst_byte_off)
        params = dict(word_t=word_t, idx_t=index_cl(idx_dtype))
        args = [src, src_byte_off // width, idx, idx_off, dst, dst_byte_off // width, n, limit,
                record_bytes // width]
        return self.launch_items(queue, params, "take", args, n, wait)

    def iota(self, queue, dst, dst_off, n, idx_dtype, wait):
        """Enqueue dst[dst_off + i] = i for i < n (``idx_dtype``: uint32 or uint64); the
        event."""
        t = index_cl(idx_dtype)
        wg = group_size(queue.device)
        return self.launch(queue, dict(word_t="uint", idx_t=t), "rts_iota", [dst, dst_off, n],
                           round_up(max(int(n), 1), wg), wg, wait)


def payload_dtype(n):
    """The index a sort carries as its values for ``n`` keys: uint32 while every position fits."""
    return np.dtype(np.uint32 if n <= 2 ** 32 else np.uint64)
