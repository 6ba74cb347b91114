"""Sort and argsort against numpy: every key dtype, radix bits, boundary sizes, distributions."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.core import sizes as sizes_mod
from clradix.core.keys import KEY_DTYPES, key_codec

from conftest import SORT_OPS, check_sort
from data import DISTRIBUTIONS, float_specials, overfull_bucket, uniform
from reference import bits_of, ref_argsort

DTYPES = [np.dtype(d) for d in KEY_DTYPES]
DT_IDS = [str(d) for d in DTYPES]
try:  # bfloat16 keys where the optional ml_dtypes package provides them
    import ml_dtypes
    WITH_BF16 = DTYPES + [np.dtype(ml_dtypes.bfloat16)]
except ImportError:  # pragma: no cover - depends on the environment
    WITH_BF16 = DTYPES
# A small policy so that work-group and tile boundaries are small sizes.
WG, IPT = 64, 4
TILE = WG * IPT


@pytest.fixture(scope="module")
def sorters(ctx):
    """Sorters of the small test policy, one per radix bits, plus the planner's default."""
    s = {rb: clradix.Sorter(ctx, radix_bits=rb, wg_size=WG, items_per_thread=IPT)
         for rb in (2, 4, 8)}
    s["default"] = clradix.Sorter(ctx)
    return s


BOUNDARY_SIZES = [0, 1, 2, WG - 1, WG, WG + 1, TILE - 1, TILE, TILE + 1, 37 * TILE + 19]


# The radix bits at which each dtype's keys are also sorted alone (round the dtypes, so that every
# radix bits sorts keys alone of several widths): every configuration is a kernel build, and the
# key-value kernels of every dtype and radix bits are built anyway.
KEYS_ONLY_RADIX = {d: (2, 4, 8)[i % 3] for i, d in enumerate(DTYPES)}


@pytest.mark.parametrize("radix_bits", [2, 4, 8])
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_boundary_sizes(queue, sorters, rng, poisoning_allocator, dtype, radix_bits):
    for n in BOUNDARY_SIZES:
        check_sort(queue, sorters[radix_bits], uniform(rng, dtype, n), "pairs",
                   allocator=poisoning_allocator)
    check_sort(queue, sorters[radix_bits], float_specials(rng, dtype, 3 * TILE + 5),
               "keys" if KEYS_ONLY_RADIX[dtype] == radix_bits else "pairs")


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_distributions(queue, sorters, rng, dtype, dist):
    keys = DISTRIBUTIONS[dist](rng, dtype, 11 * TILE + 77)
    for which in (4, "default"):
        check_sort(queue, sorters[which], keys, "pairs")


@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_large(queue, sorters, rng, dtype):
    check_sort(queue, sorters["default"], float_specials(rng, dtype, 1_000_003), "pairs")


@pytest.mark.parametrize("radix_bits", [2, 4])
@pytest.mark.parametrize("dtype", [np.uint32, np.float64], ids=["uint32", "float64"])
def test_large_small_radix(queue, sorters, rng, dtype, radix_bits):
    check_sort(queue, sorters[radix_bits], uniform(rng, dtype, 1_000_003), "pairs")


@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_descending_stable(queue, sorters, rng, dtype):
    for dist in ("distinct16", "float_specials"):
        keys = DISTRIBUTIONS[dist](rng, dtype, 5 * TILE + 3)
        for which in (8, "default"):
            check_sort(queue, sorters[which], keys, "pairs", descending=True)


@pytest.mark.parametrize("dtype,begin,end", [
    (np.uint32, 0, 0), (np.uint32, 4, 12), (np.uint32, 3, 11), (np.uint32, 0, 12),
    (np.uint32, 24, 32), (np.int64, 8, 40), (np.float32, 16, 32), (np.uint8, 1, 7),
    (np.uint16, 0, 16), (np.float64, 60, 64),
])
@pytest.mark.parametrize("radix_bits", [4, 8])
def test_bit_ranges(queue, sorters, rng, dtype, begin, end, radix_bits):
    check_sort(queue, sorters[radix_bits], uniform(rng, dtype, 9 * TILE + 1), "pairs",
               begin_bit=begin, end_bit=end)


