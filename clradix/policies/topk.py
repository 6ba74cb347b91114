"""Top-k policies (plain frozen values), their built-in defaults, and the top-k planner.

A :class:`TopkPolicy` holds the tuning knobs of the radix select (cl_templates/radix_select*.mako): the
work-group size and items per work-item of the selection passes, the work-groups per compute unit
that share a row, the largest k sorted in local memory, the candidate buffer's capacity, the
longest row selected by one work-group in one launch, and the threshold pass's sample (its size
and the shortest row it runs for). :func:`plan_topk` is a pure function
of (device profile, key codec, rows, row length, k, sorted, overrides) returning a
:class:`TopkPlan`: the policy plus everything a call derives from it (route, index types, grid,
candidate capacity). Overrides follow the sort planner's rule: None means the planner decides.
"""

import math
import numbers
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from ..core.device import DeviceProfile
from ..core.errors import PolicyError
from ..core.sizes import index_type, output_index_dtype, pow2_floor

DIGIT_BITS = 11
RADIX = 1 << DIGIT_BITS
# The smallest and largest work-group of the selection kernels (each work-item walks
# RADIX / wg_size digits of the histogram).
MIN_WG = 64
# A tile's taken and candidate counts share one 32-bit word in the pass kernels' scan.
TILE_LIMIT = 1 << 16
# The local-memory sort's largest size (topk_sort_rows).
MAX_SORT_SIZE = 2048
# The threshold pass's sample per row (topk_sample sorts it in local memory).
MIN_SAMPLE, MAX_SAMPLE = 128, 8192


@dataclass(frozen=True)
class TopkPolicy:
    wg_size: int = 256            # work-items per group of the selection passes (>= RADIX)
    items_per_thread: int = 8     # keys each work-item loads per tile (a power of two >= 2)
    groups_per_cu: int = 32       # work-groups per compute unit that share the rows
    sort_size: int = MAX_SORT_SIZE  # largest k sorted in local memory (lowered to what fits)
    single_max: int = 1 << 16     # rows up to this length: one work-group each, one launch
    cand_cap: Optional[int] = None  # candidates kept per row (None: max(row_len // 32, 1024))
    sample_size: int = 2048       # keys sampled per row for the threshold pass (0: never)
    sample_min_row: int = 1 << 18  # rows shorter than this skip the threshold pass
    chunk_keys: int = 0           # CPUs' chunked route: the shortest chunk (0: max(4096, 8k))
    fused: Optional[bool] = None  # every digit pass in one launch (topk_fused; None: on NVIDIA
    #                               GPUs, whose runtime spends 7-10 us of host time per command,
    #                               without the threshold pass)

    @property
    def tile(self):
        return self.wg_size * self.items_per_thread


# Built-in defaults, by device type: each the fastest measured on its device type; the
# measurements behind every entry and rule of the planner below are in BENCHMARKS_NOTES.md ("The
# top-k and segment defaults: where each value came from").
_DEFAULTS = {
    # 8 items per work-item and 32 groups per compute unit: more loads in flight than larger
    # tiles (more registers) or fewer groups. single_max: rows of up to 2^16 keys are re-read
    # from the caches by one work-group per pass. The threshold pass (sample_size,
    # sample_min_row) from 2^23 keys: below, the sample's sort and two more launches outweigh a
    # read of the row.
    "gpu": TopkPolicy(wg_size=256, items_per_thread=8, groups_per_cu=32, sample_min_row=1 << 23),
    # CPUs: two work-groups per core keep every core busy without splitting rows finely; one
    # core's work-group selects rows of up to 2^14 keys alone.
    "cpu": TopkPolicy(wg_size=256, items_per_thread=8, groups_per_cu=2, single_max=1 << 14),
}


