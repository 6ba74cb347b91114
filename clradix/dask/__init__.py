"""clradix as the per-chunk engine of Dask (``pip install 'clradix[dask]'``).

    import clradix.dask as crd
    top = crd.topk(x, 1000)                  # dask.array.topk's conventions, on each worker's device
    pos = crd.argtopk(x, -10)                # the 10 smallest
    s = crd.sort(x)                          # global sort of a 1-D dask array (sample sort)
    order = crd.argsort(x)                   # its global positions, int64
    s = crd.sort(x, on_device=True)          # chunks left on the devices (DeviceChunk)
    xd = crd.to_device(x).persist()          # chunks uploaded once, kept on the devices
    ddf.sort_values("a", sort_function=crd.sort_function)
    client.register_plugin(crd.DevicePlugin("NVIDIA"))   # one GPU per worker of a machine
    client.register_plugin(crd.DevicePlugin("NVIDIA", per_worker=None))  # one worker, every GPU

Modules: ``devices`` (each process's device, context, Sorter, Selector and per-thread queues),
``memory`` (host copies: pinned staging and results on a GPU, in place on a CPU device),
``chunk`` (DeviceChunk, a chunk held in device memory), ``plugin`` (the ``distributed`` worker
plugin), ``engines`` (what a task does to a chunk, on the device or in numpy), ``topk``,
``sort`` (sample sort), ``dataframe`` (the ``sort_function``).
"""

from .devices import NoDeviceError, WorkerDevice, current, use_device, use_devices
from .chunk import DeviceChunk
from .engines import task_times
from .topk import argtopk, topk
from .sort import argsort, sort, to_device
from .dataframe import sort_function

__all__ = ["topk", "argtopk", "sort", "argsort", "sort_function", "DevicePlugin", "use_device",
           "use_devices", "current", "WorkerDevice", "NoDeviceError", "task_times", "DeviceChunk",
           "to_device"]


def __getattr__(name):
    if name == "DevicePlugin":   # needs distributed, which the local schedulers do not
        from .plugin import DevicePlugin
        return DevicePlugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
