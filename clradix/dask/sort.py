"""Global sort of a 1-D dask array by sample sort: ``sort`` and ``argsort``.

The graph (built lazily; nothing is computed when it is made):

1. ``sample``: a task per input chunk takes the keys at a few stratified random positions of
   the array (fixed when the graph is made: ``oversample`` per output partition in all);
2. ``splitters``: one task orders the samples by (key, global position) and takes
   ``partitions - 1`` evenly spaced ones as splitters;
3. ``split``: a task per input chunk uploads the chunk once, sorts it on its worker's device
   (with its global positions, int64, for argsort) and cuts it at the splitters (found by
   binary searches on the device, clradix.searchsorted, and one small read of the answers),
   giving one piece per output partition, left on the device
   (a DeviceChunk: :mod:`clradix.dask.chunk`);
4. the output partitions are merged in groups, one group per device of the active
   ``distributed`` client's workers (a worker process may drive several:
   :func:`devices.use_devices`), or of this process without one: contiguous ranges of
   partitions. With several groups on several worker processes, a ``piece`` task per (input
   chunk, group) picks the chunk's pieces of that group, and Dask's scheduler moves them once,
   from the worker that split the chunk to the one merging the group (as host bytes: a
   DeviceChunk pickles as its numpy array). With one process (one group, or one worker driving
   several devices) the merges take the split lists themselves: nothing crosses processes, and
   the graph has no task per (chunk, group), Dask's cost per task being about a millisecond; a
   merge brings the pieces another device of the process holds with one copy down into pinned
   memory and one up per sorted chunk;
5. a ``merge`` task per group, for each of its partitions, gathers the partition's pieces in
   chunk order into one device buffer and sorts them stably: within a piece equal keys are in
   position order, and pieces come in chunk order, so a stable sort leaves equal keys in global
   position order. Each partition is downloaded once (into pinned memory on a GPU, on a second
   queue while the next partition sorts; on a CPU device straight into the result's numpy
   array), or with ``on_device`` left there as a DeviceChunk; an output task per partition
   picks it from its group's list.

Splitters are (key, position) pairs, so ties are cut by position: heavy duplicates and all-equal
keys spread over the partitions like any keys. A chunk cuts its run of keys equal to a splitter's
key after the run's elements that precede the splitter's position: all of the run in chunks
before it, none in chunks after it, and in the splitter's own chunk a share of the run
proportional to where the splitter lies in the chunk (without positions the exact count is
unknown; any prefix of the run is correct, since equal keys of one chunk stay in position
order). The result is numpy's stable sort, bit for bit (NaN last, -0.0 and +0.0 equal and in
input order).

The output's chunks are the partitions, consecutive ranges of the sorted array; their sizes are
known only once computed (``nan`` in ``chunks``; ``compute_chunk_sizes()`` finds them).
"""

from __future__ import annotations

import operator

import numpy as np

from ..core.keys import key_codec
from .chunk import DeviceChunk, as_host
from .engines import engine as _engine


def sort(x, *, partitions=None, oversample: int = 64, seed: int = 0,
         engine: str = "clradix", on_device: bool = False):
    """A stably sorted copy of the 1-D dask array ``x`` (numpy's order), as a dask array of
    ``partitions`` chunks (default: as many as ``x`` has), each a consecutive range of the
    result (sizes unknown until computed). ``x``'s chunks: numpy arrays, or DeviceChunks
    (:func:`to_device`). ``on_device``: the result's chunks are DeviceChunks left on the device
    of the worker that made each (see :mod:`clradix.dask.chunk`), not numpy arrays."""
    return _sample_sort(x, partitions, oversample, seed, engine, False, on_device)


def argsort(x, *, partitions=None, oversample: int = 64, seed: int = 0,
            engine: str = "clradix", on_device: bool = False):
    """The global positions (int64) that sort the 1-D dask array ``x`` stably, chunked like
    :func:`sort`'s result (``on_device`` as there)."""
    return _sample_sort(x, partitions, oversample, seed, engine, True, on_device)


def to_device(x):
    """The dask array ``x`` with each chunk uploaded to the device of the worker that holds it,
    as a DeviceChunk (persist it to keep it there): the input of sorts and top-k that start
    from device memory."""
    import dask.array as da
    x = da.asarray(x)
    return x.map_blocks(_upload, dtype=x.dtype, meta=np.empty((0,) * x.ndim, x.dtype))


def _upload(chunk):
    from . import devices
    held = isinstance(chunk, DeviceChunk)
    with devices.lease(chunk.device if held else None) as dev:
        if held:
            _ = chunk.array   # uploaded here when it came from another process
            return chunk
        return DeviceChunk(dev.copies.to_device(dev.queue, chunk))


