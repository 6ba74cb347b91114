"""Host orchestration of top-k: Selector.topk (MSD radix select, cl_templates/topk.cl.mako).

The k largest (or smallest) keys of each row and their positions, in one chain of enqueued
kernels for all rows: no read-back, no loop over rows. Ties go to the smaller position and NaN
counts as the largest value, so the result is the same on every run and device.

Temporary memory, per call (``Selector.temp_bytes``, exactly what a call asks its allocator for):
one allocation, split into sub-buffers, of two candidate buffers of ``cap`` keys and positions per
row, cap = min(row_len, max(row_len // 32, 1024)) (about 1/8 of the input for 32-bit keys, 16 bytes
x 2048 per row for short rows), 768 counters and two row states per row, and for sorted results k
keys and indices per row (each part aligned to 4 KiB); plus the sorts' own temporaries when k
exceeds the local-memory sort.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional, Sequence, Tuple, Union

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools
from numpy.typing import DTypeLike

from .device import DeviceProfile
from .keys import key_codec
from .memory import QueuePools
from .arguments import _buffer_size, attach_event, check_context, check_n, check_queue, operand
from .render import programs_for
from .sorter import Sorter, _events

DIGIT_BITS = 8
RADIX = 1 << DIGIT_BITS
STATE_BYTES = 64  # sizeof(row_state) is at most 56

# Positions and counts are 32-bit below this row length, 64-bit from it on (a module constant so
# that tests can force the 64-bit kernels at small sizes).
INDEX32_LIMIT = 2 ** 31

DEFAULT_ITEMS_PER_THREAD = 8
# A tile's taken and candidate counts share one 32-bit word in the pass kernels' scan.
TILE_LIMIT = 1 << 16
# The local-memory sort's largest size (topk_sort_rows; _local_sort_size picks at most this).
MAX_SORT_SIZE = 2048


class Selector:
    """Top-k of OpenCL buffers and pyopencl arrays on one context.

    ``wg_size`` (a power of two from 256, the histogram's digits, up to the devices' largest
    work-group) and ``items_per_thread`` (a power of two >= 2, default 8; wg_size x
    items_per_thread below 65536) set the selection kernels' tile, ``groups_per_cu`` (a positive
    integer) how many work-groups per compute unit share a row; ``sort_size`` the largest k sorted
    in local memory (a power of two up to 2048, lowered where the local memory holds fewer keys of
    the type; larger k use the radix sort). ``allocator`` (a callable taking a byte count) provides
    temporaries; without one, each in-order queue gets a memory pool (``free_memory`` empties it).
    ``sorter``: the :class:`~clradix.Sorter` (same context) of the global-sort route. Every option
    is checked here: a wrong one is a TypeError or ValueError naming it.
    """

    def __init__(self, context: cl.Context, *, wg_size: int = 256,
                 items_per_thread: Optional[int] = None, groups_per_cu: Optional[int] = None,
                 sort_size: Optional[int] = None,
                 allocator: Optional[Callable[[int], cl.MemoryObjectHolder]] = None,
                 sorter: Optional[Sorter] = None) -> None:
        if not isinstance(context, cl.Context):
            raise TypeError(f"expected a pyopencl.Context, got {type(context).__name__}")
        _check_options(context, wg_size, items_per_thread, groups_per_cu, sort_size, allocator,
                       sorter)
        self.context = context
        self.wg_size = wg_size
        self.items_per_thread = items_per_thread
        self.groups_per_cu = groups_per_cu
        self.sort_size = sort_size
        self.allocator = allocator
        self._sorter = sorter
        self._programs = programs_for(context)   # shared with the context's Sorters
        self._kernels = {}
        self._profiles = {}
        self._lock = threading.RLock()
        self._pools = QueuePools()

    #: when a list, topk() appends (kernel name, event) of each of its own commands (profiling)
    trace = None

    def _traced(self, name, evt):
        if self.trace is not None:
            self.trace.append((name, evt))
        return evt

    # ------------------------------------------------------------------ public API

    def topk(self, queue: cl.CommandQueue, keys: Union[cl.MemoryObjectHolder, cl_array.Array], k: int, *,
             dtype: Optional[DTypeLike] = None, rows: Optional[int] = None, largest: bool = True,
             sorted: bool = True, values_out: Optional[cl_array.Array] = None,
             indices_out: Optional[cl_array.Array] = None,
             wait_for: Optional[Sequence[Optional[cl.Event]]] = None,
             allocator: Optional[Callable[[int], cl.MemoryObjectHolder]] = None
             ) -> Tuple[cl_array.Array, cl_array.Array, cl.Event]:
        """The ``k`` largest (``largest=False``: smallest) keys of each row and their positions.

        ``keys``: a contiguous pyopencl Array, 1-D (one row) or 2-D (a row each), or a Buffer of
        ``rows`` (default 1) equal rows of ``dtype`` keys (default uint32). Returns ``(values,
        indices, event)``: Arrays of shape (k,) or (rows, k) (or ``values_out`` / ``indices_out``,
        Arrays of that size), indices uint32 (uint64 for rows of 2**32 keys or more).
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
        idx_dtype = np.dtype(np.uint32 if row_len < 2 ** 32 else np.uint64)
        out_shape = shape[:-1] + (k,)
        self._check_out(values_out, "values_out", codec.dtype, out_shape)
        self._check_out(indices_out, "indices_out", idx_dtype, out_shape)
        if values_out is not None and values_out is indices_out:
            raise ValueError("values_out and indices_out must be different arrays")
        m = n_rows * k
        dev = queue.device
        if m:
            # plan and build before allocating: a refused configuration allocates nothing
            plan = self._plan(dev, codec, n_rows, row_len, k, sorted)
            with self._lock:
                kn = self._program(dev, codec, plan)
        # outputs and temporaries (but the global route's sorts' own), allocated before anything
        # is enqueued: a failed allocation is a MemoryError naming the bytes, and no byte of the
        # keys or outputs changes
        values = values_out if values_out is not None else \
            self._new_out(queue, "values output", codec.dtype, out_shape, allocator)
        indices = indices_out if indices_out is not None else \
            self._new_out(queue, "indices output", idx_dtype, out_shape, allocator)
        replaced = {id(values): list(values.events), id(indices): list(indices.events)}
        wait = _events(wait_for) + list(src.events) + replaced[id(values)] + replaced[id(indices)]
        if m == 0:
            evt = cl.enqueue_marker(queue, wait_for=wait or None)
        else:
            alloc = self._allocator(queue, allocator)
            with self._lock:
                evt = self._enqueue(queue, plan, kn, src, codec, n_rows, row_len, k, largest,
                                    values, indices, idx_dtype, alloc, wait)
        # not Array.add_event: it waits on the host once an array holds more than 12 events
        for a in (values, indices):
            attach_event(a, evt, replaced[id(a)])
        return values, indices, evt

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
        plan = self._plan(device, codec, rows, row_len, k, sorted)
        total = _carve_bytes(_temp_sizes(plan, codec, rows, k))
        if plan["route"] == "global":
            sorter = self._get_sorter()
            m = rows * k
            for dt, vdt, end_bit in _global_sorts(codec, rows, row_len, plan["out_index_np"]):
                total += sorter.temp_bytes(m, dt, vdt, device=device, end_bit=end_bit)
        return int(total)

    # ------------------------------------------------------------------ planning

    def _profile(self, device):
        with self._lock:
            prof = self._profiles.get(device.int_ptr)
            if prof is None:
                prof = self._profiles[device.int_ptr] = DeviceProfile.from_device(device)
            return prof

    def _plan(self, device, codec, rows, row_len, k, sorted):
        """The launch parameters and temporaries' sizes of a call (a pure computation: it builds
        nothing, so temp_bytes can use it)."""
        prof = self._profile(device)
        index_name, index_np = ("uint", np.uint32) if row_len < INDEX32_LIMIT else \
            ("ulong", np.uint64)
        idx_np = np.uint32 if row_len < 2 ** 32 else np.uint64
        # H200, float32 / uint32 2^28, k = 1000 (benchmarks/gpu_topk.py --variants): 8 items per
        # work-item and 32 groups per CU 1.73 / 1.35 ms; 4x32 1.83 / 1.46; 4x8 2.08 / 1.67; an
        # earlier kernel: 16x8 2.39 / 1.87, 32x8 4.1 / 3.5 (more registers, fewer loads in flight).
        ipt = self.items_per_thread or DEFAULT_ITEMS_PER_THREAD
        wg = self.wg_size
        sort_size = _local_sort_size(prof, codec.itemsize, wg)
        if self.sort_size is not None:   # within what the local memory holds of these keys
            sort_size = min(self.sort_size, sort_size)
        if not sorted or k == 1:
            route, out_np = "direct", idx_np
        elif k <= sort_size:
            route, out_np = "local", idx_np
        else:
            route = "global"
            out_np = np.uint32 if rows * row_len < 2 ** 32 else np.uint64
        pos_bits = DIGIT_BITS * -(-max(row_len - 1, 0).bit_length() // DIGIT_BITS)
        tile = wg * ipt
        target = prof.compute_units * (self.groups_per_cu or (32 if prof.is_gpu else 2))
        groups = max(1, min(-(-target // rows), -(-row_len // tile)))
        cap = min(row_len, max(row_len // 32, 1024))
        return dict(index_name=index_name, index_np=index_np, index_bytes=np.dtype(index_np).itemsize,
                    idx_np=idx_np, out_index_np=out_np, route=route, wg=wg, ipt=ipt,
                    sort_size=sort_size if route == "local" else 0, pos_bits=pos_bits,
                    digits=codec.bits // DIGIT_BITS + pos_bits // DIGIT_BITS,
                    groups=groups, cap=cap, profile=prof)

    def _program(self, device, codec, plan):
        cl_name = {np.uint32: "uint", np.uint64: "ulong"}
        key = (device.int_ptr, codec.dtype, plan["index_name"], plan["out_index_np"], plan["idx_np"],
               plan["wg"], plan["ipt"], plan["sort_size"])
        knl = self._kernels.get(key)
        if knl is None:
            params = dict(codec.template_args(), index_t=plan["index_name"],
                          out_index_t=cl_name[plan["out_index_np"]], idx_t=cl_name[plan["idx_np"]],
                          wg=plan["wg"], ipt=plan["ipt"], sort_size=plan["sort_size"],
                          warp_aggregate=plan["profile"].is_nvidia and plan["profile"].is_gpu)
            prg = self._programs.get("topk.cl.mako", params)
            knl = _Kernels(prg, device, plan, codec)
            knl.check_work_group(device, plan["wg"])
            self._kernels[key] = knl
        return knl

    # ------------------------------------------------------------------ enqueue

    def _enqueue(self, queue, plan, kn, src, codec, rows, row_len, k, largest, values, indices,
                 idx_dtype, alloc, wait):
        kb = codec.itemsize
        idx_t = plan["index_np"]
        cap = plan["cap"]
        # every temporary of the call but the sorts' own: one allocation (_carve)
        block, parts = _carve(alloc, _temp_sizes(plan, codec, rows, k))
        (states0, states1, out_count, cand_count, h0, h1, h2, ck0, ck1, cp0, cp1) = parts[:11]
        states, hists = [states0, states1], [h0, h1, h2]
        cand_key, cand_pos = [ck0, ck1], [cp0, cp1]
        route = plan["route"]
        if route == "direct":
            sel_key, sel_key_off = values.base_data, values.offset // kb
            sel_idx, sel_idx_off = indices.base_data, indices.offset // idx_dtype.itemsize
            row_mul = 0
        else:
            (sel_key, sel_idx), sel_key_off, sel_idx_off = parts[11:13], 0, 0
            row_mul = row_len if route == "global" else 0
        flip = codec.unsigned_dtype.type(((1 << codec.bits) - 1) if largest else 0)
        wg = plan["wg"]
        evt = kn.init(queue, (rows * RADIX,), (RADIX,), states[0], out_count, cand_count,
                      *hists, np.uint32(rows), idx_t(k), idx_t(row_len), wait_for=wait or None)
        gsize = (plan["groups"] * wg, rows)
        digits = plan["digits"]
        for p in range(digits + 1):
            cin = (p + 1) % 2
            knl = kn.passes[min(p, 2)]
            evt = knl(queue, gsize, (wg, 1), src.buffer, src.offset, row_len, k, cap, p,
                           plan["pos_bits"], plan["groups"], rows, flip, row_mul, states[p % 2],
                           states[(p + 1) % 2], hists[(p + 2) % 3], hists[p % 3],
                           hists[(p + 1) % 3], cand_key[cin], cand_pos[cin], cand_key[p % 2],
                           cand_pos[p % 2], cand_count, sel_key, sel_key_off, sel_idx,
                           sel_idx_off, out_count, wait_for=[evt])
            evt = self._traced(f"topk_pass {p}", evt)
        if route == "local":
            evt = kn.sort_rows(queue, (rows * wg,), (wg,), sel_key, sel_idx, idx_t(k), flip,
                               values.base_data, values.offset // kb, indices.base_data,
                               indices.offset // idx_dtype.itemsize, wait_for=[evt])
            evt = self._traced("topk_sort_rows", evt)
        elif route == "global":
            evt = self._global_sort(queue, kn, src, codec, rows, row_len, k, largest, sel_key,
                                    sel_idx, parts[13] if rows > 1 else None, values, indices,
                                    idx_dtype, alloc, evt)
        del block   # (a pool's block goes back to its pool: for later commands of this queue)
        return evt

    def _global_sort(self, queue, kn, src, codec, rows, row_len, k, largest, sel_key, gidx,
                     row_of, values, indices, idx_dtype, alloc, evt):
        """Sorted results for large k: stable sorts by batch index, then key, then row."""
        sorter = self._get_sorter()
        m = rows * k
        gd = np.dtype(kn.out_index_np)
        (_, _, g_bits), (_, _, _), *row_sort = _global_sorts(codec, rows, row_len, gd)
        evt = sorter.sort(queue, gidx, dtype=gd, n=m, values=sel_key, value_dtype=codec.dtype,
                          end_bit=g_bits, wait_for=[evt], allocator=alloc)
        evt = sorter.sort(queue, sel_key, dtype=codec.dtype, n=m, values=gidx, value_dtype=gd,
                          descending=largest, wait_for=[evt], allocator=alloc)
        if row_sort:
            evt = kn.row_of(queue, (_round_up(m, 256),), None, gidx, row_of, np.uint64(m),
                            gd.type(row_len), wait_for=[evt])
            evt = sorter.sort(queue, row_of, dtype=np.uint32, n=m, values=gidx, value_dtype=gd,
                              end_bit=row_sort[0][2], wait_for=[evt], allocator=alloc)
        return kn.gather(queue, (_round_up(m, 256),), None, src.buffer, src.offset, gidx,
                         np.uint64(m), gd.type(row_len), values.base_data,
                         values.offset // codec.itemsize, indices.base_data,
                         indices.offset // idx_dtype.itemsize, wait_for=[evt])

    # ------------------------------------------------------------------ operands

    def _keys(self, keys, dtype, rows):
        """(operand, rows, row length, result shape without k) of the keys."""
        if isinstance(keys, cl_array.Array):
            if dtype is not None and np.dtype(dtype) != keys.dtype:
                raise TypeError(f"keys: dtype={np.dtype(dtype)} given, but the array holds "
                                f"{keys.dtype}")
            if keys.ndim not in (1, 2):
                raise ValueError(f"keys: expected a 1-D or 2-D array, got shape {keys.shape}")
            if not (keys.flags.c_contiguous or keys.size <= 1):
                raise ValueError(f"keys: array is not C-contiguous (shape {keys.shape}, strides "
                                 f"{keys.strides})")
            if rows is not None and rows != (keys.shape[0] if keys.ndim == 2 else 1):
                raise ValueError(f"keys: rows={rows} disagrees with the array's shape {keys.shape}")
            key_codec(keys.dtype)
            # the rows back to back: the checks of a 1-D operand (context, offset, usable buffer)
            flat = operand(keys.reshape(-1) if keys.ndim == 2 else keys, self.context, "keys")
            n_rows, row_len = (keys.shape if keys.ndim == 2 else (1, keys.shape[0]))
            return (_Src(flat.buffer, flat.offset, flat.dtype, list(keys.events)), int(n_rows),
                    int(row_len), tuple(keys.shape))
        if isinstance(keys, cl.MemoryObjectHolder):
            d = key_codec(dtype if dtype is not None else np.uint32).dtype
            check_context(self.context, keys.context, "keys")
            n = _buffer_size(keys, "keys") // d.itemsize
            rows = 1 if rows is None else check_n(rows, "rows")
            if rows < 1:
                raise ValueError(f"rows must be positive for a Buffer, got {rows}")
            if n % rows:
                raise ValueError(f"keys: a buffer of {n} {d} keys does not split into {rows} equal "
                                 f"rows")
            shape = (n,) if rows == 1 else (int(rows), n // rows)
            return _Src(keys, 0, d, []), int(rows), n // rows, shape
        raise TypeError(f"keys: expected a pyopencl Buffer or pyopencl.array.Array, "
                        f"got {type(keys).__name__}")

    def _check_out(self, out, what, dtype, shape):
        if out is None:
            return
        if not isinstance(out, cl_array.Array):
            raise TypeError(f"{what}: expected a pyopencl.array.Array, got {type(out).__name__}")
        if out.dtype != dtype:
            raise TypeError(f"{what}: expected dtype {dtype}, got {out.dtype}")
        if out.size != int(np.prod(shape)) or not (out.flags.c_contiguous or out.size <= 1):
            raise ValueError(f"{what}: expected a contiguous array of shape {shape}, got shape "
                             f"{out.shape}")
        check_context(self.context, out.context, what)

    def _new_out(self, queue, what, dtype, shape, allocator):
        """A new output Array, from the caller's or the Selector's allocator (which it keeps as its
        ``allocator``; never from the pools) or allocated immediately; a failure is a MemoryError
        naming the bytes (the Sorter's wrapper)."""
        user = allocator or self.allocator
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if not nbytes:
            return cl_array.empty(queue, shape, dtype, allocator=user)
        data = self._get_sorter()._allocator(
            queue, user or cl_tools.ImmediateAllocator(queue), what, pooled=False)(nbytes)
        return cl_array.Array(queue, shape, dtype, data=data, allocator=user)

    def _allocator(self, queue, allocator):
        """The caller's or the Selector's allocator; by default a memory pool per in-order queue
        (clradix.memory), allocating immediately for an out-of-order queue; wrapped so that a
        failure is a MemoryError naming the bytes."""
        alloc = allocator or self.allocator
        if alloc is None:
            with self._lock:
                alloc = self._pools.allocator(queue)
        if alloc is None:
            alloc = cl_tools.ImmediateAllocator(queue)
        return self._get_sorter()._allocator(queue, alloc)

    def free_memory(self) -> None:
        """Release the temporaries the Selector's (and its Sorter's) memory pools hold for reuse."""
        with self._lock:
            self._pools.free_held()
            if self._sorter is not None:
                self._sorter.free_memory()

    def _get_sorter(self):
        with self._lock:
            if self._sorter is None:
                self._sorter = Sorter(self.context, allocator=self.allocator)
            return self._sorter


class _Src:
    def __init__(self, buffer, offset, dtype, events):
        self.buffer, self.offset, self.dtype, self.events = buffer, offset, dtype, events


class _Kernels:
    def __init__(self, prg, device, plan, codec):
        uint, ulong = np.uint32, np.uint64
        idx = plan["index_np"]
        key_np = codec.unsigned_dtype.type
        out_np = plan["out_index_np"]
        self.out_index_np = out_np
        self.init = cl.Kernel(prg, "topk_init")
        self.init.set_scalar_arg_dtypes([None, None, None, None, None, None, uint, idx, idx])
        # pass 0, pass 1 (their own kernels, p a constant) and every later pass
        self.passes = [cl.Kernel(prg, name) for name in ("topk_pass_0", "topk_pass_1", "topk_pass")]
        for knl in self.passes:
            knl.set_scalar_arg_dtypes([None, ulong, idx, idx, idx, uint, uint, uint, uint, key_np,
                                       out_np] + [None] * 11 + [ulong, None, ulong, None])
        if plan["sort_size"]:
            self.sort_rows = cl.Kernel(prg, "topk_sort_rows")
            self.sort_rows.set_scalar_arg_dtypes([None, None, idx, key_np, None, ulong, None, ulong])
        self.row_of = cl.Kernel(prg, "topk_row_of")
        self.row_of.set_scalar_arg_dtypes([None, None, ulong, out_np])
        self.gather = cl.Kernel(prg, "topk_gather")
        self.gather.set_scalar_arg_dtypes([None, ulong, None, ulong, out_np, None, ulong, None, ulong])

    def check_work_group(self, device, wg):
        """The kernels launched with wg work-items per group must run that many on ``device``
        (registers or local memory of a kernel can limit it below the device's maximum)."""
        named = [("topk_pass", k) for k in self.passes]
        if hasattr(self, "sort_rows"):
            named.append(("topk_sort_rows", self.sort_rows))
        info = cl.kernel_work_group_info
        for name, knl in named:
            limit = knl.get_work_group_info(info.WORK_GROUP_SIZE, device)
            local = knl.get_work_group_info(info.LOCAL_MEM_SIZE, device)
            if limit < wg or local > device.local_mem_size:
                raise ValueError(f"wg_size={wg}: {name} runs at most {limit} work-items per group "
                                 f"and needs {local} bytes of local memory on "
                                 f"{device.name.strip()} (which has {device.local_mem_size}); use "
                                 f"a Selector with a smaller wg_size")


# Sub-buffer origins must be aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN (at most 4096 bits on the
# devices here; 4096 bytes covers any).
_ALIGN = 4096


def _temp_sizes(plan, codec, rows, k):
    """Bytes of each temporary a call carves from its one allocation, in _enqueue's order: two row
    states, output and candidate counters, three histograms, two candidate key and two position
    buffers; then for sorted results the selected keys and indices, and for the global-sort
    route of several rows each selected element's row."""
    ib, kb, cap = plan["index_bytes"], codec.itemsize, plan["cap"]
    sizes = ([rows * STATE_BYTES] * 2 + [rows * ib, 2 * rows * ib] + [rows * RADIX * ib] * 3
             + [rows * cap * kb] * 2 + [rows * cap * ib] * 2)
    m = rows * k
    if plan["route"] != "direct":
        sizes += [m * kb, m * np.dtype(plan["out_index_np"]).itemsize]
    if plan["route"] == "global" and rows > 1:
        sizes.append(m * 4)
    return sizes


def _global_sorts(codec, rows, row_len, gd):
    """(key dtype, value dtype, end_bit) of the global-sort route's sorts, in order: by index in
    the batch, by key, and (several rows) by row."""
    sorts = [(np.dtype(gd), codec.dtype, max(rows * row_len - 1, 1).bit_length()),
             (codec.dtype, np.dtype(gd), None)]
    if rows > 1:
        sorts.append((np.dtype(np.uint32), np.dtype(gd), max(rows - 1, 1).bit_length()))
    return sorts


def _carve_offsets(sizes):
    offsets, total = [], 0
    for size in sizes:
        offsets.append(total)
        total += _round_up(max(size, 1), _ALIGN)
    return offsets, total


def _carve_bytes(sizes):
    return _carve_offsets(sizes)[1]


def _carve(alloc, sizes):
    """One allocation split into sub-buffers of ``sizes`` bytes (allocating is the costly part,
    and a pool then holds one block per call): ``(block, parts)``; keep ``block`` while the parts
    are in use. The block may be a Buffer or a pool's PooledBuffer. An allocator that hands out
    sub-buffers gets one request per part instead: sub-buffers carved from the memory object
    beneath such a block crashed NVIDIA's OpenCL driver (580.159) in a later launch."""
    offsets, total = _carve_offsets(sizes)
    block = alloc(total)
    if block.get_info(cl.mem_info.ASSOCIATED_MEMOBJECT) is not None:
        del block
        return None, [alloc(max(size, 1)) for size in sizes]
    root = block if isinstance(block, cl.Buffer) else \
        cl.Buffer.from_int_ptr(block.int_ptr, retain=True)   # a PooledBuffer's memory object
    return block, [root.get_sub_region(off, max(size, 1)) for off, size in zip(offsets, sizes)]


def _local_sort_size(profile, key_bytes, wg):
    """The largest power of two of (key, order key, position) triples that fit the local memory
    (at most 2048): the largest k sorted in one work-group."""
    per = 2 * key_bytes + 8
    budget = min(profile.local_mem_bytes - 1024, 32 * 1024)
    s = 1
    while s * 2 * per <= budget and s * 2 <= 2048:
        s *= 2
    return s


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _check_options(context, wg_size, items_per_thread, groups_per_cu, sort_size, allocator,
                   sorter):
    """The Selector's options, checked before anything is built (TypeError / ValueError)."""
    for name, v in (("wg_size", wg_size), ("items_per_thread", items_per_thread),
                    ("groups_per_cu", groups_per_cu), ("sort_size", sort_size)):
        if v is not None and not _is_int(v):
            raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
    if wg_size is None or wg_size < RADIX or wg_size & (wg_size - 1):
        raise ValueError(f"wg_size must be a power of two >= {RADIX} (a work-item per digit of the "
                         f"{DIGIT_BITS}-bit histogram), got {wg_size}")
    dev = min(context.devices, key=lambda d: d.max_work_group_size)
    if wg_size > dev.max_work_group_size:
        raise ValueError(f"wg_size={wg_size} exceeds the largest work-group of "
                         f"{dev.name.strip()} ({dev.max_work_group_size})")
    if items_per_thread is not None and (items_per_thread < 2
                                         or items_per_thread & (items_per_thread - 1)):
        raise ValueError(f"items_per_thread must be a power of two >= 2 (runs of 2 to 16 keys "
                         f"are loaded as one vector), got {items_per_thread}")
    ipt = items_per_thread or DEFAULT_ITEMS_PER_THREAD
    if wg_size * ipt >= TILE_LIMIT:
        default = "" if items_per_thread else f" (items_per_thread defaults to {ipt})"
        raise ValueError(f"wg_size x items_per_thread = {wg_size} x {ipt} must be below "
                         f"{TILE_LIMIT} (a tile's counts are packed in 16 bits){default}")
    if groups_per_cu is not None and groups_per_cu < 1:
        raise ValueError(f"groups_per_cu must be a positive integer, got {groups_per_cu}")
    if sort_size is not None and (sort_size < 1 or sort_size & (sort_size - 1)
                                  or sort_size > MAX_SORT_SIZE):
        raise ValueError(f"sort_size must be a power of two from 1 to {MAX_SORT_SIZE} (the "
                         f"local-memory sort's largest k), got {sort_size}")
    if allocator is not None and not callable(allocator):
        raise TypeError(f"allocator must be a callable taking a byte count (such as "
                        f"pyopencl.tools.MemoryPool), got {type(allocator).__name__}")
    if sorter is not None:
        if not isinstance(sorter, Sorter):
            raise TypeError(f"sorter must be a clradix.Sorter, got {type(sorter).__name__}")
        check_context(context, sorter.context, "sorter")


def _check_k(k, row_len):
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    if k < 0:
        raise ValueError(f"k must be non-negative, got {k}")
    if k > row_len:
        raise ValueError(f"k={k} exceeds the row length {row_len}")
    return int(k)


def _round_up(x, m):
    return -(-x // m) * m
