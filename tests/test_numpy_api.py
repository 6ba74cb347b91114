"""The numpy-like functions as numpy's and the Array API's users call them: positional order
``(a, axis, kind, order)``, keyword-only ``descending`` (a bool), any shape and axis, ``axis=None``,
strided views, Fortran order, 0-d inputs, int64 indices, ``out=``, ``allocator=``, pooled results,
``wait_for=``; every result compared with numpy's on fresh seeded data, on every test device."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from numpy.exceptions import AxisError

import clradix
from clradix.core.sizes import check_index_dtype
from conftest import returns_within
from data import float_specials
from reference import bits_of, ref_argsort

SHAPES = [(37,), (5, 33), (3, 4, 29), (2, 3, 2, 17), (0,), (3, 0), (0, 4, 2), (1, 1, 1, 9)]
DTYPES = [np.float32, np.int16]


def ref_argsort_axis(x, axis, descending=False):
    """clradix's stable order (NaN last, -0 == +0) along ``axis`` (None: flattened), int64."""
    if axis is None:
        return ref_argsort(x.ravel(), descending).astype(np.int64)
    moved = np.moveaxis(x, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, moved.shape[-1])
    order = np.array([ref_argsort(r, descending) for r in flat], dtype=np.int64)
    return np.moveaxis(order.reshape(moved.shape), -1, axis)


def ref_topk_axis(x, k, axis, largest=True):
    order = ref_argsort_axis(x, axis, descending=largest)
    xs = x.ravel() if axis is None else x
    ax = -1 if axis is None else axis
    idx = np.take(order, np.arange(k), axis=ax)
    return np.take_along_axis(xs, idx, ax), idx


def data(rng, dtype, shape):
    return float_specials(rng, dtype, int(np.prod(shape))).reshape(shape)


def axes_of(ndim):
    return list(range(-ndim, ndim)) + [None]


def host(a):
    return a.get() if isinstance(a, cl_array.Array) else a


# ----------------------------------------------------------------------------- signatures

def test_positional_kind_never_means_descending(queue):
    """numpy's third positional parameter is kind: the call comes back ascending."""
    x = np.array([1, 3, 2], np.float32)
    np.testing.assert_array_equal(clradix.sort(x, -1, "stable", queue=queue), [1, 2, 3])
    np.testing.assert_array_equal(clradix.argsort(x, -1, "stable", queue=queue), [0, 2, 1])
    np.testing.assert_array_equal(clradix.sort(x, 0, "quicksort", None, queue=queue), [1, 2, 3])
    d = cl_array.to_device(queue, x)
    np.testing.assert_array_equal(clradix.sort(d, -1, "mergesort").get(), [1, 2, 3])
    np.testing.assert_array_equal(clradix.sort(d, descending=True).get(), [3, 2, 1])
    np.testing.assert_array_equal(clradix.argsort(d, descending=np.bool_(True)).get(), [1, 2, 0])


@pytest.mark.parametrize("bad", ["no", "yes", 1, 0, None, np.int64(1), 1.0])
def test_descending_must_be_a_bool(queue, bad):
    x = np.array([1, 3, 2], np.float32)
    d = cl_array.to_device(queue, x)
    for fn in (clradix.sort, clradix.argsort):
        for a in (x, d):
            with pytest.raises(TypeError, match="descending must be a bool"):
                fn(a, descending=bad, queue=queue)
    for name in ("largest", "sorted"):
        if name == "largest" and bad is None:   # largest=None: the default (mode decides)
            continue
        with pytest.raises(TypeError, match=f"{name} must be a bool"):
            clradix.topk(d, 2, **{name: bad})
    np.testing.assert_array_equal(d.get(), x)


def test_order_and_extra_positionals_refused(queue):
    d = cl_array.to_device(queue, np.arange(5, dtype=np.uint32))
    for fn in (clradix.sort, clradix.argsort):
        with pytest.raises(ValueError, match="order='a'.*structured arrays"):
            fn(d, -1, None, "a")
        with pytest.raises(TypeError):
            fn(d, -1, None, None, True)   # descending is keyword-only