@dataclass(frozen=True)
class TopkPlan:
    """How one top-k call runs: the policy and what follows from it for these rows."""

    policy: TopkPolicy
    profile: DeviceProfile
    route: str            # "direct" (unsorted, or k = 1), "local" (sorted in local memory),
    #                       "global" (sorted by the radix sort), "chunks" (CPUs: a work-item
    #                       per chunk of a row, then one per row merges; always ranked)
    index_name: str       # the kernels' counts and positions within a row
    index_np: type
    idx_np: type          # the indices handed back (row positions)
    out_index_np: type    # positions in the selection's output (batch-wide on the global route)
    sort_size: int        # the local sort's size (0 unless route == "local")
    pos_bits: int         # bits of a position (of row_len - 1)
    digits: int           # digit passes over (key, position)
    groups: int           # work-groups per row
    cap: int              # candidates kept per row between passes
    single: bool          # one work-group per row does everything (topk_single, one launch)
    fused: bool = False   # the digit passes in one launch (topk_fused)
    sample: int = 0       # keys sampled per row for the threshold pass (0: no threshold pass)
    sample_rank: int = 0  # the sampled order key of this rank (from 1) is the threshold
    sample_chunk: int = 0  # candidate slots a claimer of the threshold pass takes at a time

    @property
    def wg(self):
        return self.policy.wg_size

    @property
    def ipt(self):
        return self.policy.items_per_thread

    @property
    def index_bytes(self):
        return np.dtype(self.index_np).itemsize


def check_topk_overrides(wg_size=None, items_per_thread=None, groups_per_cu=None, sort_size=None,
                         max_wg_size=None, single_max=None, cand_cap=None, sample_size=None,
                         sample_min_row=None, chunk_keys=None, fused=None):
    """TypeError or ValueError naming the option unless each is None (the planner decides) or a
    value the radix select can run with (wg_size at most ``max_wg_size`` when given)."""
    for name, v in (("wg_size", wg_size), ("items_per_thread", items_per_thread),
                    ("groups_per_cu", groups_per_cu), ("sort_size", sort_size),
                    ("single_max", single_max), ("cand_cap", cand_cap),
                    ("sample_size", sample_size), ("sample_min_row", sample_min_row),
                    ("chunk_keys", chunk_keys)):
        if v is not None and not (isinstance(v, numbers.Integral) and not isinstance(v, bool)):
            raise TypeError(f"{name} must be an integer or None (the planner decides), got "
                            f"{type(v).__name__}")
    bad_wg = ValueError(f"wg_size must be a power of two from {MIN_WG} to {RADIX} (the digits "
                        f"of the {DIGIT_BITS}-bit histogram shared evenly), got {wg_size}")
    if wg_size is not None and (wg_size < MIN_WG or wg_size & (wg_size - 1)):
        raise bad_wg
    if wg_size is not None and max_wg_size is not None and wg_size > max_wg_size:
        raise ValueError(f"wg_size={wg_size} exceeds the largest work-group of the device "
                         f"({max_wg_size})")
    if wg_size is not None and wg_size > RADIX:
        raise bad_wg
    if items_per_thread is not None and (items_per_thread < 2
                                         or items_per_thread & (items_per_thread - 1)):
        raise ValueError(f"items_per_thread must be a power of two >= 2 (runs of 2 to 16 keys "
                         f"are loaded as one vector), got {items_per_thread}")
    wg = wg_size or _DEFAULTS["gpu"].wg_size
    ipt = items_per_thread or _DEFAULTS["gpu"].items_per_thread
    if wg * ipt >= TILE_LIMIT:
        default = "" if items_per_thread else f" (items_per_thread defaults to {ipt})"
        raise ValueError(f"wg_size x items_per_thread = {wg} x {ipt} must be below "
                         f"{TILE_LIMIT} (a tile's counts are packed in 16 bits){default}")
    if groups_per_cu is not None and groups_per_cu < 1:
        raise ValueError(f"groups_per_cu must be a positive integer, got {groups_per_cu}")
    if sort_size is not None and (sort_size < 1 or sort_size & (sort_size - 1)
                                  or sort_size > MAX_SORT_SIZE):
        raise ValueError(f"sort_size must be a power of two from 1 to {MAX_SORT_SIZE} (the "
                         f"local-memory sort's largest k), got {sort_size}")
    if single_max is not None and single_max < 0:
        raise ValueError(f"single_max must be >= 0 (0: never one work-group per row), got "
                         f"{single_max}")
    if cand_cap is not None and cand_cap < 1:
        raise ValueError(f"cand_cap must be a positive integer, got {cand_cap}")
    if sample_size is not None and sample_size and (
            sample_size < MIN_SAMPLE or sample_size & (sample_size - 1)
            or sample_size > MAX_SAMPLE):
        raise ValueError(f"sample_size must be 0 (no threshold pass) or a power of two from "
                         f"{MIN_SAMPLE} to {MAX_SAMPLE}, got {sample_size}")
    if sample_min_row is not None and sample_min_row < 0:
        raise ValueError(f"sample_min_row must be >= 0, got {sample_min_row}")
    if chunk_keys is not None and chunk_keys < 0:
        raise ValueError(f"chunk_keys must be >= 0 (0: the planner's), got {chunk_keys}")
    if fused is not None and not isinstance(fused, (bool, np.bool_)) and fused not in (0, 1):
        raise TypeError(f"fused must be True, False or None (the planner decides), got "
                        f"{fused!r}")


