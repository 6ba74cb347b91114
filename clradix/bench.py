"""The random keys and the wall-clock timer that the demo (``python -m clradix``) and the
benchmarks (``python -m benchmarks``) share, so that both generate and time the same way."""

import statistics
import time


def random_keys(rng, dtype, n, floats="bits"):
    """``n`` random keys of ``dtype`` from the numpy Generator ``rng``: uniformly random bits
    (floats include NaN, inf, zeros and subnormals; bool: False and True), or with
    ``floats="normal"`` floats from the standard normal distribution (finite, for comparing
    implementations that order NaN differently). The same seed gives the same keys."""
    import numpy as np
    if floats not in ("bits", "normal"):
        raise ValueError(f"floats={floats!r}: expected 'bits' or 'normal'")
    d = np.dtype(dtype)
    if d == np.bool_:   # a bool's only bytes are 0 and 1
        return rng.random(n) < 0.5
    if d.kind == "f" and floats == "normal":
        return rng.standard_normal(n).astype(d)
    return rng.integers(0, 256, n * d.itemsize, dtype=np.uint8).view(d)


def time_calls(fn, repeat, prep=None):
    """One untimed run of ``fn()`` (the warm-up: kernels built, pools filled), then ``repeat``
    timed runs: (the wall seconds of each, the last run's return value). ``prep()``, when given,
    runs before each run, outside the clock."""
    samples, out = [], None
    for rep in range(repeat + 1):
        if prep:
            prep()
        out = None   # (the previous run's output is released before the next run)
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
        if rep:
            samples.append(t1 - t0)
    return samples, out


def median_ms(fn, repeat):
    """The median wall time of ``repeat`` runs of ``fn()`` after a warm-up, in ms (None for no
    runs)."""
    samples, _ = time_calls(fn, repeat)
    return statistics.median(samples) * 1e3 if samples else None


#: the pyopencl functions through which every command of a call is enqueued (kernels, fills,
#: copies and reads, markers, maps): what count_commands counts
ENQUEUE_FUNCTIONS = ("enqueue_nd_range_kernel", "enqueue_fill_buffer", "enqueue_copy",
                     "enqueue_marker", "enqueue_barrier", "enqueue_map_buffer")


class count_commands:
    """Count the commands enqueued inside the ``with`` block, by kind (``counts``: {function
    name: number}; ``total``): pyopencl's enqueue functions are wrapped for the block's duration
    (one thread at a time: the wrapping is the module's)."""

    def __init__(self):
        self.counts = {}

    @property
    def total(self):
        return sum(self.counts.values())

    def __enter__(self):
        import pyopencl as cl
        self._saved = {name: getattr(cl, name) for name in ENQUEUE_FUNCTIONS}
        for name, real in self._saved.items():
            def counted(*args, _name=name, _real=real, **kwargs):
                self.counts[_name] = self.counts.get(_name, 0) + 1
                return _real(*args, **kwargs)
            setattr(cl, name, counted)
        return self

    def __exit__(self, *exc):
        import pyopencl as cl
        for name, real in self._saved.items():
            setattr(cl, name, real)
        return False


#: the sizes of the command budget (docs/commands.md, tests/test_command_budget.py)
BUDGET_SIZES = (1 << 10, 1 << 16, 1 << 20)


def budget_calls(queue, n, rng):
    """{name: call} of the public operations whose commands the command budget counts, on n
    float32 keys already on the device (pyopencl Arrays in, Arrays out): each call enqueues and
    returns without waiting."""
    import numpy as np
    import pyopencl.array as cl_array

    import clradix
    x = cl_array.to_device(queue, rng.standard_normal(n).astype(np.float32))
    v = cl_array.to_device(queue, np.arange(n, dtype=np.uint32))
    s = cl_array.to_device(queue, np.sort(x.get()))
    probes = cl_array.to_device(queue, rng.standard_normal(max(n // 16, 1)).astype(np.float32))
    sorter = clradix.sorter_for(queue.context)
    xs, vs = x.copy(), v.copy()   # sorted in place again by each call: the same commands
    return {
        "sort": lambda: clradix.sort(x),
        "argsort": lambda: clradix.argsort(x),
        "Sorter.sort with values": lambda: sorter.sort(queue, xs, values=vs),
        "topk k=10": lambda: clradix.topk(x, 10),
        "searchsorted (n/16 values)": lambda: clradix.searchsorted(s, probes),
        "unique": lambda: clradix.unique(s),
        "unique_counts": lambda: clradix.unique_counts(s),
        "unique_inverse": lambda: clradix.unique(s, return_inverse=True),
        "run_lengths": lambda: clradix.run_lengths(s),
        "median": lambda: clradix.median(x),
        "partition (n/2)": lambda: clradix.partition(x, n // 2),
        "quantile (3 q)": lambda: clradix.quantile(x, [0.1, 0.5, 0.9]),
    }


def device_kind(device):
    """The label of a device's command budget: its platform's short name and device type."""
    import pyopencl as cl
    plat = device.platform.name.lower()
    name = ("pocl" if "portable computing" in plat else "nvidia" if "nvidia" in plat
            else "intel" if "intel" in plat else "oclgrind" if "oclgrind" in plat
            else plat.split()[0])
    return f"{name}-{'gpu' if device.type & cl.device_type.GPU else 'cpu'}"
