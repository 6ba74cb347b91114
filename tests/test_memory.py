"""Temporary memory: allocator= (a pyopencl MemoryPool), and allocation failures.

A failed allocation is a MemoryError naming the bytes asked for, raised before anything is
enqueued: the caller's keys and values keep every byte.
"""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools
import pytest

import clradix

from data import DISTRIBUTIONS, float_specials
from conftest import FailingAllocator, check_sort, one_group_tile
from reference import bits_of


def _sizes(ctx, dtype):
    """One size per algorithm the planner uses here: a single tile and several tiles."""
    tile = one_group_tile(clradix.Sorter(ctx), ctx.devices[0], dtype)
    return [tile - 3, 5 * tile + 11]


@pytest.mark.parametrize("dtype", [np.float32, np.uint64, np.int16], ids=["float32", "uint64", "int16"])
def test_memory_pool_on_the_sorter(ctx, queue, rng, dtype):
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    sorter = clradix.Sorter(ctx, allocator=pool)
    for n in _sizes(ctx, dtype):
        # several rounds: later ones get blocks that hold earlier sorts' data (stale, not zero)
        for rnd in range(3):
            keys = DISTRIBUTIONS["float_specials" if rnd % 2 else "distinct16"](rng, dtype, n)
            check_sort(queue, sorter, keys, "pairs", descending=bool(rnd == 2))
            idx = check_sort(queue, sorter, keys, "argsort", descending=bool(rnd == 1))
            assert idx.allocator is pool  # the index array comes from the pool too
            del idx
    assert pool.managed_bytes > 0  # temporaries came from the pool
    assert pool.active_blocks == 0  # and went back to it


def test_memory_pool_per_call_wins(ctx, queue, rng):
    """allocator= of a call is used instead of the Sorter's."""
    pool_sorter = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    pool_call = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    sorter = clradix.Sorter(ctx, allocator=pool_sorter)
    n = _sizes(ctx, np.float32)[1]
    keys = float_specials(rng, np.float32, n)
    check_sort(queue, sorter, keys, "pairs", allocator=pool_call)
    idx = check_sort(queue, sorter, keys, "argsort", allocator=pool_call, descending=True)
    assert pool_sorter.managed_bytes == 0
    assert pool_call.active_blocks == 1 and idx.allocator is pool_call
    # and a Sorter without one takes the pool of the call
    plain = clradix.Sorter(ctx)
    check_sort(queue, plain, keys, "pairs", allocator=pool_call)
    assert pool_sorter.managed_bytes == 0


def test_pool_sizes_match_temp_bytes(ctx, queue, rng):
    """What a sort takes from its allocator is what Sorter.temp_bytes says."""
    sorter = clradix.Sorter(ctx)
    cases = [(np.float32, np.uint32), (np.uint64, None), (np.uint8, np.uint64)]
    for (dtype, vdt), n in ((c, n) for c in cases for n in _sizes(ctx, c[0])):
        asked = []

        def counting(nbytes):
            asked.append(nbytes)
            return cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
        keys = DISTRIBUTIONS["uniform"](rng, dtype, n)
        check_sort(queue, sorter, keys, "keys" if vdt is None else "pairs", allocator=counting,
                   values=None if vdt is None else np.arange(n).astype(vdt))
        assert sum(asked) == sorter.temp_bytes(n, dtype, vdt)


@pytest.mark.parametrize("how", ["cl", "python", "huge"])
@pytest.mark.parametrize("ok", [0, 1], ids=["first", "second"])
def test_failed_allocation_is_clear_and_changes_nothing(ctx, queue, rng, how, ok):
    sorter = clradix.Sorter(ctx)
    n = _sizes(ctx, np.float32)[1]
    keys = float_specials(rng, np.float32, n)
    vals = rng.integers(0, 2 ** 32, n, dtype=np.uint32)
    d_keys = cl_array.to_device(queue, keys)
    d_vals = cl_array.to_device(queue, vals)
    queue.finish()
    for call in ("sort", "argsort"):
        failing = FailingAllocator(queue, how, ok)
        with pytest.raises(MemoryError) as info:
            if call == "sort":
                sorter.sort(queue, d_keys, values=d_vals, allocator=failing)
            else:
                sorter.argsort(queue, d_keys, allocator=failing)
        msg = str(info.value)
        assert f"allocating {failing.asked[-1]} bytes of " in msg, msg
        assert ctx.devices[0].name.strip() in msg
        assert ("index output" if call == "argsort" and ok == 0 else "temporary memory") in msg
        queue.finish()
        np.testing.assert_array_equal(bits_of(d_keys.get()), bits_of(keys))
        np.testing.assert_array_equal(d_vals.get(), vals)
    # the Sorter still works afterwards
    check_sort(queue, sorter, keys, "pairs")