def plan_topk(profile, codec, rows, row_len, k, sorted, *, idx_bytes=0, **overrides):
    """The TopkPlan of the k largest or smallest of ``rows`` rows of ``row_len`` keys of
    ``codec``; ``overrides`` (TopkPolicy fields) replace the planner's choice when not None.
    ``idx_bytes``: 8 hands back 64-bit indices at any row length, 0 follows the index-width rule
    (clradix.core.sizes.output_index_dtype). CPUs without overrides take the chunked route up to
    CHUNKS_MAX_K (:func:`_chunks_plan`)."""
    idx_np = _caller_index(row_len, idx_bytes)
    fields = {name: v for name, v in overrides.items() if v is not None}
    check_topk_overrides(**{n: v for n, v in fields.items() if n != "wg_size"})
    policy = replace(_DEFAULTS["gpu" if profile.is_gpu else "cpu"], **fields)
    if profile.is_cpu and set(fields) <= {"chunk_keys"} and k <= CHUNKS_MAX_K:
        return _chunks_plan(policy, profile, codec, rows, row_len, k, idx_np)
    if "wg_size" not in fields and policy.wg_size > profile.max_wg_size:
        policy = replace(policy, wg_size=max(MIN_WG, pow2_floor(profile.max_wg_size)))
    if policy.wg_size > profile.max_wg_size:
        raise PolicyError(f"top-k needs work-groups of at least {MIN_WG} work-items; "
                          f"{profile.describe()} runs at most {profile.max_wg_size}")
    single = row_len <= policy.single_max
    if single and "wg_size" not in fields and (not sorted or k <= policy.sort_size):
        # one work-group per short row: no larger than one tile of the row (rows of 1024 keys:
        # 128 x 8), so that more rows share a compute unit and fewer work-items idle
        fit = max(MIN_WG, 1 << max(-(-row_len // policy.items_per_thread) - 1, 0).bit_length())
        policy = replace(policy, wg_size=min(policy.wg_size, fit))
        need = 1 << max(-(-row_len // policy.wg_size) - 1, 0).bit_length()
        if profile.is_gpu and "items_per_thread" not in fields and \
                policy.items_per_thread < need <= ONE_TILE_IPT:
            # a row of one tile is loaded once and kept in registers for every pass
            policy = replace(policy, items_per_thread=need)
    sort_size = min(policy.sort_size, _local_sort_size(profile, codec.itemsize, policy.wg_size))
    if not sorted or k == 1:
        route, out_np = "direct", idx_np
    elif k <= sort_size:
        route, out_np = "local", idx_np
    else:
        route, out_np = "global", output_index_dtype(rows * row_len).type
    index_name, index_np = index_type(row_len)
    pos_bits = max(row_len - 1, 0).bit_length()
    target = profile.compute_units * policy.groups_per_cu
    groups = max(1, min(-(-target // rows), -(-row_len // policy.tile)))
    cap = min(row_len, policy.cand_cap or max(row_len // 32, 1024))
    fused = _fused(policy, profile)
    if single and fused and rows < profile.compute_units and row_len > FUSED_SINGLE_MAX:
        # a row or a few: the fused passes spread each row over many work-groups
        single = False
    one_launch = single and route != "global"
    sample, rank = (0, 0) if one_launch else \
        _threshold_sample(policy, profile, codec.itemsize, row_len, k, cap)
    # the threshold pass's slots are taken by each warp on NVIDIA, by each work-group elsewhere
    claimers = groups * (policy.wg_size // 32 if warp_aggregate(profile) else 1)
    chunk = _slot_chunk(row_len, claimers, cap, sample, rank) if sample else 0
    # after the threshold pass the passes read only candidates: launched one by one they beat the
    # fused launch, whose waiting work-groups cost more than the launches
    fused = fused and not one_launch and not (sample and policy.fused is None)
    return TopkPlan(policy=policy, profile=profile, route=route, index_name=index_name,
                    index_np=index_np, idx_np=idx_np, out_index_np=out_np,
                    sort_size=_sort_size_for(k, sort_size) if route == "local" else 0,
                    pos_bits=pos_bits,
                    digits=-(-codec.bits // DIGIT_BITS) + -(-pos_bits // DIGIT_BITS),
                    groups=groups, cap=cap,
                    single=one_launch, sample=sample, sample_rank=rank, sample_chunk=chunk,
                    fused=bool(fused))


def _fused(policy, profile):
    """Whether the digit passes run as one launch: the policy's choice, else on NVIDIA GPUs (where
    one launch saves host time). Its work-groups wait for each other with no spin limit (a pass's
    groups spin until the row's state is written), which needs a device that runs started
    work-groups to their end (DeviceProfile.runs_started_groups_to_end): refused elsewhere."""
    if policy.fused is None:
        return warp_aggregate(profile)
    if policy.fused and not profile.runs_started_groups_to_end:
        raise PolicyError(f"fused=True: the fused top-k passes' work-groups wait, with no spin "
                          f"limit, for work-groups that started before them, and "
                          f"{profile.describe()} is not known to run a started work-group to its "
                          f"end while others wait (DeviceProfile.runs_started_groups_to_end); use "
                          f"fused=False or None")
    return bool(policy.fused)


# GPUs: one work-group per row takes up to this many keys per work-item so that the row is one
# tile (its keys in registers for every pass)
ONE_TILE_IPT = 16

# Fused passes (NVIDIA): rows longer than this, fewer than the compute units, take them instead of
# one work-group per row (topk_single)
FUSED_SINGLE_MAX = 1 << 14

# The chunked CPU top-k (topk_chunks.cl.mako) up to this k; larger k take the radix select.
CHUNKS_MAX_K = 1 << 16
# its chunks per compute unit (work-items run as work-groups of one), and the shortest chunk
# relative to k: a chunk several times k long keeps few of its keys
CHUNKS_PER_CU, CHUNK_PER_K = 4, 8


def _chunks_plan(policy, profile, codec, rows, row_len, k, idx_np):
    """The chunked route: ``groups`` work-items per row (enough chunks that every compute unit
    has CHUNKS_PER_CU, none shorter than the policy's chunk_keys, by default max(4096,
    CHUNK_PER_K x k) keys), each keeping a
    buffer of ``cap`` = max(4k, 1024) candidates (at most its chunk)."""
    shortest = policy.chunk_keys or max(4096, CHUNK_PER_K * k)
    groups = max(1, min(-(-profile.compute_units * CHUNKS_PER_CU // rows), row_len // shortest))
    chunk = -(-row_len // groups)
    cap = max(k, min(max(4 * k, 1024), chunk))
    index_name, index_np = index_type(row_len)
    return TopkPlan(policy=policy, profile=profile, route="chunks", index_name=index_name,
                    index_np=index_np, idx_np=idx_np, out_index_np=idx_np, sort_size=0,
                    pos_bits=max(row_len - 1, 0).bit_length(), digits=0, groups=groups, cap=cap,
                    single=False)


def _caller_index(row_len, idx_bytes):
    """The numpy type of the indices handed back: 64-bit when asked (``idx_bytes`` 8), else the
    index-width rule's."""
    if idx_bytes == 8:
        return np.uint64
    if idx_bytes not in (0, 4):
        raise ValueError(f"idx_bytes must be 0, 4 or 8, got {idx_bytes}")
    return output_index_dtype(row_len).type


def warp_aggregate(profile):
    """Whether the selection kernels use NVIDIA's warp primitives (ballots, shuffles): warps merge
    equal digits into one local add, and each warp of the threshold pass claims its own slots."""
    return profile.has_ptx


def _threshold_sample(policy, profile, key_bytes, row_len, k, cap):
    """(sample size, rank) of the threshold pass for rows of ``row_len`` keys, or (0, 0).

    topk_sample takes S keys of each row at evenly spaced positions and makes the order key of
    rank r among them the row's threshold; topk_pass_t then reads the row once and keeps every
    key whose order key is at most the threshold as a candidate, and the digit passes select
    from those. As the threshold is a key of the row, at least r keys pass it; the k-th of the
    row passes it unless fewer than r of the sample fall among the row's first k, whose count
    has mean m = S k / row_len: r = m + 4 sqrt(m) + 4 makes that rare, and when it happens (or
    more than ``cap`` keys pass) the row's passes run as without a threshold, after one more
    read. Used for rows of at least the policy's ``sample_min_row`` keys where the expected
    candidates (r row_len / S) fill at most half of ``cap`` and the sample is at most 1/16 of
    the row; S is the policy's, no larger than half the local memory holds and at least two per
    work-item of the sample kernel."""
    size = policy.sample_size
    while size and size * key_bytes > profile.local_mem_bytes // 2:
        size //= 2
    if (not size or size < max(MIN_SAMPLE, 2 * policy.wg_size) or row_len < 16 * size
            or row_len < policy.sample_min_row):
        return 0, 0
    m = size * k / row_len
    rank = math.ceil(m + 4 * math.sqrt(m) + 4)
    if rank > size or rank * row_len / size > cap / 2:
        return 0, 0
    return size, rank


def _slot_chunk(row_len, claimers, cap, sample, rank):
    """Candidate slots a claimer of the threshold pass (a warp on NVIDIA, else a work-group)
    takes from its row's counter at a time: about half of the candidates it expects (rank /
    sample of its keys), at least 32, a power of two; at most a quarter of ``cap`` over all the
    claimers, as each leaves at most one chunk partly unused (dead entries the next pass skips)
    and the candidates fill at most half of ``cap``."""
    per = row_len / claimers * rank / sample
    chunk = max(32, 1 << max(math.ceil(per / 2) - 1, 0).bit_length())
    return max(1, min(chunk, pow2_floor(max(cap // (4 * claimers), 1))))


def _sort_size_for(k, limit):
    """The local sort's size for k: the power of two from k (at least 32), so that small k leave
    local memory to more work-groups (a program per size; at most ``limit``)."""
    return min(limit, max(32, 1 << max(k - 1, 0).bit_length()))


def _local_sort_size(profile, key_bytes, wg_size):
    """The largest power of two of (key, order key, position) triples that fit the local memory
    beside topk_single's histogram and scan (at most MAX_SORT_SIZE): the largest k sorted in one
    work-group."""
    per = 2 * key_bytes + 8
    budget = min(profile.local_mem_bytes - 1024 - 4 * RADIX - 8 * wg_size, 32 * 1024)
    s = 1
    while s * 2 * per <= budget and s * 2 <= MAX_SORT_SIZE:
        s *= 2
    return s

