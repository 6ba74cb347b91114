"""The one-work-group sorts (single_wg): at most one tile of keys in one launch, by 4-bit split
passes (rts_small) or by 8-bit digits ranked as onesweep ranks them (os_small)."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.core.keys import KEY_DTYPES
from clradix.core.errors import PolicyError

from conftest import check_sort, one_group_tile
from data import DISTRIBUTIONS, float_specials
from reference import bits_of

DTYPES = [np.dtype(d) for d in KEY_DTYPES]


@pytest.fixture(scope="module", params=[4, 8], ids=["split4", "rank8"])
def small(ctx, request):
    return clradix.Sorter(ctx, algorithm="single_wg", radix_bits=request.param)


@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d) for d in DTYPES])
def test_sizes_and_directions(ctx, queue, small, rng, dtype):
    tile = small.plan(ctx.devices[0], dtype, 1, value_dtype=np.uint32).tile
    for n in (2, 3, 255, 256, 257, 1000, tile - 1, tile):
        keys = float_specials(rng, dtype, n)
        check_sort(queue, small, keys, "pairs")
        check_sort(queue, small, keys, "pairs", descending=True)


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
def test_distributions_and_bits(ctx, queue, small, rng, dist):
    keys = DISTRIBUTIONS[dist](rng, np.int32, 3001)
    check_sort(queue, small, keys, "pairs")
    for begin, end in ((0, 0), (3, 11), (8, 32), (31, 32)):
        check_sort(queue, small, keys, "pairs", begin_bit=begin, end_bit=end)


def test_argsort_and_value_widths(ctx, queue, small, rng):
    # 2049 keys, or the widest value's tile where local memory is smaller (48 KiB on NVIDIA)
    tile = small.plan(ctx.devices[0], np.float64, 1, value_dtype=np.dtype("V16")).tile
    keys = float_specials(rng, np.float64, min(2049, tile))
    for desc in (False, True):
        check_sort(queue, small, keys, "argsort", descending=desc)
    for vdt in (np.uint8, np.uint16, np.uint64, np.dtype("V16")):
        vals = rng.integers(0, 256, keys.size * np.dtype(vdt).itemsize, dtype=np.uint8).view(vdt)
        check_sort(queue, small, keys, "pairs", values=vals)


def test_view_with_offset_leaves_the_rest(ctx, queue, small, rng):
    keys = float_specials(rng, np.uint16, 3000)
    d = cl_array.to_device(queue, keys)
    small.sort(queue, d[100:2100]).wait()
    expect = keys.copy()
    expect[100:2100] = np.sort(keys[100:2100], kind="stable")
    np.testing.assert_array_equal(d.get(), expect)


def test_planner_uses_one_launch_for_small_n(ctx, queue, rng):
    sorter = clradix.Sorter(ctx)
    dev = ctx.devices[0]
    if sorter.plan(dev, np.float32, 1000).algorithm == "chunks":
        pytest.skip("CPUs plan the chunked sort at every size (test_policy)")
    assert sorter.plan(dev, np.float32, 1000).algorithm == "single_wg"
    assert sorter.plan(dev, np.float32, 10 ** 6).algorithm != "single_wg"
    keys = float_specials(rng, np.float32, 1000)
    d = cl_array.to_device(queue, keys)
    queue.finish()
    algo_calls = []
    evt = sorter.sort(queue, d)
    for algo in sorter.planner.drivers.values():
        algo_calls.append(type(algo).__name__)
    evt.wait()
    # the 4-bit single work-group sort, or the 8-bit one (onesweep's ranking, NVIDIA's default)
    assert algo_calls in (["SingleWorkGroup"], ["OnesweepSmall"])
    np.testing.assert_array_equal(bits_of(d.get()), bits_of(np.sort(keys, kind="stable")))


def test_too_many_keys_for_one_group_is_refused(ctx, queue, small):
    tile = small.plan(ctx.devices[0], np.uint32, 1).tile
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * (tile + 1))
    with pytest.raises(PolicyError, match="at most one tile"):
        small.sort(queue, buf)


def test_keys_only_tile_boundary(ctx, queue, small, rng):
    """tile - 1 and tile keys alone (os_small's keys-only tile is larger than its pairs' where
    local memory is tight), then tile + 1 with the planner, which leaves one work-group."""
    dev = ctx.devices[0]
    tile = small.plan(dev, np.float32, 1).tile
    for n in (tile - 1, tile):
        keys = float_specials(rng, np.float32, n)
        check_sort(queue, small, keys, "keys")
        check_sort(queue, small, keys, "keys", descending=True)
    rb = small.plan(dev, np.float32, 1).radix_bits
    planned = clradix.Sorter(ctx, radix_bits=rb)
    keys = float_specials(rng, np.float32, tile + 1)
    check_sort(queue, planned, keys, "pairs")


def test_one_launch_at_the_default_tile(ctx, queue, rng):
    """The planner's one-work-group sort at its tile - 1 and tile (one command: its kernel) and
    at tile + 1 (another route: several commands, or on NVIDIA the one-launch onesweep),
    checked against numpy."""
    sorter = clradix.Sorter(ctx)
    if sorter.plan(ctx.devices[0], np.uint32, 1000).algorithm == "chunks":
        pytest.skip("CPUs plan the chunked sort at every size (test_policy)")
    tile = one_group_tile(sorter, ctx.devices[0], np.uint32)
    for n, one in ((tile - 1, True), (tile, True), (tile + 1, False)):
        trace = []
        keys = float_specials(rng, np.uint32, n)
        d = cl_array.to_device(queue, keys)
        sorter.sort(queue, d).wait()
        for driver in sorter.planner.drivers.values():
            driver.trace = trace
        d = cl_array.to_device(queue, keys)
        sorter.sort(queue, d).wait()
        for driver in sorter.planner.drivers.values():
            driver.trace = None
        names = [name for name, _ in trace]
        assert (names in (["rts_small"], ["os_small"])) == one, (n, names)
        np.testing.assert_array_equal(d.get(), np.sort(keys, kind="stable"))
