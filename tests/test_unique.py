"""The unique family and run_lengths against numpy: numpy's unique (every return_* flag,
equal_nan both ways), the Array API's unique_values / unique_counts / unique_inverse /
unique_all (each NaN distinct, as numpy's unique_*), run_lengths of sorted and unsorted arrays;
every key dtype, all-equal, all-distinct, NaN, empty, one element, 2-D and strided inputs, sizes
over several blocks of the runs' scan; property-based cases with hypothesis."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clradix
from clradix.core.keys import KEY_DTYPES, key_codec
from data import all_equal, float_specials
from reference import bits_of

DTYPES = [np.dtype(d) for d in KEY_DTYPES] + [np.dtype(np.bool_)]


def keys_of(rng, dtype, n, dist="random"):
    dtype = np.dtype(dtype)
    if dist == "equal":
        return all_equal(rng, dtype, n) if dtype.kind != "b" else np.ones(n, bool)
    if dtype.kind == "b":
        return rng.random(n) < 0.5
    if dist == "distinct":
        return rng.permutation(np.arange(n).astype(dtype))
    if dist == "few":
        pool = float_specials(rng, dtype, 7)
        return pool[rng.integers(0, 7, n)]
    return float_specials(rng, dtype, n)


def ref_runs(a, equal_nan=True):
    """(values, starts, lengths) of the runs of ``a`` (flattened): equal in the sort's order."""
    a = a.ravel()
    if not a.size:
        return a[:0], np.zeros(0, np.int64), np.zeros(0, np.int64)
    codec = key_codec(a.dtype)
    ok = codec.order_key(a)
    new = np.ones(a.size, bool)
    new[1:] = ok[1:] != ok[:-1]
    if a.dtype.kind == "f" and not equal_nan:
        new |= np.isnan(a)
    starts = np.flatnonzero(new)
    lengths = np.diff(np.append(starts, a.size))
    return a[starts], starts.astype(np.int64), lengths.astype(np.int64)


def check_unique(x, got, equal_nan=True, what=""):
    """``got``: (values, index, inverse, counts) as numpy arrays, compared with numpy's unique;
    the values bit for bit with the first occurrence of each (a stable sort's run head)."""
    want = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                     equal_nan=equal_nan)
    values, index, inverse, counts = got
    for g, w, name in zip(got, want, ("values", "index", "inverse", "counts")):
        assert g.shape == w.shape, (what, name, g.shape, w.shape)
        if name != "values":
            assert g.dtype == np.int64, (what, name)
        np.testing.assert_array_equal(g, w, err_msg=f"{what}: {name}")
    np.testing.assert_array_equal(bits_of(values), bits_of(x.ravel()[index]), err_msg=what)
    assert values.dtype == x.dtype


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unique_every_dtype(queue, rng, dtype):
    for dist in ("random", "equal", "distinct", "few"):
        x = keys_of(rng, dtype, 513, dist)
        d = cl_array.to_device(queue, x)
        for equal_nan in (True, False):
            got = clradix.unique(d, True, True, True, equal_nan=equal_nan)
            assert all(isinstance(g, cl_array.Array) for g in got)
            check_unique(x, [g.get() for g in got], equal_nan, f"{dist} {equal_nan}")
        np.testing.assert_array_equal(bits_of(d.get()), bits_of(x))
        np.testing.assert_array_equal(clradix.unique(d).get(), np.unique(x))


def test_unique_flags_and_host_inputs(queue, rng):
    x = keys_of(rng, np.float32, 300, "few")
    for flags in [(False, False, False), (True, False, False), (False, True, False),
                  (False, False, True), (True, False, True)]:
        got = clradix.unique(x, *flags, queue=queue)
        want = np.unique(x, *flags)
        if not any(flags):
            assert isinstance(got, np.ndarray)
            np.testing.assert_array_equal(got, want)
        else:
            assert isinstance(got, tuple) and len(got) == len(want)
            for g, w in zip(got, want):
                assert isinstance(g, np.ndarray)
                np.testing.assert_array_equal(g, w)
    with pytest.raises(NotImplementedError, match="axis"):
        clradix.unique(x, axis=0, queue=queue)
    with pytest.raises(TypeError, match="return_counts must be a bool"):
        clradix.unique(x, return_counts=1, queue=queue)


