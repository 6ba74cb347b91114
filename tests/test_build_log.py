"""The kernel builds of a first call are logged at INFO on the ``clradix`` logger (template,
parameters, device, seconds), and ``python -m clradix -v`` shows them on stderr."""

import logging
import re
import subprocess
import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.__main__ import main
from clradix.core.render import template_dir

_BUILT = re.compile(r"built (\S+\.cl\.mako) \((.*)\) on (.+) in (\d+\.\d+) s$")


def _build_records(caplog):
    return [r for r in caplog.records
            if (r.name == "clradix" or r.name.startswith("clradix.")) and "built" in r.message]


def test_first_build_is_logged(queue, rng, caplog):
    # a context of its own: its program cache is empty, so the first sort builds
    ctx = cl.Context([queue.device])
    q = cl.CommandQueue(ctx)
    x = rng.integers(0, 2 ** 16, 5000).astype(np.uint16)
    with caplog.at_level(logging.INFO, logger="clradix"):
        d = cl_array.to_device(q, x)
        clradix.Sorter(ctx).sort(q, d).wait()
    np.testing.assert_array_equal(d.get(), np.sort(x))
    records = _build_records(caplog)
    assert records, caplog.text
    for r in records:
        assert r.levelno == logging.INFO
        m = _BUILT.search(r.getMessage())
        assert m, r.getMessage()
        template, params, device, seconds = m.groups()
        assert (template_dir() / template).is_file(), template
        assert "key_bits=16" in params and "key_kind='uint'" in params
        assert queue.device.name.strip() in device and float(seconds) >= 0
    # the same configuration again: built already, nothing logged
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="clradix"):
        clradix.Sorter(ctx).sort(q, d, descending=True).wait()
    assert not _build_records(caplog), caplog.text
    np.testing.assert_array_equal(d.get(), np.sort(x)[::-1])


def test_builds_are_quiet_by_default(queue, rng, caplog):
    """clradix configures no logging itself: under logging's defaults (WARNING) a build logs
    nothing."""
    ctx = cl.Context([queue.device])
    q = cl.CommandQueue(ctx)
    x = rng.random(300).astype(np.float32)
    np.testing.assert_array_equal(clradix.sort(cl_array.to_device(q, x)).get(), np.sort(x))
    assert not _build_records(caplog), caplog.text


@pytest.fixture
def restore_clradix_logger():
    """The ``clradix`` logger's handlers and level put back after the test (main's -v adds a
    handler on the test's captured stderr)."""
    logger = logging.getLogger("clradix")
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


def test_verbose_command_line_shows_the_builds(capsys, restore_clradix_logger):
    assert main(["demo", "--verbose", "--n", "3000", "--dtype", "i8", "--repeat", "0"]) == 0
    out, err = capsys.readouterr()
    assert "OK: bit-exact" in out
    lines = [line for line in err.splitlines() if line.startswith("clradix.core.render: built ")]
    assert lines and all(_BUILT.search(line) for line in lines), err
    assert any("key_bits=8" in line and "key_kind='int'" in line for line in lines), err


def test_verbose_before_the_default_command():
    """``python -m clradix -v --n ...``: -v, then options of demo (the default command)."""
    proc = subprocess.run([sys.executable, "-m", "clradix", "-v", "--n", "2000", "--dtype", "f64",
                           "--repeat", "0"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "2000 float64 keys" in proc.stdout and "OK: bit-exact" in proc.stdout
    assert re.search(r"^clradix\.core\.render: built \S+\.cl\.mako \(.*key_bits=64.*\) on .+ in "
                     r"\d+\.\d+ s$", proc.stderr, re.MULTILINE), proc.stderr
    quiet = subprocess.run([sys.executable, "-m", "clradix", "--n", "2000", "--repeat", "0"],
                           capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0, quiet.stderr
    assert not re.search(r"^clradix\.core\.render: ", quiet.stderr, re.MULTILINE), quiet.stderr


_SLOW_BUILD = """
import sys, time
import numpy as np, pyopencl as cl, pyopencl.array as cl_array
import clradix
from clradix.core import render
render.BUILD_NOTICE_SECONDS = 0.05
slow = render.ProgramCache._build_program
def slower(self, *args):
    time.sleep(0.5)   # a build slower than the notice's threshold, whatever the cache holds
    return slow(self, *args)
render.ProgramCache._build_program = slower
ctx = cl.Context([cl.get_platforms()[int(sys.argv[1])].get_devices()[int(sys.argv[2])]])
q = cl.CommandQueue(ctx)
x = np.arange(300, dtype=np.float32)[::-1].copy()
assert (clradix.sort(cl_array.to_device(q, x)).get() == np.sort(x)).all()
"""


def _device_index(device):
    for p, platform in enumerate(cl.get_platforms()):
        for d, dev in enumerate(platform.get_devices()):
            if dev.int_ptr == device.int_ptr:
                return p, d
    pytest.skip("the test device is not in this process's platform list")


@pytest.mark.parametrize("quiet", ["", "1"])
def test_a_slow_build_says_so_on_stderr(queue, quiet, tmp_path):
    """A build that runs past BUILD_NOTICE_SECONDS prints one line on stderr without any
    logging configured (CLRADIX_QUIET_BUILDS=1 hides it), once for a call that builds several
    programs."""
    import os
    p, d = _device_index(queue.device)
    env = dict(os.environ, CLRADIX_QUIET_BUILDS=quiet)
    proc = subprocess.run([sys.executable, "-c", _SLOW_BUILD, str(p), str(d)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "clradix: building" in ln]
    if quiet:
        assert not lines, proc.stderr
    else:
        assert len(lines) == 1, proc.stderr
        assert queue.device.name.strip() in lines[0] and "cached afterwards" in lines[0]
