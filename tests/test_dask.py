"""clradix.dask on a LocalCluster of two worker processes (and the local schedulers): top-k and
argtopk, sort and argsort of dask arrays, the DataFrame sort_function, each worker's device.
Results are compared with numpy (clradix's semantics: ties by position, NaN largest / last,
-0.0 == +0.0; bit for bit)."""

import os
import sys

import numpy as np
import pytest

pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import pyopencl.array as cl_array  # noqa: E402

import clradix  # noqa: E402
import clradix.dask as crd  # noqa: E402
from clradix.core.device import all_devices  # noqa: E402
from clradix.core.keys import KEY_DTYPES  # noqa: E402

from conftest import _DEVICES  # noqa: E402
from data import float_specials  # noqa: E402
from reference import bits_of, ref_argsort, ref_topk  # noqa: E402

# the test device, as an index in clradix's device list (what CLRADIX_DEVICE takes)
DEVICE_INDEX = str([d.int_ptr for d in all_devices()].index(_DEVICES[0].int_ptr))
# uneven chunks, an empty one among them
CHUNKS = (300, 0, 1, 977, 450, 272)
N = sum(CHUNKS)
# on the cluster: every family (unsigned, signed, float) and width extremes; every key dtype
# runs in this process (test_every_key_dtype)
DTYPES = (np.uint8, np.int32, np.uint64, np.float16, np.float32, np.float64)


def _all_ops(x, chunks):
    d = da.from_array(x, chunks=(chunks,))
    return (crd.sort(d), crd.argsort(d), crd.argsort(d, partitions=3), crd.topk(d, 5),
            crd.argtopk(d, -5), crd.topk(d, 1000), crd.argtopk(d, 1000, split_every=2))


@pytest.fixture(scope="module")
def client():
    """Two worker processes (2 threads each), each picking the test device through the plugin.
    The kernels the tests use are built first in this process, once (the workers then load
    them from pyopencl's disk cache instead of building each at once)."""
    rng = np.random.default_rng(1)
    crd.use_device(DEVICE_INDEX)
    with dask.config.set(scheduler="synchronous"):
        for dt in DTYPES:
            dask.compute(*_all_ops(keys(rng, dt, N), CHUNKS))
        for dt in (np.float32, np.uint64):
            x = da.from_array(keys(rng, dt, 37 * 250).reshape(37, 250), chunks=(10, 60))
            dask.compute(crd.argtopk(x, 3), crd.topk(x, -30, axis=0))
    old = os.environ.get("CLRADIX_DEVICE")
    os.environ["CLRADIX_DEVICE"] = DEVICE_INDEX   # inherited by the worker processes too
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=2,
                                       dashboard_address=None, worker_dashboard_address=None)
    c = distributed.Client(cluster)
    try:
        c.register_plugin(crd.DevicePlugin(DEVICE_INDEX))
        with dask.config.set(scheduler=c):
            yield c
    finally:
        c.close()
        cluster.close()
        if old is None:
            os.environ.pop("CLRADIX_DEVICE", None)
        else:
            os.environ["CLRADIX_DEVICE"] = old


def keys(rng, dtype, n):
    """Keys with many ties (integers of few values; floats salted with NaNs, +-0, inf)."""
    d = np.dtype(dtype)
    if d.kind == "f":
        return float_specials(rng, d, n)
    return rng.integers(0, 7, n).astype(d) * d.type(3)


def test_workers_hold_the_device(client):
    names = client.run(lambda: clradix.dask.current().describe())
    pids = client.run(os.getpid)
    assert len(names) == 2 and len(set(pids.values())) == 2
    want = _DEVICES[0].name.strip()
    assert all(want in v for v in names.values()), names
    # a device each: two merge groups
    assert sys.modules["clradix.dask.sort"]._group_count() == (2, 2)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_topk(client, rng, dtype):
    x = keys(rng, dtype, N)
    d = da.from_array(x, chunks=(CHUNKS,))
    cases = [(k, se) for k in (5, -5, 1000, -N) for se in (None, 2)]
    got = dask.compute(*[(crd.topk(d, k, split_every=se), crd.argtopk(d, k, split_every=se))
                         for k, se in cases])
    for (k, se), (v, p) in zip(cases, got):
        rv, ri = ref_topk(x, abs(k), largest=k > 0)
        assert p.dtype == np.int64 and v.dtype == x.dtype and v.shape == (abs(k),)
        np.testing.assert_array_equal(p, ri[0], err_msg=f"k={k} split_every={se}")
        np.testing.assert_array_equal(bits_of(v), bits_of(rv[0]), err_msg=f"k={k}")


