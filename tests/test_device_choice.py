"""The default device: CLRADIX_DEVICE (an index in ``python -m clradix info``'s list or a name
substring) is read by every function on numpy inputs, the command line and clradix.dask alike
(core.device.default_device); a spec that matches nothing is an error naming it, never another
device."""

import os
import subprocess
import sys

import pytest

from clradix.core import device as core_device


def _index(dev):
    return next(i for i, d in enumerate(core_device.all_devices()) if d.int_ptr == dev.int_ptr)


def test_index_and_name_substring(ctx, monkeypatch):
    dev = ctx.devices[0]
    monkeypatch.setenv("CLRADIX_DEVICE", str(_index(dev)))
    assert core_device.default_device().int_ptr == dev.int_ptr
    monkeypatch.setenv("CLRADIX_DEVICE", dev.name.strip().upper())   # case-insensitive
    found = core_device.default_device()
    assert found.name == dev.name


def test_a_spec_matching_nothing_names_it(monkeypatch):
    monkeypatch.setenv("CLRADIX_DEVICE", "no such device 42")
    with pytest.raises(RuntimeError, match=r"no OpenCL device matches CLRADIX_DEVICE='no such "
                                           r"device 42' among those that build kernels \(0: "):
        core_device.default_device()
    monkeypatch.setenv("CLRADIX_DEVICE", "999")
    with pytest.raises(RuntimeError, match="CLRADIX_DEVICE='999'"):
        core_device.default_device()


def _run(code, spec):
    env = dict(os.environ, CLRADIX_DEVICE=spec, CLRADIX_QUIET_BUILDS="1")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)


def test_functions_on_numpy_inputs_take_it(ctx):
    """A fresh process: clradix.sort of a numpy array runs on the device CLRADIX_DEVICE names,
    and refuses to run elsewhere when it names none."""
    dev = ctx.devices[0]
    code = ("import numpy as np, clradix\n"
            "print(clradix.sort(np.array([3, 1, 2], np.int32)).tolist())\n"
            "from clradix.dispatch.api import default_queue\n"
            "print(default_queue().device.name.strip())\n")
    done = _run(code, str(_index(dev)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[1, 2, 3]", dev.name.strip()]
    done = _run(code, "no such device 42")
    assert done.returncode != 0
    assert "no OpenCL device matches CLRADIX_DEVICE='no such device 42'" in done.stderr


def test_command_line_takes_it(ctx):
    done = subprocess.run([sys.executable, "-m", "clradix", "info"], capture_output=True,
                          text=True, env=dict(os.environ, CLRADIX_DEVICE="no such device 42"),
                          timeout=300)
    assert done.returncode == 1
    assert "CLRADIX_DEVICE='no such device 42'" in done.stdout + done.stderr
