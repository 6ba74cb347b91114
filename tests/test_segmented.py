"""Segmented and batched sorts (clradix/segmented.py): Sorter.sort / argsort with ``segments=``,
clradix.sort / argsort of 2-D arrays (each row), numpy inputs, bfloat16 keys; compared with a
per-segment numpy reference (np.sort / np.argsort, kind="stable")."""

import dataclasses
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.core.keys import KEY_DTYPES, key_codec

from conftest import fake_profile, returns_within, skip_route_dtype_on_pocl
from data import float_specials
from reference import ref_argsort, ref_topk

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

# Small tiles, so that small tests reach every tier: segments of up to 128 keys in local memory,
# longer ones through the digit passes, with blocks of several tiles from 3 tiles on.
SMALL = clradix.SegmentPolicy(wg_size=32, items_per_thread=4, blocks_per_segment=2)
TILE = 128
DTYPES = [np.dtype(d) for d in KEY_DTYPES]


# the CPUs' driver: a work-item sorts whole segments (insertion up to 32 keys, then LSD passes)
CHUNKS = clradix.SegmentPolicy(algorithm="chunks")


@pytest.fixture(scope="module", params=["workgroups", "chunks"])
def small_sorter(ctx, request):
    """The work-group driver with small tiles; and the chunked driver (every device runs it)."""
    return clradix.Sorter(ctx, segment_policy=SMALL if request.param == "workgroups" else CHUNKS)


def bits_of(a):
    """The keys' raw bits (bfloat16 too), for bit-exact comparisons."""
    a = np.ascontiguousarray(a)
    return a.view(key_codec(a.dtype).unsigned_dtype)


def uneven_offsets(rng, n_before=3, n_after=4):
    """Offsets of segments of very different lengths (empty, one key, around one tile, several
    tiles, blocks of several tiles), starting after n_before keys and ending n_after before the
    end; returns (offsets, n)."""
    lens = [0, 1, 2, 0, TILE - 1, TILE, TILE + 1, 3, 9 * TILE + 5, 0, 2 * TILE, 5, 1, 40, 70,
            3 * TILE - 1]
    rng.shuffle(lens)
    offsets = n_before + np.concatenate([[0], np.cumsum(lens)])
    return offsets, int(offsets[-1]) + n_after


def ref_segments(keys, offsets, descending=False, begin_bit=0, end_bit=None):
    """The order each segment's keys take: positions within the segment, per segment."""
    return [ref_argsort(keys[a:b], descending, begin_bit, end_bit)
            for a, b in zip(offsets[:-1], offsets[1:])]


