"""Top-k (MSD radix select) against numpy: every dtype, k at its boundaries, ties, NaN, clustered
data, 1-D and 2-D, every route (unsorted, local-memory sort, global sort), 64-bit positions."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools  # noqa: F401  (cl.tools)
import pytest

import clradix
import clradix.selector as selector_mod
from clradix.keys import KEY_DTYPES

import data
from conftest import poison
from reference import bits_of, check_topk as check


def run(queue, x, k, largest=True, sorted_=True, selector=None):
    a = cl_array.to_device(queue, x)
    if selector is None:
        values, indices = clradix.topk(a, k, largest=largest, sorted=sorted_)
    else:
        values, indices, evt = selector.topk(queue, a, k, largest=largest, sorted=sorted_)
        evt.wait()
    np.testing.assert_array_equal(bits_of(a.get()), bits_of(x))   # input unchanged
    return values, indices


@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=str)
@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
@pytest.mark.parametrize("sorted_", [True, False], ids=["sorted", "unsorted"])
def test_every_dtype(queue, rng, dtype, largest, sorted_):
    x = data.float_specials(rng, dtype, 5000)
    for k in (1, 7, 100, 4999, 5000):
        values, indices = run(queue, x, k, largest, sorted_)
        check(x, k, values, indices, largest, sorted_)


@pytest.mark.parametrize("dist", ["all_equal", "distinct16", "low_bits", "high_bits",
                                  "entropy_reduced", "sorted", "reverse_sorted"])
@pytest.mark.parametrize("dtype", [np.uint32, np.float32, np.int64, np.float16], ids=str)
def test_distributions(queue, rng, dist, dtype):
    x = data.DISTRIBUTIONS[dist](rng, dtype, 3000)
    for k in (1, 64, 2999):
        for largest in (True, False):
            values, indices = run(queue, x, k, largest)
            check(x, k, values, indices, largest, True)


def test_k_at_digit_bucket_edges(queue, rng):
    """k equal to, one below and one above the size of the top digit's buckets: the select
    stops early when a bucket is exactly what is still needed."""
    x = rng.integers(0, 1 << 24, 20000).astype(np.uint32)
    top = rng.integers(0, 20000, 37)
    x[top] = (np.uint32(0xFF) << 24) | rng.integers(0, 1 << 24, 37).astype(np.uint32)
    x[top[:5]] = x[top[0]]                  # ties inside the top bucket
    m = int((x >> 24 == 0xFF).sum())
    for k in (m - 1, m, m + 1, 2 * m):
        for sorted_ in (True, False):
            values, indices = run(queue, x, k, True, sorted_)
            check(x, k, values, indices, True, sorted_)


def test_boundary_lengths(queue, rng):
    for n in (1, 2, 3, 255, 256, 257, 2047, 2048, 2049, 4097):
        x = rng.standard_normal(n).astype(np.float32)
        for k in sorted({1, n // 2, n - 1, n} - {0}):
            values, indices = run(queue, x, k)
            check(x, k, values, indices, True, True)


def test_nan_counts_as_largest(queue):
    x = np.array([1.0, np.nan, 3.0, -np.nan, 2.0, np.inf, -0.0, 0.0, np.nan], np.float32)
    values, indices = run(queue, x, 4, largest=True)
    np.testing.assert_array_equal(indices.get(), [1, 3, 8, 5])
    values, indices = run(queue, x, 4, largest=False)
    np.testing.assert_array_equal(indices.get(), [6, 7, 0, 4])   # -0.0 == +0.0: by position
    values, indices = run(queue, x, 9, largest=False)
    np.testing.assert_array_equal(indices.get(), [6, 7, 0, 4, 2, 5, 1, 3, 8])


def test_clustered_overflows_candidates(queue, rng):
    """Values sharing their top 20 bits: the pivot bucket is larger than the candidate buffer,
    so passes re-read the input instead of writing candidates."""
    n = 100_000
    x = ((np.uint32(0xABCDE) << 12) | rng.integers(0, 1 << 12, n).astype(np.uint32))
    for k in (1, 1000, 60_000):
        for largest in (True, False):
            values, indices = run(queue, x, k, largest)
            check(x, k, values, indices, largest, True)
    f = x.view(np.float32)
    values, indices = run(queue, f, 1000)
    check(f, 1000, values, indices, True, True)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int64], ids=str)
def test_rows(queue, rng, dtype):
    x = data.float_specials(rng, dtype, 37 * 300).reshape(37, 300)
    x[3] = x[3, 0]                           # an all-equal row
    for k in (1, 5, 64, 299, 300):
        for sorted_ in (True, False):
            values, indices = run(queue, x, k, True, sorted_)
            assert values.shape == (37, k) and indices.shape == (37, k)
            check(x, k, values, indices, True, sorted_)


def test_rows_longer_than_tiles(queue, rng):
    """Several work-groups per row and several rows at once."""
    x = rng.standard_normal((3, 70_000)).astype(np.float32)
    for k in (1, 1000):
        values, indices = run(queue, x, k)
        check(x, k, values, indices, True, True)


@pytest.mark.parametrize("rows", [1, 5])
def test_global_sort_route(ctx, queue, rng, rows):
    """k above the local-memory sort: the selected pairs are ordered by the radix sort."""
    sel = clradix.Selector(ctx, sort_size=4)
    x = data.distinct16(rng, np.float32, rows * 500).reshape(rows, 500)
    for k in (5, 100, 500):
        for largest in (True, False):
            values, indices = run(queue, x, k, largest, True, selector=sel)
            check(x, k, values, indices, largest, True)


def test_64bit_positions(ctx, queue, rng, monkeypatch):
    """The kernels with 64-bit positions and counters, forced at a small size."""
    monkeypatch.setattr(selector_mod, "INDEX32_LIMIT", 16)
    sel = clradix.Selector(ctx)
    x = rng.integers(0, 100, (2, 3000)).astype(np.uint16)
    for k in (1, 50, 3000):
        values, indices = run(queue, x, k, True, True, selector=sel)
        check(x, k, values, indices, True, True)


def test_buffer_form_events_and_outputs(ctx, queue, rng):
    sel = clradix.Selector(ctx)
    x = rng.standard_normal((4, 1000)).astype(np.float32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, x.nbytes)
    fill = cl.enqueue_copy(queue, buf, x, is_blocking=False)
    values_out = cl_array.empty(queue, (4, 10), np.float32)
    indices_out = cl_array.empty(queue, (4, 10), np.uint32)
    poison(queue, values_out.data)
    poison(queue, indices_out.data)
    values, indices, evt = sel.topk(queue, buf, 10, dtype=np.float32, rows=4, wait_for=[fill],
                                    values_out=values_out, indices_out=indices_out)
    assert isinstance(evt, cl.Event)
    assert values is values_out and indices is indices_out
    evt.wait()
    check(x, 10, values_out, indices_out, True, True)


def test_poisoned_temporaries(ctx, queue, rng, poisoning_allocator):
    """Every temporary starts full of poison: nothing may depend on its old contents."""
    sel = clradix.Selector(ctx, allocator=poisoning_allocator)
    x = rng.integers(0, 20, (3, 5000)).astype(np.int32)
    for k, sorted_ in ((1, True), (300, False), (3000, True)):
        values, indices = run(queue, x, k, True, sorted_, selector=sel)
        check(x, k, values, indices, True, sorted_)
    assert poisoning_allocator.allocated


def test_k_zero_and_refusals(ctx, queue):
    a = cl_array.to_device(queue, np.arange(10, dtype=np.float32))
    values, indices = clradix.topk(a, 0)
    assert values.shape == (0,) and indices.shape == (0,)
    with pytest.raises(ValueError, match="k=11 exceeds the row length 10"):
        clradix.topk(a, 11)
    with pytest.raises(ValueError, match="non-negative"):
        clradix.topk(a, -1)
    with pytest.raises(TypeError, match="k must be an integer"):
        clradix.topk(a, 2.0)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        clradix.topk(cl_array.zeros(queue, (2, 2, 2), np.float32), 1)
    with pytest.raises(ValueError, match="last axis"):
        clradix.topk(cl_array.zeros(queue, (2, 3), np.float32), 1, axis=0)
    with pytest.raises(ValueError, match="not C-contiguous"):
        clradix.topk(cl_array.zeros(queue, (4, 6), np.float32)[:, ::2], 1)
    with pytest.raises(TypeError, match="unsupported key dtype"):
        clradix.topk(cl_array.zeros(queue, 4, np.complex64), 1)
    sel = clradix.Selector(ctx)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 40)
    with pytest.raises(ValueError, match="does not split into 3 equal rows"):
        sel.topk(queue, buf, 1, rows=3)
    with pytest.raises(TypeError, match="indices_out: expected dtype uint32"):
        sel.topk(queue, a, 2, indices_out=cl_array.empty(queue, 2, np.int64))
    np.testing.assert_array_equal(a.get(), np.arange(10, dtype=np.float32))


def test_memory_pool_allocator(ctx, queue, rng):
    pool = cl.tools.MemoryPool(cl.tools.ImmediateAllocator(queue))
    sel = clradix.Selector(ctx, allocator=pool)
    x = rng.standard_normal((2, 3000)).astype(np.float32)
    for k in (10, 3000):
        values, indices = run(queue, x, k, True, True, selector=sel)
        check(x, k, values, indices, True, True)


def test_many_tiles_per_group(ctx, queue, rng):
    sel = clradix.Selector(ctx, items_per_thread=2, groups_per_cu=1)
    x = rng.integers(0, 40, (3, 20000)).astype(np.int32)
    for k in (1, 5000, 20000):
        for sorted_ in (True, False):
            values, indices = run(queue, x, k, True, sorted_, selector=sel)
            check(x, k, values, indices, True, sorted_)
