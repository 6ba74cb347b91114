"""Selection policies (plain frozen values), their built-in defaults, and the selection planner.

A :class:`SelectionPolicy` holds the tuning knobs of the rank select
(cl_templates/rank_select.cl.mako): the work-group size and keys per work-item of its passes, the
work-groups per compute unit that share a row, the digits' widths (the first, then the others)
and the candidate buffer's capacity. :func:`plan_selection` is a pure function of (device
profile, key codec, rows, row length, ranks per row, policy) returning a
:class:`SelectionPlan`: the policy with every field decided, plus what a call derives from it
(index type, digits, work-groups per row, candidate capacity). A field left None is the
planner's to choose.
"""

import numbers
from dataclasses import dataclass, fields, replace
from typing import Optional

import numpy as np

from ..core.device import DeviceProfile
from ..core.errors import PolicyError
from ..core.sizes import index_type, pow2_floor

#: ranks one selection resolves together (its passes count every rank's digit in one read):
#: the row state and the local histograms are sized for this many. More ranks (quantiles) run
#: as several selections; partition with more distinct kth values sorts the rows instead.
MAX_RANKS = 16
#: a tile's per-class counts are packed in 16 bits (the split's scans)
TILE_LIMIT = 1 << 16
#: (GPUs) a first digit of 12 bits pays only where its 4096 counts are few next to the row's keys
#: (the median of 2^28 float32: 1.63 ms against 2.07 with 8 bits; a median per row of 4096 keys:
#: 0.52 ms against 0.30, each work-group clearing, adding and scanning 4096 counts for 4096 keys;
#: BENCHMARKS_NOTES.md, "the selection's policies on the H200")
WIDE_FIRST_FROM = 1 << 16
#: (GPUs) rows of at most this many keys, a work-group each, take work-groups of 128: a row of
#: 1024 keys leaves three quarters of a 256 x 8 tile idle (medians of 16384 x 1024 rows: 0.45 ms
#: against 0.77; of 4096 x 4096: 0.48 against 0.52)
NARROW_GROUP_ROWS = 1 << 13
#: bytes of histograms a call may hold: work-items of one keep slots of their own (rows x
#: work-items per row x (ranks + 1) x 2^digit_bits counts), larger work-groups add into one per
#: row (rows x 2^first_bits counts, or ranks x 2^digit_bits); above it the digits the planner
#: chose are 8 bits wide
HIST_BUDGET = 64 << 20


@dataclass(frozen=True)
class SelectionPolicy:
    wg_size: Optional[int] = None         # work-items per group (1: a work-item per chunk, CPUs)
    items_per_thread: Optional[int] = None  # keys each work-item loads per tile
    groups_per_cu: Optional[int] = None   # work-groups per compute unit sharing the rows
    digit_bits: Optional[int] = None      # bits resolved per pass (8; 16 with wg_size 1)
    first_bits: Optional[int] = None      # bits of the first pass (digit_bits to 16; wg_size > 1:
    #                                       at most 12, its local histogram 4 << first_bits bytes)
    cand_cap: Optional[int] = None        # candidates kept per row (None: max(row_len // 32,
    #                                       1024); GPUs row_len // 8, // 4 for more than 2 ranks)

    @property
    def tile(self):
        return self.wg_size * self.items_per_thread


# Built-in defaults, by device type.
_DEFAULTS = {
    # GPUs: 256 work-items of 8 keys (blocked: one vector load each), 8 groups per compute unit
    # sharing a long row; 8-bit digits, whose histograms (MAX_RANKS x 256 counts) fit the local
    # memory of every GPU, after a first digit of 12 bits (pass 0 counts one histogram: 16 KiB):
    # the top 8 bits of a float are its sign and 7 exponent bits, so half the keys of a
    # uniform(0, 1) row share them and the next pass would read the row again; 12 bits leave a
    # sixteenth, which the candidate buffer (an eighth of the row) holds.
    "gpu": SelectionPolicy(wg_size=256, items_per_thread=8, groups_per_cu=8, digit_bits=8,
                           first_bits=12),
    # CPUs: a work-item per chunk of a row with no atomics (its counts are its own), four chunks
    # per core; 16-bit digits resolve a 32-bit key in two reads of the row.
    "cpu": SelectionPolicy(wg_size=1, items_per_thread=64, groups_per_cu=4, digit_bits=16,
                           first_bits=16),
}


