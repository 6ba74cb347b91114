"""The command line's main job: sort, time and check against numpy."""

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
