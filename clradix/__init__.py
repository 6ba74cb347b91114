"""clradix: stable radix sort and argsort of OpenCL buffers, on any OpenCL device.

    import clradix
    sorter = clradix.Sorter(ctx)
    evt = sorter.sort(queue, buf)               # in place, uint32 keys by default
    idx, evt = sorter.argsort(queue, keys_array)

    sorted_copy = clradix.sort(array)           # numpy-like, on pyopencl arrays
    order = clradix.argsort(array)
    values, indices = clradix.topk(array, k)  # k largest (of each row of a 2-D array)
"""

__version__ = "0.1.0"

from .keys import KEY_DTYPES, KeyCodec, key_codec  # noqa: E402
from .policy import PolicyError, SortPolicy  # noqa: E402
from .render import KernelBuildError, TemplateRenderError  # noqa: E402
from .sorter import Sorter  # noqa: E402
from .selector import Selector  # noqa: E402
from .api import argsort, selector_for, sort, sorter_for, topk  # noqa: E402

__all__ = [
    "Sorter", "Selector", "sort", "argsort", "topk", "sorter_for", "selector_for", "SortPolicy",
    "PolicyError", "KernelBuildError", "TemplateRenderError", "KEY_DTYPES", "KeyCodec", "key_codec",
    "__version__",
]
