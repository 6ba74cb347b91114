"""Selection against numpy: clradix.partition, argpartition, kthvalue, median, quantile,
percentile and their nan forms, on every key dtype, adversarial distributions (all equal, many
NaNs, -0.0 beside 0.0, sorted, reversed, two values, one outlier), any axis and views, 2-D rows
in one launch sequence, numpy and pyopencl inputs, out= and wait_for=; the work-group paths
(one work-item per chunk, the CPUs'; work-groups of several, the GPUs') and the candidates'
re-read; numpy's errors; hypothesis cases. Sizes are small: a kernel configuration is built once
per dtype and policy."""

import dataclasses
import os
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clradix
from clradix.core.keys import KEY_DTYPES, key_codec
from clradix.dispatch import selection
from clradix.policies.selection import (MAX_RANKS, SelectionPolicy, check_selection_policy,
                                        plan_selection)

import data
from conftest import fake_profile, poison, returns_within

try:
    import ml_dtypes
    BF16 = [np.dtype(ml_dtypes.bfloat16)]
except ImportError:  # pragma: no cover - depends on the environment
    BF16 = []

DTYPES = [np.dtype(d) for d in KEY_DTYPES] + [np.dtype(np.bool_)] + BF16
FLOATS = [d for d in DTYPES if d.kind == "f" or d.name == "bfloat16"]
# The GPUs' path (work-groups of 64 here, tiles of 128 keys, several work-groups per row) and
# the CPUs' with 8-bit digits (four passes of a 32-bit key, the middle ones writing candidates)
# the GPUs' passes on small rows: the 12-bit first digit of long rows, and (gpu_short) the 8-bit
# one the planner gives rows shorter than WIDE_FIRST_FROM
GPU_PATH = SelectionPolicy(wg_size=64, items_per_thread=2, groups_per_cu=3, first_bits=12)
GPU_SHORT = SelectionPolicy(wg_size=64, items_per_thread=2, groups_per_cu=3)
CPU_8BIT = SelectionPolicy(wg_size=1, items_per_thread=4, digit_bits=8, groups_per_cu=3)
POLICIES = {"default": None, "gpu_path": GPU_PATH, "gpu_short": GPU_SHORT, "cpu_8bit": CPU_8BIT}
EXAMPLES = int(os.environ.get("CLRADIX_HYPOTHESIS_EXAMPLES", "200")) // 4


# ------------------------------------------------------------------ references

def order_keys(x):
    """clradix's order key of each key (NaN after +inf, -0.0 equal to +0.0), x's shape."""
    return key_codec(x.dtype).order_key(x.reshape(-1)).reshape(x.shape)


def ref_split(x, kth):
    """The stable split of each row of x (2-D) by the keys of ranks ``kth``: positions in class
    order (below the first threshold, equal to it, between, ...), position order within one."""
    ok = order_keys(x)
    thr = np.sort(ok, axis=1)[:, sorted(set(kth))]
    cls = np.zeros(ok.shape, np.int64)
    for r in range(ok.shape[0]):
        for t in np.unique(thr[r]):
            cls[r] += 2 * (ok[r] > t) + (ok[r] == t)
    return np.argsort(cls, axis=1, kind="stable")


def bits_of(a):
    """The keys' bits (bit-exact comparisons, NaN payloads and bfloat16 included)."""
    a = np.ascontiguousarray(a)
    return a.view(key_codec(a.dtype).unsigned_dtype)


def host(a):
    return a.get() if isinstance(a, cl_array.Array) else np.asarray(a)


def check_split(queue, x, kth, axis=-1, policy=None, **kw):
    """partition and argpartition of x (a numpy array) on the device against the reference
    split, bit for bit, and against numpy's own contract; the input must keep its bits."""
    d = cl_array.to_device(queue, x)
    part = clradix.partition(d, kth, axis, policy=policy, **kw)
    idx = clradix.argpartition(d, kth, axis, policy=policy, **kw)
    assert idx.dtype == np.int64
    ax = -1 if axis is None else axis
    moved = np.moveaxis(x.reshape(-1) if axis is None else x, ax, -1)
    rows = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, 0)
    n = rows.shape[1]
    ks = [k % n for k in np.atleast_1d(kth)]
    order = ref_split(rows, ks)
    got_i = np.moveaxis(host(idx), ax, -1).reshape(rows.shape)
    got_p = np.moveaxis(host(part), ax, -1).reshape(rows.shape)
    np.testing.assert_array_equal(got_i, order)
    np.testing.assert_array_equal(bits_of(got_p), bits_of(np.take_along_axis(rows, order, 1)))
    # numpy's contract, independently: each kth key in its sorted place
    srt = np.sort(order_keys(rows), axis=1)
    okp = order_keys(got_p)
    for k in ks:
        np.testing.assert_array_equal(okp[:, k], srt[:, k])
        assert (okp[:, :k] <= okp[:, k:k + 1]).all() and (okp[:, k + 1:] >= okp[:, k:k + 1]).all()
    np.testing.assert_array_equal(bits_of(d.get()), bits_of(x), err_msg="the input changed")
    return part, idx


