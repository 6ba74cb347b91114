"""The sort policies: one frozen value per algorithm, holding the knobs a caller or the autotuner
may set for it, and the debugging switches apart from them.

The design, as top-k's :class:`~.topk.TopkPolicy` and its ``TopkPlan`` split it:

- **Knobs, one class per algorithm.** :class:`OnesweepPolicy`, :class:`ReduceThenScanPolicy`,
  :class:`ChunksPolicy` and :class:`SingleGroupPolicy` each hold what its algorithm takes and
  nothing else (a reduce-then-scan policy has no status ring; onesweep has no blocks per compute
  unit). Their common base, :class:`SortPolicy`, holds what every algorithm takes (the digit
  width, the work-group size, the items each work-item ranks) and what a policy does: its
  ``label``, its ``fields()`` (the algorithm's name and its knobs, the form the tuning cache and
  the Sorter's keywords take) and its ``check`` against a device, each algorithm's checks in its
  own class (there is no central table of which field goes with which algorithm).
- **What one call derives** (the local memory the kernels take, the temporaries, the digit
  passes, the launch grid) is not part of a policy: each driver computes it beside its template
  (``local_bytes``, ``temp_bytes``, ``grid``; clradix.drivers). The sort planner
  (clradix.planning.sort_plan, above the drivers) fits a policy to the device by its driver's
  figure, and its ``SortPlan`` of a call holds the policy, the debugging switches, the driver,
  the index type and that figure.
- **Debugging and test switches** (:class:`SortDebug`: ``force_fallback``, ``fused_scan``)
  change the kernels without being tuned: they never come from the defaults, the planner or the
  tuning cache, and are not saved there. A Sorter takes them as keywords beside the knobs and
  hands them to the drivers that read them.

``SortPolicy(algorithm, radix_bits, wg_size, items_per_thread, **knobs)`` still builds a policy
from the flat form every field used to share: it returns the algorithm's class, and a field that
algorithm does not take must be left at its old default (the form tuning caches written before
hold, read by :func:`policy_from_fields`). ``isinstance(p, SortPolicy)`` holds for every policy.

The built-in values per device are in :mod:`.sort_defaults`; the planner that chooses and fits
one, and its check against a device (``validate``), in clradix.planning.sort_plan.
"""

import numbers
import typing
from dataclasses import MISSING, dataclass, fields as dc_fields
from typing import ClassVar, Dict, Tuple, Type

from ..core.errors import PolicyError
from .fit import ranking_backends

ALGORITHMS = ("reduce_then_scan", "onesweep", "single_wg", "chunks")
#: algorithms removed, with what replaces them (check_field names it)
REMOVED_ALGORITHMS = {"hybrid": ("'onesweep', as fast or faster for every key type where they were "
                                 "last measured side by side (BENCHMARKS_NOTES.md, \"The hybrid "
                                 "sort, removed\")")}
RADIX_BITS = (2, 4, 8)
# the chunked CPU sort takes any digit width a private histogram holds
CHUNK_RADIX_BITS = (2, 4, 6, 8, 10, 11, 12)
RANKINGS = ("local", "ptx", "khr", "intel")
# Onesweep's look-back words hold 29-bit counts: larger sorts run in portions of this many keys.
ONESWEEP_PORTION = 1 << 28


class _FlatConstructor(type):
    """``SortPolicy(algorithm, ...)`` builds the algorithm's policy from the flat form (see the
    module's docstring); the algorithms' classes construct as plain dataclasses."""

    def __call__(cls, *args, **kwargs):
        if cls is SortPolicy:
            return policy_of(*args, **kwargs)
        return super().__call__(*args, **kwargs)