def test_float_order_matches_numpy_sort(queue, sorters, rng):
    """The codec agrees with numpy's own sort (not only with clradix's reference)."""
    for dtype in (np.float16, np.float32, np.float64):
        keys = float_specials(rng, dtype, 7 * TILE)
        check_sort(queue, sorters["default"], keys)   # checks numpy's np.sort too
        check_sort(queue, None, keys, "argsort")      # and np.argsort


@pytest.mark.parametrize("width", [1, 2, 4, 8, 16])
def test_value_widths(queue, sorters, rng, width):
    """Values of every width, passed as a Buffer with value_dtype=."""
    n = 6 * TILE + 9
    keys = DISTRIBUTIONS["distinct16"](rng, np.uint32, n)
    vals = rng.integers(0, 256, n * width, dtype=np.uint8).view(
        np.dtype(f"u{width}") if width <= 8 else np.dtype("V16"))
    for which in (8, "default"):
        check_sort(queue, sorters[which], keys, "pairs", values=vals, values_as_buffer=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_argsort(queue, sorters, rng, poisoning_allocator, dtype):
    for n in (0, 1, 2, TILE + 1, 13 * TILE + 5):
        keys = float_specials(rng, dtype, n)
        for which in (8, "default"):
            for desc in (False, True):
                check_sort(queue, sorters[which], keys, "argsort", descending=desc,
                           allocator=poisoning_allocator)


def test_argsort_out_and_bits(queue, sorters, rng):
    keys = uniform(rng, np.uint32, 5 * TILE + 1)
    for begin, end in ((0, 0), (0, 8), (5, 13), (0, 32)):
        check_sort(queue, sorters[8], keys, "argsort", out=True, begin_bit=begin, end_bit=end)


def test_buffer_api_partial_n(queue, sorters, rng):
    """A Buffer with n < its size: the first n keys sort, the bytes after them stay."""
    keys = uniform(rng, np.uint64, 4 * TILE)
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=keys)
    n = 3 * TILE - 7
    for which in (2, "default"):
        cl.enqueue_copy(queue, buf, keys)
        evt = sorters[which].sort(queue, buf, dtype=np.uint64, n=n)
        out = np.empty_like(keys)
        cl.enqueue_copy(queue, out, buf, wait_for=[evt])
        np.testing.assert_array_equal(out[:n], np.sort(keys[:n]))
        np.testing.assert_array_equal(out[n:], keys[n:])


def test_buffer_default_dtype_is_uint32(queue, sorters, rng):
    keys = uniform(rng, np.uint32, 2 * TILE + 3)
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=keys)
    sorters["default"].sort(queue, buf).wait()
    out = np.empty_like(keys)
    cl.enqueue_copy(queue, out, buf)
    np.testing.assert_array_equal(out, np.sort(keys))


def test_array_view_with_offset(queue, sorters, rng):
    keys = uniform(rng, np.int32, 6 * TILE)
    d = cl_array.to_device(queue, keys)
    view = d[TILE + 3: 5 * TILE - 1]
    vals = cl_array.to_device(queue, np.arange(keys.size, dtype=np.uint32))
    vview = vals[7: 7 + view.size]
    sorters[4].sort(queue, view, values=vview).wait()
    expect = keys.copy()
    part = keys[TILE + 3: 5 * TILE - 1]
    order = ref_argsort(part)
    expect[TILE + 3: 5 * TILE - 1] = part[order]
    np.testing.assert_array_equal(d.get(), expect)
    v = np.arange(keys.size, dtype=np.uint32)
    v[7: 7 + view.size] = v[7: 7 + view.size][order]
    np.testing.assert_array_equal(vals.get(), v)


def test_odd_pass_count_copies_home(queue, sorters, rng):
    """uint8 keys at 8 bits take one pass: the result must still land in the caller's buffer."""
    keys = uniform(rng, np.uint8, 7 * TILE + 1)
    check_sort(queue, sorters[8], keys, "pairs")
    check_sort(queue, sorters[4], keys, "pairs", begin_bit=0, end_bit=4)