def check_segments(queue, sorter, keys, offsets, op="keys", *, values=None, descending=False,
                   begin_bit=0, end_bit=None, offsets_dtype=np.int32, on_device=True,
                   to_device=None):
    """Sort (``op`` "keys" / "pairs") or argsort each segment of ``keys`` and compare bit for bit
    with numpy; keys, values and indices outside every segment must keep their bytes.
    ``to_device`` copies a host array to the device (default: ``cl_array.to_device``)."""
    to_device = to_device or (lambda a: cl_array.to_device(queue, a))
    n = keys.size
    what = f"{op} of {n} {keys.dtype} keys in {len(offsets) - 1} segments" + (
        " descending" if descending else "")
    orders = ref_segments(keys, offsets, descending, begin_bit, end_bit)
    offs = np.asarray(offsets, dtype=offsets_dtype)
    seg = to_device(offs) if on_device else offs
    d_keys = to_device(keys)
    bits = dict(begin_bit=begin_bit, end_bit=end_bit)
    full = (begin_bit, end_bit) in ((0, None), (0, key_codec(keys.dtype).bits))
    if op == "argsort":
        before = np.full(n, 0xA5A5A5A5, np.uint32)   # poison: what no kernel may leave behind
        out = to_device(before)
        idx, evt = sorter.argsort(queue, d_keys, segments=seg, descending=descending, out=out,
                                  **bits)
        evt.wait()
        got = idx.get()
        expect = before.copy()
        for (a, b), o in zip(zip(offsets[:-1], offsets[1:]), orders):
            expect[a:b] = o
            if full and not descending and keys.dtype in DTYPES:
                np.testing.assert_array_equal(got[a:b], np.argsort(keys[a:b], kind="stable"),
                                              err_msg=what)
        np.testing.assert_array_equal(got, expect, err_msg=what)
        np.testing.assert_array_equal(bits_of(d_keys.get()), bits_of(keys),
                                      err_msg=f"{what}: the keys changed")
        return
    d_vals = None
    if op == "pairs":
        d_vals = to_device(values)
    evt = sorter.sort(queue, d_keys, segments=seg, values=d_vals, descending=descending, **bits)
    evt.wait()
    expect = keys.copy()
    expect_vals = None if values is None else values.copy()
    for (a, b), o in zip(zip(offsets[:-1], offsets[1:]), orders):
        expect[a:b] = keys[a:b][o]
        if expect_vals is not None:
            expect_vals[a:b] = values[a:b][o]
        if full and not descending and keys.dtype in DTYPES:
            np.testing.assert_array_equal(bits_of(expect[a:b]),
                                          bits_of(np.sort(keys[a:b], kind="stable")), err_msg=what)
    np.testing.assert_array_equal(bits_of(d_keys.get()), bits_of(expect), err_msg=what)
    if expect_vals is not None:
        np.testing.assert_array_equal(d_vals.get().view(np.uint8), expect_vals.view(np.uint8),
                                      err_msg=f"{what}: values")


# ----------------------------------------------------------------------------- every key type

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype(queue, small_sorter, rng, dtype):
    if small_sorter.segment_policy is not CHUNKS:
        skip_route_dtype_on_pocl(queue.context, dtype)
    offsets, n = uneven_offsets(rng)
    keys = float_specials(rng, dtype, n)
    check_segments(queue, small_sorter, keys, offsets)
    # (int64 offsets for a few types only: each combination is a kernel build)
    wide = np.int64 if dtype.name in ("uint8", "float64", "int32") else np.int32
    check_segments(queue, small_sorter, keys, offsets, descending=True, offsets_dtype=wide)


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
def test_argsort(queue, small_sorter, rng, dtype):
    offsets, n = uneven_offsets(rng)
    keys = float_specials(rng, np.dtype(dtype), n)
    check_segments(queue, small_sorter, keys, offsets, "argsort")
    check_segments(queue, small_sorter, keys, offsets, "argsort", descending=True,
                   on_device=False)


@pytest.mark.parametrize("value_dtype", ["uint8", "uint16", "uint32", "uint64", "V16"])
def test_values_of_every_width(queue, small_sorter, rng, value_dtype):
    offsets, n = uneven_offsets(rng)
    keys = float_specials(rng, np.dtype("float32" if value_dtype != "V16" else "uint16"), n)
    vd = np.dtype(value_dtype)
    values = rng.integers(0, 256, n * vd.itemsize, dtype=np.uint8).view(vd)
    check_segments(queue, small_sorter, keys, offsets, "pairs", values=values)
    check_segments(queue, small_sorter, keys, offsets, "pairs", values=values, descending=True)


def test_bit_ranges(queue, small_sorter, rng):
    """An odd number of digit passes in place (an identity pass goes first), a range of one
    digit, and an argsort by no bits (the positions in order)."""
    offsets, n = uneven_offsets(rng)
    keys = rng.integers(0, 2 ** 32, n, dtype=np.uint32)
    for begin, end in ((4, 28), (3, 9), (0, 8)):
        check_segments(queue, small_sorter, keys, offsets, begin_bit=begin, end_bit=end)
        check_segments(queue, small_sorter, keys, offsets, "pairs", begin_bit=begin, end_bit=end,
                       values=np.arange(n, dtype=np.uint32))
    check_segments(queue, small_sorter, keys, offsets, "argsort", begin_bit=5, end_bit=5)


