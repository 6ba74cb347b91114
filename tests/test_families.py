"""The kernel families after a sort (permutations, layout copies, searchsorted, runs) on the one
launch path: drivers planned per device from a family policy, their jobs made ready once per call
configuration and replayed (clradix.planning.families), shared per context."""

import warnings
from dataclasses import replace

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.core import launches, limits
from clradix.core.device import DeviceProfile
from clradix.core.errors import WorkGroupLimitError
from clradix.core.keys import key_codec
from clradix.drivers.runs import Runs, RunsJob, RunsOperands
from clradix.planning.families import families_for
from clradix.policies.families import GridPolicy, RunsPolicy, SearchPolicy, family_policy


def _made(monkeypatch):
    """The drivers whose launch sequences are made from now on."""
    made = []
    init = launches.LaunchSequence.__init__
    monkeypatch.setattr(launches.LaunchSequence, "__init__",
                        lambda self, driver: (made.append(driver), init(self, driver))[1])
    return made


def test_families_are_shared_per_context(ctx):
    assert families_for(ctx) is families_for(ctx)
    other = cl.Context(ctx.devices)
    assert families_for(other) is not families_for(ctx)


def test_a_repeated_call_builds_nothing(ctx, queue, rng, monkeypatch):
    """The second call of a configuration (searchsorted, a strided sort's gathers, the records'
    take and iota) makes no launch sequence; another size makes one."""
    s = cl_array.to_device(queue, np.sort(rng.random(500).astype(np.float32)))
    v = cl_array.to_device(queue, rng.random(300).astype(np.float32))
    m = cl_array.to_device(queue, rng.random((30, 20)).astype(np.float32))
    keys = cl_array.to_device(queue, rng.integers(0, 9, 200).astype(np.uint32))
    recs = cl_array.to_device(queue, rng.random((200, 3)).astype(np.float32))

    def calls():
        want = np.searchsorted(s.get(), v.get())
        np.testing.assert_array_equal(clradix.searchsorted(s, v).get(), want)
        np.testing.assert_array_equal(clradix.sort(m, axis=0).get(), np.sort(m.get(), axis=0))
        k, r = keys.get(), recs.get()
        clradix.sorter_for(ctx).sort(queue, keys, values=[recs]).wait()
        order = np.argsort(k, kind="stable")
        np.testing.assert_array_equal(recs.get(), r[order])
    calls()
    made = _made(monkeypatch)
    calls()
    assert [d for d in made if d.family] == []
    clradix.searchsorted(s, v[:100]).get()
    assert [d.family for d in made if d.family] == ["search"]