def test_failing_sorter_allocator(ctx, queue, rng):
    """The same through Sorter(allocator=...), for both algorithms the planner uses here."""
    for n in _sizes(ctx, np.int64):
        failing = FailingAllocator(queue, "cl")
        sorter = clradix.Sorter(ctx, allocator=failing)
        keys = DISTRIBUTIONS["uniform"](rng, np.int64, n)
        d_keys = cl_array.to_device(queue, keys)
        queue.finish()
        with pytest.raises(MemoryError, match=r"allocating \d+ bytes of index output"):
            sorter.argsort(queue, d_keys)
        np.testing.assert_array_equal(d_keys.get(), keys)
        if sorter.temp_bytes(n, np.int64):
            with pytest.raises(MemoryError, match=f"allocating {n * 8} bytes of temporary memory"):
                sorter.sort(queue, d_keys)
        else:  # one tile in local memory: sort needs no temporary
            sorter.sort(queue, d_keys).wait()
            keys = np.sort(keys)
        np.testing.assert_array_equal(d_keys.get(), keys)


def test_default_pool_per_queue(ctx, queue, rng):
    """Without allocator=, temporaries come from a pool per in-order queue, reused by later calls
    on that queue (with stale data in the blocks) and released by free_memory(); argsort's
    output is not a pool block; an out-of-order queue allocates afresh."""
    sorter = clradix.Sorter(ctx)
    n = _sizes(ctx, np.float32)[1]
    for rnd in range(3):
        keys = DISTRIBUTIONS["float_specials" if rnd % 2 else "uniform"](rng, np.float32, n)
        check_sort(queue, sorter, keys, "pairs", descending=rnd == 2)
        idx = check_sort(queue, sorter, keys, "argsort")
        assert idx.allocator is None
    pool = sorter._pools.allocator(queue)
    assert pool.managed_bytes > 0 and pool.active_blocks == 0 and pool.held_blocks > 0
    other = cl.CommandQueue(ctx)
    check_sort(other, sorter, float_specials(rng, np.float32, n), "pairs")
    assert sorter._pools.allocator(other) is not pool
    sorter.free_memory()
    assert pool.held_blocks == 0
    props = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    try:
        ooo = cl.CommandQueue(ctx, properties=props)
    except cl.Error:
        return  # the device has no out-of-order queues
    assert sorter._pools.allocator(ooo) is None
    check_sort(ooo, sorter, float_specials(rng, np.float32, n), "pairs")


def test_numpy_input_beyond_the_largest_allocation(ctx, queue, tmp_path):
    """A numpy input larger than the device allocates at once is a MemoryError naming the bytes
    and the limit, raised before anything is allocated (it was pyopencl's LogicError
    INVALID_BUFFER_SIZE), for every function that copies numpy inputs to the device. The input
    is a sparse file mapped read-only: no host memory is spent on it."""
    limit = ctx.devices[0].max_mem_alloc_size
    n = limit // 4 + 1
    path = tmp_path / "huge"
    with open(path, "wb") as f:
        f.truncate(n * 4)
    huge = np.memmap(path, dtype=np.float32, mode="r", shape=(n,))
    small = np.arange(3, dtype=np.float32)
    d_small = cl_array.to_device(queue, small)
    for name, call in [
            ("sort", lambda: clradix.sort(huge, queue=queue)),
            ("argsort", lambda: clradix.argsort(huge, queue=queue)),
            ("topk", lambda: clradix.topk(huge, 3, queue=queue)),
            ("unique", lambda: clradix.unique(huge, queue=queue)),
            ("run_lengths", lambda: clradix.run_lengths(huge, queue=queue)),
            ("searchsorted", lambda: clradix.searchsorted(small, huge, queue=queue)),
            ("searchsorted on the device", lambda: clradix.searchsorted(d_small, huge)),
            ("lexsort", lambda: clradix.lexsort([huge], queue=queue))]:
        with pytest.raises(MemoryError) as info:
            call()
        msg = str(info.value)
        assert f"allocating {n * 4} bytes of the device copy of " in msg, (name, msg)
        assert f"allocates at most {limit} bytes at once" in msg, (name, msg)


def test_pools_of_deferred_blocks(ctx, queue, rng, monkeypatch):
    """The pools NVIDIA's runtime gets (core/memory.py, block_allocator: pyopencl's
    DeferredAllocator, whose migration-free blocks keep calls behind a user event from crashing
    it), run here on this device: results right, blocks reused, and no warning from pyopencl
    about a pool of a deferred allocator."""
    import warnings
    from clradix.core import memory
    monkeypatch.setattr(memory, "block_allocator",
                        lambda q: cl_tools.DeferredAllocator(q.context))
    sorter = clradix.Sorter(ctx)
    keys = rng.random(30000).astype(np.float32)   # (beyond one work-group's tile everywhere)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "Memory pools expect non-deferred")
        for n in (30000, 20000, 30000):
            d = cl_array.to_device(queue, keys[:n])
            sorter.sort(queue, d).wait()
            np.testing.assert_array_equal(d.get(), np.sort(keys[:n]))
        pool = sorter._pools.allocator(queue)
    assert isinstance(pool, cl_tools.MemoryPool) and pool.held_blocks + pool.active_blocks > 0
