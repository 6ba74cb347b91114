"""clradix.searchsorted against numpy.searchsorted: every key dtype, both sides, numpy's NaN order
(NaN after +inf, -0.0 == +0.0), sorter=, rows of 2-D arrays (each row of values in the same row
of keys, as torch.searchsorted), empty and one-element inputs, numpy in and numpy out, events and
refusals; property-based cases with hypothesis."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clradix
from clradix.core.keys import KEY_DTYPES
from data import all_equal, float_specials

DTYPES = [np.dtype(d) for d in KEY_DTYPES] + [np.dtype(np.bool_)]


def keys_of(rng, dtype, n, dist="random"):
    if dist == "equal":
        return all_equal(rng, dtype, n)
    if dist == "distinct":
        if dtype.kind == "b":
            return np.arange(n) % 2 == 1
        return np.arange(n).astype(dtype)
    return float_specials(rng, dtype, n) if dtype.kind != "b" else rng.random(n) < 0.5


def ref(sorted_, values, side):
    """numpy's answer; rows of a 2-D ``sorted_`` each with its row of ``values``."""
    if sorted_.ndim == 1:
        return np.searchsorted(sorted_, values, side)
    return np.stack([np.searchsorted(r, v, side) for r, v in zip(sorted_, values)])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_both_sides(queue, rng, dtype):
    for dist in ("random", "equal", "distinct"):
        s = np.sort(keys_of(rng, dtype, 300, dist))
        v = np.concatenate([keys_of(rng, dtype, 120), s[::7]])   # present and absent values
        d_s, d_v = cl_array.to_device(queue, s), cl_array.to_device(queue, v)
        for side in ("left", "right"):
            got = clradix.searchsorted(d_s, d_v, side=side)
            assert isinstance(got, cl_array.Array) and got.dtype == np.int64
            np.testing.assert_array_equal(got.get(), ref(s, v, side), err_msg=f"{dist} {side}")
        np.testing.assert_array_equal(d_s.get(), s)


def test_nan_and_signed_zeros_follow_numpy(queue):
    s = np.array([-np.inf, -1, -0.0, 0.0, 0.0, 2, np.inf, np.nan, np.nan], np.float32)
    v = np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5], np.float32)
    for side in ("left", "right"):
        np.testing.assert_array_equal(clradix.searchsorted(s, v, side, queue=queue),
                                      np.searchsorted(s, v, side))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8], ids=str)
def test_rows_of_a_2d_array(queue, rng, dtype):
    dtype = np.dtype(dtype)
    s = np.sort(keys_of(rng, dtype, 5 * 41).reshape(5, 41), axis=-1)
    v = keys_of(rng, dtype, 5 * 17).reshape(5, 17)
    for side in ("left", "right"):
        got = clradix.searchsorted(cl_array.to_device(queue, s), cl_array.to_device(queue, v),
                                   side=side)
        assert got.shape == v.shape
        np.testing.assert_array_equal(got.get(), ref(s, v, side))
    # three axes: the rows of every leading index
    s3, v3 = s[:4].reshape(2, 2, 41), v[:4].reshape(2, 2, 17)
    got = clradix.searchsorted(s3, v3, queue=queue)
    np.testing.assert_array_equal(got.reshape(4, 17), ref(s[:4], v[:4], "left"))


def test_sorter_on_device_and_host(queue, rng):
    a = float_specials(rng, np.dtype(np.float64), 500)
    order = np.argsort(a, kind="stable")
    v = float_specials(rng, np.dtype(np.float64), 200)
    for side in ("left", "right"):
        want = np.searchsorted(a, v, side, sorter=order)
        np.testing.assert_array_equal(clradix.searchsorted(a, v, side, sorter=order,
                                                           queue=queue), want)
        for odt in (np.int32, np.uint64):
            got = clradix.searchsorted(cl_array.to_device(queue, a), cl_array.to_device(queue, v),
                                       side, cl_array.to_device(queue, order.astype(odt)))
            np.testing.assert_array_equal(got.get(), want)
    rows = np.stack([a[:100], a[100:200]])
    rorder = np.argsort(rows, axis=-1, kind="stable")
    got = clradix.searchsorted(cl_array.to_device(queue, rows),
                               cl_array.to_device(queue, v[:60].reshape(2, 30)),
                               sorter=cl_array.to_device(queue, rorder))
    want = np.stack([np.searchsorted(r, x, sorter=o)
                     for r, x, o in zip(rows, v[:60].reshape(2, 30), rorder)])
    np.testing.assert_array_equal(got.get(), want)
    with pytest.raises(ValueError, match="Sorter index out of range"):
        clradix.searchsorted(a, v, sorter=order + 1, queue=queue)


