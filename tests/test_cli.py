"""The command line's main job: sort, time and check against numpy (refused command lines:
test_cli_errors.py)."""

import numpy as np

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
