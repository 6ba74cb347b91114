"""Autotuning: the disk cache (tuning), the planner's use of it, and the autotune harness (autotune)."""

import json
from dataclasses import asdict, replace

import numpy as np
import pyopencl as cl
import pytest

import clradix
from clradix import autotune
from clradix.policies import tuning
from clradix.core.device import DeviceProfile
from clradix.core.keys import key_codec
from clradix.policies.sort import SortPolicy
from clradix.planning.sort_plan import plan_sort
from clradix.core.render import KernelBuildError

from conftest import check_sort, on_pocl
from data import float_specials


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CLRADIX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CLRADIX_NO_TUNING", raising=False)
    return tmp_path / "tuning.json"


def test_saved_winners_drive_the_planner(ctx, cache):
    dev = ctx.devices[0]
    prof = DeviceProfile.from_device(dev)
    tuned = SortPolicy("reduce_then_scan", 4, 64, 8)
    tuning.save(prof, {("float32", 20): tuned})
    assert tuning.tuned_table(prof) == {("float32", 20): tuned}
    sorter = clradix.Sorter(ctx)
    assert sorter.plan(dev, np.float32, 3 << 19) == tuned     # nearest size class
    assert sorter.plan(dev, np.uint32, 3 << 19) != tuned      # other dtypes keep the default
    assert clradix.Sorter(ctx, radix_bits=8).plan(dev, np.float32, 1 << 20).radix_bits == 8


def test_every_key_dtype_is_saved_and_read_back(ctx, cache):
    """autotune takes every key dtype (bool too): the cache reads each one's winners back, and
    the planner uses them for those keys."""
    import warnings
    dev = ctx.devices[0]
    prof = DeviceProfile.from_device(dev)
    tuned = SortPolicy("reduce_then_scan", 4, 64, 8)
    winners = {(name, 12): tuned for name in clradix.core.keys.KEY_DTYPE_NAMES}
    tuning.save(prof, winners)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tuning.tuned_table(prof) == winners
    assert clradix.Sorter(ctx).plan(dev, np.bool_, 1 << 12) == tuned


def test_disabled_by_environment(ctx, cache, monkeypatch):
    prof = DeviceProfile.from_device(ctx.devices[0])
    tuning.save(prof, {("uint32", 20): SortPolicy("reduce_then_scan", 2, 64, 4)})
    monkeypatch.setenv("CLRADIX_NO_TUNING", "1")
    assert tuning.tuned_table(prof) == {}


@pytest.mark.parametrize("content,why", [
    ("{ not json", "ignoring the tuning cache"),
    (json.dumps({"format": 99}), "unknown format"),
    (json.dumps({"format": 1, "clradix": "0.0.0-old", "devices": {}}), "written by clradix"),
])
def test_corrupt_or_stale_cache_is_ignored_with_a_warning(ctx, queue, cache, content, why, rng):
    cache.write_text(content)
    prof = DeviceProfile.from_device(ctx.devices[0])
    with pytest.warns(RuntimeWarning, match=why):
        assert tuning.tuned_table(prof) == {}
    with pytest.warns(RuntimeWarning):
        check_sort(queue, clradix.Sorter(ctx), float_specials(rng, np.float32, 5000))
    tuning.save(prof, {("uint32", 12): SortPolicy("reduce_then_scan", 8, 64, 4)})  # repaired
    assert tuning.tuned_table(prof)


# An entry as caches written before the policies were split per algorithm hold it: every field
# of every algorithm, the debugging switches among them.
FLAT_ENTRY = {"algorithm": "reduce_then_scan", "radix_bits": 4, "wg_size": 64,
              "items_per_thread": 8, "blocks_per_cu": 4, "ranking": "local", "sg_size": 32,
              "ring_slots": 1024, "lookback": 256, "spin_limit": 4096, "max_registers": 0,
              "force_fallback": False, "fused_scan": False, "fused_passes": False,
              "bucket_keys": 0}