@dataclass(frozen=True)
class SelectionPlan:
    """How one selection runs: the policy (every field decided) and what follows for these rows."""

    policy: SelectionPolicy
    profile: DeviceProfile
    index_name: str      # the kernels' counts and positions within a row
    index_np: type
    digits: int          # digit passes over the order key
    groups: int          # work-groups per row
    cap: int             # candidates kept per row between passes
    ranks: int           # rank slots per row (at most MAX_RANKS)

    @property
    def wg(self):
        return self.policy.wg_size

    @property
    def ipt(self):
        return self.policy.items_per_thread

    @property
    def digit_bits(self):
        return self.policy.digit_bits

    @property
    def first_bits(self):
        return self.policy.first_bits

    @property
    def index_bytes(self):
        return np.dtype(self.index_np).itemsize


def check_selection_policy(policy):
    """TypeError or ValueError naming the field unless ``policy`` is None or a SelectionPolicy
    whose fields are each None or a value the rank select runs with."""
    if policy is None:
        return
    if not isinstance(policy, SelectionPolicy):
        raise TypeError(f"policy must be a clradix.SelectionPolicy or None, got "
                        f"{type(policy).__name__}")
    for f in fields(policy):
        v = getattr(policy, f.name)
        if v is not None and not (isinstance(v, numbers.Integral) and not isinstance(v, bool)):
            raise TypeError(f"policy.{f.name} must be an integer or None (the planner decides), "
                            f"got {type(v).__name__}")
    wg, ipt, bits = policy.wg_size, policy.items_per_thread, policy.digit_bits
    if wg is not None and (wg < 1 or wg & (wg - 1) or wg > 256):
        raise ValueError(f"policy.wg_size must be a power of two from 1 to 256 (at most one "
                         f"work-item per digit of an 8-bit histogram), got {wg}")
    if ipt is not None and (ipt < 1 or ipt & (ipt - 1)):
        raise ValueError(f"policy.items_per_thread must be a power of two, got {ipt}")
    if wg is not None and ipt is not None and wg * ipt >= TILE_LIMIT:
        raise ValueError(f"policy.wg_size x items_per_thread = {wg} x {ipt} must be below "
                         f"{TILE_LIMIT} (a tile's counts are packed in 16 bits)")
    if policy.groups_per_cu is not None and policy.groups_per_cu < 1:
        raise ValueError(f"policy.groups_per_cu must be a positive integer, got "
                         f"{policy.groups_per_cu}")
    if bits is not None and bits not in (8, 16):
        raise ValueError(f"policy.digit_bits must be 8 or 16, got {bits}")
    if bits == 16 and wg not in (None, 1):
        raise ValueError(f"policy.digit_bits=16 needs wg_size=1 (a work-item's own histogram in "
                         f"global memory; a work-group's local histograms are of 8-bit digits), "
                         f"got wg_size={wg}")
    first = policy.first_bits
    if first is not None and not (max(bits or 8, 8) <= first <= 16):
        raise ValueError(f"policy.first_bits must be from digit_bits ({bits or 8}) to 16, got "
                         f"{first}")
    if first is not None and first > 12 and wg not in (None, 1):
        raise ValueError(f"policy.first_bits={first} needs wg_size=1 (a work-group's local "
                         f"histogram holds 2^12 counts), got wg_size={wg}")
    if policy.cand_cap is not None and policy.cand_cap < 1:
        raise ValueError(f"policy.cand_cap must be a positive integer, got {policy.cand_cap}")