@dataclass(frozen=True)
class SortPolicy(metaclass=_FlatConstructor):
    """What every sort algorithm takes: the digit width of a pass, the work-group size and the
    items each work-item ranks (their product the tile). The base of the algorithms' policies
    (OnesweepPolicy, ReduceThenScanPolicy, ChunksPolicy, SingleGroupPolicy).

    ``SortPolicy(algorithm, radix_bits, wg_size, items_per_thread, blocks_per_cu=4, **knobs)``
    returns the algorithm's policy from the flat form (a knob the algorithm does not take left
    at its default, else PolicyError)."""

    radix_bits: int
    wg_size: int
    items_per_thread: int

    #: the algorithm's name (the Sorter's ``algorithm`` keyword)
    algorithm: ClassVar[str] = ""
    #: the digit widths the algorithm's kernels take
    radix_bits_taken: ClassVar[Tuple[int, ...]] = RADIX_BITS

    @property
    def tile(self):
        return self.wg_size * self.items_per_thread

    @property
    def radix(self):
        return 1 << self.radix_bits

    @property
    def ranks_by_subgroups(self):
        """Whether the kernels rank with a subgroup back-end (``ranking``, ``sg_size``)."""
        return False

    @property
    def label(self):
        """The policy on one line, for reports: ``algorithm/<radix_bits>b/<wg_size>x<items>``
        (``/ranking`` where the kernels rank by subgroups), then ``field=value`` for every other
        knob that differs from its default. Two different policies never share a label."""
        text = f"{self.algorithm}/{self.radix_bits}b/{self.wg_size}x{self.items_per_thread}"
        shown = {"radix_bits", "wg_size", "items_per_thread"}
        if self.ranks_by_subgroups:
            text += f"/{getattr(self, 'ranking')}"
            shown.add("ranking")
        for f in dc_fields(self):
            if f.name not in shown and getattr(self, f.name) != f.default:
                text += f" {f.name}={getattr(self, f.name)}"
        return text

    @classmethod
    def knobs(cls):
        """The names of the algorithm's knobs, in the order of its fields."""
        return tuple(f.name for f in dc_fields(cls))

    def fields(self):
        """``{"algorithm": ..., knob: value, ...}``: the Sorter's keywords that plan this policy,
        and its entry in the tuning cache."""
        return dict(algorithm=self.algorithm, **{name: getattr(self, name)
                                                 for name in self.knobs()})

    def check(self, profile, key_bytes, index_bytes, value_bytes=0, n_keys=None):
        """Raise PolicyError (naming the device) if the policy cannot sort ``n_keys`` keys of
        ``key_bytes`` there (the local memory its kernels take is the planner's check, by the
        driver's figure)."""
        self.check_algorithm(profile, n_keys)
        dev = profile.describe()
        check_radix_bits(self.algorithm, self.radix_bits)
        self.check_wg_size()
        if self.wg_size > profile.max_wg_size:
            raise PolicyError(f"wg_size={self.wg_size} exceeds the maximum work-group size "
                              f"{profile.max_wg_size} of {dev}")
        if self.items_per_thread < 1:
            raise PolicyError(f"items_per_thread={self.items_per_thread} must be at least 1")
        if self.tile > 65536:
            raise PolicyError(f"tile of {self.tile} keys (wg_size x items_per_thread) exceeds "
                              f"65536")
        for name, (low, bound) in _AT_LEAST.items():
            if name in self.knobs() and getattr(self, name) < low:
                raise PolicyError(f"{name}={getattr(self, name)} must be {bound}")
        if not profile.has_int64:
            uses = [what for what, wide in (("64-bit keys", key_bytes == 8),
                                            ("64-bit indices", index_bytes == 8),
                                            ("8-byte values", value_bytes == 8)) if wide]
            uses.append("the 64-bit buffer offsets every kernel takes")
            raise PolicyError(f"{dev} lacks 64-bit integers: it is an {profile.cl_profile} device "
                              f"without cles_khr_int64, and clradix needs OpenCL C's long/ulong "
                              f"for {', '.join(uses)}")

    def check_algorithm(self, profile, n_keys):
        """The algorithm's own checks (run first)."""

    def check_wg_size(self):
        if self.wg_size < 1 or self.wg_size & (self.wg_size - 1):
            raise PolicyError(f"wg_size={self.wg_size} must be a power of two")


# the lower bound of the count knobs (of the algorithms that take them), and what it means
_AT_LEAST = {"blocks_per_cu": (1, "at least 1"),
             "max_registers": (0, "0 (the compiler's choice) or more"),
             "bucket_keys": (0, "0 (no buckets) or more")}


def _check_ranking(policy, profile):
    """The checks of a ranking by subgroups (onesweep's, and os_small's, which ranks as onesweep
    does): a back-end the device has, a subgroup width it takes, a tile whose ranks fit."""
    dev = profile.describe()
    if policy.ranking not in RANKINGS:
        raise PolicyError(f"unknown ranking back-end {policy.ranking!r}: expected one of "
                          f"{RANKINGS}")
    if policy.ranking not in ranking_backends(profile):
        raise PolicyError(f"ranking back-end {policy.ranking!r} is not available on {dev} "
                          f"(available: {', '.join(ranking_backends(profile))})")
    if policy.ranking == "ptx" and policy.sg_size != 32:
        raise PolicyError(f"the ptx ranking back-end needs sg_size=32 (warps), not "
                          f"{policy.sg_size}")
    if not 1 <= policy.sg_size <= 32 or policy.wg_size % policy.sg_size:
        raise PolicyError(f"sg_size={policy.sg_size} must divide wg_size={policy.wg_size} and be "
                          f"at most 32")
    if policy.tile >= 1 << 16:
        raise PolicyError(f"onesweep's tile of {policy.tile} keys (wg_size x items_per_thread) "
                          f"must be below 65536: a key's rank shares a 32-bit word with its "
                          f"digit")


