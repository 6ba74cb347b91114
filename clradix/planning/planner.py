"""The planner: the one entry point that turns a call (a sort, a segmented sort, a top-k, a
selection, a kernel family's job: planning/families.py) into a validated policy, its built
driver and the ready launch sequence of the call's configuration.

The pure planners (clradix.policies) choose from what the device profile says. What only a build
tells is learned here, once per key configuration, with one warning, by one rule
(:meth:`Planner.learn_cap`): a built kernel that runs fewer work-items per group than the planned
wg_size makes the planner plan again within that limit. A program a compiler refuses makes it
plan without what it refused (a subgroup ranking back-end, top-k's threshold pass, the segmented
sort's ballot ranking at 16 keys per work-item). A choice the caller made (an override) is never
changed: the error names the device, the kernel and the limit.

One cache holds the prepared work: call configuration -> :class:`Prepared` (the driver and its
ready launch sequence), and planning configuration -> its driver (so a configuration that
differs only in direction or bit range plans nothing), valid until the planner's
``generation`` changes; one lock guards the
planner's state and the kernels' arguments while a sequence is enqueued.
"""

import threading
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.device import Profiles
from ..core.errors import PolicyError, WorkGroupLimitError
from ..core.keys import value_type_of
from ..core.render import KernelBuildError
from ..core.sizes import index_type, pow2_floor
from ..core.keys import key_codec
from ..drivers.digit_passes import SortJob
from ..drivers.radix_select import GlobalSorts, RadixSelect, TopkJob, global_sorts
from ..drivers.rank_select import RankSelect, SelectJob
from ..drivers.segmented import SegmentedSort
from ..drivers.segmented_chunks import SegmentChunks
from ..drivers.topk_chunks import TopkChunks
from ..policies.families import family_policy
from ..policies.segment import plan_segments
from ..policies.fit import without_ranking
from ..policies.sort import NO_DEBUG
from ..policies.selection import plan_selection
from ..policies.topk import MIN_WG, plan_topk
from ..policies.tuning import tuned_table
from .sort_plan import plan_sort, sort_plan

# How many call configurations the planner keeps the prepared work of: a repeated call plans,
# validates and builds nothing (about half of a small sort's host time on PoCL).
READY_CONFIGURATIONS = 64


def topk_driver_class(plan):
    """The top-k driver of ``plan``: the CPUs' chunked route's, else the radix select."""
    return TopkChunks if plan.route == "chunks" else RadixSelect


@dataclass(frozen=True)
class Lesson:
    """What a compiler refused for one configuration, as the plan field every later plan of it
    sets: the segmented sort's ``items_per_thread`` (lower) and ``ranking`` ("local"), top-k's
    ``fused`` (False) and ``sample_size`` (0)."""

    field: str
    value: Any


class Prepared:
    """A call configuration made ready: its driver, its launch sequence (and, for top-k, its
    plan). ``run`` enqueues it under the planner's lock."""

    __slots__ = ("driver", "sequence", "plan", "_lock")

    def __init__(self, driver, sequence, lock, plan=None):
        self.driver, self.sequence, self.plan, self._lock = driver, sequence, plan, lock

    def run(self, queue, operands, alloc, wait, in_order=False, scalars=(), states=None):
        """Enqueue the sequence with the call's operands (the driver's Operands), scalars and
        kept state blocks (see LaunchSequence.run); the event of its last command, or None when
        it has none."""
        with self._lock:
            return self.sequence.run(queue, operands, alloc, wait, self.driver.trace, in_order,
                                     scalars, states)