def test_topk_equals_clradix_topk(client, rng):
    """The whole-array call's result, bit for bit (float32 with NaN payloads and zeros)."""
    x = float_specials(rng, np.float32, N)
    d = da.from_array(x, chunks=(CHUNKS,))
    dev = clradix.dask.use_device(DEVICE_INDEX)
    for k in (17, -17):
        v, i = clradix.topk(cl_array.to_device(dev.queue, x), abs(k), largest=k > 0)
        got_v, got_i = dask.compute(crd.topk(d, k), crd.argtopk(d, k))
        np.testing.assert_array_equal(bits_of(got_v), bits_of(v.get()))
        np.testing.assert_array_equal(got_i, i.get())


@pytest.mark.parametrize("dtype", [np.float32, np.uint64], ids=str)
def test_topk_rows(client, rng, dtype):
    """2-D arrays, per row, rows and columns chunked; along axis 0 too."""
    x = keys(rng, dtype, 37 * 250).reshape(37, 250)
    d = da.from_array(x, chunks=((10, 0, 27), (60, 100, 0, 90)))
    cases = [(k, axis) for k in (3, -30) for axis in (-1, 0)]
    got = dask.compute(*[(crd.topk(d, k, axis=axis), crd.argtopk(d, k, axis=axis))
                         for k, axis in cases])
    for (k, axis), (v, p) in zip(cases, got):
        xa = x if axis == -1 else x.T
        rv, ri = ref_topk(xa, abs(k), largest=k > 0)
        if axis == 0:
            rv, ri = rv.T, ri.T
        np.testing.assert_array_equal(p, ri, err_msg=f"k={k} axis={axis}")
        np.testing.assert_array_equal(bits_of(v), bits_of(rv))


def test_topk_errors():
    d = da.zeros(10, dtype=np.float32, chunks=3)
    with pytest.raises(ValueError, match="exceeds"):
        crd.topk(d, 11)
    with pytest.raises(TypeError, match="integer"):
        crd.topk(d, 1.5)
    with pytest.raises(TypeError, match="unsupported key dtype"):
        crd.topk(da.zeros(10, dtype=np.complex64, chunks=3), 1)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        crd.topk(da.zeros((2, 2, 2), chunks=1), 1)
    assert crd.topk(d, 0).compute(scheduler="sync").shape == (0,)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sort(client, rng, dtype):
    x = keys(rng, dtype, N)
    d = da.from_array(x, chunks=(CHUNKS,))
    s, a, a3 = dask.compute(crd.sort(d), crd.argsort(d), crd.argsort(d, partitions=3))
    want = ref_argsort(x)
    np.testing.assert_array_equal(bits_of(s), bits_of(x[want]))
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(a3, want)
    assert a.dtype == np.int64


def test_sort_all_equal_keys_spread(client):
    """Ties are cut by position: all-equal keys fill every partition about evenly."""
    x = np.full(4000, 7, dtype=np.uint32)
    d = da.from_array(x, chunks=(1000, 0, 1500, 1500))
    s = crd.argsort(d, partitions=4).persist().compute_chunk_sizes()
    sizes = s.chunks[0]
    assert sum(sizes) == 4000 and max(sizes) <= 1300, sizes
    np.testing.assert_array_equal(s.compute(), np.arange(4000))
    f = np.zeros(3000, np.float32)
    f[::2] = -0.0
    f[5::7] = np.nan
    got = crd.sort(da.from_array(f, chunks=700), partitions=5).compute()
    np.testing.assert_array_equal(bits_of(got), bits_of(f[ref_argsort(f)]))


def test_sort_output_chunks(client, rng):
    x = rng.integers(0, 2 ** 32, 5000, dtype=np.uint32)
    s = crd.sort(da.from_array(x, chunks=1000), partitions=6)
    assert s.numblocks == (6,) and all(np.isnan(c) for c in s.chunks[0])
    parts = dask.compute(*s.to_delayed())
    assert len(parts) == 6 and sum(p.size for p in parts) == 5000
    assert all(p.size > 200 for p in parts), [p.size for p in parts]
    np.testing.assert_array_equal(np.concatenate(parts), np.sort(x))


