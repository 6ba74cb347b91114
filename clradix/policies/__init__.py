"""Policies: the plain frozen values that say how an operation runs (sort, segmented sort, top-k,
selection, the kernel families after a sort: ``families``), their built-in defaults, the pure
planners that choose them from a device profile, the checks of caller overrides, and the on-disk
tuning cache. Imports only clradix.core.

The sort's concerns each have a module: ``sort`` (SortPolicy, its local memory, the checks of
its fields), ``sort_defaults`` (the defaults table), ``sort_plan`` (the planner),
``sort_validate`` (a policy against a device); ``fit`` holds what the sort and segmented-sort
planners share (the ranking back-ends a device has, the work-group clamp, the tile shrink)."""
