"""The OpenCL device of this process, for tasks of a Dask graph.

Each process that runs tasks (a ``distributed`` worker, or the client itself under Dask's
synchronous and threaded schedulers) picks its device once, on first use, and keeps one
:class:`WorkerDevice` for its lifetime: the context, a Sorter and a Selector (whose built kernels
and memory pools serve every later task), and one in-order queue per thread (Dask workers run
several task threads; each thread enqueues on its own queue, so their copies and kernels
overlap and the per-queue memory pools are never shared between threads).

Which device:

1. the choice made in this process by :func:`use_device` (what :class:`DevicePlugin` calls on
   each worker, spreading the workers of one machine over the devices that match);
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
import socket
import threading
from typing import Optional

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..core.device import all_devices, can_build, default_device
from ..dispatch.selector import Selector
from ..dispatch.sorter import Sorter
from .memory import HostCopies

ENV = "CLRADIX_DEVICE"


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
_current: Optional[WorkerDevice] = None
_choice = None   # (spec, slot) set by use_device


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


def _listing() -> str:
    devices = all_devices()
    if not devices:
        return "no OpenCL platform at all (no driver installed, or none its ICD loader finds)"
    return "; ".join(f"{i}: {d.platform.name.strip()} / {d.name.strip()}"
                     f"{'' if can_build(d) else ' (cannot build kernels)'}"
                     for i, d in enumerate(devices))


def matching(spec: str) -> list:
    """The devices that build kernels and match ``spec`` (an index in all_devices(), or a
    case-insensitive substring of "platform name device name"; "pocl" names PoCL's platform),
    in platform order."""
    devices = all_devices()
    spec = str(spec).strip()
    if spec.isdigit():
        picked = [devices[int(spec)]] if int(spec) < len(devices) else []
    else:
        picked = [d for d in devices if spec.lower() in _label(d).lower()]
    return [d for d in picked if can_build(d)]


def _label(d) -> str:
    """What a spec substring is matched against: "platform name device name" (and PoCL's short
    name)."""
    plat = d.platform.name.strip()
    short = " PoCL" if plat == "Portable Computing Language" else ""
    return f"{plat}{short} {d.name.strip()}"


def select_device(spec: Optional[str] = None, slot: int = 0) -> cl.Device:
    """The device for ``spec`` (None: ``CLRADIX_DEVICE``, else clradix's default), the
    ``slot``-th of the matches (modulo their number); NoDeviceError naming this process and the
    devices found when there is none."""
    source = "the spec"
    if spec is None and os.environ.get(ENV, "").strip():
        spec, source = os.environ[ENV], ENV
    if spec is None:
        try:
            return default_device()
        except RuntimeError as exc:
            raise NoDeviceError(f"clradix.dask: {who()} has no usable OpenCL device ({exc}); "
                                f"found: {_listing()}") from None
    found = matching(spec)
    if not found:
        raise NoDeviceError(f"clradix.dask: {who()} has no usable OpenCL device matching "
                            f"{source} {spec!r}; found: {_listing()}")
    return found[slot % len(found)]


def use_device(spec: Optional[str] = None, slot: int = 0) -> WorkerDevice:
    """Pick this process's device now (``spec`` and ``slot`` as ``select_device``) and make
    its context, Sorter and Selector; later tasks use it. Calling it again with another choice
    replaces the device (tasks already running keep theirs)."""
    global _current, _choice
    with _lock:
        if _current is not None and _choice == (spec, slot):
            return _current
        _current = WorkerDevice(select_device(spec, slot))
        _choice = (spec, slot)
        return _current


def current() -> WorkerDevice:
    """This process's WorkerDevice, picked on first use (see the module's documentation)."""
    global _current
    dev = _current
    if dev is not None:
        return dev
    with _lock:
        if _current is None:
            _current = WorkerDevice(select_device())
        return _current


def _forget() -> None:
    """Drop this process's choice (tests)."""
    global _current, _choice
    with _lock:
        _current, _choice = None, None
