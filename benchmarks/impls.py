"""The implementations the matrix and the gpu command time, one small class each, and numpy's
answers they are checked against.

Every implementation answers ``supports(op, dtype)`` and ``run(op, keys, repeat, want)`` ->
(timing.Timing, whether the last timed run's output equals ``want``); clradix, numpy, CuPy and
torch also ``prepare(op, keys)`` -> :class:`Prepared`, the call that ``run`` times and that the
latency command times its own ways. Operations: "sort" (keys
only), "sort_kv" (keys + uint32 values = index), "argsort", "topk" (the TOPK_K largest keys and
their positions, sorted; clradix must match numpy's positions exactly, ties by position; peers
are checked on the values, their tie order being their own).
"""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clradix

from . import timing

OPS = ("sort", "sort_kv", "argsort", "topk")
TOPK_K = 1000


def topk_k(n):
    return min(TOPK_K, n)


def stable_order(keys, descending=False, cupy=False):
    """The stable sort order of ``keys`` by clradix's key order (NaN last, -0.0 before 0.0):
    numpy's, or with ``cupy`` CuPy's (CUB radix sort, stable) of the same order keys, which takes
    a second where numpy takes half a minute (2^28 keys)."""
    okey = clradix.key_codec(keys.dtype).order_key(keys)
    if descending:
        okey = ~okey
    if cupy:
        import cupy as cp
        return cp.argsort(cp.asarray(okey), kind="stable").get()
    return np.argsort(okey, kind="stable")


def reference(op, keys, cupy=False):
    """The answer: sorted keys, (sorted keys, permuted values), indices or (top-k values,
    positions)."""
    if op == "topk":
        pos = topk_reference(keys, topk_k(keys.size))[0]
        return keys[pos], pos.astype(np.uint32)
    order = stable_order(keys, cupy=cupy)
    if op == "sort":
        return (keys[order],)
    if op == "sort_kv":
        return keys[order], order.astype(np.uint32)
    return (order,)


def topk_reference(x, k, largest=True):
    """numpy: indices of the k largest per row, ties by position (a stable argsort for short
    rows; argpartition + stable sort of the selection for long ones)."""
    x2 = x.reshape(-1, x.shape[-1])
    okey = clradix.key_codec(x.dtype).order_key(x2.ravel()).reshape(x2.shape)
    if largest:
        okey = ~okey
    if x2.shape[1] <= 1 << 16:
        return np.argsort(okey, axis=-1, kind="stable")[:, :k]
    part = np.argpartition(okey, k - 1, axis=-1)[:, :k] if k < x2.shape[1] else \
        np.tile(np.arange(x2.shape[1]), (x2.shape[0], 1))
    # the k-th pair is unique only with positions: fix ties at the boundary exactly
    kth = np.take_along_axis(okey, part, -1).max(axis=-1, keepdims=True)
    out = []
    for r in range(x2.shape[0]):
        less = np.flatnonzero(okey[r] < kth[r])
        eq = np.flatnonzero(okey[r] == kth[r])[:k - less.size]
        sel = np.concatenate([less, eq])
        out.append(sel[np.lexsort((sel, okey[r][sel]))])
    return np.array(out)


def same(got, want):
    """Equal outputs: integers by value, everything else bit for bit."""
    for g, w in zip(got, want):
        g, w = np.ascontiguousarray(g), np.ascontiguousarray(w)
        if g.dtype != w.dtype and g.dtype.kind in "iu" and w.dtype.kind in "iu":
            if not np.array_equal(g.astype(np.int64), w.astype(np.int64)):
                return False
        elif g.shape != w.shape or not np.array_equal(g.view(np.uint8), w.view(np.uint8)):
            return False
    return True


def _check(name, op, got, want):
    if op == "topk" and not name.startswith("clradix"):
        got, want = got[:1], want[:1]   # a peer's tie order is its own: compare the values
    return same(got, want)


class Prepared:
    """One operation of one implementation on one input, ready to call again and again.

    ``call`` runs it once: OpenCL implementations take ``call(wait_for=None)`` and return
    ``(event, outputs)``; CUDA and host ones take ``call()`` and return the outputs. ``prep``
    (or None) restores the input of an in-place operation before a run (done once here);
    ``result(outputs)`` gives the outputs on the host as the check compares them; ``release``
    frees what the implementation pooled."""

    def __init__(self, call, result, prep=None, release=None):
        self.call, self.result, self.prep = call, result, prep
        self.release = release or (lambda: None)
        if prep:
            prep()


