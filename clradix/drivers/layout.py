"""Layout copies (cl_templates/layout.cl.mako): a strided view gathered into C order in one kernel,
and 32-bit indices widened to 64 bits.

The numpy-like functions sort along any axis of any view by gathering it into rows (the sorted
axis last, C-contiguous), running the row sort, and gathering the result back into the caller's
axis order. A view here is (buffer, element offset, shape, strides in elements).
"""

from typing import Any, NamedTuple, Tuple

from ..core.launches import Buf, LaunchSequence, Off, slots
from .elementwise import FamilyDriver

#: the most axes a view may have (numpy's limit is 64; beyond 8 the axes are merged first)
MAX_DIMS = 8

#: the elements gather copies, by width: an unsigned type of that width
ELEM_TYPES = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}


def simplify(shape, strides):
    """(shape, strides) of the same view with axes of length 1 dropped and neighbouring axes that
    step evenly merged (at least one axis): fewer divisions per element, and views of any rank
    whose merged form has at most MAX_DIMS axes."""
    dims = [(int(s), int(t)) for s, t in zip(shape, strides) if s != 1]
    if not dims:
        return (1,), (1,)
    merged = [dims[0]]
    for s, t in dims[1:]:
        ps, pt = merged[-1]
        if pt == s * t:   # the outer axis steps over exactly the inner one's extent
            merged[-1] = (ps * s, t)
        else:
            merged.append((s, t))
    return tuple(s for s, _ in merged), tuple(t for _, t in merged)


class LayoutOperands(NamedTuple):
    """A layout copy's operands, (buffer, element offset) pairs: the elements read (widen: at
    offset 0) and where they are written."""

    src: Any
    dst: Any


SRC, DST = slots(LayoutOperands)


class GatherJob(NamedTuple):
    """A view of ``shape`` and ``strides`` (in elements; merged: simplify) of ``elem_t``
    elements into C order, indices and coordinates of ``index_t``."""

    elem_t: str
    index_t: str
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]


class WidenJob(NamedTuple):
    """``n`` uint32 as uint64."""

    n: int


def gather_job(shape, strides, itemsize, n):
    """The GatherJob of a view of ``n`` = prod(``shape``) >= 1 elements of ``itemsize`` bytes:
    ValueError for a view of more than MAX_DIMS axes once merged, or elements of another width
    than 1, 2, 4 or 8 bytes."""
    shape, strides = simplify(shape, strides)
    if len(shape) > MAX_DIMS:
        raise ValueError(f"a view whose axes do not merge into {MAX_DIMS} or fewer (shape "
                         f"{shape}, strides {strides} elements) is not supported: make it "
                         f"contiguous first")
    elem_t = ELEM_TYPES.get(int(itemsize))
    if elem_t is None:
        raise ValueError(f"gather copies elements of 1, 2, 4 or 8 bytes, not {itemsize}")
    index_t = "uint" if n < 2 ** 32 else "ulong"   # i and its coordinates; addresses are long
    return GatherJob(elem_t, index_t, shape, strides)


class Layout(FamilyDriver, template="layout.cl.mako", family="layout",
             kernels=("gather", "widen"), operands=LayoutOperands):
    """gather (for one element type, index type and number of axes) and widen on one device
    (contract: elementwise.FamilyDriver); both grid-stride over their elements."""

    @classmethod
    def program(cls, policy, profile, job):
        if isinstance(job, WidenJob):
            return dict(elem_t="uint", index_t="uint", ndim=1)
        return dict(elem_t=job.elem_t, index_t=job.index_t, ndim=len(job.shape))

    def sequence(self, job):
        seq = LaunchSequence(self)
        wg = self.policy.wg_size
        if isinstance(job, WidenJob):
            n, kernel = job.n, "widen"
            args = [Buf(SRC), Buf(DST), Off(DST), n]
        else:
            n, kernel = 1, "gather"
            for s in job.shape:
                n *= s
            args = [Buf(SRC), Off(SRC), Buf(DST), Off(DST), n]
            for s, t in zip(job.shape, job.strides):
                args += [s, t]
        seq.launch(kernel, kernel, (self.policy.groups(n) * wg,), (wg,), args)
        return seq
