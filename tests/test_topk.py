"""Top-k (MSD radix select) against numpy: every dtype, k at its boundaries, ties, NaN, clustered
data, 1-D and 2-D, every route (unsorted, local-memory sort, global sort), both paths (one
work-group per row in one launch, and the multi-group passes), the adaptive re-read of clustered
data, 64-bit positions; work-group sizes, temporary memory, allocation failures, events, and wrong
options refused."""


import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools  # noqa: F401  (cl.tools)
import pytest

import clradix
import clradix.core.sizes as sizes
from clradix.core.keys import KEY_DTYPES, key_codec
from clradix.drivers import radix_select
from clradix.drivers.radix_select import TopkJob
from clradix.policies.topk import plan_topk

import data
from conftest import (FailingAllocator, check_topk, fake_profile, on_pocl, poison,
                      returns_within, skip_route_dtype_on_pocl)
from reference import bits_of, compare_topk


# The paths of a call: "single" (one work-group per row, one launch: topk_single), "passes"
# (init, the digit passes over several work-groups per row, the route's ordering) and, on CPUs,
# "chunks" (a work-item per chunk of a row, then one per row merges; chunks of 300 keys here,
# so that small rows take several).
# "passes": the planner's form of the digit passes (one fused launch on NVIDIA GPUs);
# "unfused": a launch per pass where the planner fuses them (GPUs only: CPUs never fuse)
PATHS = ["single", "passes", "chunks", "unfused"]


def selector(ctx, path, **options):
    """A Selector whose calls take ``path``; ``options``: its constructor's, or further TopkPolicy
    fields (cand_cap) for its planner."""
    public = {n: options.pop(n) for n in ("wg_size", "items_per_thread", "groups_per_cu",
                                          "sort_size", "allocator") if n in options}
    sel = clradix.Selector(ctx, **public)
    if path == "chunks":
        if not ctx.devices[0].type & cl.device_type.CPU or set(public) - {"allocator"} \
                or options:
            pytest.skip("the chunked top-k is the CPUs' route, with no work-group option")
        sel.overrides.update(chunk_keys=300)
        return sel
    if path == "unfused":
        if ctx.devices[0].type & cl.device_type.CPU:
            pytest.skip("CPUs never fuse the passes: 'passes' runs them a launch each")
        options = dict(options, fused=False)
    sel.overrides.update(options, single_max=1 << 30 if path == "single" else 0)
    return sel


def traced_names(sel, queue, a, k, **kwargs):
    """The kernels one call of ``sel`` enqueues, in order (after a first call that builds them)."""
    sel.topk(queue, a, k, **kwargs)[2].wait()
    sel.trace = []
    sel.topk(queue, a, k, **kwargs)[2].wait()
    names, sel.trace = [name for name, _ in sel.trace], None
    return names


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=str)
@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
@pytest.mark.parametrize("sorted_", [True, False], ids=["sorted", "unsorted"])
def test_every_dtype(ctx, queue, rng, dtype, largest, sorted_, path):
    if path != "chunks":
        skip_route_dtype_on_pocl(ctx, dtype)
    sel = selector(ctx, path)
    x = data.float_specials(rng, dtype, 5000)
    for k in (1, 7, 100, 4999, 5000):
        check_topk(queue, x, k, largest, sorted_, selector=sel)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dist", ["all_equal", "distinct16", "low_bits", "high_bits",
                                  "entropy_reduced", "sorted", "reverse_sorted"])
@pytest.mark.parametrize("dtype", [np.uint32, np.float32, np.int64, np.float16], ids=str)
def test_distributions(ctx, queue, rng, dist, dtype, path):
    sel = selector(ctx, path)
    x = data.DISTRIBUTIONS[dist](rng, dtype, 3000)
    for k in (1, 64, 2999):
        for largest in (True, False):
            check_topk(queue, x, k, largest, selector=sel)


@pytest.mark.parametrize("path", PATHS)
def test_k_at_digit_bucket_edges(ctx, queue, rng, path):
    """k equal to, one below and one above the size of the top digit's buckets: the select
    stops early when a bucket is exactly what is still needed."""
    sel = selector(ctx, path)
    x = rng.integers(0, 1 << 21, 20000).astype(np.uint32)
    top = rng.integers(0, 20000, 37)
    x[top] = (np.uint32(0x7FF) << 21) | rng.integers(0, 1 << 21, 37).astype(np.uint32)
    x[top[:5]] = x[top[0]]                  # ties inside the top bucket
    m = int((x >> 21 == 0x7FF).sum())
    for k in (m - 1, m, m + 1, 2 * m):
        for sorted_ in (True, False):
            check_topk(queue, x, k, True, sorted_, selector=sel)


