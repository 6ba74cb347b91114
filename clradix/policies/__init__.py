"""Policies: the plain frozen values that say how an operation runs (sort, segmented sort, top-k,
selection, the kernel families after a sort: ``families``), their built-in defaults, the pure
planners that choose them from a device profile (the sort's in clradix.planning.sort_plan, which
fits by its drivers' local memory), the checks of caller overrides, and the on-disk tuning cache.
Imports only clradix.core.

The sort's concerns each have a module: ``sort`` (a policy per algorithm, SortPolicy their base,
each with its checks; SortDebug, the debugging switches; the design in its docstring),
``sort_defaults`` (the defaults table); ``fit`` holds what the sort and segmented-sort planners
share (the ranking back-ends a device has, the work-group clamp, the tile shrink)."""