def test_stability_many_equal(queue, small_sorter, rng):
    """Few distinct keys: every segment is full of ties, kept in input order."""
    offsets, n = uneven_offsets(rng)
    keys = rng.integers(0, 3, n).astype(np.int16)
    check_segments(queue, small_sorter, keys, offsets, "pairs",
                   values=np.arange(n, dtype=np.uint32))
    check_segments(queue, small_sorter, keys, offsets, "argsort", descending=True)


# ----------------------------------------------------------------------------- shapes

@pytest.mark.parametrize("case", ["one", "one-huge", "all-empty", "n0", "no-segments", "ones",
                                  "power-law", "packed"])
def test_segment_shapes(queue, small_sorter, rng, case):
    n = 3000
    if case == "one":
        offsets = [0, n]
    elif case == "one-huge":
        offsets = [7, n - 9]
    elif case == "all-empty":
        offsets = [5] * 9
    elif case == "n0":
        n, offsets = 0, [0, 0, 0]
    elif case == "no-segments":
        offsets = [17]
    elif case == "ones":
        offsets = list(range(0, 200)) + [n]
    elif case == "power-law":
        lens = np.minimum((rng.pareto(1.1, 300) * 4).astype(np.int64), 2000)
        offsets = np.concatenate([[0], np.cumsum(lens)])
        n = int(offsets[-1])
    else:   # many short segments of one length: several per work-group
        offsets = list(range(0, n + 1, 12))
    keys = float_specials(rng, np.float32, n)
    offsets = np.asarray(offsets)
    check_segments(queue, small_sorter, keys, offsets)
    check_segments(queue, small_sorter, keys, offsets, "argsort", offsets_dtype=np.int64)


def test_default_policy(queue, rng):
    """The planner's own tile on this device: segments shorter and longer than it."""
    sorter = clradix.Sorter(queue.context)
    tile = sorter.planner.plan_segments(queue.device, key_codec(np.float32), 4)[1].tile
    lens = [3, tile, tile + 1, 2 * tile + 7, 1, 0, 100]
    offsets = np.concatenate([[0], np.cumsum(lens)])
    keys = float_specials(rng, np.float32, int(offsets[-1]))
    check_segments(queue, sorter, keys, offsets, "pairs", values=np.arange(keys.size,
                                                                              dtype=np.uint32))


def test_build_failure_shrinks_the_tile_then_the_ranking(queue, rng, monkeypatch):
    """A compiler that refuses the planner's segmented program (NVIDIA's ptxas fails register
    allocation for the keys-only program with ballots at 16 keys per work-item): fewer keys per
    work-item first, then the local-memory ranking, each step one warning, and the same sorted
    rows; the planner remembers what built. A ranking the caller set ends in the error."""
    from clradix.planning import planner as segmented
    real_sort, real_plan = segmented.SegmentedSort, segmented.plan_segments
    tried = []

    def refusing(max_ipt, rankings):
        def build(programs, device, profile, pol, *args):
            tried.append((pol.items_per_thread, pol.ranking))
            if pol.items_per_thread > max_ipt or pol.ranking not in rankings:
                raise clradix.KernelBuildError(f"refused (test): {pol}")
            return real_sort(programs, device, profile, pol, *args)
        return build

    x = rng.standard_normal((3, 1000), dtype=np.float32)

    def check(sorter, warns, attempts):
        for _ in range(2):   # the second call builds nothing and warns of nothing
            a = cl_array.to_device(queue, x)
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                sorter.sort(queue, a.reshape(-1), segments=np.arange(0, 3001, 1000)).wait()
            np.testing.assert_array_equal(a.get(), np.sort(x, axis=-1))
            ours = [str(w.message) for w in warned if "segmented sort" in str(w.message)]
            assert len(ours) == (attempts - 1 if _ == 0 else 0), ours
            assert all(warns in m for m in ours[-1:])
        assert len(tried) == attempts

    groups = clradix.SegmentPolicy(algorithm="workgroups")   # (CPUs plan "chunks")
    sorter = clradix.Sorter(queue.context, segment_policy=groups)
    first = sorter.planner.plan_segments(queue.device, key_codec(np.float32), 4)[1]
    monkeypatch.setattr(segmented, "SegmentedSort", refusing(12, ("local", first.ranking)))
    check(sorter, "keys per work-item", 1 + (first.items_per_thread > 12))
    assert tried[-1] == (min(first.items_per_thread, 12), first.ranking)

    # a subgroup ranking (planned on a device without one, as if it had one) refused at any tile
    tried.clear()
    monkeypatch.setattr(segmented, "plan_segments", lambda profile, codec, ib, overrides: (
        dataclasses.replace(real_plan(profile, codec, ib, groups), ranking="khr", sg_size=16,
                            items_per_thread=16)))
    monkeypatch.setattr(segmented, "SegmentedSort", refusing(64, ("local",)))
    check(clradix.Sorter(queue.context, segment_policy=groups), "local-memory ranking", 6)
    assert tried == [(16, "khr"), (12, "khr"), (9, "khr"), (6, "khr"), (4, "khr"), (16, "local")]

    asked = clradix.Sorter(queue.context, segment_policy=clradix.SegmentPolicy(ranking="khr"))
    with pytest.warns(RuntimeWarning), pytest.raises(clradix.KernelBuildError, match="refused"):
        asked.sort(queue, cl_array.zeros(queue, 3000, np.float32),
                   segments=np.arange(0, 3001, 1000))


