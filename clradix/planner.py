"""Planning that builds: the one entry point per operation (``SortPlanner.prepare``,
``TopkPlanner.prepare``) that turns a call into a validated policy and its built driver.

The pure planners (policy.plan_sort, topk_policy.plan_topk) choose from what the device profile
says. What only a build tells is learned here, once per key configuration, with one warning: a
built kernel that runs fewer work-items per group than the planned wg_size makes the planner
plan again within that limit, and a subgroup ranking back-end the driver advertises but cannot
compile is left out of the device's profile. A choice the caller made (an override) is never
changed: the error names the device, the kernel and the limit.
"""

import threading
import warnings
from dataclasses import replace

from .device import Profiles
from .driver import WorkGroupLimitError
from .keys import VALUE_CL_TYPES
from .onesweep import Onesweep, OnesweepFused, OnesweepSmall
from .policy import PolicyError, plan_sort, pow2_floor, validate, without_ranking
from .radix_select import RadixSelect
from .reduce_then_scan import ReduceThenScan, SingleWorkGroup
from .render import KernelBuildError
from .sizes import index_bytes, index_type
from .topk_policy import MIN_WG, plan_topk
from .tuning import tuned_table

DRIVERS = {"reduce_then_scan": ReduceThenScan, "onesweep": Onesweep, "single_wg": SingleWorkGroup}


def driver_class(policy):
    """The driver of ``policy``: its algorithm's, and for one work-group with 8-bit digits the
    one that ranks them as onesweep does."""
    if policy.algorithm == "single_wg" and policy.radix_bits == 8:
        return OnesweepSmall
    if policy.algorithm == "onesweep" and policy.fused_passes:
        return OnesweepFused
    return DRIVERS[policy.algorithm]

# How many call configurations (device, keys, values, sizes) a planner remembers the driver of: a
# repeated call skips planning and validation (about half of a small sort's host time on PoCL).
READY_CONFIGURATIONS = 64