def test_sort_errors():
    with pytest.raises(ValueError, match="1-D"):
        crd.sort(da.zeros((2, 2), chunks=1))
    with pytest.raises(TypeError, match="unsupported key dtype"):
        crd.sort(da.zeros(4, dtype=np.complex64, chunks=2))
    with pytest.raises(ValueError, match="engine"):
        crd.sort(da.zeros(4, chunks=2), engine="cuda")
    assert crd.sort(da.zeros(0, dtype=np.int8, chunks=1)).compute(scheduler="sync").size == 0
    x = da.zeros(10, chunks=5)
    for bad, err in ((2.5, TypeError), (True, TypeError), ("3", TypeError), (0, ValueError),
                     (float("nan"), TypeError)):
        with pytest.raises(err, match="partitions must be a positive integer"):
            crd.sort(x, partitions=bad)
        with pytest.raises(err, match="oversample must be a positive integer"):
            crd.argsort(x, oversample=bad)
    with pytest.raises(TypeError, match="oversample"):
        crd.sort(x, oversample=None)


@pytest.mark.parametrize("dtype", [np.float16, np.bool_], ids=str)
def test_resident_keys_of_every_width(rng, dtype):
    """Keys without a pyopencl C type (float16, bool) left on the device by to_device: sampled,
    sorted and selected there; a row block of no rows selects nothing."""
    x = (rng.standard_normal(3000) if dtype == np.float16 else rng.integers(0, 2, 3000)
         ).astype(dtype)
    u = np.uint16 if dtype == np.float16 else np.uint8
    with dask.config.set(scheduler="synchronous"):
        xd = crd.to_device(da.from_array(x, chunks=700)).persist()
        s, a = dask.compute(crd.sort(xd, partitions=3), crd.argsort(xd))
        v, i = dask.compute(crd.topk(xd, 5), crd.argtopk(xd, -5))
        want = ref_argsort(x)
        np.testing.assert_array_equal(s.view(u), x[want].view(u))
        np.testing.assert_array_equal(a, want)
        np.testing.assert_array_equal(v.view(u), ref_topk(x, 5)[0][0].view(u))
        np.testing.assert_array_equal(i, ref_topk(x, 5, largest=False)[1][0])
        m = np.arange(600, dtype=np.int32).reshape(2, 300)
        md = crd.to_device(da.from_array(m, chunks=((0, 2), (300,)))).persist()
        np.testing.assert_array_equal(crd.topk(md, 3, axis=1).compute(), m[:, ::-1][:, :3])


@pytest.mark.parametrize("dtype", KEY_DTYPES + (np.dtype(bool),), ids=str)
def test_every_key_dtype(rng, dtype):
    """Every key dtype (and bool), in this process (the synchronous scheduler)."""
    x = keys(rng, dtype, N)
    with dask.config.set(scheduler="synchronous"):
        s, a, a3, v, i, v2, i2 = dask.compute(*_all_ops(x, CHUNKS))
    want = ref_argsort(x)
    np.testing.assert_array_equal(bits_of(s), bits_of(x[want]))
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(a3, want)
    np.testing.assert_array_equal(bits_of(v), bits_of(ref_topk(x, 5)[0][0]))
    np.testing.assert_array_equal(i, ref_topk(x, 5, largest=False)[1][0])
    np.testing.assert_array_equal(bits_of(v2), bits_of(ref_topk(x, 1000)[0][0]))
    np.testing.assert_array_equal(i2, ref_topk(x, 1000)[1][0])


@pytest.mark.parametrize("scheduler,layout", [("synchronous", (1, 1)), ("threads", (3, 3)),
                                              ("threads", (3, 1))])