# ----------------------------------------------------------------------------- refused inputs

@pytest.mark.parametrize("case,exc,msg", [
    ("decreasing", ValueError, "non-decreasing"),
    ("negative", ValueError, r"must lie in \[0, n=100\]"),
    ("past-end", ValueError, r"must lie in \[0, n=100\]"),
    ("float", TypeError, "int32 or int64"),
    ("uint16", TypeError, "int32 or int64"),
    ("2-D", ValueError, "1-D array"),
    ("empty", ValueError, "at least one"),
    ("buffer", TypeError, "does not say its length"),
    ("device-uint32", TypeError, "int32 or int64"),
])
def test_refused(queue, small_sorter, rng, case, exc, msg):
    keys = rng.random(100).astype(np.float32)
    d_keys = cl_array.to_device(queue, keys)
    vals = cl_array.to_device(queue, np.arange(100, dtype=np.uint32))
    seg = {"decreasing": np.array([0, 50, 40, 100], np.int32),
           "negative": np.array([-1, 50], np.int64),
           "past-end": np.array([0, 101], np.int32),
           "float": np.array([0.0, 50.0]),
           "uint16": np.array([0, 50], np.uint16),
           "2-D": cl_array.to_device(queue, np.zeros((2, 2), np.int32)),
           "empty": np.array([], np.int32),
           "buffer": cl_array.to_device(queue, np.array([0, 50], np.int32)).data,
           "device-uint32": cl_array.to_device(queue, np.array([0, 50], np.uint32))}[case]
    with pytest.raises(exc, match=msg):
        small_sorter.sort(queue, d_keys, values=vals, segments=seg)
    out = cl_array.to_device(queue, np.full(100, 7, np.uint32))
    with pytest.raises(exc, match=msg):
        small_sorter.argsort(queue, d_keys, segments=seg, out=out)
    np.testing.assert_array_equal(d_keys.get(), keys)
    np.testing.assert_array_equal(vals.get(), np.arange(100))
    np.testing.assert_array_equal(out.get(), 7)


