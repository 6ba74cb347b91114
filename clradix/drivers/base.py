"""The drivers' contract: what every algorithm (single work-group, reduce-then-scan, onesweep,
segmented, radix select, rank select, the kernel families after a sort: elementwise.py) offers
the planner and the host orchestration.

- construction builds the algorithm's kernels for one planned policy (the planner constructs
  drivers) through :class:`Driver`'s ``__init__``: each ``Build`` names a template, its parameters
  and options, and the kernels launched with the policy's work-group size, which are checked
  (a kernel that runs fewer work-items per group raises WorkGroupLimitError);
- ``temp_bytes(...)``, a classmethod, says how much temporary memory a call asks its allocator
  for, without building anything;
- ``sequence(job)`` turns a job (a call configuration: sizes, bit range, direction, which
  operands) into a ready :class:`~clradix.core.launches.LaunchSequence`, the one path by which
  kernels are enqueued; the planner keeps it, and a call runs it with its operands, an instance
  of the driver's ``Operands`` type (core.launches: SortOperands; top-k's and the selection's
  beside their drivers).
"""

from typing import NamedTuple, Sequence, Tuple

import pyopencl as cl

from ..core.launches import KernelSlot, SortOperands
from ..core.limits import check_work_groups


class Build(NamedTuple):
    """One program of a driver: its template, parameters and build options, the kernels launched
    with the policy's work-group size (checked) and those launched otherwise."""

    template: str
    params: dict
    options: Sequence[str]
    kernels: Tuple[str, ...]
    other_kernels: Tuple[str, ...] = ()


class Driver:
    """Base of the drivers: builds their programs, keeps each kernel's declaration and one kernel
    object per launch position, and records each command when ``trace`` is a list."""

    #: when a list, a run appends (command name, event) of each of its commands (profiling)
    trace = None
    #: the operands type of the driver's operation (core.launches): its fields are the slots
    Operands: type = SortOperands

    def __init__(self, programs, device, profile, wg_size, builds):
        self.device = device
        self.profile = profile
        self._programs = {}       # kernel name -> its program
        self._declarations = {}   # kernel name -> its parameters
        checked = {}
        for build in builds:
            program = programs.get(build.template, build.params, build.options)
            decls = programs.declarations(build.template, build.params)
            for name in build.kernels + build.other_kernels:
                self._programs[name] = program
                self._declarations[name] = decls[name]
            kernels = {name: cl.Kernel(program, name) for name in build.kernels}
            check_work_groups(kernels, device, wg_size, profile.describe(), build.options)
            checked.update(kernels)
        self.kernels = checked
        self._slots = {(name, 0): KernelSlot(knl) for name, knl in checked.items()}

    def declaration(self, name):
        """The parameters of kernel ``name`` as its rendered source declares them."""
        return self._declarations[name]

    def kernel_slot(self, name, position):
        """The kernel object of the ``position``-th launch of kernel ``name`` in a sequence (made
        on first use; shared by the driver's sequences)."""
        slot = self._slots.get((name, position))
        if slot is None:
            slot = self._slots[(name, position)] = KernelSlot(cl.Kernel(self._programs[name],
                                                                        name))
        return slot

    @classmethod
    def temp_bytes(cls, *args):  # pragma: no cover - every driver defines it
        raise NotImplementedError

    def sequence(self, job):  # pragma: no cover - every driver defines it
        """The ready launch sequence of ``job`` (a call configuration)."""
        raise NotImplementedError


