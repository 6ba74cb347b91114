"""The drivers' contract: what every algorithm (single work-group, reduce-then-scan, onesweep,
radix select) offers the host orchestration (Sorter, Selector).

- construction builds the algorithm's kernels for one planned policy (the planners in
  ``planner.py`` construct drivers; a kernel that runs fewer work-items per group than the policy
  asks for raises :class:`WorkGroupLimitError`);
- ``temp_bytes(...)``, a classmethod, says how much temporary memory a call asks its allocator
  for, without building anything;
- ``enqueue(queue, job, alloc, wait)`` enqueues one job (a SortJob or a TopkJob) after the events
  ``wait``, with temporaries from ``alloc(nbytes)``, and returns the event of its last command.
"""

import pyopencl as cl

from .policy import PolicyError


class WorkGroupLimitError(PolicyError):
    """A built kernel runs fewer work-items per group than the policy's wg_size (its registers or
    local memory limit it below the device's maximum); ``kernel`` and ``limit`` say which and how
    many."""

    def __init__(self, message, kernel, limit, wg_size):
        super().__init__(message)
        self.kernel = kernel
        self.limit = limit
        self.wg_size = wg_size


def kernel_wg_limit(kernel, device):
    """CL_KERNEL_WORK_GROUP_SIZE of a built kernel on ``device`` (a module function so that tests
    can make it small)."""
    return int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device))


def check_wg_limits(kernels, device, wg_size, where):
    """WorkGroupLimitError unless every kernel of ``kernels`` ({name: Kernel}) runs ``wg_size``
    work-items per group on ``device`` (``where`` names the device in the message)."""
    for name, knl in kernels.items():
        limit = kernel_wg_limit(knl, device)
        if limit < wg_size:
            raise WorkGroupLimitError(f"kernel {name} runs at most {limit} work-items per group "
                                      f"on {where}; the policy asks for wg_size={wg_size}",
                                      name, limit, wg_size)


class Driver:
    """Base of the drivers: the contract above, and per-command tracing for profiling."""

    #: when a list, enqueue() appends (kernel name, event) of each of its commands (profiling)
    trace = None

    def _traced(self, name, evt):
        if self.trace is not None:
            self.trace.append((name, evt))
        return evt

    @classmethod
    def temp_bytes(cls, *args):  # pragma: no cover - every driver defines it
        raise NotImplementedError

    def enqueue(self, queue, job, alloc, wait):  # pragma: no cover - every driver defines it
        raise NotImplementedError