def test_array_api_functions(queue, rng):
    x = keys_of(rng, np.float64, 400, "few")
    x[::9] = np.nan
    x = x.reshape(20, 20)
    d = cl_array.to_device(queue, x)
    want = np.unique(x, True, True, True, equal_nan=False)
    r = clradix.unique_all(d)
    assert isinstance(r, clradix.UniqueAllResult)
    assert r.inverse_indices.shape == x.shape
    for g, w in zip(r, want):
        np.testing.assert_array_equal(g.get(), w)
    c = clradix.unique_counts(d)
    np.testing.assert_array_equal(c.values.get(), want[0])
    np.testing.assert_array_equal(c.counts.get(), want[3])
    i = clradix.unique_inverse(x, queue=queue)
    assert isinstance(i, clradix.UniqueInverseResult)
    np.testing.assert_array_equal(i.inverse_indices, want[2])
    np.testing.assert_array_equal(i.values[i.inverse_indices], x)
    v = clradix.unique_values(d)
    np.testing.assert_array_equal(v.get(), want[0])
    assert int(np.isnan(v.get()).sum()) == int(np.isnan(x).sum())


def test_empty_one_and_0d(queue):
    for x in (np.array([], np.float32), np.array([7], np.int8), np.float32(2.5),
              np.zeros((3, 0), np.uint16)):
        got = clradix.unique(x, True, True, True, queue=queue)
        want = np.unique(x, True, True, True)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (x, g, w)
            np.testing.assert_array_equal(g, w)
        runs = clradix.run_lengths(x, queue=queue)
        for g, w in zip(runs, ref_runs(np.asarray(x))):
            np.testing.assert_array_equal(g, w)


def test_strided_input_and_many_blocks(queue, rng):
    x = keys_of(rng, np.int32, 60_000, "few")
    d = cl_array.to_device(queue, np.repeat(x, 2))[1::2]
    got = clradix.unique(d, True, True, True)
    check_unique(x, [g.get() for g in got], what="strided")
    big = np.sort(rng.integers(0, 5000, 100_003)).astype(np.uint32)
    runs = clradix.run_lengths(cl_array.to_device(queue, big))
    for g, w in zip(runs, ref_runs(big)):
        np.testing.assert_array_equal(g.get(), w)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint64, np.int8], ids=str)
def test_run_lengths(queue, rng, dtype):
    for dist in ("random", "equal", "few"):
        x = keys_of(rng, dtype, 700, dist)
        for a in (x, np.sort(x)):
            d = cl_array.to_device(queue, a)
            for equal_nan in (True, False):
                r = clradix.run_lengths(d, equal_nan=equal_nan)
                assert isinstance(r, clradix.RunLengths)
                want = ref_runs(a, equal_nan)
                np.testing.assert_array_equal(bits_of(r.values.get()), bits_of(want[0]))
                np.testing.assert_array_equal(r.starts.get(), want[1])
                np.testing.assert_array_equal(r.lengths.get(), want[2])


def test_the_cell_list_recipe(queue, rng):
    """Particles sorted by cell with their positions; each occupied cell's first particle and
    count, and the dense table of every cell's start through searchsorted."""
    n, cells = 5000, 64
    cell = rng.integers(0, cells, n).astype(np.uint32)
    pos = rng.random((n, 3)).astype(np.float32)
    d_cell, d_pos = cl_array.to_device(queue, cell), cl_array.to_device(queue, pos)
    clradix.sorter_for(queue.context).sort(queue, d_cell, values=[d_pos])
    occupied, first, count = clradix.run_lengths(d_cell)
    order = np.argsort(cell, kind="stable")
    np.testing.assert_array_equal(d_pos.get(), pos[order])
    v, i, c = np.unique(cell, return_index=True, return_counts=True)
    np.testing.assert_array_equal(occupied.get(), v)
    np.testing.assert_array_equal(count.get(), c)
    np.testing.assert_array_equal(first.get(), np.searchsorted(cell[order], v))
    table = clradix.searchsorted(d_cell, cl_array.arange(queue, cells + 1, dtype=np.uint32))
    np.testing.assert_array_equal(np.diff(table.get()), np.bincount(cell, minlength=cells))


