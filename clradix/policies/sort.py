"""Sort policies (plain frozen values), their built-in defaults, and the pure sort planner.

A policy says how a sort runs: the algorithm, the radix bits of a digit pass, the work-group size,
the items each work-item ranks, and how many blocks per compute unit the reduce-then-scan passes use.
:func:`plan_sort` is a pure function of (device profile, key codec, value size, n, overrides);
:func:`validate` checks a policy against the device before anything is rendered.
"""

import math
import numbers
import typing
import warnings
from dataclasses import MISSING, dataclass, replace

from ..core.errors import PolicyError
from ..core.sizes import index_bytes, pow2_floor

ALGORITHMS = ("reduce_then_scan", "onesweep", "single_wg", "chunks")
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

    @property
    def tile(self):
        return self.wg_size * self.items_per_thread

    @property
    def radix(self):
        return 1 << self.radix_bits

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
        if self.algorithm == "onesweep":   # onesweep_steps.mako, tile_locals
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
    # CPUs: one work-item per chunk of at least items_per_thread keys, blocks_per_cu chunks per
    # compute unit; a pass counts each chunk's digits, then scatters each chunk, no barrier
    # (chunks.cl.mako); the digit width by size (chunk_radix_bits). 2 cores of an AMD EPYC, PoCL
    # 3.1, uint32 2^22 keys (2026-11-26): 14.6 ms against reduce-then-scan's 161.7 and numpy's
    # default np.sort 152.3; blocks_per_cu 2 / 8: 15.4 / 16.9 (BENCHMARKS.md, "The chunked CPU
    # sort").
    "cpu-chunks": SortPolicy("chunks", radix_bits=8, wg_size=1, items_per_thread=4096,
                             blocks_per_cu=4),
    # At most one tile: one work-group, one launch (split passes of 4 bits in local memory).
    "small": SortPolicy("single_wg", radix_bits=4, wg_size=256, items_per_thread=16),
    # ... on CPUs up to 16384 keys, the tile following n from 256 x 16. uint32, ms per call and
    # wait (2026-11-23, 2 cores): PoCL 2^13 / 2^14 0.70 / 0.59 against 1.36 / 2.41 with
    # reduce-then-scan's 12 launches; Intel's CPU runtime 0.31 / 0.40 against 0.35 / 0.66 (at
    # 2^12 the 256 x 16 tile: PoCL 0.31, 256 x 64 0.71). BENCHMARKS "Per-call cost on PoCL".
    "cpu-small": SortPolicy("single_wg", radix_bits=4, wg_size=256, items_per_thread=64),
    # NVIDIA: one work-group ranks 8-bit digits with onesweep's warp ballots (os_small), its tile
    # as large as local memory allows up to 256 x 32 (8192 uint32 keys, 6144 with uint32 values
    # on 48 KiB): one launch where reduce-then-scan takes 12. Untimed: the latency benchmark
    # compares it with the 4-bit split passes (--variants).
    "nvidia-single": SortPolicy("single_wg", radix_bits=8, wg_size=256, items_per_thread=32,
                                ranking="ptx", sg_size=32),
    # Portable GPU default (48 KiB local memory is enough for 64-bit keys and indices).
    "gpu": SortPolicy("reduce_then_scan", radix_bits=8, wg_size=256, items_per_thread=4,
                      blocks_per_cu=8),
    # NVIDIA OpenCL: onesweep 8-bit, warp ranking by ballots (ptx), 256 x 20 from 2^18 keys. H100,
    # driver 580.159, 2026-11-23, 2^28 keys, 256x20 / 256x16: uint32 10.46 / 11.25 ms, uint64
    # 25.22 (256x15 after the local-memory fit) / 27.58 (256x12), u32+u32 pairs 14.81 / 16.80,
    # argsort 14.49 / 16.49, float32 13.55 / 13.11; 256x24 11.31 ms at uint32 (BENCHMARKS.md,
    # "Onesweep on NVIDIA: ballots and tiles"). H200 2026-11-22, match.any ranking: 256x16 was
    # the best of 256 x {8, 12, 16, 24} (u32 13.58 ms; 256x24 14.73).
    "nvidia": SortPolicy("onesweep", radix_bits=8, wg_size=256, items_per_thread=20,
                         ranking="ptx", sg_size=32),
    # ... and below 2^18 onesweep 256x16, in one launch (os_fused, NVIDIA_FUSED_MAX). H100,
    # 2026-11-23, uint32, us per call in a stream: 2^14 46.2 (7-launch onesweep 125.7,
    # reduce-then-scan with fused_scan 134.7), 2^16 50.9 (98.3, 128.3); BENCHMARKS.md,
    # "Per-call cost: onesweep in one launch".
    "nvidia-small": SortPolicy("onesweep", radix_bits=8, wg_size=256, items_per_thread=16,
                               ranking="ptx", sg_size=32),
}
# NVIDIA's OpenCL runtime spends about 10 us of host time on every enqueued command (H100, driver
# 580.159, 2026-11-23: 8 chained empty kernels and a wait 85 us, one 15.5 us), so below this many
# keys the onesweep passes run as one launch (os_fused) after one fill: 2 commands instead of 7.
# At 2^22 the seven launches were faster (stream 212 us against 236: a pass's tiles wait for the
# whole pass before them), at 2^20 the one launch (85.7 against 115.2); 2^21 lies between, unmeasured.
NVIDIA_FUSED_MAX = 1 << 21


