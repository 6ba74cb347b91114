"""Temporary memory: a pyopencl memory pool per in-order queue, and checked allocation.

A sort or top-k allocates its temporaries, enqueues its commands and releases the temporaries
when it returns, while the commands may still be running. A pool hands a released block to its
next allocation at once, which is safe only for commands that run after the earlier ones: the
next call on the same in-order queue. So each in-order queue gets its own pool (the most recent
``MAX_POOLS`` queues), and out-of-order queues get none (their calls allocate afresh). Blocks are
allocated with ``ImmediateAllocator``, so that running out of memory fails in the call, except on
NVIDIA's OpenCL (``block_allocator``).

:func:`checked_allocator` is how every call gets its allocator: the caller's, else the pool,
wrapped so that a failed allocation is a MemoryError naming the bytes and what they were for.
"""

import math
import threading
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools

from .arguments import in_order
from .device import DeviceProfile

MAX_POOLS = 8
#: the least size of a queue's state block (os_fused's counters and histogram of 64-bit keys
#: with 8-byte indices take 16.5 KiB)
STATE_BYTES = 32 << 10


class QueuePools:
    """The memory pools of one Sorter or Selector, keyed by queue (safe to use from several
    threads)."""

    def __init__(self):
        self._pools = {}   # queue -> MemoryPool, least recently used first
        self._states = {}  # in-order queue -> its state block (state_block), likewise
        self._lock = threading.Lock()
        self._recent = (None, None)   # (queue, its pool) of the last lookup (one tuple: atomic)

    def allocator(self, queue):
        """The pool of ``queue`` (made on first use), or None for an out-of-order queue."""
        recent = self._recent
        if recent[0] is queue:   # the queue of the last call: no lock, no reordering
            return recent[1]
        if not in_order(queue):
            return None
        with self._lock:
            pool = self._pools.pop(queue, None)
            if pool is None:
                with warnings.catch_warnings():
                    # pyopencl warns that a pool of a deferred allocator may learn of a failed
                    # allocation late: NVIDIA's pools are that by choice (block_allocator)
                    warnings.filterwarnings("ignore", "Memory pools expect non-deferred",
                                            UserWarning)
                    pool = cl_tools.MemoryPool(block_allocator(queue))
                while len(self._pools) >= MAX_POOLS:
                    self._pools.pop(next(iter(self._pools))).free_held()
            self._pools[queue] = pool
            self._recent = (queue, pool)
            return pool

    def state_block(self, queue, nbytes):
        """(the state block kept for the in-order ``queue``, of at least ``nbytes``; the event
        of its fill with zeros when it was made now, else None): launches that find it zero
        leave it zero (LaunchSequence.state), so only a new block is filled. The fill is
        enqueued under the lock, so a call on another thread that gets the block enqueues its
        commands after it."""
        with self._lock:
            block = self._states.pop(queue, None)
            filled = None
            if block is None or block.size < nbytes:
                block = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE,
                                  max(int(nbytes), STATE_BYTES))
                filled = cl.enqueue_fill_buffer(queue, block, np.uint32(0), 0, block.size)
                while len(self._states) >= MAX_POOLS:
                    self._states.pop(next(iter(self._states)))
            self._states[queue] = block
            return block, filled

    def free_held(self):
        """Release the blocks the pools hold for reuse (blocks still in use stay allocated)."""
        with self._lock:
            for pool in self._pools.values():
                pool.free_held()


def block_allocator(queue):
    """The allocator of a pool's new blocks on ``queue``: pyopencl's ImmediateAllocator (which
    enqueues the new Buffer's migration to the queue, so that a failed allocation fails here),
    but on NVIDIA's OpenCL its DeferredAllocator. There, a migration enqueued behind commands that
    still wait for an unset user event crashes the runtime once the event is set (segmentation
    fault in clFinish; H200, driver 580.159.04: two medians behind one user event, or a sort, a
    kthvalue and a sort;
    scripts/probe-nvidia-deferred-args.py), and a call's new block follows the commands of the
    calls before it."""
    if DeviceProfile.from_device(queue.device).is_nvidia:   # (once a pool)
        return cl_tools.DeferredAllocator(queue.context)
    return cl_tools.ImmediateAllocator(queue)


