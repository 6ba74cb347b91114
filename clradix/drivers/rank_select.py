"""The rank select driver: the order keys of the keys of given ranks in every row at once
(cl_templates/rank_select.cl.mako; its shared C rank_select_steps.mako), then what an operation
makes of them: medians and quantiles (rank_values.cl.mako), a stable split by the thresholds
(partition, argpartition), or the key of each rank and its position (kthvalue).

Per call (``RankSelect.temp_bytes``, exactly what a call asks its allocator for): one allocation,
its parts at 4 KiB-aligned byte offsets the kernels take (no sub-buffers): two row states per row
(STATE_BYTES each), four counters per row, the histograms (a row's: ranks x 2^digit_bits counts,
or 2^first_bits for the first pass; with work-groups of one work-item, a slot of ranks + 1 such
rows per work-group), two candidate buffers of ``cap`` keys per row (where a pass writes
candidates: three digits or more), and for the split and the locate each chunk's class counts.
The launches: rs_init, rs_pass0, a rs_pass per further digit, then the operation's: rs_values;
rs_count, rs_scatter; or rs_count, rs_locate.
"""

from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Tuple

from ..core.launches import Buf, LaunchSequence, Off, Scalar, slots
from ..core.sizes import cl_index_name, round_up
from ..policies.selection import MAX_RANKS
from .base import Build, Driver
from .radix_select import carve_offsets

class SelectOperands(NamedTuple):
    """A selection's operands, (buffer, element offset) pairs or None: the keys, the values
    written (results, or the split's keys), the call's parameters (ranks, or quantiles: 64-bit
    words, which rs_init writes there from its arguments: param_scalars) and the positions
    written."""

    keys: Any
    values: Any
    params: Any
    positions: Any


KEYS, VALUES, PARAMS, POSITIONS = slots(SelectOperands)

# Bytes of one row state: the template's sel_state (checked against it when the program
# compiles): five 8-byte fields per rank slot and one 4-byte, three 8-byte and two 4-byte fields.
STATE_BYTES = round_up(36 * MAX_RANKS + 32, 64)
# the split's classes per row (below, at and between the thresholds)
CLASSES = 2 * MAX_RANKS + 1

# The call's parameter words (ranks, or quantiles and their method's two constants), uint64
# each: scalar arguments of rs_init, which writes them to the PARAMS operand (the template's
# param_words). A call passes PARAM_WORDS scalars, then whether it has words at all
# (``param_scalars``).
PARAM_WORDS = MAX_RANKS

# How the first pass's last work-group computes a row's ranks (the template's RANKS_*).
RANKS_FIXED, RANKS_MEDIAN, RANKS_QUANTILE = 0, 1, 2
# Launch width of the kernels that take one work-item per row and class, or per output.
_ITEMS_WG = 64


@dataclass(frozen=True)
class SelectJob:
    """One selection as the driver sees it: ``nranks`` ranks (``rank_mode``: the caller's, the
    median's, or the quantiles' of ``method``; ``skip_nan``: counted among the keys that are not
    NaN) in each of ``rows`` rows of ``row_len`` keys, as ``plan`` says; then ``tail``: "values"
    (``nout`` medians or quantiles per row into slot VALUES), "split" (the row split by the
    thresholds: keys into VALUES when ``write_keys``, positions into POSITIONS when
    ``write_pos``) or "locate" (each rank's key and position, rows x nranks)."""

    plan: Any
    rows: int
    row_len: int
    nranks: int
    rank_mode: int
    tail: str
    method: int = 0
    skip_nan: bool = False
    nout: int = 0
    write_keys: bool = True
    write_pos: bool = False


