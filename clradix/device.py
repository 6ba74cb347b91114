"""Device profile: what the planner needs to know about one OpenCL device."""

from dataclasses import dataclass

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

    @property
    def identity(self):
        """Names the device and its driver: tuned results are only valid for this identity."""
        return f"{self.platform} | {self.name} | {self.driver_version}"

    @property
    def is_gpu(self):
        return self.device_type == "gpu"

    @property
    def is_nvidia(self):
        return "nvidia" in self.vendor.lower() or "nvidia" in self.platform.lower()

    def has_extension(self, name):
        return name in self.extensions

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
        )

    def describe(self):
        return f"{self.name} ({self.platform}, driver {self.driver_version})"
