"""The implementations the benchmark matrix times, one small class each.

Every implementation answers ``supports(op, dtype)`` and ``run(op, keys, repeat)`` -> (device ms
samples or None, wall ms samples), after one warm-up run, and raises AssertionError when an output
differs from numpy's. Operations: "sort" (keys only), "sort_kv" (keys + uint32 values = index),
"argsort", "topk" (the TOPK_K largest keys and their positions, sorted; clradix must match
numpy's positions exactly, ties by position; peers are checked on the values, their tie order
being their own).
"""

import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clradix

OPS = ("sort", "sort_kv", "argsort", "topk")
TOPK_K = 1000


def topk_k(n):
    return min(TOPK_K, n)


def reference(op, keys):
    """numpy's answer: sorted keys, (sorted keys, permuted values), indices or (top-k values,
    positions)."""
    if op == "topk":
        from .gpu_topk import reference as topk_reference
        pos = topk_reference(keys, topk_k(keys.size))[0]
        return keys[pos], pos.astype(np.uint32)
    order = np.argsort(keys, kind="stable")
    if op == "sort":
        return (keys[order],)
    if op == "sort_kv":
        return keys[order], order.astype(np.uint32)
    return (order,)


def _same(got, want):
    for g, w in zip(got, want):
        g, w = np.ascontiguousarray(g), np.ascontiguousarray(w)
        if g.dtype != w.dtype and g.dtype.kind in "iu" and w.dtype.kind in "iu":
            if not np.array_equal(g.astype(np.int64), w.astype(np.int64)):
                return False
        elif g.shape != w.shape or not np.array_equal(g.view(np.uint8), w.view(np.uint8)):
            return False
    return True


def _check(name, op, keys, got, want):
    if op == "topk" and not name.startswith("clradix"):
        got, want = got[:1], want[:1]   # a peer's tie order is its own: compare the values
    if not _same(got, want):
        raise AssertionError(f"{name} {op} output differs from numpy ({keys.dtype}, n={keys.size})")


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

    def run(self, op, keys, repeat, want):
        q = self.queue
        src = cl_array.to_device(q, keys)
        work = cl_array.empty_like(src)
        idx0 = cl_array.to_device(q, np.arange(keys.size, dtype=np.uint32))
        vals = cl_array.empty_like(idx0) if op == "sort_kv" else None
        dev, wall = [], []
        for rep in range(repeat + 1):
            if op != "argsort":
                cl.enqueue_copy(q, work.data, src.data)
            if vals is not None:
                cl.enqueue_copy(q, vals.data, idx0.data)
            m0 = cl.enqueue_marker(q)
            m0.wait()
            t0 = time.perf_counter()
            if op == "topk":
                tv, ti, evt = self.selector.topk(q, src, topk_k(keys.size))
            elif op == "argsort":
                out, evt = self.sorter.argsort(q, src)
            else:
                evt = self.sorter.sort(q, work, values=vals)
            evt.wait()
            t1 = time.perf_counter()
            if op == "topk":
                got = (tv.get(), ti.get())
            elif op == "argsort":
                got = (out.get(),)
            else:
                got = (work.get(),) if vals is None else (work.get(), vals.get())
            _check(self.name, op, keys, got, want)
            if rep:
                dev.append((evt.profile.end - m0.profile.end) * 1e-6)
                wall.append((t1 - t0) * 1e3)
        # the next cell (another size or dtype) starts without this one's pooled temporaries
        self.selector.free_memory()
        return dev, wall


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
        dev, wall = [], []
        for rep in range(repeat + 1):
            m0 = cl.enqueue_marker(q)
            m0.wait()
            t0 = time.perf_counter()
            outs, evt = rs(*([src, idx] if kv else [src]), key_bits=keys.dtype.itemsize * 8)
            evt.wait()
            t1 = time.perf_counter()
            _check(self.name, op, keys, tuple(o.get() for o in outs), want)
            if rep:
                dev.append((evt.profile.end - m0.profile.end) * 1e-6)
                wall.append((t1 - t0) * 1e3)
        return dev, wall


