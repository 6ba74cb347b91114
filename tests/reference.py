"""numpy references with clradix's semantics (stable; NaN last; -0.0 == +0.0)."""

import numpy as np

from clradix.core.keys import key_codec


def ref_argsort(keys, descending=False, begin_bit=0, end_bit=None):
    """Stable order of ``keys`` by the bits [begin_bit, end_bit) of their order key."""
    codec = key_codec(keys.dtype)
    okey = codec.order_key(keys)
    ut = codec.unsigned_dtype.type
    if descending:
        okey = ~okey
    end_bit = codec.bits if end_bit is None else end_bit
    if (begin_bit, end_bit) != (0, codec.bits):
        okey = (okey >> ut(begin_bit)) & ut((1 << (end_bit - begin_bit)) - 1)
    return np.argsort(okey, kind="stable")


def bits_of(a):
    """The array's raw bits (for bit-exact comparisons, NaN payloads included)."""
    a = np.ascontiguousarray(a)
    numeric = a.dtype.kind in "uif" or a.dtype.name == "bfloat16"
    return a.view(key_codec(a.dtype).unsigned_dtype) if numeric else a


def numpy_orders(dtype):
    """Whether numpy's own sort orders keys of this type (ml_dtypes' bfloat16 sorts by no
    order: 3 before nan before -0 in [3, 1, nan, -0, 0, 2])."""
    return np.dtype(dtype).kind in "uifb"


def ref_topk(x, k, largest=True):
    """(values, indices) per row: the k smallest (sel, position) pairs, sel being the order key
    (inverted for the largest): ties by position, NaN the largest value."""
    x = np.atleast_2d(x)
    codec = key_codec(x.dtype)
    ok = codec.order_key(x.ravel()).reshape(x.shape)
    if largest:
        ok = ~ok
    order = np.argsort(ok, axis=-1, kind="stable")[:, :k]
    return np.take_along_axis(x, order, -1), order


def compare_topk(x, k, values, indices, largest, sorted_):
    """Compare a top-k result (arrays or numpy) with the reference, row by row; unsorted results
    are compared as sets (in the order of positions)."""
    x2 = np.atleast_2d(x)
    v = np.atleast_2d(values.get() if hasattr(values, "get") else values)
    i = np.atleast_2d(indices.get() if hasattr(indices, "get") else indices)
    assert i.dtype in (np.uint32, np.int64, np.int32, np.uint64), i.dtype
    rv, ri = ref_topk(x2, k, largest)
    if not sorted_:
        perm = np.argsort(i, axis=-1, kind="stable")
        i = np.take_along_axis(i, perm, -1)
        v = np.take_along_axis(v, perm, -1)
        rperm = np.argsort(ri, axis=-1, kind="stable")
        ri = np.take_along_axis(ri, rperm, -1)
        rv = np.take_along_axis(rv, rperm, -1)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_array_equal(bits_of(v), bits_of(rv))