def test_array_api_spellings(queue, rng):
    """sort(x, /, *, axis, descending, stable), argsort likewise, top_k(x, k, axis=, mode=)."""
    x = rng.standard_normal((4, 50)).astype(np.float32)
    d = cl_array.to_device(queue, x)
    np.testing.assert_array_equal(clradix.sort(d, axis=0, descending=False, stable=True).get(),
                                  np.sort(x, axis=0))
    np.testing.assert_array_equal(clradix.argsort(d, axis=1, descending=True, stable=False).get(),
                                  ref_argsort_axis(x, 1, True))
    r = clradix.top_k(d, 3, axis=-1, mode="smallest")
    assert isinstance(r, clradix.TopkResult) and isinstance(r, tuple)
    np.testing.assert_array_equal(r.indices.get(), np.argsort(x, axis=-1, kind="stable")[:, :3])
    np.testing.assert_array_equal(r.values.get(), np.sort(x, axis=-1)[:, :3])
    values, indices = clradix.topk(d, 3, 0, False, True)   # torch's positional order
    np.testing.assert_array_equal(indices.get(), np.argsort(x, axis=0, kind="stable")[:3])
    with pytest.raises(ValueError, match="mode must be 'largest' or 'smallest'"):
        clradix.topk(d, 3, mode="max")
    with pytest.raises(ValueError, match="contradicts largest=False"):
        clradix.topk(d, 3, largest=False, mode="largest")
    # the other conflict too (it once took mode silently), by keyword and by position
    with pytest.raises(ValueError, match="mode='smallest' contradicts largest=True"):
        clradix.topk(d, 3, largest=True, mode="smallest")
    with pytest.raises(ValueError, match="mode='smallest' contradicts largest=True"):
        clradix.topk(x, 3, -1, True, mode="smallest", queue=queue)
    r = clradix.topk(d, 3, largest=True, mode="largest")   # agreeing: taken
    np.testing.assert_array_equal(r.values.get(), -np.sort(-x, axis=-1)[:, :3])


# ----------------------------------------------------------------------------- shapes and axes

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_axis_of_every_shape(queue, rng, shape, dtype):
    x = data(rng, dtype, shape)
    d = cl_array.to_device(queue, x)
    for axis in axes_of(len(shape)):
        for descending in (False, True):
            order = ref_argsort_axis(x, axis, descending)
            want = np.take_along_axis(x.ravel() if axis is None else x, order,
                                      -1 if axis is None else axis)
            for a in (x, d):
                s = clradix.sort(a, axis, descending=descending, queue=queue)
                i = clradix.argsort(a, axis, descending=descending, queue=queue)
                assert type(s) is type(a) and type(i) is type(a)
                assert s.shape == want.shape and i.shape == want.shape
                assert s.dtype == x.dtype and i.dtype == np.int64
                np.testing.assert_array_equal(bits_of(host(s)), bits_of(want),
                                              err_msg=f"sort axis={axis} desc={descending}")
                np.testing.assert_array_equal(host(i), order,
                                              err_msg=f"argsort axis={axis} desc={descending}")
        if not descending:
            np.testing.assert_array_equal(clradix.sort(x, axis, queue=queue),
                                          np.sort(x, axis))   # numpy's own (NaN equal)
        length = x.size if axis is None else shape[axis]
        for k in sorted({0, min(1, length), min(3, length), length}):
            for largest in (True, False):
                rv, ri = ref_topk_axis(x, k, axis, largest)
                for a in (x, d):
                    v, i = clradix.topk(a, k, axis, largest, queue=queue)
                    assert i.dtype == np.int64 and v.shape == rv.shape == i.shape
                    np.testing.assert_array_equal(host(i), ri, err_msg=f"axis={axis} k={k}")
                    np.testing.assert_array_equal(bits_of(host(v)), bits_of(rv))
    np.testing.assert_array_equal(bits_of(d.get()), bits_of(x), err_msg="the input changed")


def test_strided_views_and_fortran_order(queue, rng):
    """Non-contiguous pyopencl views are gathered on the device, not refused; Fortran-ordered
    numpy arrays sort as numpy sorts them."""
    x = data(rng, np.float32, (24, 30))
    d = cl_array.to_device(queue, x)
    views = [(d[::2], x[::2]), (d[1::3], x[1::3]), (d.T, x.T), (d[:, 2:19], x[:, 2:19]),
             (d[::2, ::3], x[::2, ::3]), (d[3], x[3]), (d[:, 5], x[:, 5])]
    x3 = data(rng, np.int16, (4, 5, 6))
    d3 = cl_array.to_device(queue, x3)
    views += [(d3.transpose((2, 0, 1)), x3.transpose((2, 0, 1))), (d3[:, ::2, 1:], x3[:, ::2, 1:])]
    for view, want in views:
        for axis in axes_of(want.ndim):
            order = ref_argsort_axis(want, axis)
            np.testing.assert_array_equal(clradix.argsort(view, axis).get(), order)
            np.testing.assert_array_equal(clradix.sort(view, axis).get(), np.sort(want, axis))
            k = min(2, want.size if axis is None else want.shape[axis])
            v, i = clradix.topk(view, k, axis)
            rv, ri = ref_topk_axis(want, k, axis)
            np.testing.assert_array_equal(i.get(), ri)
    f = np.asfortranarray(x)
    for axis in (0, 1, -1, None):
        np.testing.assert_array_equal(clradix.sort(f, axis, queue=queue), np.sort(f, axis))
        np.testing.assert_array_equal(clradix.argsort(f, axis, queue=queue),
                                      ref_argsort_axis(x, axis))
    np.testing.assert_array_equal(bits_of(d.get()), bits_of(x), err_msg="the input changed")


