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
from data import float_specials, special_bits, uniform

EXAMPLES = int(os.environ.get("CLRADIX_HYPOTHESIS_EXAMPLES", "200"))
DTYPES = [np.dtype(d) for d in KEY_DTYPES]
MODES = ("keys", "pairs", "argsort")
PAD = 3  # elements around the sorted view, which must keep their bytes


def few_distinct(rng, dtype, n):
    """n keys drawn from 1 to 4 distinct bit patterns (long runs of equal keys: stability)."""
    pool = uniform(rng, dtype, int(rng.integers(1, 5)))
    return pool[rng.integers(0, len(pool), n)] if n else pool[:0]


def special_heavy(rng, dtype, n):
    """Floats mostly NaN (both signs, many payloads), +-0 and +-inf; other types: uniform bits."""
    d = np.dtype(dtype)
    if d.kind != "f":
        return uniform(rng, d, n)
    codec = key_codec(d)
    pool = special_bits(d)[0][:8]   # zeros, infinities, NaNs
    out = float_specials(rng, d, n).view(codec.unsigned_dtype).copy()
    pick = rng.random(n) < 0.7
    out[pick] = pool[rng.integers(0, len(pool), int(pick.sum()))]
    return out.view(d)


# data.py's distributions that matter here, and two of this file's own
DISTRIBUTIONS = dict({name: data.DISTRIBUTIONS[name] for name in
                      ("uniform", "all_equal", "float_specials", "sorted", "reverse_sorted")},
                     few_distinct=few_distinct, special_heavy=special_heavy)


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


def _check_case(queue, sorter, alloc, c):
    """One drawn case; the keys sit in the middle of a larger array, whose other elements must
    keep their bits, and temporaries and argsort's output start full of poison."""
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