def test_local_schedulers(rng, monkeypatch, scheduler, layout):
    """No cluster: the tasks run in this process (one WorkerDevice, a queue per thread); the
    partitions merge in one group, in three with piece tasks (as for three worker processes),
    or in three taking the split lists (one process with three devices)."""
    sort_mod = sys.modules["clradix.dask.sort"]
    monkeypatch.setattr(sort_mod, "_group_count", lambda: layout)
    x = keys(rng, np.float64, N)
    graph = dict(crd.sort(da.from_array(x, chunks=(CHUNKS,))).__dask_graph__())
    assert any("clradix-piece" in str(k) for k in graph) == (layout == (3, 3))
    x = keys(rng, np.float64, N)
    d = da.from_array(x, chunks=(CHUNKS,))
    with dask.config.set(scheduler=scheduler):
        s, a, v, i = dask.compute(crd.sort(d), crd.argsort(d), crd.topk(d, -9),
                                  crd.argtopk(d, 9))
    want = ref_argsort(x)
    np.testing.assert_array_equal(bits_of(s), bits_of(x[want]))
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(bits_of(v), bits_of(ref_topk(x, 9, largest=False)[0][0]))
    np.testing.assert_array_equal(i, ref_topk(x, 9)[1][0])


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.float64], ids=str)
def test_numpy_engine_is_the_same(rng, dtype):
    x = keys(rng, dtype, N)
    d = da.from_array(x, chunks=(CHUNKS,))
    with dask.config.set(scheduler="synchronous"):
        for fn, args in [(crd.topk, (40,)), (crd.argtopk, (-40,)), (crd.sort, ()),
                         (crd.argsort, ())]:
            a, b = fn(d, *args).compute(), fn(d, *args, engine="numpy").compute()
            np.testing.assert_array_equal(bits_of(a), bits_of(b), err_msg=fn.__name__)


def test_no_device_names_the_worker(client):
    def pick():
        return clradix.dask.devices.select_device("no-such-opencl-device")
    with pytest.raises(crd.NoDeviceError, match=r"worker .* no usable OpenCL device matching .*"
                                                r"no-such-opencl-device.*found: "):
        client.run(pick)
    with pytest.raises(crd.NoDeviceError, match=r"process \d+ on .*found: 0: "):
        pick()


def test_worker_slots():
    from clradix.dask import plugin
    assert plugin._name_slot(3) == 3 and plugin._name_slot("gpu-worker-12") == 12
    assert plugin._name_slot("tcp://a") is None
    slot, path = plugin._claim_slot()
    slot2, path2 = plugin._claim_slot()
    try:
        assert slot2 != slot and os.path.exists(path)
    finally:
        os.unlink(path)
        os.unlink(path2)


# ---------------------------------------------------------------- dask.dataframe sort_function

def _frame(rng, n):
    pd = pytest.importorskip("pandas")
    a = rng.integers(0, 5, n).astype(np.int32)
    b = rng.standard_normal(n).round(1)
    b[rng.random(n) < 0.1] = np.nan
    t = pd.to_datetime(rng.integers(0, 4, n), unit="D").to_numpy().copy()
    t[rng.random(n) < 0.1] = np.datetime64("NaT")
    c = pd.array(rng.integers(0, 3, n), dtype="Int64")
    c[rng.random(n) < 0.2] = pd.NA
    return pd.DataFrame({"a": a, "b": b, "t": t, "c": c, "u": rng.integers(0, 9, n) > 4,
                         "row": np.arange(n)}, index=rng.permutation(n))


@pytest.mark.parametrize("by, ascending", [("b", True), ("b", False), (["a", "b"], [True, False]),
                                           (["c", "t", "a"], [False, True, True]),
                                           (["u", "a"], True)])
@pytest.mark.parametrize("na_position", ["last", "first"])
def test_sort_function_on_a_partition(rng, by, ascending, na_position):
    df = _frame(rng, 500)
    with dask.config.set(scheduler="synchronous"):
        got = crd.sort_function(df, by=by, ascending=ascending, na_position=na_position)
    want = df.sort_values(by, ascending=ascending, na_position=na_position, kind="stable")
    assert got.equals(want) and list(got.index) == list(want.index)


def test_sort_function_falls_back_to_pandas(rng):
    df = _frame(rng, 50)
    df["s"] = [f"k{v % 7}" for v in range(50)]
    got = crd.sort_function(df, by=["s", "a"], ascending=True, ignore_index=True)
    assert got.equals(df.sort_values(["s", "a"], kind="stable", ignore_index=True))


