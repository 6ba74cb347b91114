"""What a task does to one chunk: on this process's OpenCL device with clradix (``"clradix"``,
the default), or in numpy (``"numpy"``: the same Dask graphs with numpy chunk functions, the
reference the benchmarks compare with). Both give the same results, bit for bit.

Chunks come as numpy arrays or :class:`~clradix.dask.chunk.DeviceChunk`. The device engine keeps
the sample sort's keys on the device from the split to the merge: a split sorts its chunk and
leaves the pieces there (DeviceChunks), and a merge on the same worker gathers them with copies
between device buffers; only pieces that Dask moved to another worker arrive as host bytes.
Copies to and from the host go through :mod:`clradix.dask.memory` (pinned memory on a GPU,
none where a CPU device can use the chunk in place). Each engine adds the seconds it spends per
phase (``upload``, ``device``, ``download``, ``host``) to this process's :func:`task_times`.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..core.keys import key_codec
from ..dispatch.search import searchsorted as _searchsorted
from . import devices
from .chunk import DeviceChunk, as_host
from .memory import aligned_empty

_times: collections.Counter[str] = collections.Counter()
_times_lock = threading.Lock()


def task_times(reset: bool = False) -> dict:
    """Seconds this process's chunk operations spent per phase (and ``calls``) since the last
    reset: ``upload`` (host to device), ``device`` (clradix's kernels), ``search`` (the sample
    sort's cut search on the device and its one small read, which also waits for the split's
    sort), ``download``, ``exchange`` (pieces from another device of this process, through
    host memory), ``host`` (numpy work: the numpy engine, and the device engine's host-side
    steps)."""
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


def _device():
    """Count a device task: the device of the calling thread's task (:func:`devices.current`)
    and the thread's queue on it."""
    _count()
    dev = devices.current()
    return dev, dev.queue


def _on_device(dev, q, chunk, writable):
    """A chunk (numpy, or a DeviceChunk) as a device array of ``dev`` (a copy when
    ``writable``, since the caller sorts it in place: a task never changes its input)."""
    with _phase("upload"):
        if isinstance(chunk, DeviceChunk):
            if chunk.on_device or not writable:
                a = chunk.array
                if not writable:
                    return a.with_queue(q)
                out = dev.copies.empty(q, a.shape, a.dtype)
                if a.nbytes:
                    cl.enqueue_copy(q, out.base_data, a.base_data, byte_count=a.nbytes,
                                    src_offset=a.offset, dst_offset=out.offset)
                return out
            chunk = chunk.get()
        return dev.copies.to_device(q, chunk, writable=writable)


def _to_host(dev, d, host=None, wait_for=None):
    with _phase("download"):
        return dev.copies.to_host(d, host, wait_for)


def _length(piece):
    return len(piece[0]) if isinstance(piece, tuple) else len(piece)


def _holder(data):
    """The device of this process holding most of the bytes of the DeviceChunks in ``data``
    (nested lists and tuples of chunks), when it holds at least twice any other's; else None."""
    held: dict = {}
    for d in _chunks_of(data):
        dev = d.device if isinstance(d, DeviceChunk) else None
        if dev is not None:
            held[dev] = held.get(dev, 0) + d.nbytes
    if not held:
        return None
    ranked = sorted(held.items(), key=lambda kv: -kv[1])
    if len(ranked) > 1 and ranked[0][1] < 2 * ranked[1][1]:
        return None
    return ranked[0][0]


