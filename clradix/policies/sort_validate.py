"""Whether a sort policy can run on a device: :func:`validate` raises PolicyError naming the
device and what it lacks, before anything is rendered. Pure: reads the device profile only."""

from ..core.errors import PolicyError
from .fit import ranking_backends
from .sort import ALGORITHMS, ONESWEEP_PORTION, RANKINGS, check_radix_bits


def validate(policy, profile, key_bytes, index_bytes, value_bytes=0, n_keys=None):
    """Raise PolicyError (naming the device) if ``policy`` cannot run there."""
    dev = profile.describe()
    if policy.ranks_by_subgroups:
        _validate_onesweep(policy, profile)   # (os_small ranks as onesweep does)
    if policy.algorithm not in ALGORITHMS:
        raise PolicyError(f"unknown algorithm {policy.algorithm!r}: expected one of {ALGORITHMS}")
    check_radix_bits(policy.algorithm, policy.radix_bits)
    if policy.algorithm == "chunks" and policy.wg_size != 1:
        raise PolicyError(f"the chunks algorithm runs one work-item per work-group: "
                          f"wg_size={policy.wg_size} must be 1")
    if policy.bucket_keys and policy.algorithm != "chunks":
        raise PolicyError(f"bucket_keys is a chunks option, not one of {policy.algorithm}")
    if policy.bucket_keys < 0:
        raise PolicyError(f"bucket_keys={policy.bucket_keys} must be 0 (no buckets) or more")
    if policy.wg_size < 1 or (policy.wg_size & (policy.wg_size - 1)
                              and not (policy.algorithm == "onesweep"
                                       and policy.wg_size % policy.sg_size == 0)):
        # (onesweep's kernels loop over the digits and subgroups of any work-group size, as
        # 384, CUB's pass on sm90)
        raise PolicyError(f"wg_size={policy.wg_size} must be a power of two (onesweep: or a "
                          f"multiple of its subgroup width, sg_size={policy.sg_size})")
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
    if policy.algorithm == "onesweep" and not profile.runs_started_groups_to_end:
        raise PolicyError(f"the onesweep algorithm is refused on {dev}: its work-groups wait, with "
                          f"no spin limit, for work-groups that started before them (the status "
                          f"ring's claim; with fused_passes every pass's order), and this device "
                          f"is not known to run a started work-group to its end while others "
                          f"wait (DeviceProfile.runs_started_groups_to_end; docs/guarantees.md, "
                          f"\"No hang\"); use algorithm=\"reduce_then_scan\"")
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