def test_sort_function_arguments_as_pandas(rng):
    """A tuple ``by`` is one column label (a MultiIndex column), as in pandas, never a list of
    columns; ``ascending`` takes 0 and 1 as pandas does, and refuses what pandas refuses."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({("a", "x"): rng.integers(0, 4, 40), ("a", "y"): rng.standard_normal(40),
                       ("b", "x"): rng.integers(0, 3, 40)})
    got = crd.sort_function(df, ("a", "y"))
    assert got.equals(df.sort_values(("a", "y"), kind="stable"))
    flat = pd.DataFrame({"a": rng.integers(0, 3, 30), "b": rng.integers(0, 3, 30)})
    with pytest.raises(KeyError):
        crd.sort_function(flat, ("a", "b"))
    for asc in (0, 1, [1, 0]):
        assert crd.sort_function(flat, ["a", "b"] if isinstance(asc, list) else "a",
                                 ascending=asc).equals(
            flat.sort_values(["a", "b"] if isinstance(asc, list) else "a", ascending=asc,
                             kind="stable"))
    with pytest.raises(TypeError, match="ascending"):
        crd.sort_function(flat, "a", ascending=np.array([True]))
    with pytest.raises(ValueError, match="one bool per column"):
        crd.sort_function(flat, ["a", "b"], ascending=[True])


def test_dataframe_sort_values(client, rng):
    dd = pytest.importorskip("dask.dataframe")
    df = _frame(rng, 3000).drop(columns=["c"])
    ddf = dd.from_pandas(df, npartitions=4)
    got = ddf.sort_values(["a", "b"], sort_function=crd.sort_function).compute()
    want = df.sort_values(["a", "b"], kind="stable")
    assert len(got) == len(want)
    for col in ("a", "b"):
        np.testing.assert_array_equal(got[col].to_numpy(), want[col].to_numpy())
    assert sorted(got["row"]) == list(range(3000))
    # rows keep their own values
    assert (got.set_index("row").sort_index()[["a", "b"]].fillna(-1)
            .equals(df.set_index("row").sort_index()[["a", "b"]].fillna(-1)))


def test_plugin_gives_each_worker_its_slot(monkeypatch):
    """Worker i of a machine gets the i-th matching device (slot from the name's number, else
    a claimed slot)."""
    from types import SimpleNamespace
    calls = []

    def fake_use(spec, slot, count):
        calls.append((spec, slot))
        assert count == 1
        return [clradix.dask.current()]
    monkeypatch.setattr(clradix.dask.devices, "use_devices", fake_use)
    for name in (0, "gpu-3", "tcp://host"):
        plugin = crd.DevicePlugin("NVIDIA")
        w = SimpleNamespace(name=name)
        plugin.setup(w)
        assert w.clradix_device
        plugin.teardown(w)
    assert calls[:2] == [("NVIDIA", 0), ("NVIDIA", 3)] and calls[2][0] == "NVIDIA"


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int16, np.uint8], ids=str)
def test_numpy_engine_select(rng, dtype):
    """The reference engine's selection alone: NaN as the boundary, ties, both directions."""
    from clradix.dask.engines import NumpyEngine
    x = keys(rng, dtype, 6 * 200).reshape(6, 200)
    if np.dtype(dtype).kind == "f":
        x[0, ::3] = np.nan   # more NaNs than k: the k-th largest is a NaN
    for k in (1, 5, 67, 199):
        for largest in (True, False):
            for ranked in (True, False):
                v, p = NumpyEngine().select(x, k, largest, ranked)
                rv, rp = ref_topk(x, k, largest)
                if not ranked:
                    rp = np.sort(rp, axis=-1)
                    rv = np.take_along_axis(x, rp, -1)
                np.testing.assert_array_equal(p, rp, err_msg=f"k={k} largest={largest}")
                np.testing.assert_array_equal(bits_of(v), bits_of(rv))


def test_benchmark_command(tmp_path):
    """`python -m benchmarks dask` at a small size, 1 worker and 2 sharing the test device:
    it runs every case, checks every result (a wrong one exits 1) and records the one-call
    baseline beside the Dask runs."""
    import json
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "dask.json"
    cmd = [sys.executable, "-m", "benchmarks", "dask", "--device", DEVICE_INDEX, "--log2n", "15",
           "--chunk-log2", "13", "--workers", "1,2", "--share-device", "--threads-per-worker",
           "1", "--repeat", "1", "--json", str(out)]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert all(r["ok"] for r in rows)
    cases = {(r["impl"], r["case"]) for r in rows}
    for op in ("sort", "argsort", "topk k=1000"):
        for engine in ("clradix", "numpy"):
            assert (f"clradix.dask[{engine}]", f"{op} 1 worker(s)") in cases
            assert (f"clradix.dask[{engine}]", f"{op} 2 worker(s) on 1 device") in cases
    for op in ("sort", "argsort", "topk"):
        assert ("clradix (one call)", f"{op} one device") in cases
    # every timed Dask run did the work (a result still held would make the next run free)
    assert all(r["phases_s"].get("calls", 0) > 0 for r in rows
               if r["impl"] == "clradix.dask[clradix]")