class DeviceEngine:
    """Chunk operations with clradix on the device of the calling task (:meth:`task`; one
    device per process unless :func:`devices.use_devices` chose several). Chunks come as
    numpy arrays or :class:`DeviceChunk`; the sample sort's sorted chunks and pieces stay on
    the device (DeviceChunk) until a merge writes its partition out."""

    name = "clradix"

    @staticmethod
    def task(*data):
        """A context for one task on ``data`` (its chunks, pieces, or lists of them): binds
        the calling thread to the device holding most of their bytes, else to the device of
        this process with the fewest tasks running (:func:`devices.lease`)."""
        return devices.lease(_holder(data))

    # ------------------------------------------------------------------ sample sort

    def sort_chunk(self, chunk, start: int, positions: bool):
        """The chunk sorted on the device: ``(keys, global positions (int64) or None)``, both
        device arrays, sorted by the commands on the keys' queue (``search`` waits for them)."""
        dev, q = _device()
        d = _on_device(dev, q, chunk, writable=True)
        n = d.size
        pos = _positions(dev, q, start, n) if positions else None
        with _phase("device"):   # (enqueued: search's first read waits for it)
            if n > 1:
                dev.sorter.sort(q, d, values=pos)
        return d, pos

    def search(self, keys, skeys):
        """``(lo, hi)``: for each splitter key, the number of the sorted device ``keys`` that
        order before it, and before or equal to it (clradix's order: NaN last, -0.0 == +0.0).
        Commands already on the keys' queue (the sort) finish first: the wait is theirs too."""
        m, p = keys.size, len(skeys)
        if p == 0 or m == 0:
            keys.finish()
            z = np.zeros(p, np.int64)
            return z, z.copy()
        q = keys.queue
        with _phase("search"):
            # both sides found by clradix.searchsorted's binary searches on the device, the
            # answers read with one wait (2 p integers): no key crosses to the host
            # (from the keys' allocator: the device pool on a GPU, where releasing a buffer
            # can wait for the whole device)
            v = cl_array.to_device(q, np.ascontiguousarray(skeys, keys.dtype),
                                   allocator=keys.allocator)
            both = cl_array.empty(q, (2, p), np.int64, allocator=keys.allocator)
            _searchsorted(keys, v, "left", out=both[0], queue=q)
            _searchsorted(keys, v, "right", out=both[1], queue=q)
            res = both.get(q)
        return res[0], res[1]

    def piece(self, keys, pos, a: int, b: int):
        """Elements ``[a, b)`` of a sorted chunk, left on the device."""
        if pos is None:
            return DeviceChunk(keys[a:b])
        return DeviceChunk(keys[a:b]), DeviceChunk(pos[a:b])

    def merge_group(self, partitions, positions: bool, out_dtype, keep: bool):
        """Output partitions, each given as its pieces (in chunk order; DeviceChunks, or numpy
        arrays after crossing workers): each gathered on the device and sorted stably, and
        downloaded (a numpy array of its keys, or of its global positions) on a second queue
        while the later ones gather and sort, or with ``keep`` left there as a DeviceChunk."""
        dev, q = _device()
        q2 = dev.copy_queue
        try:
            return self._merge_all(dev, q, q2, partitions, positions, out_dtype, keep)
        except BaseException:
            # the commands already enqueued write into buffers (pooled device blocks, leased
            # pinned arrays) that go back to their pools with this frame: they finish first
            q.finish()
            q2.finish()
            raise

    def _merge_all(self, dev, q, q2, partitions, positions, out_dtype, keep):
        partitions, kept = _fetch_held_elsewhere(dev, q, partitions)
        done, started = [], []
        for pieces in partitions:
            result, host, evt, keys = self._merge_enqueue(dev, q, pieces, positions, out_dtype,
                                                          keep)
            if keep:
                done.append(result)
                continue
            # the download starts behind the partition's sort, on the second queue, and runs
            # while the next partitions gather and sort (nothing here waits for the device; on
            # a CPU device the result is the numpy array itself, mapped once the sort is done)
            with _phase("device" if dev.copies.in_place else "download"):
                started.append((dev.copies.to_host_started(
                    result.with_queue(q2), host, None if evt is None else [evt]), keys, result))
        # (``kept``, the host memory of the exchange's copies up, lives until these waits: the
        # copies precede every sort on q)
        if keep:
            with _phase("device"):
                q.finish()
            return [DeviceChunk(result) for result in done]
        pending = [e for (_, e), _, _ in started if e is not None]
        if pending:
            with _phase("download"):
                cl.wait_for_events(pending)
        del kept
        return [a for (a, _), _, _ in started]

    @staticmethod
    def _merge_enqueue(dev, q, pieces, positions, out_dtype, keep):
        """One partition's gather and sort enqueued: ``(result array, its host array or None,
        the event after which it is complete, the sorted keys)``."""
        full = [p for p in pieces if _length(p)]
        n = sum(_length(p) for p in full)
        key_parts = [p[0] if positions else p for p in full]
        key_dtype = key_parts[0].dtype if key_parts else out_dtype
        host = None
        if positions:   # the positions ride through the sort as its values
            keys = dev.copies.empty(q, (n,), key_dtype)
            if keep:
                result = dev.copies.empty(q, (n,), np.int64)
            else:
                host, result = dev.copies.result(q, n, np.int64)
            _gather(dev, q, result, [p[1] for p in full])
        else:
            if keep:
                keys = dev.copies.empty(q, (n,), key_dtype)
            else:
                host, keys = dev.copies.result(q, n, key_dtype)
            result = keys
        _gather(dev, q, keys, key_parts)
        evt = None
        with _phase("device"):
            if len(full) > 1:
                evt = dev.sorter.sort(q, keys, values=result if positions else None)
            else:   # the gather's copies (commands on q that no array records)
                evt = cl.enqueue_marker(q)
        return result, host, evt, keys   # (keys: held by the caller until the sort is done)

    # ------------------------------------------------------------------ per-chunk calls

    def argsort(self, keys: np.ndarray, descending: bool = False) -> np.ndarray:
        """Stable argsort of the 1-D ``keys`` (int64; ``descending``: stable too)."""
        n = keys.size
        if n <= 1:
            return np.arange(n, dtype=np.int64)
        dev, q = _device()
        d = _on_device(dev, q, keys, writable=False)
        with _phase("device"):
            host, out = dev.copies.result(q, n, np.int64)
            idx, evt = dev.sorter.argsort(q, d, descending=descending, out=out)
            evt.wait()
        return _to_host(dev, idx, host)

    def select(self, a, k: int, largest: bool, ranked: bool):
        """``(values, positions)`` (int64) of the ``k`` largest (smallest) entries of each row
        of the 2-D ``a`` (numpy, or a device array), ties to the smaller position, NaN largest:
        ranked (largest first for ``largest``) when ``ranked``, else in increasing position.
        0 < k <= row length."""
        rows = a.shape[0]
        if rows == 0:
            return np.empty((0, k), a.dtype), np.zeros((0, k), np.int64)
        dev, q = _device()
        if isinstance(a, cl_array.Array):
            d = a.with_queue(q)
        else:
            d = _on_device(dev, q, a, writable=False)
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
            if isinstance(a, cl_array.Array):
                flat = (pos + (np.arange(rows, dtype=np.int64) * a.shape[1])[:, None]).ravel()
                return take_keys(q, d.reshape(-1), flat).reshape(rows, k), pos
            return np.take_along_axis(a, pos, -1), pos


