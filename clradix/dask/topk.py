"""Top-k of a dask array: ``topk`` and ``argtopk``, with dask.array's conventions.

A task per chunk selects its k candidates on the device (``Selector.topk``) and the candidates
are merged by Dask's tree reduction (``dask.array.reduction``, ``split_every`` as dask's own
``topk``); the last merge ranks them. Every candidate carries its global position, and each
step keeps them in increasing position order, so a merge (which selects among the concatenated
candidates of consecutive chunks) breaks ties by the smaller global position exactly as one
``clradix.topk`` of the whole array does: the result is that call's, bit for bit.
"""

from __future__ import annotations

from functools import partial
from numbers import Integral

import numpy as np

from ..core.keys import key_codec
from .chunk import DeviceChunk
from .engines import engine as _engine


def topk(x, k: int, axis: int = -1, split_every=None, engine: str = "clradix"):
    """The ``k`` largest entries of ``x`` along ``axis``, largest first; negative ``k``: the
    ``-k`` smallest, smallest first (dask.array.topk's convention). ``x``: a 1-D or 2-D dask
    array of a clradix key dtype (any chunks). Ties go to the smaller position and NaN is the
    largest value, as in ``clradix.topk``: the result equals ``clradix.topk`` of the computed
    array (``largest=k > 0``), bit for bit. The result has one chunk along ``axis``."""
    return _reduce(x, k, axis, split_every, engine, "values")


def argtopk(x, k: int, axis: int = -1, split_every=None, engine: str = "clradix"):
    """The positions (int64) along ``axis`` of the entries :func:`topk` returns, in its order."""
    return _reduce(x, k, axis, split_every, engine, "positions")


def _reduce(x, k, axis, split_every, engine_name, want):
    import dask.array as da
    from dask.array.reductions import reduction
    from dask.array.utils import validate_axis

    eng = _engine(engine_name)
    x = da.asarray(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"expected a 1-D or 2-D dask array, got shape {x.shape}")
    key_codec(x.dtype)
    if not isinstance(k, Integral) or isinstance(k, (bool, np.bool_)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    axis = validate_axis(axis, x.ndim)
    if any(np.isnan(c) for c in x.chunks[axis]):
        raise ValueError("the chunk sizes along the axis are unknown: call "
                         "x.compute_chunk_sizes() first")
    kk = abs(int(k))
    if kk > x.shape[axis]:
        raise ValueError(f"k={k} exceeds the length {x.shape[axis]} of axis {axis}")
    largest = k > 0
    last = x.ndim - 1
    if axis != last:
        x = x.T
    out_dtype = x.dtype if want == "values" else np.dtype(np.int64)
    meta = np.empty((0,) * x.ndim, dtype=out_dtype)
    if kk == 0:
        out = da.empty(x.shape[:-1] + (0,), dtype=out_dtype,
                       chunks=x.chunks[:-1] + ((0,),))
        return out.T if axis != last else out
    # the graph up to the ranked (values, positions) pair is the same for topk and argtopk:
    # computed together, they select once
    obj = np.empty((0,) * x.ndim, dtype=object)
    pairs = x.map_blocks(_chunk, eng=eng, k=kk, largest=largest, dtype=object, meta=obj)
    ranked = reduction(pairs, chunk=_identity,
                       combine=partial(_merge, eng=eng, k=kk, largest=largest, ranked=False),
                       aggregate=partial(_final, eng=eng, k=kk, largest=largest, ndim=x.ndim),
                       axis=last, keepdims=True, dtype=object, split_every=split_every,
                       concatenate=False, output_size=kk, meta=obj)
    out = ranked.map_blocks(_pick, 0 if want == "values" else 1, dtype=out_dtype, meta=meta)
    return out.T if axis != last else out


def _select(eng, vals, pos, k, largest, ranked):
    """The k best of 2-D candidates ``vals`` whose global positions ``pos`` increase along each
    row (an array, or an int: the first column's position, the others following it):
    ``(values, positions)`` ranked, or in increasing position."""
    n = vals.shape[-1]
    if k >= n and not ranked:
        if isinstance(pos, int):
            pos = np.broadcast_to(np.arange(pos, pos + n, dtype=np.int64), vals.shape)
        return np.asarray(vals), pos
    v, i = eng.select(vals, min(k, n), largest, ranked)
    return v, (i + pos if isinstance(pos, int) else np.take_along_axis(pos, i, -1))


def _chunk(a, eng, k, largest, block_info=None):
    """A chunk's candidates, with global positions (as 2-D rows)."""
    offset = int(block_info[0]["array-location"][-1][0])
    with eng.task(a):   # on the device that holds a DeviceChunk
        if isinstance(a, DeviceChunk):   # selected where it is when the device engine selects
            a = a.array if eng.name == "clradix" and k < a.shape[-1] else a.get()
        a2 = a.reshape(1, -1) if a.ndim == 1 else a
        return _select(eng, a2, offset, k, largest, ranked=False)


def _identity(parts, axis=None, keepdims=None):
    return parts


def _flatten(parts):
    if isinstance(parts, tuple):
        return [parts]
    out = []
    for p in parts:
        out.extend(_flatten(p))
    return out


def _merge(parts, eng, k, largest, ranked, axis=None, keepdims=None):
    """Candidates of consecutive chunks (in chunk order) merged into k."""
    parts = _flatten(parts)
    vals = np.concatenate([v for v, _ in parts], axis=-1)
    pos = np.concatenate([np.ascontiguousarray(p) for _, p in parts], axis=-1)
    with eng.task():
        return _select(eng, vals, pos, k, largest, ranked)


def _final(parts, eng, k, largest, ndim, axis=None, keepdims=None):
    v, p = _merge(parts, eng, k, largest, ranked=True)
    return (v.reshape(-1), p.reshape(-1)) if ndim == 1 else (v, p)


def _pick(pair, which):
    return pair[which]
