"""Policies (plain frozen values) and the planner that picks one per device, dtype and size.

A policy says how a sort runs: the algorithm, the radix bits of a digit pass, the work-group size,
the items each work-item ranks, and how many blocks per compute unit the reduce-then-scan passes use.
:func:`plan_sort` is a pure function of (device profile, key codec, value size, n, overrides);
:func:`validate` checks a policy against the device before anything is rendered.
"""

import math
from dataclasses import dataclass, replace

ALGORITHMS = ("reduce_then_scan", "onesweep", "single_wg")
RADIX_BITS = (2, 4, 8)
RANKINGS = ("local", "ptx", "khr", "intel")
# Onesweep's look-back words hold 29-bit counts: larger sorts run in portions of this many keys.
ONESWEEP_PORTION = 1 << 28


class PolicyError(ValueError):
    """A policy that cannot run on a device; the message names the device and the limit."""


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
    ring_guard: str = "flags"     # onesweep: how a tile knows its ring slot is free ("flags": the
    #                               readers' done words; "tail": seed 001's in-order tail counter)
    tail_bits: int = 4            # onesweep, ring_guard="tail": out-of-order slack of the tail
    max_registers: int = 0        # NVIDIA only: -cl-nv-maxrregcount (0: the compiler's choice)
    force_fallback: bool = False  # onesweep, debugging: always fall back (never read the ring)

    @property
    def tile(self):
        return self.wg_size * self.items_per_thread

    @property
    def radix(self):
        return 1 << self.radix_bits

    def local_bytes(self, key_bytes, index_bytes, value_bytes=0):
        """Local memory of the largest kernel under this policy."""
        if self.algorithm == "single_wg":
            sub = 1 << min(self.radix_bits, 4)
            return self.tile * (key_bytes + 2) + sub * self.wg_size * 4 + self.wg_size * 4
        if self.algorithm == "onesweep":
            return (self.tile * max(key_bytes, value_bytes or 0)   # staging of keys, then values
                    + (self.wg_size // self.sg_size) * self.radix * 4  # per-subgroup counters
                    + self.wg_size * 8                             # scan + match scratch
                    + self.radix * (16 + 2 * index_bytes) + 16)    # digit tables
        sub = 1 << min(self.radix_bits, 4)
        return (self.tile * (key_bytes + 2)      # keys of the tile + their source positions
                + sub * self.wg_size * 4         # split counters
                + self.wg_size * 4               # scan scratch
                + self.radix * (8 + index_bytes))  # run starts/ends + running offsets


# Built-in defaults, by device type. Each entry says where it came from.
_DEFAULTS = {
    # PoCL 3.1 on a 2-core AMD EPYC, u32 2^22 keys: radix 8 / wg 256 / ipt 16 took 155 ms, the
    # fastest of radix {2,4,8} x wg {64,128,256} x ipt {4,8,16} (8/128/8: 207 ms; best 4-bit:
    # 206 ms; best 2-bit: 427 ms). Onesweep with emulated ranking: 213 vs 169 ms (BENCHMARKS.md).
    "cpu": SortPolicy("reduce_then_scan", radix_bits=8, wg_size=256, items_per_thread=16,
                      blocks_per_cu=4),
    # A CPU runtime with real subgroups (Intel's, 2 cores of an AMD EPYC): onesweep beats
    # reduce-then-scan (u32 2^22: 78 vs 128 ms), and cl_intel_subgroups shuffle ranking beats the
    # khr ballot one (autotune, 7 repeats, 2^20 u32: 22.7 vs 36.5 ms; f32: 23.4 vs 39.5 ms;
    # BENCHMARKS.md, "Planner").
    "cpu-subgroups": SortPolicy("onesweep", radix_bits=8, wg_size=256, items_per_thread=16,
                                ranking="intel", sg_size=16),
    # At most one tile: one work-group, one launch (split passes of 4 bits in local memory).
    "small": SortPolicy("single_wg", radix_bits=4, wg_size=256, items_per_thread=16),
    # Portable GPU default (48 KiB local memory is enough for 64-bit keys and indices).
    "gpu": SortPolicy("reduce_then_scan", radix_bits=8, wg_size=256, items_per_thread=4,
                      blocks_per_cu=8),
    # NVIDIA H200 OpenCL: onesweep 8-bit 256x16 with the warp-match (ptx) ranking from 2^18 keys
    # (u32 2^28: 13.58 ms; local ranking 14.32, 256x12 13.76, 256x24 14.73, 256x8 17.52;
    # benchmarks/gpu_sort.py, 2026-11-22, BENCHMARKS.md "GPU"); after the two-ring change the
    # paired autotune found it the best of every candidate at u32/f32 2^20-2^28 (u32 2^28 11.72 ms)
    "nvidia": SortPolicy("onesweep", radix_bits=8, wg_size=256, items_per_thread=16,
                         ranking="ptx", sg_size=32),
    # ... and below 2^18 reduce-then-scan 8-bit 256x16 (fewer launches): u32 2^16 0.264 ms,
    # onesweep 0.274-0.398 ms; f32 0.262 vs 0.291-0.321 ms.
    "nvidia-small": SortPolicy("reduce_then_scan", radix_bits=8, wg_size=256,
                               items_per_thread=16, blocks_per_cu=8),
}


def plan_sort(profile, codec, value_bytes, n, tuned=None, **overrides):
    """The policy for sorting ``n`` keys of ``codec`` (with values of ``value_bytes`` or None).

    ``tuned`` is an autotuned table ``{(dtype name, log2 n): SortPolicy}`` for this device (see
    tuning.py): without overrides, its entry for the nearest size class wins when it fits.
    Keyword overrides (any SortPolicy field) replace the planner's choice when not None.
    """
    if tuned and not any(v is not None for v in overrides.values()):
        pol = _pick_tuned(tuned, codec.dtype, n)
        if pol is not None:
            try:
                validate(pol, profile, codec.itemsize, 8 if n >= (1 << 31) else 4,
                         value_bytes or 0, n)
                return pol
            except PolicyError:
                pass
    if profile.is_gpu and profile.is_nvidia:
        base = _DEFAULTS["nvidia" if n >= (1 << 18) else "nvidia-small"]
    elif profile.is_gpu:
        base = _DEFAULTS["gpu"]
    elif ranking_backends(profile)[0] != "local":
        # below 2^18 keys the "cpu" entry: timed round-robin (python -m clradix autotune, three
        # runs of 15-25 repeats at 2^16, u32 and f32) reduce-then-scan 8-bit 256x16 was within
        # 1.02x of the best in all six rows, onesweep 4-bit 128x16 intel 1.05-1.14x and the
        # "cpu-subgroups" entry 1.27-1.42x
        base = _DEFAULTS["cpu-subgroups" if n >= (1 << 18) else "cpu"]
    else:
        base = _DEFAULTS["cpu"]
    fields = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(fields) - set(SortPolicy.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown policy override(s): {', '.join(sorted(unknown))}")
    small = _small_policy(profile, codec, value_bytes, fields)
    if small is not None and n <= small.tile and not (
            {"algorithm", "radix_bits", "wg_size", "items_per_thread"} & set(fields)):
        return small
    if fields.get("algorithm") == "single_wg":
        return small or replace(_DEFAULTS["small"], **fields)
    policy = replace(base, **fields)
    if (policy.algorithm == "onesweep" and "ranking" not in fields
            and policy.ranking not in ranking_backends(profile)):
        best = ranking_backends(profile)[0]
        policy = replace(policy, ranking=best,
                         sg_size=32 if best in ("ptx", "local") else 16)
    if "wg_size" not in fields:
        policy = replace(policy, wg_size=min(policy.wg_size, _pow2_floor(profile.max_wg_size)))
    if "items_per_thread" not in fields:
        kb = codec.itemsize
        ib = 8 if n >= (1 << 31) else 4
        while (policy.items_per_thread > 1
               and policy.local_bytes(kb, ib, value_bytes or 0) > profile.local_mem_bytes):
            policy = replace(policy, items_per_thread=policy.items_per_thread * 3 // 4)
    return policy


def _pick_tuned(table, dtype, n):
    """The tuned policy for the size class nearest to n (in log2), or None."""
    lg = math.log2(max(n, 1))
    cands = [(abs(k - lg), k) for (dt, k) in table if dt == str(dtype)]
    return table[(str(dtype), min(cands)[1])] if cands else None


def _small_policy(profile, codec, value_bytes, fields):
    """The one-work-group policy for this device and key (None if not even 256 keys fit)."""
    pol = replace(_DEFAULTS["small"], **{k: v for k, v in fields.items() if k != "algorithm"})
    if "wg_size" not in fields:
        pol = replace(pol, wg_size=min(pol.wg_size, _pow2_floor(profile.max_wg_size)))
    while pol.local_bytes(codec.itemsize, 4) > profile.local_mem_bytes and pol.items_per_thread > 1:
        pol = replace(pol, items_per_thread=pol.items_per_thread // 2)
    return pol if pol.tile >= 256 else None


def _pow2_floor(x):
    return 1 << (max(int(x), 1).bit_length() - 1)


def validate(policy, profile, key_bytes, index_bytes, value_bytes=0, n_keys=None):
    """Raise PolicyError (naming the device) if ``policy`` cannot run there."""
    dev = profile.describe()
    if policy.algorithm == "onesweep":
        _validate_onesweep(policy, profile)
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
    need = policy.local_bytes(key_bytes, index_bytes, value_bytes)
    if policy.algorithm == "single_wg" and n_keys is not None and n_keys > policy.tile:
        raise PolicyError(f"single_wg sorts at most one tile ({policy.tile} keys), not {n_keys}")
    if not profile.has_int64:
        uses = [what for what, wide in (("64-bit keys", key_bytes == 8),
                                        ("64-bit indices", index_bytes == 8),
                                        ("8-byte values", value_bytes == 8)) if wide]
        uses.append("the 64-bit buffer offsets every kernel takes")
        raise PolicyError(f"{dev} lacks 64-bit integers: it is an {profile.cl_profile} device "
                          f"without cles_khr_int64, and clradix needs OpenCL C's long/ulong for "
                          f"{', '.join(uses)}")
    if need > profile.local_mem_bytes:
        raise PolicyError(f"too little local memory on {dev}: {policy} needs {need} bytes of local "
                          f"memory for {key_bytes}-byte keys, the device has "
                          f"{profile.local_mem_bytes} (CL_DEVICE_LOCAL_MEM_SIZE)")


def ranking_backends(profile):
    """The subgroup ranking back-ends ``profile`` supports, best first ("local" always works)."""
    out = []
    if profile.is_nvidia and profile.is_gpu:
        out.append("ptx")
    if profile.has_extension("cl_intel_required_subgroup_size"):
        if profile.has_extension("cl_khr_subgroup_ballot"):
            out.append("khr")
        if profile.has_extension("cl_intel_subgroups"):
            out.append("intel")
    out.append("local")
    return [r for r in out if r not in profile.disabled_rankings]


def without_ranking(profile, ranking):
    """``profile`` without the ``ranking`` back-end (used when a driver advertises what the
    back-end needs but cannot compile it)."""
    return replace(profile, disabled_rankings=profile.disabled_rankings | {ranking})


def _validate_onesweep(policy, profile):
    dev = profile.describe()
    if policy.ranking not in RANKINGS:
        raise PolicyError(f"unknown ranking back-end {policy.ranking!r}: expected one of {RANKINGS}")
    if policy.ranking not in ranking_backends(profile):
        raise PolicyError(f"ranking back-end {policy.ranking!r} is not available on {dev} "
                          f"(available: {', '.join(ranking_backends(profile))})")
    if policy.ranking == "ptx" and policy.sg_size != 32:
        raise PolicyError(f"the ptx ranking back-end needs sg_size=32 (warps), not {policy.sg_size}")
    if not 1 <= policy.sg_size <= 32 or policy.wg_size % policy.sg_size:
        raise PolicyError(f"sg_size={policy.sg_size} must divide wg_size={policy.wg_size} and be "
                          f"at most 32")
    if policy.ring_guard not in ("flags", "tail"):
        raise PolicyError(f"ring_guard={policy.ring_guard!r}: expected 'flags' or 'tail'")
    slack = (1 << policy.tail_bits) if policy.ring_guard == "tail" else 1
    if policy.lookback < 1 or policy.lookback + slack > policy.ring_slots:
        raise PolicyError(f"ring_slots={policy.ring_slots} must be at least lookback "
                          f"({policy.lookback}) + {slack}")
