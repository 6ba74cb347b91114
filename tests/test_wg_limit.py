"""A built kernel that runs fewer work-items per group than the policy's wg_size.

The planner's wg_size shrinks (with one warning) and the sort still runs; a wg_size the caller set
stays, and the PolicyError names the device, the kernel, its limit and the asked size.
"""

import warnings

import numpy as np
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.core import limits as passes
from clradix.core.errors import PolicyError

from conftest import check_sort
from data import float_specials
from reference import bits_of


def _limit(monkeypatch, limit, only=None):
    """Make CL_KERNEL_WORK_GROUP_SIZE read ``limit`` (for the kernels named in ``only``, or all);
    returns the list of (kernel name, real limit) queried."""
    real = passes.kernel_wg_limit
    queried = []

    def fake(kernel, device):
        name = kernel.function_name
        queried.append(name)
        if only is None or name in only:
            return min(limit, real(kernel, device))
        return real(kernel, device)
    monkeypatch.setattr(passes, "kernel_wg_limit", fake)
    return queried


def _sort_and_check(queue, sorter, keys, descending=False):
    check_sort(queue, sorter, keys, "pairs", descending=descending)
    check_sort(queue, sorter, keys, "argsort")


@pytest.mark.parametrize("n", [1000, 40_000], ids=["one_tile", "many_tiles"])
def test_planned_wg_shrinks_and_warns_once(ctx, queue, rng, monkeypatch, n):
    dev = ctx.devices[0]
    sorter = clradix.Sorter(ctx)
    before = sorter.plan(dev, np.float32, n, np.uint32)
    if before.wg_size <= 32:
        pytest.skip(f"the planner already picks wg_size={before.wg_size} here")
    limit = before.wg_size // 2 - 1  # not a power of two: the cap is the one below it
    queried = _limit(monkeypatch, limit)
    keys = float_specials(rng, np.float32, n)
    with pytest.warns(RuntimeWarning) as record:
        _sort_and_check(queue, sorter, keys)
    msgs = [str(w.message) for w in record if "shrinks wg_size" in str(w.message)]
    # one warning per key configuration: key-value sort (uint values) and argsort share it
    assert len(msgs) == 1, msgs
    assert dev.name.strip() in msgs[0] and f"at most {limit} work-items" in msgs[0]
    assert f"wg_size={before.wg_size}" in msgs[0]
    cap = 1 << (limit.bit_length() - 1)
    after = sorter.plan(dev, np.float32, n, np.uint32)
    assert after.wg_size <= cap
    assert all(p.wg_size <= cap for (_, p, *_) in sorter.planner.drivers)
    assert queried  # the limit was asked of the built kernels
    # the cap is remembered: more sorts of this configuration warn no more
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _sort_and_check(queue, sorter, float_specials(rng, np.float32, n), descending=True)
    # another key configuration is not capped until its own kernels say so
    assert sorter.plan(dev, np.uint64, n).wg_size == clradix.Sorter(ctx).plan(
        dev, np.uint64, n).wg_size


def test_limit_of_one_kernel_only(ctx, queue, rng, monkeypatch):
    """Only the scatter kernel is limited: the whole policy shrinks so that every kernel fits."""
    dev = ctx.devices[0]
    sorter = clradix.Sorter(ctx, algorithm="reduce_then_scan")
    n = 30_000
    wg = sorter.plan(dev, np.int32, n, np.uint32).wg_size
    if wg <= 32:
        pytest.skip(f"the planner already picks wg_size={wg} here")
    _limit(monkeypatch, wg // 4, only={"rts_scatter"})
    keys = float_specials(rng, np.int32, n)
    with pytest.warns(RuntimeWarning, match="kernel rts_scatter runs at most"):
        _sort_and_check(queue, sorter, keys)
    assert sorter.plan(dev, np.int32, n, np.uint32).wg_size == wg // 4


@pytest.mark.parametrize("n", [1000, 40_000], ids=["one_tile", "many_tiles"])
def test_forced_wg_is_not_shrunk(ctx, queue, rng, monkeypatch, n):
    dev = ctx.devices[0]
    sorter = clradix.Sorter(ctx, wg_size=128)
    _limit(monkeypatch, 64)
    keys = float_specials(rng, np.float32, n)
    d_keys = cl_array.to_device(queue, keys)
    d_vals = cl_array.to_device(queue, np.arange(n, dtype=np.uint32))
    queue.finish()
    with pytest.raises(PolicyError) as info:
        sorter.sort(queue, d_keys, values=d_vals)
    msg = str(info.value)
    assert dev.name.strip() in msg
    assert "at most 64 work-items per group" in msg and "wg_size=128" in msg
    assert any(f"kernel {k} " in msg for k in ("rts_count", "rts_scan", "rts_scatter", "rts_small",
                                               "os_histogram", "os_bins", "os_pass", "os_fused",
                                               "os_small"))
    np.testing.assert_array_equal(bits_of(d_keys.get()), bits_of(keys))
    np.testing.assert_array_equal(d_vals.get(), np.arange(n, dtype=np.uint32))
    assert sorter.plan(dev, np.float32, n, np.uint32).wg_size == 128


def test_no_valid_policy_within_the_limit(ctx, queue, rng, monkeypatch):
    """Shrinking stops with a PolicyError when no smaller policy is valid (onesweep's subgroups
    of 32 do not fit in 16 work-items) instead of looping."""
    sorter = clradix.Sorter(ctx, algorithm="onesweep", ranking="local")
    _limit(monkeypatch, 16)
    keys = float_specials(rng, np.uint32, 40_000)
    d_keys = cl_array.to_device(queue, keys)
    queue.finish()
    with pytest.warns(RuntimeWarning, match="shrinks wg_size"):
        with pytest.raises(PolicyError, match="at most 16 work-items.*no valid policy fits"):
            sorter.sort(queue, d_keys)
    np.testing.assert_array_equal(d_keys.get(), keys)


def test_register_cap_gives_the_real_limit():
    """NVIDIA reports CL_KERNEL_WORK_GROUP_SIZE 256 for any kernel that does not state its size;
    a kernel under -cl-nv-maxrregcount=N runs the register file over N work-items (whole warps,
    at most the device's largest group). Without a cap, or on a device without NVIDIA's
    attributes, the report stands."""
    from types import SimpleNamespace

    from clradix.core.limits import capped_wg_limit
    nv = SimpleNamespace(registers_per_block_nv=65536, warp_size_nv=32, max_work_group_size=1024,
                         extensions="cl_khr_fp64 cl_nv_device_attribute_query")
    assert capped_wg_limit(nv, ["-cl-nv-maxrregcount=56"]) == 1024
    assert capped_wg_limit(nv, ["-cl-nv-maxrregcount=80"]) == 800
    assert capped_wg_limit(nv, ["-cl-nv-maxrregcount=255"]) == 256
    assert capped_wg_limit(nv, ["-cl-fast-relaxed-math"]) is None
    other = SimpleNamespace(max_work_group_size=4096)
    assert capped_wg_limit(other, ["-cl-nv-maxrregcount=64"]) is None