@pytest.mark.parametrize("bad", [[0, 50, 40, 100], [-3, 50], [0, 101], [0, 2 ** 40]])
def test_device_offsets_checked_on_the_device(queue, small_sorter, rng, bad):
    """Invalid offsets on the device: check_offsets=True raises before any sorting kernel runs;
    without it the call is a no-op. Either way nothing changes."""
    keys = rng.random(100).astype(np.float32)
    d_keys = cl_array.to_device(queue, keys)
    vals = cl_array.to_device(queue, np.arange(100, dtype=np.uint32))
    dtype = np.int64 if max(bad) > 2 ** 31 else np.int32
    seg = cl_array.to_device(queue, np.array(bad, dtype))
    with pytest.raises(ValueError, match="checked on the device"):
        small_sorter.sort(queue, d_keys, values=vals, segments=seg, check_offsets=True)
    small_sorter.sort(queue, d_keys, values=vals, segments=seg).wait()
    out = cl_array.to_device(queue, np.full(100, 7, np.uint32))
    small_sorter.argsort(queue, d_keys, segments=seg, out=out)[1].wait()
    np.testing.assert_array_equal(d_keys.get(), keys)
    np.testing.assert_array_equal(vals.get(), np.arange(100))
    np.testing.assert_array_equal(out.get(), 7)
    # valid offsets pass the check
    good = cl_array.to_device(queue, np.array([0, 60, 100], dtype))
    small_sorter.sort(queue, d_keys, segments=good, check_offsets=True).wait()
    np.testing.assert_array_equal(d_keys.get(), np.concatenate([np.sort(keys[:60]),
                                                                np.sort(keys[60:])]))


# ----------------------------------------------------------------------------- rows (2-D)

@pytest.mark.parametrize("shape", [(7, 100), (3, 1500), (40, 12), (5, 1), (0, 5), (4, 0),
                                   (1, 3000)])
def test_rows(queue, rng, shape):
    x = float_specials(rng, np.float32, int(np.prod(shape))).reshape(shape)
    d = cl_array.to_device(queue, x)
    order = ref_argsort_rows(x)
    s = clradix.sort(d)
    np.testing.assert_array_equal(bits_of(s.get()), bits_of(np.take_along_axis(x, order, -1)))
    np.testing.assert_array_equal(np.sort(x, axis=-1, kind="stable"),
                                  s.get())   # numpy's own (NaN compare equal)
    idx = clradix.argsort(d)
    assert idx.dtype == np.int64 and idx.shape == shape
    np.testing.assert_array_equal(idx.get(), order)
    idx = clradix.argsort(d, descending=True)
    np.testing.assert_array_equal(idx.get(), ref_argsort_rows(x, True))
    np.testing.assert_array_equal(bits_of(d.get()), bits_of(x), err_msg="the input changed")


def test_long_rows_on_every_core(queue, rng, monkeypatch):
    """On a CPU, a few rows of WHOLE_SORT_ROW_LEN keys or more are each sorted by the whole-array
    sort (every core), not one work-item a row; the results are the same (sort, argsort, both
    directions, a row of one repeated key). The row length is lowered so that the test stays
    small."""
    from clradix.dispatch import segments
    monkeypatch.setattr(segments, "WHOLE_SORT_ROW_LEN", 1000)
    if not queue.device.type & cl.device_type.CPU:
        pytest.skip("the whole-array route is taken on CPUs")
    shape = (3, 3001)
    x = float_specials(rng, np.float32, 3 * 3001).reshape(shape)
    x[1] = x[1, 0]
    d = cl_array.to_device(queue, x)
    order = ref_argsort_rows(x)
    np.testing.assert_array_equal(bits_of(clradix.sort(d).get()),
                                  bits_of(np.take_along_axis(x, order, -1)))
    np.testing.assert_array_equal(clradix.argsort(d).get(), order)
    np.testing.assert_array_equal(clradix.argsort(d, descending=True).get(),
                                  ref_argsort_rows(x, True))
    np.testing.assert_array_equal(bits_of(d.get()), bits_of(x), err_msg="the input changed")


def ref_argsort_rows(x, descending=False):
    return np.array([ref_argsort(r, descending) for r in x], dtype=np.int64).reshape(x.shape)


def test_rows_refused(queue):
    d = cl_array.to_device(queue, np.zeros((4, 6), np.float32))
    for fn in (clradix.sort, clradix.argsort):
        with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds"):
            fn(d, axis=2)
        with pytest.raises(TypeError, match="axis must be an integer"):
            fn(d, axis=1.0)


