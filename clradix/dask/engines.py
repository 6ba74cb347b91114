"""What a task does to one chunk: on this process's OpenCL device with clradix (``"clradix"``,
the default), or in numpy (``"numpy"``: the same Dask graphs with numpy chunk functions, the
reference the benchmarks compare with). Both give the same results, bit for bit.

Every operation takes and returns host (numpy) arrays: the device engine copies the chunk to the
device, runs one clradix call and copies the result back inside the task. Each engine adds the
seconds it spends per phase (``upload``, ``device``, ``download``, ``host``) to this process's
:func:`task_times`.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time

import numpy as np
import pyopencl.array as cl_array

from ..core.keys import key_codec
from ..core.sizes import output_index_dtype
from . import devices

_times: collections.Counter[str] = collections.Counter()
_times_lock = threading.Lock()


def task_times(reset: bool = False) -> dict:
    """Seconds this process's chunk operations spent per phase (and ``calls``) since the last
    reset: ``upload`` (host to device), ``device`` (clradix's kernels), ``download``, ``host``
    (numpy work: the numpy engine, and the device engine's host-side steps)."""
    with _times_lock:
        out = dict(_times)
        if reset:
            _times.clear()
    return out


@contextlib.contextmanager
def _phase(name):
    t0 = time.perf_counter()
    try:
        yield
    finally:
        dt = time.perf_counter() - t0
        with _times_lock:
            _times[name] += dt


def _count():
    with _times_lock:
        _times["calls"] += 1


def _upload(*arrays):
    """Count a device task and copy ``arrays`` to this process's device: ``(device, its queue,
    the device arrays...)``."""
    _count()
    dev = devices.current()
    with _phase("upload"):
        return (dev, dev.queue) + tuple(dev.to_device(a) for a in arrays)


class DeviceEngine:
    """Chunk operations with clradix on this process's device (:func:`devices.current`)."""

    name = "clradix"

    def sort(self, keys: np.ndarray) -> np.ndarray:
        """A stably sorted copy of the 1-D ``keys`` (numpy's order)."""
        if keys.size <= 1:
            return keys.copy()
        dev, q, d = _upload(keys)
        with _phase("device"):
            dev.sorter.sort(q, d).wait()
        with _phase("download"):
            return d.get(q)

    @staticmethod
    def _key_index_sort(keys, *extra):
        """Upload ``keys`` (and ``extra`` arrays), sort the keys carrying their positions on the
        device: ``(queue, sorted keys, positions, extra device arrays)``, all still there."""
        n = keys.size
        dev, q, d, *more = _upload(keys, *extra)
        with _phase("upload"):
            idx = cl_array.arange(q, 0, n, dtype=output_index_dtype(n))
        with _phase("device"):
            dev.sorter.sort(q, d, values=idx).wait()
        return q, d, idx, more

    def sort_pairs(self, keys: np.ndarray, values: np.ndarray):
        """``(keys, values)`` stably sorted by key. The sort carries the keys' positions (the
        sort's key-index variant, which ``sort_index`` builds too) and the values follow them
        in a gather on the device."""
        if keys.size <= 1:
            return keys.copy(), values.copy()
        q, d, idx, (v,) = self._key_index_sort(keys, values)
        with _phase("device"):
            v = cl_array.take(v, idx, queue=q)
            v.finish()
        with _phase("download"):
            return d.get(q), v.get(q)

    def sort_index(self, keys: np.ndarray):
        """``(sorted keys, the positions they came from)`` (int64), stably."""
        if keys.size <= 1:
            return keys.copy(), np.arange(keys.size, dtype=np.int64)
        q, d, idx, _ = self._key_index_sort(keys)
        with _phase("download"):
            out_k, out_i = d.get(q), idx.get(q)
        with _phase("host"):
            return out_k, out_i.astype(np.int64)

    def argsort(self, keys: np.ndarray, descending: bool = False) -> np.ndarray:
        """Stable argsort of the 1-D ``keys`` (int64; ``descending``: stable too)."""
        n = keys.size
        if n <= 1:
            return np.arange(n, dtype=np.int64)
        dev, q, d = _upload(keys)
        with _phase("device"):
            idx, evt = dev.sorter.argsort(q, d, descending=descending)
            evt.wait()
        with _phase("download"):
            out = idx.get(q)
        return out.astype(np.int64)

    def select(self, a: np.ndarray, k: int, largest: bool, ranked: bool):
        """``(values, positions)`` (int64) of the ``k`` largest (smallest) entries of each row
        of the 2-D ``a``, ties to the smaller position, NaN largest: ranked (largest first for
        ``largest``) when ``ranked``, else in increasing position. 0 < k <= row length."""
        rows = a.shape[0]
        if rows == 0:
            return a[:, :k].copy(), np.zeros((0, k), np.int64)
        dev, q, d = _upload(a)
        with _phase("device"):
            v, i, evt = dev.selector.topk(q, d, k, largest=largest, sorted=ranked)
            evt.wait()
        with _phase("download"):
            pos = i.get(q)
            values = v.get(q) if ranked else None
        with _phase("host"):
            pos = pos.astype(np.int64).reshape(rows, k)
            if values is not None:   # ranked
                return values.reshape(rows, k), pos
            pos.sort(axis=-1)
            return np.take_along_axis(a, pos, -1), pos


class NumpyEngine:
    """The same operations in numpy, on the host (the reference engine)."""

    name = "numpy"

    def sort(self, keys):
        with _phase("host"):
            # equal integers are equal bits: only float keys (+-0, NaN payloads) need stability
            return np.sort(keys, kind="stable" if keys.dtype.kind == "f" else None)

    def sort_pairs(self, keys, values):
        with _phase("host"):
            o = np.argsort(keys, kind="stable")
            return keys[o], values[o]

    def sort_index(self, keys):
        with _phase("host"):
            o = np.argsort(keys, kind="stable")
            return keys[o], o.astype(np.int64)

    def argsort(self, keys, descending=False):
        with _phase("host"):
            if not descending:
                return np.argsort(keys, kind="stable").astype(np.int64)
            # stable descending: the reversed ascending order of the reversed keys
            n = keys.size
            return (n - 1 - np.argsort(keys[::-1], kind="stable")[::-1]).astype(np.int64)

    def select(self, a, k, largest, ranked):
        with _phase("host"):
            rows, n = a.shape
            if k < n:
                pos = np.empty((rows, k), np.int64)
                for r in range(rows):
                    pos[r] = _select_row(a[r], k, largest)
            else:
                pos = np.broadcast_to(np.arange(n, dtype=np.int64), (rows, n)).copy()
            if ranked:
                okey = key_codec(a.dtype).order_key(np.take_along_axis(a, pos, -1).ravel())
                okey = (~okey if largest else okey).reshape(pos.shape)
                pos = np.take_along_axis(pos, np.argsort(okey, axis=-1, kind="stable"), -1)
            return np.take_along_axis(a, pos, -1), pos


def _select_row(row, k, largest):
    """Positions (increasing) of the k largest (smallest) of ``row``: numpy's comparisons are
    clradix's order (NaN largest, -0.0 == +0.0) except that NaN equals nothing, handled here;
    ties to the smaller position."""
    n = row.size
    at = n - k if largest else k - 1
    kth = row[np.argpartition(row, at)[at]]
    if row.dtype.kind == "f" and kth != kth:   # the boundary is NaN
        nan = np.isnan(row)
        better, eq = (np.zeros(n, bool), nan) if largest else (~nan, nan)
    elif largest:
        better, eq = row > kth, row == kth
        if row.dtype.kind == "f":
            better |= np.isnan(row)
    else:
        better, eq = row < kth, row == kth
    b = np.flatnonzero(better)
    return np.sort(np.concatenate([b, np.flatnonzero(eq)[:k - b.size]]))


ENGINES = {"clradix": DeviceEngine(), "numpy": NumpyEngine()}


def engine(name: str):
    """The engine called ``name`` ("clradix" or "numpy"); ValueError naming the choices."""
    try:
        return ENGINES[name]
    except (KeyError, TypeError):
        raise ValueError(f"engine={name!r}: expected one of {', '.join(ENGINES)}") from None
