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
