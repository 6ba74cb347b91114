"""The command line's main job: sort, time and check against numpy (refused command lines:
test_cli_errors.py)."""

import numpy as np
import pytest

from clradix.__main__ import main


def test_demo_random(capsys):
    assert main(["demo", "--n", "5000", "--dtype", "float32", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "OK: bit-exact equal to numpy" in out and "5000 float32 keys" in out


def test_demo_file_descending(tmp_path, capsys):
    f = tmp_path / "keys.npy"
    np.save(f, np.random.default_rng(1).integers(-50, 50, 3000).astype(np.int16))
    assert main(["demo", "--file", str(f), "--descending", "--repeat", "1"]) == 0
    assert "3000 int16 keys descending" in capsys.readouterr().out


def test_demo_bool_keys(tmp_path, capsys):
    """bool keys, random or from a file, as the API sorts them (False before True)."""
    assert main(["demo", "--n", "3000", "--dtype", "bool", "--repeat", "1"]) == 0
    assert "3000 bool keys" in capsys.readouterr().out
    f = tmp_path / "flags.npy"
    np.save(f, np.random.default_rng(3).random(500) < 0.3)
    assert main(["demo", "--file", str(f), "--op", "argsort", "--repeat", "1"]) == 0
    assert "OK: equal to numpy's stable argsort" in capsys.readouterr().out


def test_demo_topk_k_beyond_n_is_an_error(capsys):
    """--k larger than the keys is refused as clradix.topk refuses it, not clamped."""
    assert main(["demo", "--op", "topk", "--n", "100", "--k", "5000", "--repeat", "1"]) == 2
    err = capsys.readouterr().err
    assert "--k 5000 exceeds the 100 keys" in err


def test_info(capsys):
    assert main(["info"]) == 0
    assert "default device:" in capsys.readouterr().out


def run(argv, capsys):
    """(exit status, stdout, stderr) of ``python -m clradix`` with ``argv``, run in this process."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_every_command_parses_dtypes_alike(capsys, monkeypatch):
    """Short names (u32) work for demo, plan and autotune, as the one dtype parser reads them."""
    code, out, err = run(["demo", "--n", "300", "--dtype", "u32", "--repeat", "1"], capsys)
    assert code == 0 and "300 uint32 keys" in out and "OK: bit-exact" in out, err
    code, out, err = run(["plan", "--dtypes", "u32,f64"], capsys)
    assert code == 0 and not err
    assert "  uint32   2^10" in out and "  float64  2^28" in out
    seen = []

    def autotune(device, dtypes, sizes, *args, **kwargs):
        seen.append((dtypes, sizes))
        return {}, []
    monkeypatch.setattr("clradix.autotune.autotune", autotune)
    code, out, err = run(["autotune", "--dtypes", "u32,float16", "--sizes", "12,14"], capsys)
    assert code == 0 and not err
    assert seen and all(s == (["uint32", "float16"], [12, 14]) for s in seen)


def test_nothing_to_sort(tmp_path, capsys):
    """No keys (--n 0, an empty file): nothing to sort, exit 0."""
    code, out, err = run(["demo", "--n", "0"], capsys)
    assert (code, err) == (0, "") and "nothing to sort: 0 uint32 keys" in out
    f = tmp_path / "empty.npy"
    np.save(f, np.zeros(0, np.float32))
    code, out, err = run(["demo", "--file", str(f)], capsys)
    assert (code, err) == (0, "") and "nothing to sort: 0 float32 keys" in out


def test_demo_big_endian_file_is_sorted_natively(tmp_path, capsys):
    """Big-endian keys are converted to this machine's byte order, then sorted and checked."""
    f = tmp_path / "big.npy"
    keys = np.random.default_rng(2).standard_normal(700).astype(">f4")
    keys[:3] = [np.nan, -0.0, np.inf]
    np.save(f, keys)
    code, out, err = run(["demo", "--file", str(f), "--repeat", "1"], capsys)
    assert (code, err) == (0, "") and "700 float32 keys" in out and "OK: bit-exact" in out


def test_demo_is_the_default_command_and_repeat_0_only_checks(capsys):
    """Options without a command run demo; --repeat 0 sorts once (the warm-up) and checks."""
    code, out, err = run(["--n", "200", "--repeat", "0"], capsys)
    assert (code, err) == (0, "")
    assert "200 uint32 keys: not timed (--repeat 0)" in out and "OK: bit-exact" in out


@pytest.mark.parametrize("op,shows", [
    ("sort", ["np.sort (default kind)", "np.sort(kind='stable')", "OK: bit-exact"]),
    ("argsort", ["np.argsort (default kind)", "np.argsort(kind='stable')",
                 "OK: equal to numpy's stable argsort"]),
    ("topk", ["np.argpartition + sort of the k", "OK: the 50 largest, ranked"]),
])
def test_demo_ops_beside_numpy(capsys, op, shows):
    """--op sort|argsort|topk: clradix's time beside numpy's calls (warm, the same repeats) and
    the check; descending top-k is the smallest k, checked without numpy's timings."""
    assert main(["demo", "--op", op, "--n", "3000", "--k", "50", "--dtype", "float32",
                 "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert "clradix" in out and "median of 2" in out
    for s in shows:
        assert s in out, out
    assert main(["demo", "--op", op, "--n", "3000", "--k", "50", "--descending",
                 "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "OK:" in out and "np." not in out, out


def test_demo_topk_of_zero_keys(capsys):
    """--k 0 selects nothing, as clradix.topk and numpy do: an empty result, checked."""
    for extra in ([], ["--descending"]):
        code, out, err = run(["demo", "--op", "topk", "--k", "0", "--n", "1000",
                              "--repeat", "1"] + extra, capsys)
        assert (code, err) == (0, ""), (out, err)
        assert "k=0" in out and "OK: the 0 " in out, out


def _device_index(ctx):
    from clradix.core.device import all_devices
    return str([d.int_ptr for d in all_devices()].index(ctx.devices[0].int_ptr))


def test_plan_prints_every_field_and_takes_bool(ctx, capsys):
    """plan's line per size is the whole policy (bucket_keys and every other field that is not
    its default), for every key dtype the demo takes, bool and float16 among them."""
    from clradix import Sorter
    code, out, err = run(["plan", "--device", _device_index(ctx), "--dtypes", "bool,f16,u32"],
                         capsys)
    assert code == 0 and not err, err
    sorter, dev = Sorter(ctx), ctx.devices[0]
    lines = out.splitlines()[1:]
    want = [f"  {str(np.dtype(dt)):8s} 2^{lg:<3d} {sorter.plan(dev, dt, 1 << lg).label}"
            for dt in (np.bool_, np.float16, np.uint32) for lg in (10, 16, 20, 24, 28)]
    assert lines == want


def test_policy_label_tells_policies_apart():
    """Policies that differ in any one knob have different labels (every algorithm's policy);
    defaults are left out."""
    import dataclasses
    from clradix.policies.sort import POLICIES, SortPolicy
    base = SortPolicy("chunks", 8, 1, 4096)
    assert base.label == "chunks/8b/1x4096"
    assert SortPolicy("onesweep", 8, 256, 16, ranking="ptx").label == "onesweep/8b/256x16/ptx"
    other = {bool: lambda v: not v, int: lambda v: v + 1, str: lambda v: v + "x"}
    for cls in POLICIES.values():
        start = cls(8, 256, 16)
        labels = {start.label}
        for f in dataclasses.fields(cls):
            value = getattr(start, f.name)
            changed = dataclasses.replace(start, **{f.name: other[type(value)](value)})
            assert changed.label not in labels, (cls, f.name, changed.label)
            labels.add(changed.label)
    assert dataclasses.replace(base, bucket_keys=65536).label == "chunks/8b/1x4096 bucket_keys=65536"


def test_autotune_names_what_the_policies_differ_in(ctx, monkeypatch):
    """The planner's default and a best candidate that differ only in bucket_keys are told
    apart in autotune's log line and report."""
    import dataclasses
    import clradix.autotune as at
    picked = []

    def time_candidates(ctx_, queue, pool, profile, keys, default, repeat, seconds, log):
        other = dataclasses.replace(default, bucket_keys=default.bucket_keys + 4096)
        picked.append((default, other))
        return [(default, 1.22, 1.0), (other, 1.0, 1 / 1.22)]
    monkeypatch.setattr(at, "_time_candidates", time_candidates)
    lines = []
    winners, rows = at.autotune(ctx.devices[0], ["uint32"], [12], 1, log=lines.append)
    (default, other), = picked
    assert winners == {("uint32", 12): other}
    assert lines == [f"uint32 2^12: best 1.000 ms {other.label}; planner default "
                     f"{default.label} is 1.22x the best"]
    assert other.label != default.label and "bucket_keys=" in other.label
    assert f"| 1.220 ms (1.22x best) | 1.000 ms {other.label} |" in at.report(rows, "device")
