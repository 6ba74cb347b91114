"""The check of built kernels against the work-group size they are launched with: what a device
really runs (CL_KERNEL_WORK_GROUP_SIZE, CL_KERNEL_LOCAL_MEM_SIZE), not what it advertises."""

import pyopencl as cl

from .errors import WorkGroupLimitError


def kernel_wg_limit(kernel, device):
    """CL_KERNEL_WORK_GROUP_SIZE of a built kernel on ``device`` (a module function so that tests
    can make it small)."""
    return int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device))


def check_work_groups(kernels, device, wg_size, where):
    """WorkGroupLimitError unless every kernel of ``kernels`` ({name: Kernel}) runs ``wg_size``
    work-items per group on ``device`` and fits its local memory (``where`` names the device)."""
    for name, knl in kernels.items():
        limit = kernel_wg_limit(knl, device)
        if limit < wg_size:
            raise WorkGroupLimitError(f"kernel {name} runs at most {limit} work-items per group "
                                      f"on {where}; the policy asks for wg_size={wg_size}",
                                      name, limit, wg_size)
        local = knl.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, device)
        if local > device.local_mem_size:
            raise WorkGroupLimitError(f"kernel {name} needs {local} bytes of local memory at "
                                      f"wg_size={wg_size} on {where}, which has "
                                      f"{device.local_mem_size}", name, limit, wg_size)