class Planner:
    """Plans, builds and prepares the calls of one Sorter or Selector: ``overrides`` (its policy
    fields; a Sorter's ``segment_policy`` for its segmented sorts) are kept as the caller set
    them; ``debug`` (a Sorter's SortDebug) goes to the sort planner and drivers as it is."""

    def __init__(self, programs, overrides, segment_policy=None, debug=NO_DEBUG):
        self.programs = programs
        self.overrides = overrides
        self.debug = debug
        self.segment_policy = segment_policy
        self.profiles = Profiles()
        self.lock = threading.RLock()
        self.drivers = {}      # (operation, device, policy, types) -> built driver
        self._prepared = {}     # call configuration -> (generation, Prepared)
        self._caps = {}         # (device, operation, configuration) -> learned wg_size cap
        self._lessons = {}      # (device, operation, configuration) -> {field: value} learned
        self._tuned = {}
        self._epoch = 0         # grows whenever what was prepared before may be stale

    # ------------------------------------------------------------------ shared rules

    @property
    def generation(self):
        """Changes whenever prepared work may be stale (clear, a learned limit, a device profile
        replaced)."""
        return (self._epoch, self.profiles.version)

    def clear(self):
        """Forget the built drivers and prepared work (built again, from the program cache, on
        next use)."""
        with self.lock:
            self.drivers.clear()
            self._prepared.clear()
            self._epoch += 1

    def ready(self, key):
        """The Prepared of call configuration ``key`` if it is current, else None."""
        entry = self._prepared.get(key)
        if entry is not None and entry[0] == (self._epoch, self.profiles.version):
            return entry[1]
        return None

    def _keep(self, key, generation, prepared):
        with self.lock:
            self._prepared[key] = (generation, prepared)
            while len(self._prepared) > READY_CONFIGURATIONS:
                self._prepared.pop(next(iter(self._prepared)))
        return prepared

    def capped_profile(self, device, config):
        """The device's profile, its max_wg_size lowered to the cap learned for ``config``."""
        profile = self.profiles.get(device)
        with self.lock:
            cap = self._caps.get((device.int_ptr, config))
        return replace(profile, max_wg_size=cap) if cap and cap < profile.max_wg_size else profile

    def learn_cap(self, device, config, exc, wg_size, floor, what, user_set):
        """Cap wg_size for ``config`` below the kernel limit ``exc`` reported (warning once), or
        re-raise when the caller chose wg_size (``user_set``) or no smaller work-group (>=
        ``floor``) is left."""
        cap = pow2_floor(min(exc.limit, wg_size // 2))
        if user_set or cap >= wg_size or cap < floor:
            raise exc
        with self.lock:
            if (device.int_ptr, config) not in self._caps:
                warnings.warn(f"{exc}; the planner shrinks wg_size to {cap} for {what} on this "
                              f"device", RuntimeWarning, stacklevel=6)
            self._caps[(device.int_ptr, config)] = cap
            self._epoch += 1

    def learn(self, device, config, lesson, message, forget=()):
        """Remember a Lesson for ``config`` (what its plans set from now on; the lessons of the
        fields in ``forget`` no longer hold), warning with ``message``."""
        with self.lock:
            learned = self._lessons.setdefault((device.int_ptr, config), {})
            for name in forget:
                learned.pop(name, None)
            learned[lesson.field] = lesson.value
            self._epoch += 1
        warnings.warn(message, RuntimeWarning, stacklevel=6)

    def lessons(self, device, config):
        """{field: value} every plan of ``config`` on ``device`` takes (what compilers refused)."""
        with self.lock:
            return dict(self._lessons.get((device.int_ptr, config), {}))

    def build_with_retries(self, device, cap_config, plan, build, limits, what, user_wg,
                           refusal=None):
        """The one build-and-retry loop of every operation: ``plan()`` plans (with what was
        learned), ``build(planned)`` builds and returns the result. A work-group limit the build
        reports caps the work-group of ``cap_config`` (learn_cap: below the planned work-group,
        not below the floor, ``limits(planned)`` -> (work-group, floor), unless the caller chose
        it, ``user_wg``) and plans again; a compiler's refusal goes to ``refusal(planned, exc)``,
        which learns something and plans again or raises (None: every refusal raises)."""
        limited = None   # the WorkGroupLimitError that made this call shrink the work-group
        while True:
            try:
                planned = plan()
            except PolicyError as exc:
                if limited is None:
                    raise
                raise PolicyError(f"{limited}, and no valid policy fits that limit: {exc}") from exc
            try:
                return build(planned)
            except WorkGroupLimitError as exc:
                self.learn_cap(device, cap_config, exc, *limits(planned), what, user_wg)
                limited = exc
            except KernelBuildError as exc:
                if refusal is None:
                    raise
                refusal(planned, exc)

    def built(self, key, build):
        """The driver cached under ``key``, built by ``build()`` on first use."""
        with self.lock:
            driver = self.drivers.get(key)
            if driver is None:
                driver = self.drivers[key] = build()
            return driver

    def _prepare(self, key, make):
        """The Prepared of ``key``: kept, or made by ``make()`` (driver, job, plan)."""
        generation = self.generation
        driver, job, plan = make()
        with self.lock:
            prepared = Prepared(driver, driver.sequence(job), self.lock, plan)
        return self._keep(key, generation, prepared)

    # ------------------------------------------------------------------ sorts

    def tuned(self, profile):
        """The autotuned table of this device (loaded once; {} when there is none)."""
        with self.lock:
            if profile.identity not in self._tuned:
                self._tuned[profile.identity] = tuned_table(profile)
            return self._tuned[profile.identity]

    def plan(self, device, codec, value_bytes, n, validated=True):
        """The SortPlan for ``n`` keys of ``codec`` with ``value_bytes``-byte values (0: none),
        validated unless ``validated=False``; a size query: nothing is built."""
        config = ("sort", codec.dtype, value_bytes, index_type(n)[0])
        profile = self.capped_profile(device, config)
        policy = plan_sort(profile, codec, value_bytes or None, n, self.tuned(profile),
                           self.debug, **self.overrides)
        return sort_plan(policy, profile, codec, value_bytes, n, self.debug, validated)

    def prepare_sort(self, key, device, codec, value_bytes, job):
        """The Prepared of a SortJob (``key``: its call configuration)."""
        return self._prepare(key, lambda: (self.sort_driver(device, codec, value_bytes, job.n),
                                           job, None))

    def sort_work(self, device, codec, value_bytes, n, begin_bit, end_bit, descending,
                  argsort=False, keys_out=False):
        """The Prepared of one sort configuration (kept; made ready on first use): the one place
        a SortJob and its configuration's key are made, for the Sorter's calls and the sorts
        inside other operations (top-k's global route)."""
        key = (device.int_ptr, codec.dtype, value_bytes, n, begin_bit, end_bit, bool(descending),
               argsort, keys_out)
        prepared = self.ready(key)
        if prepared is None:
            job = SortJob(n, begin_bit, end_bit, bool(descending), argsort,
                          bool(value_bytes) and not argsort, keys_out)
            prepared = self.prepare_sort(key, device, codec, value_bytes, job)
        return prepared

    def sort_driver(self, device, codec, value_bytes, n):
        """The built driver of the policy for ``n`` keys, kept with the prepared work: the other
        configurations of ``n`` keys (direction, bit range, argsort) plan nothing."""
        key = ("sort driver", device.int_ptr, codec.dtype, value_bytes, n)
        driver = self.ready(key)
        if driver is None:
            generation = self.generation
            driver = self._keep(key, generation, self._sort_driver(device, codec, value_bytes, n))
        return driver

    def _sort_driver(self, device, codec, value_bytes, n):
        index_name = index_type(n)[0]
        value_t = value_type_of(value_bytes)

        def build(plan):
            return self.built((device.int_ptr, plan.policy, "sort", codec.dtype, value_t,
                               index_name),
                              lambda: plan.driver(self.programs, device, plan.profile, plan.policy,
                                                  codec, value_t, index_name, plan.index_np,
                                                  plan.debug))
        return self.build_with_retries(
            device, ("sort", codec.dtype, value_bytes, index_name),
            lambda: self.plan(device, codec, value_bytes, n), build,
            lambda plan: (plan.policy.wg_size, 1),
            f"{codec.dtype} keys (values: {value_t}, indices: {index_name})",
            self.overrides.get("wg_size") is not None,
            lambda plan, exc: self._drop_ranking(device, plan.profile, plan.policy, exc))

    def _drop_ranking(self, device, profile, policy, exc):
        """Plan again without the subgroup ranking the driver failed to compile (re-raise when the
        caller chose it, or it is the portable one)."""
        if (policy.algorithm != "onesweep" or policy.ranking == "local"
                or self.overrides.get("ranking") is not None):
            raise exc
        warnings.warn(f"{profile.describe()} cannot compile the {policy.ranking!r} subgroup "
                      f"ranking; planning without it. {str(exc)[:2000]}", RuntimeWarning,
                      stacklevel=5)
        self.profiles.replace(device, without_ranking(self.profiles.get(device), policy.ranking))

    def sort_temp_bytes(self, device, codec, value_bytes, n, passes):
        """Bytes of temporary memory an in-place sort of ``n`` keys asks for (builds nothing)."""
        plan = self.plan(device, codec, value_bytes, n)
        return plan.driver.temp_bytes(plan.policy, plan.profile, n, codec.itemsize, value_bytes,
                                      passes(plan.policy.radix_bits))

    # ------------------------------------------------------------------ segmented sorts

    def plan_segments(self, device, codec, index_bytes_, key=None):
        """(profile, SegmentPolicy) for keys of ``codec``, with what was learned for ``key``."""
        config = ("segments", codec.dtype)
        profile = self.capped_profile(device, config)
        pol = plan_segments(profile, codec, index_bytes_, self.segment_policy)
        if key is not None:
            pol = replace(pol, **self.lessons(device, key))
        return profile, pol

    def prepare_segments(self, key, device, codec, index_name, index_np, off_t, job):
        """The Prepared of a SegmentJob (``key``: its call configuration)."""
        return self._prepare(key, lambda: (self.segments_driver(device, codec, job.value_bytes,
                                                                index_name, index_np, off_t),
                                           job, None))

    def segments_driver(self, device, codec, value_bytes, index_name, index_np, off_t):
        """The built SegmentedSort of a configuration (see the module's docstring)."""
        user = self.segment_policy
        key = ("segments", codec.dtype, value_bytes, index_name, off_t)
        value_t = value_type_of(value_bytes)

        def build(planned):
            profile, pol = planned
            cls = SegmentChunks if pol.algorithm == "chunks" else SegmentedSort
            return self.built((device.int_ptr, pol, key),
                              lambda: cls(self.programs, device, profile, pol, codec, value_t,
                                          index_name, index_np, off_t))

        def refusal(planned, exc):
            # A compiler that refuses the program (NVIDIA's ptxas, driver 580, failed predicate
            # register allocation, "register count of '7'", for the keys-only program at 16
            # keys per work-item until the ballot match kept its predicates inside one asm
            # statement): fewer keys per work-item first (12 beat the local-memory ranking at 16
            # in 4 of 5 shapes on the H100, BENCHMARKS "Segmented rows"), then the local-memory
            # ranking at the planner's tile.
            pol = planned[1]
            if (user is None or user.items_per_thread is None) and pol.items_per_thread > 4:
                ipt = pol.items_per_thread * 3 // 4
                self.learn(device, key, Lesson("items_per_thread", ipt),
                           f"{exc.__class__.__name__} with ranking={pol.ranking!r} at "
                           f"{pol.items_per_thread} keys per work-item; the segmented sort of "
                           f"{codec.dtype} keys tries {ipt} on this device")
                return
            if (user is not None and user.ranking is not None) or pol.ranking == "local":
                raise exc
            self.learn(device, key, Lesson("ranking", "local"),
                       f"{exc.__class__.__name__} with ranking={pol.ranking!r}; the segmented "
                       f"sort of {codec.dtype} keys uses the local-memory ranking on this device",
                       forget=("items_per_thread",))
        return self.build_with_retries(
            device, ("segments", codec.dtype),
            lambda: self.plan_segments(device, codec, np.dtype(index_np).itemsize, key), build,
            lambda planned: (planned[1].wg_size, planned[1].sg_size),
            f"the segmented sort of {codec.dtype} keys",
            user is not None and user.wg_size is not None, refusal)

    # ------------------------------------------------------------------ top-k

    def plan_topk(self, device, codec, rows, row_len, k, sorted, idx_bytes=0):
        """The TopkPlan of a call (a size query: nothing is built); ``idx_bytes`` 8 hands back
        64-bit indices at any row length (0: the index-width rule)."""
        config = ("topk", codec.dtype, index_type(row_len)[0])
        overrides = dict(self.overrides, **self.lessons(device, config))
        return plan_topk(self.capped_profile(device, config), codec, rows, row_len, k, sorted,
                         idx_bytes=idx_bytes, **overrides)

    def prepare_topk(self, key, device, codec, rows, row_len, k, sorted, largest, sorter,
                     idx_bytes=0):
        """The Prepared of a top-k call (its ``plan`` set; ``sorter()`` gives the Planner of the
        global route's sorts, whose prepared work the job carries)."""
        def make():
            plan, driver = self.topk_driver(device, codec, rows, row_len, k, sorted, idx_bytes)
            sorts = None
            if plan.route == "global":
                sorts = global_sort_work(sorter(), device, codec, rows, row_len, k,
                                         np.dtype(plan.out_index_np), bool(largest))
            return driver, TopkJob(plan, rows, row_len, k, bool(largest), sorts), plan
        return self._prepare(key, make)

    def topk_driver(self, device, codec, rows, row_len, k, sorted, idx_bytes=0):
        """(plan, built RadixSelect) of a top-k call, kept with the prepared work (either
        direction plans nothing more)."""
        key = ("topk driver", device.int_ptr, codec.dtype, rows, row_len, k, bool(sorted),
               idx_bytes)
        made = self.ready(key)
        if made is None:
            generation = self.generation
            made = self._keep(key, generation,
                              self._topk_driver(device, codec, rows, row_len, k, sorted,
                                                idx_bytes))
        return made

    def _topk_driver(self, device, codec, rows, row_len, k, sorted, idx_bytes):
        config = ("topk", codec.dtype, index_type(row_len)[0])   # plan_topk's

        def build(plan):
            key = (device.int_ptr, plan.policy, "topk", codec.dtype, plan.index_name,
                   plan.out_index_np, plan.idx_np, plan.wg, plan.ipt, plan.sort_size, plan.sample,
                   plan.fused, plan.route)
            cls = topk_driver_class(plan)
            return plan, self.built(key, lambda: cls(self.programs, device, plan, codec))

        def refusal(plan, exc):
            # a compiler that refuses the fused passes (topk_fused's fences): a launch per pass
            # on this device (once a warning), unless the caller asked for them
            if plan.fused and self.overrides.get("fused") is None:
                self.learn(device, config, Lesson("fused", False),
                           f"{exc}\nthe top-k planner runs the digit passes of {codec.dtype} "
                           f"keys a launch each (not fused) on this device")
                return
            # the threshold pass's programs are the newer ones: where a compiler refuses them,
            # the passes run without it (once a warning), unless the caller asked
            if not plan.sample or self.overrides.get("sample_size") is not None:
                raise exc
            self.learn(device, config, Lesson("sample_size", 0),
                       f"{exc}\nthe top-k planner runs {codec.dtype} rows without the threshold "
                       f"pass on this device")
        return self.build_with_retries(
            device, config,
            lambda: self.plan_topk(device, codec, rows, row_len, k, sorted, idx_bytes), build,
            lambda plan: (plan.wg, MIN_WG), f"top-k of {codec.dtype} keys",
            self.overrides.get("wg_size") is not None, refusal)

    # ------------------------------------------------------------------ selection

    def prepare_selection(self, key, device, codec, job, policy=None, idx_bytes=8, values=None):
        """The Prepared of a selection call (``key``: its call configuration; ``job``: the
        SelectJob's fields but its plan; ``policy``: a SelectionPolicy of overrides; ``values``:
        (op, result) of the medians' or quantiles' program)."""
        def make():
            plan, driver = self.selection_driver(device, codec, job["rows"], job["row_len"],
                                                 job["nranks"], policy, idx_bytes, values)
            return driver, SelectJob(plan, **job), plan
        return self._prepare(key, make)

    def selection_driver(self, device, codec, rows, row_len, nranks, policy=None, idx_bytes=8,
                         values=None):
        """(plan, built RankSelect) of a selection; a work-group limit the build reports makes
        the planner plan again within it (unless the caller chose wg_size)."""
        config = ("selection", codec.dtype)

        def build(plan):
            key = (device.int_ptr, "selection", codec.dtype, plan.policy, plan.index_name,
                   idx_bytes, values)
            return plan, self.built(key, lambda: RankSelect(self.programs, device, plan, codec,
                                                            idx_bytes, values))
        return self.build_with_retries(
            device, config,
            lambda: plan_selection(self.capped_profile(device, config), codec, rows, row_len,
                                   nranks, policy),
            build, lambda plan: (plan.wg, 1), f"the selection of {codec.dtype} keys",
            policy is not None and policy.wg_size is not None)

    # ------------------------------------------------------------------ kernel families

    def family_work(self, device, cls, job, policy=None):
        """The Prepared of a kernel family's job (``cls``: its driver, drivers/elementwise.py;
        ``policy``: one given instead of the device's, policies.families)."""
        key = (cls, job.__class__, device.int_ptr, job, policy)
        prepared = self.ready(key)
        if prepared is None:
            prepared = self._prepare(key, lambda: (self.family_driver(device, cls, job, policy),
                                                   job, None))
        return prepared

    def family_driver(self, device, cls, job, policy=None):
        """The built driver of ``cls`` for the program ``job`` runs, under the device's policy of
        the family (or ``policy``); a work-group limit the build reports makes the planner plan
        a smaller work-group (unless the policy was given)."""
        config = ("family", cls.family)

        def plan():
            profile = self.capped_profile(device, config)
            return profile, policy if policy is not None else family_policy(cls.family, profile)

        def build(planned):
            profile, pol = planned
            params = cls.program(pol, profile, job)
            return self.built((device.int_ptr, cls, pol, tuple(sorted(params.items()))),
                              lambda: cls(self.programs, device, profile, pol, params))
        return self.build_with_retries(
            device, config, plan, build, lambda planned: (planned[1].wg_size, 1),
            f"the {cls.family} kernels", policy is not None)


def global_sort_work(sort_planner, device, codec, rows, row_len, k, gd, largest):
    """The prepared sorts of top-k's global route (radix_select.global_sorts: by index in the
    batch, then by key, then by row), from ``sort_planner``: the route's driver enqueues them
    as they are, with no public call in between."""
    m = rows * k
    made = []
    for (kd, vd, end_bit), descending in zip(global_sorts(codec, rows, row_len, gd),
                                             (False, largest, False)):
        kc = key_codec(kd)
        made.append(sort_planner.sort_work(device, kc, np.dtype(vd).itemsize, m, 0,
                                           kc.bits if end_bit is None else end_bit, descending))
    return GlobalSorts(*made, *[None] * (3 - len(made)))
