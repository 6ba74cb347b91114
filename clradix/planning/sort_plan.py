"""The sort planner: :func:`plan_sort` chooses a sort policy from (device profile, key codec,
value size, n, overrides), starting from the defaults table's entry (policies.sort_defaults) and
fitting it to the device with the rules of policies.fit and the local memory its driver's
kernels take (each driver's ``local_bytes``, beside its template); a knob the caller set is
never changed. :func:`validate` checks a policy against a device: the policy's own checks
(``SortPolicy.check``, each algorithm's in its class) and its driver's local memory.
:func:`sort_plan` makes a :class:`SortPlan` of a chosen policy: what one sort configuration
derives from it (the driver, the index type, the local memory). Pure: reads the device profile
only, builds nothing.

An override applies to the algorithm planned when that algorithm takes it (``ranking`` to
onesweep and the one-work-group sort of 8-bit digits, ``blocks_per_cu`` to reduce-then-scan and
the chunked sort, ...) and is left out otherwise; where the caller chose the algorithm, a knob
it does not take is a PolicyError.
"""

import math
import warnings
from dataclasses import dataclass, replace
from typing import Type

from ..core.device import DeviceProfile
from ..core.errors import PolicyError
from ..core.sizes import index_bytes, index_type
from ..drivers.digit_passes import DigitPasses
from ..drivers.chunks import ChunkBuckets, Chunks
from ..drivers.onesweep import Onesweep, OnesweepFused
from ..drivers.reduce_then_scan import ReduceThenScan
from ..drivers.single_wg import OnesweepSmall, SingleWorkGroup
from ..policies.fit import clamp_wg, ranking_backends, shrink_items, three_quarters, with_best_ranking
from ..policies.sort import (NO_DEBUG, POLICIES, ChunksPolicy, SortDebug, SortPolicy,
                             check_radix_bits, check_sort_overrides)
from ..policies.sort_defaults import (DEFAULTS, NVIDIA_FUSED_MAX, bucket_fields, chunk_radix_bits,
                                      default_policy, nvidia_fused_items, nvidia_pass_tile,
                                      small_policy_entry, workgroup_cpu_policy)

DRIVERS = {"reduce_then_scan": ReduceThenScan, "onesweep": Onesweep, "single_wg": SingleWorkGroup,
           "chunks": Chunks}

# The knobs the chunks algorithm takes but wg_size (others set without an algorithm plan a
# work-group one on a CPU).
_CHUNK_FIELDS = set(ChunksPolicy.knobs()) - {"wg_size"}
# The fields that fix the shape of a one-work-group sort (the planner then sizes no tile to n).
_TILE_FIELDS = {"algorithm", "radix_bits", "wg_size", "items_per_thread"}


def driver_class(policy):
    """The sort driver of ``policy``: its algorithm's, and for one work-group with 8-bit digits
    the one that ranks them as onesweep does."""
    if policy.algorithm == "single_wg" and policy.radix_bits == 8:
        return OnesweepSmall
    if policy.algorithm == "onesweep" and policy.fused_passes:
        return OnesweepFused
    if policy.algorithm == "chunks" and policy.bucket_keys:
        return ChunkBuckets
    return DRIVERS[policy.algorithm]


@dataclass(frozen=True)
class SortPlan:
    """How one sort configuration runs: the policy the planner chose and fitted to the device
    (the knobs), the debugging switches, and what follows from them for these keys."""

    policy: SortPolicy
    profile: DeviceProfile
    debug: SortDebug
    driver: Type[DigitPasses]   # the driver class (driver_class)
    index_name: str             # the kernels' positions and counts
    index_np: type
    local_bytes: int            # of the driver's largest kernel (its local_bytes)


def sort_plan(policy, profile, codec, value_bytes, n, debug=NO_DEBUG, validated=True):
    """The SortPlan of ``policy`` for ``n`` keys of ``codec`` with ``value_bytes``-byte values
    (0: none), checked against the device (:func:`validate`) unless ``validated=False``."""
    index_name, index_np = index_type(n)
    if validated:
        validate(policy, profile, codec.itemsize, index_bytes(n), value_bytes, n, debug)
    return SortPlan(policy, profile, debug, driver_class(policy), index_name, index_np,
                    local_bytes(policy, codec.itemsize, index_bytes(n), value_bytes, debug))


def local_bytes(policy, key_bytes, index_bytes_, value_bytes=0, debug=NO_DEBUG):
    """Local memory of the largest kernel ``policy``'s driver builds (its ``local_bytes``)."""
    return driver_class(policy).local_bytes(policy, key_bytes, index_bytes_, value_bytes, debug)


