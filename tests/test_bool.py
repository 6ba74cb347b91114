"""bool keys, sorted as their bytes (False < True, numpy's and torch's order): sort, argsort and
top-k of 1-D arrays and of each row of 2-D ones, numpy and pyopencl inputs, the Sorter on
Buffers, and the Selector; every result compared with numpy on seeded random data. bool is not in
KEY_DTYPES (numpy's numeric types), so the suites that run every key dtype do not build it."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clradix

from conftest import check_sort

SIZES = (0, 1, 2, 3, 7, 100, 1001, 20_001, 131_075)
SHAPES = ((1, 1), (4, 0), (0, 4), (5, 7), (3, 1001), (33, 257))


def bools(rng, shape, p_true=0.5):
    """Random bools, True with probability ``p_true`` (long runs of ties either way)."""
    return rng.random(shape) < p_true


def ref_top(x, k, largest):
    """numpy's answer along the last axis: the stable order of the keys (of ~x for the largest,
    True first), its first k positions, and the keys there."""
    order = np.argsort(~x if largest else x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, -1), order


@pytest.fixture(scope="module")
def sorter(ctx):
    return clradix.Sorter(ctx)


@pytest.mark.parametrize("n", SIZES)
def test_sorter(queue, sorter, rng, n):
    """Sorter.sort (keys alone, with values) and Sorter.argsort, both directions."""
    keys = bools(rng, n, p_true=rng.random())
    for op in ("keys", "pairs", "argsort"):
        for descending in (False, True):
            check_sort(queue, sorter, keys, op, descending=descending, what="bool")


@pytest.mark.parametrize("n", SIZES)
def test_numpy_like_functions(queue, rng, n):
    """clradix.sort / argsort / topk of numpy bools (numpy out) and of pyopencl Arrays."""
    x = bools(rng, n)
    want = np.argsort(x, kind="stable")
    for got_sort, got_argsort in [
            (clradix.sort(x, queue=queue), clradix.argsort(x, queue=queue)),
            (clradix.sort(cl_array.to_device(queue, x)).get(),
             clradix.argsort(cl_array.to_device(queue, x)).get())]:
        assert got_sort.dtype == np.bool_ and got_sort.shape == (n,)
        np.testing.assert_array_equal(got_sort, np.sort(x, kind="stable"))
        np.testing.assert_array_equal(got_argsort, want)
    # descending: True first, equal keys in increasing position
    down = np.argsort(~x, kind="stable")
    np.testing.assert_array_equal(clradix.argsort(x, -1, descending=True, queue=queue), down)
    np.testing.assert_array_equal(clradix.sort(x, descending=True, queue=queue), x[down])
    for k in sorted({0, min(1, n), min(5, n), n // 2, n}):
        for largest in (True, False):
            values, indices = clradix.topk(x, k, largest=largest, queue=queue)
            want_v, want_i = ref_top(x, k, largest)
            assert values.dtype == np.bool_ and indices.dtype == np.int64
            np.testing.assert_array_equal(indices, want_i, err_msg=f"k={k} largest={largest}")
            np.testing.assert_array_equal(values, want_v, err_msg=f"k={k} largest={largest}")


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_rows(queue, rng, shape):
    """Each row of a 2-D bool array: sort, argsort (both directions) and top-k."""
    x = bools(rng, shape)
    np.testing.assert_array_equal(clradix.sort(x, queue=queue), np.sort(x, axis=-1, kind="stable"))
    np.testing.assert_array_equal(clradix.argsort(x, queue=queue),
                                  np.argsort(x, axis=-1, kind="stable"))
    np.testing.assert_array_equal(clradix.argsort(x, descending=True, queue=queue),
                                  np.argsort(~x, axis=-1, kind="stable"))
    d = cl_array.to_device(queue, x)
    np.testing.assert_array_equal(clradix.sort(d, axis=1).get(), np.sort(x, axis=-1))
    for k in sorted({0, min(1, shape[1]), shape[1] // 3, shape[1]}):
        for largest in (True, False):
            values, indices = clradix.topk(d, k, largest=largest)
            want_v, want_i = ref_top(x, k, largest)
            np.testing.assert_array_equal(indices.get(), want_i, err_msg=f"k={k}")
            np.testing.assert_array_equal(values.get(), want_v, err_msg=f"k={k}")


def test_buffers(ctx, queue, sorter, rng):
    """A raw Buffer of bools: Sorter.sort(dtype=bool) in place, Sorter.argsort and
    Selector.topk (rows of a Buffer) with dtype=bool."""
    x = bools(rng, 4 * 999)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
    idx, evt = sorter.argsort(queue, buf, dtype=bool)
    evt.wait()
    np.testing.assert_array_equal(idx.get(), np.argsort(x, kind="stable"))
    values, indices, evt = clradix.Selector(ctx).topk(queue, buf, 10, dtype=bool, rows=4)
    evt.wait()
    want_v, want_i = ref_top(x.reshape(4, 999), 10, True)
    np.testing.assert_array_equal(indices.get(), want_i)
    np.testing.assert_array_equal(values.get(), want_v)
    sorter.sort(queue, buf, dtype=bool, descending=True).wait()
    got = np.empty_like(x)
    cl.enqueue_copy(queue, got, buf)
    np.testing.assert_array_equal(got, np.sort(x)[::-1])
    sorter.sort(queue, buf, dtype=np.bool_, n=1000).wait()   # the first 1000 only
    cl.enqueue_copy(queue, got, buf)
    expect = np.sort(x)[::-1].copy()
    expect[:1000] = np.sort(expect[:1000])
    np.testing.assert_array_equal(got, expect)
