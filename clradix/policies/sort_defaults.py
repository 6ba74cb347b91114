"""The sort policy's built-in defaults per device, and the constants the sort planner sizes by.

Each entry is the fastest measured on the device type it names; the measurements behind every
entry and constant are in BENCHMARKS_NOTES.md ("The sort defaults: where each value came from").
The planner (clradix.planning.sort_plan) fits an entry to the device (ranking back-end, work-group size,
local memory) and the caller's overrides.
"""

from typing import Dict

from .fit import ranking_backends
from .sort import (ChunksPolicy, OnesweepPolicy, ReduceThenScanPolicy, SingleGroupPolicy,
                   SortPolicy)

DEFAULTS: Dict[str, SortPolicy] = {
    # CPUs without subgroups (PoCL), work-group algorithms: reduce-then-scan, whose passes need
    # no subgroup primitives; 8-bit digits take the fewest passes.
    "cpu": ReduceThenScanPolicy(radix_bits=8, wg_size=256, items_per_thread=16,
                                blocks_per_cu=4),
    # CPUs with real subgroups (Intel's runtime), from 2^18 keys: onesweep, ranked with
    # cl_intel_subgroups shuffles (faster there than the khr ballots, although listed after them).
    "cpu-subgroups": OnesweepPolicy(radix_bits=8, wg_size=256, items_per_thread=16,
                                    ranking="intel", sg_size=16),
    # CPUs: one work-item per chunk of at least items_per_thread keys, blocks_per_cu chunks per
    # compute unit; a pass counts each chunk's digits, then scatters each chunk, no barrier
    # (chunks.cl.mako). The planner adds the buckets (bucket_fields); without them the digit
    # width follows the size (chunk_radix_bits).
    "cpu-chunks": ChunksPolicy(radix_bits=8, wg_size=1, items_per_thread=4096,
                               blocks_per_cu=4),
    # At most one tile: one work-group, one launch (split passes of 4 bits in local memory).
    "small": SingleGroupPolicy(radix_bits=4, wg_size=256, items_per_thread=16),
    # ... on CPUs up to 16384 keys (the tile follows n from 256 x 16): one launch where
    # reduce-then-scan takes 12.
    "cpu-small": SingleGroupPolicy(radix_bits=4, wg_size=256, items_per_thread=64),
    # NVIDIA: one work-group ranks 8-bit digits with onesweep's warp ballots (os_small), its tile
    # as large as local memory allows up to 256 x 32 (8192 uint32 keys, 6144 with uint32 values
    # on 48 KiB): one launch where reduce-then-scan takes 12.
    "nvidia-single": SingleGroupPolicy(radix_bits=8, wg_size=256, items_per_thread=32,
                                       ranking="ptx", sg_size=32),
    # Portable GPU default (48 KiB local memory is enough for 64-bit keys and indices).
    "gpu": ReduceThenScanPolicy(radix_bits=8, wg_size=256, items_per_thread=4,
                                blocks_per_cu=8),
    # NVIDIA from 2^18 keys: onesweep, 8-bit digits, warp ranking by ballots (ptx), 256 x 20
    # (items_per_thread lowered to fit local memory for wider keys) up to NVIDIA_FUSED_MAX, in
    # one launch; beyond it the passes take NVIDIA_PASS_TILES.
    "nvidia": OnesweepPolicy(radix_bits=8, wg_size=256, items_per_thread=20,
                             ranking="ptx", sg_size=32),
    # ... and below 2^18 keys onesweep 256x16, up to NVIDIA_FUSED_MAX in one launch (os_fused).
    "nvidia-small": OnesweepPolicy(radix_bits=8, wg_size=256, items_per_thread=16,
                                   ranking="ptx", sg_size=32),
}

# From this many keys NVIDIA GPUs take the "nvidia" entry, below it "nvidia-small"; CPUs with
# subgroups take "cpu-subgroups" for their work-group sorts, below it "cpu".
LARGE_SORT = 1 << 18

# NVIDIA's OpenCL runtime spends about 10 us of host time on every enqueued command, so up to
# this many keys the onesweep passes run as one launch (os_fused): 1 command (its counters a
# block the queue keeps zero) instead of 7. Beyond it the seven launches are faster (in one
# launch a pass's tiles wait for the whole pass before them).
NVIDIA_FUSED_MAX = 1 << 21

# NVIDIA, os_fused below LARGE_SORT: items per work-item by the keys' number (at most this
# many keys: this many items), so that a pass has tiles enough for the SMs; the one launch's
# passes wait for each other, and a pass of few large tiles takes the time of one tile
# (BENCHMARKS_NOTES.md, "os_fused's tile at the one-launch sizes": 2^14 uint32 keys 31.6 us at
# 256 x 4 against 40.2 at 256 x 16, 2^16 40.7 at 256 x 12 against 43.4).
NVIDIA_FUSED_SMALL_ITEMS = ((1 << 14, 4), (1 << 15, 8), (LARGE_SORT - 1, 12))


def nvidia_fused_items(n):
    """os_fused's items per work-item for n keys below LARGE_SORT (None from it: the entry's)."""
    for most, items in NVIDIA_FUSED_SMALL_ITEMS:
        if n <= most:
            return items
    return None