def test_numpy_inputs(rng):
    """numpy in, numpy out (copied to the default device and back)."""
    x = rng.standard_normal((6, 50)).astype(np.float32)
    np.testing.assert_array_equal(clradix.sort(x), np.sort(x, axis=-1))
    np.testing.assert_array_equal(clradix.argsort(x[0]), np.argsort(x[0], kind="stable"))
    s = clradix.sort(x[1], descending=True)
    assert isinstance(s, np.ndarray)
    np.testing.assert_array_equal(s, np.sort(x[1])[::-1])
    v, i = clradix.topk(x, 3)
    assert isinstance(v, np.ndarray) and isinstance(i, np.ndarray)
    np.testing.assert_array_equal(i, np.argsort(-x, axis=-1, kind="stable")[:, :3])
    with pytest.raises(TypeError, match="unsupported key dtype"):
        clradix.sort(np.array(["a", "b"]))


# ----------------------------------------------------------------------------- bfloat16

@pytest.mark.skipif(ml_dtypes is None, reason="bfloat16 needs the ml_dtypes package")
def test_bfloat16(queue, small_sorter, rng):
    """numpy's order through float32 (NaN last, -0 == +0), bit-exact output: sort, argsort,
    rows, segments, top-k."""
    bf = np.dtype(ml_dtypes.bfloat16)
    raw = float_specials(rng, np.float32, 2000)
    x = (raw.view(np.uint32) >> np.uint32(16)).astype(np.uint16).view(bf)   # every bit pattern
    f = x.astype(np.float32)
    d = cl_array.to_device(queue, x)
    order = np.argsort(f, kind="stable")
    np.testing.assert_array_equal(clradix.argsort(d).get(), order)
    np.testing.assert_array_equal(clradix.sort(d).get().view(np.uint16), x[order].view(np.uint16))
    sorter = clradix.Sorter(queue.context)
    d2 = cl_array.to_device(queue, x)
    sorter.sort(queue, d2, descending=True).wait()
    np.testing.assert_array_equal(d2.get().view(np.uint16),
                                  x[ref_argsort(x, descending=True)].view(np.uint16))
    rows = x[:1800].reshape(12, 150)
    np.testing.assert_array_equal(clradix.argsort(rows),
                                  np.argsort(rows.astype(np.float32), axis=-1, kind="stable"))
    offsets, n = uneven_offsets(rng)
    check_segments(queue, small_sorter, np.resize(x, n), offsets, "pairs",
                   values=np.arange(n, dtype=np.uint32))
    v, i = clradix.topk(cl_array.to_device(queue, rows), 7)
    rv, ri = ref_topk(rows, 7)   # through the order key: NaN the largest, ties by position
    np.testing.assert_array_equal(i.get(), ri)
    np.testing.assert_array_equal(v.get().view(np.uint16), rv.view(np.uint16))


def test_events_and_wait_for(queue, small_sorter, rng):
    """A segmented sort waits for wait_for and for the offsets' own events; its event is the
    keys' new event."""
    keys = rng.random(500).astype(np.float32)
    d = cl_array.to_device(queue, keys)
    user = cl.UserEvent(queue.context)
    seg = cl_array.to_device(queue, np.array([0, 200, 500], np.int32))
    evt = small_sorter.sort(queue, d, segments=seg, wait_for=[user])
    assert isinstance(evt, cl.Event) and d.events[-1] is evt
    user.set_status(cl.command_execution_status.COMPLETE)
    evt.wait()
    np.testing.assert_array_equal(d.get(), np.concatenate([np.sort(keys[:200]),
                                                           np.sort(keys[200:])]))



