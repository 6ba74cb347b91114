"""Onesweep on the test devices: every ranking back-end the device has, the status ring wrapping
around, forced fallback, portions, key-value, descending, bit ranges."""

import numpy as np
import pytest

import clradix
from clradix.drivers import onesweep
from clradix.core.device import DeviceProfile
from clradix.core.keys import KEY_DTYPES, key_codec
from clradix.policies.fit import ranking_backends

from conftest import check_sort, on_pocl
from data import DISTRIBUTIONS, finite, float_specials, uniform

DTYPES = [np.dtype(d) for d in KEY_DTYPES]
WG, IPT = 64, 4
TILE = WG * IPT
# A ring of 24 tiles and look-back 8: wraps many times at a few thousand keys.
SMALL_RING = dict(ring_slots=24, lookback=8)


def backends(ctx):
    prof = DeviceProfile.from_device(ctx.devices[0])
    return ranking_backends(prof)


def make(ctx, ranking, **kw):
    sg = 32 if ranking in ("ptx", "local") else 16
    kw.setdefault("wg_size", WG)
    kw.setdefault("items_per_thread", IPT)
    return clradix.Sorter(ctx, algorithm="onesweep", ranking=ranking, sg_size=sg, **kw)


# Every key dtype, and every radix bits with keys of every width (1, 2, 4 and 8 bytes): the 12
# pairs cover both without the whole product (33 configurations, each a kernel build that costs
# seconds on a CPU device); key-value sorts, every size class of the small policy.
DTYPE_RADIX = [("uint8", 2), ("uint8", 8), ("int8", 4),
               ("uint16", 2), ("int16", 8), ("float16", 4),
               ("int32", 2), ("float32", 4), ("uint32", 8),
               ("int64", 2), ("uint64", 4), ("float64", 8)]
assert {np.dtype(d) for d, _ in DTYPE_RADIX} == set(DTYPES)
assert len({(np.dtype(d).itemsize, rb) for d, rb in DTYPE_RADIX}) == 4 * 3


@pytest.mark.parametrize("dtype,radix_bits", DTYPE_RADIX, ids=[f"{d}-{rb}" for d, rb in DTYPE_RADIX])
def test_dtypes_and_sizes(ctx, queue, rng, dtype, radix_bits):
    for ranking in backends(ctx):
        sorter = make(ctx, ranking, radix_bits=radix_bits, **SMALL_RING)
        for n in (0, 1, 2, WG - 1, WG + 1, TILE - 1, TILE + 1, 29 * TILE + 7):
            check_sort(queue, sorter, float_specials(rng, dtype, n), "pairs")


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
def test_distributions_descending(ctx, queue, rng, dist):
    for ranking in backends(ctx):
        sorter = make(ctx, ranking, **SMALL_RING)
        for dtype in (np.uint32, np.float64, np.int16):
            keys = DISTRIBUTIONS[dist](rng, dtype, 40 * TILE + 3)
            check_sort(queue, sorter, keys, "pairs")
            check_sort(queue, sorter, keys, "pairs", descending=True)


@pytest.mark.parametrize("ranking", ["local", "khr", "intel", "ptx"])
def test_forced_fallback(ctx, queue, rng, ranking):
    """Every look-back recomputes its predecessors' counts from their keys: still exact."""
    if ranking not in backends(ctx):
        pytest.skip(f"{ranking} ranking is not available on {ctx.devices[0].name}")
    sorter = make(ctx, ranking, force_fallback=True, **SMALL_RING)
    for dtype in (np.float32, np.uint64):
        for n in (TILE + 1, 50 * TILE + 11):
            check_sort(queue, sorter, float_specials(rng, dtype, n), "pairs")


@pytest.mark.parametrize("dtype,ring", [
    (np.uint32, dict(radix_bits=8, **SMALL_RING)),   # as test_dtypes_and_sizes builds
    (np.int64, dict(ring_slots=12, lookback=4))], ids=["ring-24", "ring-12"])
def test_ring_wraps(ctx, queue, rng, dtype, ring):
    """The done words keep results exact while the ring wraps (120 tiles: 5 times round a ring
    of 24, 10 times round a ring of 12)."""
    sorter = make(ctx, "local", **ring)
    check_sort(queue, sorter, float_specials(rng, dtype, 120 * TILE + 9), "pairs")


