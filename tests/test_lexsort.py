"""clradix.lexsort, Sorter.lexsort and Sorter.sort_lex against numpy.lexsort: the last key most
significant, mixed key dtypes, a 2-D array of keys, all-equal, all-distinct, NaN, empty and one
element, descending (every key reversed, ties in input order), out= and index dtypes, strided
keys; property-based cases with hypothesis."""

import numpy as np
import pyopencl.array as cl_array
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clradix
from clradix.core.keys import KEY_DTYPES, key_codec
from data import float_specials
from reference import bits_of

DTYPES = [np.dtype(d) for d in KEY_DTYPES]


def few(rng, dtype, n, k=4):
    pool = float_specials(rng, np.dtype(dtype), k)
    return pool[rng.integers(0, k, n)]


def ref_lexsort(keys, descending=False):
    """numpy.lexsort of the keys' order keys (NaN last, -0.0 == +0.0), each reversed when
    descending."""
    ok = [key_codec(k.dtype).order_key(k) for k in keys]
    return np.lexsort([~o if descending else o for o in ok])


@pytest.fixture(scope="module")
def sorter(ctx):
    return clradix.Sorter(ctx)


def test_mixed_dtypes_match_numpy(queue, rng):
    for nkeys in (1, 2, 3):
        dts = [DTYPES[int(i)] for i in rng.integers(0, len(DTYPES), nkeys)]
        keys = [few(rng, dt, 1000) for dt in dts]
        got = clradix.lexsort([cl_array.to_device(queue, k) for k in keys])
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got.get(), ref_lexsort(keys), err_msg=str(dts))
        if not any(np.isnan(k).any() for k in keys if k.dtype.kind == "f"):
            np.testing.assert_array_equal(got.get(), np.lexsort(keys))
        np.testing.assert_array_equal(clradix.lexsort(keys, queue=queue), ref_lexsort(keys))


def test_shapes_and_edges(queue, rng):
    k2 = rng.integers(0, 3, (3, 200)).astype(np.int16)
    np.testing.assert_array_equal(clradix.lexsort(cl_array.to_device(queue, k2)).get(),
                                  np.lexsort(k2))
    np.testing.assert_array_equal(clradix.lexsort(k2, queue=queue), np.lexsort(k2))
    one = np.array([3, 1, 2, 1], np.uint8)
    np.testing.assert_array_equal(clradix.lexsort(one, queue=queue), np.lexsort(one))
    np.testing.assert_array_equal(clradix.lexsort([one], queue=queue), np.lexsort([one]))
    with pytest.raises(ValueError, match=r"pass \[a\]"):
        clradix.lexsort(cl_array.to_device(queue, one))
    for keys in ([np.zeros(0, np.float32), np.zeros(0, np.int8)], [np.array([5.0])],
                 [np.full(300, 7, np.int64), np.full(300, -1.0)],
                 [np.arange(300)[::-1].copy(), np.arange(300) % 2]):
        np.testing.assert_array_equal(clradix.lexsort(keys, queue=queue), np.lexsort(keys))
    with pytest.raises(TypeError, match="len > 0"):
        clradix.lexsort([], queue=queue)
    with pytest.raises(ValueError, match="same shape"):
        clradix.lexsort([cl_array.to_device(queue, np.arange(3)),
                         cl_array.to_device(queue, np.arange(4))])


def test_index_dtype_out_and_strided(queue, rng):
    keys = [few(rng, np.float32, 500), few(rng, np.int8, 500)]
    d = [cl_array.to_device(queue, np.repeat(k, 2))[::2] for k in keys]
    want = ref_lexsort(keys)
    got = clradix.lexsort(d, index_dtype=np.uint32)
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got.get(), want)
    big = cl_array.zeros(queue, 510, np.int64)
    out = big[7:507]
    assert clradix.lexsort(d, out=out) is out
    np.testing.assert_array_equal(out.get(), want)
    np.testing.assert_array_equal(big.get()[:7], 0)
    np.testing.assert_array_equal(big.get()[507:], 0)


@pytest.mark.parametrize("descending", [False, True])
def test_sorter_lexsort_and_sort_lex(queue, rng, sorter, descending):
    keys = [few(rng, np.uint16, 2000, 5), few(rng, np.float64, 2000, 6),
            few(rng, np.int32, 2000, 3)]
    order = ref_lexsort(keys, descending)
    idx, evt = sorter.lexsort(queue, [cl_array.to_device(queue, k) for k in keys],
                              descending=descending)
    evt.wait()
    assert idx.dtype == np.uint32
    np.testing.assert_array_equal(idx.get(), order)
    d_keys = [cl_array.to_device(queue, k) for k in keys]
    vals = rng.random((2000, 3)).astype(np.float32)
    d_vals = cl_array.to_device(queue, vals)
    sorter.sort_lex(queue, d_keys, values=d_vals, descending=descending).wait()
    for dk, k in zip(d_keys, keys):
        np.testing.assert_array_equal(bits_of(dk.get()), bits_of(k[order]))
    np.testing.assert_array_equal(d_vals.get(), vals[order])


@st.composite
def lex_cases(draw):
    nkeys = draw(st.integers(1, 3))
    return dict(dtypes=[draw(st.sampled_from(DTYPES)) for _ in range(nkeys)],
                n=draw(st.integers(0, 300)), k=draw(st.integers(1, 6)),
                seed=draw(st.integers(0, 2 ** 32 - 1)))


def test_property_matches_numpy(queue):
    @settings(max_examples=25, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(c=lex_cases())
    def check(c):
        r = np.random.default_rng(c["seed"])
        keys = [few(r, dt, c["n"], c["k"]) for dt in c["dtypes"]]
        got = clradix.lexsort([cl_array.to_device(queue, k) for k in keys])
        np.testing.assert_array_equal(got.get(), ref_lexsort(keys), err_msg=str(c))
    check()