def assert_same(got, want, what=""):
    """numpy's result and ours: equal values and dtypes (NaN equal to NaN, -0.0 to 0.0)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if got.dtype.name == "bfloat16":
        got, want = got.astype(np.float32), want.astype(np.float32)
    np.testing.assert_array_equal(got, want, err_msg=what)


def numpy_of(fn, *args, **kw):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return getattr(np, fn)(*args, **kw)


def no_overflow(rng, dtype, shape):
    """Keys of dtype whose differences fit the type (numpy's integer quantiles wrap)."""
    d = np.dtype(dtype)
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(info.min // 2, info.max // 2, shape, dtype=d, endpoint=True)
    if d == np.bool_:
        return rng.random(shape) < 0.5
    return (rng.standard_normal(shape) * 100).astype(d)


def adversarial(rng, name, dtype, n):
    """The issue's distributions: all equal, many NaNs, -0.0 beside 0.0, sorted, reversed, two
    values, one outlier."""
    d = np.dtype(dtype)
    base = no_overflow(rng, d, max(n, 2))[:n] if n > 1 else no_overflow(rng, d, 2)
    if name == "all_equal":
        return np.full(n, base[0])
    if name == "many_nans":
        x = base[:n].copy()
        if d.kind == "f" or d.name == "bfloat16":
            x[rng.random(n) < 0.7] = np.nan
        return x
    if name == "zeros":
        if d.kind == "f" or d.name == "bfloat16":
            return np.where(rng.random(n) < 0.5, -0.0, 0.0).astype(d)
        return np.zeros(n, d)
    if name == "sorted":
        return np.sort(base[:n])
    if name == "reversed":
        return np.sort(base[:n])[::-1].copy()
    if name == "two_values":
        return np.where(rng.random(n) < 0.3, base[0], base[1]).astype(d)
    if name == "outlier":
        x = np.full(n, base[0])
        x[rng.integers(n)] = base[1]
        return x
    raise ValueError(name)


ADVERSARIAL = ["all_equal", "many_nans", "zeros", "sorted", "reversed", "two_values", "outlier"]


# ------------------------------------------------------------------ every dtype

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype(queue, rng, dtype):
    """partition, argpartition, kthvalue and median of every key dtype, NaNs, infinities, both
    zeros and subnormals among the keys; two rows in one launch sequence."""
    x = data.float_specials(rng, dtype, 2 * 777).reshape(2, 777) if dtype in FLOATS and \
        dtype.name != "bfloat16" else no_overflow(rng, dtype, (2, 777))
    if dtype.name == "bfloat16":
        x[:, ::7] = np.nan
    check_split(queue, x, [0, 5, 388, 776])
    check_split(queue, x, -1)
    d = cl_array.to_device(queue, x)
    v, i = clradix.kthvalue(d, 100)
    order = np.argsort(order_keys(x), axis=1, kind="stable")
    np.testing.assert_array_equal(i.get(), order[:, 99])
    np.testing.assert_array_equal(bits_of(v.get()), bits_of(np.take_along_axis(x, order, 1)[:, 99]))
    if dtype.name == "bfloat16":
        # numpy's median of bfloat16 misplaces NaN (ml_dtypes' order): a NaN row's is NaN
        assert np.isnan(clradix.median(d, axis=1).get().astype(np.float32)).all()
        x = np.ascontiguousarray(x[:, 1::7])
        d = cl_array.to_device(queue, x)
    if dtype != np.bool_:
        assert_same(clradix.median(d, axis=1).get(), numpy_of("median", x, axis=1), "median")
        with np.errstate(invalid="ignore"):
            want = np.array([numpy_of("median", r[~np.isnan(r.astype(np.float64))])
                             for r in x]).astype(numpy_of("median", x).dtype)
        assert_same(clradix.nanmedian(x, axis=1, queue=queue), want, "nanmedian")


# ------------------------------------------------------------------ distributions and paths

# (dtype, policy) pairs: each work-group path with float32 keys, int16 with the CPUs' two digit
# widths (a program of work-groups of several work-items is slow to build on PoCL)
ADVERSARIAL_CONFIGS = [("float32", p) for p in POLICIES] + [("int16", "default"),
                                                            ("int16", "cpu_8bit")]


@pytest.mark.parametrize("config", ADVERSARIAL_CONFIGS, ids="-".join)
@pytest.mark.parametrize("dist", ADVERSARIAL)
def test_adversarial(queue, rng, dist, config):
    dtype, policy = config
    pol = POLICIES[policy]
    x = np.stack([adversarial(rng, dist, dtype, 1000) for _ in range(3)])
    n = x.shape[1]
    check_split(queue, x, [0, n // 2], policy=pol)
    check_split(queue, x, [1, 2, 3, n - 1], policy=pol)
    d = cl_array.to_device(queue, x)
    assert_same(clradix.median(d, axis=1, policy=pol).get(), numpy_of("median", x, axis=1))
    assert_same(clradix.nanmedian(d, axis=1, policy=pol).get(),
                numpy_of("nanmedian", x, axis=1))
    qs = [0.0, 0.25, 0.5, 0.9, 1.0]
    assert_same(clradix.quantile(d, qs, axis=1, policy=pol).get(),
                numpy_of("quantile", x, qs, axis=1))
    assert_same(clradix.nanquantile(d, qs, axis=1, method="nearest", policy=pol).get(),
                numpy_of("nanquantile", x, qs, axis=1, method="nearest"))
    v, i = clradix.kthvalue(d, n // 3, policy=pol)
    order = np.argsort(order_keys(x), axis=1, kind="stable")
    np.testing.assert_array_equal(i.get(), order[:, n // 3 - 1])


@pytest.mark.parametrize("policy", POLICIES)
def test_clustered_rows_reread(queue, rng, policy):
    """Keys sharing their top bits (a pivot bucket larger than the candidate buffer: the row is
    read again) beside spread ones, a small candidate buffer, 64-bit keys (eight 8-bit digits)."""
    pol = POLICIES[policy]
    small = SelectionPolicy(**{**(pol.__dict__ if pol else {}), "cand_cap": 40})
    for dtype in (np.float32, np.uint64) if policy != "cpu_8bit" else (np.float32,):
        x = no_overflow(rng, dtype, (2, 1500))
        x[0, :1200] = x[0, 0] + np.arange(1200).astype(dtype)   # one top digit, many keys
        for p in (pol, small):
            check_split(queue, x, [3, 700, 1499], policy=p)
            d = cl_array.to_device(queue, x)
            assert_same(clradix.quantile(d, [0.1, 0.5, 0.77], axis=1, policy=p).get(),
                        numpy_of("quantile", x, [0.1, 0.5, 0.77], axis=1))


# ------------------------------------------------------------------ quantile methods and dtypes

@pytest.mark.parametrize("dtype", [np.dtype(d) for d in ("float16", "float32", "float64",
                                                          "int32", "uint8")] + BF16, ids=str)
def test_quantile_methods(queue, rng, dtype):
    """Every method of numpy's, numpy's result dtypes (a Python float q keeps float32 results
    float32, an array q gives float64), percentile, and the nan forms, bit for bit."""
    x = no_overflow(rng, dtype, (3, 101))
    d = cl_array.to_device(queue, x)
    for method in selection.METHODS:
        for q in (0.37, [0.0, 0.1, 0.5, 0.5001, 0.99, 1.0], np.array([[0.2], [0.8]])):
            what = f"{dtype} {method} q={q}"
            assert_same(clradix.quantile(d, q, axis=1, method=method).get(),
                        numpy_of("quantile", x, q, axis=1, method=method), what)
        assert_same(clradix.percentile(d, [3.0, 50, 97.5], axis=1, method=method).get(),
                    numpy_of("percentile", x, [3.0, 50, 97.5], axis=1, method=method), method)
    if dtype in FLOATS and dtype.name != "bfloat16":
        y = x.copy()
        y[0, ::3] = np.nan
        y[2, :] = np.nan
        for method in ("linear", "midpoint", "inverted_cdf", "hazen"):
            with pytest.warns(RuntimeWarning, match="All-NaN slice encountered"):
                got = clradix.nanquantile(y, [0.3, 0.7], axis=1, method=method, queue=queue)
            assert_same(got, numpy_of("nanquantile", y, [0.3, 0.7], axis=1, method=method),
                        method)
            with pytest.warns(RuntimeWarning, match="All-NaN slice encountered"):
                got = clradix.nanpercentile(y, 30.0, axis=1, method=method, queue=queue)
            assert_same(got, numpy_of("nanpercentile", y, 30.0, axis=1, method=method), method)
            assert_same(clradix.quantile(y, 0.3, axis=1, method=method, queue=queue),
                        numpy_of("quantile", y, 0.3, axis=1, method=method), method)


def test_many_quantiles_and_kth(queue, rng):
    """More quantiles than one selection resolves (several selections), and more distinct kth
    than it resolves (the rows are sorted)."""
    x = no_overflow(rng, np.float32, (2, 600))
    qs = np.linspace(0, 1, 21)
    assert_same(clradix.quantile(x, qs, axis=1, queue=queue), numpy_of("quantile", x, qs, axis=1))
    kth = list(range(0, 600, 30))
    assert len(kth) > MAX_RANKS
    d = cl_array.to_device(queue, x)
    srt = np.sort(x, axis=1)
    np.testing.assert_array_equal(clradix.partition(d, kth).get(), srt)
    np.testing.assert_array_equal(clradix.argpartition(d, kth).get(),
                                  np.argsort(x, axis=1, kind="stable"))


def test_median_dtypes_and_nan_rule(queue, rng):
    """numpy's median arithmetic: float16 summed in float32, integers in float64 (no overflow),
    float32 in float32 (large values overflow as numpy's do); a NaN in a slice gives NaN."""
    big = np.array([[3e38, 3e38, 1.0, 2e38]], np.float32)
    assert_same(clradix.median(big, queue=queue), numpy_of("median", big))
    ints = np.array([[np.iinfo(np.int64).max, np.iinfo(np.int64).max - 1]], np.int64)
    assert_same(clradix.median(ints, axis=1, queue=queue), numpy_of("median", ints, axis=1))
    h = no_overflow(rng, np.float16, (4, 10)) * np.float16(50)
    assert_same(clradix.median(h, axis=1, queue=queue), numpy_of("median", h, axis=1))
    x = no_overflow(rng, np.float64, (3, 9))
    x[1, 4] = np.nan
    x[2, 0] = -np.inf
    assert_same(clradix.median(x, axis=1, queue=queue), numpy_of("median", x, axis=1))
    assert_same(clradix.median(x, queue=queue), numpy_of("median", x))
    assert type(clradix.median(x, queue=queue)) is type(np.median(x))


# ------------------------------------------------------------------ axes, views, inputs, outputs

def test_axes_views_keepdims(queue, rng):
    x = no_overflow(rng, np.float32, (4, 5, 6))
    d = cl_array.to_device(queue, x)
    views = {"full": (d, x), "transposed": (d.transpose((2, 0, 1)), x.transpose(2, 0, 1)),
             "strided": (d[:, ::2, 1:], x[:, ::2, 1:])}
    for name, (dv, xv) in views.items():
        for axis in (0, 1, -1, None, (0, 2), (1, 2), (0, 1, 2)):
            for keepdims in (False, True):
                what = f"{name} axis={axis} keepdims={keepdims}"
                assert_same(clradix.median(dv, axis, keepdims=keepdims).get(),
                            numpy_of("median", xv, axis, keepdims=keepdims), what)
                assert_same(clradix.quantile(dv, [0.2, 0.6], axis, keepdims=keepdims).get(),
                            numpy_of("quantile", xv, [0.2, 0.6], axis, keepdims=keepdims), what)
        for axis in (0, 1, 2, None):
            check_split(queue, np.ascontiguousarray(xv), [0, 1], axis)
            xs = np.ascontiguousarray(xv)
            m = xs.size if axis is None else xs.shape[axis]
            part = clradix.partition(dv, m - 1, axis).get()
            srt = np.sort(xs.reshape(-1) if axis is None else xs, axis=-1 if axis is None else axis)
            np.testing.assert_array_equal(np.take(part, m - 1, axis=-1 if axis is None else axis),
                                          np.take(srt, m - 1, axis=-1 if axis is None else axis))
            v, i = clradix.kthvalue(dv, 2, axis, keepdims=True)
            ax = -1 if axis is None else axis
            order = np.argsort(xs.reshape(-1) if axis is None else xs, axis=ax, kind="stable")
            want = np.take(order, [1], axis=ax)
            if axis is None:
                want = want.reshape((1,) * xs.ndim)
            np.testing.assert_array_equal(i.get(), want, err_msg=f"{name} axis={axis}")
    np.testing.assert_array_equal(d.get(), x, err_msg="the input changed")


def test_numpy_inputs_and_out(queue, rng):
    x = no_overflow(rng, np.float32, (3, 50))
    out = np.empty(3, np.float32)
    assert clradix.median(x, axis=1, out=out, queue=queue) is out
    assert_same(out, np.median(x, axis=1))
    part = np.empty_like(x)
    assert clradix.partition(x, 7, out=part, queue=queue) is part
    assert_same(part[:, 7], np.sort(x, axis=1)[:, 7])
    v, i = np.empty(3, np.float32), np.empty(3, np.int32)
    res = clradix.kthvalue(x, 4, out=(v, i), queue=queue)
    assert res.values is v and res.indices is i and isinstance(res, clradix.KthvalueResult)
    np.testing.assert_array_equal(i, np.argsort(x, axis=1, kind="stable")[:, 3])
    assert_same(clradix.quantile(x.tolist(), 0.5, queue=queue), np.quantile(x.tolist(), 0.5))
    # device outputs, poisoned first: every element is written
    d = cl_array.to_device(queue, x)
    for fn, args, dtype, shape in (("median", (), np.float32, (3,)),
                                   ("quantile", ([0.1, 0.9],), np.float64, (2, 3)),
                                   ("partition", (9,), np.float32, (3, 50)),
                                   ("argpartition", (9,), np.int64, (3, 50))):
        o = cl_array.empty(queue, shape, dtype)
        poison(queue, o.base_data)
        axis = {"median": 1, "quantile": 1}.get(fn, -1)
        r = getattr(clradix, fn)(d, *args, axis=axis, out=o)
        assert r is o
        ref = getattr(np, fn)(x, *args, axis=axis)
        if fn == "partition":
            ref = np.take_along_axis(x, ref_split(x, [9]), 1)
        if fn == "argpartition":
            ref = ref_split(x, [9])
        np.testing.assert_array_equal(o.get(), ref, err_msg=fn)
    ov, oi = cl_array.empty(queue, (3,), np.float32), cl_array.empty(queue, (3,), np.uint32)
    r = clradix.kthvalue(d, 50, out=(ov, oi))
    assert r.values is ov and r.indices is oi
    np.testing.assert_array_equal(oi.get(), np.argsort(x, axis=1, kind="stable")[:, 49])


def test_wait_for_and_events(queue, rng):
    """The call waits for wait_for (a user event) without waiting on the host; the results'
    only event is the call's."""
    # On NVIDIA's OpenCL this once crashed the process when the event was set: the second call's
    # new pool block was migrated to the queue behind the first call's waiting commands
    # (core/memory.py, block_allocator; test_reliability.test_new_results_behind_a_user_event)
    x = no_overflow(rng, np.float32, (2, 300))
    d = cl_array.to_device(queue, x)
    ue = cl.UserEvent(queue.context)
    box = {}

    def calls():
        box["m"] = clradix.median(d, axis=1, wait_for=[ue])
        box["p"] = clradix.partition(d, 11, wait_for=[ue])
        box["k"] = clradix.kthvalue(d, 3, wait_for=[ue])

    assert returns_within(calls, lambda: ue.set_status(cl.command_execution_status.COMPLETE))
    assert len(box["m"].events) == 1 and len(box["p"].events) == 1
    assert_same(box["m"].get(), np.median(x, axis=1))
    np.testing.assert_array_equal(box["k"].indices.get(),
                                  np.argsort(x, axis=1, kind="stable")[:, 2])


def test_no_buffer_from_host_memory_inside_a_call(queue, rng, monkeypatch):
    """The calls make no Buffer from host memory (COPY_HOST_PTR): NVIDIA's OpenCL was seen to make
    such a copy wait for the queue's earlier commands, so that a call behind a user event did not
    return; the parameter words (kth, quantiles) are arguments of the selection's first kernel,
    which writes them."""
    import types

    from clradix.dispatch import selection as module
    x = no_overflow(rng, np.float32, (3, 500))
    d = cl_array.to_device(queue, x)
    made = []

    def buffer(*args, **kwargs):
        made.append("hostbuf" in kwargs or len(args) > 3)
        return cl.Buffer(*args, **kwargs)
    monkeypatch.setattr(module, "cl", types.SimpleNamespace(
        **{n: getattr(cl, n) for n in dir(cl) if not n.startswith("__")}, __name__="cl"))
    monkeypatch.setattr(module.cl, "Buffer", buffer)
    results = [clradix.median(d, axis=1), clradix.quantile(d, [0.1, 0.5, 0.9], axis=1),
               clradix.partition(d, [3, 7]), clradix.kthvalue(d, 5).values,
               clradix.argpartition(d, 11)]
    assert made == [] or not any(made), made
    assert_same(results[0].get(), np.median(x, axis=1))
    assert_same(results[1].get(), np.quantile(x, [0.1, 0.5, 0.9], axis=1))
    np.testing.assert_array_equal(results[3].get(), np.sort(x, axis=1)[:, 4])


def test_one_launch_sequence_for_rows(queue, rng):
    """Rows of a 2-D array are selected by one pass launch each, whatever their number."""
    x = no_overflow(rng, np.float32, (64, 40))
    d = cl_array.to_device(queue, x)
    clradix.median(d, axis=1).finish()
    sel = clradix.selector_for(queue.context)
    trace = []
    drivers = list(sel.planner.drivers.values())
    for drv in drivers:
        drv.trace = trace
    try:
        assert_same(clradix.median(d, axis=1).get(), np.median(x, axis=1))
    finally:
        for drv in drivers:
            drv.trace = None
    names = [n for n, _ in trace]
    assert names.count("rs_pass0") == 1 and names[-1] == "rs_values", names


def test_gpu_plan_on_a_cpu(ctx, rng):
    """The GPUs' plan (work-groups of 256, 8-bit digits, the candidate claims in a branch on a
    work-group-uniform value) on a CPU runtime that runs such branches as written: the device's
    profile says GPU (PoCL 3.0 mishandles those branches, which is why CPUs do not take them)."""
    device = ctx.devices[0]
    if "portable" in device.platform.name.lower():
        pytest.skip("PoCL runs a uniform branch around barriers wrongly (rank_select.cl.mako)")
    context = cl.Context([device])   # its own shared Selector, whose profile is replaced
    queue = cl.CommandQueue(context)
    planner = clradix.selector_for(context).planner
    planner.profiles.replace(device, dataclasses.replace(planner.profiles.get(device),
                                                         device_type="gpu"))
    plan = planner.selection_driver(device, key_codec(np.float32), 2, 3000, 2)[0]
    assert (plan.wg, plan.digit_bits) == (256, 8)
    x = no_overflow(rng, np.float32, (2, 3000))
    x[1, :2000] = x[1, 0]
    check_split(queue, x, [5, 1500, 2999])
    d = cl_array.to_device(queue, x)
    assert_same(clradix.quantile(d, [0.1, 0.5, 0.5001], axis=1).get(),
                numpy_of("quantile", x, [0.1, 0.5, 0.5001], axis=1))


def test_allocator_and_temporaries(queue, rng, poisoning_allocator):
    """Temporaries from the caller's allocator, poisoned: the kernels write before they read."""
    x = no_overflow(rng, np.float32, (3, 500))
    d = cl_array.to_device(queue, x)
    for pol in (None, GPU_PATH):
        assert_same(clradix.median(d, axis=1, allocator=poisoning_allocator, policy=pol).get(),
                    np.median(x, axis=1))
        part = clradix.partition(d, [5, 250], allocator=poisoning_allocator, policy=pol)
        np.testing.assert_array_equal(part.get(), np.take_along_axis(x, ref_split(x, [5, 250]), 1))
    assert poisoning_allocator.allocated


# ------------------------------------------------------------------ errors

def test_numpy_edges_and_wide_digit_policies(queue, rng):
    """numpy's behaviour at the edges (a 0-d array with an axis, keepdims as an integer, an
    empty slice's one warning), argpartition's out of a wrong dtype named as out, and a policy
    whose 16-bit digits would take more histogram memory than a call may hold refused by name
    instead of allocated (it once asked for 8.5 GiB for 2000 rows of 4 keys)."""
    with pytest.raises(np.exceptions.AxisError, match="axis -1 is out of bounds"):
        clradix.partition(np.float32(3), 0, queue=queue)
    np.testing.assert_array_equal(clradix.partition(np.float32(3), 0, axis=None, queue=queue),
                                  np.partition(np.float32(3), 0, axis=None))
    x = rng.random((3, 20)).astype(np.float32)
    assert clradix.median(x, axis=1, keepdims=1, queue=queue).shape == (3, 1)
    with pytest.raises(TypeError, match="out: argpartition's positions"):
        clradix.argpartition(x, 5, out=np.empty(x.shape, np.int16), queue=queue)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert np.isnan(clradix.nanquantile(np.zeros(0, np.float32), 0.5, queue=queue))
    assert [str(m.message) for m in w] == ["Mean of empty slice"]
    rows = rng.random((2000, 4)).astype(np.float32)
    q = np.linspace(0, 1, 8)
    ref = np.quantile(rows, q, axis=1)
    np.testing.assert_allclose(clradix.quantile(rows, q, axis=1, queue=queue), ref, rtol=1e-6)
    for wide in (SelectionPolicy(first_bits=16), SelectionPolicy(digit_bits=16)):
        with pytest.raises(clradix.PolicyError, match=r"bits=16: .* MiB \(more than"):
            clradix.quantile(rows, q, axis=1, policy=wide, queue=queue)
    np.testing.assert_allclose(clradix.quantile(rows, q, axis=1, queue=queue,
                                                policy=SelectionPolicy(first_bits=8)),
                               ref, rtol=1e-6)


def test_errors_as_numpy(queue):
    x = np.arange(10.0)
    d = cl_array.to_device(queue, x)
    with pytest.raises(ValueError, match=r"kth\(=10\) out of bounds \(10\)"):
        clradix.partition(d, 10)
    with pytest.raises(ValueError, match=r"kth\(=-1\) out of bounds \(10\)"):
        clradix.argpartition(d, -11)
    with pytest.raises(TypeError, match="Partition index must be integer"):
        clradix.partition(d, 1.5)
    with pytest.raises(ValueError, match="Booleans unacceptable"):
        clradix.partition(d, True)
    with pytest.raises(ValueError, match="select kind must be 'introselect'"):
        clradix.partition(d, 1, kind="quick")
    with pytest.raises(ValueError, match=r"Quantiles must be in the range \[0, 1\]"):
        clradix.quantile(d, [0.5, 1.5])
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        clradix.percentile(d, 101)
    with pytest.raises(ValueError, match="q must be a scalar or 1d"):
        clradix.quantile(d, np.zeros((1, 1, 1)))
    with pytest.raises(ValueError, match="'foo' is not a valid method"):
        clradix.quantile(d, 0.5, method="foo")
    with pytest.raises(TypeError):   # numpy's refusal of a bool interpolation
        clradix.quantile(np.array([True, False]), 0.5, queue=queue)
    with pytest.raises(NotImplementedError, match="weights"):
        clradix.quantile(d, 0.5, weights=np.ones(10))
    with pytest.raises(np.exceptions.AxisError):
        clradix.median(d, axis=1)
    with pytest.raises(ValueError, match="repeated axis"):
        clradix.median(cl_array.to_device(queue, np.zeros((2, 2))), axis=(0, 0))
    with pytest.raises(ValueError, match=r"k=0 is out of range"):
        clradix.kthvalue(d, 0)
    with pytest.raises(ValueError, match=r"k=11 is out of range"):
        clradix.kthvalue(d, 11)
    with pytest.raises(TypeError, match="expected dtype float64"):
        clradix.median(cl_array.to_device(queue, np.zeros((2, 3))), axis=1,
                       out=cl_array.empty(queue, 2, np.float32))
    with pytest.raises(ValueError, match="expected shape"):
        clradix.partition(d, 1, out=cl_array.empty(queue, 9, np.float64))
    with pytest.raises(ValueError, match="overlaps the input"):
        clradix.partition(d, 1, out=d)
    with pytest.raises(TypeError, match="policy must be a clradix.SelectionPolicy"):
        clradix.median(d, policy={"wg_size": 64})


def test_empty_slices(queue):
    e = cl_array.to_device(queue, np.zeros((3, 0), np.float32))
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert_same(clradix.median(e, axis=1).get(), numpy_of("median", np.zeros((3, 0),
                                                                           np.float32), axis=1))
    with pytest.raises(IndexError, match="index -1 is out of bounds"):
        clradix.quantile(e, 0.5, axis=1)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        clradix.nanquantile(e, 0.5, axis=1)
    assert clradix.median(e, axis=0).shape == (0,)
    assert clradix.partition(e, 0).shape == (3, 0)
    assert clradix.argpartition(np.zeros(0), 0, queue=queue).shape == (0,)


def test_all_nan_slices_warn(queue):
    x = np.array([[np.nan, np.nan], [1.0, np.nan]])
    with pytest.warns(RuntimeWarning, match="All-NaN slice encountered"):
        r = clradix.nanmedian(x, axis=1, queue=queue)
    assert_same(r, numpy_of("nanmedian", x, axis=1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clradix.nanmedian(x[1:], axis=1, queue=queue)
        clradix.median(x, axis=1, queue=queue)   # NaN without a warning, as numpy's


def test_policy_checks():
    for bad, msg in ((SelectionPolicy(wg_size=3), "power of two"),
                     (SelectionPolicy(wg_size=512), "from 1 to 256"),
                     (SelectionPolicy(digit_bits=12), "8 or 16"),
                     (SelectionPolicy(wg_size=64, digit_bits=16), "needs wg_size=1"),
                     (SelectionPolicy(wg_size=256, items_per_thread=256), "below 65536"),
                     (SelectionPolicy(cand_cap=0), "cand_cap"),
                     (SelectionPolicy(digit_bits=16, first_bits=8), "first_bits must be from"),
                     (SelectionPolicy(wg_size=64, first_bits=13), "needs wg_size=1")):
        with pytest.raises(ValueError, match=msg):
            check_selection_policy(bad)
    with pytest.raises(TypeError, match="integer or None"):
        check_selection_policy(SelectionPolicy(wg_size=64.0))
    gpu = plan_selection(fake_profile(), key_codec(np.float32), 1, 1 << 20, 2)
    assert (gpu.wg, gpu.first_bits, gpu.digit_bits, gpu.digits) == (256, 12, 8, 4)
    assert gpu.cap == 1 << 17   # an eighth of the row: a 12-bit digit's share of uniform floats
    # more ranks, more keys in their groups: a quarter of the row
    assert plan_selection(fake_profile(), key_codec(np.float32), 1, 1 << 20, 10).cap == 1 << 18
    narrow = plan_selection(fake_profile(), key_codec(np.uint8), 1, 1 << 20, 2)
    assert (narrow.first_bits, narrow.digits) == (8, 1)
    cpu = plan_selection(fake_profile(device_type="cpu", compute_units=2), key_codec(np.float32),
                         1, 1 << 20, 2)
    assert (cpu.wg, cpu.digit_bits, cpu.digits, cpu.groups) == (1, 16, 2, 8)
    many = plan_selection(fake_profile(device_type="cpu"), key_codec(np.float32), 4096, 4096, 2)
    assert many.digit_bits == 8   # 16-bit slots for 4096 rows would not fit the budget
    rows = plan_selection(fake_profile(), key_codec(np.float32), 4096, 4096, 2)
    # rows shorter than WIDE_FIRST_FROM: an 8-bit first digit; a work-group of 128 a short row
    assert (rows.first_bits, rows.digits, rows.wg, rows.groups) == (8, 4, 128, 1)
    wide = plan_selection(fake_profile(), key_codec(np.float32), 64, 1 << 16, 2)
    assert (wide.first_bits, wide.digits, wide.wg) == (12, 4, 256)
    assert plan_selection(fake_profile(), key_codec(np.float32), 4096, 4096, 2,
                          SelectionPolicy(wg_size=256, first_bits=12)).policy.first_bits == 12
    short = plan_selection(fake_profile(), key_codec(np.float32), 1 << 16, 64, 2)
    assert (short.first_bits, short.digits) == (8, 4)


# ------------------------------------------------------------------ hypothesis

# (dtype, policy): the configurations the other cases build
CONFIGS = [(np.float32, "default"), (np.int8, "default"), (np.uint16, "default"),
           (np.float64, "default"), (np.float32, "gpu_path"), (np.float32, "cpu_8bit"),
           (np.int16, "cpu_8bit")]


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(config=st.sampled_from(CONFIGS), rows=st.integers(1, 3), n=st.integers(1, 300),
       dist=st.sampled_from(ADVERSARIAL + ["uniform"]), seed=st.integers(0, 2 ** 16),
       nk=st.integers(1, 4), q=st.lists(st.floats(0, 1), min_size=1, max_size=5),
       method=st.sampled_from(selection.METHODS))
def test_hypothesis(queue, config, rows, n, dist, seed, nk, q, method):
    dtype, policy = config
    rng = np.random.default_rng(seed)
    pol = POLICIES[policy]
    if dist == "uniform":
        x = no_overflow(rng, dtype, (rows, n))
    else:
        x = np.stack([adversarial(rng, dist, dtype, n) for _ in range(rows)])
    kth = sorted(rng.integers(0, n, nk).tolist())
    check_split(queue, x, kth, policy=pol)
    d = cl_array.to_device(queue, x)
    assert_same(clradix.quantile(d, q, axis=1, method=method, policy=pol).get(),
                numpy_of("quantile", x, q, axis=1, method=method), f"{method} {q}")
    assert_same(clradix.median(d, axis=1, policy=pol).get(), numpy_of("median", x, axis=1))
    k = int(rng.integers(1, n + 1))
    v, i = clradix.kthvalue(d, k, policy=pol)
    np.testing.assert_array_equal(i.get(), np.argsort(order_keys(x), axis=1, kind="stable")
                                  [:, k - 1])
