"""What callers use: Sorter, Selector, the numpy-like functions and the segmented entry points.
Imports every layer below it (planning, drivers, policies, core)."""