# NVIDIA: the onesweep passes of keys of up to 4 bytes are built for at most this many registers
# a work-item (-cl-nv-maxrregcount; the kernels then carry no reqd_work_group_size, which would
# make the compiler ignore the cap): 4 work-groups of 256 a multiprocessor instead of 3 at 80.
# H200, driver 580.159, 2^28 keys at 256 x 20: uint32 9.50 ms against 9.85 uncapped, float32 9.63
# against 10.35, u32+u32 pairs 12.62 against 14.11 (56 and 72 slower; 64-bit keys already use
# 64 at 256 x 11); BENCHMARKS.md, "The register cap".
NVIDIA_REGISTER_CAP = 64


# The fields the chunks algorithm takes (others set without an algorithm plan a work-group one).
_CHUNK_FIELDS = {"radix_bits", "items_per_thread", "blocks_per_cu"}

# The type of each SortPolicy field, and the accepted values of the enum-like string fields.
_FIELD_TYPES = typing.get_type_hints(SortPolicy)
_CHOICES = {"algorithm": ALGORITHMS, "ranking": RANKINGS}


def check_field(name, value):
    """Raise TypeError or ValueError naming the SortPolicy field, the value and what the field
    accepts if ``value`` is not one of its values (int fields take ints, not bool, float or str;
    the enum-like fields one of their strings). Ranges are :func:`validate`'s job."""
    if name not in _FIELD_TYPES:
        raise TypeError(f"unknown policy field {name!r}: policy fields are "
                        f"{', '.join(_FIELD_TYPES)}")
    kind = _FIELD_TYPES[name]
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
    naming a missing, unknown or ill-typed field. Ranges are :func:`validate`'s job."""
    if not isinstance(fields, dict):
        raise TypeError(f"expected an object of policy fields, got {type(fields).__name__}")
    for name, value in fields.items():
        check_field(name, value)
    missing = [f.name for f in SortPolicy.__dataclass_fields__.values()
               if f.name not in fields and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise TypeError(f"missing policy field(s): {', '.join(missing)}")
    return SortPolicy(**fields)


def plan_sort(profile, codec, value_bytes, n, tuned=None, **overrides):
    """The policy for sorting ``n`` keys of ``codec`` (with values of ``value_bytes`` or None).

    ``tuned`` is an autotuned table ``{(dtype name, log2 n): SortPolicy}`` for this device (see
    tuning.py): without overrides, its entry for the nearest size class wins when it fits.
    Keyword overrides (any SortPolicy field) replace the planner's choice when not None.
    A tuned policy that cannot run here is skipped with a RuntimeWarning naming its entry and why.
    """
    check_sort_overrides(overrides)
    if tuned and not any(v is not None for v in overrides.values()):
        picked = _tuned_policy(profile, codec, value_bytes, n, tuned)
        if picked is not None:
            return picked
    base = _default_policy(profile, n)
    fields = {k: v for k, v in overrides.items() if v is not None}
    algorithm = fields.get("algorithm")
    if algorithm == "chunks":
        base = _DEFAULTS["cpu-chunks"]
    elif base.algorithm == "chunks" and (algorithm is not None or set(fields) - _CHUNK_FIELDS):
        # a work-group algorithm, or a field only those take (wg_size, ranking, ...), asked for
        # on a CPU: the CPU's work-group default
        base = _workgroup_cpu_policy(profile, n)
    # what the sizing below computes with (validate checks the rest once the policy is whole)
    if "radix_bits" in fields:
        _check_radix_bits(fields.get("algorithm", base.algorithm), fields["radix_bits"])
    if fields.get("sg_size", 1) < 1:
        raise PolicyError(f"sg_size={fields['sg_size']} must be at least 1")
    small = _small_policy(profile, codec, value_bytes, fields)
    if small is not None and n <= small.tile and base.algorithm != "chunks" and not (
            {"algorithm", "radix_bits", "wg_size", "items_per_thread"} & set(fields)):
        # no larger tile than n needs: os_small ranks every slot of its tile (H100, 2^10 uint32
        # keys: 256 x 32 took about 30 us of device time per call), and the 4-bit passes scan it
        ipt = 4 if small.radix_bits == 8 else min(16, small.items_per_thread)
        while ipt * small.wg_size < n and ipt < small.items_per_thread:
            ipt *= 2
        small = replace(small, items_per_thread=min(ipt, small.items_per_thread))
        return small
    if fields.get("algorithm") == "single_wg":
        return small or replace(_DEFAULTS["small"], **fields)
    policy = replace(base, **fields)
    if policy.algorithm == "chunks" and "radix_bits" not in fields:
        policy = replace(policy, radix_bits=chunk_radix_bits(codec.itemsize, n))
    if (policy.algorithm == "onesweep" and "ranking" not in fields
            and policy.ranking not in ranking_backends(profile)):
        policy = _best_ranking(policy, profile)
    if "wg_size" not in fields:
        policy = _clamp_wg(policy, profile)
    if "items_per_thread" not in fields:
        kb, ib = codec.itemsize, index_bytes(n)
        policy = _shrink_items(policy, lambda pol: pol.local_bytes(kb, ib, value_bytes or 0),
                               profile.local_mem_bytes, lambda ipt: ipt * 3 // 4)
    if (profile.is_gpu and profile.is_nvidia and policy.algorithm == "onesweep"
            and "fused_passes" not in fields and n <= NVIDIA_FUSED_MAX
            and ("ring_slots" not in fields or policy.ring_slots * policy.tile >= n)):
        policy = replace(policy, fused_passes=True)
    if (profile.is_gpu and profile.is_nvidia and policy.algorithm == "onesweep"
            and not policy.fused_passes and "max_registers" not in fields
            and codec.itemsize <= 4):
        policy = replace(policy, max_registers=NVIDIA_REGISTER_CAP)
    if policy.fused_passes and "ring_slots" not in fields:
        # the rings hold every tile of a pass (os_fused reuses no slot)
        tiles = -(-n // policy.tile)
        policy = replace(policy, ring_slots=max(policy.ring_slots, 1 << (tiles - 1).bit_length()))
    return policy


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


def _default_policy(profile, n):
    """The built-in defaults table's entry for this device and size."""
    if profile.is_gpu and profile.is_nvidia:
        return _DEFAULTS["nvidia" if n >= (1 << 18) else "nvidia-small"]
    if profile.is_gpu:
        return _DEFAULTS["gpu"]
    if profile.is_cpu:
        return _DEFAULTS["cpu-chunks"]
    return _workgroup_cpu_policy(profile, n)


def chunk_radix_bits(key_bytes, n):
    """The chunked CPU sort's digit width: 11 bits (3 passes for 32-bit keys instead of 4) where
    the keys fit the caches easily (up to 4 MiB) or not at all (from 32 MiB), 8 between, where
    2048 scatter destinations per chunk cost more than a pass; 64-bit keys 8 (unmeasured).
    Measured on 2 cores of an AMD EPYC, PoCL 3.1 and 3.0-rc2 and Intel's CPU runtime, uint32 and
    float32, 2^18 to 2^24 keys, median of 7 (2026-11-26, BENCHMARKS.md "The chunked CPU sort"):
    11 bits faster at 2^18-2^20 (2^20 uint32, PoCL 3.1: 3.80 against 7.37 ms) and from 2^23
    (2^24: 107.9 against 133.5), 8 bits at 2^21-2^22 (2^22: 18.3 against 25.8)."""
    if key_bytes > 4:
        return 8
    nbytes = n * key_bytes
    return 11 if nbytes <= 4 << 20 or nbytes >= 32 << 20 else 8


def _workgroup_cpu_policy(profile, n):
    """The work-group algorithms' entry for a CPU (or an accelerator): the one that takes
    work-group fields (wg_size, ranking, ...) when a caller sets them."""
    if ranking_backends(profile)[0] != "local":
        # below 2^18 keys the "cpu" entry: timed round-robin (python -m clradix autotune, three
        # runs of 15-25 repeats at 2^16, u32 and f32) reduce-then-scan 8-bit 256x16 was within
        # 1.02x of the best in all six rows, onesweep 4-bit 128x16 intel 1.05-1.14x and the
        # "cpu-subgroups" entry 1.27-1.42x
        return _DEFAULTS["cpu-subgroups" if n >= (1 << 18) else "cpu"]
    return _DEFAULTS["cpu"]


def _pick_tuned(table, dtype, n):
    """(key, policy) of the tuned entry for the size class nearest to n (in log2), or None."""
    lg = math.log2(max(n, 1))
    cands = [(abs(k - lg), k) for (dt, k) in table if dt == str(dtype)]
    if not cands:
        return None
    key = (str(dtype), min(cands)[1])
    return key, table[key]


def _small_policy(profile, codec, value_bytes, fields):
    """The one-work-group policy for this device and key (None if not even 256 keys fit): 8-bit
    digits ranked as onesweep does on NVIDIA GPUs (the largest items_per_thread that fits), else
    4-bit split passes (items_per_thread halved until it fits)."""
    nvidia = "ptx" in ranking_backends(profile)
    name = "nvidia-single" if nvidia else "small" if profile.is_gpu else "cpu-small"
    pol = replace(_DEFAULTS[name], **{k: v for k, v in fields.items() if k != "algorithm"})
    if pol.radix_bits == 8 and "ranking" not in fields:
        pol = _best_ranking(pol, profile)
    if "wg_size" not in fields:
        pol = _clamp_wg(pol, profile)
    vb = value_bytes or 0
    # (os_small's tile is sized up to the limit: leave the compiler a little local memory)
    margin = 1024 if pol.radix_bits == 8 else 0
    pol = _shrink_items(pol, lambda p: p.local_bytes(codec.itemsize, 4, vb) + margin,
                        profile.local_mem_bytes,
                        (lambda ipt: ipt - 1) if pol.radix_bits == 8 else (lambda ipt: ipt // 2))
    return pol if pol.tile >= 256 else None


def sg_size_of(ranking):
    """The subgroup width a ranking back-end assumes: warps of 32 (ptx; local's virtual
    subgroups), else the 16 that cl_intel_required_subgroup_size asks for."""
    return 32 if ranking in ("ptx", "local") else 16


def _best_ranking(policy, profile):
    """``policy`` with the device's best ranking back-end and the subgroup width it assumes."""
    best = ranking_backends(profile)[0]
    return replace(policy, ranking=best, sg_size=sg_size_of(best))


def _clamp_wg(policy, profile):
    """``policy`` with its work-group no larger than the device's (a power of two)."""
    return replace(policy, wg_size=min(policy.wg_size, pow2_floor(profile.max_wg_size)))


def _shrink_items(policy, need, limit, step):
    """``policy`` with items_per_thread lowered by ``step`` until ``need(policy)`` (bytes of local
    memory) is at most ``limit``, or one item is left."""
    while policy.items_per_thread > 1 and need(policy) > limit:
        policy = replace(policy, items_per_thread=step(policy.items_per_thread))
    return policy


def _check_radix_bits(algorithm, radix_bits):
    """PolicyError unless ``algorithm`` takes digits of ``radix_bits``."""
    if radix_bits not in (CHUNK_RADIX_BITS if algorithm == "chunks" else RADIX_BITS):
        raise PolicyError(_radix_bits_message(radix_bits))


def validate(policy, profile, key_bytes, index_bytes, value_bytes=0, n_keys=None):
    """Raise PolicyError (naming the device) if ``policy`` cannot run there."""
    dev = profile.describe()
    if policy.algorithm == "onesweep" or (policy.algorithm == "single_wg"
                                          and policy.radix_bits == 8):
        _validate_onesweep(policy, profile)   # (os_small ranks as onesweep does)
    if policy.algorithm not in ALGORITHMS:
        raise PolicyError(f"unknown algorithm {policy.algorithm!r}: expected one of {ALGORITHMS}")
    _check_radix_bits(policy.algorithm, policy.radix_bits)
    if policy.algorithm == "chunks" and policy.wg_size != 1:
        raise PolicyError(f"the chunks algorithm runs one work-item per work-group: "
                          f"wg_size={policy.wg_size} must be 1")
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
    if policy.max_registers < 0:
        raise PolicyError(f"max_registers={policy.max_registers} must be 0 (the compiler's choice) "
                          f"or more")
    need = policy.local_bytes(key_bytes, index_bytes, value_bytes)
    if policy.algorithm == "single_wg" and n_keys is not None and n_keys > policy.tile:
        raise PolicyError(f"single_wg sorts at most one tile ({policy.tile} keys), not {n_keys}")
    if policy.fused_passes and policy.algorithm != "onesweep":
        raise PolicyError(f"fused_passes is a onesweep option, not one of {policy.algorithm}")
    if policy.fused_passes and not profile.finishes_fused_waits:
        raise PolicyError(f"fused_passes is refused on {dev}: os_fused's work-groups wait for "
                          f"earlier passes inside one launch, and such waits did not always "
                          f"finish there (DeviceProfile.finishes_fused_waits; docs/guarantees.md, "
                          f"\"No hang\"); sort with fused_passes=False (the planner's choice "
                          f"there)")
    if policy.fused_passes and n_keys is not None and n_keys > policy.ring_slots * policy.tile:
        raise PolicyError(f"fused_passes sorts at most ring_slots x tile = {policy.ring_slots} x "
                          f"{policy.tile} keys (its rings hold every tile of a pass: no slot is "
                          f"reused), not {n_keys}")
    if policy.fused_passes and n_keys is not None and n_keys > ONESWEEP_PORTION:
        raise PolicyError(f"fused_passes sorts at most {ONESWEEP_PORTION} keys in its one launch "
                          f"(29-bit look-back counts), not {n_keys}")
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


def _radix_bits_message(radix_bits):
    return (f"radix_bits={radix_bits} is not supported: expected 2, 4 or 8 (the chunks "
            f"algorithm: {', '.join(map(str, CHUNK_RADIX_BITS))})")


def ranking_backends(profile):
    """The subgroup ranking back-ends ``profile`` supports, best first ("local" always works)."""
    out = []
    if profile.has_ptx:
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
    if policy.spin_limit < 0:
        raise PolicyError(f"spin_limit={policy.spin_limit} must be at least 0")
    if policy.tile >= 1 << 16:
        raise PolicyError(f"onesweep's tile of {policy.tile} keys (wg_size x items_per_thread) "
                          f"must be below 65536: a key's rank shares a 32-bit word with its digit")
    if policy.lookback < 1 or policy.lookback + 1 > policy.ring_slots:
        raise PolicyError(f"ring_slots={policy.ring_slots} must be at least lookback "
                          f"({policy.lookback}) + 1")
