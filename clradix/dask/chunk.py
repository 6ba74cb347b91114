"""DeviceChunk: a chunk of a dask array that stays in a worker's device memory.

A task that leaves its result on the device returns a :class:`DeviceChunk` instead of a numpy
array. Dask holds it in the worker's memory like any chunk (``dask.sizeof`` counts its bytes,
the bytes it becomes when it is moved or spilled), and a later task on the same worker gets the
same object, with its device array, so the keys never leave the device between the phases of a
graph. Where Dask moves it (to another worker, to the client, to disk) it is pickled, and a
DeviceChunk pickles as its host bytes: it arrives as a DeviceChunk whose data is a numpy array,
uploaded to the receiving process's device when a task there first asks for its ``array``.

What a user does with one (``clradix.dask.sort(x, on_device=True)``, ``clradix.dask.to_device``):

* in a task on the worker that holds it (``client.submit(f, chunk)``, ``map_blocks``), or in the
  client's own process under Dask's local schedulers: ``chunk.array`` is a pyopencl Array on
  that process's device (:func:`clradix.dask.current`), to use with any pyopencl or clradix
  call; ``chunk.queue`` is the calling thread's queue of that device (with several devices in
  one process, ``chunk.device`` is the one holding it; ``with clradix.dask.devices.bind(
  chunk.device):`` makes it the current one, so ``chunk.array`` is not moved);
* anywhere: ``np.asarray(chunk)`` or ``chunk.get()`` copies it to a numpy array, and
  ``compute()`` of a dask array of DeviceChunks gives a numpy array as usual.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pyopencl.array as cl_array

from . import devices


class DeviceChunk:
    """A 1-D or 2-D chunk held either as a pyopencl Array on this process's device or (after
    crossing processes) as a numpy array, uploaded on first use of :attr:`array`."""

    def __init__(self, array: Optional[cl_array.Array] = None,
                 host: Optional[np.ndarray] = None) -> None:
        if (array is None) == (host is None):
            raise ValueError("DeviceChunk: give exactly one of array= and host=")
        self._array: Any = array
        self._host: Any = host

    # ------------------------------------------------------------------ what it holds

    @property
    def on_device(self) -> bool:
        """Whether the data is in device memory of this process (else a numpy array)."""
        return self._array is not None

    @property
    def held(self) -> Optional[cl_array.Array]:
        """The device array as held, on the device that holds it (None on the host)."""
        return self._array

    @property
    def device(self):
        """The device of this process that holds the data (a :class:`WorkerDevice`; None when
        the data is on the host, or on a device this process let go)."""
        return None if self._array is None else devices.owner(self._array.context)

    @property
    def array(self) -> cl_array.Array:
        """The chunk as a pyopencl Array on the calling task's device (:func:`current`): the
        held array when it is there; else copied there once, on first use (from the host when
        it came from another process; through pinned host memory from another device of this
        process), and held there from then on."""
        dev = devices.current()
        a = self._array
        if a is not None and a.context == dev.context:
            return a
        pinned = self.device is not None   # from another device of this process
        host = self.get()
        if pinned:   # down into that device's pinned memory, then one copy up
            a = dev.copies.empty(dev.queue, host.shape, host.dtype)
            dev.copies.write_pinned(a, 0, host)
        else:
            a = dev.copies.to_device(dev.queue, host)
        self._array, self._host = a, None
        return a

    @property
    def queue(self):
        """The calling thread's queue on the device that holds the data (on the calling task's
        device when the data is on the host)."""
        return (self.device or devices.current()).queue

    def get(self) -> np.ndarray:
        """The chunk as a numpy array (a copy of the device data; the held array itself when
        the data is on the host)."""
        if self._host is not None:
            return self._host
        a = self._array
        dev = devices.owner(a.context)
        if dev is None:   # a device array of a context this process let go
            return a.get()
        return dev.copies.to_host(a.with_queue(dev.queue))

    def copy(self) -> np.ndarray:
        """The chunk as a numpy array of its own (never the held host array itself). Dask's
        ``compute()`` of an array of one chunk returns ``chunk.copy()`` (of several, the chunks
        concatenated by numpy), so either way it gives a numpy array."""
        host = self.get()
        return host.copy() if self._host is not None else host

    def __array__(self, dtype=None, copy=None):
        a = self.get()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __reduce__(self):
        return (_from_host, (self.get(),))

    # ------------------------------------------------------------------ array-like facts

    @property
    def dtype(self) -> np.dtype:
        return (self._array if self._array is not None else self._host).dtype

    @property
    def shape(self) -> tuple:
        return tuple((self._array if self._array is not None else self._host).shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        where = "device" if self._array is not None else "host"
        return f"DeviceChunk(shape={self.shape}, dtype={self.dtype}, on the {where})"


def _from_host(host):
    return DeviceChunk(host=host)


def as_host(chunk) -> np.ndarray:
    """A numpy array of a chunk (numpy or DeviceChunk)."""
    return chunk.get() if isinstance(chunk, DeviceChunk) else np.asarray(chunk)


def _register_sizeof():
    try:
        from dask.sizeof import sizeof
    except ImportError:   # dask not installed: nothing holds DeviceChunks
        return
    sizeof.register(DeviceChunk)(lambda c: c.nbytes)


_register_sizeof()
