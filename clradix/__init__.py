"""clradix: stable radix sort and argsort of OpenCL buffers, on any OpenCL device.

    import clradix
    sorter = clradix.Sorter(ctx)
    evt = sorter.sort(queue, buf)               # in place, uint32 keys by default
    idx, evt = sorter.argsort(queue, keys_array)

    sorted_copy = clradix.sort(array)           # numpy-like: any shape and axis
    order = clradix.argsort(array, axis=0)      # int64 indices, as numpy's
    values, indices = clradix.topk(array, k)    # k largest along the last axis
    mid = clradix.median(array, axis=-1)        # and partition, kthvalue, quantile, ...
    where = clradix.searchsorted(sorted_keys, values)   # and unique, lexsort, run_lengths

The public names are imported on first use (PEP 562): importing the package, or running its
command line's ``--help``, loads neither pyopencl nor numpy.
"""

from importlib import import_module
from typing import TYPE_CHECKING

from ._version import __version__
from .core.runtime_faults import prepare_environment as _prepare_environment

# Before any OpenCL runtime is loaded: the option that keeps Intel's CPU compiler from writing
# into freed memory (clradix.core.runtime_faults).
_prepare_environment()

if TYPE_CHECKING:
    from .core.keys import KEY_DTYPES, KeyCodec, key_codec
    from .core.errors import PolicyError
    from .policies.sort import SortPolicy
    from .policies.segment import SegmentPolicy
    from .policies.topk import TopkPolicy
    from .core.render import KernelBuildError, TemplateRenderError
    from .dispatch.sorter import Sorter
    from .dispatch.selector import Selector
    from .dispatch.api import (TopkResult, argsort, free_memory, selector_for, sort, sorter_for,
                               top_k, topk)
    from .dispatch.lexsort import lexsort
    from .dispatch.selection import (KthvalueResult, argpartition, kthvalue, median, nanmedian,
                                     nanpercentile, nanquantile, partition, percentile,
                                     quantile)
    from .policies.selection import SelectionPolicy
    from .dispatch.search import searchsorted
    from .dispatch.unique import (RunLengths, UniqueAllResult, UniqueCountsResult,
                                  UniqueInverseResult, run_lengths, unique, unique_all,
                                  unique_counts, unique_inverse, unique_values)

__all__ = [
    "Sorter", "Selector", "sort", "argsort", "topk", "top_k", "TopkResult", "free_memory",
    "sorter_for", "selector_for", "searchsorted", "unique", "unique_values", "unique_counts",
    "unique_inverse", "unique_all", "run_lengths", "lexsort", "UniqueAllResult",
    "UniqueCountsResult", "UniqueInverseResult", "RunLengths", "SortPolicy",
    "SegmentPolicy",
    "TopkPolicy", "SelectionPolicy", "partition", "argpartition", "kthvalue", "KthvalueResult",
    "median", "nanmedian", "quantile", "percentile", "nanquantile", "nanpercentile",
    "PolicyError", "KernelBuildError", "TemplateRenderError", "KEY_DTYPES", "KeyCodec", "key_codec",
    "__version__",
]

# public name -> the submodule defining it
_LAZY = {
    "KEY_DTYPES": "core.keys", "KeyCodec": "core.keys", "key_codec": "core.keys",
    "PolicyError": "core.errors", "SortPolicy": "policies.sort",
    "SegmentPolicy": "policies.segment", "TopkPolicy": "policies.topk",
    "KernelBuildError": "core.render", "TemplateRenderError": "core.render",
    "Sorter": "dispatch.sorter", "Selector": "dispatch.selector",
    "argsort": "dispatch.api", "selector_for": "dispatch.api", "sort": "dispatch.api",
    "sorter_for": "dispatch.api", "topk": "dispatch.api", "top_k": "dispatch.api",
    "TopkResult": "dispatch.api", "free_memory": "dispatch.api",
    "searchsorted": "dispatch.search", "lexsort": "dispatch.lexsort",
    "SelectionPolicy": "policies.selection",
    **{name: "dispatch.selection" for name in (
        "partition", "argpartition", "kthvalue", "KthvalueResult", "median", "nanmedian",
        "quantile", "percentile", "nanquantile", "nanpercentile")},
    **{name: "dispatch.unique" for name in (
        "unique", "unique_values", "unique_counts", "unique_inverse", "unique_all",
        "run_lengths", "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult",
        "RunLengths")},
}


if not TYPE_CHECKING:   # hidden from type checkers, which would take any name for an attribute
    def __getattr__(name):
        """Import the submodule of a public name on its first use and keep the name here."""
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
