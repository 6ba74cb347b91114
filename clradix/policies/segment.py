"""Segmented-sort policies (plain frozen values), their built-in defaults, and the pure segment
planner (the driver: clradix.drivers.segmented)."""

import typing
from dataclasses import dataclass, replace

from ..core.errors import PolicyError
from .fit import clamp_wg, ranking_backends, sg_size_of, shrink_items, three_quarters
from .sort import RANKINGS


@dataclass(frozen=True)
class SegmentPolicy:
    """The tuning of a segmented sort (every segment, or every row, sorted on its own). A field
    left None is the planner's choice (``plan_segments``).

    The thresholds, by segment length: up to one tile (``wg_size x items_per_thread`` keys) a
    segment is sorted in local memory by one work-group, which takes ``segments_per_group``
    consecutive segments and sorts those that fit one tile together; a longer segment of T tiles
    gets min(T, ``blocks_per_segment``) work-groups for each 8-bit digit pass (medium segments:
    one tile each; large ones: consecutive tiles each).
    """

    wg_size: typing.Optional[int] = None
    items_per_thread: typing.Optional[int] = None
    ranking: typing.Optional[str] = None        # subgroup primitives of the ranking (common.mako)
    sg_size: typing.Optional[int] = None
    blocks_per_segment: typing.Optional[int] = None
    segments_per_group: typing.Optional[int] = None  # 0: from the average length (rows: exact)
    algorithm: typing.Optional[str] = None   # "workgroups" (the fields above) or "chunks" (CPUs:
    #                                          a work-item sorts whole segments; no other field)

    @property
    def tile(self):
        return self.wg_size * self.items_per_thread

    def local_bytes(self, key_bytes, index_bytes):
        """Local memory of the larger kernel (seg_local, seg_scatter)."""
        nw = self.wg_size // self.sg_size
        return (self.tile * (key_bytes + 2)          # keys of the tile + their source slots
                + nw * 256 * 4                       # per-subgroup digit counters
                + self.wg_size * 4 * (2 if self.ranking == "local" else 1)  # scan (+ match)
                + (SEGMENTS_PER_GROUP_MAX + 1) * index_bytes + 16)  # the group's bounds


SEGMENT_ALGORITHMS = ("workgroups", "chunks")

# A work-group of seg_local takes at most this many segments (a pass by segment uses one digit).
SEGMENTS_PER_GROUP_MAX = 256

_SEGMENT_DEFAULTS = {
    # Each entry the fastest measured on its device type (BENCHMARKS_NOTES.md, "The top-k and
    # segment defaults: where each value came from").
    # NVIDIA: one work-group of 256 per tile of 4096 keys, so that a 4096-key row is one
    # work-group's tile (4 passes of 8-bit digits ranked with warp ballots); 64-bit keys shrink
    # the tile to fit 48 KiB.
    "nvidia": SegmentPolicy(256, 16, "ptx", 32, 256, 0),
    "gpu": SegmentPolicy(256, 16, None, None, 256, 0),
    # CPUs: the larger tile keeps more segment lengths in local memory (rows past a 1024-key
    # tile go through the digit passes).
    "cpu": SegmentPolicy(256, 16, None, None, 64, 0),
}


def plan_segments(profile, codec, index_bytes_, overrides=None):
    """The complete SegmentPolicy for keys of ``codec`` on ``profile``: the defaults table's entry,
    the fields of ``overrides`` (a SegmentPolicy whose None fields the planner fills) on top,
    the ranking back-end the device has, items_per_thread shrunk until the local memory holds
    the tile (unless set)."""
    fields = {}
    if overrides is not None:
        fields = {k: v for k, v in overrides.__dict__.items() if v is not None}
    key = ("nvidia" if profile.is_nvidia else "gpu") if profile.is_gpu else "cpu"
    pol = replace(_SEGMENT_DEFAULTS[key], **fields)
    if pol.algorithm is None:
        # CPUs sort whole segments per work-item unless a work-group field was set
        chunks = profile.is_cpu and not set(fields) - {"algorithm"}
        pol = replace(pol, algorithm="chunks" if chunks else "workgroups")
    if pol.algorithm not in SEGMENT_ALGORITHMS:
        raise PolicyError(f"unknown segmented-sort algorithm {pol.algorithm!r}: expected one of "
                          f"{SEGMENT_ALGORITHMS}")
    if pol.ranking is None or pol.ranking not in ranking_backends(profile):
        if "ranking" in fields:
            raise PolicyError(f"ranking back-end {pol.ranking!r} is not available on "
                              f"{profile.describe()} (available: "
                              f"{', '.join(ranking_backends(profile))})")
        pol = replace(pol, ranking=ranking_backends(profile)[0])
    if "sg_size" not in fields:
        pol = replace(pol, sg_size=sg_size_of(pol.ranking))
    if "wg_size" not in fields:
        pol = clamp_wg(pol, profile, at_least=pol.sg_size)
    if "items_per_thread" not in fields:
        pol = shrink_items(pol, lambda p: p.local_bytes(codec.itemsize, index_bytes_),
                           profile.local_mem_bytes, three_quarters)
    validate_segments(pol, profile, codec.itemsize, index_bytes_)
    return pol


def validate_segments(pol, profile, key_bytes, index_bytes_):
    """PolicyError (naming the device) unless ``pol`` can run there."""
    dev = profile.describe()
    if pol.ranking not in RANKINGS:
        raise PolicyError(f"unknown ranking back-end {pol.ranking!r}: expected one of {RANKINGS}")
    if pol.ranking == "ptx" and pol.sg_size != 32:
        raise PolicyError(f"the ptx ranking back-end needs sg_size=32 (warps), not {pol.sg_size}")
    if pol.wg_size < 1 or pol.wg_size & (pol.wg_size - 1):
        raise PolicyError(f"wg_size={pol.wg_size} must be a power of two")
    if not 1 <= pol.sg_size <= 32 or pol.wg_size % pol.sg_size:
        raise PolicyError(f"sg_size={pol.sg_size} must divide wg_size={pol.wg_size} and be at "
                          f"most 32")
    if pol.wg_size > profile.max_wg_size:
        raise PolicyError(f"wg_size={pol.wg_size} exceeds the maximum work-group size "
                          f"{profile.max_wg_size} of {dev}")
    if pol.items_per_thread < 1 or pol.tile >= 65536:
        raise PolicyError(f"items_per_thread={pol.items_per_thread}: the tile (wg_size x "
                          f"items_per_thread = {pol.tile}) must be from 1 to 65535 keys")
    if pol.blocks_per_segment < 1:
        raise PolicyError(f"blocks_per_segment={pol.blocks_per_segment} must be at least 1")
    if not 0 <= pol.segments_per_group <= SEGMENTS_PER_GROUP_MAX:
        raise PolicyError(f"segments_per_group={pol.segments_per_group} must be from 0 (the "
                          f"planner's choice) to {SEGMENTS_PER_GROUP_MAX}")
    need = pol.local_bytes(key_bytes, index_bytes_)
    if need > profile.local_mem_bytes:
        raise PolicyError(f"too little local memory on {dev}: {pol} needs {need} bytes for "
                          f"{key_bytes}-byte keys, the device has {profile.local_mem_bytes} "
                          f"(CL_DEVICE_LOCAL_MEM_SIZE)")
