"""The refusals a policy can meet: :class:`PolicyError` (a policy that cannot run on a device) and
:class:`WorkGroupLimitError` (a built kernel that runs fewer work-items per group than planned),
which the planner learns from."""


class PolicyError(ValueError):
    """A policy that cannot run on a device; the message names the device and the limit."""


class WorkGroupLimitError(PolicyError):
    """A built kernel runs fewer work-items per group than the policy's wg_size (its registers or
    local memory limit it below the device's maximum); ``kernel`` and ``limit`` say which and how
    many."""

    def __init__(self, message, kernel, limit, wg_size):
        super().__init__(message)
        self.kernel = kernel
        self.limit = limit
        self.wg_size = wg_size