class RankSelect(Driver):
    """Builds the rank select's kernels for one SelectionPlan (and, with ``values`` = (op, res),
    the medians' or quantiles' program) and makes SelectJobs ready (contract: base.py)."""

    Operands = SelectOperands

    template = "rank_select.cl.mako"
    values_template = "rank_values.cl.mako"

    def __init__(self, programs, device, plan, codec, idx_bytes=8,
                 values: Optional[Tuple[str, str]] = None):
        self.codec = codec
        profile = plan.profile
        common = dict(codec.template_args(), rmax=MAX_RANKS, state_bytes=STATE_BYTES,
                      param_words=PARAM_WORDS,
                      fp64=profile.has_extension("cl_khr_fp64"))
        params = dict(common, index_t=plan.index_name, digit_bits=plan.digit_bits,
                      first_bits=plan.first_bits, wg=plan.wg, ipt=plan.ipt,
                      idx_t=cl_index_name(f"u{idx_bytes}"), ptx=profile.has_ptx,
                      uniform_branches=profile.is_gpu)
        # pass 0 a program of its own (its first-digit histogram: rank_select.cl.mako)
        builds = [Build(self.template, dict(params, program="first"), (), ("rs_pass0",)),
                  Build(self.template, dict(params, program="rest"), (),
                        ("rs_pass", "rs_count", "rs_scatter", "rs_locate"),
                        ("rs_init",))]
        if values is not None:
            op, res = values
            # (independent of the passes' digits and index type: one program per key type)
            builds.append(Build(self.values_template,
                                dict(common, op=op, res=res, digit_bits=8, first_bits=8,
                                     index_t="uint"), (), (), ("rs_values",)))
        super().__init__(programs, device, profile, plan.wg, builds)

    @classmethod
    def temp_bytes(cls, plan, codec, rows, nranks, tail):
        """Bytes a call asks its allocator for."""
        return carve_offsets([size for _, size in _temp_parts(plan, codec, rows, nranks,
                                                               tail)])[1]

    def sequence(self, job):
        """The ready launch sequence of a SelectJob."""
        seq = LaunchSequence(self)
        plan = job.plan
        parts = _temp_parts(plan, self.codec, job.rows, job.nranks, job.tail)
        offsets, total = carve_offsets([size for _, size in parts])
        off = {name: at for (name, _), at in zip(parts, offsets)}
        block = seq.temp(total)[0]
        rows, wg = job.rows, plan.wg
        keys = (Buf(KEYS), Off(KEYS))
        seq.launch("rs_init", "rs_init", (rows * wg,), (wg,),
                   [block, off["state"], off["counters"], off["hist"], job.nranks, Buf(PARAMS),
                    Scalar(PARAM_WORDS)] + [Scalar(i) for i in range(PARAM_WORDS)])
        args = [*keys, job.row_len, plan.cap, job.nranks, block, off["state"], off["counters"],
                off["hist"], off["cand0"], off["cand1"], job.rank_mode, job.method,
                int(job.skip_nan), Buf(PARAMS)]
        grid, local = (plan.groups * wg, rows), (wg, 1)
        seq.launch("rs_pass0", "rs_pass0", grid, local, args)
        for p in range(1, plan.digits):
            seq.launch(f"rs_pass {p}", "rs_pass", grid, local, args + [p])
        if job.tail == "values":
            seq.launch("rs_values", "rs_values", (round_up(rows, _ITEMS_WG), job.nout), None,
                       [rows, job.nout, job.nranks, block, off["state"], plan.digits & 1,
                        job.method, int(job.skip_nan), Buf(PARAMS), Buf(VALUES), Off(VALUES)])
        elif job.tail in ("split", "locate"):
            seq.launch("rs_count", "rs_count", grid, local,
                       [*keys, job.row_len, job.nranks, block, off["state"], off["cnt"]])
            unused = (block, 0)
            out_key = (Buf(VALUES), Off(VALUES)) if job.write_keys else unused
            out_pos = (Buf(POSITIONS), Off(POSITIONS)) if job.write_pos else unused
            if job.tail == "split":
                seq.launch("rs_scatter", "rs_scatter", grid, local,
                           [*keys, job.row_len, job.nranks, block, off["state"], off["cnt"],
                            *out_key, *out_pos, int(job.write_keys), int(job.write_pos)])
            else:
                seq.launch("rs_locate", "rs_locate", (job.nranks * wg, rows), local,
                           [*keys, job.row_len, job.nranks, plan.groups, block, off["state"],
                            off["cnt"], *out_key, *out_pos])
        return seq


def _temp_parts(plan, codec, rows, nranks, tail):
    """The parts of a call's one allocation, [(name, bytes)]: the row states (two copies), the
    counters, the histograms, the candidate buffers (where a pass writes them: from the third
    digit on) and, for the split and the locate, the chunks' class counts."""
    ib = plan.index_bytes
    radix, first = 1 << plan.digit_bits, 1 << plan.first_bits
    hist = rows * max(first, nranks * radix) * ib
    if plan.wg == 1:   # a slot per work-item, with its counts of keys outside every group
        hist = rows * plan.groups * max(first, (nranks + 1) * radix) * ib
    cands = rows * plan.cap * codec.itemsize if plan.digits > 2 else 0
    chunks = rows * plan.groups * CLASSES * ib if tail in ("split", "locate") else 0
    return [("state", 2 * rows * STATE_BYTES), ("counters", 4 * rows * ib), ("hist", hist),
            ("cand0", cands), ("cand1", cands), ("cnt", chunks)]


def param_scalars(words):
    """The scalars of a call (LaunchSequence.run) whose parameter words are ``words`` (uint64,
    at most PARAM_WORDS; None: none): the words padded with zeros, then 1 where there are
    words."""
    if words is None:
        return (0,) * (PARAM_WORDS + 1)
    words = [int(w) for w in words]
    if len(words) > PARAM_WORDS:
        raise ValueError(f"{len(words)} parameter words: a selection takes at most {PARAM_WORDS}")
    return tuple(words) + (0,) * (PARAM_WORDS - len(words)) + (1,)