def test_wait_for_and_event(queue, sorters, rng):
    """Nothing runs before wait_for completes, and the returned event covers the whole sort."""
    keys = uniform(rng, np.float32, 20 * TILE)
    d = cl_array.to_device(queue, keys)
    queue.finish()
    gate = cl.UserEvent(queue.context)
    evt = sorters["default"].sort(queue, d, wait_for=[gate])
    assert evt.command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    evt.wait()
    out = np.empty_like(keys)
    cl.enqueue_copy(queue, out, d.data)
    np.testing.assert_array_equal(bits_of(out), bits_of(np.sort(keys, kind="stable")))


def test_index64_kernels(queue, ctx, rng, monkeypatch):
    """The 64-bit index/offset kernels (used from 2**31 keys on) sort correctly at small n."""
    monkeypatch.setattr(sizes_mod, "INDEX32_LIMIT", 0)
    sorter = clradix.Sorter(ctx, radix_bits=8, wg_size=WG, items_per_thread=IPT)
    for dtype in (np.uint32, np.float64):
        keys = float_specials(rng, dtype, 9 * TILE + 11)
        check_sort(queue, sorter, keys, "pairs")
        check_sort(queue, sorter, keys, "argsort", descending=True)


def test_module_functions(queue, rng):
    """clradix.sort / clradix.argsort: a sorted copy (the input stays), both directions."""
    keys = float_specials(rng, np.float32, 3000)
    for op in ("keys", "argsort"):
        for desc in (False, True):
            check_sort(queue, None, keys, op, descending=desc)


def test_many_blocks_and_tiles_per_block(queue, ctx, rng):
    """Blocks that each own many tiles, and more blocks than compute units."""
    for bpc in (1, 16):
        sorter = clradix.Sorter(ctx, radix_bits=8, wg_size=WG, items_per_thread=IPT,
                                blocks_per_cu=bpc)
        check_sort(queue, sorter, DISTRIBUTIONS["entropy_reduced"](rng, np.uint32, 200 * TILE + 17),
                   "pairs")


@pytest.mark.parametrize("algorithm", ["reduce_then_scan", "onesweep"])
def test_trace_names_every_command(ctx, queue, rng, algorithm):
    """A driver's trace (used by the benchmarks' per-kernel breakdown) lists each command a sort
    enqueues, in order, ending with the event the sort returns: three 8-bit passes in place end
    with the copy home."""
    from clradix.core.keys import key_codec
    sorter = clradix.Sorter(ctx, algorithm=algorithm, radix_bits=8)
    n = 5 * TILE + 3
    keys = uniform(rng, np.uint32, n)
    driver = sorter.planner.sort_driver(ctx.devices[0], key_codec(np.uint32), 0, n)
    driver.trace = []
    d = cl_array.to_device(queue, keys)
    evt = sorter.sort(queue, d, end_bit=24)
    evt.wait()
    names = [name for name, _ in driver.trace]
    if algorithm == "reduce_then_scan":
        passes = [f"rts_{k} {p}" for p in range(3) for k in ("count", "scan", "scatter")]
    elif driver.policy.fused_passes:   # (the NVIDIA planner's onesweep up to 2^21 keys)
        passes = ["fill counters", "os_fused"]
    else:
        passes = (["fill histogram", "os_histogram", "os_bins"]
                  + [f"os_pass {p}" for p in range(3)])
    assert names == passes + ["copy keys"]
    assert driver.trace[-1][1] == evt
    order = np.argsort(keys & np.uint32(0xFFFFFF), kind="stable")
    np.testing.assert_array_equal(d.get(), keys[order])


@pytest.mark.parametrize("dtype", [np.uint32, np.float64, np.uint8])
def test_fused_scan(ctx, queue, rng, dtype):
    """reduce-then-scan with the digit counts scanned in each scatter block (two launches per
    pass): one block, many blocks, blocks that own several tiles, 64-bit keys, a bit range."""
    for bpc in (1, 16):
        sorter = clradix.Sorter(ctx, algorithm="reduce_then_scan", radix_bits=8, wg_size=WG,
                                items_per_thread=IPT, blocks_per_cu=bpc, fused_scan=True)
        for n in (TILE - 1, 3 * TILE + 1, 57 * TILE + 5):
            keys = float_specials(rng, dtype, n)
            check_sort(queue, sorter, keys, "pairs")
            check_sort(queue, sorter, keys, "argsort", descending=True)
        check_sort(queue, sorter, float_specials(rng, dtype, 9 * TILE), "keys", begin_bit=2,
                   end_bit=7)


