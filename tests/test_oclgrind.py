"""Every kernel family on the oclgrind simulator with its checkers on: any report fails the test.

Runs only when ``CLRADIX_TEST_DEVICES`` names oclgrind (Debian's ``oclgrind`` package, registered
with the OpenCL loader by ``scripts/oclgrind-icd.sh``; ``.ci/run`` does both)::

    OCL_ICD_VENDORS=$(bash scripts/oclgrind-icd.sh) CLRADIX_TEST_DEVICES=oclgrind \\
        PYOPENCL_NO_CACHE=1 python -m pytest -q tests/test_oclgrind.py

(``PYOPENCL_NO_CACHE=1`` builds from source, so that reports quote the kernel source lines.)

oclgrind interprets every work-item and checks every access: data races in local and global
memory, between work-groups too, including writes of equal values (OCLGRIND_DATA_RACES,
OCLGRIND_UNIFORM_WRITES); reads and writes out of bounds (always on); uses of uninitialised values
(OCLGRIND_UNINITIALIZED); and invalid OpenCL calls (OCLGRIND_CHECK_API). Kernel reports go to a log
file (OCLGRIND_LOG), API reports to stderr; a case fails when either gained a report, and every
case also compares its results with numpy. The simulator is slow, so sizes are tiny, but the
work-groups are small too: every case has several tiles (several reduce-then-scan blocks; an
onesweep status ring that wraps around).

Shortcomings of oclgrind 21.10 (Debian 12's) are worked around here:

- its uninitialised-value checker does not see ``clEnqueueFillBuffer`` writing memory (it would
  report onesweep's zeroed tables), so fills are made host writes of the same bytes;
- that checker keeps what it knows of a released buffer for the next buffer that takes its
  number (its size too: it then reports reads of memory the kernels wrote), so no buffer is
  released while the module runs: the tests keep their arrays, sorts take their temporaries from
  an allocator that keeps them, and top-k's stay in its memory pool;
- that checker stops a kernel at clang's ``freeze`` instruction, which clang makes of a ``/`` and
  ``%`` by the same value unknown at compile time (onesweep's ring sizes that are not a power of
  two, the row length in top-k's global-sort route): those cases run in a second context without
  it (races, bounds and API calls are still checked);
- pyopencl asks every device for NVIDIA's compute capability before a kernel call (and expects the
  error it gets elsewhere), which the API checker reports: here the answer is None without asking.
"""

import os
import tempfile

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.characterize
import pytest

import clradix
from clradix.drivers import onesweep
from clradix.dispatch import segments as segmented
from clradix.core import sizes
from clradix.core.device import DeviceProfile
from clradix.core.keys import key_codec
from clradix.planning.families import families_for
from clradix.policies.families import GridPolicy, RunsPolicy, SearchPolicy
from clradix.policies.fit import ranking_backends
from clradix.policies.sort import RANKINGS

import conftest
from data import float_specials, overfull_bucket
from test_segmented import check_segments

pytestmark = pytest.mark.skipif(
    "oclgrind" not in os.environ.get("CLRADIX_TEST_DEVICES", "").lower(),
    reason="oclgrind checks run with CLRADIX_TEST_DEVICES=oclgrind (see the module docstring)")

# The checkers (oclgrind reads them when a context is created).
CHECKS = {
    "OCLGRIND_DATA_RACES": "1",
    "OCLGRIND_UNIFORM_WRITES": "1",
    "OCLGRIND_UNINITIALIZED": "1",
    "OCLGRIND_CHECK_API": "1",
}
CHECKS_BUT_UNINITIALIZED = {k: v for k, v in CHECKS.items() if k != "OCLGRIND_UNINITIALIZED"}

DTYPES = [np.dtype(d) for d in ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                                "int64", "float16", "float32", "float64")]
# The keys of the main matrix (every width, unsigned and float); the rest run in fewer cases.
MAIN_DTYPES = [np.dtype(d) for d in ("uint8", "uint16", "uint32", "uint64", "float32", "float64")]
OTHER_DTYPES = [d for d in DTYPES if d not in MAIN_DTYPES]
# The values of key-value cases: every width, each with keys of several widths.
VALUE_DTYPE = {"uint8": "V16", "uint16": "uint8", "uint32": "uint64", "uint64": "uint16",
               "int8": "uint32", "int16": "uint64", "int32": "uint16", "int64": "V16",
               "float16": "uint8", "float32": "uint32", "float64": "V16"}

# Tiny tiles, so that tiny sorts have several: each algorithm's policy and its size of sort.
WG, IPT = 32, 2
TILE = WG * IPT
POLICIES = {
    "single_wg": dict(algorithm="single_wg", wg_size=WG, items_per_thread=4),
    "reduce_then_scan": dict(algorithm="reduce_then_scan", wg_size=WG, items_per_thread=IPT,
                             blocks_per_cu=2),
    # 16-wide (emulated) subgroups, two per work-group; a ring of 4 tiles, look-back 2
    "onesweep": dict(algorithm="onesweep", wg_size=WG, items_per_thread=IPT, ranking="local",
                     sg_size=16, ring_slots=4, lookback=2),
    # the CPUs' chunked sort: chunks of at least 64 keys, 4 per compute unit
    "chunks": dict(algorithm="chunks", wg_size=1, items_per_thread=64, blocks_per_cu=4),
}
SIZES = {"single_wg": 4 * WG - 27, "reduce_then_scan": 5 * TILE + 7, "onesweep": 5 * TILE + 5,
         "chunks": 5 * TILE + 9}


