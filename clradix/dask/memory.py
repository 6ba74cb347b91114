"""Host <-> device copies of one process's device, for the chunk tasks of a Dask graph.

A GPU reaches host memory at the link's speed only from page-locked (pinned) memory; from
ordinary (pageable) numpy memory its driver stages each copy itself, several times slower. So:

* **uploads** from a numpy chunk go through pinned staging buffers (``CL_MEM_ALLOC_HOST_PTR``,
  mapped once and reused for the process's lifetime): the chunk is cut into slices, several
  copy threads each fill a slice of their own staging pair with ``memcpy`` while the slice
  before goes over the link (one queue per copy thread, so the copies of one chunk overlap each
  other and the kernels of the task threads);
* **downloads** land in numpy arrays whose memory is itself pinned, leased from a pool of mapped
  buffers (``PinnedPool``): one copy over the link and none on the host. A leased array is
  an ordinary numpy array; when the last reference to it goes, its buffer returns to the pool
  for the next result. Past the pool's limit (``CLRADIX_DASK_PINNED_MB``, default an eighth of
  the machine's memory per process) results are fresh numpy arrays filled through the staging
  buffers.

On a CPU device (PoCL, Intel's CPU runtime: ``host_unified_memory``) device memory is host
memory, and nothing is staged: a chunk read by a kernel (top-k, the sample) is used in place
(``CL_MEM_USE_HOST_PTR`` on the numpy array), a chunk sorted in place is copied once into its
buffer, and a result is written by the device straight into the numpy array handed back.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import weakref
from typing import Any, Optional

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

#: bytes per staging slice: large enough to run at the link's speed, small enough that a copy
#: thread's memcpy of the next slice overlaps the transfer of this one
SLICE_BYTES = 16 << 20
#: slices smaller than this are copied by the calling thread alone
_SPLIT_MIN = 2 * SLICE_BYTES
#: pinned buffers are a sixteenth larger than their first lease, rounded up to a multiple of
#: this; a free one serves any later lease of half its size or more (any lease, at this size)
_GRAIN = 2 << 20
PINNED_ENV = "CLRADIX_DASK_PINNED_MB"


class DevicePool:
    """One memory pool for the device arrays of every task thread of a process (chunks, pieces,
    results). Releasing a device buffer can wait for the whole device on a GPU's driver (as
    freeing device memory does in CUDA), which stalls every other task thread's copies and
    kernels; pooled blocks are kept and reused instead. A block goes back to the pool when its
    array is freed, which the engine does only after the commands using it have completed (each
    task waits for its own commands), so another thread's queue may reuse it at once."""

    def __init__(self, context: cl.Context) -> None:
        import pyopencl.tools as cl_tools
        self._pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(cl.CommandQueue(context)))
        self._lock = threading.Lock()

    def __call__(self, nbytes: int):
        with self._lock:
            return self._pool.allocate(nbytes)

    def free_held(self) -> None:
        with self._lock:
            self._pool.free_held()


def is_host_memory(device: cl.Device) -> bool:
    """Whether the device's memory is the host's (a CPU device): no staging, memory used in
    place."""
    return bool(device.type & cl.device_type.CPU)


def _pinned_limit() -> int:
    env = os.environ.get(PINNED_ENV, "").strip()
    if env:
        return int(float(env) * (1 << 20))
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 8
    except (ValueError, OSError, AttributeError):
        return 4 << 30


class _Lease:
    """The owner of a leased pinned buffer: a numpy array made from it (``np.asarray``) keeps it
    alive; when it goes, the buffer returns to its pool."""

    def __init__(self, pool, size, buf, view, dtype, n):
        self._pool = pool
        self._entry = (size, buf, view)
        self.__array_interface__ = {
            "data": (view.__array_interface__["data"][0], False), "shape": (n,),
            "typestr": dtype.str, "version": 3}

    def __del__(self):
        pool = self._pool()
        if pool is not None:
            pool._give_back(self._entry)