@pytest.mark.parametrize("dtype", [np.float32, np.uint64], ids=str)
def test_staged_copies(rng, monkeypatch, dtype):
    """A GPU's copy paths, run on the test device: uploads through pinned staging slices split
    over copy threads, results in pinned arrays leased from the pool (and returned to it when
    dropped), fresh arrays past the pool's limit; chunks kept on the device (on_device,
    to_device) and handed back as numpy arrays."""
    from clradix.dask import devices, memory
    monkeypatch.setattr(memory, "SLICE_BYTES", 1024)
    monkeypatch.setattr(memory, "_SPLIT_MIN", 2048)
    dev = devices.use_device(DEVICE_INDEX)
    monkeypatch.setattr(dev, "copies", memory.HostCopies(dev.context, dev.device, in_place=False))
    dev.copies.staging.threads = 3
    x = keys(rng, dtype, 5 * N)
    d = da.from_array(x, chunks=(CHUNKS[:3] + (5 * N - sum(CHUNKS[:3]) - 999, 999),))
    want = ref_argsort(x)
    with dask.config.set(scheduler="threads"):
        s, a, v, i = dask.compute(crd.sort(d), crd.argsort(d, partitions=3), crd.topk(d, -9),
                                  crd.argtopk(d, 9))
        np.testing.assert_array_equal(bits_of(s), bits_of(x[want]))
        np.testing.assert_array_equal(a, want)
        np.testing.assert_array_equal(bits_of(v), bits_of(ref_topk(x, 9, largest=False)[0][0]))
        np.testing.assert_array_equal(i, ref_topk(x, 9)[1][0])
        held = dev.copies.pinned.held_bytes()
        assert held > 0
        del s, a
        # the leased results went back to the pool: the same sort reuses them
        s = crd.sort(d).compute()
        assert dev.copies.pinned.held_bytes() == held
        np.testing.assert_array_equal(bits_of(s), bits_of(x[want]))
        # past the pool's limit: fresh arrays, filled through the staging slices
        dev.copies.pinned.limit = 0
        dev.copies.pinned._trim(1 << 62)
        parts = dask.compute(*crd.argsort(d).to_delayed())
        np.testing.assert_array_equal(np.concatenate(parts), want)
        # device-resident input and output
        xd = crd.to_device(d).persist()
        blocks = dask.compute(*crd.sort(xd, on_device=True).to_delayed())
    assert all(isinstance(b, crd.DeviceChunk) and b.on_device for b in blocks)
    np.testing.assert_array_equal(bits_of(np.concatenate([b.get() for b in blocks])),
                                  bits_of(x[want]))
    assert blocks[0].array.context == dev.context


def test_on_device_chunks(client, rng):
    """Results kept on the workers' devices: each chunk a DeviceChunk on its worker (a task
    there gets its pyopencl Array), numpy bytes once gathered; a device-resident input gives
    the same sort."""
    x = keys(rng, np.float32, N)
    want = ref_argsort(x)
    xd = crd.to_device(da.from_array(x, chunks=(CHUNKS,))).persist()
    s = crd.sort(xd, on_device=True, partitions=3).persist()
    a = crd.argsort(xd, on_device=True)

    def look(c):
        return (type(c).__name__, c.on_device, c.array.get(c.queue).tobytes())
    futures = sorted(distributed.futures_of(s), key=lambda f: f.key[1])
    got = client.gather([client.submit(look, f) for f in futures])
    assert all(kind == "DeviceChunk" and on for kind, on, _ in got)
    np.testing.assert_array_equal(
        bits_of(np.frombuffer(b"".join(b for _, _, b in got), np.float32)), bits_of(x[want]))
    np.testing.assert_array_equal(a.compute(), want)
    np.testing.assert_array_equal(bits_of(s.compute()), bits_of(x[want]))


