"""Autotuning: the disk cache, the planner's use of it, and every candidate policy sorting."""

import json

import numpy as np
import pyopencl.array as cl_array
import pytest

import clradix
from clradix import tuning
from clradix.device import DeviceProfile
from clradix.policy import SortPolicy

from data import float_specials
from reference import bits_of


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
        sorter = clradix.Sorter(ctx)
        keys = float_specials(rng, np.float32, 5000)
        d = cl_array.to_device(queue, keys)
        sorter.sort(queue, d).wait()
    np.testing.assert_array_equal(bits_of(d.get()), bits_of(np.sort(keys, kind="stable")))
    tuning.save(prof, {("uint32", 12): SortPolicy("reduce_then_scan", 8, 64, 4)})  # repaired
    assert tuning.tuned_table(prof)


def test_bad_entry_is_skipped(ctx, cache):
    prof = DeviceProfile.from_device(ctx.devices[0])
    tuning.save(prof, {("uint32", 12): SortPolicy("reduce_then_scan", 8, 64, 4)})
    data = json.loads(cache.read_text())
    data["devices"][prof.identity]["uint32:14"] = {"no_such_field": 1}
    cache.write_text(json.dumps(data))
    with pytest.warns(RuntimeWarning, match="uint32:14"):
        assert list(tuning.tuned_table(prof)) == [("uint32", 12)]


def test_autotune_small_run_saves_a_correct_winner(ctx, cache):
    dev = ctx.devices[0]
    winners, rows = tuning.autotune(dev, ["uint32"], [11], repeat=1, log=lambda *a: None,
                                   seconds=0)
    assert ("uint32", 11) in winners and rows
    prof = DeviceProfile.from_device(dev)
    tuning.save(prof, winners)
    assert clradix.Sorter(ctx).plan(dev, np.uint32, 1 << 11) == winners[("uint32", 11)]


def test_every_candidate_policy_sorts(ctx, queue, rng):
    """Every policy the planner or the autotuner can choose on this device sorts exactly."""
    prof = DeviceProfile.from_device(ctx.devices[0])
    keys = float_specials(rng, np.float32, 3001)
    seen = 0
    for pol in tuning.candidates(prof, np.float32, 3001):
        fields = {k: v for k, v in pol.__dict__.items()}
        sorter = clradix.Sorter(ctx, **fields)
        d = cl_array.to_device(queue, keys)
        v = cl_array.to_device(queue, np.arange(keys.size, dtype=np.uint32))
        sorter.sort(queue, d, values=v).wait()
        order = np.argsort(keys, kind="stable")
        np.testing.assert_array_equal(bits_of(d.get()), bits_of(keys[order]), err_msg=str(pol))
        np.testing.assert_array_equal(v.get(), order, err_msg=str(pol))
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
    got = {pol: (ms, ratio) for pol, ms, ratio in tuning._time_paired(timed, 1, run_once, 7)}
    assert got["default"][1] == 1.0
    assert got["fast"][1] == pytest.approx(0.8) and got["slow"][1] == pytest.approx(1.2)
    ref_ms = got["default"][0]
    assert ref_ms in (10.0, 30.0)
    assert got["fast"][0] == pytest.approx(0.8 * ref_ms)
    assert calls.count("fast") == calls.count("slow") == 7 and calls.count("default") == 14
