"""What a device offers a policy, and the rules that fit a policy to it.

The subgroup ranking back-ends a device profile supports (probed from its extensions, best first)
and the subgroup width each assumes; the work-group size clamped to the device's largest; the
items each work-item ranks lowered until the tile's local memory fits. The sort and segmented-sort
planners use these rules for every field the caller did not set. Pure: reads the profile only.
"""

from dataclasses import replace

from ..core.sizes import pow2_floor


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


def sg_size_of(ranking):
    """The subgroup width a ranking back-end assumes: warps of 32 (ptx; local's virtual
    subgroups), else the 16 that cl_intel_required_subgroup_size asks for."""
    return 32 if ranking in ("ptx", "local") else 16


def with_best_ranking(policy, profile):
    """``policy`` with the device's best ranking back-end and the subgroup width it assumes."""
    best = ranking_backends(profile)[0]
    return replace(policy, ranking=best, sg_size=sg_size_of(best))


def clamp_wg(policy, profile, at_least=1):
    """``policy`` with its work-group no larger than the device's (a power of two), and no
    smaller than ``at_least``."""
    return replace(policy, wg_size=max(at_least, min(policy.wg_size,
                                                     pow2_floor(profile.max_wg_size))))


def shrink_items(policy, need, limit, step):
    """``policy`` with items_per_thread lowered by ``step`` until ``need(policy)`` (bytes of local
    memory) is at most ``limit``, or one item is left."""
    while policy.items_per_thread > 1 and need(policy) > limit:
        policy = replace(policy, items_per_thread=step(policy.items_per_thread))
    return policy


def three_quarters(items):
    """The planners' usual step down in items per work-item."""
    return items * 3 // 4
