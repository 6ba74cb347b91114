"""Devices lacking a feature: what the kernels need of a device, and clear refusals when it lacks it.

float16/float64 keys are bit patterns: their kernels need neither cl_khr_fp16 nor cl_khr_fp64. A
device with too little local memory, or an EMBEDDED_PROFILE device without 64-bit integers, gets a
PolicyError naming the device and the missing feature before anything is built or enqueued.
"""

import re
from dataclasses import replace

import numpy as np
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.core.device import DeviceProfile
from clradix.core.keys import key_codec
from clradix.drivers.onesweep import Onesweep
from clradix.core.errors import PolicyError
from clradix.policies.sort import RANKINGS, SortPolicy
from clradix.planning.sort_plan import validate
from clradix.core.render import render
from clradix.drivers.reduce_then_scan import ReduceThenScan
from clradix.drivers.single_wg import SingleWorkGroup

from conftest import check_sort, fake_profile
from data import float_specials, uniform
from reference import bits_of

FLOAT_WORDS = re.compile(r"\b(double|half|cl_khr_fp64|cl_khr_fp16|cles_khr_fp64|float)\b")


class _Rendered(Exception):
    def __init__(self, source):
        super().__init__("rendered")
        self.source = source


class _RenderOnly:
    """Stands in for the ProgramCache: renders what an algorithm asks to build, builds nothing."""

    def get(self, template, params, options=()):
        raise _Rendered(render(template, **params))


def _source(cls, policy, dtype, value_t, index_name):
    """The OpenCL source ``cls`` builds for this policy and key (through the algorithm's own
    parameter path)."""
    profile = _profile()
    index_np = np.uint32 if index_name == "uint" else np.uint64
    with pytest.raises(_Rendered) as info:
        cls(_RenderOnly(), None, profile, policy, key_codec(dtype), value_t, index_name, index_np)
    return info.value.source


def _profile(**kw):
    return fake_profile(**dict(dict(name="Feature Test Device", compute_units=8,
                                    local_mem_bytes=64 * 1024), **kw))


def _policies():
    yield ReduceThenScan, SortPolicy("reduce_then_scan", 8, 256, 16)
    yield SingleWorkGroup, SortPolicy("single_wg", 4, 256, 16)
    for ranking in RANKINGS:
        yield Onesweep, SortPolicy("onesweep", 8, 256, 16, ranking=ranking,
                                   sg_size=32 if ranking in ("ptx", "local") else 16)


@pytest.mark.parametrize("dtype", [np.float16, np.float64], ids=["float16", "float64"])
def test_float_keys_need_no_floating_point(dtype):
    """The kernels of float keys carry them as unsigned bits: no double or half type, no fp64 or
    fp16 pragma (a device without cl_khr_fp64 / cl_khr_fp16 sorts them too)."""
    seen = 0
    for cls, policy in _policies():
        for value_t in (None, "uint", "ulong", "uint4"):
            for index_name in ("uint", "ulong"):
                src = _source(cls, policy, dtype, value_t, index_name)
                assert "order_key" in src  # it really is the kernel source
                found = sorted(set(FLOAT_WORDS.findall(src)))
                assert not found, (f"{cls.__name__} {policy.algorithm}/{policy.ranking} "
                                   f"{np.dtype(dtype)} values={value_t} index={index_name}: {found}")
                seen += 1
    assert seen == 6 * 4 * 2


def test_float64_sorts_on_a_device_without_fp64(ctx, queue, rng):
    """A profile without cl_khr_fp64 plans and validates float64 sorts as usual, and they sort
    (on the real device)."""
    dev = ctx.devices[0]
    sorter = clradix.Sorter(ctx)
    prof = DeviceProfile.from_device(dev)
    sorter.planner.profiles.replace(dev, replace(
        prof, extensions=prof.extensions - {"cl_khr_fp64", "cl_khr_fp16"}))
    for n in (1000, 3 * sorter.plan(dev, np.float64, 10 ** 5).tile + 7):
        for dtype in (np.float64, np.float16):
            check_sort(queue, sorter, float_specials(rng, dtype, n))


