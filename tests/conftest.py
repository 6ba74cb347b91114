"""Test devices and shared fixtures.

Tests run on clradix's default device (PoCL on the CPU on a machine without a GPU). Set
``CLRADIX_TEST_DEVICES`` to ``all`` to run on every device that builds kernels, or to a
comma-separated list of name substrings to pick devices.
"""

import atexit
import os
import shutil
import tempfile
import threading
import zlib

import numpy as np
import pyopencl as cl
import pyopencl.tools  # noqa: F401  (cl.tools)
import pytest

from clradix.device import all_devices, can_build, default_device


# Tests never see the user's autotuning cache (tests of the cache point it elsewhere themselves).
os.environ["CLRADIX_CACHE_DIR"] = tempfile.mkdtemp(prefix="clradix-test-cache-")
atexit.register(shutil.rmtree, os.environ["CLRADIX_CACHE_DIR"], ignore_errors=True)
os.environ.pop("CLRADIX_NO_TUNING", None)


def _test_devices():
    spec = os.environ.get("CLRADIX_TEST_DEVICES", "").strip()
    if not spec:
        return [default_device()]
    usable = [d for d in all_devices() if can_build(d)]
    if spec == "all":
        return usable
    wanted = [s.strip().lower() for s in spec.split(",") if s.strip()]
    picked = [d for d in usable if any(w in f"{d.platform.name} {d.name}".lower() for w in wanted)]
    if not picked:
        raise pytest.UsageError(f"CLRADIX_TEST_DEVICES={spec!r} matches no usable device")
    return picked


_DEVICES = _test_devices()


@pytest.fixture(scope="session", params=_DEVICES, ids=lambda d: d.name.strip()[:40])
def ctx(request):
    return cl.Context([request.param])


@pytest.fixture(scope="session")
def queue(ctx):
    return cl.CommandQueue(ctx)


@pytest.fixture
def rng(request):
    """A fresh generator per test, seeded from the test's name (repeatable, different per test)."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def poison(queue, buf, nbytes=None, byte=0xA5):
    """Fill ``buf`` with a poison byte pattern (so unwritten output cannot pass for correct)."""
    nbytes = buf.size if nbytes is None else nbytes
    if nbytes:
        cl.enqueue_fill_buffer(queue, buf, np.uint8(byte), 0, nbytes).wait()


@pytest.fixture
def poisoning_allocator(queue):
    """An allocator whose buffers start full of poison, to catch reads of unwritten temporaries."""
    allocated = []

    def alloc(nbytes):
        buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
        poison(queue, buf)
        allocated.append(nbytes)
        return buf
    alloc.allocated = allocated
    return alloc


class FailingAllocator:
    """An allocator that succeeds ``ok`` times and then fails: ``how`` = "cl" raises an OpenCL
    MemoryError (out of device memory), "python" the builtin MemoryError, "huge" asks the driver
    for more than the device's largest allocation; ``asked`` records every request."""

    def __init__(self, queue, how, ok=0):
        self.inner = cl.tools.ImmediateAllocator(queue)
        self.queue, self.how, self.ok, self.asked = queue, how, ok, []

    def __call__(self, nbytes):
        self.asked.append(nbytes)
        if len(self.asked) <= self.ok:
            return self.inner(nbytes)
        if self.how == "cl":
            raise cl.MemoryError(cl._cl._ErrorRecord(
                "clCreateBuffer", cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE, "out of memory"))
        if self.how == "python":
            raise MemoryError("host out of memory")
        return self.inner(self.queue.device.max_mem_alloc_size * 4 + nbytes)


def returns_within(fn, release, seconds=60):
    """Run ``fn`` in a daemon thread; True when it returned within ``seconds``. ``release`` (say,
    completing a user event the calls wait for) runs either way, then the thread is joined: a
    call that waits on the host for that event would otherwise never return. A hang check, not
    a speed one. Exceptions from ``fn`` are raised here."""
    done = threading.Event()
    err = []

    def body():
        try:
            fn()
        except BaseException as exc:  # re-raised in the test's thread
            err.append(exc)
        done.set()
    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    ok = done.wait(seconds)
    release()
    thread.join()
    if err:
        raise err[0]
    return ok