def test_entries_hold_the_algorithms_knobs_and_flat_entries_still_read(ctx, cache):
    """An entry holds its algorithm and that algorithm's knobs, no debugging switch; an entry
    of the flat form (every field) reads as the same policy; one with a debugging switch on, or
    a knob its algorithm does not take set, is skipped with a warning naming it."""
    prof = DeviceProfile.from_device(ctx.devices[0])
    tuned = SortPolicy("reduce_then_scan", 4, 64, 8)
    tuning.save(prof, {("uint32", 12): tuned})
    data = json.loads(cache.read_text())
    assert data["devices"][prof.identity]["uint32:12"] == {
        "algorithm": "reduce_then_scan", "radix_bits": 4, "wg_size": 64, "items_per_thread": 8,
        "blocks_per_cu": 4, "max_registers": 0}
    entries = data["devices"][prof.identity]
    entries["uint32:14"] = FLAT_ENTRY
    entries["uint32:16"] = dict(FLAT_ENTRY, fused_scan=True)
    entries["uint32:18"] = dict(FLAT_ENTRY, ring_slots=64)
    cache.write_text(json.dumps(data))
    with pytest.warns(RuntimeWarning) as record:
        table = tuning.tuned_table(prof)
    assert table == {("uint32", 12): tuned, ("uint32", 14): tuned}
    text = "\n".join(str(w.message) for w in record)
    assert "uint32:16" in text and "fused_scan=True is a debugging switch" in text
    assert "uint32:18" in text and "ring_slots is a onesweep option" in text


def test_bad_entry_is_skipped(ctx, cache):
    prof = DeviceProfile.from_device(ctx.devices[0])
    tuning.save(prof, {("uint32", 12): SortPolicy("reduce_then_scan", 8, 64, 4)})
    data = json.loads(cache.read_text())
    data["devices"][prof.identity]["uint32:14"] = {"no_such_field": 1}
    cache.write_text(json.dumps(data))
    with pytest.warns(RuntimeWarning, match="uint32:14"):
        assert list(tuning.tuned_table(prof)) == [("uint32", 12)]


def test_autotune_small_run_saves_a_correct_winner(ctx, cache, monkeypatch):
    """The first two candidates (and the planner's default): test_every_candidate_policy_sorts
    builds every one, and each is a kernel build that costs seconds on a CPU device."""
    real = autotune.candidates
    monkeypatch.setattr(autotune, "candidates", lambda *args: real(*args)[:2])
    dev = ctx.devices[0]
    winners, rows = autotune.autotune(dev, ["uint32"], [11], repeat=1, log=lambda *a: None,
                                      seconds=0)
    assert len(rows) >= 2
    assert ("uint32", 11) in winners and rows
    prof = DeviceProfile.from_device(dev)
    tuning.save(prof, winners)
    assert clradix.Sorter(ctx).plan(dev, np.uint32, 1 << 11) == winners[("uint32", 11)]


def test_every_candidate_policy_sorts(ctx, queue, rng):
    """Every policy the planner or the autotuner can choose on this device sorts exactly. On
    PoCL, where each GPU-shaped candidate is a program that takes seconds to compile, one
    candidate per algorithm and digit width of those (the others differ in work-group size and
    items per work-item, which the sort tests vary) and every CPU one; CI runs this file on
    Intel's CPU runtime too, every candidate."""
    prof = DeviceProfile.from_device(ctx.devices[0])
    keys = float_specials(rng, np.float32, 3001)
    seen, shapes = 0, set()
    for pol in autotune.candidates(prof, np.float32, 3001):
        shape = (pol.algorithm, pol.radix_bits)
        if on_pocl(ctx) and pol.algorithm != "chunks" and shape in shapes:
            continue
        shapes.add(shape)
        check_sort(queue, clradix.Sorter(ctx, **pol.fields()), keys, "pairs", what=str(pol))
        seen += 1
    assert seen >= 10


def test_paired_timing_cancels_the_machine_speed():
    """Candidates are ranked by their time over the default's just before, so a machine that
    slows down 3x for a while (as shared machines do) does not reorder them."""
    cost = {"default": 10.0, "fast": 8.0, "slow": 12.0}
    calls = []

    def run_once(name):
        calls.append(name)
        slow_spell = (len(calls) - 1) // 2 % 5 in (1, 2)  # changes between pairs, not inside
        return cost[name] * (3.0 if slow_spell else 1.0)

    timed = [(n, n) for n in ("slow", "default", "fast")]
    got = {pol: (ms, ratio) for pol, ms, ratio in autotune._time_paired(timed, 1, run_once, 7)}
    assert got["default"][1] == 1.0
    assert got["fast"][1] == pytest.approx(0.8) and got["slow"][1] == pytest.approx(1.2)
    ref_ms = got["default"][0]
    assert ref_ms in (10.0, 30.0)
    assert got["fast"][0] == pytest.approx(0.8 * ref_ms)
    assert calls.count("fast") == calls.count("slow") == 7 and calls.count("default") == 14