def test_short_spin_limit_falls_back_and_posts(ctx, queue, rng):
    """A spin limit of 1 makes look-back fall back whenever a predecessor is late."""
    sorter = make(ctx, "local", spin_limit=1, **SMALL_RING)
    check_sort(queue, sorter, uniform(rng, np.uint32, 80 * TILE + 5), "pairs")


def test_portions(ctx, queue, rng, monkeypatch):
    """Sorts larger than a portion run in several launches per pass (as from 2**28 keys on)."""
    monkeypatch.setattr(onesweep, "PORTION", 5 * TILE + 3)
    for ranking in backends(ctx):
        sorter = make(ctx, ranking, **SMALL_RING)
        for dtype in (np.uint32, np.float64):
            check_sort(queue, sorter, float_specials(rng, dtype, 23 * TILE + 1), "pairs")
            check_sort(queue, sorter, float_specials(rng, dtype, 10 * TILE + 6), "pairs",
                       descending=True)


@pytest.mark.parametrize("radix_bits", [8, 4])
def test_work_group_not_a_power_of_two(ctx, queue, rng, radix_bits):
    """Work-groups of three subgroups (NVIDIA's passes run 384 work-items): more work-items than
    digits (4-bit digits) or fewer (8-bit), a tile of 3 x 5 subgroup rows, the ring wrapping."""
    for ranking in backends(ctx):
        sg = 32 if ranking in ("ptx", "local") else 16
        sorter = make(ctx, ranking, radix_bits=radix_bits, wg_size=3 * sg, items_per_thread=5,
                      **SMALL_RING)
        tile = 15 * sg
        for dtype in (np.float32, np.uint64):
            for n in (tile - 1, 37 * tile + 5):
                check_sort(queue, sorter, float_specials(rng, dtype, n), "pairs")
        check_sort(queue, sorter, uniform(rng, np.int32, 30 * tile + 1), "argsort",
                   descending=True)


def test_capped_pass_builds_its_own_program(ctx, queue, rng, monkeypatch):
    """Under a register cap (NVIDIA's large sorts) os_pass is a program of its own (384 work-items
    a group here) and os_histogram and os_bins another, without the cap, of 256 work-items a group;
    the sort is as exact."""
    monkeypatch.setattr(onesweep, "capped_registers", lambda pol, profile: True)
    sorter = make(ctx, "local", max_registers=56, wg_size=384, items_per_thread=2, **SMALL_RING)
    keys = float_specials(rng, np.float64, 40 * 384 * 2 + 3)
    check_sort(queue, sorter, keys, "pairs")
    check_sort(queue, sorter, keys, "keys", descending=True)
    driver = sorter.planner.sort_driver(ctx.devices[0], key_codec(keys.dtype), 4, keys.size)
    assert isinstance(driver, onesweep.Onesweep)
    progs = driver._programs
    assert progs["os_histogram"] is progs["os_bins"] is not progs["os_pass"]
    assert driver.render_params["part"] == "pass" and not driver.render_params["reqd_wg"]
    assert (driver.prep_wg, driver.policy.wg_size) == (256, 384)


@pytest.mark.parametrize("begin,end", [(0, 0), (4, 12), (3, 17), (24, 32)])
def test_bit_ranges_and_argsort(ctx, queue, rng, begin, end):
    sorter = make(ctx, "local", **SMALL_RING)
    keys = uniform(rng, np.uint32, 17 * TILE + 2)
    for op in ("pairs", "argsort"):
        check_sort(queue, sorter, keys, op, begin_bit=begin, end_bit=end)


def test_value_widths(ctx, queue, rng):
    sorter = make(ctx, "local", **SMALL_RING)
    n = 9 * TILE + 1
    keys = DISTRIBUTIONS["distinct16"](rng, np.uint64, n)
    for vdt in (np.uint8, np.uint16, np.uint64, np.dtype("V16")):
        vals = rng.integers(0, 256, n * np.dtype(vdt).itemsize, dtype=np.uint8).view(vdt)
        check_sort(queue, sorter, keys, "pairs", values=vals)