def plan_selection(profile, codec, rows, row_len, ranks, policy=None):
    """The SelectionPlan of ``ranks`` rank slots in each of ``rows`` rows of ``row_len`` keys of
    ``codec``; ``policy``'s fields replace the planner's choice where not None."""
    check_selection_policy(policy)
    if not 1 <= ranks <= MAX_RANKS:
        raise ValueError(f"a selection resolves 1 to {MAX_RANKS} ranks per row, got {ranks}")
    base = _DEFAULTS["gpu" if profile.is_gpu else "cpu"]
    chosen = {f.name: getattr(policy, f.name) for f in fields(SelectionPolicy)
              if policy is not None and getattr(policy, f.name) is not None}
    pol = replace(base, **chosen)
    if "wg_size" in chosen and "items_per_thread" not in chosen and pol.wg_size > 1 \
            and base.wg_size == 1:
        pol = replace(pol, items_per_thread=_DEFAULTS["gpu"].items_per_thread)
    if "digit_bits" not in chosen:
        pol = replace(pol, digit_bits=8 if pol.wg_size > 1 else base.digit_bits)
    if "first_bits" not in chosen:
        pol = replace(pol, first_bits=max(pol.digit_bits, _DEFAULTS["gpu"].first_bits)
                      if pol.wg_size > 1 else pol.digit_bits)
    if pol.wg_size > profile.max_wg_size:
        if "wg_size" in chosen:
            raise PolicyError(f"policy.wg_size={pol.wg_size} exceeds the largest work-group of "
                              f"{profile.describe()} ({profile.max_wg_size})")
        pol = replace(pol, wg_size=pow2_floor(profile.max_wg_size))
    digit_bits = min(pol.digit_bits, codec.bits)
    first_bits = min(pol.first_bits, codec.bits)
    target = profile.compute_units * pol.groups_per_cu
    groups = max(1, min(-(-target // max(rows, 1)), -(-row_len // pol.tile)))
    if pol.wg_size > 128 and groups == 1 and row_len <= NARROW_GROUP_ROWS and "wg_size" not in \
            chosen:
        pol = replace(pol, wg_size=128)
        groups = max(1, min(-(-target // max(rows, 1)), -(-row_len // pol.tile)))
    if pol.wg_size > 1 and first_bits > digit_bits and "first_bits" not in chosen and \
            row_len < WIDE_FIRST_FROM:
        first_bits = digit_bits
    def hist_bytes(first, bits):
        # (4-byte counts; the kernels' are 8 bytes from 2^32 keys a row)
        if pol.wg_size == 1:   # a slot per work-item, with its counts of keys outside every group
            return rows * groups * max(4 << first, (ranks + 1) * (4 << bits))
        return rows * max(4 << first, ranks * (4 << bits))
    if hist_bytes(first_bits, digit_bits) > HIST_BUDGET:
        # many rows: the digits the planner chose narrowed (the CPUs' 16-bit slots, the GPUs'
        # 12-bit first digit: 16 KiB a row)
        if "digit_bits" not in chosen:
            digit_bits = min(digit_bits, 8)
        if "first_bits" not in chosen:
            first_bits = max(digit_bits, 8) if pol.wg_size == 1 else digit_bits
        need = hist_bytes(first_bits, digit_bits)
        wide = [f for f in ("first_bits", "digit_bits") if chosen.get(f, 0) > 8]
        if need > HIST_BUDGET and wide:   # (8-bit digits go on over the budget: the least)
            named = ", ".join(f"{f}={chosen[f]}" for f in wide)
            raise PolicyError(f"policy {named}: the histograms of {rows} rows x {ranks} ranks "
                              f"would take {need >> 20} MiB (more than the "
                              f"{HIST_BUDGET >> 20} MiB a call may hold); leave the digit widths "
                              f"to the planner or choose 8-bit digits")
    pol = replace(pol, digit_bits=digit_bits, first_bits=first_bits)
    index_name, index_np = index_type(row_len)
    # several ranks' groups hold more keys after the first digit than one rank's (five
    # quantiles of uniform(0, 1) floats: more than an eighth of the row), and a pass whose
    # candidates do not fit reads the whole row again
    share = (4 if ranks > 2 else 8) if profile.is_gpu else 32
    cap = min(row_len, pol.cand_cap or max(row_len // share, 1024))
    return SelectionPlan(policy=pol, profile=profile, index_name=index_name, index_np=index_np,
                         digits=1 + -(-(codec.bits - first_bits) // digit_bits), groups=groups,
                         cap=cap, ranks=ranks)