@pytest.mark.parametrize("partitions", [1, 2])
def test_on_device_compute_is_numpy(rng, partitions):
    """compute() of results kept on the device gives a numpy array whatever the number of
    chunks (one chunk took another path in Dask than several and came back a DeviceChunk);
    persist() keeps them DeviceChunks. Sort, argsort, to_device, and top-k of resident keys."""
    x = keys(rng, np.int32, 1000)
    want = ref_argsort(x)
    d = da.from_array(x, chunks=(1000 // partitions,))
    with dask.config.set(scheduler="synchronous"):
        resident = crd.to_device(d)
        ops = [(crd.sort(d, partitions=partitions, on_device=True), x[want]),
               (crd.argsort(d, partitions=partitions, on_device=True), want),
               (crd.sort(resident, partitions=partitions, on_device=True), x[want]),
               (resident, x),
               (crd.topk(resident, 7), ref_topk(x, 7)[0][0]),
               (crd.argtopk(resident, -7), ref_topk(x, 7, largest=False)[1][0])]
        for i, (op, expect) in enumerate(ops):
            got = op.compute()
            assert type(got) is np.ndarray, (i, type(got))
            np.testing.assert_array_equal(got, expect, err_msg=str(i))
        for op, _ in ops[:4]:
            blocks = dask.compute(*op.persist().to_delayed())
            assert all(isinstance(b, crd.DeviceChunk) and b.on_device for b in blocks)
    # a chunk's copy() is a numpy array of its own, also of a chunk held on the host
    held = crd.DeviceChunk(host=x)
    assert type(held.copy()) is np.ndarray and not np.shares_memory(held.copy(), x)


def test_pinned_pool_reuse():
    """Pinned result arrays: a dropped array's buffer serves a later one of about its size
    (not one under half of it); past the limit, None (the caller falls back to numpy)."""
    from clradix.dask import devices, memory
    dev = devices.use_device(DEVICE_INDEX)
    pool = memory.PinnedPool(dev.context, limit=8 << 20)
    a = pool.empty(300_000, np.float32)
    a[:] = 1
    held = pool.held_bytes()
    assert held >= a.nbytes and isinstance(a, np.ndarray) and a.shape == (300_000,)
    del a
    b = pool.empty(310_000, np.float32)
    assert pool.held_bytes() == held
    b[:] = 2
    c = pool.empty(100_000, np.int64)   # the free list is empty: a new buffer
    assert pool.held_bytes() > held
    assert pool.empty(4_000_000, np.float32) is None
    assert b.sum() == 620_000 and c.size == 100_000


def test_several_devices_in_one_process(rng):
    """One process driving three devices (three contexts on the test device): tasks spread over
    them, the partitions merge in three groups, and pieces, resident chunks and results that a
    task on another device uses move through host memory; every result as one device gives."""
    from clradix.dask import devices
    engines = sys.modules["clradix.dask.engines"]
    used = []
    real_lease = devices.lease

    def spy(prefer=None):
        cm = real_lease(prefer)
        used.append(cm)
        return cm
    devs = devices.use_devices(DEVICE_INDEX, count=3)
    try:
        assert len({d.context.int_ptr for d in devs}) == 3
        x = keys(rng, np.float32, N)
        want = ref_argsort(x)
        d = da.from_array(x, chunks=(CHUNKS,))
        with dask.config.set(scheduler="threads", num_workers=4):
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(devices, "lease", spy)
                s, a, v, i = dask.compute(crd.sort(d), crd.argsort(d, partitions=5),
                                          crd.topk(d, -9), crd.argtopk(d, 9))
            assert len(used) >= 2 * d.numblocks[0]
            np.testing.assert_array_equal(bits_of(s), bits_of(x[want]))
            np.testing.assert_array_equal(a, want)
            np.testing.assert_array_equal(bits_of(v), bits_of(ref_topk(x, 9, largest=False)[0][0]))
            np.testing.assert_array_equal(i, ref_topk(x, 9)[1][0])
            # resident chunks on every device, the result left there
            xd = crd.to_device(d).persist()
            held = {c.device.context.int_ptr for c in dask.compute(*xd.to_delayed().ravel())}
            out = crd.sort(xd, on_device=True, partitions=4).persist()
            parts = dask.compute(*out.to_delayed().ravel())
            assert all(isinstance(p, crd.DeviceChunk) and p.on_device for p in parts)
            np.testing.assert_array_equal(
                bits_of(np.concatenate([np.asarray(p) for p in parts])), bits_of(x[want]))
        assert held <= {dv.context.int_ptr for dv in devs} and len(held) >= 2
        # a chunk of one device asked for by a task bound to another: copied there once
        c = crd.DeviceChunk(devs[0].copies.to_device(devs[0].queue, x[:1000]))
        assert c.device is devs[0]
        with devices.bind(devs[2]):
            moved = c.array
            assert moved.context == devs[2].context and c.device is devs[2]
            np.testing.assert_array_equal(bits_of(moved.get(c.queue)), bits_of(x[:1000]))
        with dask.config.set(scheduler="threads"):   # not a client's, even where one exists
            assert sys.modules["clradix.dask.sort"]._group_count() == (3, 1)
        assert engines._holder([[c], []]) is devs[2]
    finally:
        devices.use_device(DEVICE_INDEX)


def test_merge_fetches_pieces_of_another_device(rng):
    """A merge on one device of pieces that another device holds: each of their buffers comes
    over once (one span), the pieces' keys and positions arrive intact, in chunk order beside
    host pieces and pieces of the merging device."""
    from clradix.dask import devices
    engines = sys.modules["clradix.dask.engines"]
    devs = devices.use_devices(DEVICE_INDEX, count=2)
    try:
        x = keys(rng, np.float32, 5000)
        eng = engines.ENGINES["clradix"]
        with devices.bind(devs[0]):
            k0, p0 = eng.sort_chunk(x[:3000], 0, True)
        with devices.bind(devs[1]):
            k1, p1 = eng.sort_chunk(x[3000:4000], 3000, True)
        tail = np.sort(x[4000:], kind="stable")
        tail_pos = 4000 + np.argsort(x[4000:], kind="stable")
        cuts0, cuts1, cuts2 = [0, 700, 1800, 3000], [0, 10, 990, 1000], [0, 400, 600, 1000]
        partitions = [[eng.piece(k0, p0, cuts0[j], cuts0[j + 1]),
                       eng.piece(k1, p1, cuts1[j], cuts1[j + 1]),
                       (tail[cuts2[j]:cuts2[j + 1]], tail_pos[cuts2[j]:cuts2[j + 1]])]
                      for j in range(3)]
        fetched = []
        real_spans = engines._download_spans

        def spy(spans):
            fetched.append(len(spans))
            return real_spans(spans)
        with pytest.MonkeyPatch.context() as mp, devices.bind(devs[1]):
            mp.setattr(engines, "_download_spans", spy)
            got = eng.merge_group(partitions, True, np.dtype(np.int64), False)
        assert fetched == [2]   # devs[0]'s keys buffer and its positions buffer, once each
        h0, hp0 = k0.get(), p0.get()
        h1, hp1 = k1.get(), p1.get()
        for j, out in enumerate(got):
            ks = np.concatenate([h0[cuts0[j]:cuts0[j + 1]], h1[cuts1[j]:cuts1[j + 1]],
                                 tail[cuts2[j]:cuts2[j + 1]]])
            ps = np.concatenate([hp0[cuts0[j]:cuts0[j + 1]], hp1[cuts1[j]:cuts1[j + 1]],
                                 tail_pos[cuts2[j]:cuts2[j + 1]]])
            np.testing.assert_array_equal(out, ps[np.argsort(ks, kind="stable")])
    finally:
        devices.use_device(DEVICE_INDEX)


def test_merge_failure_is_raised_and_leaves_the_pools_sound(rng, monkeypatch):
    """A merge whose second partition's sort fails raises that error (after the commands it had
    enqueued finish: their buffers go back to the pools), and the next sort is right."""
    from clradix.dask import devices, memory
    dev = devices.use_device(DEVICE_INDEX)
    monkeypatch.setattr(dev, "copies", memory.HostCopies(dev.context, dev.device, in_place=False))
    x = keys(rng, np.float32, 4 * N)
    d = da.from_array(x, chunks=((3000, 3000, 4 * N - 6000),))
    real = dev.sorter.sort
    calls = []

    def failing(queue, keys, **kw):
        calls.append(keys.size)
        if len(calls) == 5:   # three splits, then the merges' second partition
            raise RuntimeError("injected sort failure")
        return real(queue, keys, **kw)
    with dask.config.set(scheduler="synchronous"):
        monkeypatch.setattr(dev.sorter, "sort", failing)
        with pytest.raises(RuntimeError, match="injected sort failure"):
            crd.sort(d, partitions=4).compute()
        monkeypatch.setattr(dev.sorter, "sort", real)
        np.testing.assert_array_equal(bits_of(crd.sort(d, partitions=4).compute()),
                                      bits_of(x[ref_argsort(x)]))