# NVIDIA, onesweep in separate launches (beyond NVIDIA_FUSED_MAX): the pass's work-group, tile
# (items per work-item) and register cap (-cl-nv-maxrregcount; 0: the compiler's choice) by key
# width, whether the keys are floating-point and whether values travel with them. A capped pass
# is a program of its own, without reqd_work_group_size (which would make the compiler ignore the
# cap; core/limits.py, capped_wg_limit, says what such a kernel can run); os_histogram and os_bins
# are built beside it without the cap, 256 work-items a group (drivers/onesweep.py, builds), so
# the pass may take any multiple of 32 work-items. Each entry is the fastest of the shapes timed
# side by side with CUB (BENCHMARKS.md, "The onesweep pass's shape"): the fixed costs of a tile
# (its id, the claim, the barriers, the look-back's round trips) weigh more than a few spilled
# registers, and spill-free shapes (512 x 15 for 32-bit keys, 512 x 10 for 64-bit ones) were
# slower. Float keys hold more values live (the order transform), so their tile is smaller.
NVIDIA_PASS_TILES = {
    (4, False, False): (384, 24, 56),   # integer keys of up to 4 bytes
    (4, False, True): (384, 20, 56),    # floating-point keys of up to 4 bytes
    (4, True, False): (512, 15, 64),    # ... with values (argsort's indices are values)
    (4, True, True): (512, 15, 64),
    (8, False, False): (256, 16, 64),   # 64-bit keys
    (8, False, True): (256, 16, 64),
}


def nvidia_pass_tile(key_bytes, value_bytes, float_keys):
    """(wg_size, items_per_thread, max_registers) of NVIDIA's onesweep passes, or None: the
    defaults."""
    return NVIDIA_PASS_TILES.get((4 if key_bytes <= 4 else key_bytes, bool(value_bytes),
                                  bool(float_keys)))


def chunk_radix_bits(key_bytes, n):
    """The chunked CPU sort's digit width: 11 bits (3 passes for 32-bit keys instead of 4) where
    the keys fit the caches easily (up to 4 MiB) or not at all (from 32 MiB), 8 between, where
    2048 scatter destinations per chunk cost more than a pass saves; 64-bit keys 8."""
    if key_bytes > 4:
        return 8
    nbytes = n * key_bytes
    return 11 if nbytes <= 4 << 20 or nbytes >= 32 << 20 else 8


# The chunked sort's buckets (a chunks policy's bucket_keys: one pass by a bucket chosen from a
# sample of the keys, then each bucket sorted by a work-item of its own): a bucket is sorted
# within the cache when it takes at most BUCKET_BYTES (keys and values), half of a Zen 4 core's
# 1 MiB L2 cache (with its place in the other buffer, the whole of it); a larger one is split by
# its next 8 bits first. 512 KiB rather than 256: at 2^24 keys, whose 256 buckets average 256
# KiB, 256 would split half of them (BENCHMARKS_NOTES.md, "the bucket sort's buckets by the
# keys' distribution"). Faster than the LSD passes at every size measured from 2^10 to 2^24
# keys of 2 to 8 bytes, skewed keys included (BENCHMARKS_NOTES.md, "the bucket sort on CPUs").
BUCKET_BYTES = 512 << 10
# The top digit 11 bits (2048 buckets) from this many bytes of keys and values: 256 buckets of
# 256 KiB and more.
WIDE_TOP_BYTES = 64 << 20


def bucket_fields(key_bytes, value_bytes, n):
    """(radix_bits, bucket_keys) of the chunked sort for these keys: the top digit 8 bits, 11
    beyond WIDE_TOP_BYTES of keys and values; bucket_keys 0 (the LSD passes) for 1-byte keys,
    which the top digit sorts alone."""
    per_key = key_bytes + (value_bytes or 0)
    if key_bytes < 2:
        return chunk_radix_bits(key_bytes, n), 0
    return (11 if n * per_key > WIDE_TOP_BYTES else 8), max(1, BUCKET_BYTES // per_key)


def default_policy(profile, n):
    """The defaults table's entry for this device and size."""
    if profile.is_gpu and profile.is_nvidia:
        return DEFAULTS["nvidia" if n >= LARGE_SORT else "nvidia-small"]
    if profile.is_gpu:
        return DEFAULTS["gpu"]
    if profile.is_cpu:
        return DEFAULTS["cpu-chunks"]
    return workgroup_cpu_policy(profile, n)


def workgroup_cpu_policy(profile, n):
    """The work-group algorithms' entry for a CPU (or an accelerator): the one that takes
    work-group fields (wg_size, ranking, ...) when a caller sets them. Below LARGE_SORT keys
    "cpu" even where the device has subgroups: reduce-then-scan was the fastest there."""
    if ranking_backends(profile)[0] != "local" and n >= LARGE_SORT:
        return DEFAULTS["cpu-subgroups"]
    return DEFAULTS["cpu"]


def small_policy_entry(profile):
    """The one-work-group entry: 8-bit digits ranked with warp ballots where the device has them
    (NVIDIA), else 4-bit split passes."""
    if "ptx" in ranking_backends(profile):
        return DEFAULTS["nvidia-single"]
    return DEFAULTS["small" if profile.is_gpu else "cpu-small"]