def take_keys(q, d, where):
    """``d[where]`` (``where``: integer numpy positions) read to the host, for every key dtype:
    the keys move as unsigned integers of their width (pyopencl's take has no float16 or
    bool)."""
    u = np.dtype(f"u{d.dtype.itemsize}")
    got = cl_array.take(d.with_queue(q).view(u), cl_array.to_device(q, where.astype(np.int64)),
                        queue=q)
    return got.get(q).view(d.dtype)


def _positions(dev, q, start, n):
    """The global positions ``start .. start + n - 1`` (int64) in a device array (filled on
    the host where device memory is host memory: pyopencl's generic kernels are slow there)."""
    with _phase("upload"):
        if dev.copies.in_place and n:
            return dev.copies.wrap(q, _aligned_arange(start, n))
        d = cl_array.arange(q, start, start + n, dtype=np.int64,
                            allocator=dev.copies.allocator)
        d.finish()
        return d


def _aligned_arange(start, n):
    out = aligned_empty(n, np.dtype(np.int64))
    out[:] = np.arange(start, start + n, dtype=np.int64)
    return out


def _spans_held_by_others(chunks, dev):
    """``{id(buffer): [first byte, end byte, a device array viewing it, its device]}`` for the
    DeviceChunks among ``chunks`` held by a device of this process other than ``dev``: a
    group's pieces of one sorted chunk are consecutive ranges of one buffer, so a buffer's span
    is about all the bytes that must move."""
    spans: dict = {}
    for c in chunks:
        if isinstance(c, DeviceChunk) and c.device is not None and c.device is not dev:
            a = c.held
            if a.nbytes:
                span = spans.setdefault(id(a.base_data), [a.offset, a.offset, a, c.device])
                span[0] = min(span[0], a.offset)
                span[1] = max(span[1], a.offset + a.nbytes)
    return spans