def test_fused_scan_trace(ctx, queue, rng):
    """fused_scan: each pass is rts_count and rts_scatter."""
    from clradix.core.keys import key_codec
    sorter = clradix.Sorter(ctx, algorithm="reduce_then_scan", radix_bits=8, fused_scan=True)
    n = 5 * TILE + 3
    driver = sorter.planner.sort_driver(ctx.devices[0], key_codec(np.uint32), 0, n)
    driver.trace = []
    d = cl_array.to_device(queue, uniform(rng, np.uint32, n))
    sorter.sort(queue, d).wait()
    assert [name for name, _ in driver.trace] == [f"rts_{k} {p}" for p in range(4)
                                                  for k in ("count", "scatter")]
    driver.trace = None


@pytest.mark.parametrize("radix_bits", [2, 4, 6, 8, 10, 11, 12])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.uint64, np.float64],
                         ids=str)
def test_chunks_digit_widths(ctx, queue, rng, radix_bits, dtype):
    """The chunked sort (the CPUs' default; any device runs it) at every digit width it takes,
    many chunks of at least 64 keys, a last pass narrower than the others: keys, pairs and
    argsort, both directions, a bit range."""
    sorter = clradix.Sorter(ctx, algorithm="chunks", radix_bits=radix_bits,
                            items_per_thread=64, blocks_per_cu=8)
    keys = float_specials(rng, dtype, 64 * 37 + 5)
    for op in SORT_OPS:
        check_sort(queue, sorter, keys, op, descending=op == "argsort")
    check_sort(queue, sorter, keys, "pairs", begin_bit=3, end_bit=np.dtype(dtype).itemsize * 8 - 1)


@pytest.mark.parametrize("pad", [0, 1, 5, 17])
@pytest.mark.parametrize("dtype,value_dtype", [(np.uint8, np.uint8), (np.int16, np.uint16),
                                               (np.float32, np.uint32), (np.uint32, "V16"),
                                               (np.float64, np.uint64)], ids=str)
