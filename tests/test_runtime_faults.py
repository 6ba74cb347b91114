"""Intel's CPU compiler writes into freed memory while building kernels of many barrier regions
(clradix.core.runtime_faults): the option that avoids it reaches the runtime, is in effect, and where it
cannot be, programs are built in a child process. The reduced kernel is here; under valgrind the
fault shows on every build without the option and never with it."""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from clradix.core import runtime_faults
from clradix.core.runtime_faults import INTEL_CPU_OPTION, LLVM_OPTIONS_ENV

from conftest import _DEVICES

INTEL = [d for d in _DEVICES if runtime_faults.is_affected(d)]
needs_intel = pytest.mark.skipif(not INTEL, reason="no device of Intel's CPU runtime under test")


def reduced_kernel(regions):
    """The smallest source found that makes the pass write into freed memory: one work-item value
    used after each of ``regions`` barriers inside a branch (each branch ends in a join block whose
    predecessors lie in two barrier regions; the pass's map of regions outgrows 48 entries at about
    24 of them). 8 regions build clean under valgrind, 64 write into freed memory every time."""
    steps = "\n".join(
        f"    if (n > {i}u) {{ s[lid] = acc; barrier(CLK_LOCAL_MEM_FENCE); "
        f"acc += s[(lid + 1u) & 63u]; }}\n    acc += a[x + {i}u];" for i in range(regions))
    return (f"__kernel void reduced(__global uint *a, __local uint *s, uint n)\n{{\n"
            f"    uint lid = get_local_id(0);\n    uint x = lid * 3u + 1u;\n    uint acc = 0;\n"
            f"{steps}\n    a[lid] = acc;\n}}\n")


# A child process: pyopencl's device of Intel's CPU runtime, clradix imported first (as a user
# would) or not at all, and the reduced kernel built from source.
_BUILD = textwrap.dedent("""
    import sys
    if sys.argv[1] == "clradix":
        import clradix  # noqa: F401
    import pyopencl as cl
    dev = next(d for p in cl.get_platforms() if p.name == sys.argv[2] for d in p.get_devices())
    ctx = cl.Context([dev])
    cl.Program(ctx, sys.stdin.read()).build(cache_dir=False)
    print("built")
""")


def _child(mode, device, source, timeout=900):
    return subprocess.run([sys.executable, "-c", _BUILD, mode, device.platform.name],
                          input=source, capture_output=True, text=True, timeout=timeout)


def _without_option():
    env = dict(os.environ)
    env.pop(LLVM_OPTIONS_ENV, None)
    return env


# ---------------------------------------------------------------- the environment, any machine

def _fake_runtime(tmp_path, knows_option=True):
    lib = tmp_path / "libintelocl.so"
    lib.write_bytes(b"\0ELF..." + (b"sycl-barrier-copy-instruction-threshold\0" if knows_option
                                   else b"") + b"CL_CONFIG_LLVM_OPTIONS\0")
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "intel-cpu.icd").write_text(f"{lib}\n")
    (vendors / "other.icd").write_text("/usr/lib/libpocl.so\n")
    return vendors


@pytest.mark.parametrize("current", ["", "-some-user-option=1"])
def test_option_added_for_a_runtime_that_knows_it(tmp_path, monkeypatch, current):
    monkeypatch.setenv("OCL_ICD_VENDORS", str(_fake_runtime(tmp_path)))
    monkeypatch.setenv(LLVM_OPTIONS_ENV, current)
    assert runtime_faults.prepare_environment()
    assert os.environ[LLVM_OPTIONS_ENV].split() == current.split() + [INTEL_CPU_OPTION]
    assert runtime_faults.prepare_environment()  # once only
    assert os.environ[LLVM_OPTIONS_ENV].split().count(INTEL_CPU_OPTION) == 1


def test_option_not_added_where_the_runtime_would_refuse_it(tmp_path, monkeypatch):
    """A runtime that does not know an option ends the process: never set it there."""
    monkeypatch.setenv("OCL_ICD_VENDORS", str(_fake_runtime(tmp_path, knows_option=False)))
    monkeypatch.delenv(LLVM_OPTIONS_ENV, raising=False)
    assert not runtime_faults.prepare_environment()
    assert LLVM_OPTIONS_ENV not in os.environ


def test_option_not_added_without_intel_runtime(tmp_path, monkeypatch):
    (tmp_path / "pocl.icd").write_text("/usr/lib/libpocl.so\n")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
    monkeypatch.delenv(LLVM_OPTIONS_ENV, raising=False)
    assert not runtime_faults.prepare_environment()
    assert LLVM_OPTIONS_ENV not in os.environ