def test_host_offsets_never_wait_on_the_host(queue, small_sorter, rng):
    """Offsets given on the host reach the device without a command on the queue: a call behind
    earlier work that a user event gates returns before the event completes (a blocking upload
    behind that work would wait for ever in a program that completes the event afterwards)."""
    n = 3000
    keys = rng.random(n).astype(np.float32)
    vals = rng.integers(0, 2 ** 32, n, dtype=np.uint32)
    d, v = cl_array.to_device(queue, keys), cl_array.to_device(queue, vals)
    offsets = np.array([0, 500, 1700, n])
    warm = cl_array.to_device(queue, keys)   # the kernels built before the gate
    small_sorter.sort(queue, warm, values=cl_array.empty_like(v), segments=offsets).wait()
    small_sorter.sort(queue, warm, segments=offsets).wait()
    small_sorter.argsort(queue, warm, segments=offsets)[1].wait()
    gate = cl.UserEvent(queue.context)
    spare = cl_array.empty_like(d)
    cl.enqueue_copy(queue, spare.data, d.data, wait_for=[gate])   # earlier work, gated
    out = []

    def calls():
        out.append(small_sorter.sort(queue, d, values=v, segments=offsets))
        out.append(small_sorter.sort(queue, d, segments=list(offsets), check_offsets=True))
        out.append(small_sorter.argsort(queue, d, segments=offsets.astype(np.int32))[0])
    returned = returns_within(
        calls, lambda: gate.set_status(cl.command_execution_status.COMPLETE), seconds=30)
    assert returned, f"call {len(out) + 1} waited on the host behind the user event"
    queue.finish()
    order = np.concatenate([a + np.argsort(keys[a:b], kind="stable")
                            for a, b in zip(offsets[:-1], offsets[1:])])
    np.testing.assert_array_equal(d.get(), keys[order])
    np.testing.assert_array_equal(v.get(), vals[order])
    np.testing.assert_array_equal(out[2].get(), np.concatenate(
        [np.arange(b - a) for a, b in zip(offsets[:-1], offsets[1:])]))


def test_check_offsets_refuses_a_pending_user_event(queue, small_sorter, rng):
    """check_offsets=True reads the device's verdict back on the host: behind a user event in
    wait_for that is not complete it would never return, so it is refused (ValueError) before
    anything is enqueued; without check_offsets the same call is enqueued and returns."""
    keys = rng.random(400).astype(np.float32)
    d = cl_array.to_device(queue, keys)
    seg = cl_array.to_device(queue, np.array([0, 150, 400], np.int32))
    gate = cl.UserEvent(queue.context)
    with pytest.raises(ValueError, match="user event not yet complete"):
        small_sorter.sort(queue, d, segments=seg, check_offsets=True, wait_for=[gate])
    evt = small_sorter.sort(queue, d, segments=seg, wait_for=[gate])
    gate.set_status(cl.command_execution_status.COMPLETE)
    evt.wait()
    small_sorter.sort(queue, d, segments=seg, check_offsets=True, wait_for=[gate]).wait()
    np.testing.assert_array_equal(d.get(), np.concatenate([np.sort(keys[:150]),
                                                           np.sort(keys[150:])]))

def test_64bit_indices(queue, rng, monkeypatch):
    """The kernels with 64-bit counts and offsets (used from 2**31 keys on)."""
    from clradix.core import sizes
    monkeypatch.setattr(sizes, "INDEX32_LIMIT", 0)
    sorter = clradix.Sorter(queue.context, segment_policy=SMALL)
    offsets, n = uneven_offsets(rng)
    keys = float_specials(rng, np.float32, n)
    check_segments(queue, sorter, keys, offsets, "pairs", values=np.arange(n, dtype=np.uint32),
                   offsets_dtype=np.int64)



@pytest.mark.parametrize("policy", [SMALL, CHUNKS], ids=["workgroups", "chunks"])
def test_64bit_verdict_of_device_offsets(queue, rng, monkeypatch, poisoning_allocator, policy):
    """With 64-bit indices the device's verdict on the offsets is read back as 8 bytes: the
    kernel must write all 8 (temporaries start full of poison here, so a 4-byte verdict leaves
    the upper half nonzero and valid offsets would be refused)."""
    from clradix.core import sizes
    monkeypatch.setattr(sizes, "INDEX32_LIMIT", 0)
    sorter = clradix.Sorter(queue.context, segment_policy=policy, allocator=poisoning_allocator)
    offsets, n = uneven_offsets(rng)
    keys = float_specials(rng, np.float32, n)
    d = cl_array.to_device(queue, keys)
    seg = cl_array.to_device(queue, offsets.astype(np.int64))
    sorter.sort(queue, d, segments=seg, check_offsets=True).wait()
    got = d.get()
    for a, b in zip(offsets[:-1], offsets[1:]):
        np.testing.assert_array_equal(bits_of(got[a:b]), bits_of(keys[a:b][ref_argsort(keys[a:b])]))
    np.testing.assert_array_equal(bits_of(got[:offsets[0]]), bits_of(keys[:offsets[0]]))
    bad = cl_array.to_device(queue, np.array([0, 50, 40, n], np.int64))
    with pytest.raises(ValueError, match="checked on the device"):
        sorter.sort(queue, d, segments=bad, check_offsets=True)
    np.testing.assert_array_equal(bits_of(d.get()), bits_of(got))

