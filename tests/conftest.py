"""Test devices and shared fixtures.

Tests run on clradix's default device (PoCL on the CPU on a machine without a GPU). Two ways pick
other devices (only those that build kernels; a choice that leaves none is a usage error):

- ``CLRADIX_TEST_DEVICES``: ``all`` for every device, or a comma-separated list of substrings of
  "platform name device name" (case-insensitive), e.g. ``intel`` or ``pocl,nvidia``;
- ``PYOPENCL_TEST``, pyopencl's own: ``platform[:device,device][;platform...]``, each a number
  or a substring of the name, e.g. ``portable`` or ``0:1`` (read when ``CLRADIX_TEST_DEVICES``
  is not set).

Every test that takes the ``ctx`` fixture runs once per device, on one context per device for
the whole session: built programs are cached per context (``clradix.core.render.programs_for``), so a
kernel configuration is built once however many tests use it.
"""

import atexit
import os
import shutil
import tempfile
import threading
import zlib

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools  # noqa: F401  (cl.tools)
import pytest

import clradix
from clradix.core.device import all_devices, can_build, default_device
from clradix.core.keys import key_codec

from reference import bits_of, compare_topk, numpy_orders, ref_argsort


# Tests never see the user's autotuning cache (tests of the cache point it elsewhere themselves).
os.environ["CLRADIX_CACHE_DIR"] = tempfile.mkdtemp(prefix="clradix-test-cache-")
atexit.register(shutil.rmtree, os.environ["CLRADIX_CACHE_DIR"], ignore_errors=True)
os.environ.pop("CLRADIX_NO_TUNING", None)


def _test_devices():
    spec = os.environ.get("CLRADIX_TEST_DEVICES", "").strip()
    if not spec and os.environ.get("PYOPENCL_TEST", "").strip():
        try:
            chosen = cl.tools.get_test_platforms_and_devices()
        except RuntimeError as exc:  # pyopencl's "no platform/device matching ..."
            raise pytest.UsageError(f"PYOPENCL_TEST={os.environ['PYOPENCL_TEST']!r}: {exc}")
        picked = [d for _, devs in chosen for d in devs if can_build(d)]
        if not picked:
            raise pytest.UsageError(f"PYOPENCL_TEST={os.environ['PYOPENCL_TEST']!r} matches no "
                                    "device that builds kernels")
        return picked
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

# The key types that stand for every other one where PoCL runs a GPU-shaped work-group route
# (barriers, local memory; each key type is a program of its own that PoCL compiles for tens of
# seconds on two cores) in the every-dtype tests: every width (1, 2, 4, 8 bytes) and every key
# transform (unsigned, signed, float), the float transform at both of its ends (half and double).
# Top-k's tests of distributions and rows run float32, uint32 and int64 on its routes there
# too; the CPUs' own routes, Intel's CPU runtime (CI runs the same files there, every key type)
# and GPUs test every key type on them.
POCL_ROUTE_DTYPES = frozenset(np.dtype(d) for d in ("uint8", "float16", "int32", "float64"))


def on_pocl(ctx):
    """Whether ``ctx``'s device is PoCL's (where a GPU-shaped program costs seconds to compile:
    tests keep one configuration per rendered program there, the rest run on Intel's runtime)."""
    return "portable computing language" in ctx.devices[0].platform.name.lower()


def skip_route_dtype_on_pocl(ctx, dtype):
    """Skip ``dtype`` on a GPU-shaped route of the PoCL device unless it is one of
    :data:`POCL_ROUTE_DTYPES`."""
    if on_pocl(ctx) and np.dtype(dtype) not in POCL_ROUTE_DTYPES:
        pytest.skip(f"{np.dtype(dtype)} on PoCL's work-group route: its width and transform are "
                    f"tested by POCL_ROUTE_DTYPES; every key type runs on Intel's runtime")


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