def test_one_write_sequence_whatever_the_number_of_runs(ctx, queue, monkeypatch):
    """runs_write takes the number of runs, read back after the count, as the call's scalar:
    arrays of one size and different numbers of runs replay one write sequence."""
    a = cl_array.to_device(queue, np.repeat(np.arange(50, dtype=np.uint32), 20))
    b = cl_array.to_device(queue, np.repeat(np.arange(10, dtype=np.uint32), 100))
    clradix.run_lengths(a)
    made = _made(monkeypatch)
    for x, runs in ((b, 10), (a, 50), (b, 10)):
        got = clradix.run_lengths(x)
        assert got.values.shape == (runs,)
        np.testing.assert_array_equal(got.lengths.get(), np.full(runs, 1000 // runs))
    assert [d for d in made if d.family] == []


def test_the_call_scalar_is_checked(ctx):
    """A Scalar argument is refused for a buffer or a non-integer parameter when the sequence is
    made; a call must pass each scalar, an integer of the parameter's range."""
    device = ctx.devices[0]
    fam = families_for(ctx)
    job = RunsJob(key_codec(np.uint32), "uint", "ulong", None, False, False, 100, False, True)
    driver = fam.planner.family_driver(device, Runs, job)
    seq = launches.LaunchSequence(driver)
    with pytest.raises(TypeError, match=r"kernel runs_count: parameter 0 .* takes a buffer, got 0"):
        seq.launch("count", "runs_count", (1,), (1,), [launches.Scalar(0)] * 6)
    prepared = fam.work(device, Runs, job)
    assert prepared.sequence.scalar_count == 1
    q = cl.CommandQueue(ctx)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
    ops = RunsOperands((buf, 0), (buf, 0), (buf, 0))
    with pytest.raises(TypeError, match="expected 1 scalars, got 0"):
        prepared.run(q, ops, None, [])
    with pytest.raises(TypeError, match=r"kernel runs_write: parameter 6 \(uint m\) takes values "
                                        r"from 0 to 4294967295, got -1"):
        prepared.run(q, ops, None, [], scalars=(-1,))


def test_policies_by_device():
    """The one choice of the families' tuning from a device profile: work-groups of 256 (fewer
    where the device runs fewer), no splitters and one-work-item runs on CPUs."""
    gpu = DeviceProfile(name="GPU", vendor="V", platform="P", driver_version="1",
                        device_type="gpu", compute_units=16, local_mem_bytes=48 << 10,
                        max_wg_size=1024, max_alloc_bytes=1 << 32, extensions=frozenset())
    cpu = replace(gpu, device_type="cpu", max_wg_size=8192)
    assert family_policy("permute", gpu) == family_policy("layout", gpu) == GridPolicy(256)
    assert family_policy("permute", replace(gpu, max_wg_size=192)) == GridPolicy(128)
    assert family_policy("search", gpu).local_levels == 11
    assert family_policy("search", cpu) == SearchPolicy(local_levels=0)
    assert family_policy("runs", gpu) == RunsPolicy()
    assert family_policy("runs", cpu) == RunsPolicy(wg_size=1, ipt=32, perm_ipt=1)
    with pytest.raises(ValueError, match="no kernel family 'sort'"):
        family_policy("sort", gpu)
    with pytest.raises(ValueError, match="wg_size 100: takes a power of two"):
        GridPolicy(wg_size=100)


def _limit(monkeypatch, names, limit):
    real = limits.kernel_wg_limit
    monkeypatch.setattr(limits, "kernel_wg_limit", lambda knl, dev: min(limit, real(knl, dev))
                        if knl.function_name in names else real(knl, dev))


def test_a_kernel_limit_shrinks_the_work_group(ctx, rng, monkeypatch):
    """A family kernel that runs fewer work-items than its policy's work-group makes the planner
    plan a smaller one (warning once), as for the sorts; a policy given is kept, and the error
    names the kernel and its limit."""
    fresh = cl.Context(ctx.devices)   # its families learn the limit, not the shared ones
    q = cl.CommandQueue(fresh)
    wg = family_policy("search", DeviceProfile.from_device(ctx.devices[0])).wg_size
    if wg < 64:
        pytest.skip(f"the search runs {wg} work-items a group here")
    _limit(monkeypatch, ("search_rows",), 40)
    s = np.sort(rng.random(1000).astype(np.float32))
    v = rng.random(700).astype(np.float32)
    ds, dv = cl_array.to_device(q, s), cl_array.to_device(q, v)
    with pytest.warns(RuntimeWarning, match=r"search_rows runs at most 40 .*shrinks wg_size to 32"):
        got = clradix.searchsorted(ds, dv)
    np.testing.assert_array_equal(got.get(), np.searchsorted(s, v))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(clradix.searchsorted(ds, dv[:300]).get(),
                                      np.searchsorted(s, v[:300]))
    monkeypatch.setitem(families_for(fresh).policies, "search", SearchPolicy(wg_size=64))
    with pytest.raises(WorkGroupLimitError, match="kernel search_rows runs at most 40"):
        clradix.searchsorted(ds, dv)


def test_families_from_threads(ctx):
    """Threads share the context's families (one planner, kernel objects shared by the
    configurations of a driver): searches, runs, strided sorts and records of sizes that
    alternate between threads, every result checked."""
    from test_threads import THREADS, _run_threads
    queues = [cl.CommandQueue(ctx) for _ in range(THREADS)]
    sizes = [300, 1000, 77, 2048]

    def work(t):
        q = queues[t]
        rng = np.random.default_rng(1000 + t)
        for i in range(6):
            n = sizes[(t + i) % len(sizes)]
            s = np.sort(rng.random(n).astype(np.float32))
            v = rng.random(n // 2 + 1).astype(np.float32)
            got = clradix.searchsorted(cl_array.to_device(q, s), cl_array.to_device(q, v),
                                       "left" if i % 2 else "right")
            np.testing.assert_array_equal(got.get(), np.searchsorted(
                s, v, "left" if i % 2 else "right"), err_msg=f"thread {t} search {n}")
            k = rng.integers(0, 1 + n // 10, n).astype(np.uint32)
            vals, counts = clradix.unique_counts(cl_array.to_device(q, k))
            want = np.unique(k, return_counts=True)
            np.testing.assert_array_equal(vals.get(), want[0])
            np.testing.assert_array_equal(counts.get(), want[1])
            m = rng.random((n // 10 + 1, 7)).astype(np.float32)
            np.testing.assert_array_equal(clradix.sort(cl_array.to_device(q, m), axis=0).get(),
                                          np.sort(m, axis=0), err_msg=f"thread {t} gather")
            keys = [rng.integers(0, 3, n).astype(np.uint16), rng.integers(0, 5, n).astype(np.int32)]
            got = clradix.lexsort([cl_array.to_device(q, x) for x in keys])
            np.testing.assert_array_equal(got.get(), np.lexsort(keys), err_msg=f"thread {t}")
    _run_threads(work, THREADS)
