"""The one check of caller overrides, for every policy: a dict of policy fields, each None (the
planner chooses) or a value the field takes; TypeError or ValueError naming the field."""

from .segment import SegmentPolicy
from .sort import SortPolicy, check_sort_overrides
from .topk import TopkPolicy, check_topk_overrides


def check_overrides(overrides, policy=SortPolicy, *, max_wg_size=None):
    """Raise TypeError or ValueError (naming the field, the value and what it accepts) unless
    every item of ``overrides`` (a dict) is a field of ``policy`` (SortPolicy: the algorithm,
    every algorithm's knobs and the debugging switches, a Sorter's keywords; TopkPolicy or
    SegmentPolicy) and its value None or one the field takes; ``max_wg_size``, when given, bounds
    a top-k wg_size (the largest work-group of the caller's devices)."""
    if policy is SortPolicy:
        check_sort_overrides(overrides, debug=True)
    elif policy is TopkPolicy:
        unknown = set(overrides) - set(TopkPolicy.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown top-k override(s): {', '.join(sorted(unknown))}; policy "
                            f"fields are {', '.join(TopkPolicy.__dataclass_fields__)}")
        check_topk_overrides(max_wg_size=max_wg_size, **overrides)
    elif policy is SegmentPolicy:
        unknown = set(overrides) - set(SegmentPolicy.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown segment policy field(s): {', '.join(sorted(unknown))}")
    else:
        raise TypeError(f"no override check for {policy!r}")
