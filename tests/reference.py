"""numpy references with clradix's semantics (stable; NaN last; -0.0 == +0.0)."""

import numpy as np

from clradix.keys import key_codec


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
    return a.view(key_codec(a.dtype).unsigned_dtype) if a.dtype.kind in "uif" else a