def test_user_event_refused_before_the_read(queue):
    """The count of unique values (runs) is read back to size the results: a pending user event
    among the call's events is refused, with a message naming that read (it once spoke of
    check_offsets=True, which these functions do not take)."""
    d = cl_array.to_device(queue, np.array([3, 1, 3], np.int32))
    gate = cl.UserEvent(queue.context)
    with pytest.raises(ValueError, match="user event"):
        clradix.unique(d, wait_for=[gate])
    for fn, counted in ((clradix.unique, "unique values"), (clradix.unique_counts,
                        "unique values"), (clradix.run_lengths, "runs")):
        with pytest.raises(ValueError) as info:
            fn(d, wait_for=[gate])
        msg = str(info.value)
        assert f"{fn.__name__} reads the number of {counted} back" in msg, msg
        assert "check_offsets" not in msg and "Complete it before the call" in msg, msg
    gate.set_status(cl.command_execution_status.COMPLETE)
    np.testing.assert_array_equal(clradix.unique(d, wait_for=[gate]).get(), [1, 3])


@st.composite
def unique_cases(draw):
    return dict(dtype=draw(st.sampled_from(DTYPES)), n=draw(st.integers(0, 300)),
                dist=draw(st.sampled_from(["random", "equal", "distinct", "few"])),
                equal_nan=draw(st.booleans()), seed=draw(st.integers(0, 2 ** 32 - 1)))


