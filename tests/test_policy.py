"""Planner and policy validation (pure functions of a device profile)."""

from dataclasses import replace

import numpy as np
import pytest

from clradix.device import DeviceProfile
from clradix.keys import key_codec
from clradix.policy import PolicyError, SortPolicy, plan_sort, validate


def profile(**kw):
    base = dict(name="Test GPU", vendor="Vendor", platform="Platform", driver_version="1.0",
                device_type="gpu", compute_units=16, local_mem_bytes=48 * 1024, max_wg_size=1024,
                max_alloc_bytes=2 ** 32, extensions=frozenset())
    base.update(kw)
    return DeviceProfile(**base)


def test_plan_is_deterministic_and_respects_overrides():
    p = profile()
    c = key_codec(np.float32)
    assert plan_sort(p, c, None, 10 ** 6) == plan_sort(p, c, None, 10 ** 6)
    forced = plan_sort(p, c, None, 10 ** 6, radix_bits=4, wg_size=64)
    assert (forced.radix_bits, forced.wg_size) == (4, 64)
    with pytest.raises(TypeError, match="unknown policy override"):
        plan_sort(p, c, None, 10, bogus=1)


def test_plan_shrinks_wg_to_device():
    pol = plan_sort(profile(max_wg_size=96), key_codec(np.uint32), None, 10 ** 6)
    assert pol.wg_size == 64


@pytest.mark.parametrize("device_type", ["gpu", "cpu"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.float64])
def test_default_policies_fit(device_type, dtype):
    p = profile(device_type=device_type)
    c = key_codec(dtype)
    validate(plan_sort(p, c, None, 10 ** 6), p, c.itemsize, 8)


def test_local_memory_error_names_device():
    p = profile(local_mem_bytes=16 * 1024, name="Tiny GPU")
    pol = SortPolicy("reduce_then_scan", 8, 256, 8, 4)
    with pytest.raises(PolicyError, match="too little local memory on Tiny GPU"):
        validate(pol, p, 8, 8)


def test_wg_beyond_device_names_device():
    p = profile(max_wg_size=256, name="Small GPU")
    with pytest.raises(PolicyError, match="maximum work-group size 256 of Small GPU"):
        validate(SortPolicy("reduce_then_scan", 8, 512, 2, 4), p, 4, 4)


def test_planner_picks_per_device():
    nv = profile(vendor="NVIDIA Corporation", platform="NVIDIA CUDA")
    pol = plan_sort(nv, key_codec(np.uint32), None, 2 ** 28)
    assert (pol.algorithm, pol.ranking, pol.sg_size) == ("onesweep", "ptx", 32)
    assert plan_sort(nv, key_codec(np.uint32), None, 2 ** 16).algorithm == "reduce_then_scan"
    assert plan_sort(nv, key_codec(np.uint32), None, 2 ** 11).algorithm == "single_wg"
    other_gpu = plan_sort(profile(), key_codec(np.uint32), None, 2 ** 20)
    assert other_gpu.algorithm == "reduce_then_scan"
    cpu = plan_sort(profile(device_type="cpu", local_mem_bytes=2 ** 20), key_codec(np.uint32),
                    None, 2 ** 20)
    assert cpu.algorithm == "reduce_then_scan"
    intel = profile(device_type="cpu", local_mem_bytes=2 ** 18, extensions=frozenset(
        ["cl_intel_required_subgroup_size", "cl_khr_subgroup_ballot", "cl_intel_subgroups"]))
    pol = plan_sort(intel, key_codec(np.float32), None, 2 ** 20)
    assert (pol.algorithm, pol.ranking, pol.sg_size) == ("onesweep", "intel", 16)
    khr_only = replace(intel, extensions=intel.extensions - {"cl_intel_subgroups"})
    pol = plan_sort(khr_only, key_codec(np.float32), None, 2 ** 20)
    assert (pol.algorithm, pol.ranking, pol.sg_size) == ("onesweep", "khr", 16)


def test_planner_shrinks_tile_to_local_memory():
    nv = profile(vendor="NVIDIA Corporation", platform="NVIDIA CUDA")
    c = key_codec(np.uint64)
    pol = plan_sort(nv, c, 16, 2 ** 28)
    assert pol.local_bytes(8, 4, 16) <= nv.local_mem_bytes
    validate(pol, nv, 8, 4, 16)
    assert pol.items_per_thread < plan_sort(nv, key_codec(np.uint32), None, 2 ** 28).items_per_thread


def test_onesweep_validation_names_the_problem():
    p = profile()
    with pytest.raises(PolicyError, match="not available on Test GPU"):
        validate(SortPolicy("onesweep", 8, 256, 4, ranking="ptx"), p, 4, 4)
    with pytest.raises(PolicyError, match="ring_slots=16 must be at least lookback"):
        validate(SortPolicy("onesweep", 8, 256, 4, ring_slots=16, lookback=16), p, 4, 4)
    with pytest.raises(PolicyError, match="sg_size=48"):
        validate(SortPolicy("onesweep", 8, 256, 4, sg_size=48), p, 4, 4)
