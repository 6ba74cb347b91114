"""Selection beside sorting, numpy-like: ``clradix.partition``, ``argpartition``, ``kthvalue``,
``median``, ``quantile``, ``percentile``, ``nanmedian``, ``nanquantile`` and ``nanpercentile``,
on the device, through the planner and launch path of top-k (clradix.planning.planner,
``Planner.prepare_selection``; the shared Selector's pools).

Design (the kernels: cl_templates/rank_select.cl.mako, rank_values.cl.mako):

- One primitive, the rank select: for up to MAX_RANKS (16) ranks per row at once, the order key
  T (clradix.core.keys: NaN after +inf, -0.0 equal to +0.0) of the key a sort would put at each
  rank, with the count of keys below T and equal to it. It is an MSD radix select (top-k's pass
  structure: each pass reads the row, or the candidates the pass before wrote when every group's
  keys fit the candidate buffer, and the last work-group of a row resolves the next digit), in
  which the ranks of a row share every pass: a pass counts one histogram per group of ranks
  (ranks whose resolved digits agree), so five quantiles cost about what one median does. On
  CPUs a work-item per chunk of a row counts 16-bit digits without atomics: two reads of a row of
  32-bit keys. The ranks are computed on the device by the first pass's last work-group from the
  keys that count: the row's, or (nan* functions) those that are not NaN, counted by that pass.
- partition / argpartition: the thresholds split each row stably by class (below the first
  threshold, equal to it, between it and the next, ...): each kth key lands in its sorted place,
  none larger before it, none smaller after it; inside a class keys keep their order, so the
  result is the same on every run and device. More than MAX_RANKS distinct kth values sort the
  rows instead (a sorted row satisfies every kth).
- kthvalue: torch's contract (k from 1, the smallest; a named tuple (values, indices)). Of equal
  keys, the index is the one a stable sort puts at position k - 1 (``argsort(kind="stable")``).
- median / quantile / percentile (and nan*): numpy's arguments and rules: axis an int, a tuple
  or None, keepdims, every method numpy has (``_QuantileMethods``), the median as numpy's mean of
  the middle keys, a NaN in a slice giving NaN (nan*: NaN keys left out; a slice of NaNs only
  gives NaN, with numpy's RuntimeWarning for numpy inputs), result dtypes as numpy's (numpy itself
  is asked, on two keys of the dtype, with the caller's q: its promotion rules hold). The
  interpolation runs on the device, operation by operation as numpy's (rank_values.cl.mako): no
  host round trip inside an operation.

Deviations, each where numpy's result is not a value of the data: a quantile read from a rank
(the discrete methods) or a median of one key gives +0.0 for a zero (-0.0 and 0.0 are one order
key) and the quiet NaN for a NaN; numpy's integer quantile computes b - a in the key type, which
wraps where it overflows (int8 -100 and 100 give 128.0), here the difference is exact; float32
and float16 q arrays are used as float64 (numpy computes their indexes in their own precision);
the all-NaN warning is not given for device inputs (it would wait for the device). ``weights=``
is not taken. Quantiles need a device with cl_khr_fp64 (numpy's float64 indexes), and so does
any float64 result."""

from __future__ import annotations

import numbers
import sys
import threading
import warnings
from typing import (TYPE_CHECKING, Any, Dict, Generic, NamedTuple, Optional, Sequence,
                    Tuple, TypeVar, Union)

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.typing import DTypeLike

from ..core.arguments import check_outputs
from ..core.keys import key_codec
from ..core.sizes import INDEX_DTYPES
from ..drivers.rank_select import (PARAM_WORDS, RANKS_FIXED, RANKS_MEDIAN, RANKS_QUANTILE,
                                    SelectOperands, param_scalars)
from ..policies.selection import MAX_RANKS, SelectionPolicy, check_selection_policy
from .api import argsort, sort
from .call import (Allocator, Call, Events, Layout, host_result, index_dtype_for,
                   normalize_axis, to_device)
from .shared import selector_for