@pytest.mark.parametrize("path", PATHS)
def test_boundary_lengths(ctx, queue, rng, path):
    sel = selector(ctx, path)
    for n in (1, 2, 3, 255, 256, 257, 2047, 2048, 2049, 4097):
        x = rng.standard_normal(n).astype(np.float32)
        for k in sorted({1, n // 2, n - 1, n} - {0}):
            check_topk(queue, x, k, selector=sel)


@pytest.mark.parametrize("path", PATHS)
def test_nan_counts_as_largest(ctx, queue, path):
    sel = selector(ctx, path)
    x = np.array([1.0, np.nan, 3.0, -np.nan, 2.0, np.inf, -0.0, 0.0, np.nan], np.float32)
    values, indices = check_topk(queue, x, 4, largest=True, selector=sel)
    np.testing.assert_array_equal(indices.get(), [1, 3, 8, 5])
    values, indices = check_topk(queue, x, 4, largest=False, selector=sel)
    np.testing.assert_array_equal(indices.get(), [6, 7, 0, 4])   # -0.0 == +0.0: by position
    values, indices = check_topk(queue, x, 9, largest=False, selector=sel)
    np.testing.assert_array_equal(indices.get(), [6, 7, 0, 4, 2, 5, 1, 3, 8])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=str)
def test_ties_at_the_pivot_zeros_and_nans(ctx, queue, rng, dtype, path):
    """Many keys equal to the k-th (+0.0 and -0.0 mixed, which are equal; NaNs of both signs,
    the largest): the smallest positions among them are selected, in position order."""
    sel = selector(ctx, path)
    n = 6000
    x = rng.choice(np.array([-0.0, 0.0, 1.0, -1.0, np.nan, -np.nan, np.inf], dtype), n)
    for k in (1, 500, 1700, 2999, n):
        for largest in (True, False):
            for sorted_ in (True, False):
                check_topk(queue, x, k, largest, sorted_, selector=sel)


@pytest.mark.parametrize("path", PATHS)
def test_clustered_overflows_candidates(ctx, queue, rng, path):
    """Values sharing their top 20 bits: the pivot bucket is larger than the candidate buffer,
    so passes re-read the input instead of writing candidates."""
    sel = selector(ctx, path)
    n = 100_000
    x = ((np.uint32(0xABCDE) << 12) | rng.integers(0, 1 << 12, n).astype(np.uint32))
    for k in (1, 1000, 60_000):
        for largest in (True, False):
            check_topk(queue, x, k, largest, selector=sel)
    f = x.view(np.float32)
    check_topk(queue, f, 1000, selector=sel)


@pytest.mark.parametrize("dtype", [np.uint32, np.float32, np.uint64, np.int16], ids=str)
def test_adaptive_reread(ctx, queue, rng, dtype):
    """A candidate buffer far smaller than the pivot buckets (cand_cap): every pass re-reads the
    rows instead of writing candidates; then buckets of exactly the capacity (written) and one
    more (not written)."""
    bits = np.dtype(dtype).itemsize * 8
    n, rows = 30_000, 3
    x = data.DISTRIBUTIONS["high_bits"](rng, dtype, rows * n).reshape(rows, n)
    for cap in (16, 1000):
        sel = selector(ctx, "passes", cand_cap=cap)
        for k in (1, 777, n // 2):
            for largest in (True, False):
                check_topk(queue, x, k, largest, selector=sel)
    if dtype not in (np.uint32, np.uint64):
        return
    # the top digit's bucket of the largest keys (digit 0x7FF) holds cap or cap + 1 keys
    low = bits - 11
    for cap, extra in ((64, 0), (64, 1)):
        y = rng.integers(0, 1 << low, n, dtype=np.uint64)
        hot = rng.choice(n, cap + extra, replace=False)
        y[hot] |= np.uint64(0x7FF << low)
        y = y.astype(dtype)
        sel = selector(ctx, "passes", cand_cap=cap)
        for k in (1, cap // 2, cap + extra):
            check_topk(queue, y, k, True, selector=sel)


# Rows long enough for the threshold pass with a sample of 512 keys (16 x 512).
THRESHOLD_ROW = 16 * 512


@pytest.mark.parametrize("dtype", [np.float32, np.uint32, np.int64, np.float16, np.uint8], ids=str)
@pytest.mark.parametrize("dist", ["normal", "all_equal", "sorted", "reverse_sorted", "high_bits"])
def test_threshold_pass(ctx, queue, rng, dtype, dist):
    """The threshold pass (a sample's threshold, one read of the row for the candidates): the
    same results as without it, for every route (k = 1, local sort, global sort, unsorted), both
    directions and several rows; all-equal rows make it fall back (more candidates than cap).
    PoCL takes float32, int64 and uint8 (every transform, three widths; each key type is a
    threshold program that compiles for seconds there), Intel's runtime and GPUs all five."""
    if on_pocl(ctx) and dtype in (np.uint32, np.float16):
        pytest.skip("on PoCL float32, int64 and uint8 stand for the threshold pass's key types")
    sel = selector(ctx, "passes", sample_size=512, sample_min_row=0)
    other = selector(ctx, "passes", sample_size=0)
    rows, n = 3, THRESHOLD_ROW + 5
    x = (data.float_specials(rng, dtype, rows * n) if dist == "normal"
         else data.DISTRIBUTIONS[dist](rng, dtype, rows * n)).reshape(rows, n)
    for k in (1, 10, 300, 2500):
        # the expected candidates (rank x 16) fit half the buffer (1024) for k = 1 and 10 only
        plan = sel.planner.plan_topk(queue.device, key_codec(dtype), rows, n, k, True)
        assert plan.sample == (512 if k <= 10 else 0), (k, plan.sample)
        assert other.planner.plan_topk(queue.device, key_codec(dtype), rows, n, k, True).sample == 0
        for largest in (True, False):
            for sorted_ in (True, False):
                check_topk(queue, x, k, largest, sorted_, selector=sel)


def _threshold_state(queue, sel, x, k, largest=True):
    """Run ``sel``'s call on the rows ``x`` without its digit passes (the plan's digits set to -1:
    topk_init, topk_sample, topk_pass_t and the route's ordering of nothing) and return the rows'
    two state copies (0: what pass 0 reads, 1: topk_sample's)."""
    rows, n = x.shape
    codec = key_codec(x.dtype)
    plan, driver = sel.planner.topk_driver(queue.device, codec, rows, n, k, True)
    assert plan.sample, "the plan has no threshold pass"
    a = cl_array.to_device(queue, x)
    job = TopkJob(dataclasses.replace(plan, digits=-1), rows, n, k, largest, None)
    values = cl_array.empty(queue, (rows, k), x.dtype)
    indices = cl_array.empty(queue, (rows, k), plan.out_index_np)
    blocks = []

    def alloc(nbytes):
        blocks.append(cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes))
        return blocks[-1]
    driver.sequence(job).run(queue, radix_select.TopkOperands((a.data, 0), (values.data, 0),
                                                              (indices.data, 0)),
                             alloc, None).wait()
    ix = np.dtype(plan.index_np)
    state_t = np.dtype([("pkey", "<u8"), ("ppos", ix), ("need", ix), ("count", ix),
                        ("src_count", ix), ("digits", "<u4"), ("bucket", "<u4"),
                        ("flags", "<u4"), ("pad", "<u4")], align=True)
    states = np.empty(2 * rows, state_t)
    cl.enqueue_copy(queue, states, blocks[0])   # the states: the first part of the first block
    # the candidate positions topk_pass_t wrote (the first candidate buffer's positions)
    sizes, _ = radix_select._temp_sizes(plan, codec, rows, k)
    cand_pos = np.empty((rows, plan.cap), ix)
    cl.enqueue_copy(queue, cand_pos, blocks[0],
                    src_offset=radix_select.carve_offsets(sizes)[0][4])
    return plan, states[:rows], states[rows:], cand_pos


F_THRESH, F_SKIP = 16, 32


@pytest.mark.parametrize("dtype", [np.float32, np.uint64], ids=str)
def test_threshold_pass_outcome(ctx, queue, rng, dtype):
    """White box: after the threshold pass, a row of random keys has its threshold (the sampled
    order key of the plan's rank, in the state's copy 1) and the state pass 0 reads says to hand
    on the state of pass 1, which reads exactly the keys at or below the threshold; a row of
    equal keys (every key a candidate: more than cap) runs pass 0 as without it."""
    sel = selector(ctx, "passes", sample_size=512, sample_min_row=0)
    n, k = THRESHOLD_ROW * 2 + 3, 5
    x = data.uniform(rng, dtype, 2 * n).reshape(2, n)
    x[1] = x[1, 7]
    plan, first, second, cand_pos = _threshold_state(queue, sel, x, k)
    codec = key_codec(dtype)
    order = codec.order_key(x[0]) ^ codec.flip(True)   # the selection's order key (largest k)
    at = (np.arange(512, dtype=np.uint64) * n + n // 2) // 512
    thresh = np.sort(order[at])[plan.sample_rank - 1]
    assert second[0]["flags"] == F_THRESH and second[0]["pkey"] == thresh
    assert first[0]["flags"] & F_SKIP and first[0]["digits"] == 1
    # pass 1 reads src_count slots: exactly the keys at or below the threshold, and dead
    # entries (slots of the groups' chunks that no candidate took)
    slots = cand_pos[0, :first[0]["src_count"]]
    dead = np.iinfo(plan.index_np).max
    np.testing.assert_array_equal(np.sort(slots[slots != dead]),
                                  np.flatnonzero(order <= thresh))
    assert first[0]["src_count"] <= plan.cap
    assert 1 <= first[0]["need"] <= k
    assert first[1]["flags"] == 0 and first[1]["pkey"] == 0 and first[1]["count"] == n


def test_fused_build_failure_falls_back(ctx, queue, rng, monkeypatch):
    """A compiler that refuses the fused passes' program: one warning, and the rows run a launch
    per pass (the same results); fused passes the caller asked for raise instead. (On every
    device: the planner is made to fuse here, and the refusal comes before anything runs.)"""
    import clradix.policies.topk as topk_policy
    real_fused = topk_policy._fused
    monkeypatch.setattr(topk_policy, "_fused", lambda policy, profile:
                        True if policy.fused is None else real_fused(policy, profile))
    programs = clradix.Selector(ctx).planner.programs
    real_get = type(programs).get

    def refusing(self, template, params, options=()):
        if params.get("fused"):
            raise clradix.KernelBuildError("refused (test)")
        return real_get(self, template, params, options)
    monkeypatch.setattr(type(programs), "get", refusing)
    codec = key_codec(np.float32)
    y = rng.standard_normal((2, 5000)).astype(np.float32)
    sel = selector(ctx, "passes")
    assert sel.planner.plan_topk(queue.device, codec, 2, y.shape[1], 3, True).fused
    with pytest.warns(RuntimeWarning, match="not fused"):
        check_topk(queue, y, 3, selector=sel)
    assert not sel.planner.plan_topk(queue.device, codec, 2, y.shape[1], 3, True).fused
    check_topk(queue, y, 3, selector=sel)
    asked = selector(ctx, "passes", fused=True)
    with pytest.raises(clradix.KernelBuildError, match="refused"):
        check_topk(queue, y, 3, selector=asked)


def test_threshold_build_failure_falls_back(ctx, queue, rng, monkeypatch):
    """A compiler that refuses the threshold pass's program: one warning, and the rows run
    without it (the same results); a threshold the caller asked for raises instead."""
    programs = clradix.Selector(ctx).planner.programs
    real_get = type(programs).get

    def refusing(self, template, params, options=()):
        if template == "radix_select_threshold.cl.mako":
            raise clradix.KernelBuildError("refused (test)")
        return real_get(self, template, params, options)
    monkeypatch.setattr(type(programs), "get", refusing)
    codec = key_codec(np.float32)
    y = rng.standard_normal((2, 16 * 2048)).astype(np.float32)
    sel = selector(ctx, "passes", sample_min_row=0)   # the planner's sample size
    assert sel.planner.plan_topk(queue.device, codec, 2, y.shape[1], 3, True).sample == 2048
    with pytest.warns(RuntimeWarning, match="without the threshold pass"):
        check_topk(queue, y, 3, selector=sel)
    assert sel.planner.plan_topk(queue.device, codec, 2, y.shape[1], 3, True).sample == 0
    check_topk(queue, y, 3, selector=sel)
    asked = selector(ctx, "passes", sample_size=512, sample_min_row=0)
    with pytest.raises(clradix.KernelBuildError, match="refused"):
        check_topk(queue, y, 3, selector=asked)


@pytest.mark.parametrize("dtype", [np.float32, np.uint64, np.int8], ids=str)
def test_fused_passes_on_this_device(ctx, queue, rng, dtype):
    """The fused passes (topk_fused) asked for on the device under test, whatever the planner
    would choose there (CPUs included): every route (unsorted, sorted in local memory, sorted by
    the radix sort), several rows, rows where a digit settles the k-th early, and the threshold
    pass's hand-on (rows of sample_min_row keys): exact."""
    sel = selector(ctx, "passes", fused=True)
    x = data.float_specials(rng, dtype, 3 * 5000).reshape(3, 5000)
    for k, sorted_ in ((1, True), (37, False), (100, True), (4999, True)):
        check_topk(queue, x, k, True, sorted_, selector=sel)
    check_topk(queue, np.repeat(x[:, :40], 100, axis=1), 50, False, True, selector=sel)
    sel.overrides.update(sample_min_row=1 << 15)
    prof = sel.planner.profiles.get(queue.device)
    plan = plan_topk(prof, key_codec(np.float32), 2, 1 << 15, 20, True, **sel.overrides)
    assert plan.fused and plan.sample
    check_topk(queue, rng.standard_normal((2, 1 << 15)).astype(np.float32), 20, selector=sel)


def test_fused_plans():
    """The passes run as one launch (topk_fused) on NVIDIA GPUs unless fused=False, a launch each
    on other devices unless fused=True (CPUs included); never for one-launch rows; refused on a
    device not known to run started work-groups to their end, naming the option; a fused value
    that is not a bool is a TypeError."""
    f32 = key_codec(np.float32)
    nvidia, gpu = fake_profile(vendor="NVIDIA Corporation"), fake_profile()
    cpu = fake_profile(device_type="cpu")
    assert plan_topk(nvidia, f32, 1, 1 << 20, 100, True).fused
    assert not plan_topk(nvidia, f32, 1, 1 << 20, 100, True, fused=False).fused
    assert not plan_topk(nvidia, f32, 1, 1 << 10, 100, True).fused   # topk_single
    assert not plan_topk(gpu, f32, 1, 1 << 20, 100, True).fused
    assert plan_topk(gpu, f32, 1, 1 << 20, 100, True, fused=True).fused
    assert not plan_topk(nvidia, f32, 1, 1 << 28, 1000, True).fused   # the threshold pass
    assert plan_topk(nvidia, f32, 1, 1 << 28, 1000, True, fused=True).fused
    one_row = plan_topk(nvidia, f32, 1, 1 << 16, 100, True)      # spread over work-groups
    assert (one_row.single, one_row.fused) == (False, True)
    assert plan_topk(nvidia, f32, 1, 1 << 14, 100, True).single
    assert plan_topk(nvidia, f32, 4096, 1 << 15, 64, True).single  # rows fill the device
    assert not plan_topk(cpu, f32, 1, 1 << 20, 100, True, groups_per_cu=2).fused
    assert plan_topk(cpu, f32, 1, 1 << 20, 100, True, groups_per_cu=2, fused=True).fused
    other = fake_profile(device_type="accelerator")
    with pytest.raises(clradix.PolicyError, match="fused=True.*runs_started_groups_to_end"):
        plan_topk(other, f32, 1, 1 << 20, 100, True, groups_per_cu=2, fused=True)
    with pytest.raises(TypeError, match="fused must be"):
        plan_topk(nvidia, f32, 1, 1 << 20, 100, True, fused="yes")


def test_threshold_plans():
    """Where the planner uses the threshold pass: rows of at least sample_min_row keys (GPUs
    2^23, CPUs 2^18) and 16 samples, small enough k (the expected candidates at most half the
    buffer); the sample shrinks to half the local memory; never with sample_size=0, and a wrong
    sample_size is refused naming it."""
    f32, f64 = key_codec(np.float32), key_codec(np.float64)
    gpu, cpu = fake_profile(), fake_profile(device_type="cpu")
    big = plan_topk(gpu, f32, 1, 1 << 28, 1000, True)
    assert (big.sample, big.single, big.route) == (2048, False, "local")
    assert 1 <= big.sample_rank <= 16
    assert plan_topk(gpu, f32, 1, 1 << 28, 1 << 20, True).sample == 2048   # rank 24: 3.1M of 8.4M
    assert plan_topk(gpu, f32, 1, 1 << 28, 1 << 21, True).sample == 0      # too many expected
    assert plan_topk(gpu, f32, 1, (1 << 23) - 1, 1, True).sample == 0
    assert plan_topk(gpu, f32, 4, 1 << 23, 1, False).sample == 2048
    # CPUs: the chunked route unless a radix-select field is set
    assert plan_topk(cpu, f32, 1, 1 << 18, 100, True).route == "chunks"
    assert plan_topk(cpu, f32, 1, 1 << 18, 100, True, chunk_keys=64).route == "chunks"
    assert plan_topk(cpu, f32, 1, 1 << 18, (1 << 16) + 1, True).route != "chunks"
    assert plan_topk(cpu, f32, 1, 1 << 18, 100, True, groups_per_cu=2).sample == 2048
    assert plan_topk(cpu, f32, 1, (1 << 18) - 1, 100, True, groups_per_cu=2).sample == 0
    small_local = fake_profile(local_mem_bytes=16 * 1024)
    assert plan_topk(small_local, f64, 1, 1 << 28, 10, True).sample == 1024   # 8 KiB of keys
    assert plan_topk(gpu, f32, 1, 1 << 28, 1000, True, sample_size=0).sample == 0
    assert plan_topk(gpu, f32, 1, 1 << 20, 1, True, sample_min_row=0, sample_size=128).sample \
        == 0   # a sample of at least two keys per work-item of 256
    with pytest.raises(ValueError, match="sample_size must be 0"):
        plan_topk(gpu, f32, 1, 1 << 28, 1000, True, sample_size=1000)
    with pytest.raises(ValueError, match="sample_min_row must be >= 0"):
        plan_topk(gpu, f32, 1, 1 << 28, 1000, True, sample_min_row=-1)


def test_a_new_k_builds_only_the_sorting_kernels(ctx, queue):
    """The local sort's size follows k (a power of two), and only topk_single and topk_sort_rows
    depend on it: every k shares one program of the selection's passes (and one of the threshold
    pass), and a program of a sort size holds the two sorting kernels alone (a compiler that
    builds every kernel of a program builds nothing more for a new k)."""
    sel = selector(ctx, "passes", sample_size=512, sample_min_row=0)
    codec, n = key_codec(np.float32), THRESHOLD_ROW + 5
    made = {k: sel.planner.topk_driver(queue.device, codec, 3, n, k, True) for k in (1, 7, 10, 100)}
    assert [made[k][0].sort_size for k in (1, 7, 10, 100)] == [0, 32, 32, 128]
    assert all(made[k][0].sample == 512 for k in made)

    def program(k, kernel):
        return made[k][1].kernels[kernel].program.int_ptr
    for kernel in ("topk_init", "topk_pass_0", "topk_pass_1", "topk_pass"):
        assert program(1, kernel) == program(7, kernel) == program(100, kernel), kernel
    assert program(1, "topk_pass_t") == program(100, "topk_pass_t")
    assert program(7, "topk_sort_rows") == program(10, "topk_sort_rows") != \
        program(100, "topk_sort_rows")
    assert program(7, "topk_single") != program(1, "topk_single")
    for k in (7, 100):
        names = made[k][1].kernels["topk_sort_rows"].program.get_info(cl.program_info.KERNEL_NAMES)
        assert set(names.split(";")) == {"topk_single", "topk_sort_rows"}, (k, names)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int64], ids=str)
def test_rows(ctx, queue, rng, dtype, path):
    sel = selector(ctx, path)
    x = data.float_specials(rng, dtype, 37 * 300).reshape(37, 300)
    x[3] = x[3, 0]                           # an all-equal row
    for k in (1, 5, 64, 299, 300):
        for sorted_ in (True, False):
            check_topk(queue, x, k, True, sorted_, selector=sel)   # (37, k) outputs


def test_one_launch_batched_rows(ctx, queue, rng):
    """Many short rows (the shape of per-token sampling): one launch of topk_single, no
    temporary memory; the multi-group passes give the same results."""
    x = rng.standard_normal((3000, 1024)).astype(np.float32)
    x[7, 100:200] = x[7, 50]                 # ties at the pivot
    x[8] = np.nan
    a = cl_array.to_device(queue, x)
    single = clradix.Selector(ctx)
    single.overrides.update(single_max=1024)
    for k, sorted_ in ((8, True), (8, False), (1, True)):
        assert traced_names(single, queue, a, k, sorted=sorted_) == ["topk_single"]
        assert single.temp_bytes(3000, 1024, k, np.float32, sorted=sorted_) == 0
        check_topk(queue, x, k, True, sorted_, selector=single)
    passes = selector(ctx, "passes")
    fused = passes.planner.plan_topk(queue.device, key_codec(np.float32), 3000, 1024, 8,
                                     True).fused
    names = traced_names(passes, queue, a, 8)
    if fused:   # (NVIDIA) every digit pass in one launch
        assert names == ["topk_init", "topk_fused", "topk_sort_rows"]
    else:
        assert names[0] == "topk_init" and names[-1] == "topk_sort_rows"
        assert len(names) == 2 + 3 + 1 + 1  # 3 key digits and 1 position digit, then the last
    check_topk(queue, x, 8, selector=passes)
    # one row of the largest planned length, and one key longer: the passes
    for n, want in ((1024, ["topk_single"]), (1025, None)):
        y = rng.standard_normal(n).astype(np.float32)
        names = traced_names(single, queue, cl_array.to_device(queue, y), 100)
        assert names == want if want else names[0] == "topk_init"
        check_topk(queue, y, 100, selector=single)


@pytest.mark.parametrize("path", PATHS)
def test_rows_longer_than_tiles(ctx, queue, rng, path):
    """Several work-groups per row (several tiles of one group) and several rows at once."""
    sel = selector(ctx, path)
    x = rng.standard_normal((3, 70_000)).astype(np.float32)
    for k in (1, 1000):
        check_topk(queue, x, k, selector=sel)


@pytest.mark.parametrize("rows", [1, 5])
def test_global_sort_route(ctx, queue, rng, rows):
    """k above the local-memory sort: the selected pairs are ordered by the radix sort."""
    sel = clradix.Selector(ctx, sort_size=4)
    x = data.distinct16(rng, np.float32, rows * 500).reshape(rows, 500)
    for k in (5, 100, 500):
        for largest in (True, False):
            check_topk(queue, x, k, largest, True, selector=sel)


@pytest.mark.parametrize("path", PATHS)
def test_64bit_positions(ctx, queue, rng, monkeypatch, path):
    """The kernels with 64-bit positions and counters, forced at a small size."""
    monkeypatch.setattr(sizes, "INDEX32_LIMIT", 16)
    sel = selector(ctx, path)
    x = rng.integers(0, 100, (2, 3000)).astype(np.uint16)
    for k in (1, 50, 3000):
        check_topk(queue, x, k, True, True, selector=sel)


def test_buffer_form_events_and_outputs(ctx, queue, rng):
    sel = clradix.Selector(ctx)
    x = rng.standard_normal((4, 1000)).astype(np.float32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, x.nbytes)
    fill = cl.enqueue_copy(queue, buf, x, is_blocking=False)
    values_out = cl_array.empty(queue, (4, 10), np.float32)
    indices_out = cl_array.empty(queue, (4, 10), np.uint32)
    poison(queue, values_out.data)
    poison(queue, indices_out.data)
    values, indices, evt = sel.topk(queue, buf, 10, dtype=np.float32, rows=4, wait_for=[fill],
                                    values_out=values_out, indices_out=indices_out)
    assert isinstance(evt, cl.Event)
    assert values is values_out and indices is indices_out
    evt.wait()
    compare_topk(x, 10, values_out, indices_out, True, True)


def test_poisoned_temporaries(ctx, queue, rng, poisoning_allocator):
    """Every temporary starts full of poison: nothing may depend on its old contents."""
    sel = selector(ctx, "passes", allocator=poisoning_allocator)
    x = rng.integers(0, 20, (3, 5000)).astype(np.int32)
    for k, sorted_ in ((1, True), (300, False), (3000, True)):
        check_topk(queue, x, k, True, sorted_, selector=sel)
    assert poisoning_allocator.allocated


def test_k_zero_and_refusals(ctx, queue):
    a = cl_array.to_device(queue, np.arange(10, dtype=np.float32))
    values, indices = clradix.topk(a, 0)
    assert values.shape == (0,) and indices.shape == (0,)
    with pytest.raises(ValueError, match="k=11 exceeds the length 10 of the axis"):
        clradix.topk(a, 11)
    with pytest.raises(ValueError, match="non-negative"):
        clradix.topk(a, -1)
    with pytest.raises(TypeError, match="k must be an integer"):
        clradix.topk(a, 2.0)
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds"):
        clradix.topk(cl_array.zeros(queue, (2, 2, 2), np.float32), 1, axis=3)
    with pytest.raises(TypeError, match="unsupported key dtype"):
        clradix.topk(cl_array.zeros(queue, 4, np.complex64), 1)
    sel = clradix.Selector(ctx)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 40)
    with pytest.raises(ValueError, match="does not split into 3 equal rows"):
        sel.topk(queue, buf, 1, rows=3)
    with pytest.raises(TypeError, match="indices_out: indices are int32, uint32, int64 or uint64"):
        sel.topk(queue, a, 2, indices_out=cl_array.empty(queue, 2, np.float32))
    with pytest.raises(TypeError, match="indices_out: expected dtype int32"):
        sel.topk(queue, a, 2, indices_out=cl_array.empty(queue, 2, np.int64),
                 index_dtype=np.int32)
    np.testing.assert_array_equal(a.get(), np.arange(10, dtype=np.float32))