class NumpyImpl:
    """numpy on the host (stable sort / argsort; kv = argsort + two gathers). Wall time only."""

    name = "numpy (host)"

    def supports(self, op, dtype):
        return True

    def run(self, op, keys, repeat, want):
        wall = []
        for rep in range(max(repeat // 2, 1) + 1):
            t0 = time.perf_counter()
            if op == "topk":   # argpartition, then the k sorted (largest first)
                k = topk_k(keys.size)
                part = np.argpartition(keys, keys.size - k)[keys.size - k:]
                pos = part[np.argsort(keys[part], kind="stable")[::-1]]
                got = (keys[pos], pos.astype(np.uint32))
            elif op == "sort":
                got = (np.sort(keys, kind="stable"),)
            else:
                order = np.argsort(keys, kind="stable")
                got = (keys[order], order.astype(np.uint32)) if op == "sort_kv" else (order,)
            t1 = time.perf_counter()
            if rep:
                wall.append((t1 - t0) * 1e3)
        _check(self.name, op, keys, got, want)
        return None, wall


def _cuda_time(fn, repeat, prep):
    import cupy as cp
    dev, wall = [], []
    out = None
    for rep in range(repeat + 1):
        prep()
        cp.cuda.Stream.null.synchronize()
        s, e = cp.cuda.Event(), cp.cuda.Event()
        t0 = time.perf_counter()
        s.record()
        out = fn()
        e.record()
        e.synchronize()
        t1 = time.perf_counter()
        if rep:
            dev.append(cp.cuda.get_elapsed_time(s, e))
            wall.append((t1 - t0) * 1e3)
    return out, dev, wall


class CupyImpl:
    """CuPy (CUB radix sort): ndarray.sort in place, argsort, argsort + gather for kv."""

    name = "cupy (CUB)"

    def device_name(self):
        import cupy as cp
        return cp.cuda.runtime.getDeviceProperties(0)["name"].decode()

    def driver(self):
        import cupy as cp
        return f"CUDA driver {cp.cuda.runtime.driverGetVersion()}, cupy {cp.__version__}"

    def supports(self, op, dtype):
        return op != "topk"   # CuPy has no top-k

    def run(self, op, keys, repeat, want):
        import cupy as cp
        x = cp.asarray(keys)
        y = cp.empty_like(x)

        def prep():
            y[...] = x

        def fn():
            if op == "sort":
                y.sort()
                return (y,)
            order = cp.argsort(y)
            return (y[order], order.astype(cp.uint32)) if op == "sort_kv" else (order,)
        out, dev, wall = _cuda_time(fn, repeat, prep)
        _check(self.name, op, keys, tuple(o.get() for o in out), want)
        return dev, wall


class TorchImpl:
    """torch.sort (stable; it always returns indices too) and torch.argsort(stable=True)."""

    name = "torch"
    _VIEW = {"uint32": np.int32, "uint64": np.int64, "uint16": np.int16}

    def device_name(self):
        import torch
        return torch.cuda.get_device_name(0)

    def driver(self):
        import torch
        return f"torch {torch.__version__}"

    def supports(self, op, dtype):
        # torch has no unsigned 32/64-bit sort: unsigned keys are skipped
        return str(np.dtype(dtype)) not in self._VIEW

    def run(self, op, keys, repeat, want):
        import torch
        t = torch.as_tensor(keys, device="cuda")
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dev, wall = [], []
        for rep in range(repeat + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            s.record()
            if op == "topk":
                v, i = torch.topk(t, topk_k(keys.size))
                out = (v, i.to(torch.int32))
            elif op == "argsort":
                out = (torch.argsort(t, stable=True),)
            else:
                v, i = torch.sort(t, stable=True)
                out = (v,) if op == "sort" else (v, i.to(torch.int32))
            e.record()
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            if rep:
                dev.append(s.elapsed_time(e))
                wall.append((t1 - t0) * 1e3)
        got = tuple(o.cpu().numpy() for o in out)
        if op in ("sort_kv", "topk"):
            got = (got[0], got[1].astype(np.uint32))
        _check(self.name, op, keys, got, want)
        return dev, wall


def gpu_peers():
    """CuPy and torch when importable with a CUDA device, else []."""
    out = []
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        out.append(CupyImpl())
    except Exception:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            out.append(TorchImpl())
    except Exception:
        pass
    return out