def test_chunks_write_combining_lines(ctx, queue, rng, dtype, value_dtype, pad):
    """The chunked scatter's write-combining lines (11-bit digits: 64 bytes of keys a digit):
    keys placed ``pad`` elements into their buffer (lines not aligned to the array), values of
    every width (1 and 2 bytes copied element by element, wider ones as words), chunks of 37
    keys (shorter than a line of 1-byte keys: a chunk's first and last lines shared with its
    neighbours), digits of one key and digits of hundreds (half the keys repeat 50 values: whole
    lines); the bytes around the keys keep their bits."""
    sorter = clradix.Sorter(ctx, algorithm="chunks", radix_bits=11, items_per_thread=37,
                            blocks_per_cu=64)
    for n in (1, 37, 700, 20011):
        keys = float_specials(rng, dtype, n)
        keys[: n // 2] = keys[rng.integers(0, min(n, 50), n // 2)]
        rng.shuffle(keys)
        values = rng.integers(0, 256, n * np.dtype(value_dtype).itemsize,
                              np.uint8).view(value_dtype)
        check_sort(queue, sorter, keys, "pairs", values=values, pad=pad)
        check_sort(queue, sorter, keys, "keys", pad=pad, descending=True)
        check_sort(queue, sorter, keys, "argsort", pad=pad)


@pytest.mark.parametrize("dtype", [np.uint32, np.float32, np.int64], ids=str)
def test_chunks_pass_of_one_digit(ctx, queue, rng, dtype):
    """A chunked pass whose keys all share its digit copies its chunks in place of the scatter:
    keys below 2^11 (the upper passes), keys that differ only in their upper bits (the lower
    passes), all keys equal; keys, pairs and argsort at 11-bit digits, many chunks."""
    sorter = clradix.Sorter(ctx, algorithm="chunks", radix_bits=11, items_per_thread=64,
                            blocks_per_cu=8)
    n = 64 * 37 + 5
    bits = np.dtype(dtype).itemsize * 8
    low = rng.integers(0, 1 << 11, n).astype(dtype)
    high = (rng.integers(0, 1 << 9, n).astype(np.uint64) << np.uint64(bits - 9)).astype(
        f"u{bits // 8}").view(dtype)
    for keys in (low, high, np.full(n, 7, dtype)):
        for op in SORT_OPS:
            check_sort(queue, sorter, keys, op)


# The chunked sort's buckets (a chunks policy's bucket_keys): one pass by the top digit, then a
# work-item per bucket. A bucket of at most 32 keys is sorted by insertion, a larger one by LSD
# passes in the cache, one over bucket_keys split by its next 8 bits first; small bucket_keys
# make the split happen at test sizes.
BUCKET_SIZES = (0, 1, 2, 33, 64 * 37 + 5, 20011)


@pytest.mark.parametrize("bucket_keys", [40, 1 << 20], ids=["split", "whole"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_chunk_buckets(ctx, queue, rng, poisoning_allocator, dtype, bucket_keys):
    """Every key type (floats with NaNs of both signs, +-0, +-inf, subnormals), buckets of every
    kind (empty, under 33 keys, in the cache, over the bound: split), keys, pairs and argsort,
    both directions, a bit range; against numpy, stable and bit for bit."""
    sorter = clradix.Sorter(ctx, algorithm="chunks", bucket_keys=bucket_keys,
                            items_per_thread=64, blocks_per_cu=8)
    bits = np.dtype(dtype).itemsize * 8
    for n in BUCKET_SIZES:
        keys = float_specials(rng, dtype, n)
        for op in SORT_OPS:
            check_sort(queue, sorter, keys, op, descending=op == "argsort",
                       allocator=poisoning_allocator)
        check_sort(queue, sorter, keys, "pairs", begin_bit=3, end_bit=bits - 1)
    n = BUCKET_SIZES[-1]
    keys = uniform(rng, dtype, n)
    # few keys per bucket (ints), parts over 32 keys after a split (the low bits repeat)
    keys[: n // 2] = keys[rng.integers(0, 300, n // 2)]
    check_sort(queue, sorter, keys, "pairs")
    check_sort(queue, sorter, keys, "argsort", descending=True)


@pytest.mark.parametrize("dtype", [np.uint32, np.int32, np.float32], ids=str)
def test_chunk_buckets_wide_runs(ctx, queue, rng, dtype):
    """Buckets of 32-bit keys with at least WIDE_MIN keys whose bits take fewer 12-bit passes
    than 9-bit ones (a third of the keys within 2^22 values: one bucket of 22 bits, two passes
    of 12 bits instead of three), beside buckets that keep 9-bit passes (a cluster of 2^15
    values: 15 bits, two passes either way; the rest spread), with float specials; keys, pairs,
    argsort, descending and a bit range, against numpy."""
    if not ctx.devices[0].type & cl.device_type.CPU:
        pytest.skip("the chunked sort is the CPUs' route")
    sorter = clradix.Sorter(ctx, algorithm="chunks")
    n = 120011
    keys = float_specials(rng, dtype, n)
    u = keys.view(np.uint32)
    base = np.uint32(0x3F800000) if dtype == np.float32 else np.uint32(0x12000000)
    u[: n // 3] = base + rng.integers(0, 1 << 22, n // 3).astype(np.uint32)
    u[n // 3: n // 2] = base + np.uint32(1 << 24) + rng.integers(0, 1 << 15, n // 2 - n // 3).astype(np.uint32)
    rng.shuffle(u)
    for op in SORT_OPS:
        check_sort(queue, sorter, keys, op, descending=op == "argsort")
    check_sort(queue, sorter, keys, "pairs", begin_bit=2, end_bit=30)


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
@pytest.mark.parametrize("dtype", [np.uint16, np.int32, np.float32, np.float64], ids=str)
def test_chunk_buckets_distributions(ctx, queue, rng, dtype, dist):
    """Skewed keys: all equal (every digit constant: one bucket, no pass moves a key), sorted,
    few distinct, only high or low bits varying; the bound at 50 keys and the planner's."""
    keys = DISTRIBUTIONS[dist](rng, dtype, 20011)
    for bucket_keys in (50, None):
        sorter = clradix.Sorter(ctx, algorithm="chunks", bucket_keys=bucket_keys,
                                items_per_thread=512)
        check_sort(queue, sorter, keys, "pairs")
        check_sort(queue, sorter, keys, "argsort")


@pytest.mark.parametrize("radix_bits", [8, 11])
@pytest.mark.parametrize("dtype", [np.uint16, np.float32, np.int64], ids=str)
def test_chunk_buckets_bit_ranges(ctx, queue, rng, dtype, radix_bits):
    """Bit ranges narrower than the top digit (no bit left for the buckets), as wide as it plus
    a part of a digit, and ranges in the middle of the key, with both top digit widths."""
    sorter = clradix.Sorter(ctx, algorithm="chunks", bucket_keys=60, radix_bits=radix_bits,
                            items_per_thread=128)
    bits = np.dtype(dtype).itemsize * 8
    keys = float_specials(rng, dtype, 9000)
    for begin, end in ((0, 5), (2, 2 + radix_bits), (1, radix_bits + 4), (3, bits - 2),
                       (max(0, bits - radix_bits - 9), bits)):
        check_sort(queue, sorter, keys, "pairs", begin_bit=begin, end_bit=end)
        check_sort(queue, sorter, keys, "argsort", begin_bit=begin, end_bit=end,
                   descending=True)


def skewed_floats(rng, dtype, n, kind):
    """Floats whose top bits (sign, exponent) take few values: the buckets come from a sample's
    quantiles (cb_lut). "normal" both signs; "tiny" positive, one exponent range far from 1;
    "wide" exponents over most of the range; "heavy": 40 % one value (a fine value heavier
    than a bucket), the rest normal; "salted": normal with NaNs of both signs, -0.0 and +0.0,
    +-inf."""
    d = np.dtype(dtype)
    if kind == "tiny":
        x = (rng.exponential(size=n) * 1e-30).astype(d)
    elif kind == "wide":
        x = (rng.lognormal(0, 20, size=n) * rng.choice([-1, 1], n)).astype(d)
    else:
        x = rng.standard_normal(n).astype(d)
    if kind == "heavy":
        x[rng.random(n) < 0.4] = d.type(0.75)
    if kind == "salted":
        pick = rng.integers(0, n, n // 10)
        x[pick] = np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf], d)[
            rng.integers(0, 6, pick.size)]
    return x


@pytest.mark.parametrize("kind", ["normal", "tiny", "wide", "heavy", "salted"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_chunk_buckets_skewed_floats(ctx, queue, rng, dtype, kind):
    """Buckets by the sample's quantiles: keys, pairs and argsort (descending: the flipped order
    keys), the cache bound at 50 keys (buckets split) and the planner's, sizes one over and under
    a block of the sample, a bit range; against numpy, stable and bit for bit."""
    bits = np.dtype(dtype).itemsize * 8
    for bucket_keys in (50, None):
        sorter = clradix.Sorter(ctx, algorithm="chunks", bucket_keys=bucket_keys,
                                items_per_thread=512)
        for n in (64 * 70 - 1, 64 * 70 + 1, 20011):
            keys = skewed_floats(rng, dtype, n, kind)
            for op in SORT_OPS:
                check_sort(queue, sorter, keys, op, descending=op == "argsort")
        check_sort(queue, sorter, keys, "pairs", begin_bit=2, end_bit=bits - 3)


# Over-full buckets from an unaligned fine value (data.overfull_bucket): cb_lut counts a
# bucket's digits less its first fine value where that saves a pass (bucket_bits), and every run
# of the bucket must take them so: the bucket's passes, its split by its next bits, each part's
# passes. Whether the base saves a pass depends on the width of the keys' range modulo the
# in-bucket digit (8 or 9 bits): nine widths in a row take every residue.
def overfull_spreads(dtype):
    top = min(np.dtype(dtype).itemsize * 8, 28)
    return range(max(8, top - 8), top + 1)


@pytest.mark.parametrize("dtype", WITH_BF16, ids=str)
def test_chunk_buckets_overfull_unaligned(ctx, queue, rng, dtype):
    """Buckets of hundreds of fine values from an unaligned one, over a bound of 40 keys (split,
    parts of over 32 keys sorted by passes): every key type, nine widths of the keys' range,
    keys, pairs and argsort in turn, both directions, and a bit range; against numpy, stable and
    bit for bit. 2^16 float keys (a fine digit of 14 bits: five buckets of the layout split),
    20011 others (not sampled: a bucket is one value of the top digit)."""
    sorter = clradix.Sorter(ctx, algorithm="chunks", bucket_keys=40, items_per_thread=64,
                            blocks_per_cu=8)
    n = 1 << 16 if key_codec(dtype).kind == "float" else 20011
    for k, spread in enumerate(overfull_spreads(dtype)):
        what = f"range of 2^{spread}"
        for descending in (False, True):
            keys = overfull_bucket(rng, dtype, n, spread, descending)
            check_sort(queue, sorter, keys, SORT_OPS[k % 3], descending=descending, what=what)
        check_sort(queue, sorter, keys, SORT_OPS[(k + 1) % 3], descending=True, begin_bit=2,
                   what=what)


def test_chunk_buckets_overfull_default_bound(ctx, queue, rng):
    """The same at the planner's bound (BUCKET_BYTES over a key's and its value's bytes, checked
    below the over-full bucket): float32 argsort and float64 pairs of 2^17 keys, 90 % in one
    bucket (bound 65536 and 43690), and clradix.sort of 2^18 float32 keys in [1, 2), 90 % one
    value (bound 131072)."""
    dev = ctx.devices[0]
    sorter = clradix.Sorter(ctx, algorithm="chunks")
    n = 1 << 17
    for dtype, op in ((np.float32, "argsort"), (np.float64, "pairs")):
        bound = sorter.plan(dev, dtype, n, np.uint32).bucket_keys
        assert 0 < bound < 0.9 * n, bound
        for spread in overfull_spreads(dtype):
            descending = spread % 2 == 1
            keys = overfull_bucket(rng, dtype, n, spread, descending, levels=1)
            check_sort(queue, sorter, keys, op, descending=descending,
                       what=f"range of 2^{spread}")
    n = 1 << 18
    keys = (1 + rng.random(n)).astype(np.float32)
    keys[rng.random(n) < 0.9] = np.float32(1 + rng.random())
    check_sort(queue, None, keys, "keys")


@pytest.mark.parametrize("dtype", [np.uint32, np.float32], ids=str)
def test_chunk_buckets_sample_misjudged(ctx, queue, rng, dtype):
    """Every other block of 64 keys in a narrow range: float32 keys the sample (every few blocks
    of a long chunk) does not see, uint32 keys (not sampled) one top digit; either way one or
    two buckets get half the keys, over the cache bound (split by their next bits first)."""
    n = 1 << 19
    sorter = clradix.Sorter(ctx, algorithm="chunks", items_per_thread=1 << 16, blocks_per_cu=1)
    odd = (np.arange(n) // 64) % 2 == 1
    if dtype == np.float32:
        keys = rng.standard_normal(n).astype(dtype)
        keys[odd] = (1 + rng.random(int(odd.sum())) * 1e-3).astype(dtype)
    else:
        keys = uniform(rng, dtype, n)
        keys[odd] = 0x12345600 + rng.integers(0, 1 << 12, int(odd.sum()), dtype=np.uint32)
    check_sort(queue, sorter, keys, "pairs")
    check_sort(queue, sorter, keys, "argsort", descending=True)


def test_chunk_buckets_are_the_cpu_default(ctx, queue, rng):
    """The planner's chunked sort on a CPU takes the buckets for keys of 2 bytes or more (1-byte
    keys and bucket_keys=0 the LSD passes); either sorts the same."""
    dev = ctx.devices[0]
    default, lsd = clradix.Sorter(ctx), clradix.Sorter(ctx, bucket_keys=0)
    if not dev.type & cl.device_type.CPU:
        pytest.skip("the planner takes the chunked sort on CPUs")
    assert default.plan(dev, np.uint32, 1 << 22).bucket_keys > 0
    assert default.plan(dev, np.uint8, 1 << 22).bucket_keys == 0
    assert lsd.plan(dev, np.uint32, 1 << 22).bucket_keys == 0
    keys = float_specials(rng, np.float32, 30000)
    for sorter in (default, lsd):
        check_sort(queue, sorter, keys, "pairs")
