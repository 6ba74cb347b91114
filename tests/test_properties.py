"""Property-based tests (hypothesis): sort and argsort equal numpy's under clradix's semantics.

Every example draws a key dtype, a length (0, 1, and around the tile edges of the policy the
planner picks on this device), a distribution, a bit range, a direction and a mode (keys only,
keys with values, argsort), sorts on the device and compares with the numpy reference. Examples
are derandomized, so every run (and CI) checks the same cases; ``CLRADIX_HYPOTHESIS_EXAMPLES``
sets how many.
"""

import os

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clradix
from clradix.keys import KEY_DTYPES, key_codec

from conftest import poison
from data import all_equal, float_specials, reverse_sorted, sorted_keys, special_bits, uniform
from reference import bits_of, ref_argsort

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


DISTRIBUTIONS = {
    "uniform": uniform,
    "few_distinct": few_distinct,
    "all_equal": all_equal,
    "float_specials": float_specials,
    "special_heavy": special_heavy,
    "sorted": sorted_keys,
    "reversed": reverse_sorted,
}


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


def _poisoning_allocator(queue):
    def alloc(nbytes):
        buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
        poison(queue, buf)
        return buf
    return alloc


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


def _check_case(queue, sorter, c):
    dtype, n, mode = c["dtype"], c["n"], c["mode"]
    rng = np.random.default_rng(c["seed"])
    keys = DISTRIBUTIONS[c["dist"]](rng, dtype, n)
    kw = dict(descending=c["descending"], begin_bit=c["begin_bit"], end_bit=c["end_bit"])
    order = ref_argsort(keys, **kw)
    # the keys sit in the middle of a larger array: the elements around them must not change
    around = uniform(rng, dtype, n + 2 * PAD)
    around[PAD:PAD + n] = keys
    d_all = cl_array.to_device(queue, around)
    d_keys = d_all[PAD:PAD + n]
    alloc = _poisoning_allocator(queue)
    what = f"{c}"
    if mode == "argsort":
        out = cl_array.empty(queue, n, np.uint32)
        if n:
            poison(queue, out.base_data)
        idx, evt = sorter.argsort(queue, d_keys, out=out, allocator=alloc, **kw)
        evt.wait()
        assert idx is out
        np.testing.assert_array_equal(idx.get(), order, err_msg=what)
        np.testing.assert_array_equal(bits_of(d_all.get()), bits_of(around), err_msg=what)
        return
    vals = None
    if mode == "pairs":
        vals = cl_array.to_device(queue, np.arange(n, dtype=np.uint32))
    sorter.sort(queue, d_keys, values=vals, allocator=alloc, **kw).wait()
    got = d_all.get()
    np.testing.assert_array_equal(bits_of(got[PAD:PAD + n]), bits_of(keys[order]), err_msg=what)
    np.testing.assert_array_equal(bits_of(got[:PAD]), bits_of(around[:PAD]), err_msg=what)
    np.testing.assert_array_equal(bits_of(got[PAD + n:]), bits_of(around[PAD + n:]), err_msg=what)
    if vals is not None:
        np.testing.assert_array_equal(vals.get(), order, err_msg=what)
    if (kw["begin_bit"], kw["end_bit"]) == (0, key_codec(dtype).bits) and not kw["descending"]:
        # independent of clradix's reference: numpy's own stable sort and argsort
        np.testing.assert_array_equal(bits_of(got[PAD:PAD + n]),
                                      bits_of(np.sort(keys, kind="stable")), err_msg=what)
        if vals is not None:
            np.testing.assert_array_equal(vals.get(), np.argsort(keys, kind="stable"),
                                          err_msg=what)


def test_sort_matches_numpy(queue, sorter, edges_of):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(c=cases(edges_of))
    def check(c):
        _check_case(queue, sorter, c)
    check()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_and_mode(queue, sorter, edges_of, dtype, mode):
    """A few examples per dtype and mode, so that each is drawn whatever the budget above."""
    @settings(max_examples=max(3, EXAMPLES // 40), deadline=None, derandomize=True,
              database=None, suppress_health_check=[HealthCheck.too_slow,
                                                    HealthCheck.data_too_large])
    @given(c=cases(edges_of, dtypes=(dtype,), modes=(mode,)))
    def check(c):
        _check_case(queue, sorter, c)
    check()