def test_temp_bytes_is_constant_beyond_ping_pong(ctx):
    # one policy for every n (the planner's radix bits may depend on n)
    sorter = clradix.Sorter(ctx, algorithm="onesweep", ranking="local", wg_size=WG,
                            items_per_thread=IPT, radix_bits=8, fused_passes=False)
    extra = [sorter.temp_bytes(n, np.uint32) - 4 * n for n in (10 ** 4, 10 ** 6, 10 ** 7)]
    assert extra[0] == extra[1] == extra[2] > 0
    kv = sorter.temp_bytes(10 ** 6, np.uint32, np.uint64)
    assert kv == sorter.temp_bytes(10 ** 6, np.uint32) + 8 * 10 ** 6


def test_planner_default_on_this_device_sorts(ctx, queue, rng):
    sorter = clradix.Sorter(ctx)
    for dtype in (np.uint32, np.float32, np.uint64):
        check_sort(queue, sorter, float_specials(rng, dtype, 100_003), "pairs")


def test_planner_survives_a_ranking_the_driver_cannot_compile(ctx, queue, rng):
    """A driver that advertises subgroup extensions but cannot compile the back-end: the
    planner's choice falls back (with a warning) instead of failing the sort."""
    from dataclasses import replace
    dev = ctx.devices[0]
    prof = DeviceProfile.from_device(dev)
    if "khr" in ranking_backends(prof):
        pytest.skip("this device really has the khr back-end")
    sorter = clradix.Sorter(ctx, algorithm="onesweep")   # (CPUs plan the chunked sort)
    fake = replace(prof, extensions=prof.extensions | {"cl_intel_required_subgroup_size",
                                                       "cl_khr_subgroup_ballot"})
    sorter.planner.profiles.replace(dev, fake)
    n = (1 << 18) + 3   # the planner picks onesweep on subgroup CPU runtimes from 2^18 keys
    picked = sorter.plan(dev, np.uint32, n)
    if prof.is_gpu and picked.ranking != "khr":
        pytest.skip(f"the planner prefers the {picked.ranking!r} ranking on this device")
    assert picked.ranking == "khr"
    keys = uniform(rng, np.uint32, n)
    with pytest.warns(RuntimeWarning, match="cannot compile the 'khr' subgroup ranking"):
        check_sort(queue, sorter, keys, "pairs")
    assert "khr" not in ranking_backends(sorter.planner.profiles.get(dev))
    check_sort(queue, sorter, keys, "pairs")  # no second warning needed: the profile remembers


# ---------------------------------------------------------------- os_fused: one launch, one fill

def needs_fused(ctx):
    """Skip where onesweep is refused (DeviceProfile.runs_started_groups_to_end: its work-groups
    wait for ones that started before them; test_onesweep_refused checks the refusal)."""
    if not DeviceProfile.from_device(ctx.devices[0]).runs_started_groups_to_end:
        pytest.skip("onesweep is refused on this device")


def test_onesweep_refused():
    """On a device not known to run started work-groups to their end, onesweep (and with it
    fused_passes) is a PolicyError naming the device and the remedy; reduce-then-scan is not."""
    from clradix.core.keys import key_codec
    from clradix.policies.sort import SortPolicy
    from clradix.planning.sort_plan import validate
    prof = DeviceProfile(name="Some FPGA", vendor="v", platform="p", driver_version="1",
                         device_type="accelerator", compute_units=4, local_mem_bytes=65536,
                         max_wg_size=256, max_alloc_bytes=1 << 30, extensions=frozenset())
    kb = key_codec(np.uint32).itemsize
    for fused in (False, True):
        pol = SortPolicy("onesweep", 8, 64, 4, 4, ranking="local", sg_size=32,
                         fused_passes=fused)
        with pytest.raises(clradix.PolicyError, match="Some FPGA.*runs_started_groups_to_end.*"
                                                      "reduce_then_scan"):
            validate(pol, prof, kb, 4, n_keys=1000)
    validate(SortPolicy("reduce_then_scan", 8, 64, 4, 4), prof, kb, 4)


FUSED_DTYPES = [("uint8", 2), ("int16", 8), ("float16", 4), ("float32", 8), ("int32", 4),
                ("float64", 8), ("uint64", 4)]