class PinnedPool:
    """Mapped ``CL_MEM_ALLOC_HOST_PTR`` buffers of one context, leased as numpy arrays and
    reused once the arrays are gone; ``limit`` bytes in all (leased and free)."""

    def __init__(self, context: cl.Context, limit: Optional[int] = None) -> None:
        self.context = context
        self.limit = _pinned_limit() if limit is None else int(limit)
        self._lock = threading.Lock()
        self._free: dict = {}
        self._held = 0
        self._queue = cl.CommandQueue(context)

    def empty(self, n: int, dtype) -> Optional[np.ndarray]:
        """A numpy array of ``n`` elements of ``dtype`` in pinned memory, or None past the
        limit."""
        dtype = np.dtype(dtype)
        nbytes = max(n * dtype.itemsize, 1)
        # room for a later result a little larger (partitions vary from call to call)
        size = -(-(nbytes + nbytes // 16) // _GRAIN) * _GRAIN
        with self._lock:
            top = max(2 * nbytes, _GRAIN)
            fits = [s for s in self._free if nbytes <= s <= top and self._free[s]]
            if fits:
                entry = self._free[min(fits)].pop()
            else:
                if self._held + size > self.limit:
                    self._trim(size)
                if self._held + size > self.limit:
                    return None
                self._held += size
                entry = None
        if entry is None:
            try:
                entry = self._allocate(size)
            except cl.Error:
                with self._lock:
                    self._held -= size
                return None
        _, _, view = entry
        lease = _Lease(weakref.ref(self), entry[0], entry[1], entry[2], dtype, n)
        del view
        return np.asarray(lease)

    def _allocate(self, size):
        buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, size)
        view, _ = cl.enqueue_map_buffer(self._queue, buf, cl.map_flags.READ | cl.map_flags.WRITE,
                                        0, (size,), np.uint8)
        return size, buf, view

    def _trim(self, want):
        """Release free buffers (lock held) until ``want`` more bytes fit."""
        for size in sorted(self._free, reverse=True):
            free = self._free[size]
            while free and self._held + want > self.limit:
                free.pop()
                self._held -= size

    def _give_back(self, entry):
        with self._lock:
            self._free.setdefault(entry[0], []).append(entry)

    def held_bytes(self) -> int:
        with self._lock:
            return self._held


class Staging:
    """The pinned staging pairs of a device's copy threads and the copy thread pool."""

    def __init__(self, context: cl.Context, threads: Optional[int] = None) -> None:
        self.context = context
        self.threads = threads or max(1, min(8, (os.cpu_count() or 2) // 2))
        self._local = threading.local()
        self._pool = concurrent.futures.ThreadPoolExecutor(self.threads,
                                                           thread_name_prefix="clradix-copy")

    def _mine(self):
        """This thread's queue and staging pair (made on first use): [(buffer, view, event)]."""
        st = getattr(self._local, "state", None)
        if st is None:
            q = cl.CommandQueue(self.context)
            pair = []
            for _ in range(2):
                buf = cl.Buffer(self.context,
                                cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, SLICE_BYTES)
                view, _ = cl.enqueue_map_buffer(q, buf, cl.map_flags.READ | cl.map_flags.WRITE,
                                                0, (SLICE_BYTES,), np.uint8)
                pair.append([buf, view, None])
            st = self._local.state = (q, pair)
        return st

    def _write_part(self, dst, dst_off, src):
        """Copy the bytes ``src`` (uint8, contiguous) to ``dst`` at ``dst_off`` through this
        thread's staging pair, one slice filled while the other is in flight; blocks until the
        last slice is on the device."""
        q, pair = self._mine()
        for j, o in enumerate(range(0, src.size, SLICE_BYTES)):
            slot = pair[j % 2]
            if slot[2] is not None:
                slot[2].wait()
            m = min(SLICE_BYTES, src.size - o)
            np.copyto(slot[1][:m], src[o:o + m])
            slot[2] = cl.enqueue_copy(q, dst, slot[1][:m], dst_offset=dst_off + o,
                                      is_blocking=False)
        for slot in pair:
            if slot[2] is not None:
                slot[2].wait()
                slot[2] = None

    def _read_part(self, dst, src, src_off, wait_for):
        q, pair = self._mine()
        if wait_for:
            cl.wait_for_events(wait_for)
        events = []
        for j, o in enumerate(range(0, dst.size, SLICE_BYTES)):
            slot = pair[j % 2]
            m = min(SLICE_BYTES, dst.size - o)
            slot[2] = cl.enqueue_copy(q, slot[1][:m], src, src_offset=src_off + o,
                                      is_blocking=False)
            events.append((slot, o, m))
            if len(events) == 2:
                self._drain(events.pop(0), dst)
        for e in events:
            self._drain(e, dst)

    @staticmethod
    def _drain(entry, dst):
        slot, o, m = entry
        slot[2].wait()
        slot[2] = None
        np.copyto(dst[o:o + m], slot[1][:m])

    def _parts(self, nbytes):
        k = min(self.threads, max(1, nbytes // _SPLIT_MIN))
        step = -(-nbytes // k)
        step = -(-step // 64) * 64
        return [(o, min(step, nbytes - o)) for o in range(0, nbytes, step)]

    def write(self, dst: cl.Buffer, dst_off: int, src: np.ndarray) -> None:
        """Copy the contiguous numpy array ``src`` to ``dst`` at byte ``dst_off``; returns
        when the bytes are on the device."""
        b = src.reshape(-1).view(np.uint8)
        parts = self._parts(b.size)
        if len(parts) == 1:
            self._write_part(dst, dst_off, b)
            return
        futs = [self._pool.submit(self._write_part, dst, dst_off + o, b[o:o + m])
                for o, m in parts]
        for f in futs:
            f.result()

    def read(self, dst: np.ndarray, src: cl.Buffer, src_off: int, wait_for=None) -> None:
        """Copy ``dst.nbytes`` bytes of ``src`` from byte ``src_off`` into the contiguous numpy
        array ``dst`` (after ``wait_for``)."""
        b = dst.reshape(-1).view(np.uint8)
        parts = self._parts(b.size)
        if len(parts) == 1:
            self._read_part(b, src, src_off, wait_for)
            return
        futs = [self._pool.submit(self._read_part, b[o:o + m], src, src_off + o, wait_for)
                for o, m in parts]
        for f in futs:
            f.result()


class HostCopies:
    """How this process moves chunks between numpy and its device (see the module's text)."""

    def __init__(self, context: cl.Context, device: cl.Device,
                 in_place: Optional[bool] = None) -> None:
        self.context = context
        #: whether chunks are used in place (a CPU device; None: from the device's type)
        self.in_place = is_host_memory(device) if in_place is None else bool(in_place)
        self.pinned: Any = None if self.in_place else PinnedPool(context)
        self.staging: Any = None if self.in_place else Staging(context)
        #: the device memory of chunks and results (see DevicePool)
        self.allocator: Any = None if self.in_place else DevicePool(context)

    def empty(self, queue: cl.CommandQueue, shape, dtype) -> cl_array.Array:
        """An uninitialised device array (from the device pool on a GPU)."""
        return cl_array.empty(queue, shape, dtype, allocator=self.allocator)

    def to_device(self, queue: cl.CommandQueue, a: np.ndarray, *, writable: bool = True
                  ) -> cl_array.Array:
        """``a`` (1-D or 2-D) on the device, complete when this returns (or, on a CPU device
        read-only, ``a``'s own memory)."""
        a = np.ascontiguousarray(a)
        if self.in_place:
            if not writable and a.nbytes:
                buf = cl.Buffer(self.context, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR,
                                hostbuf=a)
                arr = cl_array.Array(queue, a.shape, a.dtype, data=buf)
                setattr(arr, "_clradix_host", a)   # the memory it reads, kept alive with it
                return arr
            return cl_array.to_device(queue, a)
        out = self.empty(queue, a.shape, a.dtype)
        if a.nbytes:
            self.write(out, 0, a)
        return out

    def write(self, dst: Any, at: int, a: np.ndarray) -> None:
        """Copy ``a`` into the device array ``dst`` from element ``at`` (complete on return)."""
        a = np.ascontiguousarray(a)
        if not a.nbytes:
            return
        off = dst.offset + at * dst.dtype.itemsize
        if self.in_place:
            cl.enqueue_copy(dst.queue, dst.base_data, a, dst_offset=off, is_blocking=True)
            return
        self.staging.write(dst.base_data, off, a)

    def write_pinned(self, dst: Any, at: int, a: np.ndarray) -> None:
        """Copy ``a``, whose memory is pinned (a result of another device's
        :meth:`to_host`; pageable past its pool's limit, where the copy is slower), into the
        device array ``dst`` from element ``at``: one copy, no staging (complete on return)."""
        if a.nbytes:
            cl.enqueue_copy(dst.queue, dst.base_data, np.ascontiguousarray(a), is_blocking=True,
                            dst_offset=dst.offset + at * dst.dtype.itemsize)

    def result(self, queue: cl.CommandQueue, n: int, dtype):
        """``(numpy array, device array)`` for a result of ``n`` elements written on the device
        and read by :meth:`to_host`: on a CPU device the device array is the numpy array's own
        memory; on a GPU the numpy array is pinned when the pool has room."""
        dtype = np.dtype(dtype)
        if self.in_place and n:
            host = aligned_empty(n, dtype)
            return host, self.wrap(queue, host)
        return None, self.empty(queue, (n,), dtype)

    def wrap(self, queue: cl.CommandQueue, host: np.ndarray) -> cl_array.Array:
        """(CPU devices) a device array whose memory is the 1-D numpy array ``host`` (which the
        caller owns and leaves alone while the device uses it)."""
        buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                        hostbuf=host)
        dev = cl_array.Array(queue, host.shape, host.dtype, data=buf)
        setattr(dev, "_clradix_host", host)   # the memory it uses, kept alive with it
        return dev

    def to_host_started(self, d: Any, host: Optional[np.ndarray] = None, wait_for=None):
        """:meth:`to_host` begun: ``(numpy array, event)``, the array holding the data once the
        event is complete (an event of ``None``: at once). Into pinned memory the copy is only
        enqueued, so the caller's later commands overlap it; the other routes complete first."""
        queue = d.queue
        events = list(wait_for or []) + list(d.events)
        if host is not None:   # the device wrote into it: make its writes visible
            if host.nbytes:
                _, evt = cl.enqueue_map_buffer(queue, d.base_data, cl.map_flags.READ, 0,
                                               host.shape, host.dtype, wait_for=events or None)
                evt.wait()
            return host, None
        if self.in_place or not d.nbytes:
            return d.get(queue), None
        out = self.pinned.empty(d.size, d.dtype)
        if out is not None:
            evt = cl.enqueue_copy(queue, out, d.base_data, src_offset=d.offset,
                                  wait_for=events or None, is_blocking=False)
            return out.reshape(d.shape), evt
        out = np.empty(d.shape, d.dtype)
        self.staging.read(out, d.base_data, d.offset, events or None)
        return out, None

    def to_host(self, d: Any, host: Optional[np.ndarray] = None, wait_for=None) -> np.ndarray:
        """The device array ``d`` as a numpy array (``host``: the array :meth:`result` paired
        with it)."""
        out, evt = self.to_host_started(d, host, wait_for)
        if evt is not None:
            evt.wait()
        return out


def aligned_empty(n, dtype, align=4096):
    """An uninitialised numpy array whose data starts on an ``align``-byte boundary (PoCL uses
    such host memory in place)."""
    nbytes = n * dtype.itemsize
    raw = np.empty(nbytes + align, np.uint8)
    start = (-raw.__array_interface__["data"][0]) % align
    return raw[start:start + nbytes].view(dtype)
