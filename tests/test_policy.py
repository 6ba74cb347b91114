"""Planner and policy validation (pure functions of a device profile)."""

from dataclasses import replace

import numpy as np
import pytest

import clradix
from clradix.core.keys import key_codec
from clradix.core.errors import PolicyError
from clradix.policies.overrides import check_overrides
from clradix.policies.sort import DEBUG_FIELDS, POLICY_FIELDS, SortPolicy
from clradix.policies.sort_defaults import NVIDIA_FUSED_MAX
from clradix.planning.sort_plan import local_bytes, plan_sort, validate
from conftest import fake_profile


profile = fake_profile


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
    assert not pol.fused_passes
    # up to NVIDIA_FUSED_MAX (2^21) keys on NVIDIA: onesweep in one launch, its rings holding
    # every tile; above it, seven launches
    for lg in (14, 16, 20, 21):
        pol = plan_sort(nv, key_codec(np.uint32), None, 2 ** lg)
        assert (pol.algorithm, pol.fused_passes) == ("onesweep", True), lg
        assert pol.ring_slots * pol.tile >= 2 ** lg
    for n in (NVIDIA_FUSED_MAX + 1, 2 ** 22):
        assert not plan_sort(nv, key_codec(np.uint32), None, n).fused_passes
    # one tile: one work-group, its tile no larger than the keys need (from 256 x 4 up)
    small = plan_sort(nv, key_codec(np.uint32), None, 2 ** 10)
    assert (small.algorithm, small.tile) == ("single_wg", 1024)
    assert plan_sort(nv, key_codec(np.uint32), None, 2 ** 11).algorithm == "single_wg"
    assert plan_sort(nv, key_codec(np.uint32), None, 3000).tile == 4096
    assert plan_sort(nv, key_codec(np.uint32), None, 10).tile == 1024
    other_gpu = plan_sort(profile(), key_codec(np.uint32), None, 2 ** 20)
    assert other_gpu.algorithm == "reduce_then_scan"
    cpu_profile = profile(device_type="cpu", local_mem_bytes=2 ** 20)
    # CPUs: the chunked sort at every size (a work-item per chunk, no barriers)
    for n in (10, 4096, 2 ** 14, 2 ** 20, 2 ** 24):
        pol = plan_sort(cpu_profile, key_codec(np.uint32), None, n)
        assert (pol.algorithm, pol.wg_size) == ("chunks", 1), n
    assert plan_sort(cpu_profile, key_codec(np.uint32), None, 2 ** 21,
                     radix_bits=11).radix_bits == 11
    # the LSD passes' digit width by size: 11 bits where the keys fit the caches easily or not
    # at all (the buckets' top digit: test_chunk_buckets_policy)
    for n, bits in ((10, 11), (2 ** 20, 11), (2 ** 20 + 1, 8), (2 ** 22, 8), (2 ** 23, 11)):
        assert plan_sort(cpu_profile, key_codec(np.float32), None, n,
                         bucket_keys=0).radix_bits == bits, n
    assert plan_sort(cpu_profile, key_codec(np.uint64), None, 2 ** 24,
                     bucket_keys=0).radix_bits == 8
    # a work-group field or algorithm: the CPU's work-group policies
    pol = plan_sort(cpu_profile, key_codec(np.uint32), None, 2 ** 20, wg_size=64)
    assert (pol.algorithm, pol.wg_size) == ("reduce_then_scan", 64)
    for n in (10, 2 ** 14):
        pol = plan_sort(cpu_profile, key_codec(np.uint32), None, n, algorithm="single_wg")
        assert (pol.algorithm, pol.radix_bits) == ("single_wg", 4), n
    assert plan_sort(cpu_profile, key_codec(np.uint32), None, 2 ** 20,
                     algorithm="reduce_then_scan").wg_size == 256
    intel = profile(device_type="cpu", local_mem_bytes=2 ** 18, extensions=frozenset(
        ["cl_intel_required_subgroup_size", "cl_khr_subgroup_ballot", "cl_intel_subgroups"]))
    assert plan_sort(intel, key_codec(np.float32), None, 2 ** 20).algorithm == "chunks"
    pol = plan_sort(intel, key_codec(np.float32), None, 2 ** 20, algorithm="onesweep")
    assert (pol.algorithm, pol.ranking, pol.sg_size) == ("onesweep", "intel", 16)
    khr_only = replace(intel, extensions=intel.extensions - {"cl_intel_subgroups"})
    pol = plan_sort(khr_only, key_codec(np.float32), None, 2 ** 20, algorithm="onesweep")
    assert (pol.algorithm, pol.ranking, pol.sg_size) == ("onesweep", "khr", 16)
    # the chunked sort asked for on a GPU
    pol = plan_sort(nv, key_codec(np.uint32), None, 2 ** 20, algorithm="chunks")
    assert (pol.algorithm, pol.wg_size) == ("chunks", 1)


