"""Host orchestration of the radix sort: Sorter.sort and Sorter.argsort.

A sort is a chain of enqueued kernels, each waiting on the one before; nothing is read back and
nothing waits on the host. The returned event is the only synchronisation point.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple, Union, cast

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.typing import DTypeLike

from ..core.arguments import (Operand, attach_event, check_n, check_outputs, check_queue,
                              in_order, operand, wait_list)
from ..core.keys import key_codec, value_cl_type
from ..core.memory import QueuePools, checked_allocator, new_output, pooled_output
from ..core.render import programs_for
from ..core.launches import SortOperands
from ..core.sizes import check_index_dtype
from ..drivers.digit_passes import digit_passes
from ..planning.planner import Planner
from ..policies.overrides import check_overrides
from ..policies.segment import SegmentPolicy
from ..policies.sort import DEBUG_FIELDS, POLICY_FIELDS, SortPolicy, split_debug
from . import records as permuted
from . import segments as segmented

_VALUE_ITEMSIZES = (1, 2, 4, 8, 16)
_NO_QUEUE = object()


class Sorter:
    """Stable radix sort and argsort of OpenCL buffers on one context.

    ``radix_bits``, ``wg_size``, ``items_per_thread``, ``algorithm`` ("onesweep",
    "reduce_then_scan", "single_wg", "chunks", the CPUs' default) and the other knobs of the
    algorithms' policies (:class:`~clradix.policies.sort.SortPolicy`: ``ranking``,
    ``ring_slots``, ``blocks_per_cu``, ...) override the planner's policy, each where the planned
    algorithm takes it, for tests and benchmarks; left as None, the planner chooses per device.
    The debugging switches ``force_fallback`` and ``fused_scan``
    (:class:`~clradix.policies.sort.SortDebug`) are taken beside them.
    ``allocator`` (a callable taking a byte count, like pyopencl's allocators) provides temporaries;
    by default each in-order queue gets a memory pool whose blocks later calls on that queue reuse
    (``free_memory`` empties it), allocated immediately so that a failed allocation raises before
    anything is enqueued.

    One Sorter may be used from several threads at once (each with its own queue of the Sorter's
    context): planning, building and enqueueing hold its planner's lock, so its caches and the
    kernels' arguments are never touched by two threads together.
    """

    def __init__(self, context: cl.Context, *, radix_bits: Optional[int] = None,
                 wg_size: Optional[int] = None, items_per_thread: Optional[int] = None,
                 algorithm: Optional[str] = None,
                 allocator: Optional[Callable[[int], cl.MemoryObjectHolder]] = None,
                 segment_policy: Optional[SegmentPolicy] = None, **policy: Any) -> None:
        if not isinstance(context, cl.Context):
            raise TypeError(f"expected a pyopencl.Context, got {type(context).__name__}")
        unknown = set(policy) - set(POLICY_FIELDS + DEBUG_FIELDS)
        if unknown:
            raise TypeError(f"unknown Sorter keyword(s): {', '.join(sorted(unknown))}; policy "
                            f"fields are {', '.join(POLICY_FIELDS + DEBUG_FIELDS)}")
        if segment_policy is not None and not isinstance(segment_policy, SegmentPolicy):
            raise TypeError(f"segment_policy: expected a clradix.SegmentPolicy, got "
                            f"{type(segment_policy).__name__}")
        self.context = context
        self.allocator = allocator
        #: the segmented sort's tuning (None fields: the planner chooses)
        self.segment_policy = segment_policy
        keywords = dict(policy, radix_bits=radix_bits, wg_size=wg_size,
                        items_per_thread=items_per_thread, algorithm=algorithm)
        check_overrides(keywords)
        #: the policy overrides (the debugging switches are the planner's ``debug``)
        self.overrides, debug = split_debug(keywords)
        self._programs = programs_for(context)
        #: plans, builds and prepares sorts and segmented sorts (clradix.planning.planner)
        self.planner = Planner(self._programs, self.overrides, segment_policy, debug)
        self._pools = QueuePools()
        self._queue_checked = (_NO_QUEUE, False, None, 0)

    # ------------------------------------------------------------------ public API

    def sort(self, queue: cl.CommandQueue, buf: Union[cl.MemoryObjectHolder, cl_array.Array], *,
             dtype: Optional[DTypeLike] = None, n: Optional[int] = None,
             values: Optional[Union[cl.MemoryObjectHolder, cl_array.Array,
                                    Sequence[cl_array.Array]]] = None,
             value_dtype: Optional[DTypeLike] = None, descending: bool = False, begin_bit: int = 0,
             end_bit: Optional[int] = None,
             wait_for: Optional[Sequence[Optional[cl.Event]]] = None,
             allocator: Optional[Callable[[int], cl.MemoryObjectHolder]] = None,
             segments: Any = None, check_offsets: bool = False) -> cl.Event:
        """Sort ``buf`` in place (stable) and return the event of the last enqueued command.

        ``buf`` is a pyopencl Buffer (keys of ``dtype``, default uint32; ``n`` defaults to all of
        it) or a 1-D contiguous pyopencl Array (dtype and n from the array). ``values`` (Buffer or
        Array of 1, 2, 4, 8 or 16-byte elements, ``value_dtype`` for a Buffer whose size does not
        tell) is permuted with the keys. ``values`` may also be a list of Arrays, each permuted
        along its first axis with the keys, of any record width: ``(n,)`` of any dtype
        (structured and void dtypes too) or ``(n, ...)`` C-contiguous, e.g. ``(n, 3)`` float32
        positions, 12 bytes a key (an Array of another width than 1, 2, 4, 8 or 16 bytes, or of
        more than one axis, is taken the same way): the keys sort once with their positions as
        4-byte values, then each array is taken in that order through one temporary of its size
        and copied home (clradix.dispatch.records). ``begin_bit``/``end_bit`` restrict the sort
        to those bits of the order key. Floats sort like numpy: NaN last (first when
        descending), -0.0 == +0.0.
        ``segments`` (num_segments + 1 int32/int64 offsets: a pyopencl Array, or a numpy array)
        sorts each segment ``buf[offsets[i]:offsets[i + 1]]`` on its own (clradix.dispatch.segments).
        """
        checked = self._check_queue(queue)
        keys = operand(buf, self.context, "keys", dtype=dtype,
                       n=None if n is None else check_n(n), default_dtype=np.uint32)
        codec = key_codec(keys.dtype)
        n = keys.n
        vals = None
        begin_bit, end_bit = _bit_range(codec, begin_bit, end_bit)
        if values is not None and permuted.is_records(values):
            listed = list(values) if isinstance(values, (list, tuple)) else [values]
            if len(listed) == 1 and not permuted.is_records(listed[0]):
                values = listed[0]   # one array of a width the passes move: moved by them
            elif not listed:
                values = None
            else:
                if value_dtype is not None:
                    raise TypeError("value_dtype= describes one Buffer of values; a list of "
                                    "values takes pyopencl Arrays, which say their dtype")
                return permuted.sort_records(
                    self, queue, buf, keys, listed, dtype=keys.dtype, descending=descending,
                    begin_bit=begin_bit, end_bit=end_bit, wait=wait_list(wait_for),
                    allocator=allocator, segments=segments, check_offsets=check_offsets)
        if values is not None:
            vals = self._value_operand(values, value_dtype, n, keys)
        wait = wait_list(wait_for) + keys.events + (vals.events if vals else [])

        if segments is not None:
            evt = segmented.sort_segments(self, queue, codec, keys, vals, segments,
                                          descending=descending, begin_bit=begin_bit,
                                          end_bit=end_bit, wait=wait, allocator=allocator,
                                          check_offsets=check_offsets)
            return self._done(queue, evt, wait, keys, vals)
        if n <= 1 or begin_bit == end_bit:
            return self._done(queue, None, wait, keys, vals)
        vat = vals.at() if vals else None   # in place: in and out are one
        evt = self._enqueue(queue, codec, vals.dtype.itemsize if vals else 0, n, begin_bit,
                            end_bit, descending, False,
                            SortOperands(keys.at(), keys.at(), vat, vat), allocator, wait, checked)
        return self._done(queue, evt, wait, keys, vals)

    def argsort(self, queue: cl.CommandQueue, keys: Union[cl.MemoryObjectHolder, cl_array.Array], *,
                dtype: Optional[DTypeLike] = None, n: Optional[int] = None,
                out: Optional[Union[cl.MemoryObjectHolder, cl_array.Array]] = None,
                descending: bool = False, begin_bit: int = 0, end_bit: Optional[int] = None,
                wait_for: Optional[Sequence[Optional[cl.Event]]] = None,
                allocator: Optional[Callable[[int], cl.MemoryObjectHolder]] = None,
                segments: Any = None, check_offsets: bool = False,
                index_dtype: Optional[DTypeLike] = None
                ) -> Tuple[Union[cl_array.Array, cl.MemoryObjectHolder], cl.Event]:
        """Stable argsort: returns ``(indices, event)``; ``keys`` are left unchanged.

        ``indices`` is a new pyopencl Array of ``index_dtype`` (int32, uint32, int64 or uint64;
        by default uint32, or uint64 when n >= 2**32), or ``out`` itself (an Array of one of
        those dtypes, or a Buffer of ``index_dtype``, not overlapping the keys) when given. A
        32-bit type must hold every position (int32 below 2**31 keys, uint32 below 2**32).
        With ``segments``, each index is the position within its segment; ``out`` entries
        outside every segment are not written.
        """
        checked = self._check_queue(queue)
        k = operand(keys, self.context, "keys", dtype=dtype,
                    n=None if n is None else check_n(n), default_dtype=np.uint32)
        codec = key_codec(k.dtype)
        n = k.n
        idx_dtype, out_arr, o = self._index_output(queue, out, index_dtype, n, allocator)
        begin_bit, end_bit = _bit_range(codec, begin_bit, end_bit)
        if out is not None:
            check_outputs([("out", o)], [("the keys", k)])
        wait = wait_list(wait_for) + k.events + o.events

        if segments is not None:
            evt = segmented.sort_segments(self, queue, codec, k, None, segments,
                                          descending=descending, begin_bit=begin_bit,
                                          end_bit=end_bit, wait=wait, allocator=allocator,
                                          argsort_out=o, check_offsets=check_offsets)
            return out_arr, self._done(queue, evt, wait, o)
        if n == 0:
            return out_arr, self._done(queue, None, wait, o)
        # (n == 1 or no bit to sort by: the driver's sequence writes the indices in order)
        evt = self._enqueue(queue, codec, idx_dtype.itemsize, n, begin_bit, end_bit, descending,
                            True, SortOperands(k.at(), None, vals_out=o.at()), allocator, wait,
                            checked)
        return out_arr, self._done(queue, evt, wait, o)

    def _index_output(self, queue, out, index_dtype, n, allocator):
        """(index dtype, the array returned, its Operand) of an index output: ``out`` (its dtype
        unless ``index_dtype`` says otherwise) or a new array from the allocator."""
        if index_dtype is None and isinstance(out, cl_array.Array):
            index_dtype = out.dtype
        idx_dtype = check_index_dtype(index_dtype, n, "index_dtype" if out is None else "out")
        if out is None:
            out_arr = new_output(queue, "index output", idx_dtype, (n,),
                                 allocator or self.allocator)
            return idx_dtype, out_arr, Operand(out_arr.base_data, 0, n, idx_dtype, out_arr, [])
        return idx_dtype, out, operand(out, self.context, "out", dtype=idx_dtype, n=n)

    def lexsort(self, queue: cl.CommandQueue, keys: Union[Sequence[cl_array.Array],
                                                          cl_array.Array], *,
                out: Optional[Union[cl.MemoryObjectHolder, cl_array.Array]] = None,
                index_dtype: Optional[DTypeLike] = None, descending: bool = False,
                wait_for: Optional[Sequence[Optional[cl.Event]]] = None,
                allocator: Optional[Callable[[int], cl.MemoryObjectHolder]] = None
                ) -> Tuple[Union[cl_array.Array, cl.MemoryObjectHolder], cl.Event]:
        """The stable order of several keys, as ``numpy.lexsort``: the **last** key is the
        most significant, ties broken by the one before, and so on; returns ``(indices,
        event)`` and leaves the keys unchanged (as :meth:`argsort`).

        ``keys``: a sequence of 1-D contiguous Arrays of one length (any key dtypes, mixed), or
        a 2-D Array whose rows are the keys. ``descending`` reverses the order of every key
        (equal composite keys stay in input order). ``out`` and ``index_dtype``: as for
        :meth:`argsort` (uint32 by default). The least significant key is argsorted, then each
        more significant one is taken in the order so far and sorted with it, stably: one sort
        per key, nothing read back."""
        self._check_queue(queue)
        ops = permuted.key_operands(self, keys)
        n = ops[0].n
        idx_dtype, out_arr, o = self._index_output(queue, out, index_dtype, n, allocator)
        if out is not None:
            check_outputs([("out", o)], [(f"keys[{i}]", k) for i, k in enumerate(ops)])
        wait = wait_list(wait_for) + o.events
        if n == 0:
            return out_arr, self._done(queue, None, wait + [e for k in ops for e in k.events], o)
        # the order is built in the output when it starts its buffer (the sorts' values), else
        # in a temporary copied there
        pd = np.dtype(f"u{idx_dtype.itemsize}")
        perm: Any = o.buffer if o.offset == 0 else self.temporaries(queue, allocator)(
            n * pd.itemsize)
        evt = permuted.lexsort_order(self, queue, ops, perm, pd, descending=descending,
                                     wait=wait, allocator=allocator)
        if o.offset:
            evt = cl.enqueue_copy(queue, cast(cl.Buffer, o.buffer), perm,
                                  byte_count=n * pd.itemsize, dst_offset=o.offset * pd.itemsize,
                                  wait_for=[evt])
        return out_arr, self._done(queue, evt, wait, o)

    def sort_lex(self, queue: cl.CommandQueue, keys: Union[Sequence[cl_array.Array],
                                                           cl_array.Array], *,
                 values: Optional[Union[cl_array.Array, Sequence[cl_array.Array]]] = None,
                 descending: bool = False,
                 wait_for: Optional[Sequence[Optional[cl.Event]]] = None,
                 allocator: Optional[Callable[[int], cl.MemoryObjectHolder]] = None) -> cl.Event:
        """Sort several key arrays together, in place and stably, by :meth:`lexsort`'s order
        (numpy.lexsort's: the **last** key most significant), permuting ``values`` (an Array
        or a list of Arrays of any record width, as for :meth:`sort`) with them; returns the
        event of the last command. ``keys``: a sequence of 1-D contiguous Arrays of one length
        (mixed key dtypes), or a 2-D Array whose rows are the keys (all sorted in place). The
        order is computed once (:meth:`lexsort`), then every key and value array is taken in
        it."""
        self._check_queue(queue)
        if values is None:
            values = []
        return permuted.sort_lex(self, queue, keys, values, descending=descending,
                                 wait=wait_list(wait_for), allocator=allocator)

    def plan(self, device: cl.Device, dtype: DTypeLike, n: int,
             value_dtype: Optional[DTypeLike] = None) -> SortPolicy:
        """The policy this Sorter would use for ``n`` keys of ``dtype`` on ``device``."""
        vbytes = _value_bytes(value_dtype)
        return self.planner.plan(device, key_codec(dtype), vbytes, check_n(n),
                                 validated=False).policy

    def free_memory(self) -> None:
        """Release the temporaries the Sorter's memory pools hold for reuse."""
        with self.planner.lock:
            self._pools.free_held()

    def temp_bytes(self, n: int, dtype: DTypeLike = np.uint32,
                   value_dtype: Optional[DTypeLike] = None, *,
                   device: Optional[cl.Device] = None, begin_bit: int = 0,
                   end_bit: Optional[int] = None) -> int:
        """Bytes of temporary memory ``sort`` allocates for ``n`` keys (and values).

        One ping-pong buffer of n keys (and one of n values), plus the algorithm's constant part:
        onesweep's status ring and digit tables, or reduce-then-scan's count table; nothing
        when one work-group sorts the keys in local memory (single_wg). A size query: it plans,
        but builds no kernel.
        """
        n = check_n(n)
        codec = key_codec(dtype)
        begin_bit, end_bit = _bit_range(codec, begin_bit, end_bit)
        if n <= 1 or begin_bit == end_bit:
            return 0
        return self.planner.sort_temp_bytes(device or self.context.devices[0], codec,
                                       _value_bytes(value_dtype), n,
                                       lambda radix_bits: digit_passes(radix_bits, begin_bit,
                                                                       end_bit))

    def clear_caches(self) -> None:
        """Release this Sorter's kernels and the built programs of its context (shared by every
        Sorter and Selector of the context); they are rebuilt, from pyopencl's disk cache, on next
        use."""
        with self.planner.lock:
            self.planner.clear()
            self._programs.clear()

    def new_result(self, queue, what, dtype, shape, allocator=None):
        """A new result Array of a call on ``queue``: from ``allocator``, else from the queue's
        memory pool (its block back in the pool when the Array is freed, for the queue's later
        commands), else a Buffer of the context (an out-of-order queue has no pool)."""
        if allocator is None:
            pool = self._pools.allocator(queue)
            if pool is not None:
                return pooled_output(queue, what, dtype, shape, pool)
        return new_output(queue, what, dtype, shape, allocator)

    def temporaries(self, queue, allocator=None):
        """The allocator of a call's temporaries on ``queue``: ``allocator``, else the Sorter's,
        else the queue's memory pool; a failed allocation raises MemoryError naming the bytes."""
        return checked_allocator(queue, allocator or self.allocator, pools=self._pools)

    # ------------------------------------------------------------------ internals

    def _value_operand(self, values, value_dtype, n, keys):
        if values is keys.buffer or values is keys.array:
            raise ValueError("values must be another buffer than the keys")
        if value_dtype is None and isinstance(values, cl.MemoryObjectHolder):
            # a width is never guessed from the size: a buffer larger than n values would be
            # read with the wrong width and written past its n values
            raise ValueError(f"values: a Buffer does not say its element type; pass value_dtype= "
                             f"(one of {', '.join(str(w) for w in _VALUE_ITEMSIZES)} bytes: "
                             f"numpy's uint8 .. uint64 or a 16-byte type such as 'V16')")
        vals = operand(values, self.context, "values", dtype=value_dtype, n=None)
        if vals.n < n:
            raise ValueError(f"values: {vals.n} elements are fewer than the {n} keys "
                             f"(short by {n - vals.n})")
        value_cl_type(vals.dtype)  # TypeError for unsupported widths
        vals.n = n
        check_outputs([("the keys", keys), ("values", vals)])   # both sorted in place
        return vals

    def _check_queue(self, queue):
        """check_queue, skipped for the queue that passed it last. Returns (queue, in order,
        device, device pointer), kept as one tuple: threads with other queues may replace it."""
        checked = self._queue_checked
        if queue is not checked[0]:
            check_queue(self.context, queue)
            device = queue.device
            checked = self._queue_checked = (queue, in_order(queue), device, device.int_ptr)
        return checked

    def enqueue_keys(self, queue, codec, n, keys, keys_off, descending, wait, allocator=None,
                     out=None, out_off=0, index_bytes=0, src=None):
        """Sort ``n`` keys (every bit) at element ``keys_off`` of the Buffer ``keys`` in place,
        or with ``out`` write their stable argsort there (``index_bytes``-byte indices) and
        leave them alone; with ``src`` (Buffer, element offset) the keys are read there, only
        read, and the sorted keys written at ``keys`` (with ``out``: both), no copy enqueued.
        The event of the last command. Operands are taken as checked (n >= 2, one context, no
        overlap): the half of ``sort`` / ``argsort`` after their checks, shared with the
        numpy-like functions."""
        checked = self._check_queue(queue)
        dst = (keys, keys_off)
        if out is None:
            return self._enqueue(queue, codec, 0, n, 0, codec.bits, descending, False,
                                 SortOperands(src or dst, dst), allocator, wait, checked,
                                 src is not None)
        return self._enqueue(queue, codec, index_bytes, n, 0, codec.bits, descending, True,
                             SortOperands(src or dst, dst if src else None,
                                          vals_out=(out, out_off)),
                             allocator, wait, checked, src is not None)

    def _enqueue(self, queue, codec, value_bytes, n, begin_bit, end_bit, descending, argsort,
                 operands, allocator, wait, checked, keys_out=False):
        """Enqueue the prepared work of the call configuration (sort and argsort alike; planned,
        built and made ready by the planner on its first call)."""
        _, in_order, device, _ = checked
        prepared = self.planner.sort_work(device, codec, value_bytes, n, begin_bit, end_bit,
                                          descending, argsort, keys_out)
        alloc = states = None
        if prepared.sequence.temp_sizes:
            alloc = checked_allocator(queue, allocator or self.allocator, pools=self._pools)
            if in_order and prepared.sequence.state_temp is not None:
                pools = self._pools
                states = lambda nbytes: pools.state_block(queue, nbytes)  # noqa: E731
        return prepared.run(queue, operands, alloc, wait, in_order, states=states)

    def _done(self, queue, evt, wait, *operands):
        """The call's event (a marker when nothing was enqueued), attached to the arrays."""
        if evt is None:
            evt = cl.enqueue_marker(queue, wait_for=wait or None)
        for op in operands:
            if op is not None:
                attach_event(op.array, evt, op.events)
        return evt


def _value_bytes(value_dtype):
    """Bytes of a value (0: keys only); TypeError for an unsupported width."""
    if value_dtype is None:
        return 0
    value_cl_type(value_dtype)
    return np.dtype(value_dtype).itemsize


def _bit_range(codec, begin_bit, end_bit):
    bits = codec.bits
    if end_bit is None and begin_bit.__class__ is int and 0 <= begin_bit <= bits:
        return begin_bit, bits   # the common call: every bit
    if end_bit is None:
        end_bit = bits
    for name, v in (("begin_bit", begin_bit), ("end_bit", end_bit)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
    if not 0 <= begin_bit <= end_bit <= bits:
        raise ValueError(f"bit range [{begin_bit}, {end_bit}) is outside the {bits} bits of "
                         f"{codec.dtype} keys (need 0 <= begin_bit <= end_bit <= {bits})")
    return int(begin_bit), int(end_bit)