@dataclass(frozen=True)
class OnesweepPolicy(SortPolicy):
    """Onesweep (drivers/onesweep.py): one histogram of every pass, then a launch per pass whose
    tiles take their digit offsets from the tiles before them through a status ring (decoupled
    look-back), or with ``fused_passes`` every pass in one launch."""

    ranking: str = "local"        # subgroup primitive back-end (see common.mako)
    sg_size: int = 32             # subgroup width the ranking assumes
    ring_slots: int = 1024        # tiles in the status ring (constant memory)
    lookback: int = 256           # farthest predecessor read through the ring
    spin_limit: int = 4096        # look-back spins before falling back
    max_registers: int = 0        # NVIDIA only: -cl-nv-maxrregcount (0: the compiler's choice)
    fused_passes: bool = False    # the histogram, the scan and every digit pass in one launch
    #                               (os_fused; n <= ring_slots x tile: its rings hold every
    #                               tile of a pass, no slot is reused)

    algorithm: ClassVar[str] = "onesweep"

    @property
    def ranks_by_subgroups(self):
        return True

    def check_wg_size(self):
        # (onesweep's kernels loop over the digits and subgroups of any work-group size, as
        # 384, CUB's pass on sm90)
        if self.wg_size < 1 or (self.wg_size & (self.wg_size - 1)
                                and self.wg_size % self.sg_size):
            raise PolicyError(f"wg_size={self.wg_size} must be a power of two or a multiple of "
                              f"the subgroup width, sg_size={self.sg_size}")

    def check_algorithm(self, profile, n_keys):
        _check_ranking(self, profile)
        if self.spin_limit < 0:
            raise PolicyError(f"spin_limit={self.spin_limit} must be at least 0")
        if self.lookback < 1 or self.lookback + 1 > self.ring_slots:
            raise PolicyError(f"ring_slots={self.ring_slots} must be at least lookback "
                              f"({self.lookback}) + 1")
        if not profile.runs_started_groups_to_end:
            raise PolicyError(f"the onesweep algorithm is refused on {profile.describe()}: its "
                              f"work-groups wait, with no spin limit, for work-groups that "
                              f"started before them (the status ring's claim; with fused_passes "
                              f"every pass's order), and this device is not known to run a "
                              f"started work-group to its end while others wait "
                              f"(DeviceProfile.runs_started_groups_to_end; docs/guarantees.md, "
                              f"\"No hang\"); use algorithm=\"reduce_then_scan\"")
        if self.fused_passes and n_keys is not None and n_keys > self.ring_slots * self.tile:
            raise PolicyError(f"fused_passes sorts at most ring_slots x tile = {self.ring_slots} "
                              f"x {self.tile} keys (its rings hold every tile of a pass: no slot "
                              f"is reused), not {n_keys}")
        if self.fused_passes and n_keys is not None and n_keys > ONESWEEP_PORTION:
            raise PolicyError(f"fused_passes sorts at most {ONESWEEP_PORTION} keys in its one "
                              f"launch (29-bit look-back counts), not {n_keys}")


@dataclass(frozen=True)
class ReduceThenScanPolicy(SortPolicy):
    """Reduce-then-scan (drivers/reduce_then_scan.py): per digit pass, blocks count their tiles'
    digits, one work-group scans the counts, the blocks scatter."""

    blocks_per_cu: int = 4        # blocks per compute unit
    max_registers: int = 0        # NVIDIA only: -cl-nv-maxrregcount (0: the compiler's choice)

    algorithm: ClassVar[str] = "reduce_then_scan"


