"""Key distributions for tests: each returns ``n`` keys of ``dtype`` from ``rng``."""

import numpy as np

from clradix.core.keys import key_codec


def _bits(rng, dtype, n):
    d = np.dtype(dtype)
    return rng.integers(0, 256, n * d.itemsize, dtype=np.uint8).view(key_codec(d).unsigned_dtype)


def uniform(rng, dtype, n):
    return _bits(rng, dtype, n).view(dtype)


def all_equal(rng, dtype, n):
    return np.full(n, _bits(rng, dtype, 1)[0]).view(dtype)


def _finite(rng, dtype, n):
    d = np.dtype(dtype)
    if d.kind == "f":
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
    mant = {16: 10, 32: 23, 64: 52}[bits]
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
    if d.kind != "f":
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