def _with_splitters(queue, monkeypatch, levels):
    """Splitters of ``levels`` levels on every device (CPUs keep none by default): the search
    policy of the device with ``local_levels`` set, given to the context's families; the levels
    of each search made ready are recorded in the list returned."""
    from dataclasses import replace
    from clradix.core.device import DeviceProfile
    from clradix.drivers import search
    from clradix.planning.families import families_for
    from clradix.policies.families import family_policy
    policy = family_policy("search", DeviceProfile.from_device(queue.device))
    monkeypatch.setitem(families_for(queue.context).policies, "search",
                        replace(policy, local_levels=levels))
    taken = []
    chosen = search.local_levels
    monkeypatch.setattr(search, "local_levels",
                        lambda *a: (taken.append(chosen(*a)), taken[-1])[1])
    return taken


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.uint64,
                                   np.bool_], ids=str)
def test_splitters_in_local_memory(queue, rng, monkeypatch, dtype):
    """One row searched first among its splitters in local memory (3 levels: 7 splitters), at
    row lengths around 2^3 and far beyond it, values present, absent, NaN and signed zeros, both
    sides, with and without a sorter; a row below 2^3 keys keeps none."""
    taken = _with_splitters(queue, monkeypatch, 3)
    dtype = np.dtype(dtype)
    for n in (7, 8, 9, 15, 16, 17, 100, 1001):
        for dist in ("random", "equal", "distinct"):
            s = np.sort(keys_of(rng, dtype, n, dist))
            v = np.concatenate([keys_of(rng, dtype, 300), s, s[:3]])
            if dtype.kind == "f":
                v[:4] = np.array([np.nan, -0.0, 0.0, -np.nan], dtype)
            d_s, d_v = cl_array.to_device(queue, s), cl_array.to_device(queue, v)
            order = rng.permutation(n)
            shuffled = cl_array.to_device(queue, s[np.argsort(order, kind="stable")])
            for side in ("left", "right"):
                what = f"n {n} {dist} {side}"
                got = clradix.searchsorted(d_s, d_v, side=side)
                np.testing.assert_array_equal(got.get(), ref(s, v, side), err_msg=what)
                # the same row stored shuffled, read through its sorter
                got = clradix.searchsorted(shuffled, d_v, side,
                                           cl_array.to_device(queue, order))
                np.testing.assert_array_equal(got.get(), ref(s, v, side), err_msg=what)
        assert taken[-1] == (3 if n >= 8 else 0), (n, taken)
    taken.clear()
    rows = np.sort(keys_of(rng, dtype, 3 * 40), axis=-1).reshape(3, 40)
    vals = keys_of(rng, dtype, 3 * 9).reshape(3, 9)
    got = clradix.searchsorted(cl_array.to_device(queue, rows), cl_array.to_device(queue, vals))
    np.testing.assert_array_equal(got.get(), ref(rows, vals, "left"))
    assert taken == [0]   # rows of a 2-D array: none


def test_splitters_at_the_default_levels(queue, rng, monkeypatch):
    """The default 11 levels (2047 splitters) at row lengths around 2^11."""
    from clradix.policies.families import SearchPolicy
    taken = _with_splitters(queue, monkeypatch, SearchPolicy().local_levels)
    for n in (2047, 2048, 2049, 6001):
        s = np.sort(float_specials(rng, np.dtype(np.float32), n))
        v = np.concatenate([float_specials(rng, np.dtype(np.float32), 3000), s[::3]])
        for side in ("left", "right"):
            got = clradix.searchsorted(cl_array.to_device(queue, s), cl_array.to_device(queue, v),
                                       side)
            np.testing.assert_array_equal(got.get(), ref(s, v, side), err_msg=f"{n} {side}")
        assert taken[-1] == (11 if n >= 2048 else 0)


def test_empty_one_and_scalar(queue):
    for s, v in [(np.array([], np.int32), np.array([3, -1], np.int32)),
                 (np.array([5], np.int32), np.array([], np.int32)),
                 (np.array([5], np.int32), np.array([4, 5, 6], np.int32)),
                 (np.array([], np.int32), np.array([], np.int32))]:
        for side in ("left", "right"):
            got = clradix.searchsorted(s, v, side, queue=queue)
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got, np.searchsorted(s, v, side))
    got = clradix.searchsorted([1.0, 2.0, 3.0], 2.5, queue=queue)
    assert got == 2 and np.ndim(got) == 0
    d = cl_array.to_device(queue, np.array([1, 3, 5], np.int16))
    np.testing.assert_array_equal(clradix.searchsorted(d, 3, "right").get(), 2)
    v2 = np.array([[0, 3], [6, 1]], np.int16)
    np.testing.assert_array_equal(clradix.searchsorted(d, v2).get(),
                                  np.searchsorted([1, 3, 5], v2))