class Grind:
    """An oclgrind context with the checkers of ``env``, its reports, and the Sorters built on it."""

    def __init__(self, env):
        devices = [d for p in cl.get_platforms() if "oclgrind" in p.name.lower()
                   for d in p.get_devices()]
        if not devices:
            pytest.fail("CLRADIX_TEST_DEVICES names oclgrind, but no oclgrind platform is "
                        "registered (OCL_ICD_VENDORS=$(bash scripts/oclgrind-icd.sh))")
        fd, self.log = tempfile.mkstemp(prefix="clradix-oclgrind-", suffix=".log")
        os.close(fd)
        env = dict(env, OCLGRIND_LOG=self.log)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            self.context = cl.Context([devices[0]])
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.queue = cl.CommandQueue(self.context)
        self.profile = DeviceProfile.from_device(devices[0])
        self._read = 0
        self._sorters = {}
        self._kept = []

    def alloc(self, nbytes):
        """An allocator whose buffers live as long as the module (see the module docstring)."""
        buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, max(int(nbytes), 1))
        self._kept.append(buf)
        return buf

    def keep(self, *objs):
        self._kept.extend(objs)
        return objs[0] if len(objs) == 1 else objs

    def to_device(self, a):
        return self.keep(cl_array.to_device(self.queue, a, allocator=self.alloc))

    def sorter(self, **policy):
        key = tuple(sorted(policy.items()))
        if key not in self._sorters:
            self._sorters[key] = clradix.Sorter(self.context, allocator=self.alloc, **policy)
        return self._sorters[key]

    def new_reports(self):
        """The kernel reports logged since the last call."""
        self.queue.finish()
        with open(self.log, errors="replace") as f:
            f.seek(self._read)
            text = f.read()
            self._read = f.tell()
        return text


@pytest.fixture(scope="module")
def grind():
    return Grind(CHECKS)


@pytest.fixture(scope="module")
def grind_without_uninitialized():
    return Grind(CHECKS_BUT_UNINITIALIZED)


def _fill_by_writing(queue, mem, pattern, offset, size, wait_for=None):
    """clEnqueueFillBuffer as a host write of the same bytes (see the module docstring)."""
    pattern = np.frombuffer(np.ascontiguousarray(pattern).tobytes(), np.uint8)
    data = np.tile(pattern, size // pattern.size)
    return cl.enqueue_copy(queue, mem, data, dst_offset=offset, wait_for=wait_for,
                           is_blocking=True)


def _checked(grind, capfd, monkeypatch):
    """Yields ``grind`` for one case, then fails the case if oclgrind reported anything."""
    # oclgrind reads OCLGRIND_CHECK_API at each refused call, not when the context is made (as the
    # other checkers), so it stays set for the case: without it API reports are never printed
    monkeypatch.setenv("OCLGRIND_CHECK_API", CHECKS["OCLGRIND_CHECK_API"])
    monkeypatch.setattr(cl, "enqueue_fill_buffer", _fill_by_writing)
    monkeypatch.setattr(pyopencl.characterize, "nv_compute_capability", lambda dev: None)
    grind.new_reports()
    capfd.readouterr()
    yield grind
    kernel_reports = grind.new_reports()
    err = capfd.readouterr().err
    assert not kernel_reports.strip() and "oclgrind" not in err.lower(), (
        "oclgrind reported:\n" + (kernel_reports + "\n" + err)[:20000])


@pytest.fixture
def g(grind, capfd, monkeypatch):
    """The oclgrind context with every checker, for one case."""
    yield from _checked(grind, capfd, monkeypatch)


@pytest.fixture
def g_without_uninitialized(grind_without_uninitialized, capfd, monkeypatch):
    yield from _checked(grind_without_uninitialized, capfd, monkeypatch)


_RACE = "__kernel void race(__global uint *out) { out[0] = (uint)get_global_id(0); }"


def test_checks_can_fail(grind, capfd, monkeypatch):
    """The check every case ends with fails on a kernel report (a data race: every work-item
    writes its id to one word) and on an API report (a read past a buffer's end)."""
    prg = grind.keep(cl.Program(grind.context, _RACE).build())
    buf = grind.alloc(4)
    checked = _checked(grind, capfd, monkeypatch)
    g = next(checked)
    prg.race(g.queue, (64,), (32,), buf)
    with pytest.raises(AssertionError, match="data race"):
        next(checked)
    checked = _checked(grind, capfd, monkeypatch)
    g = next(checked)
    with pytest.raises(cl.Error):
        cl.enqueue_copy(g.queue, np.empty(2, np.uint32), buf, is_blocking=True)
    with pytest.raises(AssertionError, match="clEnqueueReadBuffer"):
        next(checked)


def _values(rng, n, dtype):
    dtype = np.dtype(dtype)
    return rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).view(dtype)