class ClradixImpl:
    """clradix on one OpenCL queue, with the planner's policy or fixed overrides."""

    def __init__(self, queue, overrides=None, label="clradix"):
        self.queue = queue
        self.sorter = clradix.Sorter(queue.context, **(overrides or {}))
        self.selector = clradix.Selector(queue.context, sorter=self.sorter)
        self.name = label

    def supports(self, op, dtype):
        return True

    def policy(self, dtype, n):
        return str(self.sorter.plan(self.queue.device, dtype, n))

    def prepare(self, op, keys):
        """``op`` also "argsort_out": argsort into one index array reused by every call."""
        q = self.queue
        src = cl_array.to_device(q, keys)
        work = cl_array.empty_like(src)
        idx0 = cl_array.to_device(q, np.arange(keys.size, dtype=np.uint32))
        vals = cl_array.empty_like(idx0) if op == "sort_kv" else None
        out = cl_array.empty(q, keys.size, np.uint32) if op == "argsort_out" else None

        def prep():  # the in-place sorts start from the unsorted keys (and values) each run
            cl.enqueue_copy(q, work.data, src.data)
            if vals is not None:
                cl.enqueue_copy(q, vals.data, idx0.data)

        def call(wait_for=None):
            if op == "topk":
                v, i, evt = self.selector.topk(q, src, topk_k(keys.size), wait_for=wait_for)
                return evt, (v, i)
            if op.startswith("argsort"):
                # argsort: a new index array per call (its allocation is part of the call)
                res, evt = self.sorter.argsort(q, src, out=out, wait_for=wait_for)
                return evt, (res,)
            evt = self.sorter.sort(q, work, values=vals, wait_for=wait_for)
            return evt, (work,) if vals is None else (work, vals)

        def release():
            # the next cell (another size or dtype) starts without this one's pooled temporaries
            self.selector.free_memory()
        return Prepared(call, lambda outs: tuple(a.get() for a in outs),
                        prep if op in ("sort", "sort_kv") else None, release)

    def run(self, op, keys, repeat, want):
        p = self.prepare(op, keys)
        t = timing.time_opencl(self.queue, p.call, repeat, p.prep)
        ok = _check(self.name, op, p.result(t.out), want)
        t.out = None
        p.release()
        return t, ok


class PyopenclRadixSort:
    """pyopencl.algorithm.RadixSort: unsigned and signed integers, float32 through an
    order-preserving key expression (it sorts integer keys only)."""

    name = "pyopencl RadixSort"
    _CTYPES = {"uint32": ("unsigned int", "ary[i]", np.uint32),
               "int32": ("int", "(as_uint(ary[i]) ^ 0x80000000u)", np.uint32),
               "float32": ("float", "(as_uint(ary[i]) ^ ((as_uint(ary[i]) >> 31) ? 0xffffffffu "
                                    ": 0x80000000u))", np.uint32),
               "uint64": ("unsigned long", "ary[i]", np.uint64)}

    def __init__(self, queue):
        self.queue = queue
        self._sorters = {}

    def supports(self, op, dtype):
        return op in ("sort", "sort_kv") and str(np.dtype(dtype)) in self._CTYPES

    def _sorter(self, dtype, kv):
        key = (str(dtype), kv)
        if key not in self._sorters:
            from pyopencl.algorithm import RadixSort
            ctype, expr, kdt = self._CTYPES[str(dtype)]
            args = f"{ctype} *ary" + (", unsigned int *vals" if kv else "")
            names = ["ary"] + (["vals"] if kv else [])
            self._sorters[key] = RadixSort(self.queue.context, args, key_expr=expr,
                                           sort_arg_names=names, key_dtype=kdt)
        return self._sorters[key]

    def run(self, op, keys, repeat, want):
        q = self.queue
        kv = op == "sort_kv"
        rs = self._sorter(keys.dtype, kv)
        src = cl_array.to_device(q, keys)
        idx = cl_array.to_device(q, np.arange(keys.size, dtype=np.uint32))

        def call():
            outs, evt = rs(*([src, idx] if kv else [src]), key_bits=keys.dtype.itemsize * 8)
            return evt, outs
        t = timing.time_opencl(q, call, repeat)
        ok = _check(self.name, op, tuple(o.get() for o in t.out), want)
        t.out = None
        return t, ok


