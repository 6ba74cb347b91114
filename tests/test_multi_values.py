"""Sorter.sort with several value arrays, or values of any record width: (n, 3) float32
positions (12 bytes), 24-byte structured records, void records, 1-16 byte values beside them,
with segments, descending and bit ranges; each permuted as numpy's stable order permutes it,
records past n untouched; the refusals raised before anything changes."""

import numpy as np
import pyopencl.array as cl_array
import pytest

import clradix
from data import float_specials
from reference import bits_of, ref_argsort

RECORD = np.dtype([("pos", np.float32, 3), ("id", np.int64), ("m", np.float32)])   # 24 bytes


@pytest.fixture(scope="module")
def sorter(ctx):
    return clradix.Sorter(ctx)


def value_arrays(rng, n, extra=0):
    pos = rng.random((n + extra, 3)).astype(np.float32)
    rec = np.zeros(n + extra, RECORD)
    rec["pos"] = rng.random((n + extra, 3))
    rec["id"] = np.arange(n + extra)
    rec["m"] = rng.random(n + extra)
    void = rng.integers(0, 256, (n + extra) * 12, np.uint8).view("V12")
    ids = np.arange(n + extra, dtype=np.int64)
    small = rng.integers(0, 256, n + extra).astype(np.uint8)
    return [pos, rec, void, ids, small]


@pytest.mark.parametrize("n", [0, 1, 2, 255, 4097])
@pytest.mark.parametrize("dtype", [np.uint32, np.float32, np.int64])
def test_values_of_every_width(queue, sorter, rng, n, dtype):
    keys = float_specials(rng, np.dtype(dtype), n)
    vals = value_arrays(rng, n, extra=3)
    d_keys = cl_array.to_device(queue, keys)
    d_vals = [cl_array.to_device(queue, v) for v in vals]
    sorter.sort(queue, d_keys, values=d_vals, n=n).wait()
    order = ref_argsort(keys)
    np.testing.assert_array_equal(bits_of(d_keys.get()), bits_of(keys[order]))
    for dv, v in zip(d_vals, vals):
        got = dv.get()
        np.testing.assert_array_equal(got[:n].view(np.uint8), v[:n][order].view(np.uint8))
        np.testing.assert_array_equal(got[n:].view(np.uint8), v[n:].view(np.uint8))


def test_one_record_array_descending_and_bits(queue, sorter, rng):
    n = 3000
    keys = rng.integers(0, 2 ** 16, n).astype(np.uint32)
    pos = rng.random((n, 3)).astype(np.float32)
    for descending, bits in [(True, {}), (False, dict(begin_bit=4, end_bit=12))]:
        d_keys, d_pos = cl_array.to_device(queue, keys), cl_array.to_device(queue, pos)
        sorter.sort(queue, d_keys, values=d_pos, descending=descending, **bits).wait()
        order = ref_argsort(keys, descending, **bits)
        np.testing.assert_array_equal(d_keys.get(), keys[order])
        np.testing.assert_array_equal(d_pos.get(), pos[order])


def test_with_segments(queue, sorter, rng):
    n = 1000
    keys = rng.integers(0, 50, n).astype(np.int16)
    vals = value_arrays(rng, n)
    offsets = np.array([0, 10, 10, 400, 999], np.int64)
    d_keys = cl_array.to_device(queue, keys)
    d_vals = [cl_array.to_device(queue, v) for v in vals]
    sorter.sort(queue, d_keys, values=d_vals, segments=offsets).wait()
    order = np.arange(n)
    for a, b in zip(offsets[:-1], offsets[1:]):
        order[a:b] = a + np.argsort(keys[a:b], kind="stable")
    np.testing.assert_array_equal(d_keys.get(), keys[order])
    for dv, v in zip(d_vals, vals):
        np.testing.assert_array_equal(dv.get().view(np.uint8), v[order].view(np.uint8))


def test_refusals_change_nothing(queue, sorter, rng):
    keys = rng.integers(0, 9, 100).astype(np.uint32)
    d_keys = cl_array.to_device(queue, keys)
    pos = cl_array.to_device(queue, rng.random((100, 3)).astype(np.float32))
    before = pos.get()
    with pytest.raises(TypeError, match="Buffer does not say its record width"):
        sorter.sort(queue, d_keys, values=[pos, pos.base_data])
    with pytest.raises(ValueError, match="fewer than the 100 keys"):
        sorter.sort(queue, d_keys, values=[pos, cl_array.to_device(queue, np.zeros(99))])
    with pytest.raises(ValueError, match="overlaps"):
        sorter.sort(queue, d_keys, values=[pos, pos])
    with pytest.raises(ValueError, match="overlaps"):
        sorter.sort(queue, d_keys, values=[pos, cl_array.Array(queue, (100,), np.uint32,
                                                               data=d_keys.base_data)])
    with pytest.raises(ValueError, match="C-contiguous"):
        sorter.sort(queue, d_keys, values=[pos[:, :2]])
    with pytest.raises(TypeError, match="value_dtype"):
        sorter.sort(queue, d_keys, values=[pos, pos], value_dtype=np.float32)
    np.testing.assert_array_equal(d_keys.get(), keys)
    np.testing.assert_array_equal(pos.get(), before)