def _fetch_held_elsewhere(dev, q, partitions):
    """``(partitions, kept)``: ``partitions`` with the pieces held by another device of this
    process brought to ``dev`` as views of device arrays: one copy down (into the holder's
    pinned memory) and one copy up per buffer they view, each up enqueued on ``q`` while the
    next comes down; ``kept`` holds the host memory those copies read, which the caller keeps
    until ``q``'s commands are done."""
    spans = _spans_held_by_others(_chunks_of(partitions), dev)
    if not spans:
        return partitions, []
    moved: dict = {}   # id(buffer): (its first byte, the device array holding its span here)
    kept = []
    with _phase("exchange"):
        for key, (lo, host) in _download_spans(spans):
            dst = dev.copies.empty(q, (host.nbytes,), np.uint8)
            cl.enqueue_copy(q, dst.base_data, host, dst_offset=dst.offset, is_blocking=False)
            kept.append(host)
            moved[key] = (lo, dst)

    def here(c):
        if isinstance(c, tuple):
            return tuple(here(x) for x in c)
        a = c.held if isinstance(c, DeviceChunk) else None
        if a is None or c.device is dev or id(a.base_data) not in moved:
            return c
        first, dst = moved[id(a.base_data)]
        return DeviceChunk(cl_array.Array(q, c.shape, c.dtype, data=dst.base_data,
                                          offset=dst.offset + a.offset - first))
    return [[here(c) for c in pieces] for pieces in partitions], kept


def _download_spans(spans):
    """Each span of ``_spans_held_by_others`` copied down into its holder's pinned memory:
    ``{id(buffer): (first byte, uint8 numpy array)}``, yielded one by one."""
    for key, (lo, hi, a, holder) in spans.items():
        view = cl_array.Array(holder.queue, (hi - lo,), np.uint8, data=a.base_data, offset=lo)
        yield key, (lo, holder.copies.to_host(view))


def _chunks_of(data):
    """The chunks in ``data`` (nested lists and tuples)."""
    stack = [data]
    while stack:
        d = stack.pop()
        if isinstance(d, (list, tuple)):
            stack.extend(d)
        else:
            yield d


def _gather(dev, q, dst, parts):
    """Concatenate ``parts`` (DeviceChunks held by ``dev``, or host arrays) into the device
    array ``dst``, in order: copies between device arrays are enqueued on
    ``q`` (done in its order), the others complete before this returns."""
    at = 0
    for p in parts:
        m = len(p)
        if isinstance(p, DeviceChunk) and p.device is dev:
            src = p.array
            with _phase("device"):
                if m:
                    isz = dst.dtype.itemsize
                    cl.enqueue_copy(q, dst.base_data, src.base_data, byte_count=m * isz,
                                    src_offset=src.offset, dst_offset=dst.offset + at * isz)
        else:   # (pieces of another device of this process came over in _fetch_held_elsewhere)
            with _phase("upload"):
                q.finish()
                dev.copies.write(dst, at, as_host(p))
        at += m



class NumpyEngine:
    """The same operations in numpy, on the host (the reference engine)."""

    name = "numpy"

    @staticmethod
    def task(*data):
        """(the device engine's; nothing to bind here)"""
        return contextlib.nullcontext()

    def sort_chunk(self, chunk, start, positions):
        keys = as_host(chunk)
        with _phase("host"):
            if positions:
                o = np.argsort(keys, kind="stable")
                return keys[o], o.astype(np.int64) + start
            # equal integers are equal bits: only float keys (+-0, NaN payloads) need stability
            return np.sort(keys, kind="stable" if keys.dtype.kind == "f" else None), None

    def search(self, keys, skeys):
        with _phase("host"):
            return (np.searchsorted(keys, skeys, "left").astype(np.int64),
                    np.searchsorted(keys, skeys, "right").astype(np.int64))

    def piece(self, keys, pos, a, b):
        return keys[a:b] if pos is None else (keys[a:b], pos[a:b])

    def merge_group(self, partitions, positions, out_dtype, keep):
        """(``keep`` is the device engine's; here results are always numpy arrays)"""
        return [self._merge(pieces, positions, out_dtype) for pieces in partitions]

    def _merge(self, pieces, positions, out_dtype):
        with _phase("host"):
            full = [(as_host(p[0]), as_host(p[1])) if positions else as_host(p)
                    for p in pieces if _length(p)]
            if not full:
                return np.empty(0, out_dtype)
            if positions:
                if len(full) == 1:
                    return full[0][1]
                keys = np.concatenate([k for k, _ in full])
                return np.concatenate([p for _, p in full])[np.argsort(keys, kind="stable")]
            if len(full) == 1:
                return full[0]
            return self.sort_chunk(np.concatenate(full), 0, False)[0]

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