def test_planner_shrinks_tile_to_local_memory():
    nv = profile(vendor="NVIDIA Corporation", platform="NVIDIA CUDA")
    c = key_codec(np.uint64)
    pol = plan_sort(nv, c, 16, 2 ** 28)
    assert local_bytes(pol, 8, 4, 16) <= nv.local_mem_bytes
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


BAD_OVERRIDES = [
    (dict(wg_size=256.0), TypeError, "wg_size=256.0 (float): wg_size takes an integer"),
    (dict(wg_size="256"), TypeError, "wg_size='256' (str): wg_size takes an integer"),
    (dict(items_per_thread=True), TypeError, "items_per_thread=True (bool): items_per_thread "
                                             "takes an integer"),
    (dict(radix_bits=np.float32(8)), TypeError, "(float32): radix_bits takes an integer"),
    (dict(lookback="x"), TypeError, "lookback='x' (str): lookback takes an integer"),
    (dict(algorithm="fast"), ValueError, "algorithm='fast' (str): algorithm takes one of "
                                         "'reduce_then_scan', 'onesweep', 'single_wg'"),
    (dict(algorithm=1), TypeError, "algorithm=1 (int): algorithm takes one of"),
    (dict(ranking="cuda"), ValueError, "ranking='cuda' (str): ranking takes one of 'local', "
                                       "'ptx', 'khr', 'intel'"),
    (dict(force_fallback=1), TypeError, "force_fallback=1 (int): force_fallback takes True or "
                                        "False"),
]


@pytest.mark.parametrize("override,exc,msg", BAD_OVERRIDES,
                         ids=[f"{k}={v!r}" for o, _, _ in BAD_OVERRIDES for k, v in o.items()])
def test_override_of_the_wrong_type_or_value_is_refused(override, exc, msg):
    """The error names the field, the value and what the field takes (None: the planner's); the
    planner takes the policy fields (the debugging switches are the Sorter's, SortDebug)."""
    calls = [lambda: check_overrides(dict(override, blocks_per_cu=None))]
    if not set(override) & set(DEBUG_FIELDS):
        calls.append(lambda: plan_sort(profile(), key_codec(np.uint32), None, 10 ** 6,
                                       **override))
    for call in calls:
        with pytest.raises(exc) as info:
            call()
        assert info.type is exc and msg in str(info.value), str(info.value)
        assert "or None (the planner chooses)" in str(info.value)


def test_overrides_of_the_right_type_pass():
    check_overrides(dict(wg_size=np.int64(128), items_per_thread=8, algorithm="onesweep",
                         ranking="local", force_fallback=True))
    check_overrides({name: None for name in POLICY_FIELDS + DEBUG_FIELDS})
    with pytest.raises(TypeError, match="unknown policy override.*: bogus"):
        check_overrides(dict(bogus=None))


def test_sorter_refuses_an_override_of_the_wrong_type(ctx):
    """Sorter(wg_size=256.0) refuses with the field named, not with a raw error of a later step."""
    with pytest.raises(TypeError, match=r"wg_size=256.0 \(float\): wg_size takes an integer"):
        sorter = clradix.Sorter(ctx, wg_size=256.0)
        sorter.plan(ctx.devices[0], np.uint32, 10 ** 5)


@pytest.mark.parametrize("override,msg", [
    (dict(radix_bits=-1), "radix_bits=-1 is not supported: expected 2, 4 or 8"),
    (dict(algorithm="onesweep", sg_size=0), "sg_size=0 must be at least 1"),
], ids=["radix_bits=-1", "sg_size=0"])
def test_out_of_range_override_is_a_policy_error(override, msg):
    """Not a raw ValueError or ZeroDivisionError of the planner's sizing arithmetic."""
    with pytest.raises(PolicyError) as info:
        plan_sort(profile(), key_codec(np.uint32), None, 10 ** 6, **override)
    assert msg in str(info.value)


@pytest.mark.parametrize("pol,msg", [
    (SortPolicy("onesweep", 8, 256, 4, spin_limit=-1), "spin_limit=-1 must be at least 0"),
    (SortPolicy("onesweep", 4, 256, 256, sg_size=32),
     "onesweep's tile of 65536 keys (wg_size x items_per_thread) must be below 65536"),
    (SortPolicy("reduce_then_scan", 8, 256, 4, max_registers=-1), "max_registers=-1 must be 0"),
], ids=["spin_limit=-1", "onesweep tile 65536", "max_registers=-1"])
def test_validation_names_every_out_of_range_field(pol, msg):
    """validate refuses these with a PolicyError (before: a raw error, or a kernel that fails to
    render or run)."""
    p = profile(local_mem_bytes=1 << 20)
    with pytest.raises(PolicyError) as info:
        validate(pol, p, 4, 4)
    assert msg in str(info.value)