# one per key width (1, 2, 4, 8 bytes), every transform and digit width among them
POCL_FUSED = {("uint8", 2), ("float16", 4), ("int32", 4), ("float64", 8)}


@pytest.mark.parametrize("dtype,radix_bits", FUSED_DTYPES,
                         ids=[f"{d}-{rb}" for d, rb in FUSED_DTYPES])
def test_fused_passes(ctx, queue, rng, dtype, radix_bits):
    """The histogram, the scan and every digit pass in one launch: every op, both directions,
    sizes from one key to many tiles, with every ranking back-end of the device. PoCL, where
    each is a GPU-shaped program that compiles for seconds (and which never fuses the passes),
    takes one case per key width; Intel's runtime and GPUs take all."""
    needs_fused(ctx)
    if on_pocl(ctx) and (dtype, radix_bits) not in POCL_FUSED:
        pytest.skip("on PoCL one fused case per key width (POCL_FUSED)")
    for ranking in backends(ctx):
        sorter = make(ctx, ranking, radix_bits=radix_bits, fused_passes=True)
        for n in (0, 1, 2, TILE - 1, TILE + 1, 29 * TILE + 7):
            keys = float_specials(rng, dtype, n)
            check_sort(queue, sorter, keys, "pairs")
            check_sort(queue, sorter, keys, "argsort", descending=True, out=True)
        check_sort(queue, sorter, float_specials(rng, dtype, 61 * TILE + 3), "keys",
                   descending=True)


@pytest.mark.parametrize("begin,end", [(4, 12), (3, 17), (0, 24), (24, 32)])
def test_fused_bit_ranges(ctx, queue, rng, begin, end):
    """Odd and even pass counts (an odd one ends in the temporary and copies home)."""
    needs_fused(ctx)
    sorter = make(ctx, "local", fused_passes=True)
    keys = uniform(rng, np.uint32, 17 * TILE + 2)
    for op in ("keys", "pairs", "argsort"):
        check_sort(queue, sorter, keys, op, begin_bit=begin, end_bit=end)


def test_fused_value_widths_fallback_and_offsets(ctx, queue, rng):
    needs_fused(ctx)
    sorter = make(ctx, "local", fused_passes=True, force_fallback=True)
    n = 9 * TILE + 1
    keys = DISTRIBUTIONS["distinct16"](rng, np.uint64, n)
    for vdt in (np.uint8, np.uint16, np.uint64, np.dtype("V16")):
        vals = rng.integers(0, 256, n * np.dtype(vdt).itemsize, dtype=np.uint8).view(vdt)
        check_sort(queue, sorter, keys, "pairs", values=vals, pad=3)
    check_sort(queue, sorter, float_specials(rng, np.float32, n), "argsort", pad=5)


