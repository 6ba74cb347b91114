"""``python -m clradix --help`` and each command's: plain text (no reST markup) and fast, that is
answered before pyopencl, numpy, mako or the Sorter are imported; the package's public names
still resolve on first use."""

import subprocess
import sys

import pytest

from clradix.__main__ import COMMANDS, _with_command, build_parser

HEAVY = ("pyopencl", "numpy", "mako", "clradix.dispatch.sorter", "clradix.dispatch.api")
HELPS = [["--help"], ["-h"], ["-v", "--help"]] + [[cmd, "--help"] for cmd in COMMANDS]


def _python(*args, timeout=120):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("argv", HELPS, ids=" ".join)
def test_help_is_plain_text(argv):
    proc = _python("-m", "clradix", *argv)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m clradix") and proc.stderr == ""
    assert "``" not in proc.stdout, proc.stdout
    if argv[0] in COMMANDS:
        assert f"python -m clradix {argv[0]}" in proc.stdout


def _imported(argv):
    """The modules ``python -X importtime -m clradix *argv`` imported (from its report)."""
    proc = _python("-X", "importtime", "-m", "clradix", *argv)
    assert proc.returncode == 0, proc.stderr
    names = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    assert "clradix.__main__" in names or "argparse" in names, proc.stderr[-2000:]
    return names


@pytest.mark.parametrize("argv", [["--help"], ["demo", "--help"], ["autotune", "--help"]],
                         ids=" ".join)
def test_help_imports_nothing_heavy(argv):
    names = _imported(argv)
    assert not names.intersection(HEAVY), sorted(names.intersection(HEAVY))


def test_a_command_does_import_them():
    """The check above can fail: a command that runs imports pyopencl and numpy."""
    names = _imported(["info"])
    assert {"pyopencl", "numpy"} <= names


def test_package_names_resolve_on_first_use():
    """``import clradix`` alone imports no heavy module; every name of __all__ resolves, and
    ``from clradix import ...`` works."""
    code = (
        "import sys\n"
        "import clradix\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "from clradix import Sorter, sort, KEY_DTYPES\n"
        "import clradix.dispatch.sorter, clradix.dispatch.api\n"
        "assert Sorter is clradix.dispatch.sorter.Sorter and sort is clradix.dispatch.api.sort\n"
        "assert all(hasattr(clradix, name) for name in clradix.__all__)\n"
        "assert set(clradix.__all__) <= set(dir(clradix))\n"
        "try:\n"
        "    clradix.no_such_name\n"
        "except AttributeError as exc:\n"
        "    assert 'no_such_name' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
        "print('ok')\n")
    proc = _python("-c", code)
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr


def test_parser_and_default_command():
    """-v before or after the command; options without a command go to demo."""
    ap, parsers = build_parser()
    assert set(parsers) == set(COMMANDS)
    assert _with_command([]) == ["demo"]
    assert _with_command(["-v"]) == ["-v", "demo"]
    assert _with_command(["-v", "--n", "5"]) == ["-v", "demo", "--n", "5"]
    assert _with_command(["--verbose", "info"]) == ["--verbose", "info"]
    assert _with_command(["-v", "--help"]) == ["-v", "--help"]
    assert _with_command(["plan", "-v"]) == ["plan", "-v"]
    for argv, verbose in ((["-v", "info"], True), (["info", "-v"], True), (["info"], False),
                          (["--verbose", "plan", "--device", "0"], True)):
        args = ap.parse_args(argv)
        assert args.verbose is verbose and args.cmd == argv[0 if argv[0][0] != "-" else 1]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_help(command):
    """Each option of each command says what it takes (--device of plan and autotune too), and
    each dtype option names bool among the key dtypes."""
    _, parsers = build_parser()
    for action in parsers[command]._actions:
        assert action.help, (command, action.option_strings)
        if "dtype" in action.dest:
            assert "bool" in action.help and "float64" in action.help, action.help


def test_benchmark_summaries_are_whole():
    """``python -m benchmarks --help`` gives each command's whole summary (the first paragraph
    of its module's docstring), not its first line cut mid-sentence."""
    import benchmarks.__main__ as bm
    proc = _python("-m", "benchmarks", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "``" not in proc.stdout
    text = "".join(proc.stdout.split())   # (however help wraps its lines)
    for name, module in bm.COMMANDS.items():
        first = "".join(module.__doc__.strip().split("\n\n")[0].split()).replace("``", "")
        assert first.endswith("."), (name, first)
        assert name + first in text, (name, first)