# ----------------------------------------------------------------------------- the planner

def _profile(**kw):
    return fake_profile(**dict(dict(vendor="NVIDIA Corporation", platform="NVIDIA CUDA",
                                    driver_version="580", compute_units=132), **kw))


def test_plan_segments():
    """NVIDIA: a 4096-key tile for 32-bit keys with warp ballots, shrunk to fit 48 KiB for
    64-bit keys; CPUs without subgroups: the emulated ranking; overrides are kept, wrong ones
    refused with the field's name."""
    from clradix.core.errors import PolicyError
    from clradix.policies.segment import plan_segments
    nv = _profile()
    pol = plan_segments(nv, key_codec(np.float32), 4)
    assert (pol.tile, pol.ranking, pol.sg_size) == (4096, "ptx", 32)
    wide = plan_segments(nv, key_codec(np.float64), 8)
    assert wide.tile < 4096 and wide.local_bytes(8, 8) <= 48 * 1024
    cpu = plan_segments(_profile(vendor="PoCL", platform="Portable Computing Language",
                                 device_type="cpu", local_mem_bytes=2 ** 20),
                        key_codec(np.uint32), 4)
    assert cpu.ranking == "local"
    forced = plan_segments(nv, key_codec(np.uint32), 4,
                           clradix.SegmentPolicy(wg_size=128, items_per_thread=8))
    assert (forced.wg_size, forced.items_per_thread) == (128, 8)
    for bad, msg in ((dict(wg_size=96), "power of two"), (dict(blocks_per_segment=0), "at least"),
                     (dict(segments_per_group=300), "segments_per_group"),
                     (dict(items_per_thread=64), "too little local memory"),
                     (dict(ranking="intel"), "not available")):
        with pytest.raises(PolicyError, match=msg):
            plan_segments(nv, key_codec(np.uint32), 4, clradix.SegmentPolicy(**bad))
    with pytest.raises(TypeError, match="segment_policy"):
        clradix.Sorter(_context_of_default(), segment_policy={"wg_size": 64})


def _context_of_default():
    from clradix.dispatch.api import default_queue
    return default_queue().context


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.float64], ids=str)
def test_chunks_long_segments(ctx, queue, rng, dtype):
    """The CPUs' segments of 32-bit keys from 4096 keys up take 12-bit digits (3 passes), shorter
    ones 8-bit digits: segments on either side of 4096 keys, digits constant in a segment (half
    the keys repeat a few values), keys, pairs and argsort, both directions, a bit range;
    64-bit keys alongside (8-bit digits at every length)."""
    sorter = clradix.Sorter(ctx, segment_policy=CHUNKS)
    lens = [4095, 4096, 0, 4097, 33, 6000, 1]
    offsets = np.concatenate([[0], np.cumsum(lens)])
    keys = float_specials(rng, dtype, int(offsets[-1]))
    keys[:3000] = keys[rng.integers(0, 5, 3000)]
    values = np.arange(keys.size, dtype=np.uint32)
    check_segments(queue, sorter, keys, offsets, "keys")
    check_segments(queue, sorter, keys, offsets, "pairs", values=values, descending=True)
    check_segments(queue, sorter, keys, offsets, "argsort")
    bits = np.dtype(dtype).itemsize * 8
    check_segments(queue, sorter, keys, offsets, "pairs", values=values, begin_bit=3,
                   end_bit=bits - 5)