try:   # numpy >= 2.0
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # pragma: no cover - numpy 1.x
    from numpy.core.numeric import normalize_axis_tuple  # type: ignore[no-redef]

#: numpy's quantile methods, in the kernels' numbering (rank_select_steps.mako's M_*)
METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest")
#: the methods that read one rank (numpy's take, no interpolation)
DISCRETE = frozenset(("inverted_cdf", "closest_observation", "lower", "higher", "nearest"))
#: alpha and beta of numpy's methods through _compute_virtual_index
_ALPHA_BETA = {"interpolated_inverted_cdf": (0, 1), "hazen": (0.5, 0.5), "weibull": (0, 0),
               "median_unbiased": (1 / 3.0, 1 / 3.0), "normal_unbiased": (3 / 8.0, 3 / 8.0)}
#: quantiles per selection: two ranks each
_Q_PER_SELECTION = MAX_RANKS // 2

_A = TypeVar("_A")

if TYPE_CHECKING or sys.version_info >= (3, 11):   # generic named tuples: Python 3.11
    class KthvalueResult(NamedTuple, Generic[_A]):
        """What ``kthvalue`` returns, as ``torch.kthvalue`` does: ``(values, indices)`` by
        position or by name; numpy arrays for a numpy input, pyopencl Arrays for an Array."""

        values: _A
        indices: _A
else:  # pragma: no cover - Python 3.9 and 3.10
    class KthvalueResult(NamedTuple):
        """What ``kthvalue`` returns, as ``torch.kthvalue`` does: ``(values, indices)`` by
        position or by name; numpy arrays for a numpy input, pyopencl Arrays for an Array."""

        values: Any
        indices: Any

KthvalueResult.__module__ = "clradix"


# ------------------------------------------------------------------ axes

def _reduce_axes(axis, ndim):
    """numpy's axis of a reduction: None (every axis), an int or a tuple of ints, normalized and
    sorted (numpy's AxisError out of range, ValueError for a repeated axis)."""
    if axis is None:
        return None
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"axis must be an integer, a tuple of integers or None, got "
                        f"{type(axis).__name__}")
    return tuple(sorted(normalize_axis_tuple(axis, ndim, "axis")))


def _keepdims(keepdims):
    """``keepdims`` as numpy reads it: a bool, or an integer as its truth value."""
    if isinstance(keepdims, (bool, np.bool_, numbers.Integral, np.integer)):
        return bool(keepdims)
    raise TypeError(f"keepdims must be a bool, got {type(keepdims).__name__}")


def _one_axis(axis, ndim):
    """A single axis, normalized, as a 1-tuple (None stays None: the flattened array)."""
    ax = normalize_axis(axis, ndim)
    return None if ax is None else (ax,)


# ------------------------------------------------------------------ running a selection


def _select(queue, codec, keys, rows, row_len, job, wait, allocator, policy, *, params=None,
            values=None, positions=None, idx_bytes=8, program=None):
    """Enqueue one selection (a SelectJob's fields ``job`` but rows and row length) over the
    rows at ``keys`` (buffer, element offset); its outputs: ``values`` and ``positions``
    (Array, element offset) pairs; ``params``: its uint64 words. The event of its last
    command."""
    sel = selector_for(queue.context)
    fields = dict(job, rows=rows, row_len=row_len)
    key = ("selection", queue.device.int_ptr, codec.dtype, policy, idx_bytes, program,
           tuple(sorted(fields.items())))
    prepared = sel.planner.ready(key)
    if prepared is None:
        prepared = sel.planner.prepare_selection(key, queue.device, codec, fields, policy,
                                                 idx_bytes, program)
    alloc = sel.temporaries(queue, allocator)
    # the parameter words go to the first kernel as arguments, which it writes to this buffer
    # (a Buffer made from host memory was seen to wait, on NVIDIA's OpenCL, for the commands
    # enqueued before it); without words the keys' buffer stands in, and nothing is written
    buf = keys[0] if params is None else alloc(8 * PARAM_WORDS)
    operands = SelectOperands((keys[0], keys[1]),
                              (values[0].base_data, values[1]) if values else None, (buf, 0),
                              (positions[0].base_data, positions[1]) if positions else None)
    evt = prepared.run(queue, operands, alloc, wait, scalars=param_scalars(params))
    return evt