def test_zero_d_as_numpy(queue):
    """A 0-d array: numpy's AxisError for sort along an axis, a 1-element result for
    axis=None; argsort as numpy's (its one element's position)."""
    x = np.array(5.0, np.float32)
    for a in (x, cl_array.to_device(queue, x)):
        with pytest.raises(AxisError):
            np.sort(x)
        with pytest.raises(AxisError, match="axis -1 is out of bounds for array of dimension 0"):
            clradix.sort(a, queue=queue)
        s = clradix.sort(a, None, queue=queue)
        assert s.shape == np.sort(x, None).shape == (1,)
        np.testing.assert_array_equal(host(s), [5.0])
        for axis in (-1, 0, None):
            i = clradix.argsort(a, axis, queue=queue)
            want = np.argsort(x, axis)
            assert i.shape == want.shape and i.dtype == want.dtype
            np.testing.assert_array_equal(host(i), want)
        with pytest.raises(AxisError):
            clradix.argsort(a, 1, queue=queue)
        v, i = clradix.topk(a, 1, None, queue=queue)
        np.testing.assert_array_equal(host(v), [5.0])
        np.testing.assert_array_equal(host(i), [0])


def test_lists_and_numpy_scalars(queue):
    np.testing.assert_array_equal(clradix.sort([3, 1, 2], queue=queue), [1, 2, 3])
    np.testing.assert_array_equal(clradix.argsort((3.0, 1.0, 2.0), queue=queue), [1, 2, 0])


# ----------------------------------------------------------------------------- index dtypes

@pytest.mark.parametrize("index_dtype", [np.int64, np.uint64, np.int32, np.uint32])
def test_index_dtype(queue, rng, index_dtype):
    x = data(rng, np.float32, (6, 700))
    d = cl_array.to_device(queue, x)
    for axis in (-1, 0, None):
        i = clradix.argsort(d, axis, index_dtype=index_dtype)
        assert i.dtype == np.dtype(index_dtype)
        np.testing.assert_array_equal(i.get(), ref_argsort_axis(x, axis))
        v, i = clradix.topk(d, 5, axis, index_dtype=index_dtype)
        assert i.dtype == np.dtype(index_dtype)
        np.testing.assert_array_equal(i.get(), ref_topk_axis(x, 5, axis)[1])
    # the queue-first calls: Sorter.argsort and Selector.topk take the same types
    sorter, sel = clradix.Sorter(queue.context), clradix.Selector(queue.context)
    flat = cl_array.to_device(queue, x.ravel())
    out = cl_array.empty(queue, x.size, index_dtype)
    got, evt = sorter.argsort(queue, flat, out=out)
    assert got is out
    np.testing.assert_array_equal(out.get(), ref_argsort(x.ravel()))
    got, evt = sorter.argsort(queue, flat, index_dtype=index_dtype)
    assert got.dtype == np.dtype(index_dtype)
    np.testing.assert_array_equal(got.get(), ref_argsort(x.ravel()))
    values, indices, evt = sel.topk(queue, d, 9, index_dtype=index_dtype)
    assert indices.dtype == np.dtype(index_dtype)
    np.testing.assert_array_equal(indices.get(), ref_topk_axis(x, 9, -1)[1])


