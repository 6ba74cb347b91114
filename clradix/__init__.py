"""clradix: stable radix sort and argsort of OpenCL buffers, on any OpenCL device.

    import clradix
    sorter = clradix.Sorter(ctx)
    evt = sorter.sort(queue, buf)               # in place, uint32 keys by default
    idx, evt = sorter.argsort(queue, keys_array)

    sorted_copy = clradix.sort(array)           # numpy-like, on pyopencl arrays
    order = clradix.argsort(array)
    values, indices = clradix.topk(array, k)  # k largest (of each row of a 2-D array)

The public names are imported on first use (PEP 562): importing the package, or running its
command line's ``--help``, loads neither pyopencl nor numpy.
"""

from importlib import import_module
from typing import TYPE_CHECKING

from ._version import __version__
from .runtime_faults import prepare_environment as _prepare_environment

# Before any OpenCL runtime is loaded: the option that keeps Intel's CPU compiler from writing
# into freed memory (clradix.runtime_faults).
_prepare_environment()

if TYPE_CHECKING:
    from .keys import KEY_DTYPES, KeyCodec, key_codec
    from .policy import PolicyError, SegmentPolicy, SortPolicy
    from .topk_policy import TopkPolicy
    from .render import KernelBuildError, TemplateRenderError
    from .sorter import Sorter
    from .selector import Selector
    from .api import argsort, selector_for, sort, sorter_for, topk

__all__ = [
    "Sorter", "Selector", "sort", "argsort", "topk", "sorter_for", "selector_for", "SortPolicy",
    "SegmentPolicy",
    "TopkPolicy",
    "PolicyError", "KernelBuildError", "TemplateRenderError", "KEY_DTYPES", "KeyCodec", "key_codec",
    "__version__",
]

# public name -> the submodule defining it
_LAZY = {
    "KEY_DTYPES": "keys", "KeyCodec": "keys", "key_codec": "keys",
    "PolicyError": "policy", "SegmentPolicy": "policy", "SortPolicy": "policy",
    "TopkPolicy": "topk_policy",
    "KernelBuildError": "render", "TemplateRenderError": "render",
    "Sorter": "sorter", "Selector": "selector",
    "argsort": "api", "selector_for": "api", "sort": "api", "sorter_for": "api", "topk": "api",
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