def _sample_sort(x, partitions, oversample, seed, engine_name, positions, on_device):
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    eng = _engine(engine_name)
    x = da.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"expected a 1-D dask array, got shape {x.shape}: for one order over "
                         f"every element pass x.ravel()")
    key_codec(x.dtype)
    chunks = x.chunks[0]
    if any(np.isnan(c) for c in chunks):
        raise ValueError("the chunk sizes are unknown: call x.compute_chunk_sizes() first")
    parts = x.numblocks[0] if partitions is None else _positive(
        partitions, "partitions", "the output's number of chunks; None: as many as x has")
    oversample = _positive(oversample, "oversample",
                           "the samples taken per output partition; the default is 64")
    out_dtype = np.dtype(np.int64) if positions else x.dtype
    n = int(sum(chunks))
    if n == 0:
        return da.empty((0,), dtype=out_dtype, chunks=((0,),))
    starts = np.concatenate([[0], np.cumsum(chunks)]).astype(np.int64)

    # stratified random sample positions: one in each of s equal strata of [0, n)
    s = min(n, oversample * parts)
    rng = np.random.default_rng(seed)
    sample_pos = ((np.arange(s) + rng.random(s)) * (n / s)).astype(np.int64)
    sample_pos = np.clip(sample_pos, 0, n - 1)

    keep = bool(on_device) and eng.name == "clradix"
    device_count, processes = _group_count()
    groups = min(device_count, parts)
    # piece tasks only where Dask may move pieces between processes: they let it move a
    # group's pieces alone; in one process every merge reads the split lists it was given
    pieces = groups > 1 and processes > 1
    bounds = [g * parts // groups for g in range(groups + 1)]
    token = tokenize(x, parts, oversample, seed, eng.name, positions, keep, groups, pieces)
    smp, spl = f"clradix-sample-{token}", f"clradix-splitters-{token}"
    cut, piece = f"clradix-split-{token}", f"clradix-piece-{token}"
    mrg = f"clradix-merge-{token}"
    name = f"clradix-{'argsort' if positions else 'sort'}-{token}"
    dsk = {}
    sample_keys = []
    for i in range(len(chunks)):
        lo, hi = np.searchsorted(sample_pos, starts[i : i + 2])
        if hi > lo:
            dsk[(smp, i)] = (_take, (x.name, i), sample_pos[lo:hi] - starts[i])
            sample_keys.append((smp, i))
    dsk[(spl, 0)] = (_splitters, sample_keys, sample_pos, parts)
    for i in range(len(chunks)):
        dsk[(cut, i)] = (_split, eng, (x.name, i), (spl, 0), int(starts[i]), parts, positions)
        if pieces:
            for g in range(groups):
                dsk[(piece, i, g)] = (operator.getitem, (cut, i), slice(bounds[g], bounds[g + 1]))
    for g in range(groups):
        if pieces:
            deps, a, b = [(piece, i, g) for i in range(len(chunks))], 0, bounds[g + 1] - bounds[g]
        else:
            deps, a, b = [(cut, i) for i in range(len(chunks))], bounds[g], bounds[g + 1]
        dsk[(mrg, g)] = (_merge, eng, deps, a, b, positions, out_dtype, keep)
        for j in range(bounds[g], bounds[g + 1]):
            dsk[(name, j)] = (operator.getitem, (mrg, g), j - bounds[g])
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, chunks=((np.nan,) * parts,), dtype=out_dtype,
                    meta=np.empty((0,), dtype=out_dtype))


def _positive(value, name, what):
    """``value`` as a positive int, else TypeError or ValueError naming ``name`` (``what`` it
    is)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a positive integer ({what}), got "
                        f"{type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer ({what}), got {value}")
    return int(value)


def _take(chunk, where):
    if isinstance(chunk, DeviceChunk) and chunk.on_device:   # a few keys, not the chunk
        from . import devices
        from .engines import take_keys
        with devices.bind(chunk.device):   # read where the chunk is
            return take_keys(chunk.queue, chunk.array, where)
    return as_host(chunk)[where]


def _splitters(samples, sample_pos, parts):
    """``parts - 1`` (key, position) splitters, evenly spaced in the ordered sample."""
    keys = np.concatenate(samples)
    order = np.lexsort((sample_pos, keys))
    picks = order[(np.arange(1, parts) * keys.size) // parts]
    return keys[picks], sample_pos[picks]


def _split(eng, chunk, splitters, start, parts, positions):
    """The chunk sorted and cut into ``parts`` pieces: sorted keys, or (keys, global positions)
    (the device engine's stay on the device, as DeviceChunks)."""
    with eng.task(chunk):
        keys, pos = eng.sort_chunk(chunk, start, positions)
        m = len(keys)
        skeys, spos = splitters
        lo, hi = eng.search(keys, skeys)
    # the share of the run equal to a splitter's key that comes before the splitter's position
    share = np.floor((hi - lo) * ((spos - start) / max(m, 1))).astype(np.int64)
    cut = np.where(spos < start, lo, np.where(spos >= start + m, hi, lo + share))
    cut = np.maximum.accumulate(np.concatenate([[0], cut, [m]]))
    return [eng.piece(keys, pos, int(a), int(b)) for a, b in zip(cut[:-1], cut[1:])]


def _merge(eng, split_pieces, a, b, positions, out_dtype, keep=False):
    """Output partitions ``a .. b - 1`` of a group, each its pieces (one from every chunk's
    list in ``split_pieces``, in chunk order) merged by a stable sort: their list."""
    group = [[p[j] for p in split_pieces] for j in range(a, b)]
    with eng.task(group):
        return eng.merge_group(group, positions, out_dtype, keep)


def _group_count():
    """``(devices, processes)``: the merge groups, one per device of the distributed client's
    workers when a client computes (the devices each worker process drives; one for a worker
    that has picked none yet), else one per device of this process (a local scheduler); and
    the processes that run the tasks."""
    client = _scheduling_client()
    if client is None:
        return _process_device_count(), 1
    try:
        counts = client.run(_process_device_count)
    except Exception:   # a client without live workers: one group is always correct
        return 1, 1
    return max(1, sum(counts.values())), max(1, len(counts))


def _scheduling_client():
    """The distributed client that computes graphs made now (None: a local scheduler does,
    even while a client exists)."""
    try:
        from distributed import default_client
        client = default_client()
    except (ImportError, ValueError):
        return None
    import dask.base
    scheduler = dask.base.get_scheduler()
    return client if getattr(scheduler, "__self__", None) is client else None


def _process_device_count() -> int:
    """The devices this process drives (one before it picks any: its first task picks one)."""
    from . import devices
    return max(1, len(devices._devices))
