"""A ``distributed`` worker plugin that gives each worker of a machine its own device.

    client.register_plugin(clradix.dask.DevicePlugin("NVIDIA"))
    client.register_plugin(clradix.dask.DevicePlugin("NVIDIA", per_worker=None))  # every GPU

On every worker (those running and those that join later) ``setup`` takes the worker's slot on
its machine and calls :func:`clradix.dask.devices.use_devices` with the slot-th ``per_worker``
devices that match (modulo their number), so that two workers on a two-GPU machine get one GPU
each. With ``per_worker=None`` a worker drives every matching device of its machine (start one
worker per machine, with a task thread or two per device): its tasks spread over the devices,
and a sort's pieces change devices through the process's pinned memory instead of Dask's
transfers between processes. The slot is the
number at the end of the worker's name when it has one (``LocalCluster`` names its workers 0, 1,
...; ``dask worker --nworkers N --name w`` names them w-0, w-1, ...); otherwise the worker claims
the lowest free slot of its machine through a lock file in the temporary folder (released at
teardown, reclaimed from workers that died). Nothing assumes the cluster is local: each worker
looks only at its own machine. Errors (no device matches) are raised in ``setup``, naming the
worker and the devices it found.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Optional

from distributed.diagnostics.plugin import WorkerPlugin

from ..core.device import DEVICE_ENV
from . import devices


class DevicePlugin(WorkerPlugin):
    """Picks each worker's devices once: the slot-th ``per_worker`` of the devices ``match``
    names (as ``CLRADIX_DEVICE``: an index or a name substring; None: ``CLRADIX_DEVICE`` when
    set, else the GPUs of the first platform that has one, else clradix's default device), or
    with ``per_worker=None`` every one of them."""

    name = "clradix-device"

    def __init__(self, match: Optional[str] = None,
                 switch_interval: Optional[float] = None,
                 per_worker: Optional[int] = 1) -> None:
        if per_worker is not None and (isinstance(per_worker, bool) or int(per_worker) < 1):
            raise ValueError(f"per_worker must be a positive number of devices or None (every "
                             f"matching device), got {per_worker!r}")
        self.match = match
        #: devices each worker drives (None: every one that matches)
        self.per_worker = None if per_worker is None else int(per_worker)
        #: seconds, for sys.setswitchinterval in each worker process (None: left as it is).
        #: A task thread that returns from a device wait must take the GIL back from threads
        #: running Python (the worker's event loop, other tasks), which by default can take
        #: up to 5 ms each time
        self.switch_interval = switch_interval
        self._claimed = None

    def setup(self, worker) -> None:
        slot = _name_slot(worker.name)
        if slot is None:
            slot, self._claimed = _claim_slot()
        spec = self.match
        if spec is None and not os.environ.get(DEVICE_ENV, "").strip():
            spec = _gpus()
        devs = devices.use_devices(spec, slot, self.per_worker)
        worker.clradix_device = "; ".join(d.describe() for d in devs)
        if self.switch_interval is not None:
            import sys
            sys.setswitchinterval(self.switch_interval)

    def teardown(self, worker) -> None:
        if self._claimed:
            try:
                os.unlink(self._claimed)
            except OSError:
                pass


def _gpus():
    """A spec matching the GPUs of the first platform that has a usable one; None (clradix's
    default device) when there is none."""
    import pyopencl as cl
    from ..core.device import all_devices, can_build
    gpus = [d for d in all_devices() if d.type & cl.device_type.GPU and can_build(d)]
    return gpus[0].platform.name if gpus else None


def _name_slot(name) -> Optional[int]:
    if isinstance(name, int):
        return name
    m = re.search(r"(\d+)$", str(name))
    return int(m.group(1)) if m else None


def _claim_slot(limit: int = 1024):
    """(slot, lock file): the lowest slot no live process of this machine holds."""
    folder = os.path.join(tempfile.gettempdir(), f"clradix-dask-slots-{os.getuid()}")
    os.makedirs(folder, exist_ok=True)
    for slot in range(limit):
        path = os.path.join(folder, str(slot))
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                if _alive(path):
                    break
                try:
                    os.unlink(path)   # its worker died: take the slot over
                except OSError:
                    pass
                continue
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            return slot, path
    raise RuntimeError(f"clradix.dask: no free device slot in {folder}")


def _alive(path) -> bool:
    try:
        with open(path) as f:
            pid = int(f.read().strip() or 0)
        if pid <= 0:
            return True   # being written right now
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except (OSError, ValueError):
        return True
