"""searchsorted (cl_templates/search.cl.mako): one binary search per value, in the sort's order
(NaN after +inf, -0.0 == +0.0), in one row of sorted keys or in each row of a 2-D array. In one
long row, each work-group keeps the top levels of the search (the row's splitters) in local
memory (policies.families.SearchPolicy)."""

from typing import Any, NamedTuple, Optional

from ..core.launches import Buf, LaunchSequence, Off, slots
from .elementwise import FamilyDriver


class SearchOperands(NamedTuple):
    """A search's operands, (buffer, element offset) pairs: the sorted keys, the values, the
    sorter (None: the keys are in order) and the insertion points written."""

    sorted: Any
    values: Any
    sorter: Any
    out: Any


SORTED, VALUES, SORTER, OUT = slots(SearchOperands)


class SearchJob(NamedTuple):
    """One search configuration: ``total`` values of ``codec``'s dtype, value i in row i //
    ``per_row`` of rows of ``row_len`` keys ``row_stride`` apart (0: one row), positions
    counted in ``index_t``, written as ``out_t``, through a sorter of ``sorter_t`` (None:
    none), on the ``right`` side or the left."""

    codec: Any
    index_t: str
    out_t: str
    sorter_t: Optional[str]
    row_len: int
    row_stride: int
    per_row: int
    total: int
    right: bool


def local_levels(policy, profile, itemsize, row_len, rows):
    """The splitter levels of a search of ``rows`` rows of ``row_len`` keys of ``itemsize``
    bytes (0: none): one row, long enough, and at most half the device's local memory."""
    levels = policy.local_levels
    if rows != 1 or levels <= 0 or row_len < 1 << levels:
        return 0
    while levels > 0 and (1 << levels) * itemsize > profile.local_mem_bytes // 2:
        levels -= 1
    return levels


class Search(FamilyDriver, template="search.cl.mako", family="search",
             kernels=("search_rows",), operands=SearchOperands):
    """The searches of one program (key type, index and output types, sorter type, splitter
    levels) on one device (contract: elementwise.FamilyDriver)."""

    @classmethod
    def program(cls, policy, profile, job):
        levels = local_levels(policy, profile, job.codec.itemsize, job.row_len,
                              1 if job.row_stride == 0 else 2)
        return dict(job.codec.template_args(), index_t=job.index_t, out_t=job.out_t,
                    sorter_t=job.sorter_t, levels=levels)

    def sequence(self, job):
        """One launch of search_rows over the values: grid-stride, or with splitters as wide
        as the device runs at once."""
        seq = LaunchSequence(self)
        args = [Buf(SORTED), Off(SORTED), job.row_len, job.row_stride, Buf(VALUES), Off(VALUES),
                max(job.per_row, 1), job.total]
        if job.sorter_t is not None:
            args += [Buf(SORTER), Off(SORTER)]
        args += [Buf(OUT), Off(OUT), int(job.right)]
        policy = self.policy
        wg = policy.wg_size
        groups = policy.groups(job.total)
        if self.params["levels"]:
            groups = min(groups, policy.groups_per_cu * self.profile.compute_units)
        seq.launch("search_rows", "search_rows", (groups * wg,), (wg,), args)
        return seq