def test_child_that_dies_is_retried_then_reported(monkeypatch):
    """A compiler that kills the child process is an error of the call, never of the caller."""

    class Dev:
        name, driver_version = "cpu", "1"

        class platform:
            name = "Intel(R) OpenCL"
    monkeypatch.setattr(runtime_faults, "_CHILD", "import os; os.abort()")
    with pytest.raises(runtime_faults.IsolatedBuildError, match="died by signal 6 2 times") as e:
        runtime_faults.build_isolated(Dev, "__kernel void k() {}", [], attempts=2)
    assert e.value.crashed


# ---------------------------------------------------------------- Intel's CPU runtime

@needs_intel
def test_option_in_effect_in_this_process():
    """conftest imports clradix before any context exists: the canary shows the option."""
    assert INTEL_CPU_OPTION in os.environ[LLVM_OPTIONS_ENV].split()
    assert all(runtime_faults.option_in_effect(d) for d in INTEL)


@needs_intel
def test_reduced_case_builds_many_times():
    """The reduced kernel, each build in a fresh process as a user's first call is."""
    src = reduced_kernel(64)
    for _ in range(12):
        proc = _child("clradix", INTEL[0], src)
        assert proc.returncode == 0 and "built" in proc.stdout, proc.stderr[-3000:]


def _invalid_writes(log_path):
    text = open(log_path).read()
    return len(re.findall(r"Invalid write of size \d+\n(?:.*\n){0,6}.*copyAndReplaceUses", text))


@needs_intel
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.timeout(1800)   # two builds under valgrind: about 2 minutes each on an idle core
def test_valgrind_sees_the_fault_without_the_option_only(tmp_path):
    """Deterministic evidence: valgrind reports the pass's writes into freed memory on every
    build without the option (so this test can fail) and none with clradix imported."""
    src = reduced_kernel(64)
    runs = {}
    for mode in ("plain", "clradix"):   # both at once
        log, source = tmp_path / f"{mode}.log", tmp_path / f"{mode}.cl"
        source.write_text(src)
        cmd = ["valgrind", "--error-limit=no", "--num-callers=8", f"--log-file={log}",
               sys.executable, "-c", _BUILD, mode, INTEL[0].platform.name]
        with open(source) as stdin:
            proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=_without_option())
        runs[mode] = (proc, log)
    counts = {}
    for mode, (proc, log) in runs.items():
        out, err = proc.communicate(timeout=1700)
        assert proc.returncode == 0 and "built" in out, err[-3000:]
        counts[mode] = _invalid_writes(log)
    assert counts["plain"] > 0 and counts["clradix"] == 0, counts


_LATE = textwrap.dedent("""
    import logging, sys
    import numpy as np, pyopencl as cl, pyopencl.array as cla
    dev = next(d for p in cl.get_platforms() if p.name == sys.argv[1] for d in p.get_devices())
    ctx = cl.Context([dev])     # the runtime reads its options now, before clradix is imported
    import clradix
    from clradix.core import runtime_faults
    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    assert not runtime_faults.option_in_effect(dev)
    q = cl.CommandQueue(ctx)
    x = np.random.default_rng(5).integers(0, 2**32, 30001, dtype=np.uint32)
    assert (clradix.sort(cla.to_device(q, x)).get() == np.sort(x)).all()
    try:
        runtime_faults.build_isolated(dev, "__kernel void k() { undefined_name = 1; }", [])
    except runtime_faults.IsolatedBuildError as exc:
        assert "undefined_name" in str(exc), exc
    else:
        raise AssertionError("a broken source built")
    print("sorted in a process whose runtime lacks the option")
""")


@needs_intel
def test_runtime_loaded_before_import_builds_in_a_child():
    proc = subprocess.run([sys.executable, "-c", _LATE, INTEL[0].platform.name],
                          capture_output=True, text=True, timeout=900, env=_without_option())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "built in a child process" in proc.stdout
    assert "sorted in a process whose runtime lacks the option" in proc.stdout


def test_not_affected_elsewhere(ctx):
    """PoCL, NVIDIA and the simulators compile with other compilers: no canary, no child."""
    dev = ctx.devices[0]
    if runtime_faults.is_affected(dev):
        pytest.skip("Intel's CPU runtime")
    assert not runtime_faults.needs_isolation(ctx)
    np.testing.assert_equal(runtime_faults.is_affected(dev), False)