def validate(policy, profile, key_bytes, index_bytes_, value_bytes=0, n_keys=None,
             debug=NO_DEBUG):
    """Raise PolicyError (naming the device) if ``policy`` cannot run there."""
    policy.check(profile, key_bytes, index_bytes_, value_bytes, n_keys)
    need = local_bytes(policy, key_bytes, index_bytes_, value_bytes, debug)
    if need > profile.local_mem_bytes:
        raise PolicyError(f"too little local memory on {profile.describe()}: {policy} needs "
                          f"{need} bytes of local memory for {key_bytes}-byte keys, the device "
                          f"has {profile.local_mem_bytes} (CL_DEVICE_LOCAL_MEM_SIZE)")


def plan_sort(profile, codec, value_bytes, n, tuned=None, debug=NO_DEBUG, **overrides):
    """The policy for sorting ``n`` keys of ``codec`` (with values of ``value_bytes`` or None).

    ``tuned`` is an autotuned table ``{(dtype name, log2 n): SortPolicy}`` for this device (see
    policies.tuning): without overrides or debugging switches (``debug``, a SortDebug), its
    entry for the nearest size class wins when it fits. Keyword overrides (``algorithm`` and any
    algorithm's knob) replace the planner's choice when not None (see the module's docstring).
    A tuned policy that cannot run here is skipped with a RuntimeWarning naming its entry and why.
    """
    check_sort_overrides(overrides)
    if tuned and debug == NO_DEBUG and not any(v is not None for v in overrides.values()):
        picked = _tuned_policy(profile, codec, value_bytes, n, tuned)
        if picked is not None:
            return picked
    base = default_policy(profile, n)
    fields = {k: v for k, v in overrides.items() if v is not None}
    algorithm = fields.get("algorithm")
    if algorithm == "chunks":
        base = DEFAULTS["cpu-chunks"]
    elif base.algorithm == "chunks" and (algorithm is not None or set(fields) - _CHUNK_FIELDS):
        # a work-group algorithm, or a knob only those take (wg_size, ranking, ...), asked for
        # on a CPU: the CPU's work-group default
        base = workgroup_cpu_policy(profile, n)
    if algorithm is not None:
        _check_knobs(algorithm, fields)
    # what the sizing below computes with (validate checks the rest once the policy is whole)
    if "radix_bits" in fields:
        check_radix_bits(fields.get("algorithm", base.algorithm), fields["radix_bits"])
    if fields.get("sg_size", 1) < 1:
        raise PolicyError(f"sg_size={fields['sg_size']} must be at least 1")
    kb, ib, vb = codec.itemsize, index_bytes(n), value_bytes or 0
    small = _small_policy(profile, codec, value_bytes, fields, debug)
    if (small is not None and n <= small.tile and base.algorithm != "chunks"
            and not _TILE_FIELDS & set(fields)):
        # no larger tile than n needs: os_small ranks every slot of its tile, and the 4-bit
        # passes scan it
        ipt = 4 if small.radix_bits == 8 else min(16, small.items_per_thread)
        while ipt * small.wg_size < n and ipt < small.items_per_thread:
            ipt *= 2
        return replace(small, items_per_thread=min(ipt, small.items_per_thread))
    if algorithm == "single_wg":
        return small or _with_fields(DEFAULTS["small"], fields)
    policy = _with_fields(base, fields)
    if policy.algorithm == "chunks":
        # the buckets where the caller set neither them nor the digit width (bucket_keys=0: the
        # LSD passes); a caller's bucket_keys with the planner's top digit
        bits, bucket_keys = bucket_fields(kb, value_bytes, n)
        if not ({"radix_bits", "bucket_keys"} & set(fields)):
            policy = replace(policy, bucket_keys=bucket_keys)
        if "radix_bits" not in fields:
            policy = replace(policy, radix_bits=bits if policy.bucket_keys
                             else chunk_radix_bits(kb, n))

    def need(pol):
        return local_bytes(pol, kb, ib, vb, debug)
    policy = _fit(policy, profile, set(fields), need, three_quarters, keep_ranking=True)
    nvidia_onesweep = profile.is_gpu and profile.is_nvidia and policy.algorithm == "onesweep"
    if (nvidia_onesweep and "fused_passes" not in fields and n <= NVIDIA_FUSED_MAX
            and ("ring_slots" not in fields or policy.ring_slots * policy.tile >= n)):
        policy = replace(policy, fused_passes=True)
        items = nvidia_fused_items(n)
        if items and "items_per_thread" not in fields:
            policy = replace(policy, items_per_thread=min(items, policy.items_per_thread))
    tile = (nvidia_pass_tile(kb, vb, codec.kind == "float")
            if nvidia_onesweep and not policy.fused_passes else None)
    if tile:
        wg, ipt, cap = tile
        if "wg_size" not in fields:
            policy = clamp_wg(replace(policy, wg_size=wg), profile)
        if "items_per_thread" not in fields:
            policy = shrink_items(replace(policy, items_per_thread=ipt), need,
                                  profile.local_mem_bytes, three_quarters)
        if "max_registers" not in fields:
            policy = replace(policy, max_registers=cap)
    if policy.algorithm == "onesweep" and policy.fused_passes and "ring_slots" not in fields:
        # the rings hold every tile of a pass (os_fused reuses no slot)
        tiles = -(-n // policy.tile)
        policy = replace(policy, ring_slots=max(policy.ring_slots, 1 << (tiles - 1).bit_length()))
    return policy


def _check_knobs(algorithm, fields):
    """PolicyError naming a knob set (not None) that the caller's ``algorithm`` does not take."""
    cls = POLICIES.get(algorithm)
    if cls is None:
        return   # (check_sort_overrides refused it)
    foreign = sorted(set(fields) - set(cls.knobs()) - {"algorithm"})
    if foreign:
        raise PolicyError(f"{', '.join(foreign)}: not a knob of the {algorithm} algorithm (its "
                          f"knobs: {', '.join(cls.knobs())})")


def _with_fields(policy, fields):
    """``policy`` made the algorithm ``fields`` names (the knobs both algorithms take carried
    over, the others at the algorithm's defaults), then given every knob of ``fields`` that
    algorithm takes."""
    cls = POLICIES[fields.get("algorithm", policy.algorithm)]
    if type(policy) is not cls:
        policy = cls(**{k: getattr(policy, k) for k in cls.knobs() if k in policy.knobs()})
    return replace(policy, **{k: v for k, v in fields.items() if k in cls.knobs()})


def _fit(policy, profile, fixed, need, step, keep_ranking):
    """``policy`` fitted to the device in every field not in ``fixed`` (those the caller set): a
    subgroup ranking back-end the device has (with ``keep_ranking``, the policy's own where the
    device has it: a defaults entry's ranking is a measured choice), the work-group no larger
    than the device's, items_per_thread lowered by ``step`` until ``need(policy)`` bytes fit the
    local memory."""
    if (policy.ranks_by_subgroups and "ranking" not in fixed
            and not (keep_ranking and policy.ranking in ranking_backends(profile))):
        policy = with_best_ranking(policy, profile)
    if "wg_size" not in fixed:
        policy = clamp_wg(policy, profile)
    if "items_per_thread" not in fixed:
        policy = shrink_items(policy, need, profile.local_mem_bytes, step)
    return policy


def _small_policy(profile, codec, value_bytes, fields, debug):
    """The one-work-group policy for this device and key (None if not even 256 keys fit): 8-bit
    digits ranked as onesweep does where the defaults entry says so (the largest items_per_thread
    that fits), else 4-bit split passes (items_per_thread halved until it fits)."""
    pol = _with_fields(small_policy_entry(profile),
                       {k: v for k, v in fields.items() if k != "algorithm"})
    vb = value_bytes or 0
    # (os_small's tile is sized up to the limit: leave the compiler a little local memory)
    margin = 1024 if pol.radix_bits == 8 else 0
    # (its tile is fitted to local memory even from a caller's items_per_thread: at most that)
    pol = _fit(pol, profile, set(fields) - {"items_per_thread"},
               lambda p: local_bytes(p, codec.itemsize, 4, vb, debug) + margin,
               (lambda ipt: ipt - 1) if pol.radix_bits == 8 else (lambda ipt: ipt // 2),
               keep_ranking=False)
    return pol if pol.tile >= 256 else None


def _tuned_policy(profile, codec, value_bytes, n, tuned):
    """The tuned entry for the size class nearest to n, if there is one and it can run here."""
    picked = _pick_tuned(tuned, codec.dtype, n)
    if picked is None:
        return None
    (dtype, lg), pol = picked
    try:
        validate(pol, profile, codec.itemsize, index_bytes(n), value_bytes or 0, n)
        return pol
    except PolicyError as exc:
        # (n left out of the message: one warning per entry and reason, not per size)
        vals = f" with {value_bytes}-byte values" if value_bytes else ""
        warnings.warn(f"ignoring the tuned policy {dtype}:{lg} of {profile.describe()} "
                      f"for keys{vals}: {exc}; using the built-in policy",
                      RuntimeWarning, stacklevel=3)
        return None


def _pick_tuned(table, dtype, n):
    """(key, policy) of the tuned entry for the size class nearest to n (in log2), or None."""
    lg = math.log2(max(n, 1))
    cands = [(abs(k - lg), k) for (dt, k) in table if dt == str(dtype)]
    if not cands:
        return None
    key = (str(dtype), min(cands)[1])
    return key, table[key]
