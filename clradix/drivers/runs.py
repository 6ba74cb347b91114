"""Runs of equal keys (cl_templates/runs.cl.mako): the run-length encoding of an array in two
launches (count the run starts per block; write each run, each block first summing the counts
before it), which on a sorted array gives the unique values, their first positions and counts.

The number of runs decides the results' sizes: the count job leaves the per-block counts on the
device (the first ``blocks`` entries of its table), the caller reads them (the one wait on the
host), sums them and sizes the results, and the write job fills them, the number of runs its
one scalar (core.launches.Scalar): one sequence whatever the count."""

from typing import Any, NamedTuple, Optional

from ..core.launches import Buf, LaunchSequence, Off, Scalar, slots
from .elementwise import FamilyDriver


class RunsOperands(NamedTuple):
    """The runs' operands, (buffer, element offset) pairs or None: the keys, the count table
    (count: written; write: read), and what the write writes: the runs' values, starts and
    lengths, and with a permutation (``perm``, read) each run's ``index`` and the keys'
    ``inverse``."""

    keys: Any
    table: Any
    values: Any = None
    starts: Any = None
    lengths: Any = None
    perm: Any = None
    index: Any = None
    inverse: Any = None


KEYS, TABLE, VALUES, STARTS, LENGTHS, PERM, INDEX, INVERSE = slots(RunsOperands)


class RunsJob(NamedTuple):
    """One step (``write``: runs_write, else runs_count) over ``n`` >= 1 keys of ``codec``'s
    dtype, positions counted in ``index_t``, results of ``out_t``, writing the runs' starts
    and lengths as asked, with a permutation of ``perm_t`` (None: none); NaN each a run of
    its own with ``nan_distinct``."""

    codec: Any
    index_t: str
    out_t: str
    perm_t: Optional[str]
    starts: bool
    lengths: bool
    n: int
    nan_distinct: bool
    write: bool = False


class Runs(FamilyDriver, template="runs.cl.mako", family="runs",
           kernels=("runs_count", "runs_write"), operands=RunsOperands):
    """The runs' two kernels for one program (key, index, output and permutation types, what is
    written, work-group size and runs_write's positions a round) on one device (contract:
    elementwise.FamilyDriver)."""

    @classmethod
    def program(cls, policy, profile, job):
        return dict(job.codec.template_args(), index_t=job.index_t, out_t=job.out_t,
                    perm_t=job.perm_t, starts=bool(job.starts), lengths=bool(job.lengths),
                    wg=policy.wg_size, ipt=policy.write_ipt(job.perm_t is not None))

    def grid(self, n):
        """(blocks, positions per block) of ``n`` keys: whole rounds of runs_write a block."""
        policy = self.policy
        wg = policy.wg_size
        blocks = max(1, min(-(-n // (wg * policy.per_item)),
                            policy.blocks_per_cu * self.profile.compute_units,
                            policy.max_blocks))
        chunk = -(-n // blocks)
        rnd = wg * self.params["ipt"]
        chunk = -(-chunk // rnd) * rnd
        return -(-n // chunk), chunk

    def sequence(self, job):
        """runs_count (the count job) or runs_write (the write job: the number of runs is the
        call's scalar 0), over the same blocks."""
        seq = LaunchSequence(self)
        blocks, chunk = self.grid(job.n)
        wg = self.policy.wg_size
        args = [Buf(KEYS), Off(KEYS), job.n, chunk, int(job.nan_distinct), Buf(TABLE)]
        if not job.write:
            seq.launch("runs_count", "runs_count", (blocks * wg,), (wg,), args)
            return seq
        args += [Scalar(0), Buf(VALUES), Off(VALUES)]
        for wanted, slot in ((job.starts, STARTS), (job.lengths, LENGTHS)):
            if wanted:
                args += [Buf(slot), Off(slot)]
        if job.perm_t is not None:
            args += [Buf(PERM), Off(PERM), Buf(INDEX), Off(INDEX), Buf(INVERSE), Off(INVERSE)]
        seq.launch("runs_write", "runs_write", (blocks * wg,), (wg,), args)
        return seq