_GOOD = dict(algorithm="reduce_then_scan", radix_bits=8, wg_size=64, items_per_thread=4)


def _entries(prof, **entries):
    return {"format": 1, "clradix": clradix.__version__, "devices": {prof.identity: entries}}


BAD_CACHES = {
    # shapes
    "devices list": (lambda prof: {"format": 1, "clradix": clradix.__version__, "devices": []},
                     r"\"devices\" is a list, expected an object"),
    "device entry list": (lambda prof: {"format": 1, "clradix": clradix.__version__,
                                        "devices": {prof.identity: []}},
                          r"ignoring the tuning entries of .*: expected an object, got list"),
    "policy not an object": (lambda prof: _entries(prof, **{"uint32:10": 5}),
                             r"'uint32:10'.*expected an object of policy fields, got int"),
    "key without size": (lambda prof: _entries(prof, **{"uint32": _GOOD}),
                         r"'uint32'.*expected a key \"dtype:log2n\""),
    "key of a short dtype name": (lambda prof: _entries(prof, **{"u32:10": _GOOD}),
                                  r"'u32:10'.*expected a key \"dtype:log2n\""),
    # types
    "wg_size str": (lambda prof: _entries(prof, **{"uint32:10": dict(_GOOD, wg_size="256")}),
                    r"'uint32:10'.*wg_size='256' \(str\): wg_size takes an integer"),
    "wg_size float": (lambda prof: _entries(prof, **{"uint32:10": dict(_GOOD, wg_size=256.0)}),
                      r"'uint32:10'.*wg_size=256.0 \(float\)"),
    "wg_size bool": (lambda prof: _entries(prof, **{"uint32:10": dict(_GOOD, wg_size=True)}),
                     r"'uint32:10'.*wg_size=True \(bool\)"),
    "items_per_thread float": (
        lambda prof: _entries(prof, **{"uint32:10": dict(_GOOD, items_per_thread=16.0)}),
        r"'uint32:10'.*items_per_thread=16.0 \(float\)"),
    "lookback str": (lambda prof: _entries(prof, **{"uint32:10": dict(
        _GOOD, algorithm="onesweep", ranking="local", lookback="x")}),
        r"'uint32:10'.*lookback='x' \(str\)"),
    "algorithm unknown": (lambda prof: _entries(prof, **{"uint32:10": dict(
        _GOOD, algorithm="bitonic")}), r"'uint32:10'.*algorithm='bitonic' \(str\)"),
    "field missing": (lambda prof: _entries(prof, **{"uint32:10": dict(algorithm="onesweep")}),
                      r"'uint32:10'.*missing policy field\(s\): radix_bits, wg_size"),
    # well typed, out of range: skipped when planned (validate)
    "radix_bits 3": (lambda prof: _entries(prof, **{"uint32:10": dict(_GOOD, radix_bits=3)}),
                     r"ignoring the tuned policy uint32:10 .*radix_bits=3 is not supported"),
    "spin_limit -1": (lambda prof: _entries(prof, **{"uint32:10": dict(
        _GOOD, algorithm="onesweep", ranking="local", spin_limit=-1)}),
        r"ignoring the tuned policy uint32:10 .*spin_limit=-1"),
    "onesweep tile 65536": (lambda prof: _entries(prof, **{"uint32:10": dict(
        _GOOD, algorithm="onesweep", ranking="local", wg_size=256, items_per_thread=256)}),
        r"ignoring the tuned policy uint32:10 "),
}


@pytest.mark.parametrize("kind", list(BAD_CACHES))
def test_bad_entries_are_ignored_with_a_warning(ctx, queue, cache, kind, rng):
    """A cache of the right format but bad entries: each is left out with a RuntimeWarning naming
    it and why, and sorts use the built-in policy."""
    dev = ctx.devices[0]
    prof = DeviceProfile.from_device(dev)
    content, why = BAD_CACHES[kind]
    cache.write_text(json.dumps(content(prof)))
    keys = rng.integers(0, 2 ** 32, 1000, dtype=np.uint32)
    with pytest.warns(RuntimeWarning, match=why):
        sorter = clradix.Sorter(ctx)
        check_sort(queue, sorter, keys)
        pol = sorter.plan(dev, np.uint32, keys.size)
    assert pol == plan_sort(prof, key_codec(np.uint32), None, keys.size)