def check_sort(g, sorter, keys, mode, *, rng=None, **kw):
    """Sort (``mode`` "keys" or "pairs", the values of ``VALUE_DTYPE``) or argsort ``keys`` on
    oclgrind, compared with numpy (conftest.check_sort), every buffer kept."""
    values = _values(rng, keys.size, VALUE_DTYPE[keys.dtype.name]) if mode == "pairs" else None
    idx = conftest.check_sort(g.queue, sorter, keys, mode, values=values, to_device=g.to_device,
                              **kw)
    if idx is not None:
        g.keep(idx)


# ----------------------------------------------------------------------------- every algorithm

@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("mode", conftest.SORT_OPS)
@pytest.mark.parametrize("dtype", MAIN_DTYPES, ids=str)
@pytest.mark.parametrize("radix_bits", [2, 4, 8])
@pytest.mark.parametrize("algorithm", list(POLICIES))
def test_sort(g, rng, algorithm, radix_bits, dtype, mode, descending):
    sorter = g.sorter(radix_bits=radix_bits, **POLICIES[algorithm])
    check_sort(g, sorter, float_specials(rng, dtype, SIZES[algorithm]), mode,
               descending=descending, rng=rng)


@pytest.mark.parametrize("mode", conftest.SORT_OPS)
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int64], ids=str)
def test_chunks_write_combining_lines(g, rng, dtype, mode):
    """The chunked scatter through write-combining lines (11-bit digits): chunks of 37 keys
    (lines shared between chunks), half the keys repeating 20 values (whole lines copied out),
    keys 3 elements into their buffer (lines not aligned to it)."""
    sorter = g.sorter(algorithm="chunks", radix_bits=11, wg_size=1, items_per_thread=37,
                      blocks_per_cu=8)
    keys = float_specials(rng, dtype, 700)
    keys[:350] = keys[rng.integers(0, 20, 350)]
    check_sort(g, sorter, keys, mode, pad=3, rng=rng)


@pytest.mark.parametrize("mode", conftest.SORT_OPS)
@pytest.mark.parametrize("dtype", [np.uint16, np.float32, np.int64], ids=str)
def test_chunk_buckets(g, rng, dtype, mode):
    """The chunked sort's buckets (one pass by the top digit, then a work-item per bucket): a
    bound of 40 keys, so that buckets are sorted by insertion, by passes in the cache and split
    first (half the keys repeat 20 values: large buckets), keys 3 elements into their buffer."""
    sorter = g.sorter(algorithm="chunks", bucket_keys=40, wg_size=1, items_per_thread=37,
                      blocks_per_cu=8)
    keys = float_specials(rng, dtype, 900)
    keys[:450] = keys[rng.integers(0, 20, 450)]
    check_sort(g, sorter, keys, mode, pad=3, rng=rng)


@pytest.mark.parametrize("dtype, mode", [(np.uint32, "pairs"), (np.float32, "argsort")],
                         ids=["uint32-pairs", "float32-argsort"])
def test_chunk_buckets_wide_runs(g, rng, dtype, mode):
    """A bucket of 32-bit keys over WIDE_MIN keys that differ in 22 bits: its passes of 12-bit
    digits (cb_lsd_based_wide), beside buckets of 9-bit passes."""
    sorter = g.sorter(algorithm="chunks", wg_size=1, items_per_thread=1024, blocks_per_cu=2)
    keys = np.empty(4700, np.uint32)
    keys[:4400] = np.uint32(0x3F800000) + rng.integers(0, 1 << 22, 4400).astype(np.uint32)
    keys[4400:] = rng.integers(0, 1 << 32, 300, dtype=np.uint64).astype(np.uint32)
    check_sort(g, sorter, keys.view(dtype), mode, rng=rng)


@pytest.mark.parametrize("dtype, mode", [(np.float32, "keys"), (np.float32, "argsort"),
                                         (np.float64, "pairs")],
                         ids=["float32-keys", "float32-argsort", "float64-pairs"])
def test_chunk_buckets_overfull_unaligned(g, rng, dtype, mode):
    """Buckets over the bound of 40 keys that span hundreds of fine values from an unaligned one
    (data.overfull_bucket), counted less it: the split, the insertion sorts and the passes of
    the parts with the bucket's base. 4099 keys: a fine digit of 10 bits, the fewest in which
    such a bucket is split above the fine digit; ranges of 2^28 float32 and 2^25 float64 keys,
    where the base saves a pass of 9 and 8 bits; keys of a seed whose bucket starts at a value
    the split's digit does not align (about half the seeds at this size). Argsort descends."""
    sorter = g.sorter(algorithm="chunks", bucket_keys=40, wg_size=1, items_per_thread=37,
                      blocks_per_cu=8)
    descending = mode == "argsort"
    spread = 28 if dtype == np.float32 else 25
    keys = overfull_bucket(np.random.default_rng(3), dtype, 4099, spread, descending)
    check_sort(g, sorter, keys, mode, descending=descending, pad=3, rng=rng)