def fake_profile(**kw):
    """A DeviceProfile of a made-up GPU (planner tests): ``kw`` replaces any field."""
    from clradix.core.device import DeviceProfile
    base = dict(name="Test GPU", vendor="Vendor", platform="Platform", driver_version="1.0",
                device_type="gpu", compute_units=16, local_mem_bytes=48 * 1024, max_wg_size=1024,
                max_alloc_bytes=2 ** 32, extensions=frozenset())
    base.update(kw)
    return DeviceProfile(**base)


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


SORT_OPS = ("keys", "pairs", "argsort")


def check_sort(queue, sorter, keys, op="keys", *, values=None, descending=False, begin_bit=0,
               end_bit=None, allocator=None, out=False, pad=0, values_as_buffer=False,
               to_device=None, what=""):
    """Sort or argsort ``keys`` (a numpy array) on the device, read the results back and compare
    them bit for bit with numpy. Returns argsort's index array as the call returned it (to check
    where its memory came from), None for a sort.

    ``op``: "keys" sorts the keys alone, "pairs" the keys with ``values`` (a numpy array of any
    value width, compared byte for byte; None: each key's position as uint32, so the values read
    back are the order itself), "argsort" returns the order and must leave the keys alone.
    ``sorter``: a clradix.Sorter, or None for the numpy-like clradix.sort / clradix.argsort (which
    leave their input alone; "keys" and "argsort" only, no bit range).

    The reference is clradix's order (``ref_argsort``: stable, NaN last, -0.0 == +0.0, the bit
    range and direction asked for); sorts of every bit in ascending order are also compared with
    numpy's own np.sort / np.argsort (kind="stable"), independently of that reference, where
    numpy orders the type (not bfloat16).

    ``allocator`` goes to the call (temporaries, argsort's index array); ``out=True`` argsorts
    into a given index array that is poisoned first (so an index the kernels never write cannot
    pass). ``pad`` puts the keys ``pad`` elements into a larger array whose other elements must
    keep their bits. ``values_as_buffer`` passes the values as a plain Buffer with
    ``value_dtype=`` (instead of an Array, which says its dtype). ``to_device`` copies a host
    array to the device (default: ``cl_array.to_device`` on ``queue``). ``what`` heads every
    failure message.
    """
    assert op in SORT_OPS, op
    to_device = to_device or (lambda a: cl_array.to_device(queue, a))
    codec = key_codec(keys.dtype)
    full = (begin_bit, codec.bits if end_bit is None else end_bit) == (0, codec.bits)
    bits = dict(begin_bit=begin_bit, end_bit=end_bit)
    order = ref_argsort(keys, descending=descending, **bits)
    what = f"{what} {op} of {keys.size} {keys.dtype} keys{' descending' if descending else ''}" + (
        "" if full else f" bits [{begin_bit}, {end_bit})")
    n = keys.size
    around = keys
    if pad:
        # the padding: fresh bits of the keys' type, seeded by the size (repeatable)
        pad_bits = np.random.default_rng(n).integers(0, 256, 2 * pad * keys.itemsize, np.uint8)
        around = np.concatenate([pad_bits[:pad * keys.itemsize].view(keys.dtype), keys,
                                 pad_bits[pad * keys.itemsize:].view(keys.dtype)])
    d_all = to_device(around)
    d_keys = d_all[pad:pad + n] if pad else d_all
    if op == "argsort":
        if sorter is None:
            assert not out and full, "clradix.argsort takes no out= or bit range"
            idx = clradix.argsort(d_keys, descending=descending)
        else:
            given = None
            if out:
                given = cl_array.empty(queue, n, np.uint32)
                if n:
                    poison(queue, given.base_data)
            idx, evt = sorter.argsort(queue, d_keys, descending=descending, allocator=allocator,
                                      out=given, **bits)
            assert isinstance(evt, cl.Event) and (given is None or idx is given), what
            evt.wait()
        got = idx.get()
        # numpy-like argsort: int64 (numpy's intp); Sorter.argsort: uint32 below 2**32 keys
        assert got.dtype == (np.int64 if sorter is None else np.uint32), what
        assert got.shape == (n,), what
        np.testing.assert_array_equal(got, order, err_msg=what)
        if full and not descending and numpy_orders(keys.dtype):
            np.testing.assert_array_equal(got, np.argsort(keys, kind="stable"), err_msg=what)
        np.testing.assert_array_equal(bits_of(d_all.get()), bits_of(around),
                                      err_msg=f"{what}: the keys changed")
        return idx
    d_vals = vals = None
    if op == "pairs":
        vals = np.arange(n, dtype=np.uint32) if values is None else values
        d_vals = to_device(vals)
    if sorter is None:
        assert op == "keys" and full, "clradix.sort sorts keys alone, by every bit"
        result = clradix.sort(d_keys, descending=descending)
        assert result is not d_keys, what
        np.testing.assert_array_equal(bits_of(d_keys.get()), bits_of(keys),
                                      err_msg=f"{what}: clradix.sort changed its input")
        got_all = np.concatenate([around[:pad], result.get(), around[pad + n:]])
    else:
        kw = dict(values=d_vals)
        if values_as_buffer:
            kw = dict(values=d_vals.data, value_dtype=vals.dtype)
        evt = sorter.sort(queue, d_keys, descending=descending, allocator=allocator, **kw, **bits)
        assert isinstance(evt, cl.Event), what
        evt.wait()
        got_all = d_all.get()
    got = got_all[pad:pad + n]
    np.testing.assert_array_equal(bits_of(got), bits_of(keys[order]), err_msg=what)
    if full and not descending and numpy_orders(keys.dtype):
        np.testing.assert_array_equal(bits_of(got), bits_of(np.sort(keys, kind="stable")),
                                      err_msg=what)
    if pad:
        np.testing.assert_array_equal(bits_of(got_all[:pad]), bits_of(around[:pad]),
                                      err_msg=f"{what}: an element before the keys changed")
        np.testing.assert_array_equal(bits_of(got_all[pad + n:]), bits_of(around[pad + n:]),
                                      err_msg=f"{what}: an element after the keys changed")
    if vals is not None:
        np.testing.assert_array_equal(d_vals.get().view(np.uint8), vals[order].view(np.uint8),
                                      err_msg=f"{what}: values")


