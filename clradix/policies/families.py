"""The policies of the kernel families that come after a sort (plain frozen values): the
permutations by an index and the layout copies (:class:`GridPolicy`), searchsorted
(:class:`SearchPolicy`) and the runs of equal keys (:class:`RunsPolicy`).

:func:`family_policy` is the one place their tuning branches by device: a pure function of the
device profile. A policy given instead of it (tests, benchmarks) is taken as it is."""

from dataclasses import dataclass

from ..core.device import DeviceProfile
from ..core.sizes import pow2_floor

#: work-items per group of the families' launches (fewer where a device runs fewer)
WG = 256
#: the most work-groups of a grid-stride launch
MAX_GROUPS = 4096


def _check(name, value, lo, hi=None, pow2=False):
    if not isinstance(value, int) or value < lo or (hi is not None and value > hi) or (
            pow2 and value & (value - 1)):
        bound = f"{lo} to {hi}" if hi is not None else f"at least {lo}"
        raise ValueError(f"{name} {value!r}: takes {'a power of two, ' if pow2 else ''}"
                         f"{bound}")


@dataclass(frozen=True)
class GridPolicy:
    """A launch over n items (a permutation's take and iota, the layout's gather and widen):
    ``wg_size`` work-items a group, at most ``max_groups`` groups, each work-item striding
    over the items."""

    wg_size: int = WG
    max_groups: int = MAX_GROUPS

    def __post_init__(self):
        _check("wg_size", self.wg_size, 1, pow2=True)
        _check("max_groups", self.max_groups, 1)

    def groups(self, n):
        """Work-groups of a grid-stride launch over ``n`` items."""
        return max(1, min(-(-int(n) // self.wg_size), self.max_groups))


@dataclass(frozen=True)
class SearchPolicy(GridPolicy):
    """searchsorted (cl_templates/search.cl.mako): a grid-stride launch over the values; in one
    row of at least 2^``local_levels`` keys, each work-group keeps the top ``local_levels``
    levels of the search (the row's 2^levels - 1 splitters) in local memory (0: never), and
    such a launch is ``groups_per_cu`` work-groups per compute unit wide (each loads the
    splitters once, so the launch is as wide as the device runs at once, not a group per
    wg_size values)."""

    local_levels: int = 11
    groups_per_cu: int = 8

    def __post_init__(self):
        super().__post_init__()
        _check("local_levels", self.local_levels, 0, 16)
        _check("groups_per_cu", self.groups_per_cu, 1)


@dataclass(frozen=True)
class RunsPolicy:
    """The runs of equal keys (cl_templates/runs.cl.mako): blocks of ``wg_size`` work-items
    (the kernels state it: reqd_work_group_size), each work-item counting at least
    ``per_item`` positions (fewer blocks: less for each block of runs_write to sum before it
    starts), at most ``blocks_per_cu`` blocks per compute unit and ``max_blocks`` in all;
    runs_write takes ``ipt`` consecutive positions a work-item a round (1 to 32: a round is a
    work-group scan of wg_size x ipt positions), ``perm_ipt`` with a permutation (unique's
    index and inverse)."""

    wg_size: int = WG
    per_item: int = 16
    ipt: int = 8
    perm_ipt: int = 8
    blocks_per_cu: int = 8
    max_blocks: int = MAX_GROUPS

    def __post_init__(self):
        _check("wg_size", self.wg_size, 1, pow2=True)
        for name in ("ipt", "perm_ipt"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 1 <= value <= 32:
                raise ValueError(f"runs_write: {name} {value!r}: the positions a work-item "
                                 f"takes a round are 1 to 32")
        for name in ("per_item", "blocks_per_cu", "max_blocks"):
            _check(name, getattr(self, name), 1)

    def write_ipt(self, perm):
        """runs_write's positions a work-item a round, with a permutation or not."""
        return self.perm_ipt if perm else self.ipt


def family_policy(family, profile: DeviceProfile):
    """The policy of kernel family ``family`` ("permute", "layout", "search" or "runs") on the
    device of ``profile``: work-groups of WG work-items (a power of two, at most the device's
    largest), and on CPUs:

    - searchsorted keeps no splitters in local memory (a CPU's caches hold the top of every
      search, and a work-group's splitter loads are one work-item's loop there);
    - the runs' work-groups are one work-item, which walks its block alone (a CPU runtime runs
      the work-items of a barrier one after another, each scan step a pass over the group): a
      round of runs_write is 32 positions, no barrier, the previous key carried from one
      position to the next; 1 with a permutation (its inverse's scattered writes: a short
      loop a position keeps more of them in flight). Measured on PoCL 3.0; on other devices 8
      positions a round measured best of 1, 8, 16 and 32 on an H200 (BENCHMARKS_NOTES.md).
    """
    wg = pow2_floor(min(WG, profile.max_wg_size))
    cpu = profile.is_cpu
    if family in ("permute", "layout"):
        return GridPolicy(wg_size=wg)
    if family == "search":
        return SearchPolicy(wg_size=wg, local_levels=0 if cpu else 11)
    if family == "runs":
        if cpu:
            return RunsPolicy(wg_size=1, ipt=32, perm_ipt=1)
        return RunsPolicy(wg_size=wg)
    raise ValueError(f"no kernel family {family!r}")