def test_property_matches_numpy(queue):
    @settings(max_examples=30, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(c=unique_cases())
    def check(c):
        x = keys_of(np.random.default_rng(c["seed"]), c["dtype"], c["n"], c["dist"])
        got = clradix.unique(cl_array.to_device(queue, x), True, True, True,
                             equal_nan=c["equal_nan"])
        check_unique(x, [g.get() for g in got], c["equal_nan"], str(c))
        runs = clradix.run_lengths(cl_array.to_device(queue, x), equal_nan=c["equal_nan"])
        for g, w in zip(runs, ref_runs(x, c["equal_nan"])):
            np.testing.assert_array_equal(bits_of(g.get()), bits_of(w), err_msg=str(c))
    check()


# runs_write's positions a work-item a round (runs.cl.mako's ipt) with groups of wg work-items
# (1: a CPU's one work-item walking its block), and "wide": 64-bit positions and counts
# (index_t ulong)
WRITE_VARIANTS = [(1, 24, False), (1, 5, False), (32, 1, False), (16, 3, False), (32, 16, False),
                  (16, 32, True), (16, 1, False), (32, 8, True)]


@pytest.mark.parametrize("wg, ipt, wide", WRITE_VARIANTS,
                         ids=[f"wg{w}-ipt{i}{'-wide' if x else ''}"
                              for w, i, x in WRITE_VARIANTS])
def test_write_variants(queue, rng, monkeypatch, poisoning_allocator, wg, ipt, wide):
    """The runs' kernels with one work-item per group (CPUs' default) and with groups whose
    work-items scan together (other devices'), with one and several positions a work-item, over
    several blocks: sizes at the rounds' and blocks' edges,
    NaN (each distinct or not), the permutation's index and inverse, runs longer than a block
    and than many rounds, all equal, all distinct; results in poisoned buffers."""
    from clradix.core import sizes
    from clradix.planning.families import families_for
    from clradix.policies.families import RunsPolicy
    monkeypatch.setitem(families_for(queue.context).policies, "runs",   # blocks of few rounds
                        RunsPolicy(wg_size=wg, per_item=2, ipt=ipt, perm_ipt=ipt))
    if wide:
        monkeypatch.setattr(sizes, "INDEX32_LIMIT", 0)
    what = f"wg {wg}, ipt {ipt}{' wide' if wide else ''}"
    alloc = poisoning_allocator
    round_ = wg * ipt
    x = keys_of(rng, np.float32, 7 * round_ + 5, "few")
    x[::13] = np.nan
    for equal_nan in (True, False):
        got = clradix.unique(cl_array.to_device(queue, x), True, True, True,
                             equal_nan=equal_nan, allocator=alloc)
        check_unique(x, [g.get() for g in got], equal_nan, what)
    # sizes at a round's edges (one round, one block; and over several blocks), keys of runs
    # of 1 to 3
    for n in (round_ - 1, round_, round_ + 1, 5 * round_ - 1, 9 * round_ + 1):
        s = np.repeat(rng.permutation(n).astype(np.uint32), rng.integers(1, 4, n))[:n]
        for g, w in zip(clradix.run_lengths(cl_array.to_device(queue, s), allocator=alloc),
                        ref_runs(s)):
            np.testing.assert_array_equal(g.get(), w, err_msg=f"{what}, n {n}")
    # runs longer than a block (blocks of no run start, whose successors take the last start of
    # an earlier block) and than many rounds beside runs of one key, every function of the
    # family
    lengths = rng.choice([1, 1, 2, 3, round_ + 1, 7 * round_], 60)
    s = np.repeat(np.arange(lengths.size, dtype=np.uint16), lengths)
    d = cl_array.to_device(queue, s)
    for g, w in zip(clradix.run_lengths(d, allocator=alloc), ref_runs(s)):
        np.testing.assert_array_equal(g.get(), w, err_msg=what)
    np.testing.assert_array_equal(clradix.unique_counts(d).counts.get(), lengths)
    np.testing.assert_array_equal(clradix.unique_values(d).get(), np.arange(lengths.size))
    got = clradix.unique_all(d[::-1], allocator=alloc)
    check_unique(s[::-1], [g.get() for g in (got.values, got.indices, got.inverse_indices,
                                             got.counts)], what=f"{what}, all")
    got = clradix.unique_inverse(d)
    np.testing.assert_array_equal(got.inverse_indices.get(), np.repeat(np.arange(60), lengths))
    for dist in ("equal", "distinct"):
        s = np.sort(keys_of(rng, np.int64, 3 * round_ + 2, dist))
        for g, w in zip(clradix.run_lengths(cl_array.to_device(queue, s), allocator=alloc),
                        ref_runs(s)):
            np.testing.assert_array_equal(g.get(), w, err_msg=f"{what}, {dist}")


def test_runs_policy(queue):
    """runs_write's positions a round out of range are refused, naming them; CPUs take their
    own: one work-item a group, 32 positions a round, 1 with a permutation."""
    from dataclasses import replace
    from clradix.core.device import DeviceProfile
    from clradix.policies.families import RunsPolicy, family_policy
    for bad in (dict(ipt=33), dict(perm_ipt=0)):
        with pytest.raises(ValueError, match=r"ipt (33|0): the positions a work-item takes a "
                                             r"round are 1 to 32"):
            RunsPolicy(**bad)
    profile = DeviceProfile.from_device(queue.device)
    cpu = family_policy("runs", replace(profile, device_type="cpu"))
    assert (cpu.wg_size, cpu.write_ipt(False), cpu.write_ipt(True)) == (1, 32, 1)
    gpu = family_policy("runs", replace(profile, device_type="gpu", max_wg_size=1024))
    assert (gpu.wg_size, gpu.write_ipt(False), gpu.write_ipt(True)) == (256, 8, 8)


def test_two_launches_over_the_runs(queue, rng, monkeypatch):
    """Over the runs, every function is two launches (the count per block, the write: the
    lengths written with the runs, no scan launch between) and one read of the counts."""
    from clradix.drivers.runs import Runs
    trace: list = []
    monkeypatch.setattr(Runs, "trace", trace)   # every Runs driver's commands
    x = keys_of(rng, np.float32, 3000, "few")
    d = cl_array.to_device(queue, x)
    for f in (clradix.run_lengths, clradix.unique_values, clradix.unique_counts,
              clradix.unique_inverse, clradix.unique_all):
        trace.clear()
        f(d)
        names = [name for name, _ in trace]
        assert names == ["runs_count", "runs_write"], (f.__name__, names)
