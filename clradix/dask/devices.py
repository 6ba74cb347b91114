"""The OpenCL devices of this process, for tasks of a Dask graph.

Each process that runs tasks (a ``distributed`` worker, or the client itself under Dask's
synchronous and threaded schedulers) picks its devices once, on first use, and keeps one
:class:`WorkerDevice` per device for its lifetime: the context, a Sorter and a Selector (whose
built kernels and memory pools serve every later task), and one in-order queue per thread (Dask
workers run several task threads; each thread enqueues on its own queue, so their copies and
kernels overlap and the per-queue memory pools are never shared between threads).

A process usually has one device. With several (:func:`use_devices`: one worker process driving
every GPU of its machine), each task runs on one of them: ``lease`` binds the calling thread
to the device with the fewest tasks running (or the one holding the task's data, on a tie) for
the task's duration, and :func:`current` is that device. A chunk left on one device and used by
a task on another is copied through this process's pinned host memory (both links at their
speed), never through Dask's transfers between processes.

Which devices:

1. the choice made in this process by :func:`use_devices` or :func:`use_device` (what
   :class:`DevicePlugin` calls on each worker, spreading the workers of one machine over the
   devices that match);
2. else the ``CLRADIX_DEVICE`` environment variable: an index in ``python -m clradix info``'s
   list, or a case-insensitive substring of "platform name device name" (the first match);
3. else clradix's default device (the first GPU that builds kernels, else the CPU). NVIDIA's
   OpenCL driver honours ``CUDA_VISIBLE_DEVICES``, so workers started one per GPU that way (as
   dask-cuda does) each find their own GPU first.

A process without a usable device raises :class:`NoDeviceError`, naming the worker (its name and
address under ``distributed``, else the process and host) and every device it found.
"""

from __future__ import annotations

import os
import contextlib
import socket
import threading
from typing import Iterator, List, Optional

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..core.device import DEVICE_ENV, default_device, device_listing, matching_devices
from ..dispatch.selector import Selector
from ..dispatch.sorter import Sorter
from .memory import HostCopies



class NoDeviceError(RuntimeError):
    """This process (a Dask worker) has no usable OpenCL device for clradix."""


class WorkerDevice:
    """One device's context, Sorter and Selector, and a queue per thread."""

    def __init__(self, device: cl.Device) -> None:
        self.device = device
        self.context = cl.Context([device])
        self.sorter = Sorter(self.context)
        self.selector = Selector(self.context, sorter=self.sorter)
        #: host <-> device copies: pinned staging and results on a GPU, memory used in place on
        #: a CPU device (clradix.dask.memory)
        self.copies = HostCopies(self.context, device)
        self._local = threading.local()

    @property
    def queue(self) -> cl.CommandQueue:
        """The calling thread's in-order queue (made on first use)."""
        q = getattr(self._local, "queue", None)
        if q is None:
            q = self._local.queue = cl.CommandQueue(self.context)
        return q

    @property
    def copy_queue(self) -> cl.CommandQueue:
        """The calling thread's second in-order queue, for downloads that overlap the kernels
        of its first (made on first use)."""
        q = getattr(self._local, "copy_queue", None)
        if q is None:
            q = self._local.copy_queue = cl.CommandQueue(self.context)
        return q

    def to_device(self, a: np.ndarray) -> cl_array.Array:
        """A contiguous copy of the host array ``a`` on the device (on this thread's queue),
        complete when this returns."""
        return self.copies.to_device(self.queue, a)

    def describe(self) -> str:
        return f"{self.device.name.strip()} ({self.device.platform.name.strip()})"


_lock = threading.Lock()
_devices: List[WorkerDevice] = []   # this process's devices, once picked
_choice = None   # (spec, slot, count) set by use_devices
_bound = threading.local()   # .device: the device of the task the calling thread runs
_busy: dict = {}   # id(WorkerDevice) -> tasks running on it (under _lock)
_turn = 0   # advanced by each lease: where the next tie is broken


def who() -> str:
    """Names this process: the ``distributed`` worker (name and address) when it is one."""
    w = None
    try:
        from distributed import get_worker
        from distributed.worker import Worker
        try:
            w = get_worker()   # inside a task
        except ValueError:     # a plugin's setup, client.run: the process's one worker
            live = list(Worker._instances)
            w = live[0] if len(live) == 1 else None
    except ImportError:
        pass
    if w is None:
        return f"process {os.getpid()} on {socket.gethostname()}"
    return f"worker {w.name!r} ({w.address}, pid {os.getpid()}, host {socket.gethostname()})"


