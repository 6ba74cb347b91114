"""clradix: stable radix sort and argsort of OpenCL buffers, on any OpenCL device.

    import clradix
    sorter = clradix.Sorter(ctx)
    evt = sorter.sort(queue, buf)               # in place, uint32 keys by default
    idx, evt = sorter.argsort(queue, keys_array)

    sorted_copy = clradix.sort(array)           # numpy-like, on pyopencl arrays
    order = clradix.argsort(array)
"""

__version__ = "0.1.0"

from .keys import KEY_DTYPES, KeyCodec, key_codec  # noqa: E402
from .policy import PolicyError, SortPolicy  # noqa: E402
from .render import KernelBuildError, TemplateRenderError  # noqa: E402
from .sorter import Sorter  # noqa: E402
from .api import argsort, sort, sorter_for  # noqa: E402

__all__ = [
    "Sorter", "sort", "argsort", "sorter_for", "SortPolicy", "PolicyError", "KernelBuildError",
    "TemplateRenderError", "KEY_DTYPES", "KeyCodec", "key_codec", "__version__",
]