def test_index_dtype_refusals(queue):
    d = cl_array.to_device(queue, np.arange(10, dtype=np.float32))
    for bad in (np.float32, np.int16, "i2", object):
        with pytest.raises(TypeError, match="indices are int32, uint32, int64 or uint64"):
            clradix.argsort(d, index_dtype=bad)
        with pytest.raises(TypeError, match="indices are int32, uint32, int64 or uint64"):
            clradix.topk(d, 2, index_dtype=bad)
    # a 32-bit type must hold every position: refused by size, no keys needed
    with pytest.raises(ValueError, match="int32 cannot hold the positions of 2147483649 keys"):
        check_index_dtype(np.int32, 2 ** 31 + 1)
    assert check_index_dtype(np.int32, 2 ** 31) == np.int32
    with pytest.raises(ValueError, match="uint32 cannot hold .* use int64"):
        check_index_dtype(np.uint32, 2 ** 32 + 1)


# ----------------------------------------------------------------------------- results

def test_out(queue, rng):
    x = data(rng, np.float32, (5, 40))
    d = cl_array.to_device(queue, x)
    out = cl_array.empty(queue, (5, 40), np.float32)
    assert clradix.sort(d, 0, out=out) is out
    np.testing.assert_array_equal(out.get(), np.sort(x, 0))
    idx = cl_array.empty(queue, (5, 40), np.int32)
    assert clradix.argsort(d, out=idx) is idx   # out's dtype is the index dtype
    np.testing.assert_array_equal(idx.get(), ref_argsort_axis(x, -1))
    v, i = cl_array.empty(queue, (5, 3), np.float32), cl_array.empty(queue, (5, 3), np.uint32)
    r = clradix.topk(d, 3, out=(v, i))
    assert r.values is v and r.indices is i
    np.testing.assert_array_equal(i.get(), ref_topk_axis(x, 3, -1)[1])
    hout = np.empty((5, 40), np.float32)
    assert clradix.sort(x, 1, out=hout, queue=queue) is hout
    np.testing.assert_array_equal(hout, np.sort(x, 1))
    # the input itself: sorted in place
    e = cl_array.to_device(queue, x)
    assert clradix.sort(e, out=e) is e
    np.testing.assert_array_equal(e.get(), np.sort(x, -1))
    # refusals name the problem; nothing changes
    with pytest.raises(ValueError, match="out: expected shape \\(5, 40\\)"):
        clradix.sort(d, out=cl_array.empty(queue, (40, 5), np.float32))
    with pytest.raises(TypeError, match="out: expected dtype float32"):
        clradix.sort(d, out=cl_array.empty(queue, (5, 40), np.float64))
    with pytest.raises(ValueError, match="out overlaps the input array"):
        clradix.argsort(d.reshape(-1)[:100].reshape(5, 20), out=cl_array.Array(
            queue, (5, 20), np.int32, data=d.base_data))
    with pytest.raises(ValueError, match="must be C-contiguous"):
        clradix.sort(d, 0, out=cl_array.empty(queue, (40, 5), np.float32).T)
    with pytest.raises(TypeError, match="out: expected a pair"):
        clradix.topk(d, 3, out=v)
    np.testing.assert_array_equal(d.get(), x)


def test_results_come_from_a_pool(queue, rng):
    """A repeated call allocates nothing: its results take the blocks that the previous
    results, now freed, gave back; free_memory returns the held blocks to the device."""
    q = cl.CommandQueue(queue.context)
    x = cl_array.to_device(q, data(rng, np.float32, (8, 300)))
    pool = clradix.sorter_for(q.context)._pools.allocator(q)
    for _ in range(2):   # the first rounds fill the pool
        r = clradix.sort(x)
        i = clradix.argsort(x, 0)
        v = clradix.topk(x, 4)
        del r, i, v
    q.finish()
    managed = pool.managed_bytes
    for _ in range(3):
        r = clradix.sort(x)
        i = clradix.argsort(x, 0)
        v = clradix.topk(x, 4)
        del r, i, v
    assert pool.managed_bytes == managed, "a repeated call allocated"
    assert pool.held_blocks > 0
    clradix.free_memory(q.context)
    assert pool.held_blocks == 0


def test_allocator_takes_the_results(queue, rng):
    asked = []
    inner = cl.tools.ImmediateAllocator(queue)

    def alloc(nbytes):
        asked.append(nbytes)
        return inner(nbytes)
    x = data(rng, np.float32, 1000)
    d = cl_array.to_device(queue, x)
    s = clradix.sort(d, allocator=alloc)
    assert 4000 in asked
    np.testing.assert_array_equal(s.get(), np.sort(x))
    asked.clear()
    i = clradix.argsort(d, allocator=alloc)
    assert 8000 in asked and i.dtype == np.int64


