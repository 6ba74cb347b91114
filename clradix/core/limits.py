"""The check of built kernels against the work-group size they are launched with: what a device
really runs (CL_KERNEL_WORK_GROUP_SIZE, CL_KERNEL_LOCAL_MEM_SIZE), not what it advertises."""

import pyopencl as cl

from .errors import WorkGroupLimitError


def kernel_wg_limit(kernel, device):
    """CL_KERNEL_WORK_GROUP_SIZE of a built kernel on ``device`` (a module function so that tests
    can make it small)."""
    return int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device))


def capped_wg_limit(device, options):
    """The work-items a group of a kernel built with ``options`` can run when they cap its
    registers (``-cl-nv-maxrregcount=N``): the register file of a group over N, in whole warps,
    at most the device's largest group; None without a cap or the register file's size.

    Why: NVIDIA's OpenCL reports CL_KERNEL_WORK_GROUP_SIZE 256 for every kernel that does not
    state its size, a kernel of 10 registers included, and runs 384 and 512 work-items a group
    of such kernels correctly. A capped kernel cannot state its size (the compiler would ignore
    the cap), so its limit comes from the cap, which bounds its registers."""
    caps = [int(o.split("=", 1)[1]) for o in options if o.startswith("-cl-nv-maxrregcount=")]
    if not caps or caps[-1] <= 0:
        return None
    # asked only of a device that has the attributes (another runtime reports the query as an
    # invalid API call)
    if "cl_nv_device_attribute_query" not in getattr(device, "extensions", "") \
            and "NVIDIA" not in getattr(device, "vendor", ""):
        return None
    try:
        regs = int(device.registers_per_block_nv)
        warp = int(device.warp_size_nv)
    except (cl.LogicError, AttributeError):
        return None
    return min(int(device.max_work_group_size), regs // caps[-1] // warp * warp)


def check_work_groups(kernels, device, wg_size, where, options=()):
    """WorkGroupLimitError unless every kernel of ``kernels`` ({name: Kernel}) runs ``wg_size``
    work-items per group on ``device`` and fits its local memory (``where`` names the device;
    ``options``: the kernels' build options, capped_wg_limit)."""
    capped = capped_wg_limit(device, options)
    for name, knl in kernels.items():
        limit = max(kernel_wg_limit(knl, device), capped or 0)
        if limit < wg_size:
            raise WorkGroupLimitError(f"kernel {name} runs at most {limit} work-items per group "
                                      f"on {where}; the policy asks for wg_size={wg_size}",
                                      name, limit, wg_size)
        local = knl.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, device)
        if local > device.local_mem_size:
            raise WorkGroupLimitError(f"kernel {name} needs {local} bytes of local memory at "
                                      f"wg_size={wg_size} on {where}, which has "
                                      f"{device.local_mem_size}", name, limit, wg_size)
