"""Refused command lines: one clear message on stderr, exit status 2, no traceback, nothing run."""

import subprocess
import sys

import numpy as np
import pytest

from clradix.__main__ import main


def _refused(argv, capsys):
    """stderr of a command line that main must refuse (SystemExit 2; any other exception, that is
    a traceback, fails the test)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    assert info.value.code == 2, (out, err)
    assert "Traceback" not in out + err
    assert out == "", out  # refused before anything ran
    return err


OPTIONS = [
    (["demo", "--n", "-5"], "argument --n: '-5' is not an integer of at least 0"),
    (["demo", "--n", "many"], "argument --n: 'many' is not an integer of at least 0"),
    (["demo", "--repeat", "-1"], "argument --repeat: '-1' is not an integer of at least 0"),
    (["demo", "--seed", "-1"], "argument --seed: '-1' is not an integer of at least 0"),
    (["demo", "--dtype", "complex64"], "argument --dtype: unsupported key dtype 'complex64': "
                                       "expected one of uint8"),
    (["plan", "--dtypes", "u32,,f32"], "argument --dtypes: 'u32,,f32': expected comma-separated "
                                       "key dtypes"),
    (["autotune", "--sizes", "abc"], "argument --sizes: 'abc' is not a log2 size"),
    (["autotune", "--sizes", "-3"], "argument --sizes: '-3' is not a log2 size"),
    (["autotune", "--sizes", "16,0"], "argument --sizes: '0' is not a log2 size"),
    (["autotune", "--repeat", "0"], "argument --repeat: '0' is not a positive integer"),
    (["autotune", "--seconds", "nan"], "argument --seconds: 'nan' is not a number of seconds"),
    (["demo", "--n", "10", "--device", "no such device"],
     "no OpenCL device matches 'no such device'"),
]


@pytest.mark.parametrize("argv,message", OPTIONS, ids=[" ".join(a) for a, _ in OPTIONS])
def test_refused_option(argv, message, capsys):
    err = _refused(argv, capsys)
    assert f"python -m clradix {argv[0]}: error: {message}" in err, err


@pytest.mark.parametrize("argv", [["demo", "--dtype", "c8"], ["plan", "--dtypes", "u8,c8"],
                                  ["autotune", "--dtypes", "c8"]], ids=" ".join)
def test_every_command_lists_every_key_dtype(argv, capsys):
    """One list of key dtypes for every command, bool among them (demo sorts bool keys, so plan
    and autotune take them too)."""
    from clradix.core.keys import KEY_DTYPE_NAMES
    err = _refused(argv, capsys)
    listed = err.split("expected one of ", 1)[1]
    assert all(name in listed for name in KEY_DTYPE_NAMES), err
    assert "bool" in listed and "u32" in listed, err


def _npy(array, **kw):
    return lambda path: np.save(path, array, **kw)


FILES = {
    "datetime": (_npy(np.array([1, 2], "datetime64[s]")), "keys (<M8[s]), which clradix does "
                                                          "not sort"),
    "complex": (_npy(np.arange(4) * 1j), "holds complex128 keys (<c16), which clradix does not "
                                         "sort"),
    "object": (_npy(np.array([1, "a"], dtype=object), allow_pickle=True),
               "holds Python objects (dtype object)"),
    "strings": (_npy(np.array(["b", "a"])), "holds <U1 keys"),
    "2-D": (_npy(np.zeros((3, 4), np.uint32)), "holds an array of shape (3, 4): expected a 1-D "
                                               "array of keys"),
    "0-D": (_npy(np.uint32(7)), "holds an array of shape (): expected a 1-D array of keys"),
    "big-endian complex": (_npy(np.arange(3).astype(">c8")), "holds >c8 keys"),
    "text": (lambda path: path.write_text("1 2 3\n"), "not a .npy file; expected a .npy file"),
    "npz": (lambda path: np.savez(path, np.arange(3)), "an .npz archive; expected a .npy file"),
    "truncated": (lambda path: path.write_bytes(b"\x93NUMPY\x01\x00\x76\x00{'descr'"),
                  "cannot load"),
    "missing": (None, "cannot load"),
}


@pytest.mark.parametrize("kind", list(FILES))
def test_refused_file(kind, tmp_path, capsys):
    write, message = FILES[kind]
    path = tmp_path / "keys.npy"
    if write:
        write(path)
        if kind == "npz":
            path = tmp_path / "keys.npy.npz"
    err = _refused(["demo", "--file", str(path)], capsys)
    assert "python -m clradix demo: error: argument --file: " in err, err
    assert message in err and str(path) in err, err


def test_module_entry_point_refuses_without_traceback():
    """The same through ``python -m clradix`` (sys.exit(main())): status 2, one error line."""
    proc = subprocess.run([sys.executable, "-m", "clradix", "demo", "--repeat", "-1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert proc.stderr.strip().splitlines()[-1] == (
        "python -m clradix demo: error: argument --repeat: '-1' is not an integer of at least 0")