@dataclass(frozen=True)
class ChunksPolicy(SortPolicy):
    """The chunked CPU sort (drivers/chunks.py): one work-item per chunk of at least
    items_per_thread keys, ``blocks_per_cu`` chunks per compute unit, no barrier; wg_size is 1."""

    blocks_per_cu: int = 4        # chunks per compute unit
    bucket_keys: int = 0          # 0, LSD passes over the whole array; else one pass by the top
    #                               digit (radix_bits) into buckets, each then sorted by a
    #                               work-item in the cache, a bucket of more than bucket_keys
    #                               keys split by its next 8 bits first (chunk_buckets.cl.mako)

    algorithm: ClassVar[str] = "chunks"
    radix_bits_taken: ClassVar[Tuple[int, ...]] = CHUNK_RADIX_BITS

    def check_algorithm(self, profile, n_keys):
        if self.wg_size != 1:
            raise PolicyError(f"the chunks algorithm runs one work-item per work-group: "
                              f"wg_size={self.wg_size} must be 1")


@dataclass(frozen=True)
class SingleGroupPolicy(SortPolicy):
    """At most one tile sorted by one work-group in one launch (drivers/single_wg.py): 4-bit
    split passes in local memory, or 8-bit digits ranked as onesweep ranks them (os_small, by
    ``ranking`` and ``sg_size``, which only 8-bit digits read)."""

    ranking: str = "local"        # 8-bit digits: subgroup primitive back-end (see common.mako)
    sg_size: int = 32             # 8-bit digits: subgroup width the ranking assumes
    max_registers: int = 0        # NVIDIA only: -cl-nv-maxrregcount (0: the compiler's choice)

    algorithm: ClassVar[str] = "single_wg"

    @property
    def ranks_by_subgroups(self):
        return self.radix_bits == 8

    def check_algorithm(self, profile, n_keys):
        if self.ranks_by_subgroups:
            _check_ranking(self, profile)
        if n_keys is not None and n_keys > self.tile:
            raise PolicyError(f"single_wg sorts at most one tile ({self.tile} keys), not "
                              f"{n_keys}")


#: the policy class of each algorithm
POLICIES: Dict[str, Type[SortPolicy]] = {cls.algorithm: cls for cls in (
    ReduceThenScanPolicy, OnesweepPolicy, SingleGroupPolicy, ChunksPolicy)}


@dataclass(frozen=True)
class SortDebug:
    """Debugging and test switches of the sort kernels: never planned, tuned or cached. A Sorter
    takes them as keywords; the drivers that render them read them (others ignore them)."""

    force_fallback: bool = False  # onesweep: always fall back (never read the ring)
    fused_scan: bool = False      # reduce-then-scan: each scatter block scans the digit counts
    #                               itself (2 launches per pass instead of 3)


NO_DEBUG = SortDebug()
DEBUG_FIELDS = tuple(f.name for f in dc_fields(SortDebug))

# The flat form: every knob of every algorithm with its default, and the type of each field (the
# knobs, the algorithm and the debugging switches), and the accepted values of the enum-like ones.
_DEFAULTS = {f.name: f.default for cls in POLICIES.values() for f in dc_fields(cls)
             if f.default is not MISSING}
#: the Sorter's policy keywords: the algorithm and every algorithm's knobs
POLICY_FIELDS = ("algorithm",) + tuple(dict.fromkeys(
    name for cls in POLICIES.values() for name in cls.knobs()))
_FIELD_TYPES = dict({"algorithm": str},
                    **{name: hint for cls in POLICIES.values()
                       for name, hint in typing.get_type_hints(cls).items()
                       if name in cls.knobs()},
                    **typing.get_type_hints(SortDebug))
_CHOICES = {"algorithm": ALGORITHMS, "ranking": RANKINGS}


def policy_of(algorithm, radix_bits, wg_size, items_per_thread, blocks_per_cu=4, **knobs):
    """The policy of ``algorithm`` from the flat form (``SortPolicy(...)``'s arguments, in the
    order of the fields every algorithm used to share): a knob the algorithm does not take must
    be at its default, else PolicyError names it; the debugging switches are not knobs
    (TypeError: they are a Sorter's keywords, SortDebug)."""
    cls = POLICIES.get(algorithm)
    if cls is None:
        check_field("algorithm", algorithm)
        raise PolicyError(f"unknown algorithm {algorithm!r}: expected one of {ALGORITHMS}")
    knobs["blocks_per_cu"] = blocks_per_cu
    taken = set(cls.knobs())
    for name in list(knobs):
        if name in DEBUG_FIELDS:
            raise TypeError(f"{name} is a debugging switch, not a policy knob: pass it to the "
                            f"Sorter (Sorter(ctx, {name}=...), clradix.policies.sort.SortDebug)")
        if name not in _DEFAULTS:
            raise TypeError(f"unknown policy field {name!r}: policy fields are "
                            f"{', '.join(POLICY_FIELDS)}")
        if name not in taken:
            if knobs[name] != _DEFAULTS[name]:
                raise PolicyError(f"{name} is a {_owners(name)} option, not one of {algorithm}")
            del knobs[name]
    return cls(radix_bits, wg_size, items_per_thread, **knobs)


