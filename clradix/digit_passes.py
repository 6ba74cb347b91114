"""What the digit-pass algorithms share: building their program and checking its kernels."""

import numpy as np
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


class DigitPasses:
    """Base of an algorithm that sorts by a list of digit passes (see reduce_then_scan.py, onesweep.py).

    A subclass names its template and kernels, adds its template parameters and implements
    ``temp_bytes(policy, profile, index_bytes, n, passes)`` (a classmethod: a size query builds
    nothing) and a way to enqueue: ``enqueue(queue, n, passes, descending, key_io, val_io, iota,
    alloc, wait)`` for the multi-pass algorithms, ``enqueue_small`` for the single work-group
    sort (reduce_then_scan.SingleWorkGroup), which sorts in one launch without ping-pong buffers.
    """

    template = None
    kernel_names = ()

    def __init__(self, programs, device, profile, policy, codec, value_t, index_name, index_np):
        self.device = device
        self.profile = profile
        self.policy = policy
        self.codec = codec
        self.value_t = value_t
        self.index_np = np.dtype(index_np).type
        self.index_bytes = np.dtype(index_np).itemsize
        params = dict(codec.template_args(), radix_bits=policy.radix_bits, wg=policy.wg_size,
                      ipt=policy.items_per_thread, value_t=value_t, index_t=index_name)
        params.update(self.template_params(policy))
        options = list(self.build_options())
        if getattr(policy, "max_registers", 0) and profile.is_nvidia:
            options.append(f"-cl-nv-maxrregcount={policy.max_registers}")
        # what the program was rendered and built from (benchmarks rebuild it to inspect it)
        self.render_params, self.build_opts = params, options
        self.program = programs.get(self.template, params, options)
        self.kernels = {name: cl.Kernel(self.program, name) for name in self.kernel_names}
        for name, knl in self.kernels.items():
            wg_max = kernel_wg_limit(knl, device)
            if wg_max < policy.wg_size:
                raise WorkGroupLimitError(
                    f"kernel {name} runs at most {wg_max} work-items per group on "
                    f"{profile.describe()}; the policy asks for wg_size={policy.wg_size}",
                    name, wg_max, policy.wg_size)
        self.iota = None
        if value_t in ("uint", "ulong"):
            self.iota = cl.Kernel(self.program, "rts_iota")
            self.iota.set_scalar_arg_dtypes([None, np.uint64, self.index_np])

    #: when a list, enqueue() appends (kernel name, event) of every command (for profiling)
    trace = None

    def _traced(self, name, evt):
        if self.trace is not None:
            self.trace.append((name, evt))
        return evt

    def template_params(self, policy):
        return {}

    def build_options(self):
        """Compiler options the algorithm's template needs on this device."""
        return []

    def pass_buffers(self, p, key_io, val_io, iota):
        """Kernel arguments naming pass ``p``'s inputs and outputs, and whether keys are written.

        Keys: (in, in offset, out, out offset); then, with values, (in, in offset, out, out
        offset, iota) where iota says the first pass makes the values (argsort's indices).
        """
        (kin, kin_off), kout = key_io[p]
        kout_buf, kout_off = kout if kout is not None else (kin, kin_off)
        args = [kin, kin_off, kout_buf, kout_off]
        if val_io is not None:
            vin, (vout, vout_off) = val_io[p]
            use_iota = iota and p == 0
            vin_buf, vin_off = (vout, vout_off) if use_iota else vin
            args += [vin_buf, vin_off, vout, vout_off, int(use_iota)]
        return args, int(kout is not None)

    def flip(self, descending):
        return self.codec.unsigned_dtype.type(((1 << self.codec.bits) - 1) if descending else 0)
