"""The index-width rule and launch sizes: which integer type the kernels count and address with,
which index type a caller gets back, and rounding of global sizes. Written once for every
operation."""

import numpy as np

# Kernels count and address keys with 32-bit integers below this many keys (per sort, per top-k
# row), with 64-bit ones from it on (a module constant so that tests can force the 64-bit kernels
# at small sizes).
INDEX32_LIMIT = 2 ** 31


def index_type(n):
    """(OpenCL C type name, numpy type) of the kernels' counts and positions for ``n`` keys."""
    return ("uint", np.uint32) if n < INDEX32_LIMIT else ("ulong", np.uint64)


def index_bytes(n):
    """Bytes of one of the kernels' counts or positions for ``n`` keys."""
    return np.dtype(index_type(n)[1]).itemsize


def output_index_dtype(n):
    """The dtype of indices handed to the caller for ``n`` keys: uint32 while every position
    fits, uint64 from 2**32 keys on."""
    return np.dtype(np.uint32 if n < 2 ** 32 else np.uint64)


#: the index dtypes a caller may ask for, with the positions each holds (below the bound)
INDEX_DTYPES = {np.dtype(np.int32): 2 ** 31, np.dtype(np.uint32): 2 ** 32,
                np.dtype(np.int64): 2 ** 63, np.dtype(np.uint64): 2 ** 64}


def check_index_dtype(index_dtype, n, what="index_dtype"):
    """The numpy dtype of the indices handed back for positions below ``n``: ``index_dtype``
    checked (TypeError for another type, ValueError when a position would not fit), or by
    default the index-width rule's (:func:`output_index_dtype`). Kernels write the unsigned
    type of the same width: the same bits for every position that fits."""
    if index_dtype is None:
        return output_index_dtype(n)
    try:
        d = np.dtype(index_dtype)
    except TypeError:
        d = None
    if d not in INDEX_DTYPES:
        raise TypeError(f"{what}: indices are int32, uint32, int64 or uint64, got "
                        f"{index_dtype!r}")
    if n > INDEX_DTYPES[d]:
        raise ValueError(f"{what}: {d} cannot hold the positions of {n} keys (largest "
                         f"{INDEX_DTYPES[d] - 1}): use int64")
    return d


def cl_index_name(dtype):
    """The OpenCL C name of an index dtype (uint32 or uint64)."""
    return {4: "uint", 8: "ulong"}[np.dtype(dtype).itemsize]


def round_up(x, m):
    """The smallest multiple of ``m`` that is at least ``x``."""
    return -(-x // m) * m


def pow2_floor(x):
    """The largest power of two that is at most ``x`` (1 for x < 2)."""
    return 1 << (max(int(x), 1).bit_length() - 1)