def test_fused_state_block_is_left_zero(ctx, queue, rng):
    """os_fused's counters and histogram are a block the launch finds zero and leaves zero: on
    an in-order queue the Sorter keeps one for the queue and fills it only when it makes it (a
    later call is one command), through calls of two key widths (one pass and eight), several
    calls behind one user event, and on an out-of-order queue (a temporary filled every call).
    Keys only, two programs (each a long build on CPU devices)."""
    needs_fused(ctx)
    import pyopencl as cl
    import pyopencl.array as cl_array
    from clradix.bench import count_commands
    sorter = make(ctx, "local", fused_passes=True)

    def kept():
        block = sorter._pools._states[queue]
        got = np.empty(block.size // 4, np.uint32)
        cl.enqueue_copy(queue, got, block)
        return got

    for dtype in (np.uint8, np.uint64):
        keys = float_specials(rng, dtype, 23 * TILE + 5)
        check_sort(queue, sorter, keys, "keys")
        assert not kept().any(), f"{np.dtype(dtype)}: the state block was left non-zero"
        d = cl_array.to_device(queue, keys)
        queue.finish()
        with count_commands() as counted:
            sorter.sort(queue, d)
        queue.finish()
        assert counted.counts.get("enqueue_fill_buffer", 0) == 0, counted.counts
        assert np.array_equal(d.get(), np.sort(keys)) and not kept().any()
    gate = cl.UserEvent(ctx)
    keys = [float_specials(rng, np.uint64, 7 * TILE + k) for k in range(3)]
    arrays = [cl_array.to_device(queue, k) for k in keys]
    queue.finish()
    for d in arrays:
        sorter.sort(queue, d, wait_for=[gate])
    gate.set_status(cl.command_execution_status.COMPLETE)
    for d, k in zip(arrays, keys):
        assert np.array_equal(d.get(), np.sort(k))
    assert not kept().any()
    try:
        ooo = cl.CommandQueue(ctx, properties=cl.command_queue_properties
                              .OUT_OF_ORDER_EXEC_MODE_ENABLE)
    except cl.Error:
        return
    keys = float_specials(rng, np.uint64, 13 * TILE + 1)
    for _ in range(2):
        check_sort(ooo, sorter, keys, "keys")
    assert ooo not in sorter._pools._states


def test_fused_refuses_a_ring_that_would_wrap(ctx, queue, rng):
    """os_fused reuses no ring slot: a ring smaller than a pass's tiles is refused before
    anything is enqueued, and the planner sizes the ring itself when ring_slots is not given."""
    needs_fused(ctx)
    import pyopencl.array as cl_array
    keys = uniform(rng, np.uint32, 30 * TILE)
    d = cl_array.to_device(queue, keys)
    with pytest.raises(clradix.PolicyError, match="ring_slots x tile"):
        make(ctx, "local", fused_passes=True, ring_slots=24, lookback=8).sort(queue, d)
    assert np.array_equal(d.get(), keys)
    pol = make(ctx, "local", fused_passes=True).plan(ctx.devices[0], np.uint32, 5000 * TILE)
    assert pol.fused_passes and pol.ring_slots >= 5000


# ------------------------------------------------- the ring's hard cases

# wrapping (SMALL_RING), every look-back falling back, a look-back that gives up after one spin,
# and a small ring wrapped ten times
RING_CASES = [dict(SMALL_RING), dict(SMALL_RING, force_fallback=True),
              dict(SMALL_RING, spin_limit=1), dict(ring_slots=12, lookback=4)]


def test_ring_cases(ctx, queue, rng):
    """Every ranking back-end of the device through every ring case, both radix widths that
    change the digit tables' ownership (256 digits over 64 work-items, 16 digits), keys, pairs
    and argsort, descending, small sizes and a bit range: exact and stable."""
    per_pass = dict(fused_passes=False)
    for ranking in backends(ctx):
        for case in RING_CASES:
            sorter = make(ctx, ranking, radix_bits=8, **per_pass, **case)
            check_sort(queue, sorter, float_specials(rng, np.uint64, 40 * TILE + 3), "argsort",
                       descending=True)
        sorter = make(ctx, ranking, radix_bits=4, **per_pass, **RING_CASES[2])
        check_sort(queue, sorter, float_specials(rng, np.float32, 29 * TILE + 7), "pairs")
        sorter = make(ctx, ranking, **per_pass, **SMALL_RING)
        for n in (0, 1, WG + 1, TILE - 1, TILE + 1, 31 * TILE):
            check_sort(queue, sorter, float_specials(rng, np.int16, n), "pairs")
        check_sort(queue, sorter, uniform(rng, np.uint32, 17 * TILE + 2), "keys",
                   begin_bit=3, end_bit=17)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_digits_with_and_without_special_keys(ctx, queue, rng, dtype):
    """Float keys take the cheap digit (order_bits) in every pass when the histogram counted no
    -0.0 and no NaN, else numpy's order key: one special key among many, at either end of the
    array, must switch every tile (every -0.0 equal to +0.0 and every NaN equal, stably)."""
    sorter = make(ctx, "local", **SMALL_RING)
    n = 37 * TILE + 5
    for where in (None, 0, n - 1):
        for special in (-0.0, np.nan):
            keys = finite(rng, dtype, n)
            keys[rng.integers(0, n, 40)] = 0.0   # +0.0 keys for a -0.0 to be equal to
            if where is not None:
                keys[where] = special
                keys[rng.integers(0, n, 3)] = special
            for descending in (False, True):
                check_sort(queue, sorter, keys, "pairs", descending=descending,
                           what=f"{dtype} special {special} at {where}")