def test_outputs_overlapping_the_keys_or_each_other_are_refused(ctx, queue, rng):
    """values_out or indices_out sharing bytes with the keys, or with each other (two Arrays, or
    sub-buffers of one buffer), are refused before anything is planned, allocated or enqueued:
    a kernel writing one while another is read scrambles the results."""
    asked, inner = [], cl.tools.ImmediateAllocator(queue)

    def alloc(nbytes):
        asked.append(nbytes)
        return inner(nbytes)
    sel = clradix.Selector(ctx, allocator=alloc)
    x = rng.integers(0, 2 ** 32, 6000, dtype=np.uint32)
    a = cl_array.to_device(queue, x)
    with pytest.raises(ValueError, match="values_out overlaps the keys"):
        sel.topk(queue, a[:4], 2, values_out=a[:2])
    with pytest.raises(ValueError, match="indices_out overlaps the keys"):
        sel.topk(queue, a[:6], 3, indices_out=a[:3])
    with pytest.raises(ValueError, match="indices_out overlaps the keys"):
        sel.topk(queue, a[:6], 3, indices_out=a[5:8])   # the last key only
    with pytest.raises(ValueError, match="values_out overlaps the keys"):
        sel.topk(queue, a.reshape(2, 3000), 100, values_out=a[2900:3100].reshape(2, 100))
    out = cl_array.empty(queue, 3, np.uint32)
    with pytest.raises(ValueError, match="indices_out overlaps values_out"):
        sel.topk(queue, a[:6], 3, values_out=out, indices_out=out[:])
    with pytest.raises(ValueError, match="indices_out overlaps values_out"):
        sel.topk(queue, a[:6], 3, values_out=out, indices_out=out.view(np.uint32))
    f = cl_array.to_device(queue, rng.standard_normal(1000).astype(np.float32))
    both = cl_array.empty(queue, 10, np.float32)
    with pytest.raises(ValueError, match="indices_out overlaps values_out"):
        sel.topk(queue, f, 5, values_out=both[:5], indices_out=both[4:9].view(np.uint32))
    # sub-buffers of one parent (at its base-address alignment): values_out's last two entries
    # are indices_out's first two, and the keys start at indices_out's last two
    align = max(ctx.devices[0].mem_base_addr_align // 8, 64)
    k = align // 4 + 2
    parent = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 2 * align + 8 * k)
    vals = cl_array.Array(queue, k, np.float32, data=parent.get_sub_region(0, 4 * k))
    idx = cl_array.Array(queue, k, np.uint32, data=parent.get_sub_region(align, 4 * k))
    keys_sub = cl_array.Array(queue, 2 * k, np.float32,
                              data=parent.get_sub_region(2 * align, 8 * k))
    with pytest.raises(ValueError, match="indices_out overlaps values_out"):
        sel.topk(queue, cl_array.empty(queue, 2 * k, np.float32), k, values_out=vals,
                 indices_out=idx)
    with pytest.raises(ValueError, match="indices_out overlaps the keys"):
        sel.topk(queue, keys_sub, k, indices_out=idx)
    kbuf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
    with pytest.raises(ValueError, match="values_out overlaps the keys"):
        sel.topk(queue, kbuf, 2, values_out=cl_array.Array(queue, 2, np.uint32, data=kbuf))
    assert asked == []
    np.testing.assert_array_equal(a.get(), x)
    # adjacent, not overlapping: allowed
    values, indices, evt = sel.topk(queue, a[:4000], 1000, values_out=a[4000:5000],
                                    indices_out=a[5000:6000])
    evt.wait()
    compare_topk(x[:4000], 1000, values, indices, True, True)
    np.testing.assert_array_equal(a.get()[:4000], x[:4000])