@pytest.mark.parametrize("mode", conftest.SORT_OPS)
@pytest.mark.parametrize("dtype", [np.uint16, np.float32, np.int64], ids=str)
def test_single_wg_8bit_ranking(g, rng, dtype, mode):
    """os_small (single_wg with 8-bit digits): two 16-wide (emulated) subgroups rank every digit
    in local memory; a bit range of two digits and one of a part of a digit too."""
    sorter = g.sorter(algorithm="single_wg", radix_bits=8, wg_size=WG, items_per_thread=4,
                      ranking="local", sg_size=16)
    keys = float_specials(rng, dtype, 4 * WG - 27)
    check_sort(g, sorter, keys, mode, rng=rng)
    check_sort(g, sorter, keys, mode, descending=True, rng=rng)
    if mode == "pairs":
        check_sort(g, sorter, keys, mode, begin_bit=3, end_bit=14, rng=rng)


@pytest.mark.parametrize("mode", conftest.SORT_OPS)
def test_reduce_then_scan_fused_scan(g, rng, mode):
    """reduce-then-scan whose scatter blocks scan the digit counts themselves (fused_scan)."""
    sorter = g.sorter(radix_bits=8, fused_scan=True, **POLICIES["reduce_then_scan"])
    keys = float_specials(rng, np.float32, SIZES["reduce_then_scan"])
    check_sort(g, sorter, keys, mode, rng=rng)
    check_sort(g, sorter, keys, mode, descending=True, begin_bit=4, end_bit=28, rng=rng)


@pytest.mark.parametrize("dtype", OTHER_DTYPES, ids=str)
@pytest.mark.parametrize("algorithm", list(POLICIES))
def test_other_key_kinds(g, rng, algorithm, dtype):
    """Signed integers and float16: key-value, both directions."""
    sorter = g.sorter(radix_bits=4, **POLICIES[algorithm])
    keys = float_specials(rng, dtype, SIZES[algorithm])
    check_sort(g, sorter, keys, "pairs", rng=rng)
    check_sort(g, sorter, keys, "pairs", descending=True, rng=rng)


@pytest.mark.parametrize("algorithm", list(POLICIES))
def test_bit_ranges_and_no_bits(g, rng, algorithm):
    """A bit range inside the key, and an argsort by no bits (the iota kernel)."""
    sorter = g.sorter(radix_bits=4, **POLICIES[algorithm])
    keys = float_specials(rng, np.uint32, SIZES[algorithm])
    check_sort(g, sorter, keys, "pairs", begin_bit=3, end_bit=13, rng=rng)
    check_sort(g, sorter, keys, "argsort", begin_bit=5, end_bit=5)


@pytest.mark.parametrize("algorithm", ["reduce_then_scan", "onesweep"])
def test_64bit_offsets(g, rng, algorithm, monkeypatch):
    """The kernels with 64-bit indices and offsets (used from 2**31 keys on)."""
    monkeypatch.setattr(sizes, "INDEX32_LIMIT", 0)
    policy = POLICIES[algorithm]
    sorter = clradix.Sorter(g.context, radix_bits=8, allocator=g.alloc, **policy)
    for mode in conftest.SORT_OPS:
        check_sort(g, sorter, float_specials(rng, np.float32, SIZES.get(algorithm, 5 * TILE + 3)),
                   mode, rng=rng)


# ----------------------------------------------------------------------------- onesweep

def _onesweep(g, ranking, **kw):
    # "local" works on every device: only the hardware back-ends may be missing here
    if ranking != "local" and ranking not in ranking_backends(g.profile):
        pytest.skip(f"the {ranking} ranking back-end is not available on oclgrind")
    pol = dict(POLICIES["onesweep"], ranking=ranking, sg_size=32 if ranking == "ptx" else 16)
    pol.update(kw)
    return g.sorter(**pol)


ONESWEEP_CASES = {
    # a ring of 4 tiles, wrapping around every 4 tiles
    "ring-wrap": dict(),
    # every look-back counts its predecessors' digits from their keys
    "force-fallback": dict(force_fallback=True),
    # look-back falls back at once on a predecessor that has not published
    "spin-limit-1": dict(spin_limit=1),
    # a look-back of one tile (only a predecessor's inclusive prefix will do), a ring of 2
    "lookback-1": dict(ring_slots=2, lookback=1),
}


def _onesweep_case(g, rng, sorter):
    n = 10 * TILE + 3
    check_sort(g, sorter, float_specials(rng, np.float32, n), "pairs", rng=rng)
    check_sort(g, sorter, float_specials(rng, np.uint64, n), "argsort", descending=True)


@pytest.mark.parametrize("case", list(ONESWEEP_CASES))
@pytest.mark.parametrize("ranking", RANKINGS)
def test_onesweep(g, rng, ranking, case):
    for radix_bits in (4, 8):
        _onesweep_case(g, rng, _onesweep(g, ranking, radix_bits=radix_bits,
                                         **ONESWEEP_CASES[case]))


def _last_bit(rng, dtype, n):
    u = float_specials(rng, dtype, 1).view(key_codec(dtype).unsigned_dtype)
    u = np.full(n, u[0])
    one = u.dtype.type(1)
    return ((u & ~one) | (rng.integers(0, 2, n).astype(u.dtype) & one)).view(dtype)


def test_onesweep_ring_not_a_power_of_two(g_without_uninitialized, rng):
    g = g_without_uninitialized
    _onesweep_case(g, rng, _onesweep(g, "local", radix_bits=8, ring_slots=5, lookback=2))