def _check_policy(policy):
    check_selection_policy(policy)
    return policy


def _device_input(a, queue):
    """``a`` as an Array on a device: (Array, whether it came from the host)."""
    if isinstance(a, cl_array.Array):
        return a, False
    return to_device(a, queue, "a"), True


# ------------------------------------------------------------------ partition

def _kth_list(kth, n):
    """numpy's kth: an int or a sequence of ints (negative counts from the end), each in
    [-n, n); sorted, distinct, normalized. numpy's errors (TypeError, ValueError)."""
    if isinstance(kth, (bool, np.bool_)):
        raise ValueError("Booleans unacceptable as partition index")
    arr = np.asarray(kth)
    if arr.dtype == np.bool_:
        raise ValueError("Booleans unacceptable as partition index")
    if arr.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    if arr.ndim > 1:
        raise ValueError(f"kth must be an integer or a sequence of integers, got an array of "
                         f"shape {arr.shape}")
    out = []
    for k in arr.reshape(-1).tolist():
        kk = k + n if k < 0 else k
        if not 0 <= kk < n:
            raise ValueError(f"kth(={kk}) out of bounds ({n})")
        out.append(kk)
    return sorted(set(out))


def _check_kind_order(kind, order):
    if kind != "introselect":
        raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
    if order is not None:
        raise ValueError(f"order={order!r}: numpy's order= partitions structured arrays by "
                         f"field; clradix partitions numeric keys")


