"""Faults of OpenCL runtimes that clradix works around, each with its evidence.

Intel's CPU runtime (``libintelocl.so``: the platform "Intel(R) OpenCL" and its FPGA emulator)
writes into freed memory while it compiles kernels with many barrier regions. Its pass
``ReduceCrossBarrierValues`` keeps a reference into a map of per-region maps
(``OriginToCopyMaps[RegionHeader]``) and then, looking up the regions of a join block's
predecessors with ``operator[]``, inserts into the same map; once that map holds more than 48
regions the insertion reallocates it and the next write through the old reference lands in freed
memory. valgrind reports the invalid writes on every build of such a kernel (releases
2026.2.0, 2026.1.2, 2025.3.3 and 2025.0.5 alike); glibc notices the damaged heap only sometimes
("malloc(): unsorted double linked list corrupted", SIGABRT), which is why the abort looked
random: 2 of 111 builds of one fused onesweep program, each in a fresh process, died.
``tests/test_runtime_faults.py`` holds the reduced kernel.

The pass only recomputes cheap work-item values after a barrier instead of saving them; the
runtime's LLVM option ``-sycl-barrier-copy-instruction-threshold=0`` turns it into a no-op (the
values are saved, as for any other cross-barrier value). The runtime reads that option from the
environment variable ``CL_CONFIG_LLVM_OPTIONS`` once, when the process makes its first context on
the device, and a runtime that does not know an option ends the process. So clradix:

1. on import (before the caller has made a context, as a rule), appends the option to
   ``CL_CONFIG_LLVM_OPTIONS`` when an Intel CPU runtime is registered with the loader and its
   library names the option (``prepare_environment``);
2. before the first build on such a device, checks that the option is in effect in this process
   with a one-barrier canary kernel (the pass gives it no private memory, the option 128 bytes);
3. where it is not (the runtime was loaded before ``import clradix``, or a library that does not
   know the option), builds each program in a child process (with the option where the library
   knows it, else without and retried if it dies), and loads the
   binary here: a fault in the compiler can then end the child, never the caller
   (``build_isolated``). Each such build costs one Python start-up more (about 0.3 s).

The option itself costs 2-6% of sort time on that runtime (2^22 keys on 2 cores).
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Dict, List

log = logging.getLogger("clradix")

LLVM_OPTIONS_ENV = "CL_CONFIG_LLVM_OPTIONS"
INTEL_CPU_OPTION = "-sycl-barrier-copy-instruction-threshold=0"
_OPTION_NAME = b"sycl-barrier-copy-instruction-threshold"
_INTEL_LIBRARY = "libintelocl"

# One barrier between work-item values and their use: with the pass the values are recomputed
# after the barrier (no private memory); with the option they are saved across it.
CANARY_SOURCE = """
__kernel void clradix_canary(__global uint *a)
{
    __local uint s[64];
    uint lid = get_local_id(0);
    uint x0 = lid * 3u + 1u, x1 = lid * 5u + 7u, x2 = lid ^ 0x55u, x3 = lid * 11u + 2u;
    s[lid & 63u] = a[lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    a[lid] = s[(lid + 1u) & 63u] + x0 + x1 * x2 + x3;
}
"""


def is_affected(device) -> bool:
    """Whether ``device`` compiles with Intel's CPU OpenCL back-end (its CPU platform or the FPGA
    emulator that shares it; not Intel's GPU platforms, which compile with another compiler)."""
    platform = device.platform.name
    return platform.startswith("Intel(R)") and "Graphics" not in platform


# ---------------------------------------------------------------- 1. the environment, on import

def _icd_files() -> List[Path]:
    """The vendor files the OpenCL loader reads (ocl-icd's and Khronos' rules)."""
    vendors = os.environ.get("OCL_ICD_VENDORS")
    dirs: List[Path] = []
    files: List[Path] = []
    if vendors:
        p = Path(vendors)
        if p.is_dir():
            dirs.append(p)
        elif p.suffix == ".icd":
            files.append(p)
    else:
        dirs += [Path("/etc/OpenCL/vendors"), Path(sys.prefix) / "etc" / "OpenCL" / "vendors"]
    for d in dirs:
        try:
            files += sorted(d.glob("*.icd"))
        except OSError:
            pass
    return files


def _library_paths() -> List[Path]:
    """Paths of the Intel CPU runtime libraries registered with the loader."""
    names = [n for n in os.environ.get("OCL_ICD_FILENAMES", "").split(":") if n]
    for f in _icd_files():
        try:
            names.append(f.read_text().strip())
        except OSError:
            pass
    search = [Path(sys.prefix) / "lib"] + [
        Path(p) for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    found = []
    for name in names:
        if _INTEL_LIBRARY not in Path(name).name:
            continue
        path = Path(name)
        if not path.is_absolute():
            path = next((d / name for d in search if (d / name).is_file()), path)
        if path.is_file():
            found.append(path)
    return found


_known: Dict[tuple, bool] = {}


def _knows_option(library: Path) -> bool:
    """Whether ``library`` names the option (read once per file version: it is about 100 MB and
    every child-process build asks)."""
    try:
        st = library.stat()
        key = (str(library), st.st_size, st.st_mtime_ns)
        if key not in _known:
            with open(library, "rb") as f, \
                    mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                _known[key] = m.find(_OPTION_NAME) >= 0 and m.find(LLVM_OPTIONS_ENV.encode()) >= 0
        return _known[key]
    except (OSError, ValueError):
        return False


def libraries_know_option() -> bool:
    """Whether Intel CPU runtimes are registered with the loader and every one names the option
    (an option a runtime does not know ends the process when the runtime reads it)."""
    libraries = _library_paths()
    return bool(libraries) and all(_knows_option(lib) for lib in libraries)


def prepare_environment() -> bool:
    """Add the option to ``CL_CONFIG_LLVM_OPTIONS`` where ``libraries_know_option``. True when
    the option is in the environment afterwards. Takes effect only where no context has been
    made on the runtime's device yet."""
    current = os.environ.get(LLVM_OPTIONS_ENV, "")
    if INTEL_CPU_OPTION in current.split():
        return True
    if not libraries_know_option():
        return False
    os.environ[LLVM_OPTIONS_ENV] = f"{current} {INTEL_CPU_OPTION}".strip()
    return True


# ---------------------------------------------------------------- 2. is it in effect here?

_in_effect: Dict[int, bool] = {}
_in_effect_lock = threading.Lock()


def option_in_effect(device) -> bool:
    """Whether this process's runtime compiles for ``device`` with the option (memoised)."""
    import pyopencl as cl
    key = device.int_ptr
    with _in_effect_lock:
        if key not in _in_effect:
            ctx = cl.Context([device])
            prg = cl.Program(ctx, CANARY_SOURCE).build(cache_dir=False)  # type: ignore[arg-type]  # pyopencl: False = no disk cache
            private = prg.clradix_canary.get_work_group_info(
                cl.kernel_work_group_info.PRIVATE_MEM_SIZE, device)
            _in_effect[key] = private > 0
            if not _in_effect[key]:
                log.info("%s was loaded without %s=%s (before `import clradix`?): its kernels "
                         "are built in a child process", device.platform.name, LLVM_OPTIONS_ENV,
                         INTEL_CPU_OPTION)
        return _in_effect[key]


def needs_isolation(context) -> bool:
    """Whether programs of ``context`` must be built in a child process."""
    return any(is_affected(d) and not option_in_effect(d) for d in context.devices)


# ---------------------------------------------------------------- 3. the child-process build

class IsolatedBuildError(RuntimeError):
    """The child process building a program failed: ``log`` holds the compiler's output when
    the compiler refused the source, ``crashed`` says the child died instead."""

    def __init__(self, message, log="", crashed=False):
        super().__init__(message)
        self.log = log
        self.crashed = crashed


def build_isolated(device, source: str, options: List[str], attempts: int = 3) -> bytes:
    """The program binary of ``source`` for ``device``, compiled in a child process with the
    option set where the runtime knows it. A child that dies by a signal is started again, at
    most ``attempts`` times."""
    request = {"platform": device.platform.name, "device": device.name,
               "driver": device.driver_version, "options": list(options)}
    env = dict(os.environ)
    current = env.get(LLVM_OPTIONS_ENV, "")
    if INTEL_CPU_OPTION not in current.split() and libraries_know_option():
        env[LLVM_OPTIONS_ENV] = f"{current} {INTEL_CPU_OPTION}".strip()
    with tempfile.TemporaryDirectory(prefix="clradix-build-") as tmp:
        src_path, out_path = Path(tmp) / "program.cl", Path(tmp) / "program.bin"
        src_path.write_text(source)
        request.update(source=str(src_path), binary=str(out_path))
        for attempt in range(1, attempts + 1):
            proc = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(request),
                                  capture_output=True, text=True, env=env)
            if proc.returncode == 0:
                return out_path.read_bytes()
            if proc.returncode == _CHILD_BUILD_FAILED:
                raise IsolatedBuildError(f"the compiler refused the program:\n{proc.stderr}",
                                         log=proc.stderr)
            if proc.returncode > 0:
                raise IsolatedBuildError(f"the build process failed (exit {proc.returncode}):\n"
                                         f"{proc.stderr[-4000:]}")
            log.warning("the process building a program for %s died by signal %d (attempt %d "
                        "of %d)", device.name, -proc.returncode, attempt, attempts)
        raise IsolatedBuildError(f"the process building a program for {device.name} died by "
                                 f"signal {-proc.returncode} {attempts} times:\n"
                                 f"{proc.stderr[-4000:]}", crashed=True)


_CHILD_BUILD_FAILED = 3
# The child: pyopencl only (no clradix import), the device found by its names, the source built
# from scratch (no binary cache), the binary written where the parent asked.
_CHILD = f"""
import json, sys
import pyopencl as cl
req = json.loads(sys.stdin.read())
dev = next(d for p in cl.get_platforms() if p.name == req["platform"] for d in p.get_devices()
           if d.name == req["device"] and d.driver_version == req["driver"])
ctx = cl.Context([dev])
with open(req["source"]) as f:
    src = f.read()
try:
    prg = cl.Program(ctx, src).build(options=req["options"], cache_dir=False)
except cl.RuntimeError as exc:
    sys.stderr.write(str(exc))
    sys.exit({_CHILD_BUILD_FAILED})
with open(req["binary"], "wb") as f:
    f.write(prg.binaries[0])
"""


def load_binary(context, device, binary: bytes, options: List[str]):
    """A built program of ``context`` from the binary ``build_isolated`` returned."""
    import pyopencl as cl
    return cl.Program(context, [device], [binary]).build(
        options=list(options), cache_dir=False)  # type: ignore[arg-type]  # False: no disk cache