def checked_allocator(queue, chosen, what="temporary memory", pools=None):
    """allocate(nbytes) for one call: from ``chosen`` (the caller's allocator), else from ``pools``'
    pool of ``queue`` (looked up at the first request: a call that allocates nothing makes no
    pool), else immediately on the queue. A failure (an OpenCL error or MemoryError) is a
    MemoryError naming the bytes asked for, ``what`` they were for and the device."""
    box = []

    def allocate(nbytes):
        if not box:
            alloc = chosen
            if alloc is None and pools is not None:
                alloc = pools.allocator(queue)
            box.append(alloc if alloc is not None else block_allocator(queue))
        try:
            return box[0](max(int(nbytes), 1))
        except (cl.Error, MemoryError) as exc:
            raise MemoryError(f"allocating {int(nbytes)} bytes of {what} on "
                              f"{queue.device.name.strip()} failed: {exc}") from exc
    return allocate


def new_output(queue, what, dtype, shape, allocator):
    """A new output Array of ``shape``, from ``allocator`` (which the Array keeps as its
    ``allocator``; never a pool: an output outlives the call) or, as pyopencl's own arrays are, a
    Buffer of the context (no command enqueued: an immediate allocator's migration would be one
    more command per output, 7-10 us of host time on NVIDIA's runtime and 0.2 ms on PoCL's); a
    failure, or more bytes than the device allocates at once, is a MemoryError naming the bytes
    and ``what`` they were for."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if not nbytes:
        return cl_array.empty(queue, shape, dtype, allocator=allocator)
    data = checked_allocator(queue, allocator or _context_allocator(queue), what)(nbytes)
    return _array(queue, shape, dtype, data, allocator)


def upload(queue, host, what):
    """A pyopencl Array on ``queue`` holding a copy of the C-contiguous numpy array ``host``
    (the copy done when this returns), in a Buffer of the context as ``new_output`` makes: an
    array larger than the device allocates at once, or a failed allocation, is a MemoryError
    naming the bytes and ``what`` they hold, raised before anything is allocated or
    enqueued."""
    dev = new_output(queue, what, host.dtype, host.shape, None)
    if dev.size:
        dev.set(host, queue=queue)
    return dev


def pooled_output(queue, what, dtype, shape, pool):
    """A new output Array of ``shape`` from the memory ``pool`` (which the Array keeps as its
    ``allocator``): its block goes back to the pool when the Array is freed, for the pool's
    queue's later commands. A failure is a MemoryError naming the bytes and ``what``."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if not nbytes:
        return cl_array.empty(queue, shape, dtype, allocator=pool)
    try:
        data = pool.allocate(nbytes)
    except (cl.Error, MemoryError) as exc:
        raise MemoryError(f"allocating {nbytes} bytes of {what} on "
                          f"{queue.device.name.strip()} failed: {exc}") from exc
    return _array(queue, shape, dtype, data, pool)


def _array(queue, shape, dtype, data, allocator):
    """An Array of ``shape`` over ``data`` (C-contiguous from its start)."""
    if _FAST_ARRAY and shape:
        # pyopencl's own fast constructor (what its array methods use), a third of the time of
        # the checking one; shape and C strides are known to be right here
        if len(shape) == 1:   # the common result: its one stride is the itemsize
            size = int(shape[0])
            shape, c_strides = (size,), (dtype.itemsize,)
        else:
            shape = tuple([int(s) for s in shape])   # (a generator costs more than the axes)
            strides, step = [], dtype.itemsize
            for s in reversed(shape):
                strides.append(step)
                step *= s
            size, c_strides = math.prod(shape), tuple(reversed(strides))
        try:
            return cl_array.Array(None, shape, dtype, allocator=allocator, data=data,
                                  strides=c_strides, _fast=True, _size=size,
                                  _context=queue.context, _queue=queue)
        except TypeError:   # a pyopencl whose fast constructor differs
            pass
    return cl_array.Array(queue, shape, dtype, data=data, allocator=allocator)


def _context_allocator(queue):
    """allocate(nbytes): a Buffer of ``queue``'s context, no larger than the device allocates
    at once (checked_allocator names the failure)."""
    def allocate(nbytes):
        limit = queue.device.max_mem_alloc_size
        if nbytes > limit:
            raise MemoryError(f"the device allocates at most {limit} bytes at once")
        return cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
    return allocate


_FAST_ARRAY = "_fast" in cl_array.Array.__init__.__code__.co_varnames
