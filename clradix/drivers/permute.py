"""Permutations by an index array (cl_templates/permute.cl.mako): records of any width taken in
an argsort's order, and the identity permutation that a sort carries as its values.

Several arrays permuted with one sort (Sorter.sort with a list of values, lexsort, unique's
indices) sort their keys once with a 4-byte index as the value, then take each array's
records by that index: one read and one write of each record, whatever its width, instead of
moving it in every digit pass."""

from typing import Any, NamedTuple

import numpy as np

from ..core.launches import Buf, LaunchSequence, Off, slots
from ..core.sizes import round_up
from .elementwise import FamilyDriver

_WORDS = ((16, "uint4"), (8, "ulong"), (4, "uint"), (2, "ushort"), (1, "uchar"))


def word_of(record_bytes, *byte_offsets):
    """(word bytes, OpenCL type): the widest word that divides a record and every offset."""
    for width, name in _WORDS:
        if record_bytes % width == 0 and all(off % width == 0 for off in byte_offsets):
            return width, name
    raise AssertionError("a byte always divides")  # pragma: no cover


class PermuteOperands(NamedTuple):
    """A permutation's operands, (buffer, element offset) pairs, offsets in words (take) or
    indices (iota): the records read, the index array, and where they are written (iota: the
    positions)."""

    src: Any
    idx: Any
    dst: Any


SRC, IDX, DST = slots(PermuteOperands)


class TakeJob(NamedTuple):
    """``n`` records of ``words`` words of ``word_t`` taken by an index of ``idx_t``: record i
    of dst = record idx[i] of src, skipped where idx[i] >= ``limit``."""

    word_t: str
    idx_t: str
    n: int
    limit: int
    words: int


class IotaJob(NamedTuple):
    """The ``n`` positions 0, 1, ... as ``idx_t``."""

    idx_t: str
    n: int


class Permute(FamilyDriver, template="permute.cl.mako", family="permute",
              kernels=("take", "rts_iota"), operands=PermuteOperands):
    """take and rts_iota of one program (word and index types) on one device (contract:
    elementwise.FamilyDriver)."""

    @classmethod
    def program(cls, policy, profile, job):
        return dict(word_t=job.word_t if isinstance(job, TakeJob) else "uint", idx_t=job.idx_t)

    def sequence(self, job):
        """One launch: take, grid-stride over the records, or rts_iota, a work-item a
        position."""
        seq = LaunchSequence(self)
        wg = self.policy.wg_size
        if isinstance(job, TakeJob):
            seq.launch("take", "take", (self.policy.groups(job.n) * wg,), (wg,),
                       [Buf(SRC), Off(SRC), Buf(IDX), Off(IDX), Buf(DST), Off(DST), job.n,
                        job.limit, job.words])
        else:
            seq.launch("rts_iota", "rts_iota", (round_up(max(job.n, 1), wg),), (wg,),
                       [Buf(DST), Off(DST), job.n])
        return seq


def payload_dtype(n):
    """The index a sort carries as its values for ``n`` keys: uint32 while every position fits."""
    return np.dtype(np.uint32 if n <= 2 ** 32 else np.uint64)
