"""Policies (plain frozen values) and the planner that picks one per device, dtype and size.

A policy says how a sort runs: the algorithm, the radix bits of a digit pass, the work-group size,
the items each work-item ranks, and how many blocks per compute unit the reduce-then-scan passes use.
:func:`plan_sort` is a pure function of (device profile, key codec, value size, n, overrides);
:func:`validate` checks a policy against the device before anything is rendered.
"""

from dataclasses import dataclass, replace

ALGORITHMS = ("reduce_then_scan",)
RADIX_BITS = (2, 4, 8)


class PolicyError(ValueError):
    """A policy that cannot run on a device; the message names the device and the limit."""


@dataclass(frozen=True)
class SortPolicy:
    algorithm: str
    radix_bits: int
    wg_size: int
    items_per_thread: int
    blocks_per_cu: int

    @property
    def tile(self):
        return self.wg_size * self.items_per_thread

    @property
    def radix(self):
        return 1 << self.radix_bits

    def local_bytes(self, key_bytes, index_bytes):
        """Local memory of the largest kernel (rts_scatter) under this policy."""
        sub = 1 << min(self.radix_bits, 4)
        return (self.tile * (key_bytes + 2)      # keys of the tile + their source positions
                + sub * self.wg_size * 4         # split counters
                + self.wg_size * 4               # scan scratch
                + self.radix * (8 + index_bytes))  # run starts/ends + running offsets


# Built-in defaults, by device type. Each entry says where it came from.
_DEFAULTS = {
    # PoCL 3.0 on a 2-core AMD EPYC, u32 2^22 keys: radix 8 / wg 128 / ipt 8 was the fastest of
    # radix {2,4,8} x wg {64,128,256} x ipt {4,8,16} (BENCHMARKS.md, "planner defaults").
    "cpu": SortPolicy("reduce_then_scan", radix_bits=8, wg_size=128, items_per_thread=8,
                      blocks_per_cu=4),
    # Portable GPU default (48 KiB local memory is enough for 64-bit keys and indices).
    "gpu": SortPolicy("reduce_then_scan", radix_bits=8, wg_size=256, items_per_thread=4,
                      blocks_per_cu=8),
}


def plan_sort(profile, codec, value_bytes, n, **overrides):
    """The policy for sorting ``n`` keys of ``codec`` (with values of ``value_bytes`` or None).

    Keyword overrides (``radix_bits``, ``wg_size``, ``items_per_thread``, ``algorithm``,
    ``blocks_per_cu``) replace the planner's choice when not None.
    """
    base = _DEFAULTS["gpu" if profile.is_gpu else "cpu"]
    fields = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(fields) - set(SortPolicy.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown policy override(s): {', '.join(sorted(unknown))}")
    policy = replace(base, **fields)
    if "wg_size" not in fields:
        policy = replace(policy, wg_size=min(policy.wg_size, _pow2_floor(profile.max_wg_size)))
    return policy


def _pow2_floor(x):
    return 1 << (max(int(x), 1).bit_length() - 1)


def validate(policy, profile, key_bytes, index_bytes):
    """Raise PolicyError (naming the device) if ``policy`` cannot run there."""
    dev = profile.describe()
    if policy.algorithm not in ALGORITHMS:
        raise PolicyError(f"unknown algorithm {policy.algorithm!r}: expected one of {ALGORITHMS}")
    if policy.radix_bits not in RADIX_BITS:
        raise PolicyError(f"radix_bits={policy.radix_bits} is not supported: expected 2, 4 or 8")
    if policy.wg_size < 1 or policy.wg_size & (policy.wg_size - 1):
        raise PolicyError(f"wg_size={policy.wg_size} must be a power of two")
    if policy.wg_size > profile.max_wg_size:
        raise PolicyError(f"wg_size={policy.wg_size} exceeds the maximum work-group size "
                          f"{profile.max_wg_size} of {dev}")
    if policy.items_per_thread < 1:
        raise PolicyError(f"items_per_thread={policy.items_per_thread} must be at least 1")
    if policy.tile > 65536:
        raise PolicyError(f"tile of {policy.tile} keys (wg_size x items_per_thread) exceeds 65536")
    if policy.blocks_per_cu < 1:
        raise PolicyError(f"blocks_per_cu={policy.blocks_per_cu} must be at least 1")
    need = policy.local_bytes(key_bytes, index_bytes)
    if need > profile.local_mem_bytes:
        raise PolicyError(f"too little local memory on {dev}: {policy} needs {need} bytes for "
                          f"{key_bytes}-byte keys, the device has {profile.local_mem_bytes}")