def select_device(spec: Optional[str] = None, slot: int = 0) -> cl.Device:
    """The device for ``spec`` (None: ``CLRADIX_DEVICE``, else clradix's default), the
    ``slot``-th of the matches (modulo their number); NoDeviceError naming this process and the
    devices found when there is none."""
    source = "the spec"
    if spec is None and os.environ.get(DEVICE_ENV, "").strip():
        spec, source = os.environ[DEVICE_ENV], DEVICE_ENV
    if spec is None:
        try:
            return default_device()
        except RuntimeError as exc:
            raise NoDeviceError(f"clradix.dask: {who()} has no usable OpenCL device ({exc}); "
                                f"found: {device_listing()}") from None
    found = matching_devices(spec)
    if not found:
        raise NoDeviceError(f"clradix.dask: {who()} has no usable OpenCL device matching "
                            f"{source} {spec!r}; found: {device_listing()}")
    return found[slot % len(found)]


def use_devices(spec: Optional[str] = None, slot: int = 0,
                count: Optional[int] = None) -> List[WorkerDevice]:
    """Pick this process's devices now and make each one's context, Sorter and Selector; later
    tasks use them. ``spec`` as ``select_device``; ``count`` devices (None: every match), the
    matches ``slot * count``, ``slot * count + 1``, ... (modulo their number: asking for more
    devices than match gives some twice, each its own context). Calling it again with another
    choice replaces the devices (tasks already running keep theirs). Without ``spec`` and
    ``CLRADIX_DEVICE``, "every match" is clradix's default device alone."""
    global _devices, _choice
    with _lock:
        if _devices and _choice == (spec, slot, count):
            return list(_devices)
        if count is None:
            env = os.environ.get(DEVICE_ENV, "").strip()
            named = spec if spec is not None else (env or None)
            # no spec and no CLRADIX_DEVICE: clradix's default device alone; select_device
            # raises NoDeviceError, naming this process, when nothing matches
            picked = (matching_devices(named) if named is not None else []) or [select_device(spec)]
        else:
            if count < 1:
                raise ValueError(f"count must be positive or None, got {count}")
            picked = [select_device(spec, slot * count + j) for j in range(count)]
        _devices = [WorkerDevice(d) for d in picked]
        _choice = (spec, slot, count)
        return list(_devices)


def use_device(spec: Optional[str] = None, slot: int = 0) -> WorkerDevice:
    """Pick this process's one device now (``spec`` and ``slot`` as ``select_device``) and make
    its context, Sorter and Selector; later tasks use it. Calling it again with another choice
    replaces the device (tasks already running keep theirs)."""
    return use_devices(spec, slot, 1)[0]


def process_devices() -> List[WorkerDevice]:
    """This process's devices (the default one picked now when none was chosen)."""
    if not _devices:
        with _lock:
            if not _devices:
                _devices.append(WorkerDevice(select_device()))
    return list(_devices)


def current() -> WorkerDevice:
    """The device of the task the calling thread runs (``lease``), else this process's
    first device, picked on first use (see the module's documentation)."""
    dev = getattr(_bound, "device", None)
    if dev is not None:
        return dev
    devs = _devices
    return devs[0] if devs else process_devices()[0]


def owner(context) -> Optional[WorkerDevice]:
    """The device of this process whose context is ``context`` (None: none is)."""
    for dev in _devices:
        if dev.context == context:
            return dev
    return None


@contextlib.contextmanager
def lease(prefer: Optional[WorkerDevice] = None) -> Iterator[WorkerDevice]:
    """Bind the calling thread to one of this process's devices for a task: ``prefer`` when
    given (where the task's data is: moving it would cost more than waiting for that device),
    else the one with the fewest tasks running; the device."""
    global _turn
    devs = process_devices()
    with _lock:
        if prefer in devs:
            dev = prefer
        else:   # ties in turn, so tasks one after another spread over idle devices too
            _turn += 1
            dev = min(devs, key=lambda d: (_busy.get(id(d), 0),
                                           (devs.index(d) - _turn) % len(devs)))
        _busy[id(dev)] = _busy.get(id(dev), 0) + 1
    try:
        with bind(dev):
            yield dev
    finally:
        with _lock:
            _busy[id(dev)] -= 1


@contextlib.contextmanager
def bind(dev: Optional[WorkerDevice]) -> Iterator[WorkerDevice]:
    """Bind the calling thread to ``dev`` (None: :func:`current`) for what the block does."""
    dev = dev or current()
    before = getattr(_bound, "device", None)
    _bound.device = dev
    try:
        yield dev
    finally:
        _bound.device = before


def _forget() -> None:
    """Drop this process's choice (tests)."""
    global _devices, _choice
    with _lock:
        _devices, _choice = [], None
        _busy.clear()
