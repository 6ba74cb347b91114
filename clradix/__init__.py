"""clradix: stable radix sort and argsort of OpenCL buffers, on any OpenCL device.

    import clradix
    sorter = clradix.Sorter(ctx)
    evt = sorter.sort(queue, buf)               # in place, uint32 keys by default
    idx, evt = sorter.argsort(queue, keys_array)

    sorted_copy = clradix.sort(array)           # numpy-like, on pyopencl arrays
    order = clradix.argsort(array)
    values, indices = clradix.topk(array, k)  # k largest (of each row of a 2-D array)
"""

from ._version import __version__
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