def test_onesweep_portions(g, rng, monkeypatch):
    """Sorts of several portions (launches per pass; from 2**28 keys on)."""
    monkeypatch.setattr(onesweep, "PORTION", 3 * TILE + 5)
    sorter = _onesweep(g, "local", radix_bits=8)
    check_sort(g, sorter, float_specials(rng, np.float64, 11 * TILE + 1), "pairs", rng=rng)
    check_sort(g, sorter, float_specials(rng, np.uint16, 7 * TILE), "argsort", descending=True)


# ----------------------------------------------------------------------------- top-k
# The one place of the top-k entry point, ``clradix.topk(array, k, largest=, sorted=)`` returning
# (values, indices) pyopencl arrays, of a 1-D array or of each row of a 2-D one. A case is
# (shape, k, largest, sorted, dtype); k == -1 stands for the whole row.

TOPK_CASES = [
    (shape, k, largest, srt, dtype)
    for shape in ((300,), (3, 70))
    for k in (1, 5, -1)
    for largest, srt in ((True, True), (False, True), (True, False))
    for dtype in ("float32", "uint64")
] + [((257,), 5, True, True, dt) for dt in ("uint8", "int16", "float64")]


@pytest.mark.parametrize("shape,k,largest,srt,dtype", TOPK_CASES,
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_topk(g, rng, shape, k, largest, srt, dtype):
    a = float_specials(rng, np.dtype(dtype), int(np.prod(shape))).reshape(shape)
    k = shape[-1] if k == -1 else k
    g.keep(*conftest.check_topk(g.queue, a, k, largest, srt, to_device=g.to_device))


@pytest.mark.parametrize("shape,k", [((700,), 5), ((3, 700), 40), ((2, 130), 130)])
def test_topk_chunks(g, rng, shape, k):
    """The CPUs' chunked top-k with chunks of 50 keys: buffer refills, several chunks a row,
    the merges."""
    sel = clradix.Selector(g.context)
    if not g.context.devices[0].type & cl.device_type.CPU:
        pytest.skip("the chunked top-k is the CPUs' route")
    sel.overrides.update(chunk_keys=50)
    a = float_specials(rng, np.float32, int(np.prod(shape))).reshape(shape)
    for largest in (True, False):
        g.keep(*conftest.check_topk(g.queue, a, k, largest, True, selector=sel,
                                    to_device=g.to_device))


@pytest.mark.parametrize("dtype", ["float32", "uint64"])
def test_topk_chunks_ordered_rows(g, dtype):
    """The chunked top-k's radix selection over ordered rows (rising, rising then falling, all
    equal): chunks of 50 keys fill the buffer, so every selection runs its digit levels and
    partitions, position digits included (equal keys)."""
    if not g.context.devices[0].type & cl.device_type.CPU:
        pytest.skip("the chunked top-k is the CPUs' route")
    sel = clradix.Selector(g.context)
    sel.overrides.update(chunk_keys=50)
    half = np.arange(150)
    for row in (np.arange(300), np.concatenate([half, half[::-1]]), np.full(300, 9)):
        g.keep(*conftest.check_topk(g.queue, row.astype(dtype), 7, selector=sel,
                                    to_device=g.to_device))


def test_topk_chunks_sampled_bound(g, rng):
    """The chunked top-k's bound from a sample (rows of 2^14 keys: four chunks of 4096, 64
    samples each): random and rising rows, and a row whose samples beat every other key, so the
    bound is too tight and each chunk is read again without it."""
    if not g.context.devices[0].type & cl.device_type.CPU:
        pytest.skip("the chunked top-k is the CPUs' route")
    sel = clradix.Selector(g.context)
    tight = np.zeros(1 << 14, np.float32)
    tight[32::64] = 1
    for row, k in ((float_specials(rng, np.float32, 1 << 14), 7),
                   (np.arange(1 << 14, dtype=np.float32), 7), (tight, 100)):
        g.keep(*conftest.check_topk(g.queue, row, k, selector=sel, to_device=g.to_device))


@pytest.mark.parametrize("rows", [1, 3])
def test_topk_global_sort_route(g_without_uninitialized, rng, rows):
    """k above the local-memory sort: the selected pairs are ordered by radix sorts, then gathered
    (see the module docstring for why without the uninitialised-value checker)."""
    g = g_without_uninitialized
    sel = clradix.Selector(g.context, sort_size=2, allocator=g.alloc)
    a = float_specials(rng, np.dtype("float32"), rows * 90).reshape(rows, 90)
    g.keep(*conftest.check_topk(g.queue, a, 7, selector=sel, to_device=g.to_device))


def topk_selector(g, single_max=0, **options):
    """A Selector of ``g`` whose rows up to ``single_max`` take the one-launch path (0: every
    row takes the multi-group passes); ``options``: its constructor's, or TopkPolicy fields."""
    public = {n: options.pop(n) for n in list(options) if n in ("wg_size", "items_per_thread",
                                                                 "groups_per_cu", "sort_size")}
    sel = clradix.Selector(g.context, allocator=g.alloc, **public)
    sel.overrides.update(options, single_max=single_max)
    return sel


@pytest.mark.parametrize("shape,k,srt,cap", [((700,), 5, True, None), ((3, 300), 40, False, None),
                                             ((2, 500), 7, True, 8), ((900,), 1, True, 8)],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_topk_passes(g, rng, shape, k, srt, cap):
    """The multi-group passes, several groups per row (the last of a row to finish a pass picks
    the next pivot), and with a candidate buffer of 8 keys (cap): the adaptive re-read."""
    sel = topk_selector(g, wg_size=64, items_per_thread=2, groups_per_cu=4, cand_cap=cap)
    a = float_specials(rng, np.dtype("float32"), int(np.prod(shape))).reshape(shape)
    g.keep(*conftest.check_topk(g.queue, a, k, True, srt, selector=sel, to_device=g.to_device))


def test_topk_threshold_pass(g, rng):
    """The threshold pass (a sample of 128 keys per row, sorted in local memory; one read of
    the row for the candidates), on a row where it holds the k-th and an all-equal row where it
    falls back to the passes."""
    sel = topk_selector(g, wg_size=64, items_per_thread=2, groups_per_cu=4, sample_size=128,
                       sample_min_row=0)
    a = rng.standard_normal((2, 2100)).astype(np.float32)
    a[1] = a[1, 0]
    assert sel.planner.plan_topk(g.queue.device, key_codec(a.dtype), 2, 2100, 3, True).sample == 128
    g.keep(*conftest.check_topk(g.queue, a, 3, True, True, selector=sel, to_device=g.to_device))


def test_topk_single_several_tiles(g, rng):
    """One work-group per row (one launch) over rows of several tiles, and of one tile (kept in
    registers), sorted and not."""
    sel = topk_selector(g, single_max=1 << 20, wg_size=64, items_per_thread=2)
    for shape, k, srt in (((2, 300), 9, True), ((3, 100), 4, False)):
        a = float_specials(rng, np.dtype("float32"), int(np.prod(shape))).reshape(shape)
        g.keep(*conftest.check_topk(g.queue, a, k, True, srt, selector=sel, to_device=g.to_device))


def test_topk_many_tiles_per_group(g, rng):
    """Small tiles, one work-group per row: each group walks several tiles (its per-tile flags
    rotate), with output and candidates written in most of them."""
    sel = topk_selector(g, items_per_thread=2, groups_per_cu=1)
    a = (rng.integers(0, 40, 2 * 1500).astype(np.float32) - 20).reshape(2, 1500)
    for k in (3, 700):
        g.keep(*conftest.check_topk(g.queue, a, k, selector=sel, to_device=g.to_device))


# ----------------------------------------------------------------------------- selection
# The rank select (rank_select.cl.mako, rank_values.cl.mako) through its numpy-like functions:
# work-groups of 32 (tiles of 64 keys, two work-groups a row, a 12-bit first digit), work-items of one with 8-bit
# digits (the middle passes write candidates), and the CPUs' 16-bit slots (one case: each pass
# clears and sums 65536 counts a work-item).

SEL_POLICIES = {
    "groups": clradix.SelectionPolicy(wg_size=WG, items_per_thread=IPT, groups_per_cu=2,
                                      first_bits=12),
    "items": clradix.SelectionPolicy(wg_size=1, items_per_thread=4, digit_bits=8,
                                     groups_per_cu=2),
}


@pytest.mark.parametrize("dtype", ["float32", "uint64", "int16"])
@pytest.mark.parametrize("policy", list(SEL_POLICIES))
def test_selection(g, rng, monkeypatch, policy, dtype):
    """partition, argpartition (two kth), kthvalue, median and quantiles (NaNs among the float
    keys: the nan forms count the others) of two rows."""
    pol = SEL_POLICIES[policy]
    x = float_specials(rng, np.dtype(dtype), 2 * 150).reshape(2, 150)
    d = g.to_device(x)
    kw = dict(policy=pol, allocator=g.alloc)
    ok = key_codec(x.dtype).order_key(x.reshape(-1)).reshape(x.shape)
    order = np.argsort(ok, axis=1, kind="stable")
    part = g.keep(clradix.partition(d, [3, 75], **kw)).get()
    idx = g.keep(clradix.argpartition(d, [3, 75], **kw)).get()
    np.testing.assert_array_equal(np.take_along_axis(ok, idx, 1)[:, [3, 75]],
                                  np.sort(ok, axis=1)[:, [3, 75]])
    np.testing.assert_array_equal(part.view(ok.dtype), np.take_along_axis(x, idx, 1)
                                  .view(ok.dtype))
    v, i = g.keep(*clradix.kthvalue(d, 9, **kw))
    np.testing.assert_array_equal(i.get(), order[:, 8])
    if x.dtype.kind == "f":
        with np.errstate(all="ignore"):
            want = np.array([np.median(r[~np.isnan(r)]) for r in x], x.dtype)
        np.testing.assert_array_equal(g.keep(clradix.nanmedian(d, axis=1, **kw)).get(), want)
    with np.errstate(all="ignore"):
        want = np.quantile(x, [0.2, 0.5], axis=1)
    np.testing.assert_array_equal(g.keep(clradix.quantile(d, [0.2, 0.5], axis=1, **kw)).get(),
                                  want)


def test_selection_16bit_slots(g, rng, monkeypatch):
    """The CPUs' route: work-items of one with histogram slots of 65536 counts each."""
    pol = clradix.SelectionPolicy(wg_size=1, items_per_thread=8, digit_bits=16, groups_per_cu=2)
    x = rng.standard_normal((2, 150)).astype(np.float32)
    d = g.to_device(x)
    np.testing.assert_array_equal(
        g.keep(clradix.median(d, axis=1, policy=pol, allocator=g.alloc)).get(),
        np.median(x, axis=1))


# ----------------------------------------------------------------------------- segmented sort
# Tiles of 64 keys, two emulated subgroups of 16: segments of every tier (empty, one key, one
# tile, past a tile, blocks of two tiles), with keys outside every segment, and rows.

SEG_POLICY = clradix.SegmentPolicy(wg_size=WG, items_per_thread=IPT, ranking="local",
                                   sg_size=16, blocks_per_segment=2)
SEG_LENS = [0, 1, 5, TILE, TILE + 1, 0, 4 * TILE + 5, 2, 40, 3]


@pytest.mark.parametrize("policy", [SEG_POLICY, clradix.SegmentPolicy(algorithm="chunks")],
                         ids=["workgroups", "chunks"])
@pytest.mark.parametrize("mode", conftest.SORT_OPS)
@pytest.mark.parametrize("dtype", ["float32", "uint64", "int8"])
def test_segmented(g, rng, dtype, mode, policy):
    sorter = g.sorter(segment_policy=policy)
    offsets = 3 + np.concatenate([[0], np.cumsum(SEG_LENS)])
    keys = float_specials(rng, np.dtype(dtype), int(offsets[-1]) + 2)
    values = _values(rng, keys.size, VALUE_DTYPE[dtype]) if mode == "pairs" else None
    check_segments(g.queue, sorter, keys, offsets, mode, values=values, descending=True,
                   to_device=g.to_device)
    check_segments(g.queue, sorter, keys, offsets, mode, values=values, begin_bit=2, end_bit=7,
                   offsets_dtype=np.int64, to_device=g.to_device)


@pytest.mark.parametrize("mode", conftest.SORT_OPS)
def test_segmented_chunks_12bit_digits(g, rng, mode):
    """The CPUs' segments of 32-bit keys from 4096 keys up (12-bit digits), beside shorter ones."""
    sorter = g.sorter(segment_policy=clradix.SegmentPolicy(algorithm="chunks"))
    offsets = np.concatenate([[0], np.cumsum([4096, 40, 4100])])
    keys = float_specials(rng, np.dtype(np.float32), int(offsets[-1]))
    values = _values(rng, keys.size, VALUE_DTYPE["float32"]) if mode == "pairs" else None
    check_segments(g.queue, sorter, keys, offsets, mode, values=values, descending=True,
                   to_device=g.to_device)


@pytest.mark.parametrize("policy", [SEG_POLICY, clradix.SegmentPolicy(algorithm="chunks")],
                         ids=["workgroups", "chunks"])
def test_segmented_rows_and_invalid_offsets(g, rng, policy):
    """Rows of half a tile (two per work-group), rows of several tiles, and offsets that fail
    the device's check (nothing is written)."""
    sorter = g.sorter(segment_policy=policy)
    codec = clradix.key_codec(np.float32)
    for rows, row_len in ((5, TILE // 2), (2, 3 * TILE + 1)):
        x = float_specials(rng, np.float32, rows * row_len)
        d = g.to_device(x)
        keys = clradix.core.arguments.operand(d, g.context, "keys")
        segmented.sort_rows(sorter, g.queue, codec, keys, rows, row_len).wait()
        np.testing.assert_array_equal(
            d.get().reshape(rows, row_len),
            np.sort(x.reshape(rows, row_len), axis=-1, kind="stable"))
    x = float_specials(rng, np.float32, 100)
    d = g.to_device(x)
    sorter.sort(g.queue, d, segments=g.to_device(np.array([0, 70, 60, 100], np.int32))).wait()
    np.testing.assert_array_equal(d.get().view(np.uint32), x.view(np.uint32))


# ----------------------------------------------------------------------------- layout kernels

def test_layout_gather_and_widen(g_without_uninitialized, rng, monkeypatch):
    """The numpy-like functions' layout kernels: strided views gathered into rows and the
    results gathered back (sort and argsort along axis 0 of a transposed view, top-k along axis
    0), and 32-bit indices widened to int64 (the widening forced at every size). Without the
    uninitialised-value checker: the gather's coordinates are a division and a remainder by a
    kernel argument, which clang turns into a freeze (above)."""
    g = g_without_uninitialized
    import clradix.dispatch.call as call
    monkeypatch.setattr(call, "WIDEN_FROM", 1)
    x = float_specials(rng, np.float32, 6 * 40).reshape(6, 40)
    d = g.to_device(x)
    view = d.T   # (40, 6), strided
    s = g.keep(clradix.sort(view, 0, allocator=g.alloc))
    i = g.keep(clradix.argsort(view, 0, allocator=g.alloc))
    v, t = g.keep(*clradix.topk(view, 3, 0, allocator=g.alloc))
    w = g.keep(clradix.argsort(d, allocator=g.alloc))
    order0 = np.argsort(_order_key(x.T), axis=0, kind="stable")
    np.testing.assert_array_equal(i.get(), order0)
    np.testing.assert_array_equal(s.get(), np.take_along_axis(x.T, order0, 0))
    assert w.dtype == np.int64
    np.testing.assert_array_equal(w.get(), np.argsort(_order_key(x), axis=-1,
                                                      kind="stable"))
    assert t.shape == (3, 6)


def _order_key(a):
    """clradix's order key of float32 keys (NaN last, -0 == +0), for numpy's argsort."""
    return key_codec(a.dtype).order_key(a.ravel()).reshape(a.shape)


def _given(monkeypatch, g, **policies):
    """The kernel families of ``g``'s context with these policies (by family name) for the
    test."""
    given = families_for(g.context).policies
    for name, policy in policies.items():
        monkeypatch.setitem(given, name, policy)


def test_runs_write_rounds(g_without_uninitialized, rng, monkeypatch):
    """runs_write with 4 positions a work-item in groups of 16: unique's index, inverse and counts with
    NaN each distinct, over several blocks of several rounds and a partial last round, and
    run_lengths with 64-bit positions (index_t ulong) of runs longer than a block. (Results
    from memory pools: the uninitialised-value checker is off, as above.)"""
    g = g_without_uninitialized
    # rounds of 64 positions, blocks of 2 rounds here
    _given(monkeypatch, g, runs=RunsPolicy(wg_size=16, per_item=4, ipt=4, perm_ipt=4))
    x = float_specials(rng, np.dtype(np.float32), 9)[rng.integers(0, 9, 301)]
    got = [a.get() for a in clradix.unique(g.to_device(x), True, True, True, equal_nan=False)]
    for a, b in zip(got, np.unique(x, True, True, True, equal_nan=False)):
        np.testing.assert_array_equal(a, b)
    monkeypatch.setattr(sizes, "INDEX32_LIMIT", 0)
    lengths = rng.choice([1, 2, 3, 150], 12)
    s = np.repeat(np.arange(12, dtype=np.uint16), lengths)
    r = clradix.run_lengths(g.to_device(s))
    np.testing.assert_array_equal(r.values.get(), np.arange(12))
    np.testing.assert_array_equal(r.lengths.get(), lengths)
    np.testing.assert_array_equal(r.starts.get(), np.cumsum(lengths) - lengths)


def test_after_sort_kernels(g_without_uninitialized, rng, monkeypatch):
    """searchsorted (through a sorter; among splitters in local memory), unique (the runs'
    count and write over several blocks, with the inverse scatter and the lengths),
    run_lengths, lexsort and several value arrays (take, iota) with small work-groups. (The
    numpy-like functions' results come from memory pools, whose released blocks the
    uninitialised-value checker would misread: that checker is off.)"""
    g = g_without_uninitialized
    # rounds of one position a work-item: many blocks, of work-items that scan together
    _given(monkeypatch, g, permute=GridPolicy(wg_size=16),
           search=SearchPolicy(wg_size=16, local_levels=0),
           runs=RunsPolicy(wg_size=16, per_item=1, ipt=1, perm_ipt=1))
    x = float_specials(rng, np.dtype(np.float32), 9)[rng.integers(0, 9, 150)]
    d = g.to_device(x)
    for equal_nan in (True, False):
        got = [a.get() for a in clradix.unique(d, True, True, True, equal_nan=equal_nan)]
        want = np.unique(x, True, True, True, equal_nan=equal_nan)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    s = np.sort(x)
    r = clradix.run_lengths(g.to_device(s))
    v, c = np.unique(s, return_counts=True)
    np.testing.assert_array_equal(r.values.get(), v)
    np.testing.assert_array_equal(r.lengths.get(), c)
    order = np.argsort(x, kind="stable")
    for side in ("left", "right"):
        got = clradix.searchsorted(d, g.to_device(x[:40]), side, g.to_device(order))
        np.testing.assert_array_equal(got.get(), np.searchsorted(x, x[:40], side, order))
    # the splitters in local memory: 3 levels
    _given(monkeypatch, g, search=SearchPolicy(wg_size=16, local_levels=3))
    for side in ("left", "right"):
        got = clradix.searchsorted(g.to_device(s), g.to_device(x[:60]), side)
        np.testing.assert_array_equal(got.get(), np.searchsorted(s, x[:60], side))
    keys = [rng.integers(0, 3, 70).astype(np.int16), rng.integers(0, 4, 70).astype(np.uint8)]
    np.testing.assert_array_equal(clradix.lexsort([g.to_device(k) for k in keys]).get(),
                                  np.lexsort(keys))
    k = rng.integers(0, 5, 70).astype(np.uint32)
    pos, ids = rng.random((70, 3)).astype(np.float32), np.arange(70, dtype=np.int64)
    dk, dp, di = g.to_device(k), g.to_device(pos), g.to_device(ids)
    g.sorter().sort(g.queue, dk, values=[dp, di]).wait()
    o = np.argsort(k, kind="stable")
    np.testing.assert_array_equal(dp.get(), pos[o])
    np.testing.assert_array_equal(di.get(), ids[o])
