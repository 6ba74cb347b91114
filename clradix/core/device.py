"""Device profile: what the planner needs to know about one OpenCL device."""

import threading
from dataclasses import dataclass
from typing import Dict

import pyopencl as cl

_TYPES = [(cl.device_type.GPU, "gpu"), (cl.device_type.CPU, "cpu"),
          (cl.device_type.ACCELERATOR, "accelerator")]


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    vendor: str
    platform: str
    driver_version: str
    device_type: str
    compute_units: int
    local_mem_bytes: int
    max_wg_size: int
    max_alloc_bytes: int
    extensions: frozenset
    disabled_rankings: frozenset = frozenset()  # ranking back-ends its driver failed to compile
    cl_profile: str = "FULL_PROFILE"  # CL_DEVICE_PROFILE: FULL_PROFILE or EMBEDDED_PROFILE

    @property
    def identity(self):
        """Names the device and its driver: tuned results are only valid for this identity."""
        return f"{self.platform} | {self.name} | {self.driver_version}"

    @property
    def is_gpu(self):
        return self.device_type == "gpu"

    @property
    def is_cpu(self):
        return self.device_type == "cpu"

    @property
    def runs_started_groups_to_end(self):
        """Whether the device runs every work-group it has started until that work-group ends,
        however long other work-groups of the launch spin meanwhile. OpenCL promises no such
        thing. Kernels whose work-groups wait, with no spin limit, for work-groups that took a
        smaller virtual id (onesweep's ring claim, os_fused's pass order, topk_fused's row states;
        docs/guarantees.md, "No hang") finish only where it holds, and the planner refuses them
        elsewhere: a scheduling property, kept here in one place. Measured on NVIDIA GPUs, PoCL's
        pthread device and Intel's CPU runtime (each runs a started work-group to its end on one
        thread) and oclgrind (one work-group at a time); held for every GPU, whose work-groups keep
        their compute unit once resident; not held for other device types (accelerators), where
        it is not measured."""
        return self.device_type in ("gpu", "cpu")

    @property
    def is_nvidia(self):
        return "nvidia" in self.vendor.lower() or "nvidia" in self.platform.lower()

    @property
    def has_ptx(self):
        """Whether the device is an NVIDIA GPU, whose OpenCL compiler takes inline PTX (warp votes
        and shuffles, fences, relaxed and acquire accesses): the templates' ``ptx``."""
        return self.is_nvidia and self.is_gpu

    def has_extension(self, name):
        return name in self.extensions

    @property
    def has_int64(self):
        """Whether OpenCL C's 64-bit integers (long, ulong) work: always on FULL_PROFILE devices,
        only with ``cles_khr_int64`` on EMBEDDED_PROFILE ones."""
        return self.cl_profile != "EMBEDDED_PROFILE" or self.has_extension("cles_khr_int64")

    @classmethod
    def from_device(cls, device):
        dtype = next((name for flag, name in _TYPES if device.type & flag), "other")
        return cls(
            name=device.name.strip(),
            vendor=device.vendor.strip(),
            platform=device.platform.name.strip(),
            driver_version=device.driver_version.strip(),
            device_type=dtype,
            compute_units=int(device.max_compute_units),
            local_mem_bytes=int(device.local_mem_size),
            max_wg_size=int(device.max_work_group_size),
            max_alloc_bytes=int(device.max_mem_alloc_size),
            extensions=frozenset(device.extensions.split()),
            cl_profile=device.profile.strip(),
        )

    def describe(self):
        return f"{self.name} ({self.platform}, driver {self.driver_version})"


class Profiles:
    """The DeviceProfile of each device, read from the driver once; ``replace`` swaps one for
    another (a ranking back-end its driver failed to compile left out, or a test's device)."""

    def __init__(self):
        self._by_device = {}
        self._lock = threading.Lock()
        self.version = 0   # how many replacements: what was planned for an older one is stale

    def get(self, device):
        with self._lock:
            prof = self._by_device.get(device.int_ptr)
            if prof is None:
                prof = self._by_device[device.int_ptr] = DeviceProfile.from_device(device)
            return prof

    def replace(self, device, profile):
        with self._lock:
            self._by_device[device.int_ptr] = profile
            self.version += 1