def check_topk(queue, x, k, largest=True, sorted_=True, selector=None, to_device=None):
    """Top-k of ``x`` (a 1-D or 2-D numpy array; each row) on the device, compared bit for bit
    with numpy (``compare_topk``: ties by position, NaN the largest; unsorted results as sets),
    the input unchanged and the outputs' shapes and dtypes checked. ``selector``: a
    clradix.Selector, or None for clradix.topk. Returns (values, indices) as the call returned
    them."""
    to_device = to_device or (lambda a: cl_array.to_device(queue, a))
    a = to_device(x)
    if selector is None:
        values, indices = clradix.topk(a, k, largest=largest, sorted=sorted_)
    else:
        values, indices, evt = selector.topk(queue, a, k, largest=largest, sorted=sorted_)
        assert isinstance(evt, cl.Event)
        evt.wait()
    assert values.shape == indices.shape == x.shape[:-1] + (k,)
    # numpy-like topk: int64 indices (numpy's intp); Selector.topk: uint32 below 2**32 keys
    assert values.dtype == x.dtype
    assert indices.dtype == (np.int64 if selector is None else np.uint32)
    compare_topk(x, k, values, indices, largest, sorted_)
    np.testing.assert_array_equal(bits_of(a.get()), bits_of(x), err_msg="top-k changed its input")
    return values, indices


def one_group_tile(sorter, device, dtype, value_dtype=None):
    """The most keys ``sorter``'s planner sorts with one work-group on ``device`` (its plan for
    fewer keys may use a smaller tile: os_small's tile follows n). On a device whose planner
    sorts no size with one work-group (CPUs: the chunked sort), 4096: sizes below and above it
    still differ in chunks and passes."""
    if sorter.plan(device, dtype, 1, value_dtype).algorithm != "single_wg":
        return 4096
    lo, hi = 1, 1 << 17
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sorter.plan(device, dtype, mid, value_dtype).algorithm == "single_wg":
            lo = mid
        else:
            hi = mid - 1
    return lo