def test_wait_for_and_no_host_wait(queue, rng):
    """wait_for= gates the call's commands; the call itself returns without waiting, for views
    and other axes too."""
    x = data(rng, np.float32, (6, 50))
    d = cl_array.to_device(queue, x)
    d.finish()
    for call, want in [
            (lambda gate: clradix.sort(d, 0, wait_for=[gate]), np.sort(x, 0)),
            (lambda gate: clradix.argsort(d.T, wait_for=[gate]), ref_argsort_axis(x.T, -1)),
            (lambda gate: clradix.topk(d, 2, wait_for=[gate]).indices,
             ref_topk_axis(x, 2, -1)[1])]:
        gate = cl.UserEvent(queue.context)
        got = []
        assert returns_within(lambda: got.append(call(gate)),
                              lambda: gate.set_status(cl.command_execution_status.COMPLETE),
                              seconds=120), "the call waited on the host for its wait_for"
        np.testing.assert_array_equal(got[0].get(), want)


def test_queue_slips(ctx, queue):
    a = cl_array.to_device(queue, np.arange(10, dtype=np.uint32)[::-1].copy())
    # the other context kept beside its queue: Intel's CPU runtime frees a context whose last
    # handle is released although a queue still holds it
    other_ctx = cl.Context([ctx.devices[0]])
    other = cl.CommandQueue(other_ctx)
    for fn in (clradix.sort, clradix.argsort, lambda a, **kw: clradix.topk(a, 2, **kw)):
        with pytest.raises(TypeError, match="queue: expected a pyopencl.CommandQueue, got str"):
            fn(a, queue="q")
        with pytest.raises(ValueError, match="two contexts of the same device .* one "
                                             "pyopencl.Context"):
            fn(a, queue=other)


