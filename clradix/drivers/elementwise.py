"""The kernel families that come after a sort, as drivers: the permutations (permute.py), the
layout copies (layout.py), searchsorted (search.py) and the runs of equal keys (runs.py).

Each is a :class:`FamilyDriver`: one template, built for one policy (clradix.policies.families)
and one parameter set, whose jobs (a call configuration: sizes, types, flags) become launch
sequences like every other driver's (clradix.core.launches: arguments checked against the
rendered declaration once, replayed per call). A job names the program it needs
(:meth:`FamilyDriver.program`), so the planner builds a driver per (policy, program) and makes a
sequence per job."""

import numpy as np

from .base import Build, Driver


class FamilyDriver(Driver):
    """A kernel family's driver: ``template``'s program of ``params`` (``program(policy,
    profile, job)``), its kernels ``kernel_names`` launched with the policy's ``wg_size``
    (checked: a kernel that runs fewer raises WorkGroupLimitError, and the planner plans a
    smaller work-group); ``family`` names its policy (policies.families.family_policy). A
    family states them as class keywords: ``class Search(FamilyDriver, template=...,
    family=..., kernels=..., operands=...)``."""

    template = ""
    family = ""
    kernel_names: tuple = ()

    def __init_subclass__(cls, template="", family="", kernels=(), operands=None, **kw):
        super().__init_subclass__(**kw)
        cls.template, cls.family, cls.kernel_names = template, family, tuple(kernels)
        if operands is not None:
            cls.Operands = operands

    def __init__(self, programs, device, profile, policy, params):
        self.policy = policy
        self.params = params
        super().__init__(programs, device, profile, policy.wg_size,
                         [Build(self.template, params, (), self.kernel_names)])

    @classmethod
    def program(cls, policy, profile, job):  # pragma: no cover - every family defines it
        """The template parameters of the program ``job`` runs."""
        raise NotImplementedError

    @classmethod
    def temp_bytes(cls, *args):
        return 0   # the families' buffers are their callers'


def index_cl(dtype):
    """The unsigned OpenCL C type of an integer dtype's width (uint or ulong)."""
    return {4: "uint", 8: "ulong"}[np.dtype(dtype).itemsize]


__all__ = ["FamilyDriver", "index_cl"]