def _refused(ctx, queue, rng, fake, dtype, n, match):
    """A sort and an argsort with ``fake`` as the device's profile: PolicyError matching every
    pattern of ``match``, and the keys and values unchanged."""
    dev = ctx.devices[0]
    sorter = clradix.Sorter(ctx)
    sorter.planner.profiles.replace(dev, fake)
    keys = uniform(rng, dtype, n)
    vals = np.arange(n, dtype=np.uint32)
    d_keys = cl_array.to_device(queue, keys)
    d_vals = cl_array.to_device(queue, vals)
    queue.finish()
    for call in (lambda: sorter.sort(queue, d_keys, values=d_vals),
                 lambda: sorter.argsort(queue, d_keys)):
        with pytest.raises(PolicyError) as info:
            call()
        for pattern in match:
            assert re.search(pattern, str(info.value)), (pattern, str(info.value))
    queue.finish()
    np.testing.assert_array_equal(bits_of(d_keys.get()), bits_of(keys))
    np.testing.assert_array_equal(d_vals.get(), vals)
    assert not sorter.planner.drivers  # nothing was built
    return str(info.value)


@pytest.mark.parametrize("n", [100, 50_000])
def test_too_little_local_memory_names_device_and_feature(ctx, queue, rng, n):
    # (a GPU's profile: CPUs plan the chunked sort, which needs no local memory)
    fake = replace(DeviceProfile.from_device(ctx.devices[0]), name="Tiny Local Memory Device",
                   local_mem_bytes=512, device_type="gpu")
    msg = _refused(ctx, queue, rng, fake, np.uint32, n,
                   ["Tiny Local Memory Device", "too little local memory", "the device has 512",
                    "CL_DEVICE_LOCAL_MEM_SIZE"])
    assert "build" not in msg.lower()


def _embedded(ctx, **kw):
    prof = DeviceProfile.from_device(ctx.devices[0])
    return replace(prof, name="Embedded Test Device", cl_profile="EMBEDDED_PROFILE",
                   extensions=prof.extensions - {"cles_khr_int64"}, **kw)


@pytest.mark.parametrize("dtype,what", [
    (np.int64, "64-bit keys"), (np.uint64, "64-bit keys"), (np.float64, "64-bit keys"),
    (np.uint32, "64-bit buffer offsets")], ids=["int64", "uint64", "float64", "uint32"])
def test_embedded_profile_without_int64_is_refused(ctx, queue, rng, dtype, what):
    """EMBEDDED_PROFILE devices may lack long/ulong (cles_khr_int64): every clradix kernel takes
    64-bit buffer offsets, so each sort is refused, naming the device and what needs 64 bits."""
    _refused(ctx, queue, rng, _embedded(ctx), dtype, 5000,
             ["Embedded Test Device", "lacks 64-bit integers", "EMBEDDED_PROFILE",
              "cles_khr_int64", re.escape(what)])


def test_int64_profile_rules():
    full = _profile()
    assert full.has_int64
    emb = _profile(cl_profile="EMBEDDED_PROFILE")
    assert not emb.has_int64
    assert replace(emb, extensions=frozenset({"cles_khr_int64"})).has_int64
    pol = SortPolicy("reduce_then_scan", 8, 256, 4)
    validate(pol, full, 8, 8, 8)
    validate(pol, replace(emb, extensions=frozenset({"cles_khr_int64"})), 8, 8, 8)
    with pytest.raises(PolicyError, match="64-bit keys, 64-bit indices, 8-byte values"):
        validate(pol, emb, 8, 8, 8)
    with pytest.raises(PolicyError, match=r"for the 64-bit buffer offsets every kernel takes$"):
        validate(pol, emb, 4, 4, 16)


def test_profile_reads_cl_profile(ctx):
    dev = ctx.devices[0]
    prof = DeviceProfile.from_device(dev)
    assert prof.cl_profile == dev.profile.strip()
    assert prof.cl_profile in ("FULL_PROFILE", "EMBEDDED_PROFILE")