def test_save_repairs_a_broken_device_entry(ctx, cache):
    """save replaces this device's broken entry and keeps the other devices'."""
    prof = DeviceProfile.from_device(ctx.devices[0])
    cache.write_text(json.dumps({"format": 1, "clradix": clradix.__version__,
                                 "devices": {prof.identity: [], "other | device | 1": {}}}))
    tuned = SortPolicy("reduce_then_scan", 4, 64, 8)
    with pytest.warns(RuntimeWarning, match="expected an object, got list"):
        assert tuning.tuned_table(prof) == {}
    tuning.save(prof, {("uint32", 12): tuned})
    assert tuning.tuned_table(prof) == {("uint32", 12): tuned}
    assert "other | device | 1" in json.loads(cache.read_text())["devices"]


@pytest.mark.parametrize("error", [
    KernelBuildError("building reduce_then_scan.cl.mako failed: error: too many registers"),
    cl.LogicError("clEnqueueNDRangeKernel failed: INVALID_WORK_GROUP_SIZE"),
    MemoryError("allocating 4096 bytes of temporary memory failed"),
])
def test_autotune_skips_a_candidate_the_device_cannot_run(ctx, cache, monkeypatch, error):
    """Each skipped candidate is logged with the reason; the others are timed."""
    refused = SortPolicy("reduce_then_scan", 3, 64, 4)   # radix_bits=3: a PolicyError
    failing = SortPolicy("reduce_then_scan", 4, 64, 4)
    log = _autotune_with(ctx, monkeypatch, [refused, failing], failing, error)
    skipped = [line for line in log if "skipped" in line]
    assert len(skipped) == 2, log
    assert str(refused) in skipped[0] and "PolicyError: radix_bits=3 is not supported" in skipped[0]
    assert str(failing) in skipped[1] and f"{type(error).__name__}: {error}" in skipped[1]


def test_autotune_stops_on_an_error_that_is_a_bug(ctx, cache, monkeypatch):
    """An error no device explains (a bug of clradix) is not taken for a slow candidate."""
    failing = SortPolicy("reduce_then_scan", 4, 64, 4)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        _autotune_with(ctx, monkeypatch, [failing], failing, ZeroDivisionError("a bug"))


def _autotune_with(ctx, monkeypatch, candidates, failing, error):
    """The log of autotune at 2^8 uint32 keys over ``candidates`` (and the planner's default),
    where sorting with ``failing`` raises ``error``."""
    monkeypatch.setattr(autotune, "candidates", lambda *args: list(candidates))
    real_sort = clradix.Sorter.sort

    def sort(self, queue, buf, **kwargs):
        if all(self.overrides.get(k) == v for k, v in asdict(failing).items()):
            raise error
        return real_sort(self, queue, buf, **kwargs)
    monkeypatch.setattr(clradix.Sorter, "sort", sort)
    log = []
    winners, rows = autotune.autotune(ctx.devices[0], ["uint32"], [8], repeat=1, log=log.append,
                                      seconds=0)
    assert list(winners) == [("uint32", 8)] and len(rows) == 1
    return log


def test_concurrent_saves_keep_every_entry(cache):
    """Autotune runs saving at once (threads here; processes take the same lock) each keep their
    entries: the read, merge and write happen under one lock, each through its own temporary
    file; no temporary file is left."""
    import concurrent.futures
    import glob
    prof = DeviceProfile(name="Probe GPU", vendor="v", platform="p", driver_version="1",
                         device_type="gpu", compute_units=4, local_mem_bytes=65536,
                         max_wg_size=256, max_alloc_bytes=1 << 30, extensions=frozenset())
    pol = SortPolicy("reduce_then_scan", 8, 128, 4, 4)

    def save(lg):
        tuning.save(prof, {("uint32", lg): replace(pol, items_per_thread=1 + lg % 8)})
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(save, range(10, 26)))
    table = tuning.tuned_table(prof)
    assert sorted(table) == [("uint32", lg) for lg in range(10, 26)]
    assert all(table["uint32", lg].items_per_thread == 1 + lg % 8 for lg in range(10, 26))
    assert glob.glob(str(cache.parent / "*.tmp")) == []
