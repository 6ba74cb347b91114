"""How every benchmark times one call: a warm-up run, then ``repeat`` timed runs, each giving

- ``device_ms``: time on the device. OpenCL: from the end of a marker enqueued on the idle queue
  just before the call to the end of the event the call returns (its last command), from the
  queue's profiling information; any gap while the host is still enqueueing the call's commands
  counts. CUDA: between two CUDA events recorded on the current stream before and after the call.
- ``wall_ms``: host wall time of the call, ``time.perf_counter`` from just before it to the return
  of the wait for its completion (OpenCL: the returned event; CUDA: a device synchronize): what a
  caller pays, host enqueue time included.

Preparation (``prep``: restoring the input of an in-place sort, say) runs before each run and is
finished before either clock starts. Host-only code (numpy) has wall time only.
"""

import statistics
import time
from dataclasses import dataclass, field

import pyopencl as cl

from clradix import bench


@dataclass
class Timing:
    """The samples of the timed runs (the warm-up excluded) and the last run's output."""
    wall_ms: list = field(default_factory=list)
    device_ms: list = None
    out: object = None

    @property
    def median_wall_ms(self):
        return statistics.median(self.wall_ms)

    @property
    def median_device_ms(self):
        return statistics.median(self.device_ms) if self.device_ms else None


def time_opencl(queue, call, repeat, prep=None):
    """``call()`` enqueues on ``queue`` (in order, profiling enabled) and returns ``(event, out)``,
    ``event`` being its last command's."""
    t = Timing(device_ms=[])
    for rep in range(repeat + 1):
        t.out = None  # release the previous run's outputs first
        if prep:
            prep()
        marker = cl.enqueue_marker(queue)
        marker.wait()
        t0 = time.perf_counter()
        evt, t.out = call()
        evt.wait()
        t1 = time.perf_counter()
        if rep:
            t.device_ms.append((evt.profile.end - marker.profile.end) * 1e-6)
            t.wall_ms.append((t1 - t0) * 1e3)
    return t


class _TorchCuda:
    def __init__(self):
        import torch
        self.torch = torch

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def synchronize(self):
        self.torch.cuda.synchronize()

    @staticmethod
    def elapsed_ms(start, end):
        return start.elapsed_time(end)


class _CupyCuda:
    def __init__(self):
        import cupy
        self.cp = cupy

    def event(self):
        return self.cp.cuda.Event()

    def synchronize(self):
        self.cp.cuda.Device().synchronize()

    def elapsed_ms(self, start, end):
        return self.cp.cuda.get_elapsed_time(start, end)


def time_cuda(library, call, repeat, prep=None):
    """``library`` is "torch" or "cupy" (whose current stream ``call()`` runs on); ``call()``
    returns its output."""
    api = _TorchCuda() if library == "torch" else _CupyCuda()
    t = Timing(device_ms=[])
    for rep in range(repeat + 1):
        t.out = None
        if prep:
            prep()
        api.synchronize()
        start, end = api.event(), api.event()
        t0 = time.perf_counter()
        start.record()
        t.out = call()
        end.record()
        api.synchronize()
        t1 = time.perf_counter()
        if rep:
            t.device_ms.append(api.elapsed_ms(start, end))
            t.wall_ms.append((t1 - t0) * 1e3)
    return t


def time_host(call, repeat, prep=None):
    """Host code: wall time only (``prep`` before each run, outside the clock)."""
    samples, out = bench.time_calls(call, repeat, prep)
    return Timing(wall_ms=[s * 1e3 for s in samples], out=out)