class NumpyImpl:
    """numpy on the host (sort / argsort of ``kind``, stable by default; kv = argsort + two
    gathers). Wall time only, half the repeats (at least one)."""

    def __init__(self, kind="stable", name="numpy (host)"):
        self.kind, self.name = kind, name

    def supports(self, op, dtype):
        return True

    def prepare(self, op, keys):
        kind = self.kind

        def call():
            if op == "topk":   # argpartition, then the k sorted (largest first)
                k = topk_k(keys.size)
                part = np.argpartition(keys, keys.size - k)[keys.size - k:]
                pos = part[np.argsort(keys[part], kind="stable")[::-1]]
                return keys[pos], pos.astype(np.uint32)
            if op == "sort":
                return (np.sort(keys, kind=kind),)
            order = np.argsort(keys, kind=kind)
            return (keys[order], order.astype(np.uint32)) if op == "sort_kv" else (order,)
        return Prepared(call, lambda outs: outs)

    def run(self, op, keys, repeat, want):
        p = self.prepare(op, keys)
        t = timing.time_host(p.call, max(repeat // 2, 1))
        return t, _check(self.name, op, t.out, want)


class CupyImpl:
    """CuPy (CUB radix sort): ndarray.sort in place, argsort, argsort + gather for kv."""

    name, library = "cupy (CUB)", "cupy"

    def device_fields(self):
        import cupy as cp
        return dict(device="CUDA",
                    device_full=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                    driver=f"CUDA driver {cp.cuda.runtime.driverGetVersion()}, "
                           f"cupy {cp.__version__}")

    def supports(self, op, dtype):
        return op != "topk"   # CuPy has no top-k

    def synchronize(self):
        import cupy as cp
        cp.cuda.Device().synchronize()

    def prepare(self, op, keys):
        import cupy as cp
        x = cp.asarray(keys)
        y = cp.empty_like(x)

        def prep():
            y[...] = x

        def call():
            if op == "sort":
                y.sort()
                return (y,)
            order = cp.argsort(y, kind="stable")
            return (y[order], order.astype(cp.uint32)) if op == "sort_kv" else (order,)
        return Prepared(call, lambda outs: tuple(o.get() for o in outs), prep,
                        cp.get_default_memory_pool().free_all_blocks)

    def run(self, op, keys, repeat, want):
        p = self.prepare(op, keys)
        t = timing.time_cuda("cupy", p.call, repeat, p.prep)
        ok = _check(self.name, op, p.result(t.out), want)
        release = p.release
        t.out = p = None   # (the arrays go before the pool is emptied)
        release()
        return t, ok


class TorchImpl:
    """torch.sort (stable; it always returns indices too), torch.argsort(stable=True) and
    torch.topk."""

    name, library = "torch", "torch"
    _UNSIGNED = ("uint16", "uint32", "uint64")

    def device_fields(self):
        import torch
        return dict(device="CUDA", device_full=torch.cuda.get_device_name(0),
                    driver=f"torch {torch.__version__}, CUDA {torch.version.cuda}")

    def supports(self, op, dtype):
        # torch has no unsigned 16/32/64-bit sort: unsigned keys are skipped
        return str(np.dtype(dtype)) not in self._UNSIGNED

    def synchronize(self):
        import torch
        torch.cuda.synchronize()

    def prepare(self, op, keys):
        import torch
        x = torch.as_tensor(keys, device="cuda")

        def call():
            if op == "topk":
                v, i = torch.topk(x, topk_k(keys.size))
                return v, i.to(torch.int32)
            if op == "argsort":
                return (torch.argsort(x, stable=True),)
            v, i = torch.sort(x, stable=True)
            return (v,) if op == "sort" else (v, i.to(torch.int32))

        def result(outs):
            got = tuple(o.cpu().numpy() for o in outs)
            if op in ("sort_kv", "topk"):
                got = (got[0], got[1].astype(np.uint32))
            return got
        return Prepared(call, result, release=torch.cuda.empty_cache)

    def run(self, op, keys, repeat, want):
        p = self.prepare(op, keys)
        t = timing.time_cuda("torch", p.call, repeat)
        got = p.result(t.out)
        release = p.release
        t.out = p = None
        release()
        return t, _check(self.name, op, got, want)


def cuda_peers():
    """(CuPy and torch where importable with a CUDA device, a line for each that is not)."""
    peers, absent = [], []
    try:
        import cupy
    except ImportError as exc:
        absent.append(f"cupy: not importable ({exc})")
    else:
        try:
            cupy.cuda.runtime.getDeviceCount()
            peers.append(CupyImpl())
        except cupy.cuda.runtime.CUDARuntimeError as exc:
            absent.append(f"cupy: no CUDA device ({exc})")
    try:
        import torch
    except ImportError as exc:
        absent.append(f"torch: not importable ({exc})")
    else:
        if torch.cuda.is_available():
            peers.append(TorchImpl())
        else:
            absent.append("torch: no CUDA device (torch.cuda.is_available() is False)")
    return peers, absent