_PROBE_SRC = "__kernel void clradix_probe(__global uint* a) { a[get_global_id(0)] = 1u; }"
_probe_results: Dict[int, bool] = {}


def can_build(device):
    """Whether ``device`` compiles OpenCL C at all (some installed drivers cannot: a CPU driver
    whose LLVM does not know the host processor, say). Memoised per device."""
    key = device.int_ptr
    if key not in _probe_results:
        try:
            cl.Program(cl.Context([device]), _PROBE_SRC).build()
            _probe_results[key] = True
        except cl.Error:
            _probe_results[key] = False
    return _probe_results[key]


def all_devices():
    """Every device of every platform, in platform order."""
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    return [d for p in platforms for d in p.get_devices()]


#: the environment variable naming the default device: an index in all_devices() or a name
#: substring (matching_devices)
DEVICE_ENV = "CLRADIX_DEVICE"


def device_label(d):
    """What a device spec's substring is matched against: "platform name device name" (and
    "PoCL" for the Portable Computing Language platform)."""
    plat = d.platform.name.strip()
    short = " PoCL" if plat == "Portable Computing Language" else ""
    return f"{plat}{short} {d.name.strip()}"


def device_listing():
    """Every device, numbered as all_devices() numbers them, for error messages."""
    devices = all_devices()
    if not devices:
        return "no OpenCL platform at all (no driver installed, or none its ICD loader finds)"
    return "; ".join(f"{i}: {d.platform.name.strip()} / {d.name.strip()}"
                     f"{'' if can_build(d) else ' (cannot build kernels)'}"
                     for i, d in enumerate(devices))


def matching_devices(spec):
    """The devices that build kernels and match ``spec`` (an index in all_devices(), or a
    case-insensitive substring of device_label: "nvidia", "pocl", "intel", a device's name), in
    platform order. The one reading of a device spec: CLRADIX_DEVICE, the command line's
    --device and clradix.dask's workers."""
    devices = all_devices()
    spec = str(spec).strip()
    if spec.isdigit():
        picked = [devices[int(spec)]] if int(spec) < len(devices) else []
    else:
        picked = [d for d in devices if spec.lower() in device_label(d).lower()]
    return [d for d in picked if can_build(d)]


def device_for(spec, source=""):
    """The first device that builds kernels and matches ``spec`` (matching_devices); where none
    does, a RuntimeError naming the spec (after ``source``, such as "CLRADIX_DEVICE=") and
    listing every device."""
    found = matching_devices(spec)
    if not found:
        raise RuntimeError(f"no OpenCL device matches {source}{str(spec).strip()!r} among those "
                           f"that build kernels ({device_listing()}); `python -m clradix info` "
                           f"lists them")
    return found[0]


def default_device():
    """The device clradix uses when the caller names none: the first match of ``CLRADIX_DEVICE``
    (an index in ``python -m clradix info``'s list or a name substring) when it is set, else
    ``PYOPENCL_CTX`` as pyopencl reads it, else the first GPU that builds kernels, else the first
    other device that does (PoCL on the CPU on a machine without a GPU). A ``CLRADIX_DEVICE`` that
    matches nothing is a RuntimeError naming it and listing the devices (never another device
    silently)."""
    import os
    spec = os.environ.get(DEVICE_ENV, "").strip()
    if spec:
        return device_for(spec, f"{DEVICE_ENV}=")
    if os.environ.get("PYOPENCL_CTX"):
        return cl.create_some_context(interactive=False).devices[0]
    devices = all_devices()
    for want_gpu in (True, False):
        for d in devices:
            if bool(d.type & cl.device_type.GPU) == want_gpu and can_build(d):
                return d
    raise RuntimeError("no OpenCL device that can build kernels was found: install an OpenCL "
                       "driver (for the CPU: pip install pocl-binary-distribution, or Debian's "
                       "pocl-opencl-icd)")