class _Planner:
    """What both planners keep: the device profiles, the built drivers, the drivers of recent call
    configurations, the learned wg_size caps ({(device, configuration): largest wg_size its
    kernels ran}) and a lock over them."""

    def __init__(self, programs, overrides):
        self.programs = programs
        self.overrides = overrides
        self.profiles = Profiles()
        self.drivers = {}
        self._ready = {}   # call configuration -> (profiles version, what prepare() returned)
        self._caps = {}
        self._epoch = 0    # grows whenever what was prepared before may be stale
        self._lock = threading.RLock()

    @property
    def generation(self):
        """Changes whenever a prepared driver may be stale (clear, a learned limit, a device
        profile replaced): callers that keep prepared drivers compare it."""
        return (self._epoch, self.profiles.version)

    def clear(self):
        """Forget the built drivers (they are built again, from the program cache, on next use)."""
        with self._lock:
            self.drivers.clear()
            self._ready.clear()
            self._epoch += 1

    def capped_profile(self, device, config):
        """The device's profile, its max_wg_size lowered to the cap learned for ``config``."""
        profile = self.profiles.get(device)
        with self._lock:
            cap = self._caps.get((device.int_ptr, config))
        return replace(profile, max_wg_size=cap) if cap and cap < profile.max_wg_size else profile

    def learn_cap(self, device, config, exc, wg_size, floor, what):
        """Cap wg_size for ``config`` below the kernel limit ``exc`` reported (warning once), or
        re-raise when the caller chose wg_size or no smaller work-group (>= ``floor``) is left."""
        cap = pow2_floor(min(exc.limit, wg_size // 2))
        if self.overrides.get("wg_size") is not None or cap >= wg_size or cap < floor:
            raise exc
        with self._lock:
            if (device.int_ptr, config) not in self._caps:
                warnings.warn(f"{exc}; the planner shrinks wg_size to {cap} for {what} on this "
                              f"device", RuntimeWarning, stacklevel=5)
            self._caps[(device.int_ptr, config)] = cap
            self._ready.clear()
            self._epoch += 1

    def remembered(self, key, make):
        """``make()``'s result for the call configuration ``key``, remembered for the last
        READY_CONFIGURATIONS keys until the device's profile or a learned limit changes: a
        repeated call plans and validates nothing."""
        with self._lock:
            ready = self._ready.get(key)
            if ready is not None and ready[0] == self.profiles.version:
                return ready[1]
        version = self.profiles.version
        made = make()
        with self._lock:
            self._ready[key] = (version, made)
            while len(self._ready) > READY_CONFIGURATIONS:
                self._ready.pop(next(iter(self._ready)))
        return made

    def built(self, key, build):
        """The driver cached under ``key``, built by ``build()`` on first use."""
        with self._lock:
            driver = self.drivers.get(key)
            if driver is None:
                driver = self.drivers[key] = build()
            return driver


class SortPlanner(_Planner):
    """Plans and builds the sorts of one Sorter (``overrides``: its SortPolicy fields)."""

    def __init__(self, programs, overrides):
        super().__init__(programs, overrides)
        self._tuned = {}

    def tuned(self, profile):
        """The autotuned table of this device (loaded once; {} when there is none)."""
        with self._lock:
            if profile.identity not in self._tuned:
                self._tuned[profile.identity] = tuned_table(profile)
            return self._tuned[profile.identity]

    def plan(self, device, codec, value_bytes, n, validated=True):
        """(profile, policy) for ``n`` keys of ``codec`` with ``value_bytes``-byte values (0: none),
        validated unless ``validated=False``; a size query: nothing is built."""
        config = (codec.dtype, value_bytes, index_type(n)[0])
        profile = self.capped_profile(device, config)
        policy = plan_sort(profile, codec, value_bytes or None, n, self.tuned(profile),
                           **self.overrides)
        if validated:
            validate(policy, profile, codec.itemsize, index_bytes(n), value_bytes, n)
        return profile, policy

    def prepare(self, device, codec, value_bytes, n):
        """The built driver of the policy for ``n`` keys (see the module's docstring for what a
        failed build teaches the planner), remembered per configuration (``remembered``)."""
        return self.remembered((device.int_ptr, codec.dtype, value_bytes, n, index_type(n)[0]),
                               lambda: self._plan_and_build(device, codec, value_bytes, n))

    def _plan_and_build(self, device, codec, value_bytes, n):
        limited = None   # the WorkGroupLimitError that made this call shrink wg_size
        while True:
            try:
                profile, policy = self.plan(device, codec, value_bytes, n)
            except PolicyError as exc:
                if limited is None:
                    raise
                raise PolicyError(f"{limited}, and no valid policy fits that limit: {exc}") from exc
            index_name, index_np = index_type(n)
            value_t = VALUE_CL_TYPES[value_bytes] if value_bytes else None
            try:
                return self.built(
                    (device.int_ptr, policy, codec.dtype, value_t, index_name),
                    lambda: driver_class(policy)(self.programs, device, profile, policy,
                                                      codec, value_t, index_name, index_np))
            except WorkGroupLimitError as exc:
                self.learn_cap(device, (codec.dtype, value_bytes, index_name), exc,
                               policy.wg_size, 1, f"{codec.dtype} keys (values: {value_t}, "
                               f"indices: {index_name})")
                limited = exc
            except KernelBuildError as exc:
                self._drop_ranking(device, profile, policy, exc)

    def _drop_ranking(self, device, profile, policy, exc):
        """Plan again without the subgroup ranking the driver failed to compile (re-raise when the
        caller chose it, or it is the portable one)."""
        if (policy.algorithm != "onesweep" or policy.ranking == "local"
                or self.overrides.get("ranking") is not None):
            raise exc
        warnings.warn(f"{profile.describe()} cannot compile the {policy.ranking!r} subgroup "
                      f"ranking; planning without it. {str(exc)[:2000]}", RuntimeWarning,
                      stacklevel=4)
        self.profiles.replace(device, without_ranking(self.profiles.get(device), policy.ranking))

    def temp_bytes(self, device, codec, value_bytes, n, passes):
        """Bytes of temporary memory an in-place sort of ``n`` keys asks for (builds nothing)."""
        profile, policy = self.plan(device, codec, value_bytes, n)
        return driver_class(policy).temp_bytes(policy, profile, n, codec.itemsize,
                                                    value_bytes, passes(policy.radix_bits))


class TopkPlanner(_Planner):
    """Plans and builds the top-k calls of one Selector (``overrides``: TopkPolicy fields)."""

    def __init__(self, programs, overrides):
        super().__init__(programs, overrides)
        self._no_threshold = set()   # (device, configuration) whose threshold pass did not build

    def plan(self, device, codec, rows, row_len, k, sorted):
        """The TopkPlan of a call (a size query: nothing is built)."""
        config = (codec.dtype, index_type(row_len)[0])
        overrides = self.overrides
        with self._lock:
            if (device.int_ptr, config) in self._no_threshold:
                overrides = dict(overrides, sample_size=0)
        return plan_topk(self.capped_profile(device, config), codec, rows, row_len, k, sorted,
                         **overrides)

    def prepare(self, device, codec, rows, row_len, k, sorted):
        """(plan, built RadixSelect driver) of a call, remembered per configuration."""
        return self.remembered(
            (device.int_ptr, codec.dtype, rows, row_len, k, bool(sorted), index_type(row_len)[0]),
            lambda: self._plan_and_build(device, codec, rows, row_len, k, sorted))

    def _plan_and_build(self, device, codec, rows, row_len, k, sorted):
        while True:
            plan = self.plan(device, codec, rows, row_len, k, sorted)
            key = (device.int_ptr, codec.dtype, plan.index_name, plan.out_index_np, plan.idx_np,
                   plan.wg, plan.ipt, plan.sort_size, plan.sample)
            try:
                return plan, self.built(key, lambda: RadixSelect(self.programs, device, plan,
                                                                 codec))
            except WorkGroupLimitError as exc:
                self.learn_cap(device, (codec.dtype, plan.index_name), exc, plan.wg, MIN_WG,
                               f"top-k of {codec.dtype} keys")
            except KernelBuildError as exc:
                # the threshold pass's programs are the newer ones: where a compiler refuses
                # them, the passes run without it (once a warning), unless the caller asked
                if not plan.sample or self.overrides.get("sample_size") is not None:
                    raise
                with self._lock:
                    self._no_threshold.add((device.int_ptr, (codec.dtype, plan.index_name)))
                    self._epoch += 1
                warnings.warn(f"{exc}\nthe top-k planner runs {codec.dtype} rows without the "
                              f"threshold pass on this device", RuntimeWarning, stacklevel=4)
