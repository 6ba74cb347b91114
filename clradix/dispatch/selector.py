"""Host orchestration of top-k: Selector.topk (the driver: clradix.drivers.radix_select).

The k largest (or smallest) keys of each row and their positions, in one chain of enqueued
kernels for all rows: no read-back, no loop over rows. Ties go to the smaller position and NaN
counts as the largest value, so the result is the same on every run and device.
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence, Tuple, Union

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.typing import DTypeLike

from ..core.arguments import (Operand, buffer_size, attach_event, check_context, check_n,
                              check_outputs, check_queue, operand, wait_list)
from ..core.keys import key_codec
from ..core.memory import QueuePools, checked_allocator, new_output
from ..core.render import programs_for
from ..core.sizes import check_index_dtype
from ..drivers.radix_select import TopkOperands, global_sorts
from ..planning.planner import Planner, topk_driver_class
from ..policies.overrides import check_overrides
from ..policies.topk import TopkPolicy
from .sorter import Sorter


class Selector:
    """Top-k of OpenCL buffers and pyopencl arrays on one context.

    ``wg_size`` (a power of two from 64 to 2048, the 11-bit histogram's digits, and at most the
    devices' largest work-group) and ``items_per_thread`` (a power of two >= 2; wg_size x
    items_per_thread below 65536) set the selection kernels' tile, ``groups_per_cu`` (a
    positive integer) how many work-groups per compute unit share a row; ``sort_size`` the
    largest k sorted in local memory (a power of two up to 2048, lowered where the local memory
    holds fewer keys of the type; larger k use the radix sort). Left as None, the planner chooses
    (``clradix.policies.topk``). ``allocator`` (a callable taking a byte count) provides
    temporaries; without one, each in-order queue gets a memory pool (``free_memory`` empties
    it). ``sorter``: the :class:`~clradix.Sorter` (same context) of the global-sort route. Every
    option is checked here: a wrong one is a TypeError or ValueError naming it.
    """

    def __init__(self, context: cl.Context, *, wg_size: Optional[int] = None,
                 items_per_thread: Optional[int] = None, groups_per_cu: Optional[int] = None,
                 sort_size: Optional[int] = None,
                 allocator: Optional[Callable[[int], cl.MemoryObjectHolder]] = None,
                 sorter: Optional[Sorter] = None) -> None:
        if not isinstance(context, cl.Context):
            raise TypeError(f"expected a pyopencl.Context, got {type(context).__name__}")
        check_overrides(dict(wg_size=wg_size, items_per_thread=items_per_thread,
                             groups_per_cu=groups_per_cu, sort_size=sort_size), TopkPolicy,
                        max_wg_size=min(d.max_work_group_size for d in context.devices))
        _check_helpers(context, allocator, sorter)
        self.context = context
        self.allocator = allocator
        self.overrides = dict(wg_size=wg_size, items_per_thread=items_per_thread,
                              groups_per_cu=groups_per_cu, sort_size=sort_size)
        #: plans, builds and prepares the radix selects (clradix.planning.planner)
        self.planner = Planner(programs_for(context), self.overrides)
        self._sorter = sorter
        self._pools = QueuePools()

    #: when a list, topk() appends (kernel name, event) of each of its own commands (profiling)
    trace = None

    # ------------------------------------------------------------------ public API

    def topk(self, queue: cl.CommandQueue, keys: Union[cl.MemoryObjectHolder, cl_array.Array],
             k: int, *, dtype: Optional[DTypeLike] = None, rows: Optional[int] = None,
             largest: bool = True, sorted: bool = True, values_out: Optional[cl_array.Array] = None,
             indices_out: Optional[cl_array.Array] = None,
             wait_for: Optional[Sequence[Optional[cl.Event]]] = None,
             allocator: Optional[Callable[[int], cl.MemoryObjectHolder]] = None,
             index_dtype: Optional[DTypeLike] = None
             ) -> Tuple[cl_array.Array, cl_array.Array, cl.Event]:
        """The ``k`` largest (``largest=False``: smallest) keys of each row and their positions.

        ``keys``: a contiguous pyopencl Array, 1-D (one row) or 2-D (a row each), or a Buffer of
        ``rows`` (default 1) equal rows of ``dtype`` keys (default uint32). Returns ``(values,
        indices, event)``: Arrays of shape (k,) or (rows, k) (or ``values_out`` / ``indices_out``,
        Arrays of that size), indices of ``index_dtype`` (int32, uint32, int64 or uint64; by
        default ``indices_out``'s dtype, else uint32, or uint64 for rows of 2**32 keys or more;
        a 32-bit type must hold every position in a row).
        ``sorted=True`` orders each row's results (largest first for ``largest=True``, ties by
        position); ``sorted=False`` leaves them in an unspecified order (the same set).
        ``allocator`` (else the Selector's) provides the temporaries and new outputs; one that
        raises makes the call raise MemoryError naming the bytes, with no byte of the keys or
        outputs changed (the radix sort of large sorted k allocates after the selection passes
        are enqueued; those write only temporaries).
        The event becomes the outputs' only event (``Array.events``); nothing waits on the host.
        """
        check_queue(self.context, queue)
        src, n_rows, row_len, shape = self._keys(keys, dtype, rows)
        codec = key_codec(src.dtype)
        k = _check_k(k, row_len)
        if index_dtype is None and indices_out is not None:
            index_dtype = indices_out.dtype
        idx_dtype = check_index_dtype(index_dtype, row_len,
                                      "index_dtype" if indices_out is None else "indices_out")
        # the kernels write unsigned indices of the same width (the same bits)
        idx_bytes = idx_dtype.itemsize
        out_shape = shape[:-1] + (k,)
        self._check_out(values_out, "values_out", codec.dtype, out_shape)
        self._check_out(indices_out, "indices_out", idx_dtype, out_shape)
        if values_out is not None and values_out is indices_out:
            raise ValueError("values_out and indices_out must be different arrays")
        # a kernel writing an output over the keys (or the other output) scrambles the results
        check_outputs([("values_out", values_out), ("indices_out", indices_out)],
                      [("the keys", src)])
        if n_rows * k:   # plan and build first: a refused configuration allocates nothing
            prepared = self.prepared(queue, codec, n_rows, row_len, k, sorted, largest,
                                     idx_bytes)
        # new outputs before anything is enqueued: a failed allocation is a MemoryError naming
        # the bytes, and no byte of the keys or outputs changes
        user = allocator or self.allocator
        values = values_out if values_out is not None else \
            new_output(queue, "values output", codec.dtype, out_shape, user)
        indices = indices_out if indices_out is not None else \
            new_output(queue, "indices output", idx_dtype, out_shape, user)
        replaced = {id(values): list(values.events), id(indices): list(indices.events)}
        wait = wait_list(wait_for) + list(src.events) + replaced[id(values)] + replaced[id(indices)]
        if n_rows * k == 0:
            evt = cl.enqueue_marker(queue, wait_for=wait or None)
        else:
            evt = self.enqueue(queue, prepared, src.buffer, src.offset, values, indices, wait,
                               allocator)
        # not Array.add_event: it waits on the host once an array holds more than 12 events
        for a in (values, indices):
            attach_event(a, evt, replaced[id(a)])
        return values, indices, evt

    def prepared(self, queue, codec, n_rows, row_len, k, sorted, largest, idx_bytes):
        """The prepared work of a top-k configuration (planned and built on its first call):
        the half of ``topk`` after its checks, shared with the numpy-like ``clradix.topk``."""
        key = (queue.device.int_ptr, codec.dtype, n_rows, row_len, k, bool(sorted),
               bool(largest), idx_bytes)
        prepared = self.planner.ready(key)
        if prepared is None:
            prepared = self.planner.prepare_topk(key, queue.device, codec, n_rows, row_len, k,
                                                 sorted, largest,
                                                 lambda: self._get_sorter().planner, idx_bytes)
        return prepared

    def enqueue(self, queue, prepared, keys, keys_off, values, indices, wait, allocator=None):
        """Enqueue ``prepared`` work on checked operands (the keys' buffer and element offset,
        the output Arrays); the event of its last command."""
        alloc = checked_allocator(queue, allocator or self.allocator, pools=self._pools)
        prepared.driver.trace = self.trace
        operands = TopkOperands((keys, keys_off),
                                (values.base_data, values.offset // values.dtype.itemsize),
                                (indices.base_data, indices.offset // indices.dtype.itemsize))
        return prepared.run(queue, operands, alloc, wait)

    def temporaries(self, queue, allocator=None):
        """The allocator of a call's temporaries on ``queue``: ``allocator``, else the
        Selector's, else the queue's memory pool; a failed allocation raises MemoryError naming
        the bytes."""
        return checked_allocator(queue, allocator or self.allocator, pools=self._pools)

    def temp_bytes(self, rows: int, row_len: int, k: int, dtype: DTypeLike = np.uint32, *,
                   sorted: bool = True, device: Optional[cl.Device] = None) -> int:
        """Bytes of temporary memory ``topk`` allocates for ``rows`` rows of ``row_len`` keys:
        what it asks its allocator for, in all. Builds nothing; refuses what ``topk`` refuses."""
        rows = check_n(rows, "rows")
        row_len = check_n(row_len, "row_len")
        codec = key_codec(dtype)
        k = _check_k(k, row_len)
        if rows * k == 0:
            return 0
        device = device or self.context.devices[0]
        plan = self.planner.plan_topk(device, codec, rows, row_len, k, sorted)
        total = topk_driver_class(plan).temp_bytes(plan, codec, rows, k)
        if plan.route == "global":
            sorter = self._get_sorter()
            for dt, vdt, end_bit in global_sorts(codec, rows, row_len, plan.out_index_np):
                total += sorter.temp_bytes(rows * k, dt, vdt, device=device, end_bit=end_bit)
        return int(total)

    def free_memory(self) -> None:
        """Release the temporaries the Selector's (and its Sorter's) memory pools hold for reuse."""
        with self.planner.lock:
            self._pools.free_held()
            if self._sorter is not None:
                self._sorter.free_memory()

    # ------------------------------------------------------------------ operands

    def _keys(self, keys, dtype, rows):
        """(operand, rows, row length, result shape without k) of the keys."""
        if isinstance(keys, cl_array.Array):
            if dtype is not None and np.dtype(dtype) != keys.dtype:
                raise TypeError(f"keys: dtype={np.dtype(dtype)} given, but the array holds "
                                f"{keys.dtype}")
            ndim = len(keys.shape)
            if ndim not in (1, 2):
                raise ValueError(f"keys: expected a 1-D or 2-D array, got shape {keys.shape}")
            if not (keys.flags.c_contiguous or keys.size <= 1):
                raise ValueError(f"keys: array is not C-contiguous (shape {keys.shape}, strides "
                                 f"{keys.strides})")
            if rows is not None and rows != (keys.shape[0] if ndim == 2 else 1):
                raise ValueError(f"keys: rows={rows} disagrees with the array's shape {keys.shape}")
            key_codec(keys.dtype)
            # the rows back to back: the checks of a 1-D operand (context, offset, usable buffer)
            flat = operand(keys.reshape(-1) if ndim == 2 else keys, self.context, "keys")
            n_rows, row_len = (keys.shape if ndim == 2 else (1, keys.shape[0]))
            flat.array, flat.events = keys, list(keys.events)
            return flat, int(n_rows), int(row_len), tuple(keys.shape)
        if isinstance(keys, cl.MemoryObjectHolder):
            d = key_codec(dtype if dtype is not None else np.uint32).dtype
            check_context(self.context, keys.context, "keys")
            n = buffer_size(keys, "keys") // d.itemsize
            rows = 1 if rows is None else check_n(rows, "rows")
            if rows < 1:
                raise ValueError(f"rows must be positive for a Buffer, got {rows}")
            if n % rows:
                raise ValueError(f"keys: a buffer of {n} {d} keys does not split into {rows} equal "
                                 f"rows")
            shape = (n,) if rows == 1 else (int(rows), n // rows)
            return Operand(keys, 0, n, d), int(rows), n // rows, shape
        raise TypeError(f"keys: expected a pyopencl Buffer or pyopencl.array.Array, "
                        f"got {type(keys).__name__}")

    def _check_out(self, out, what, dtype, shape):
        """TypeError / ValueError unless ``out`` (if given) is a contiguous Array of ``dtype`` and
        ``shape`` on this context."""
        if out is None:
            return
        if not isinstance(out, cl_array.Array):
            raise TypeError(f"{what}: expected a pyopencl.array.Array, got {type(out).__name__}")
        if out.dtype != dtype:
            raise TypeError(f"{what}: expected dtype {dtype}, got {out.dtype}")
        if out.size != math.prod(shape) or not (out.flags.c_contiguous or out.size <= 1):
            raise ValueError(f"{what}: expected a contiguous array of shape {shape}, got shape "
                             f"{out.shape}")
        check_context(self.context, out.context, what)

    def _get_sorter(self):
        with self.planner.lock:
            if self._sorter is None:
                self._sorter = Sorter(self.context, allocator=self.allocator)
            return self._sorter


def _check_helpers(context, allocator, sorter):
    """TypeError / ValueError unless ``allocator`` is callable and ``sorter`` a Sorter of
    ``context`` (each None or given)."""
    if allocator is not None and not callable(allocator):
        raise TypeError(f"allocator must be a callable taking a byte count (such as "
                        f"pyopencl.tools.MemoryPool), got {type(allocator).__name__}")
    if sorter is not None:
        if not isinstance(sorter, Sorter):
            raise TypeError(f"sorter must be a clradix.Sorter, got {type(sorter).__name__}")
        check_context(context, sorter.context, "sorter")


def _check_k(k, row_len):
    k = check_n(k, "k")
    if k > row_len:
        raise ValueError(f"k={k} exceeds the row length {row_len}")
    return k
