"""Key distributions for tests: each returns ``n`` keys of ``dtype`` from ``rng``."""

import numpy as np

from clradix.core.keys import key_codec


def is_float(dtype):
    """Float keys: numpy's and ml_dtypes' bfloat16 (whose numpy kind is "V")."""
    return key_codec(dtype).kind == "float"


def _bits(rng, dtype, n):
    d = np.dtype(dtype)
    return rng.integers(0, 256, n * d.itemsize, dtype=np.uint8).view(key_codec(d).unsigned_dtype)


def uniform(rng, dtype, n):
    return _bits(rng, dtype, n).view(dtype)


def all_equal(rng, dtype, n):
    return np.full(n, _bits(rng, dtype, 1)[0]).view(dtype)


def _finite(rng, dtype, n):
    d = np.dtype(dtype)
    if is_float(d):
        return (rng.standard_normal(n) * 1000).astype(d)
    info = np.iinfo(d)
    return rng.integers(info.min, info.max, n, dtype=d, endpoint=True)


def finite(rng, dtype, n):
    """Finite keys: for floats, normal values without -0.0 or NaN."""
    return _finite(rng, dtype, n)


def sorted_keys(rng, dtype, n):
    return np.sort(_finite(rng, dtype, n))


def reverse_sorted(rng, dtype, n):
    return np.sort(_finite(rng, dtype, n))[::-1].copy()


def distinct16(rng, dtype, n):
    pool = _bits(rng, dtype, 16)
    return pool[rng.integers(0, 16, n)].view(dtype)


