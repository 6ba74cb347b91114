"""Policies: the plain frozen values that say how an operation runs (sort, segmented sort, top-k),
their built-in defaults, the pure planners that choose them from a device profile, the checks of
caller overrides, and the on-disk tuning cache. Imports only clradix.core."""