def test_strided_views_index_dtype_out_and_events(queue, rng):
    s = np.sort(rng.standard_normal(400).astype(np.float32))
    big = cl_array.to_device(queue, np.repeat(s, 2))[::2]   # a strided view
    v = rng.standard_normal(50).astype(np.float32)
    dv = cl_array.to_device(queue, np.repeat(v, 3))[1::3]
    got = clradix.searchsorted(big, dv, index_dtype=np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.get(), np.searchsorted(s, v))
    out = cl_array.empty(queue, 50, np.uint32)
    out.fill(np.uint32(0xA5A5A5A5))
    gate = cl.UserEvent(queue.context)
    res = clradix.searchsorted(cl_array.to_device(queue, s), cl_array.to_device(queue, v),
                               "right", out=out, wait_for=[gate])
    assert res is out
    gate.set_status(cl.command_execution_status.COMPLETE)
    np.testing.assert_array_equal(out.get(), np.searchsorted(s, v, "right"))


def test_refusals(queue):
    s = cl_array.to_device(queue, np.arange(10, dtype=np.float32))
    with pytest.raises(ValueError, match="side must be"):
        clradix.searchsorted(s, s, side="middle")
    with pytest.raises(TypeError, match="float32 keys"):
        clradix.searchsorted(s, cl_array.to_device(queue, np.arange(3, dtype=np.int32)))
    with pytest.raises(ValueError, match="needs values of shape"):
        clradix.searchsorted(s.reshape(2, 5), cl_array.to_device(queue, np.zeros((3, 2),
                                                                                 np.float32)))
    with pytest.raises(ValueError, match="sorter: expected the shape"):
        clradix.searchsorted(s, s, sorter=cl_array.to_device(queue, np.arange(3)))
    with pytest.raises(ValueError, match="at least one axis"):
        clradix.searchsorted(cl_array.to_device(queue, np.float32(1)), s)


EXAMPLES = 30


@st.composite
def search_cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    return dict(dtype=dtype, n=draw(st.integers(0, 70)), m=draw(st.integers(0, 40)),
                rows=draw(st.sampled_from([0, 1, 3])), side=draw(st.sampled_from(["left",
                                                                                   "right"])),
                dist=draw(st.sampled_from(["random", "equal", "distinct"])),
                seed=draw(st.integers(0, 2 ** 32 - 1)))


def test_property_matches_numpy(queue):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(c=search_cases())
    def check(c):
        r = np.random.default_rng(c["seed"])
        rows = max(c["rows"], 1)
        s = keys_of(r, c["dtype"], rows * c["n"], c["dist"]).reshape(rows, c["n"])
        s = np.sort(s, axis=-1)
        v = keys_of(r, c["dtype"], rows * c["m"]).reshape(rows, c["m"])
        if not c["rows"]:
            s, v = s[0], v[0]
        got = clradix.searchsorted(cl_array.to_device(queue, s), cl_array.to_device(queue, v),
                                   c["side"])
        np.testing.assert_array_equal(got.get(), ref(s, v, c["side"]), err_msg=str(c))
    check()


def test_host_values_keep_numpys_insertion_points(queue):
    """Python and numpy values of another type than the keys give numpy's insertion points,
    which numpy finds comparing in the wider type: never a value wrapped around or rounded to
    a key it is not equal to; an integer outside device keys' type is refused."""
    f16 = np.array([-np.inf, -1, 0, 1, 65504, np.inf, np.nan], np.float16)
    f32 = np.array([0, np.float32(0.1), 1, 2 ** 24], np.float32)
    cases = [(f16, [1.0001, 65519.0, 65520.0, 1e10, -1e10, 0.99999, np.nan]),
             (f32, [0.1, 1 + 1e-9, 1 - 1e-9, 2 ** 24 + 1, 2 ** 24 - 0.5])]
    for keys, values in cases:
        d = cl_array.to_device(queue, keys)
        for side in ("left", "right"):
            for x in values:
                want = np.searchsorted(keys, x, side)
                got = clradix.searchsorted(d, x, side)
                assert got.shape == () and got.get() == want, (keys.dtype, x, side)
                assert clradix.searchsorted(keys, x, side, queue=queue) == want, (x, side)
    i8 = np.array([-128, -5, 0, 7, 127], np.int8)
    u64 = np.array([0, 5, 2 ** 64 - 1], np.uint64)
    for keys, x in [(i8, 300), (i8, -300), (u64, -1)]:
        for side in ("left", "right"):
            assert clradix.searchsorted(keys, x, side, queue=queue) == \
                np.searchsorted(keys, x, side), (keys.dtype, x, side)
        with pytest.raises(OverflowError, match="outside the range"):
            clradix.searchsorted(cl_array.to_device(queue, keys), x)
    i32 = np.array([1, 2, 3], np.int32)
    assert clradix.searchsorted(i32, 2 ** 40, queue=queue) == 3


def test_host_sorter_with_device_keys_is_checked(queue):
    d = cl_array.to_device(queue, np.array([3, 1, 2], np.int32))
    v = cl_array.to_device(queue, np.array([2, 3], np.int32))
    got = clradix.searchsorted(d, v, "right", np.array([1, 2, 0], np.int8))
    np.testing.assert_array_equal(got.get(), [2, 3])
    with pytest.raises(ValueError, match="Sorter index out of range"):
        clradix.searchsorted(d, v, sorter=[-1, 2, 0])