def high_bits_vary(rng, dtype, n):
    codec = key_codec(dtype)
    u = _bits(rng, dtype, n)
    keep = codec.unsigned_dtype.type(((1 << codec.bits) - 1) ^ ((1 << (codec.bits // 2)) - 1))
    return ((u & keep) | codec.unsigned_dtype.type(5)).view(dtype)


def low_bits_vary(rng, dtype, n):
    codec = key_codec(dtype)
    u = _bits(rng, dtype, n)
    low = codec.unsigned_dtype.type((1 << max(codec.bits // 4, 2)) - 1)
    base = _bits(rng, dtype, 1)[0] & codec.unsigned_dtype.type(~int(low) & ((1 << codec.bits) - 1))
    return ((u & low) | base).view(dtype)


def entropy_reduced(rng, dtype, n):
    u = _bits(rng, dtype, n)
    for _ in range(int(rng.integers(1, 4))):
        u &= _bits(rng, dtype, n)
    return u.view(dtype)


def special_bits(dtype):
    """(bit patterns of +-0, +-inf, NaNs of both signs and several payloads, subnormals;
    mantissa bits; sign bit; exponent bits) of a float dtype."""
    codec = key_codec(dtype)
    bits = codec.bits
    mant = (codec.inf_bits & -codec.inf_bits).bit_length() - 1   # +inf: the exponent's ones
    sign = 1 << (bits - 1)
    exp_all = ((1 << (bits - 1 - mant)) - 1) << mant
    pool = np.array([0, sign, exp_all, sign | exp_all,
                     exp_all | 1, sign | exp_all | 1, exp_all | (1 << (mant - 1)),
                     sign | exp_all | ((1 << mant) - 1), 1, sign | 1, (1 << mant) - 1,
                     sign | 5], dtype=codec.unsigned_dtype)
    return pool, mant, sign, exp_all


def float_specials(rng, dtype, n):
    """Random floats salted with NaNs of both signs and many payloads, +-0, +-inf, subnormals."""
    d = np.dtype(dtype)
    if not is_float(d):
        return uniform(rng, dtype, n)
    codec = key_codec(d)
    ut = codec.unsigned_dtype.type
    specials, mant, sign, exp_all = special_bits(d)
    x = _finite(rng, d, n).view(codec.unsigned_dtype).copy()
    pick = rng.random(n) < 0.3
    x[pick] = specials[rng.integers(0, len(specials), int(pick.sum()))]
    nan_payload = rng.random(n) < 0.05
    x[nan_payload] = (ut(exp_all) | (_bits(rng, d, int(nan_payload.sum())) & ut((1 << mant) - 1))
                      | ut(1) | (_bits(rng, d, int(nan_payload.sum())) & ut(sign)))
    return x.view(d)


DISTRIBUTIONS = {
    "uniform": uniform,
    "all_equal": all_equal,
    "sorted": sorted_keys,
    "reverse_sorted": reverse_sorted,
    "distinct16": distinct16,
    "high_bits": high_bits_vary,
    "low_bits": low_bits_vary,
    "entropy_reduced": entropy_reduced,
    "float_specials": float_specials,
}


def from_order_key(codec, okey):
    """The keys of ``codec``'s type whose order keys are ``okey`` (unsigned): the inverse of
    KeyCodec.order_key, but for floats' NaN patterns, whose order key is all ones."""
    ut = codec.unsigned_dtype.type
    u = np.asarray(okey, codec.unsigned_dtype).copy()
    sign = ut(1 << (codec.bits - 1))
    if codec.kind == "int":
        u ^= sign
    elif codec.kind == "float":
        neg = u < sign
        u[neg] = ~u[neg]
        u[~neg] ^= sign
    return u.view(codec.dtype)


def overfull_bucket(rng, dtype, n, spread_bits, descending=False, levels=5):
    """Keys that over-fill buckets of the bucket sort (chunk_buckets.cl.mako, cb_buckets) whose fine
    values start at an unaligned one, with keys on both sides of its digits' boundaries. In
    order-key space, over an aligned range of w = 2^spread_bits values (all those bits differ
    among the keys), for i = 1 to ``levels``: 90 % / levels of the keys are one value
    V_i = 3w / 2^(i+1), a few lie just below it (across that multiple of w / 2^(i+1)), none
    elsewhere in [w / 2^i, V_i); the rest are uniform. The sample gives most buckets to the
    V_i, and V_i's reaches back over the empty range to the last uniform keys below w / 2^i:
    it spans fewer than w / 2^i values but crosses w / 2^i, from wherever the sample started
    it, and holds more keys than a small bucket_keys. Counted from that start its keys lose a
    bit (spread_bits - i), which saves a pass where their width from the sort's first bit is
    one more than a multiple of the in-bucket digit (8 or 9 bits); such a bucket is split when
    it spans over 256 fine values (i up to the fine digit's width less 9). ``descending``: the
    order keys' complements (the same layout in a descending sort's order). Floats take no NaN
    where spread_bits is below their width less 1."""
    codec = key_codec(dtype)
    bits = codec.bits
    s = spread_bits
    width = 1 << s
    # an aligned range of order keys: for floats one of finite values where there is one (of
    # either sign: both where it spans zero), else any
    first, last = 0, (1 << (bits - s)) - 1
    if codec.kind == "float":
        sign, inf = 1 << (bits - 1), codec.inf_bits
        finite = (-(-(sign - inf) // width), (sign + inf + 1 - width) // width)
        if finite[0] <= finite[1]:
            first, last = finite
    low = int(rng.integers(first, last + 1)) << s
    heavy = [3 * width >> (i + 1) for i in range(1, levels + 1)]
    # the uniform keys: below w / 2^levels, and between V_i and w / 2^(i-1), by the ranges'
    # lengths
    spans = np.array([[0, width >> levels]]
                     + [[v + 1, (2 * width) >> i] for i, v in enumerate(heavy, 1)])
    lengths = spans[:, 1] - spans[:, 0]
    which = rng.choice(len(spans), n, p=lengths / lengths.sum())
    off = rng.integers(spans[which, 0], spans[which, 1])
    pick = rng.random(n)
    share = 0.9 / levels
    for j, v in enumerate(heavy):
        off[(pick >= share * j) & (pick < share * (j + 1))] = v
    near = max(2, n // 16384)
    if n >= len(heavy) * near + 2:
        at = rng.choice(n, len(heavy) * near + 2, replace=False)
        reach = 1 << max(s - 17, 0)
        for j, v in enumerate(heavy):
            off[at[j * near:(j + 1) * near]] = v - 1 - rng.integers(0, reach, near)
        off[at[-2:]] = (0, width - 1)   # the range's ends
    okey = np.uint64(low) + off.astype(np.uint64)
    if descending:
        okey = ~okey & np.uint64((1 << bits) - 1)
    return from_order_key(codec, okey.astype(codec.unsigned_dtype))