def test_memory_pool_allocator(ctx, queue, rng):
    pool = cl.tools.MemoryPool(cl.tools.ImmediateAllocator(queue))
    sel = clradix.Selector(ctx, allocator=pool)
    x = rng.standard_normal((2, 3000)).astype(np.float32)
    for k in (10, 3000):
        check_topk(queue, x, k, True, True, selector=sel)


@pytest.mark.parametrize("path", PATHS)
def test_many_tiles_per_group(ctx, queue, rng, path):
    sel = selector(ctx, path, items_per_thread=2, groups_per_cu=1)
    x = rng.integers(0, 40, (3, 20000)).astype(np.int32)
    for k in (1, 5000, 20000):
        for sorted_ in (True, False):
            check_topk(queue, x, k, True, sorted_, selector=sel)



def ordered_row(order, dtype, n):
    """A row of n keys in an order adversarial to a selection (as benchmarks/cpu.py
    --topk-orders times them): rising, falling, rising then falling, rising-then-falling blocks,
    a sawtooth of 16 teeth, all equal; integers wrapped to the dtype's range."""
    half = np.arange(n // 2)
    base = {"ascending": np.arange(n), "descending": np.arange(n)[::-1],
            "organ_pipe": np.concatenate([half, np.arange(n - n // 2)[::-1]]),
            "pipe_blocks": np.resize(np.concatenate([np.arange(512), np.arange(512)[::-1]]), n),
            "sawtooth": np.arange(n) % max(n // 16, 1), "all_equal": np.full(n, 3)}[order]
    if np.dtype(dtype).kind == "f" or np.iinfo(dtype).max >= n:
        return base.astype(dtype)
    return (base % (int(np.iinfo(dtype).max) + 1)).astype(dtype)


ORDERS = ["ascending", "descending", "organ_pipe", "pipe_blocks", "sawtooth", "all_equal"]


@pytest.mark.parametrize("path,dtype", [(p, np.float32) for p in PATHS]
                         + [("chunks", d) for d in (np.uint8, np.int64, np.float16)],
                         ids=lambda v: v if isinstance(v, str) else np.dtype(v).name)
@pytest.mark.parametrize("order", ORDERS)
def test_adversarial_orders(ctx, queue, path, order, dtype):
    """Ordered rows (where a quickselect's pivots remove a key or two per partition): every k
    from 1 to the row length, both directions, against numpy; the chunked route's buffer
    refills on almost every key of a rising row."""
    sel = selector(ctx, path)
    x = ordered_row(order, dtype, 3000)
    for k in (1, 10, 1000, 2999, 3000):
        check_topk(queue, x, k, True, True, selector=sel)
    for k in (10, 1000):
        check_topk(queue, x, k, False, False, selector=sel)
    check_topk(queue, np.stack([x, x[::-1]]), 700, True, True, selector=sel)


@pytest.mark.parametrize("path", ["chunks", "default"])
@pytest.mark.parametrize("order", ORDERS)
def test_adversarial_orders_medium(ctx, queue, path, order):
    """Ordered rows of 2^17 keys: with chunks of 300 keys (buffers of 4k refilled; selections of
    a whole chunk) and the planner's default (one chunk, one selection of the whole row), k up
    to the chunked route's largest."""
    sel = selector(ctx, "chunks") if path == "chunks" else clradix.Selector(ctx)
    x = ordered_row(order, np.float32, 1 << 17)
    for k in (10, 5000, 1 << 15, 1 << 16):
        check_topk(queue, x, k, True, True, selector=sel)
    check_topk(queue, x, 1 << 14, False, True, selector=sel)


@pytest.mark.parametrize("index_bits", [32, 64])
def test_chunks_sample_bound_too_tight(ctx, queue, monkeypatch, index_bits):
    """The chunked route's sampled bound (one key every 64 of a chunk, centred) taken only from
    keys that beat every other: fewer than k keys of the chunk pass it, so the chunk is read again
    without it. A row of 2^16 keys is one chunk by default; its 1024 samples are its only ones.
    With 32- and 64-bit positions (forced)."""
    if not ctx.devices[0].type & cl.device_type.CPU:
        pytest.skip("the chunked top-k is the CPUs' route")
    if index_bits == 64:
        monkeypatch.setattr(sizes, "INDEX32_LIMIT", 16)
    sel = clradix.Selector(ctx)
    x = np.zeros(1 << 16, np.float32)
    x[32::64] = 1
    for k in (5000, 1 << 15):
        check_topk(queue, x, k, True, True, selector=sel)
        check_topk(queue, -x, k, False, True, selector=sel)


def test_chunks_blocks_passed_over(ctx, queue, rng):
    """The chunked route reads a chunk in blocks of 64 keys and passes over a block whose least
    sort key does not enter: the k best planted at the blocks' first and last places, in the
    trailing partial block, and keys equal to the k-th best (ties, the smaller position first)
    on both sides of a block's edge, on the default route's chunks (no policy field set), both
    directions, keys of 4 and 8 bytes."""
    if not ctx.devices[0].type & cl.device_type.CPU:
        pytest.skip("the chunked top-k is the CPUs' route")
    sel = clradix.Selector(ctx)
    n = (1 << 18) + 37
    for dtype in (np.float32, np.int64):
        x = (rng.random(n) * 1000).astype(dtype)
        top = np.array([0, 63, 64, 127, 128, 4095, 4096, n // 2 - 1, n // 2, n - 37, n - 1])
        x[top] = 5000 + np.arange(len(top))
        x[[191, 192, 193, n - 2]] = 5000        # ties with the least of the planted keys
        for k in (1, 11, 12, 14, 100):
            check_topk(queue, x, k, True, True, selector=sel)
            check_topk(queue, -x, k, False, True, selector=sel)


# ----------------------------------------------------------------------------- events


def test_reused_outputs_never_wait_on_the_host(ctx, queue, rng):
    """Calls behind a user event that completes only afterwards, writing the same outputs: none
    may wait on the host (pyopencl's Array.add_event does, once an array holds 13 events)."""
    sel = clradix.Selector(ctx)
    x = rng.standard_normal((3, 700)).astype(np.float32)
    a = cl_array.to_device(queue, x)
    values_out = cl_array.empty(queue, (3, 7), np.float32)
    indices_out = cl_array.empty(queue, (3, 7), np.uint32)
    sel.topk(queue, a, 7, values_out=values_out, indices_out=indices_out)[2].wait()  # built
    gate = cl.UserEvent(ctx)
    events = []

    def calls():
        for _ in range(20):
            events.append(sel.topk(queue, a, 7, values_out=values_out, indices_out=indices_out,
                                   wait_for=[gate])[2])
    waited = []
    returned = returns_within(
        calls, lambda: (waited.append(len(events) + 1),   # the call that waits, if any
                        gate.set_status(cl.command_execution_status.COMPLETE)), seconds=30)
    assert returned, f"call {waited[0]} of 20 waited on the host behind the user event"
    assert len(events) == 20
    assert len(values_out.events) == 1 and len(indices_out.events) == 1
    events[-1].wait()
    compare_topk(x, 7, values_out, indices_out, True, True)


# ----------------------------------------------------------------------------- work-group sizes

GUARD = 4096   # bytes before and after each allocation (a multiple of any base address alignment)


class _Guarded:
    """An allocator that over-allocates and hands out the middle: the guard bytes on either side
    keep a pattern that any write out of bounds changes."""

    def __init__(self, queue):
        self.queue = queue
        self.blocks = []

    def __call__(self, nbytes):
        buf = cl.Buffer(self.queue.context, cl.mem_flags.READ_WRITE, nbytes + 2 * GUARD)
        poison(self.queue, buf, byte=0x5A)
        self.blocks.append((buf, nbytes))
        return buf.get_sub_region(GUARD, nbytes)

    def check(self):
        self.queue.finish()
        for buf, nbytes in self.blocks:
            host = np.empty(nbytes + 2 * GUARD, np.uint8)
            cl.enqueue_copy(self.queue, host, buf).wait()
            for side, guard in (("before", host[:GUARD]), ("after", host[GUARD + nbytes:])):
                hit = np.flatnonzero(guard != 0x5A)
                assert not hit.size, (f"{hit.size} bytes written {side} an allocation of {nbytes} "
                                      f"bytes (guard offsets {hit[:4]}...)")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("wg", [64, 256, 512, 1024])
def test_work_group_sizes(ctx, queue, rng, wg, path):
    """Every accepted wg_size: several rows at once (one tile, and several tiles per row), every
    route, with guard bytes around every temporary and output."""
    if wg > ctx.devices[0].max_work_group_size:
        pytest.skip(f"the device runs at most {ctx.devices[0].max_work_group_size} work-items")
    if wg == 512 and on_pocl(ctx):
        pytest.skip("PoCL takes the smallest, the default and the largest size (each a program "
                    "that compiles for seconds); 512 runs on Intel's runtime and GPUs")
    guarded = _Guarded(queue)
    sel = selector(ctx, path, wg_size=wg, allocator=guarded)
    short = rng.standard_normal((5, 100)).astype(np.float32)
    long = data.distinct16(rng, np.float32, 3 * (2 * wg * 8 + 5)).reshape(3, -1)   # 3 tiles
    for x, k, sorted_ in ((short, 1, True), (short, 5, True), (short, 5, False),
                          (short, 100, True), (long, 40, True), (long, 40, False)):
        try:
            check_topk(queue, x, k, True, sorted_, selector=sel)
        except ValueError as exc:
            # a kernel whose registers cap its work-groups below wg (NVIDIA: 256 at wg 512) is
            # refused at its first build, with a message naming the kernel and the limit
            if "runs at most" not in str(exc):
                raise
            pytest.skip(str(exc))
    guarded.check()


# ----------------------------------------------------------------------------- temporary memory


class _Counting:
    """A MemoryPool that records what it is asked for, and its bytes in use at the most."""

    def __init__(self, queue):
        self.pool = cl.tools.MemoryPool(cl.tools.ImmediateAllocator(queue))
        self.asked = []
        self.peak = 0

    def __call__(self, nbytes):
        buf = self.pool(nbytes)
        self.asked.append(nbytes)
        self.peak = max(self.peak, self.pool.active_bytes)
        return buf

    def bins(self):
        """Bytes the pool may hold for these requests (it rounds sizes up to its bins)."""
        return sum(self.pool.alloc_size(self.pool.bin_number(n)) for n in self.asked)


@pytest.mark.parametrize("route", ["direct", "local", "global"])
@pytest.mark.parametrize("rows", [1, 4])
def test_temp_bytes_is_what_a_call_allocates(ctx, queue, rng, route, rows):
    """A call asks its allocator for Selector.temp_bytes in all (each temporary once), and the
    pool holds no more than those requests."""
    sel = selector(ctx, "passes", sort_size=4 if route == "global" else None)
    x = rng.standard_normal((rows, 5000)).astype(np.float32)
    k, sorted_ = (40, False) if route == "direct" else (40, True)
    values_out = cl_array.empty(queue, (rows, k), np.float32)
    indices_out = cl_array.empty(queue, (rows, k), np.uint32)
    counting = _Counting(queue)
    sel.topk(queue, cl_array.to_device(queue, x), k, sorted=sorted_, values_out=values_out,
             indices_out=indices_out, allocator=counting)[2].wait()
    compare_topk(x, k, values_out, indices_out, True, sorted_)
    temp = sel.temp_bytes(rows, 5000, k, np.float32, sorted=sorted_)
    assert sum(counting.asked) == temp, counting.asked
    assert counting.peak <= temp
    assert counting.pool.active_blocks == 0
    assert counting.pool.managed_bytes <= counting.bins()


def test_default_pool_holds_temp_bytes(ctx, queue, rng):
    """Without allocator=, the queue's pool holds one block of temp_bytes after a call (and
    after the next one: it is reused), not the whole and its parts; none where the route needs
    no temporaries (NVIDIA's one-launch route for these rows)."""
    sel = clradix.Selector(ctx)
    x = rng.standard_normal((4, 50_000)).astype(np.float32)
    a = cl_array.to_device(queue, x)
    temp = sel.temp_bytes(4, 50_000, 10, np.float32)
    for _ in range(2):
        check_topk(queue, x, 10, selector=sel)
    del a
    pool = sel._pools.allocator(queue)
    assert pool.active_blocks == 0 and pool.held_blocks == (1 if temp else 0)
    assert pool.managed_bytes <= (pool.alloc_size(pool.bin_number(temp)) if temp else 0)


def test_temp_bytes_refuses_what_topk_refuses(ctx, monkeypatch):
    def no_build(*args, **kwargs):
        raise AssertionError("temp_bytes built a program or kernel")
    monkeypatch.setattr(cl, "Program", no_build)
    monkeypatch.setattr(cl, "Kernel", no_build)
    sel = clradix.Selector(ctx)
    with pytest.raises(ValueError, match="k=11 exceeds the row length 10"):
        sel.temp_bytes(2, 10, 11)
    with pytest.raises(ValueError, match="k must be non-negative"):
        sel.temp_bytes(2, 10, -1)
    with pytest.raises(TypeError, match="k must be an integer"):
        sel.temp_bytes(2, 10, 2.0)
    with pytest.raises(ValueError, match="rows must be non-negative"):
        sel.temp_bytes(-1, 10, 1)
    with pytest.raises(ValueError, match="row_len must be non-negative"):
        sel.temp_bytes(2, -10, 0)
    for bad in (2.0, True, "2"):
        with pytest.raises(TypeError, match="rows must be an integer"):
            sel.temp_bytes(bad, 10, 1)
        with pytest.raises(TypeError, match="row_len must be an integer"):
            sel.temp_bytes(2, bad, 1)
    with pytest.raises(TypeError, match="unsupported key dtype"):
        sel.temp_bytes(2, 10, 1, np.complex64)
    assert sel.temp_bytes(0, 10, 5) == sel.temp_bytes(3, 0, 0) == sel.temp_bytes(3, 10, 0) == 0
    assert sel.temp_bytes(np.int64(2), np.int32(10), np.uint8(3)) > 0 or not (
        ctx.devices[0].type & cl.device_type.CPU)   # (CPUs: the chunked route's temporaries)
    sel.overrides.update(single_max=1 << 16)
    assert sel.temp_bytes(np.int64(2), np.int32(10), np.uint8(3)) == 0    # one launch
    sel.overrides.update(single_max=0)
    assert sel.temp_bytes(np.int64(2), np.int32(10), np.uint8(3)) > 0
    # a pure size query (cl.Program and cl.Kernel refuse above), the global-sort route too
    sel = clradix.Selector(ctx, sort_size=4)
    assert sel.temp_bytes(3, 1000, 100, np.float64) > sel.temp_bytes(3, 1000, 100, sorted=False)


# ----------------------------------------------------------------------------- allocation failures


@pytest.mark.parametrize("how", ["cl", "python"])
def test_failed_allocation_is_a_memory_error_and_changes_nothing(ctx, queue, rng, how):
    """allocator= that raises: the builtin MemoryError naming the bytes and what they were for,
    for the outputs and for the temporaries; the keys and given outputs keep every byte."""
    x = rng.standard_normal((2, 3000)).astype(np.float32)
    a = cl_array.to_device(queue, x)
    # (allocations that succeed, outputs given, what fails, on the Selector, k)
    for ok, given, what, on_selector, k in ((0, False, "values output", False, 50),
                                            (1, False, "indices output", False, 50),
                                            (0, True, "temporary memory", False, 50),
                                            (2, False, "temporary memory", True, 50),
                                            (1, True, "temporary memory", False, 2500)):
        failing = FailingAllocator(queue, how, ok)
        # k = 2500: the global-sort route, whose radix sort allocates after the passes
        sel = selector(ctx, "passes", allocator=failing if on_selector else None,
                       sort_size=4 if k > 50 else None)
        outs = {}
        if given:
            outs = dict(values_out=cl_array.empty(queue, (2, k), np.float32),
                        indices_out=cl_array.empty(queue, (2, k), np.uint32))
            for o in outs.values():
                poison(queue, o.data)
        with pytest.raises(MemoryError) as info:
            sel.topk(queue, a, k, allocator=None if on_selector else failing, **outs)
        assert type(info.value) is MemoryError, type(info.value)
        msg = str(info.value)
        assert f"allocating {failing.asked[-1]} bytes of {what}" in msg, msg
        assert ctx.devices[0].name.strip() in msg
        queue.finish()
        np.testing.assert_array_equal(bits_of(a.get()), bits_of(x))
        for o in outs.values():
            assert (o.get().view(np.uint8) == 0xA5).all()
        # the Selector still works afterwards
        values, indices, evt = sel.topk(queue, a, k, allocator=cl.tools.ImmediateAllocator(queue))
        evt.wait()
        compare_topk(x, k, values, indices, True, True)


# ----------------------------------------------------------------------------- options


def test_axis_as_numpy_takes_it(queue):
    """axis: an integer (negative from the end) or None (the flattened array), as numpy's; any
    other type is a TypeError, an axis out of range numpy's AxisError."""
    a2 = cl_array.to_device(queue, np.arange(12, dtype=np.float32).reshape(3, 4))
    a1 = cl_array.to_device(queue, np.arange(5, dtype=np.float32))
    for bad in (True, False, np.bool_(True), 1.0, np.float64(1), "1"):
        with pytest.raises(TypeError, match="axis must be an integer"):
            clradix.topk(a2, 2, axis=bad)
    for bad in (2, -3, np.int64(5)):
        with pytest.raises(np.exceptions.AxisError):
            clradix.topk(a2, 2, axis=bad)
    for axis in (1, -1, np.int64(1)):
        values, indices = clradix.topk(a2, 2, axis=axis)
        np.testing.assert_array_equal(indices.get(), [[3, 2]] * 3)
    for axis in (0, -2, np.int32(0)):
        values, indices = clradix.topk(a2, 2, axis=axis)
        np.testing.assert_array_equal(indices.get(), [[2, 2, 2, 2], [1, 1, 1, 1]])
        np.testing.assert_array_equal(values.get(), [[8, 9, 10, 11], [4, 5, 6, 7]])
    values, indices = clradix.topk(a2, 3, axis=None)
    np.testing.assert_array_equal(indices.get(), [11, 10, 9])
    for axis in (0, -1, np.int32(0)):
        values, indices = clradix.topk(a1, 2, axis=axis)
        np.testing.assert_array_equal(indices.get(), [4, 3])


@pytest.mark.parametrize("options,error,match", [
    (dict(wg_size=32), ValueError, "wg_size must be a power of two from 64 to 2048"),
    (dict(wg_size=384), ValueError, "wg_size must be a power of two from 64 to 2048"),
    (dict(wg_size=256.0), TypeError, "wg_size must be an integer"),
    (dict(wg_size=True), TypeError, "wg_size must be an integer"),
    (dict(wg_size=1 << 20), ValueError, "exceeds the largest work-group"),
    (dict(items_per_thread=3), ValueError, "items_per_thread must be a power of two >= 2"),
    (dict(items_per_thread=1), ValueError, "items_per_thread must be a power of two >= 2"),
    (dict(items_per_thread=12), ValueError, "items_per_thread must be a power of two >= 2"),
    (dict(items_per_thread=8.0), TypeError, "items_per_thread must be an integer"),
    (dict(items_per_thread=256), ValueError, "256 x 256 must be below 65536"),
    (dict(groups_per_cu=0), ValueError, "groups_per_cu must be a positive integer"),
    (dict(groups_per_cu="2"), TypeError, "groups_per_cu must be an integer"),
    (dict(sort_size=3), ValueError, "sort_size must be a power of two from 1 to 2048"),
    (dict(sort_size=0), ValueError, "sort_size must be a power of two from 1 to 2048"),
    (dict(sort_size=4096), ValueError, "sort_size must be a power of two from 1 to 2048"),
    (dict(sort_size=4.0), TypeError, "sort_size must be an integer"),
    (dict(allocator=42), TypeError, "allocator must be a callable"),
    (dict(sorter="sorter"), TypeError, "sorter must be a clradix.Sorter"),
], ids=lambda v: repr(v) if isinstance(v, dict) else None)
def test_constructor_refuses_wrong_options(ctx, options, error, match):
    with pytest.raises(error, match=match):
        clradix.Selector(ctx, **options)


def test_constructor_options_that_work(ctx, queue, rng):
    with pytest.raises(TypeError, match="expected a pyopencl.Context"):
        clradix.Selector(queue)
    with pytest.raises(ValueError, match="sorter belongs to another OpenCL context"):
        clradix.Selector(ctx, sorter=clradix.Sorter(cl.Context(ctx.devices)))
    for options in (dict(items_per_thread=16, groups_per_cu=1), dict(wg_size=512, sort_size=1)):
        clradix.Selector(ctx, **options)
    # (kernels that other tests build too)
    x = rng.integers(-50, 50, (3, 900)).astype(np.int32)
    for options in (dict(items_per_thread=2, groups_per_cu=3),
                    dict(sort_size=2048, sorter=clradix.Sorter(ctx)),
                    dict(allocator=cl.tools.ImmediateAllocator(queue))):
        sel = clradix.Selector(ctx, **options)
        for k in (3, 600):
            check_topk(queue, x, k, False, True, selector=sel)


def test_none_options_are_the_planners(ctx):
    """None (the default of every option) means the planner decides; what it decides is what a
    default Selector plans."""
    dev = ctx.devices[0]
    codec = clradix.key_codec(np.float32)
    planned = clradix.Selector(ctx, wg_size=None, items_per_thread=None, groups_per_cu=None,
                               sort_size=None).planner.plan_topk(dev, codec, 2, 10 ** 5, 10, True)
    assert planned == clradix.Selector(ctx).planner.plan_topk(dev, codec, 2, 10 ** 5, 10, True)
    assert planned.wg >= 256 and planned.wg & (planned.wg - 1) == 0
    forced = clradix.Selector(ctx, items_per_thread=4).planner.plan_topk(dev, codec, 2, 10 ** 5, 10,
                                                                    True)
    assert forced.ipt == 4 and forced.wg == planned.wg


def test_short_rows_are_one_tile_on_gpus(queue, rng):
    """GPUs: one work-group per row takes up to 16 keys per work-item so that a row of up to
    wg x 16 keys is one tile, its keys loaded once; a chosen items_per_thread is kept, and CPUs
    and longer rows keep the default; the one-tile rows select as numpy on the test device."""
    f32 = key_codec(np.float32)
    gpu = fake_profile(vendor="NVIDIA Corporation", compute_units=132)
    for n, ipt in ((1024, 8), (2048, 8), (3000, 16), (4096, 16), (5000, 8), (16384, 8)):
        plan = plan_topk(gpu, f32, 1, n, 100, True)
        assert plan.single and plan.ipt == ipt, (n, plan.wg, plan.ipt)
    assert plan_topk(gpu, f32, 1, 4096, 100, True, items_per_thread=4).ipt == 4
    cpu = fake_profile(device_type="cpu")
    assert plan_topk(cpu, f32, 1, 4096, 100, True, groups_per_cu=2).ipt == 8
    for n in (3000, 4096):
        x = rng.standard_normal((3, n)).astype(np.float32)
        x[1, ::7] = x[1, 0]   # ties, broken by position
        for k, sorted_ in ((1, True), (100, True), (300, False), (n, True)):
            check_topk(queue, x, k, True, sorted_)