@pytest.mark.parametrize("widen_from", [1, None], ids=["widened", "default"])
def test_wide_indices_by_widening(queue, rng, monkeypatch, widen_from):
    """64-bit indices of large argsorts come from 32-bit ones widened in one pass: the same
    positions, for one row and for many, both directions, int64 and uint64."""
    import clradix.dispatch.call as call
    if widen_from is not None:
        monkeypatch.setattr(call, "WIDEN_FROM", widen_from)
    for shape in [(call.WIDEN_FROM + 3,), (3, max(call.WIDEN_FROM // 2, 5) + 1), (1, 7)]:
        x = data(rng, np.float32, shape)
        d = cl_array.to_device(queue, x)
        for descending in (False, True):
            for index_dtype in (np.int64, np.uint64):
                i = clradix.argsort(d, descending=descending, index_dtype=index_dtype)
                assert i.dtype == np.dtype(index_dtype)
                np.testing.assert_array_equal(i.get(), ref_argsort_axis(x, -1, descending))
    # the rule holds on every layout: a strided view, another axis (widened, then gathered back)
    x = data(rng, np.float32, (7, 9))
    d = cl_array.to_device(queue, x)
    for view, ref, axis in ((d[:, ::2], x[:, ::2], -1), (d, x, 0), (d, x, None)):
        i = clradix.argsort(view, axis, index_dtype=np.int64)
        np.testing.assert_array_equal(i.get(), np.argsort(ref, axis, kind="stable"))


# ----------------------------------------------------------------------------- ndarray subclasses

def _subclass_calls(queue, x):
    """Every public function given ``x`` where it takes a host array."""
    s = np.sort(np.asarray(x).ravel())
    d = cl_array.to_device(queue, s)
    sorter = clradix.Sorter(queue.context)
    return [
        ("sort", lambda: clradix.sort(x, queue=queue)),
        ("argsort", lambda: clradix.argsort(x, queue=queue)),
        ("topk", lambda: clradix.topk(x, 2, queue=queue)),
        ("searchsorted x1", lambda: clradix.searchsorted(x, s, queue=queue)),
        ("searchsorted x2", lambda: clradix.searchsorted(s, x, queue=queue)),
        ("searchsorted x2 on the device", lambda: clradix.searchsorted(d, x)),
        ("unique", lambda: clradix.unique(x, queue=queue)),
        ("unique_inverse", lambda: clradix.unique_inverse(x, queue=queue)),
        ("run_lengths", lambda: clradix.run_lengths(x, queue=queue)),
        ("lexsort list", lambda: clradix.lexsort([s, x], queue=queue)),
        ("lexsort rows", lambda: clradix.lexsort(x, queue=queue)),
        ("Sorter.sort segments", lambda: sorter.sort(
            queue, d, segments=x.astype(np.int64) * 0 if x.ndim == 1 else x)),
    ]


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_masked_arrays_and_subclasses_are_refused(queue):
    """A masked array lost its mask silently (sort gave [0.5 1. 2. 3.] where numpy gives
    [1.0 2.0 3.0 --]); a matrix its two axes: every function refuses them (TypeError naming the
    remedy) rather than take their values alone; a memmap is a plain array of its values."""
    masked = np.ma.array([3., 1., 2., .5], mask=[0, 0, 0, 1])
    for name, call in _subclass_calls(queue, masked):
        with pytest.raises(TypeError, match="masked array") as info:
            call()
        msg = str(info.value)
        assert ".filled(" in msg and "np.asarray(" in msg, (name, msg)
    matrix = np.matrix([[3., 1.], [2., .5]])
    for name, call in _subclass_calls(queue, matrix):
        with pytest.raises(TypeError, match="a numpy matrix") as info:
            call()
        assert "np.asarray(" in str(info.value), (name, str(info.value))
    # outputs of numpy inputs too: the result would lose its meaning there as well
    with pytest.raises(TypeError, match="masked array"):
        clradix.sort(np.arange(4.), out=np.ma.zeros(4), queue=queue)
    # the remedies give numpy's results
    np.testing.assert_array_equal(clradix.sort(masked.compressed(), queue=queue), [1, 2, 3])
    np.testing.assert_array_equal(clradix.sort(np.asarray(matrix), queue=queue),
                                  np.sort(np.asarray(matrix)))
    np.testing.assert_array_equal(np.asarray(masked), [3., 1., 2., .5])


def test_memmap_inputs_are_taken(queue, tmp_path):
    x = np.random.default_rng(3).standard_normal(100).astype(np.float32)
    m = np.memmap(tmp_path / "keys", dtype=np.float32, mode="w+", shape=x.shape)
    m[:] = x
    np.testing.assert_array_equal(clradix.sort(m, queue=queue), np.sort(x))
    np.testing.assert_array_equal(clradix.argsort(m, queue=queue), np.argsort(x, kind="stable"))


# ----------------------------------------------------------------------------- no copy

@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.uint64, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_sort_reads_its_input_where_it_lies(queue, rng, dtype):
    """A 1-D sort reads the keys in the input's own memory and writes the result (no copy
    first): on every route (one work-group, the CPU buckets, the LSD passes; odd and even pass
    counts), at an offset into its buffer, into a poisoned ``out``, both directions; the
    input's bits are unchanged."""
    for n in (2, 3, 1000, 16384, 16385, 70001, (1 << 20) + 3):
        x = float_specials(rng, dtype, n + 5)
        d = cl_array.to_device(queue, x)
        view, want = d[5:], x[5:]
        for descending in (False, True):
            out = cl_array.to_device(queue, np.full(n, 0x5A, np.uint8).view(np.uint8)
                                     .repeat(np.dtype(dtype).itemsize).view(dtype))
            got = clradix.sort(view, descending=descending, out=out)
            assert got is out
            ref = want[ref_argsort(want, descending)]
            np.testing.assert_array_equal(bits_of(got.get()), bits_of(ref),
                                          err_msg=f"n={n} descending={descending}")
            np.testing.assert_array_equal(bits_of(clradix.sort(view, descending=descending)
                                                  .get()), bits_of(ref))
        np.testing.assert_array_equal(bits_of(d.get()), bits_of(x), err_msg="the input changed")


@pytest.mark.parametrize("dtype", [np.int16, np.float32], ids=lambda d: np.dtype(d).name)
def test_unique_reads_its_input_where_it_lies(queue, rng, dtype):
    """The unique family sorts from the input's own memory (at an offset, or a strided view
    gathered first) and leaves it unchanged."""
    for n in (1, 2, 1000, 70001):
        x = rng.integers(0, max(2, n // 7), n + 3).astype(dtype)
        d = cl_array.to_device(queue, x)
        for view, want in ((d[3:], x[3:]), (d[::2], x[::2])):
            vals, idx, inv, cnt = clradix.unique(view, return_index=True, return_inverse=True,
                                                 return_counts=True)
            rv, ri, rinv, rc = np.unique(want, return_index=True, return_inverse=True,
                                         return_counts=True)
            for got, ref in ((vals, rv), (idx, ri), (inv, rinv), (cnt, rc)):
                np.testing.assert_array_equal(got.get(), ref, err_msg=f"n={n}")
            np.testing.assert_array_equal(clradix.unique_counts(view).counts.get(), rc)
        np.testing.assert_array_equal(d.get(), x, err_msg="the input changed")