def _owners(name):
    return " or ".join(cls.algorithm for cls in POLICIES.values() if name in cls.knobs())


def check_field(name, value):
    """Raise TypeError or ValueError naming the field, the value and what the field accepts if
    ``value`` is not one of its values (int fields take ints, not bool, float or str; the
    enum-like fields one of their strings). Ranges are each policy's ``check``."""
    if name not in _FIELD_TYPES:
        raise TypeError(f"unknown policy field {name!r}: policy fields are "
                        f"{', '.join(_FIELD_TYPES)}")
    kind = _FIELD_TYPES[name]
    if name == "algorithm" and value in REMOVED_ALGORITHMS:
        raise ValueError(f"algorithm={value!r} was removed: use {REMOVED_ALGORITHMS[value]}")
    if name in _CHOICES:
        accepted = f"one of {', '.join(repr(c) for c in _CHOICES[name])}"
        ok_type = isinstance(value, str)
        ok = ok_type and value in _CHOICES[name]
    elif kind is bool:
        accepted = "True or False"
        ok = ok_type = isinstance(value, bool)
    elif kind is int:
        accepted = "an integer"
        ok = ok_type = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    else:  # pragma: no cover - a field added without a rule here
        raise TypeError(f"policy field {name} has no check for its type {kind}")
    if not ok:
        raise (ValueError if ok_type else TypeError)(
            f"{name}={value!r} ({type(value).__name__}): {name} takes {accepted}")


def check_sort_overrides(overrides, debug=False):
    """Raise TypeError or ValueError (naming the field, the value and what it accepts) unless every
    item of ``overrides`` is a policy field (with ``debug``, or a debugging switch) and its value
    None (the planner chooses) or one the field takes (see :func:`check_field`)."""
    names = POLICY_FIELDS + (DEBUG_FIELDS if debug else ())
    unknown = set(overrides) - set(names)
    if unknown:
        raise TypeError(f"unknown policy override(s): {', '.join(sorted(unknown))}; policy fields "
                        f"are {', '.join(names)}")
    for name, value in overrides.items():
        if value is not None:
            try:
                check_field(name, value)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{exc}, or None (the planner chooses)") from None


def split_debug(keywords):
    """(policy overrides, SortDebug) of a Sorter's keywords: the debugging switches set (not
    None) make the SortDebug, the rest are the overrides."""
    switches = {k: keywords[k] for k in DEBUG_FIELDS if keywords.get(k) is not None}
    overrides = {k: v for k, v in keywords.items() if k not in DEBUG_FIELDS}
    return overrides, (SortDebug(**switches) if switches else NO_DEBUG)


def policy_from_fields(fields):
    """The policy of a dict of its fields (``fields()``, as tuning.save writes them; the flat
    form of every field, as caches written before hold, is read too); TypeError or ValueError
    naming a missing, unknown or ill-typed field. Ranges are each policy's ``check``."""
    if not isinstance(fields, dict):
        raise TypeError(f"expected an object of policy fields, got {type(fields).__name__}")
    for name, value in fields.items():
        check_field(name, value)
    missing = [name for name in ("algorithm", "radix_bits", "wg_size", "items_per_thread")
               if name not in fields]
    if missing:
        raise TypeError(f"missing policy field(s): {', '.join(missing)}")
    flat = dict(fields)
    for name in DEBUG_FIELDS:   # (a flat entry holds them, off: a debugging run is not tuned)
        if flat.pop(name, False):
            raise ValueError(f"{name}=True is a debugging switch, not a tuned policy's")
    return policy_of(**flat)


def check_radix_bits(algorithm, radix_bits):
    """PolicyError unless ``algorithm`` takes digits of ``radix_bits``."""
    cls = POLICIES.get(algorithm)
    if radix_bits not in (cls.radix_bits_taken if cls else RADIX_BITS):
        raise PolicyError(f"radix_bits={radix_bits} is not supported: expected 2, 4 or 8 (the "
                          f"chunks algorithm: {', '.join(map(str, CHUNK_RADIX_BITS))})")
