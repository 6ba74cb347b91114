"""Property-based tests (hypothesis): sort and argsort equal numpy's under clradix's semantics.

Every example draws a key dtype, a length (0, 1, and around the tile edges of the policy the
planner picks on this device), a distribution, a bit range, a direction and a mode (keys only,
keys with values, argsort), sorts on the device and compares with the numpy reference. Examples
are derandomized, so every run (and CI) checks the same cases; ``CLRADIX_HYPOTHESIS_EXAMPLES``
sets how many.
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clradix
from clradix.core.keys import KEY_DTYPES, key_codec

from conftest import check_sort
import data
from data import float_specials, overfull_bucket, special_bits, uniform

EXAMPLES = int(os.environ.get("CLRADIX_HYPOTHESIS_EXAMPLES", "200"))
DTYPES = [np.dtype(d) for d in KEY_DTYPES]
try:  # bfloat16 keys where the optional ml_dtypes package provides them
    import ml_dtypes
    WITH_BF16 = DTYPES + [np.dtype(ml_dtypes.bfloat16)]
except ImportError:  # pragma: no cover - depends on the environment
    WITH_BF16 = DTYPES
MODES = ("keys", "pairs", "argsort")
PAD = 3  # elements around the sorted view, which must keep their bytes


def few_distinct(rng, dtype, n):
    """n keys drawn from 1 to 4 distinct bit patterns (long runs of equal keys: stability)."""
    pool = uniform(rng, dtype, int(rng.integers(1, 5)))
    return pool[rng.integers(0, len(pool), n)] if n else pool[:0]


def special_heavy(rng, dtype, n):
    """Floats mostly NaN (both signs, many payloads), +-0 and +-inf; other types: uniform bits."""
    d = np.dtype(dtype)
    if not data.is_float(d):
        return uniform(rng, d, n)
    codec = key_codec(d)
    pool = special_bits(d)[0][:8]   # zeros, infinities, NaNs
    out = float_specials(rng, d, n).view(codec.unsigned_dtype).copy()
    pick = rng.random(n) < 0.7
    out[pick] = pool[rng.integers(0, len(pool), int(pick.sum()))]
    return out.view(d)


def overfull(rng, dtype, n):
    """data.overfull_bucket over a range of a drawn width (the widths of test_sort's
    overfull_spreads), laid out for either direction."""
    top = min(np.dtype(dtype).itemsize * 8, 28)
    return overfull_bucket(rng, dtype, n, int(rng.integers(max(8, top - 8), top + 1)),
                           bool(rng.integers(0, 2)))


# data.py's distributions that matter here, and three of this file's own
DISTRIBUTIONS = dict({name: data.DISTRIBUTIONS[name] for name in
                      ("uniform", "all_equal", "float_specials", "sorted", "reverse_sorted")},
                     few_distinct=few_distinct, special_heavy=special_heavy, overfull=overfull)


@pytest.fixture(scope="module")
def sorter(ctx):
    return clradix.Sorter(ctx)


def _edges(sorter, device, dtype):
    """Lengths at the edges of the planned policies' work-groups and tiles: a single tile (one
    work-group in local memory) and several tiles (the digit passes)."""
    one = sorter.plan(device, dtype, 1)
    many = sorter.plan(device, dtype, 4 * max(one.tile, 1024))
    out = {0, 1, 2}
    for pol, reps in ((one, (1,)), (many, (1, 2, 3))):
        for base in [pol.wg_size] + [r * pol.tile for r in reps]:
            out.update(base + d for d in (-1, 0, 1))
    return sorted(out)


@st.composite
def cases(draw, edges_of, dtypes=tuple(DTYPES), modes=MODES):
    dtype = draw(st.sampled_from(dtypes))
    edges = edges_of(dtype)
    n = draw(st.one_of(st.sampled_from(edges), st.integers(0, edges[-1])))
    dist = draw(st.sampled_from(list(DISTRIBUTIONS)))
    bits = key_codec(dtype).bits
    if draw(st.booleans()):
        begin, end = 0, bits
    else:
        begin = draw(st.integers(0, bits))
        end = draw(st.integers(begin, bits))
    return dict(dtype=dtype, n=n, dist=dist, begin_bit=begin, end_bit=end,
                descending=draw(st.booleans()), mode=draw(st.sampled_from(modes)),
                seed=draw(st.integers(0, 2 ** 32 - 1)))


@pytest.fixture(scope="module")
def edges_of(sorter, ctx):
    memo = {}

    def edges(dtype):
        if dtype not in memo:
            memo[dtype] = _edges(sorter, ctx.devices[0], dtype)
        return memo[dtype]
    return edges


def test_edges_cover_the_planned_tiles(sorter, ctx, edges_of):
    """The drawn lengths reach past one tile of each planned policy (so both paths are drawn)."""
    dev = ctx.devices[0]
    for dtype in DTYPES:
        edges = edges_of(dtype)
        assert 0 in edges and 1 in edges
        assert sorter.plan(dev, dtype, edges[-1]).tile < edges[-1]


def _check_case(queue, sorter, alloc, c, keys=None):
    """One drawn case (its keys drawn from c["dist"] unless given); the keys sit in the middle
    of a larger array, whose other elements must keep their bits, and temporaries and argsort's
    output start full of poison."""
    if keys is None:
        keys = DISTRIBUTIONS[c["dist"]](np.random.default_rng(c["seed"]), c["dtype"], c["n"])
    check_sort(queue, sorter, keys, c["mode"], descending=c["descending"],
               begin_bit=c["begin_bit"], end_bit=c["end_bit"], allocator=alloc, out=True,
               pad=PAD, what=str(c))


def test_sort_matches_numpy(queue, sorter, edges_of, poisoning_allocator):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(c=cases(edges_of))
    def check(c):
        _check_case(queue, sorter, poisoning_allocator, c)
    check()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_and_mode(queue, sorter, edges_of, poisoning_allocator, dtype, mode):
    """A few examples per dtype and mode, so that each is drawn whatever the budget above."""
    @settings(max_examples=max(3, EXAMPLES // 40), deadline=None, derandomize=True,
              database=None, suppress_health_check=[HealthCheck.too_slow,
                                                    HealthCheck.data_too_large])
    @given(c=cases(edges_of, dtypes=(dtype,), modes=(mode,)))
    def check(c):
        _check_case(queue, sorter, poisoning_allocator, c)
    check()


# The CPUs' bucket sort (a chunks policy's bucket_keys) with buckets over their bound: heavy
# duplicates in a range whose buckets start at unaligned fine values (data.overfull_bucket, over
# a drawn width of the range: nine in a row, as test_sort's overfull_spreads, laid out for the
# direction of the sort), and the other distributions, with a drawn bound from 33 keys (a split
# bucket's parts over 32 keys take the LSD passes) to 2000; the planner's own bound is met by
# test_sort's test_chunk_buckets_overfull_default_bound. Float keys are drawn as often as the
# others together (only theirs are sampled into buckets of many fine values), and sizes from
# 2^15 keys as often as any (fewer keys have too few fine values for many such buckets).
OVERFULL_SIZES = (65536, 20011, 4099, 0, 1, 2, 7, 8, 33)


@st.composite
def overfull_cases(draw, dtypes=tuple(WITH_BF16), dists=("overfull",) + tuple(DISTRIBUTIONS)):
    floats = tuple(d for d in dtypes if data.is_float(d)) or dtypes
    dtype = draw(st.one_of(st.sampled_from(floats), st.sampled_from(dtypes)))
    bits = key_codec(dtype).bits
    n = draw(st.one_of(st.sampled_from(OVERFULL_SIZES), st.integers(1 << 15, 70000),
                       st.integers(0, 70000)))
    dist = draw(st.one_of(st.just(dists[0]), st.sampled_from(dists)))
    top = min(bits, 28)
    spread = draw(st.integers(max(8, top - 8), top)) if dist == "overfull" else None
    begin, end = 0, bits
    if draw(st.booleans()):   # a bit range
        begin = draw(st.integers(0, min(9, bits)))
        end = draw(st.integers(min(begin + 10, bits), bits))
    return dict(dtype=dtype, n=n, dist=dist, spread=spread, begin_bit=begin, end_bit=end,
                descending=draw(st.booleans()), mode=draw(st.sampled_from(MODES)),
                bucket_keys=draw(st.integers(33, 2000)), seed=draw(st.integers(0, 2 ** 32 - 1)))


def _check_overfull(ctx, queue, alloc, cases, examples):
    sorters = {}

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(c=cases)
    def check(c):
        bound = c["bucket_keys"]
        if bound not in sorters:
            sorters[bound] = clradix.Sorter(ctx, algorithm="chunks", bucket_keys=bound)
        keys = None
        if c["spread"] is not None:
            keys = overfull_bucket(np.random.default_rng(c["seed"]), c["dtype"], c["n"],
                                   c["spread"], c["descending"])
        _check_case(queue, sorters[bound], alloc, c, keys)
    check()


def test_bucket_overflow_matches_numpy(ctx, queue, poisoning_allocator):
    _check_overfull(ctx, queue, poisoning_allocator, overfull_cases(), max(20, EXAMPLES // 2))


@pytest.mark.parametrize("dtype", WITH_BF16, ids=str)
def test_bucket_overflow_every_dtype(ctx, queue, poisoning_allocator, dtype):
    """A few over-full examples per key type, so that each is drawn whatever the budget."""
    _check_overfull(ctx, queue, poisoning_allocator,
                    overfull_cases(dtypes=(dtype,), dists=("overfull",)),
                    max(3, EXAMPLES // 20))