def _split(a, kth, axis, want_keys, out, index_dtype, allocator, queue, wait_for, policy,
           what):
    """partition (want_keys) or argpartition of a device Array."""
    if a.ndim == 0 and axis is not None:   # (numpy: only axis=None flattens a 0-d array)
        normalize_axis(axis, 0)
    call = Call(a, queue, wait_for, allocator)
    codec = key_codec(a.dtype)
    axes = _one_axis(axis, a.ndim) if a.ndim else None
    lay = Layout(a, axes)
    if not want_keys:
        idx_dtype = index_dtype_for(index_dtype, max(lay.row_len, 1))
    res_dtype = a.dtype if want_keys else idx_dtype
    res_shape = (lay.row_len,) if axes is None else lay.shape
    if lay.rows == 0 or lay.row_len == 0:   # numpy checks no kth on an empty array
        res = call.result(out, res_dtype, res_shape, what)
        check_outputs([(what, res)], [("the input array", a)])
        call.done()
        return res
    ks = _kth_list(kth, lay.row_len)
    if len(ks) > MAX_RANKS:
        # more distinct kth than a selection resolves at once: a sorted row satisfies each one
        if want_keys:
            return sort(a, axis, out=out, allocator=allocator, queue=call.queue,
                        wait_for=wait_for)
        return argsort(a, axis, index_dtype=res_dtype, out=out, allocator=allocator,
                       queue=call.queue, wait_for=wait_for)
    res = call.result(out, res_dtype, res_shape, what)
    # the split writes keys while it reads others: no output may share the input's bytes
    check_outputs([(what, res)], [("the input array", a)])
    keys = call.keys_in(a, lay, "selection rows")
    rows_out = call.rows_out(res, lay, lay.row_len, "partition rows")
    target = (rows_out, rows_out.offset // res_dtype.itemsize)
    job = dict(nranks=len(ks), rank_mode=RANKS_FIXED, tail="split", write_keys=want_keys,
               write_pos=not want_keys)
    call.then(_select(call.queue, codec, keys, lay.rows, lay.row_len, job, call.wait, allocator,
                      policy, params=np.array(ks, np.uint64),
                      values=target if want_keys else None,
                      positions=None if want_keys else target,
                      idx_bytes=res_dtype.itemsize if not want_keys else 8))
    call.lay_out(rows_out, res, lay, lay.row_len)
    call.done()
    return res


def partition(a: Any, kth: Union[int, Sequence[int]], axis: Optional[int] = -1,
              kind: str = "introselect", order: None = None, *,
              out: Any = None, policy: Optional[SelectionPolicy] = None,
              allocator: Optional[Allocator] = None, queue: Optional[cl.CommandQueue] = None,
              wait_for: Events = None) -> Any:
    """A copy of ``a`` partitioned along ``axis``, as ``numpy.partition``: the key of each
    ``kth`` (an int or a sequence of ints; negative counts from the end) in its sorted place,
    none larger before it, none smaller after it; NaN sorts last and -0.0 equals 0.0.
    ``axis=None`` partitions the flattened array.

    The split is stable: keys between two kth positions keep their order, so a call gives the
    same result on every device. More than 16 distinct kth values sort the rows (a sorted row
    satisfies them all). ``kind`` (numpy's; only 'introselect') and ``order`` (refused) are
    numpy's. ``out``: an Array of the result's shape and dtype (for numpy inputs a numpy array);
    ``policy``: a :class:`~clradix.SelectionPolicy` of tuning overrides; ``allocator``,
    ``queue`` and ``wait_for``: as for :func:`clradix.sort`."""
    _check_kind_order(kind, order)
    policy = _check_policy(policy)
    dev, host = _device_input(a, queue)
    if host:
        return host_result(_split(dev, kth, axis, True, None, None, allocator, None, None,
                                   policy, "out"), out, "out")
    return _split(dev, kth, axis, True, out, None, allocator, queue, wait_for, policy, "out")


def argpartition(a: Any, kth: Union[int, Sequence[int]], axis: Optional[int] = -1,
                 kind: str = "introselect", order: None = None, *,
                 index_dtype: Optional[DTypeLike] = None, out: Any = None,
                 policy: Optional[SelectionPolicy] = None,
                 allocator: Optional[Allocator] = None,
                 queue: Optional[cl.CommandQueue] = None, wait_for: Events = None) -> Any:
    """The positions that partition ``a`` along ``axis``, as ``numpy.argpartition``: ``a``
    taken at them is :func:`partition`'s result (the same stable split: equal keys and keys
    between two kth positions in position order). int64 positions (``index_dtype``: int32,
    uint32, uint64; a 32-bit type must hold every position); ``out`` and the other options: as
    for :func:`partition`."""
    _check_kind_order(kind, order)
    policy = _check_policy(policy)
    if index_dtype is None and out is not None and hasattr(out, "dtype"):
        if np.dtype(out.dtype) not in INDEX_DTYPES:
            raise TypeError(f"out: argpartition's positions are int32, uint32, int64 or uint64, "
                            f"got an out of dtype {np.dtype(out.dtype)}")
        index_dtype = out.dtype
    dev, host = _device_input(a, queue)
    if host:
        return host_result(_split(dev, kth, axis, False, None, index_dtype, allocator, None,
                                   None, policy, "out"), out, "out")
    return _split(dev, kth, axis, False, out, index_dtype, allocator, queue, wait_for, policy,
                  "out")


# ------------------------------------------------------------------ kthvalue

def kthvalue(a: Any, k: int, axis: Optional[int] = -1, keepdims: bool = False, *,
             index_dtype: Optional[DTypeLike] = None, out: Any = None,
             policy: Optional[SelectionPolicy] = None, allocator: Optional[Allocator] = None,
             queue: Optional[cl.CommandQueue] = None, wait_for: Events = None
             ) -> KthvalueResult[Any]:
    """The ``k``-th smallest key along ``axis`` (k from 1) and its position, as
    ``torch.kthvalue(input, k, dim, keepdim)``: a :class:`~clradix.KthvalueResult` ``(values,
    indices)`` of ``a``'s shape without the axis (``keepdims``: with it, of length 1;
    ``axis=None``: of the flattened array). NaN counts as the largest value. Of equal keys the
    position is the one a stable sort puts at k - 1 (``argsort(kind="stable")[k - 1]``).
    Positions are int64 (``index_dtype``: int32, uint32, uint64). ``out``: a pair ``(values,
    indices)`` of arrays; the other options: as for :func:`partition`."""
    policy = _check_policy(policy)
    keepdims = _keepdims(keepdims)
    if not isinstance(k, (numbers.Integral, np.integer)) or isinstance(k, (bool, np.bool_)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    outs: Tuple[Any, Any] = (None, None)
    if out is not None:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"out: expected a pair (values, indices) of arrays, got "
                            f"{type(out).__name__}")
        outs = (out[0], out[1])
        if index_dtype is None and hasattr(outs[1], "dtype"):
            index_dtype = outs[1].dtype
    dev, host = _device_input(a, queue)
    if host:
        v, i = _kthvalue(dev, int(k), axis, bool(keepdims), index_dtype, (None, None),
                         allocator, None, None, policy)
        return KthvalueResult(host_result(v, outs[0], "out[0] (values)"),
                              host_result(i, outs[1], "out[1] (indices)"))
    return KthvalueResult(*_kthvalue(dev, int(k), axis, bool(keepdims), index_dtype, outs,
                                     allocator, queue, wait_for, policy))


def _kthvalue(a, k, axis, keepdims, index_dtype, outs, allocator, queue, wait_for, policy):
    call = Call(a, queue, wait_for, allocator)
    codec = key_codec(a.dtype)
    axes = _one_axis(axis, a.ndim) if a.ndim else None
    lay = Layout(a, axes)
    if not 1 <= k <= lay.row_len:
        raise ValueError(f"k={k} is out of range: k counts from 1 (the smallest) to the length "
                         f"{lay.row_len} of the axis")
    idx_dtype = index_dtype_for(index_dtype, lay.row_len)
    shape = lay.reduced_shape(keepdims)
    values = call.result(outs[0], a.dtype, shape, "out[0] (values)")
    indices = call.result(outs[1], idx_dtype, shape, "out[1] (indices)")
    check_outputs([("out[0] (values)", values), ("out[1] (indices)", indices)],
                  [("the input array", a)])
    if lay.rows:
        keys = call.keys_in(a, lay, "selection rows")
        job = dict(nranks=1, rank_mode=RANKS_FIXED, tail="locate", write_keys=True,
                   write_pos=True)
        call.then(_select(call.queue, codec, keys, lay.rows, lay.row_len, job, call.wait,
                          allocator, policy, params=np.array([k - 1], np.uint64),
                          values=(values, values.offset // values.dtype.itemsize),
                          positions=(indices, indices.offset // idx_dtype.itemsize),
                          idx_bytes=idx_dtype.itemsize))
    call.done()
    return values, indices


# ------------------------------------------------------------------ median and quantiles

_dtypes_lock = threading.Lock()
_result_dtypes: Dict[tuple, np.dtype] = {}


def _numpy_dtype(fn, dtype, q, method):
    """The dtype numpy's ``fn`` ("median", "quantile", "percentile", ...) gives for keys of
    ``dtype`` with this ``q`` and ``method``: numpy asked on two keys (its promotion rules, and
    its refusals: a bool interpolation is numpy's TypeError, a method it lacks its ValueError)."""
    weak = type(q) in (int, float)
    qkey = ("weak", type(q)) if weak else ("strong", None if q is None else np.asarray(q).dtype)
    key = (fn, dtype, method, qkey)
    with _dtypes_lock:
        found = _result_dtypes.get(key)
    if found is not None:
        return found
    dummy = np.zeros(2, dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if fn == "median":
            r = np.median(dummy)
        else:
            qq = q if weak else np.zeros(np.shape(q), np.asarray(q).dtype)
            r = getattr(np, fn)(dummy, qq, method=method)
    found = np.asarray(r).dtype
    with _dtypes_lock:
        _result_dtypes[key] = found
    return found


def _arith(res_dtype, codec, discrete):
    """The values program's result kind of ``res_dtype``: "key" (the key of a rank), or the
    arithmetic's type."""
    if discrete:
        return "key"
    if res_dtype == np.float16:
        return "f16"
    if res_dtype.name == "bfloat16":
        return "bf16"
    if res_dtype == np.float32:
        return "f32"
    if res_dtype == np.float64:
        return "f64"
    raise TypeError(f"clradix computes quantiles of float16, bfloat16, float32 and float64 "
                    f"results; numpy gives {res_dtype} for {codec.dtype} keys here")


def _check_q(q, fn):
    """q as float64 (fn "percentile": divided by 100 as numpy does), at most 2-D, in range:
    numpy's ValueError otherwise."""
    if fn.endswith("percentile"):
        qa = np.true_divide(q, 100)
        qa = np.asanyarray(qa)
        bad = "Percentiles must be in the range [0, 100]"
    else:
        qa = np.asanyarray(q)
        bad = "Quantiles must be in the range [0, 1]"
    if qa.dtype.kind not in "biuf":
        raise TypeError(f"q must be real numbers, got {qa.dtype}")
    if qa.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    flat = np.asarray(qa, np.float64).reshape(-1)
    if flat.size and not (np.all(flat >= 0) and np.all(flat <= 1)):
        raise ValueError(bad)
    return flat, qa.shape


def _reduce(fn, a, q, axis, out, keepdims, method, skip_nan, allocator, queue, wait_for,
            policy):
    """median (q None) or quantiles of a device Array; the result Array."""
    call = Call(a, queue, wait_for, allocator)
    queue = call.queue
    codec = key_codec(a.dtype)
    keepdims = _keepdims(keepdims)
    axes = _reduce_axes(axis, a.ndim)
    median_ = q is None
    if median_:
        res_dtype = _numpy_dtype("median", a.dtype, None, None)
        qs, qshape, discrete = np.zeros(1), (), False
    else:
        if not isinstance(method, str) or method not in METHODS:
            raise ValueError(f"{method!r} is not a valid method. Use one of: {METHODS}")
        qs, qshape = _check_q(q, fn)
        res_dtype = _numpy_dtype(fn.replace("nan", ""), a.dtype, q, method)
        discrete = method in DISCRETE
    arith = _arith(res_dtype, codec, discrete)
    lay = Layout(a, axes)
    fp64 = "cl_khr_fp64" in queue.device.extensions
    if (arith == "f64" or not median_) and not fp64:
        raise TypeError(f"{fn} of {codec.dtype} keys computes in float64 (numpy's indexes and "
                        f"{res_dtype} results), which {queue.device.name.strip()} lacks "
                        f"(cl_khr_fp64): use a device with double precision")
    shape = tuple(qshape) + lay.reduced_shape(keepdims)
    res = call.result(out, res_dtype, shape, "out")
    check_outputs([("out", res)], [("the input array", a)])
    nq = 1 if median_ else len(qs)
    if lay.rows == 0 or nq == 0:
        call.done()
        return res
    if lay.row_len == 0:
        if not median_ and not skip_nan:
            raise IndexError(f"index -1 is out of bounds for axis 0 with size 0 ({fn} of an "
                             f"empty slice: the reduced axes of a have no keys)")
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=4)
        nan = np.array(np.nan).astype(res_dtype)
        call.then(cl.enqueue_fill_buffer(queue, res.base_data, nan, res.offset, res.nbytes,
                                         wait_for=call.wait or None))
        call.done()
        return res
    keys = call.keys_in(a, lay, "selection rows")
    if median_:
        job = dict(nranks=2, rank_mode=RANKS_MEDIAN, tail="values", skip_nan=skip_nan, nout=1)
        call.then(_select(queue, codec, keys, lay.rows, lay.row_len, job, call.wait, allocator,
                          policy, values=(res, res.offset // res_dtype.itemsize), idx_bytes=8,
                          program=("median", arith)))
    else:
        alpha, beta = _ALPHA_BETA.get(method, (0, 0))
        c = 1 - alpha - beta
        for start in range(0, nq, _Q_PER_SELECTION):   # several selections for many q
            chunk = qs[start:start + _Q_PER_SELECTION]
            words = np.concatenate([chunk, [alpha, c]]).astype(np.float64).view(np.uint64)
            job = dict(nranks=2 * len(chunk), rank_mode=RANKS_QUANTILE, tail="values",
                       skip_nan=skip_nan, nout=len(chunk), method=METHODS.index(method))
            call.then(_select(queue, codec, keys, lay.rows, lay.row_len, job, call.wait,
                              allocator, policy, params=words,
                              values=(res, res.offset // res_dtype.itemsize + start * lay.rows),
                              idx_bytes=8, program=("quantile", arith)))
    call.done()
    return res


def _reduction(fn, a, q, axis, out, keepdims, method, weights, allocator, queue, wait_for,
               policy):
    """The numpy-like entry of median, quantile and percentile and their nan* forms."""
    if weights is not None:
        raise NotImplementedError(f"{fn}: weights= is not taken by clradix (numpy's weighted "
                                  f"quantiles sort the keys: use numpy.{fn})")
    policy = _check_policy(policy)
    skip_nan = fn.startswith("nan")
    dev, host = _device_input(a, queue)
    if not host:
        return _reduce(fn, dev, q, axis, out, keepdims, method, skip_nan, allocator, queue,
                       wait_for, policy)
    res = _reduce(fn, dev, q, axis, None, keepdims, method, skip_nan, allocator, None, None,
                  policy)
    host_res = host_result(res, out, "out")
    if skip_nan and dev.dtype.kind == "f" or skip_nan and dev.dtype.name == "bfloat16":
        _warn_all_nan(np.asarray(a), axis, host_res)
    if out is None and host_res.ndim == 0:
        return host_res[()]
    return host_res


def _warn_all_nan(host, axis, res):
    """numpy's RuntimeWarning for a slice of NaNs only (a NaN result is where to look)."""
    if not np.isnan(np.asarray(res, np.float64)).any():
        return
    axes = _reduce_axes(axis, host.ndim)
    if host.size == 0 or any(host.shape[x] == 0 for x in (axes or ())):
        return   # an empty slice: numpy's "Mean of empty slice" only, warned by the call
    if np.isnan(host.astype(np.float32) if host.dtype.name == "bfloat16" else host) \
            .all(axis=axes).any():
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=4)


def median(a: Any, axis: Union[None, int, Tuple[int, ...]] = None, out: Any = None,
           overwrite_input: bool = False, keepdims: bool = False, *,
           policy: Optional[SelectionPolicy] = None, allocator: Optional[Allocator] = None,
           queue: Optional[cl.CommandQueue] = None, wait_for: Events = None) -> Any:
    """The median along ``axis`` (an int, a tuple of ints, or None: every axis), as
    ``numpy.median``: numpy's mean of the middle key (or two), in numpy's result dtype (float64
    for integer and bool keys, the key's float type otherwise); NaN where the slice holds a NaN.
    ``keepdims`` keeps the reduced axes as length 1. The input is never modified
    (``overwrite_input`` is accepted for numpy's signature). ``out``: an Array of the result's
    shape and dtype (numpy inputs: a numpy array); a numpy input's 0-d result is a numpy
    scalar, as numpy's. ``policy``, ``allocator``, ``queue``, ``wait_for``: as for
    :func:`partition`."""
    return _reduction("median", a, None, axis, out, keepdims, None, None, allocator, queue,
                      wait_for, policy)


def nanmedian(a: Any, axis: Union[None, int, Tuple[int, ...]] = None, out: Any = None,
              overwrite_input: bool = False, keepdims: bool = False, *,
              policy: Optional[SelectionPolicy] = None, allocator: Optional[Allocator] = None,
              queue: Optional[cl.CommandQueue] = None, wait_for: Events = None) -> Any:
    """:func:`median` of the keys that are not NaN, as ``numpy.nanmedian``: a slice of NaNs
    only gives NaN (with numpy's RuntimeWarning "All-NaN slice encountered" for numpy inputs;
    a device input gets the NaN without a warning, which would wait for the device)."""
    return _reduction("nanmedian", a, None, axis, out, keepdims, None, None, allocator, queue,
                      wait_for, policy)


_QUANTILE_DOC = """``q``: a number or an array of at most two dimensions (the result's leading
    axes), each in [0, 1] (percentile: [0, 100]; numpy's ValueError otherwise). ``method``: any
    of numpy's (``linear``, ``lower``, ``higher``, ``nearest`` (half to even), ``midpoint``,
    ``inverted_cdf`` and the other Hyndman & Fan ones), with numpy's float64 indexes and its
    interpolation's arithmetic in its result dtype (``q`` a Python float keeps float32 keys'
    results float32; an array q gives float64, as numpy's promotion rules say). A NaN in a slice
    gives NaN. An empty slice is numpy's IndexError. Up to 8 quantiles share one selection;
    more run as several. ``weights`` is not taken. ``axis``, ``keepdims``, ``out`` and the
    other options: as for :func:`median`."""


def quantile(a: Any, q: Any, axis: Union[None, int, Tuple[int, ...]] = None, out: Any = None,
             overwrite_input: bool = False, method: str = "linear", keepdims: bool = False, *,
             weights: None = None, policy: Optional[SelectionPolicy] = None,
             allocator: Optional[Allocator] = None, queue: Optional[cl.CommandQueue] = None,
             wait_for: Events = None) -> Any:
    return _reduction("quantile", a, q, axis, out, keepdims, method, weights, allocator,
                      queue, wait_for, policy)


def percentile(a: Any, q: Any, axis: Union[None, int, Tuple[int, ...]] = None, out: Any = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
               *, weights: None = None, policy: Optional[SelectionPolicy] = None,
               allocator: Optional[Allocator] = None, queue: Optional[cl.CommandQueue] = None,
               wait_for: Events = None) -> Any:
    return _reduction("percentile", a, q, axis, out, keepdims, method, weights, allocator,
                      queue, wait_for, policy)


def nanquantile(a: Any, q: Any, axis: Union[None, int, Tuple[int, ...]] = None,
                out: Any = None, overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights: None = None,
                policy: Optional[SelectionPolicy] = None,
                allocator: Optional[Allocator] = None,
                queue: Optional[cl.CommandQueue] = None, wait_for: Events = None) -> Any:
    return _reduction("nanquantile", a, q, axis, out, keepdims, method, weights, allocator,
                      queue, wait_for, policy)


def nanpercentile(a: Any, q: Any, axis: Union[None, int, Tuple[int, ...]] = None,
                  out: Any = None, overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: None = None,
                  policy: Optional[SelectionPolicy] = None,
                  allocator: Optional[Allocator] = None,
                  queue: Optional[cl.CommandQueue] = None, wait_for: Events = None) -> Any:
    return _reduction("nanpercentile", a, q, axis, out, keepdims, method, weights, allocator,
                      queue, wait_for, policy)


quantile.__doc__ = f"""Quantiles ``q`` of ``a`` along ``axis``, as ``numpy.quantile``.

    {_QUANTILE_DOC}"""
percentile.__doc__ = f"""Percentiles ``q`` (0 to 100) of ``a`` along ``axis``, as
    ``numpy.percentile``: :func:`quantile` of ``q / 100``.

    {_QUANTILE_DOC}"""
nanquantile.__doc__ = f""":func:`quantile` of the keys that are not NaN, as
    ``numpy.nanquantile`` (a slice of NaNs only: NaN, as :func:`nanmedian`; an empty slice:
    NaN with numpy's RuntimeWarning).

    {_QUANTILE_DOC}"""
nanpercentile.__doc__ = f""":func:`percentile` of the keys that are not NaN, as
    ``numpy.nanpercentile`` (see :func:`nanquantile`).

    {_QUANTILE_DOC}"""

__all__ = ["partition", "argpartition", "kthvalue", "KthvalueResult", "median", "nanmedian",
           "quantile", "percentile", "nanquantile", "nanpercentile", "SelectionPolicy"]