def test_tuned_policy_that_cannot_run_warns_and_the_default_is_used():
    """A tuned entry the device cannot run is skipped with a RuntimeWarning naming it and why."""
    p = profile()
    c = key_codec(np.uint32)
    tuned = {("uint32", 20): SortPolicy("onesweep", 8, 256, 16, ranking="ptx")}
    with pytest.warns(RuntimeWarning, match=r"ignoring the tuned policy uint32:20 of Test GPU .*: "
                                            r"ranking back-end 'ptx' is not available"):
        pol = plan_sort(p, c, None, 1 << 20, tuned)
    assert pol == plan_sort(p, c, None, 1 << 20)


def test_repeated_calls_plan_once_until_the_profile_changes(ctx, queue, rng, monkeypatch):
    """A repeated sort or top-k of one configuration reuses its plan and driver (no planning on
    the host); a replaced device profile makes the next call plan again."""
    import clradix.planning.planner as planner_mod
    from conftest import check_sort, check_topk
    from data import uniform
    calls = {"sort": 0, "topk": 0}

    def counting(name, real):
        def plan(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return plan
    monkeypatch.setattr(planner_mod, "plan_sort", counting("sort", planner_mod.plan_sort))
    monkeypatch.setattr(planner_mod, "plan_topk", counting("topk", planner_mod.plan_topk))
    dev = ctx.devices[0]
    sorter, selector = clradix.Sorter(ctx), clradix.Selector(ctx)
    keys = uniform(rng, np.float32, 20_000)
    for descending in (False, True, False):
        check_sort(queue, sorter, keys, "pairs", descending=descending)
    x = uniform(rng, np.float32, 3000)
    for _ in range(3):
        check_topk(queue, x, 10, selector=selector)
    assert calls == {"sort": 1, "topk": 1}
    sorter.planner.profiles.replace(dev, sorter.planner.profiles.get(dev))
    check_sort(queue, sorter, keys, "pairs")
    check_sort(queue, sorter, uniform(rng, np.float32, 20_001), "pairs")   # another n
    assert calls["sort"] == 3


def test_nvidia_register_cap():
    """NVIDIA: the separate onesweep passes are built under a register cap (56 at 384 x 24 for
    integer keys of up to 4 bytes, 56 at 384 x 20 for float keys, 64 at 512 x 15 with values, 64
    at 256 x 16 for 64-bit keys: NVIDIA_PASS_TILES), rendered without reqd_work_group_size
    (which makes NVIDIA's compiler ignore the cap); the one-launch sorts, other vendors and a
    chosen max_registers are left alone."""
    from clradix.drivers.onesweep import capped_registers
    from clradix.core.render import render
    nv = profile(vendor="NVIDIA Corporation", platform="NVIDIA CUDA")
    for dtype in (np.uint32, np.float32, np.int16, np.uint8):
        for values in (None, 4, 8):
            pol = plan_sort(nv, key_codec(dtype), values, 2 ** 28)
            floats = np.dtype(dtype).kind == "f"
            want = ((512, 15 if values == 4 else 8, 64) if values
                    else (384, 20, 56) if floats else (384, 24, 56))
            assert (pol.wg_size, pol.items_per_thread, pol.max_registers) == want, (dtype, values,
                                                                                   pol)
            assert capped_registers(pol, nv), (dtype, values)
    assert plan_sort(nv, key_codec(np.uint64), None, 2 ** 28).max_registers == 64
    assert plan_sort(nv, key_codec(np.uint32), None, 2 ** 20).max_registers == 0   # os_fused
    assert plan_sort(nv, key_codec(np.uint32), None, 2 ** 28, max_registers=80).max_registers == 80
    other = plan_sort(profile(), key_codec(np.uint32), None, 2 ** 28, algorithm="onesweep")
    assert other.max_registers == 0 and not capped_registers(other, profile())
    # the attribute goes exactly where the cap applies
    from clradix.drivers.onesweep import onesweep_params
    codec = key_codec(np.uint32)
    for pol, stated in ((plan_sort(nv, codec, None, 2 ** 28), False),
                        (replace(plan_sort(nv, codec, None, 2 ** 28), max_registers=0), True)):
        params = dict(codec.template_args(), radix_bits=8, wg=pol.wg_size,
                      ipt=pol.items_per_thread, value_t=None, index_t="uint")
        params.update(onesweep_params(pol, nv, None, codec, None, 4))
        source = render("onesweep.cl.mako", **params)
        assert ("reqd_work_group_size" in source) == stated


def test_chunk_buckets_policy():
    """The chunked sort's buckets: on by default for keys of 2 bytes or more, the top digit 8
    bits (11 beyond WIDE_TOP_BYTES of keys and values), bucket_keys from BUCKET_BYTES; a caller's
    radix_bits or bucket_keys=0 the LSD passes; bucket_keys only with the chunks algorithm."""
    from clradix.policies.sort_defaults import BUCKET_BYTES
    cpu = profile(device_type="cpu", local_mem_bytes=2 ** 20)
    u32, u8 = key_codec(np.uint32), key_codec(np.uint8)
    pol = plan_sort(cpu, u32, None, 2 ** 22)
    assert (pol.algorithm, pol.radix_bits, pol.bucket_keys) == ("chunks", 8, BUCKET_BYTES // 4)
    assert plan_sort(cpu, u32, 4, 2 ** 24).radix_bits == 11
    assert plan_sort(cpu, u32, 4, 2 ** 24).bucket_keys == BUCKET_BYTES // 8
    assert plan_sort(cpu, u8, None, 2 ** 22).bucket_keys == 0
    assert plan_sort(cpu, u32, None, 2 ** 22, radix_bits=11).bucket_keys == 0
    assert plan_sort(cpu, u32, None, 2 ** 22, bucket_keys=0).bucket_keys == 0
    pol = plan_sort(cpu, u32, None, 2 ** 22, bucket_keys=100)
    assert (pol.bucket_keys, pol.radix_bits) == (100, 8)
    with pytest.raises(PolicyError, match="bucket_keys is a chunks option"):
        validate(SortPolicy("onesweep", 8, 256, 16, bucket_keys=5), profile(), 4, 4)
    with pytest.raises(PolicyError, match="bucket_keys=-1"):
        validate(replace(pol, bucket_keys=-1), cpu, 4, 4)


def test_each_algorithm_has_its_own_knobs_and_checks():
    """A policy per algorithm: each holds its algorithm's knobs only, SortPolicy(...) builds the
    algorithm's class from the flat form (a foreign knob left at its default), and a Sorter's
    debugging switches are not knobs (SortDebug)."""
    from clradix.policies.sort import (ChunksPolicy, OnesweepPolicy, ReduceThenScanPolicy,
                                       SingleGroupPolicy, SortDebug, policy_of)
    rts = SortPolicy("reduce_then_scan", 8, 256, 4, 8, ranking="local", fused_passes=False)
    assert type(rts) is ReduceThenScanPolicy and isinstance(rts, SortPolicy)
    assert rts == ReduceThenScanPolicy(8, 256, 4, blocks_per_cu=8) == policy_of(**rts.fields())
    assert rts.fields() == dict(algorithm="reduce_then_scan", radix_bits=8, wg_size=256,
                                items_per_thread=4, blocks_per_cu=8, max_registers=0)
    assert not hasattr(rts, "ranking") and not hasattr(OnesweepPolicy(8, 256, 4), "blocks_per_cu")
    assert "bucket_keys" in ChunksPolicy.knobs() and "ring_slots" in OnesweepPolicy.knobs()
    assert set(SingleGroupPolicy.knobs()) & set(SortDebug.__dataclass_fields__) == set()
    with pytest.raises(PolicyError, match="ring_slots is a onesweep option, not one of "
                                          "reduce_then_scan"):
        SortPolicy("reduce_then_scan", 8, 256, 4, ring_slots=64)
    with pytest.raises(TypeError, match="force_fallback is a debugging switch"):
        SortPolicy("onesweep", 8, 256, 4, force_fallback=True)
    # a knob the caller's algorithm does not take is refused; without an algorithm it applies
    # where the planned one takes it
    with pytest.raises(PolicyError, match="ring_slots: not a knob of the reduce_then_scan"):
        plan_sort(profile(), key_codec(np.uint32), None, 1 << 20, algorithm="reduce_then_scan",
                  ring_slots=64)
    gpu = plan_sort(profile(), key_codec(np.uint32), None, 1 << 20, ring_slots=64)
    assert gpu.algorithm == "reduce_then_scan"


def test_sort_plan_derives_the_driver_and_local_memory():
    """sort_plan: the driver of the policy, the index type and the driver's local memory, with
    the debugging switches (fused_scan takes more local memory) beside the policy."""
    from clradix.drivers.reduce_then_scan import ReduceThenScan
    from clradix.planning.sort_plan import sort_plan
    from clradix.policies.sort import SortDebug
    p, c = profile(), key_codec(np.uint32)
    pol = plan_sort(p, c, None, 1 << 20, algorithm="reduce_then_scan")
    plan = sort_plan(pol, p, c, 0, 1 << 20)
    assert (plan.policy, plan.driver, plan.index_name) == (pol, ReduceThenScan, "uint")
    assert plan.local_bytes == ReduceThenScan.local_bytes(pol, 4, 4) == local_bytes(pol, 4, 4)
    fused = sort_plan(pol, p, c, 0, 1 << 20, SortDebug(fused_scan=True))
    assert fused.local_bytes > plan.local_bytes and fused.policy == pol
