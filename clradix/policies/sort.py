"""The sort policy: a plain frozen value, the local memory its kernels take, and the checks of
its fields.

A policy says how a sort runs: the algorithm, the radix bits of a digit pass, the work-group size,
the items each work-item ranks, and how many blocks per compute unit the reduce-then-scan passes use.
Its built-in values per device are in :mod:`.sort_defaults`, the planner that chooses one in
:mod:`.sort_plan`, and the check against a device (:func:`~.sort_validate.validate`) in
:mod:`.sort_validate`.
"""

import numbers
import typing
from dataclasses import MISSING, dataclass

from ..core.errors import PolicyError

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


@dataclass(frozen=True)
class SortPolicy:
    algorithm: str
    radix_bits: int
    wg_size: int
    items_per_thread: int
    blocks_per_cu: int = 4        # reduce-then-scan: blocks per compute unit
    ranking: str = "local"        # onesweep: subgroup primitive back-end (see common.mako)
    sg_size: int = 32             # onesweep: subgroup width the ranking assumes
    ring_slots: int = 1024        # onesweep: tiles in the status ring (constant memory)
    lookback: int = 256           # onesweep: farthest predecessor read through the ring
    spin_limit: int = 4096        # onesweep: look-back spins before falling back
    max_registers: int = 0        # NVIDIA only: -cl-nv-maxrregcount (0: the compiler's choice)
    force_fallback: bool = False  # onesweep, debugging: always fall back (never read the ring)
    fused_scan: bool = False      # reduce-then-scan: each scatter block scans the digit counts
    #                               itself (2 launches per pass instead of 3)
    fused_passes: bool = False    # onesweep: the histogram, the scan and every digit pass in one
    #                               launch after one fill (os_fused; n <= ring_slots x tile:
    #                               its rings hold every tile of a pass, no slot is reused)
    bucket_keys: int = 0          # chunks: 0, LSD passes over the whole array; else one pass by
    #                               the top digit (radix_bits) into buckets, each then sorted by
    #                               a work-item in the cache, a bucket of more than bucket_keys
    #                               keys split by its next 8 bits first (chunk_buckets.cl.mako)

    @property
    def tile(self):
        return self.wg_size * self.items_per_thread

    @property
    def ranks_by_subgroups(self):
        """Whether the kernels rank with a subgroup back-end (``ranking``, ``sg_size``): onesweep
        and the one-work-group sort of 8-bit digits (os_small), which ranks as onesweep does."""
        return self.algorithm == "onesweep" or (self.algorithm == "single_wg"
                                                and self.radix_bits == 8)

    @property
    def radix(self):
        return 1 << self.radix_bits

    @property
    def label(self):
        """The policy on one line, for reports: ``algorithm/<radix_bits>b/<wg_size>x<items>``
        (``/ranking`` where the kernels rank by subgroups), then ``field=value`` for every other
        field that differs from its default. Two different policies never share a label."""
        text = f"{self.algorithm}/{self.radix_bits}b/{self.wg_size}x{self.items_per_thread}"
        shown = {"algorithm", "radix_bits", "wg_size", "items_per_thread"}
        if self.ranks_by_subgroups:
            text += f"/{self.ranking}"
            shown.add("ranking")
        for f in self.__dataclass_fields__.values():
            if f.name not in shown and getattr(self, f.name) != f.default:
                text += f" {f.name}={getattr(self, f.name)}"
        return text

    def stage_bytes(self, key_bytes, index_bytes, value_bytes=0):
        """Onesweep's staging area in local memory: a tile of keys, then of values; os_fused also
        counts every pass's digits (MAXP x RADIX words) and scans (wg_size indices) there. The
        template sizes its staging array by it (its parameter ``stage_bytes``)."""
        raw = self.tile * max(key_bytes, value_bytes or 0)
        if self.fused_passes:
            raw = max(raw, -(-8 * key_bytes // self.radix_bits) * self.radix * 4,
                      self.wg_size * index_bytes)
        return raw

    def local_bytes(self, key_bytes, index_bytes, value_bytes=0):
        """Local memory of the largest kernel under this policy."""
        if self.algorithm == "chunks":
            return 0   # one work-item per work-group: private counters only
        counters = (self.wg_size // self.sg_size) * self.radix * 4   # per-subgroup counters
        if self.algorithm == "single_wg" and self.radix_bits == 8:   # os_small
            return (self.tile * (key_bytes + (2 if value_bytes else 0))  # keys (+ positions)
                    + counters + self.radix * 4                        # digit places
                    + self.wg_size * 8)                                # scan + match scratch
        if self.algorithm == "single_wg":
            sub = 1 << min(self.radix_bits, 4)
            return self.tile * (key_bytes + 2) + sub * self.wg_size * 4 + self.wg_size * 4
        if self.algorithm == "onesweep":   # onesweep_steps.mako, TileStorage
            stage = self.stage_bytes(key_bytes, index_bytes, value_bytes)  # keys, then values
            return (-(-max(stage, counters) // 16) * 16           # staging over the counters
                    + self.wg_size * 8                             # scan + match scratch
                    + self.radix * (8 + index_bytes) + 32)         # digit tables, words
        sub = 1 << min(self.radix_bits, 4)
        return (self.tile * (key_bytes + 2)      # keys of the tile + their source positions
                + sub * self.wg_size * 4         # split counters
                + self.wg_size * 4               # scan scratch
                + self.radix * (8 + index_bytes)   # run starts/ends + running offsets
                + (self.radix + self.wg_size) * index_bytes * self.fused_scan)  # digit totals


# The type of each SortPolicy field, and the accepted values of the enum-like string fields.
_FIELD_TYPES = typing.get_type_hints(SortPolicy)
_CHOICES = {"algorithm": ALGORITHMS, "ranking": RANKINGS}


def check_field(name, value):
    """Raise TypeError or ValueError naming the SortPolicy field, the value and what the field
    accepts if ``value`` is not one of its values (int fields take ints, not bool, float or str;
    the enum-like fields one of their strings). Ranges are :func:`.sort_validate.validate`'s job."""
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


def check_sort_overrides(overrides):
    """Raise TypeError or ValueError (naming the field, the value and what it accepts) unless every
    item of ``overrides`` is a SortPolicy field and its value None (the planner chooses) or one the
    field takes (see :func:`check_field`)."""
    unknown = set(overrides) - set(SortPolicy.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown policy override(s): {', '.join(sorted(unknown))}; policy fields "
                        f"are {', '.join(SortPolicy.__dataclass_fields__)}")
    for name, value in overrides.items():
        if value is not None:
            try:
                check_field(name, value)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{exc}, or None (the planner chooses)") from None


def policy_from_fields(fields):
    """The SortPolicy of a dict of its fields (as tuning.save writes them); TypeError or ValueError
    naming a missing, unknown or ill-typed field. Ranges are :func:`.sort_validate.validate`'s job."""
    if not isinstance(fields, dict):
        raise TypeError(f"expected an object of policy fields, got {type(fields).__name__}")
    for name, value in fields.items():
        check_field(name, value)
    missing = [f.name for f in SortPolicy.__dataclass_fields__.values()
               if f.name not in fields and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise TypeError(f"missing policy field(s): {', '.join(missing)}")
    return SortPolicy(**fields)


def check_radix_bits(algorithm, radix_bits):
    """PolicyError unless ``algorithm`` takes digits of ``radix_bits``."""
    if radix_bits not in (CHUNK_RADIX_BITS if algorithm == "chunks" else RADIX_BITS):
        raise PolicyError(f"radix_bits={radix_bits} is not supported: expected 2, 4 or 8 (the "
                          f"chunks algorithm: {', '.join(map(str, CHUNK_RADIX_BITS))})")
