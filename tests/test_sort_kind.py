"""numpy's ``kind`` and torch's ``stable`` arguments of clradix.sort and clradix.argsort: every
accepted value gives the stable order (the only one a radix sort has), checked against numpy's
stable sort on keys with many ties, -0.0 beside +0.0 and NaNs; anything else is refused before
anything runs. The positional order (array, axis, descending) is unchanged."""

import numpy as np
import pyopencl.array as cl_array
import pytest

import clradix

from reference import bits_of

KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")
STABLES = (None, True, False, np.True_, np.False_)


def tied_keys(rng, shape):
    """float32 keys of few values, with -0.0 beside +0.0 and NaNs of either sign and many
    payloads, so that only the stable order gives numpy's stable sort bit for bit."""
    x = rng.integers(-3, 4, shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[rng.random(flat.size) < 0.2] = -0.0
    nan_at = rng.random(flat.size) < 0.05
    nan_bits = rng.integers(0x7FC00000, 0x80000000, nan_at.sum(), dtype=np.uint32)
    nan_bits[rng.random(nan_bits.size) < 0.5] |= np.uint32(0x80000000)
    flat[nan_at] = nan_bits.view(np.float32)
    return x


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_every_kind_gives_the_stable_order(queue, rng, kind):
    x = tied_keys(rng, 4099)
    want = np.argsort(x, kind="stable")
    d = cl_array.to_device(queue, x)
    np.testing.assert_array_equal(clradix.argsort(d, kind=kind).get(), want)
    np.testing.assert_array_equal(bits_of(clradix.sort(d, kind=kind).get()), bits_of(x[want]))
    np.testing.assert_array_equal(clradix.argsort(x, kind=kind, queue=queue), want)
    np.testing.assert_array_equal(bits_of(clradix.sort(x, kind=kind, queue=queue)),
                                  bits_of(np.sort(x, kind="stable")))
    rows = tied_keys(rng, (7, 301))
    np.testing.assert_array_equal(clradix.argsort(rows, kind=kind, queue=queue),
                                  np.argsort(rows, axis=-1, kind="stable"))
    np.testing.assert_array_equal(bits_of(clradix.sort(rows, -1, kind=kind, queue=queue)),
                                  bits_of(np.sort(rows, axis=-1, kind="stable")))


@pytest.mark.parametrize("stable", STABLES, ids=repr)
def test_stable_argument_gives_the_stable_order(queue, rng, stable):
    """torch's ``stable``: False allows any order of equal keys, and gives the stable one too."""
    x = rng.integers(0, 4, 2001).astype(np.int16)
    d = cl_array.to_device(queue, x)
    np.testing.assert_array_equal(clradix.argsort(d, stable=stable).get(),
                                  np.argsort(x, kind="stable"))
    down = clradix.argsort(d, descending=True, stable=stable).get()
    np.testing.assert_array_equal(down, np.argsort(-x, kind="stable"))
    np.testing.assert_array_equal(clradix.sort(x, stable=stable, kind="stable", queue=queue),
                                  np.sort(x))


def test_positional_arguments_follow_numpy(queue, rng):
    """(a, axis, kind) positionally, as numpy's sort and argsort take them: a kind in third place
    never means descending; descending is keyword-only."""
    x = rng.integers(0, 50, (3, 200)).astype(np.uint8)
    d = cl_array.to_device(queue, x)
    np.testing.assert_array_equal(clradix.sort(d, 1, "stable").get(), np.sort(x, axis=1))
    np.testing.assert_array_equal(clradix.sort(x, 0, "quicksort", None, queue=queue),
                                  np.sort(x, 0, "quicksort", None))
    np.testing.assert_array_equal(clradix.argsort(d, -1, "heapsort").get(),
                                  np.argsort(x, axis=1, kind="stable"))
    np.testing.assert_array_equal(clradix.sort(d, 1, descending=True).get(),
                                  np.sort(x, axis=1)[:, ::-1])
    with pytest.raises(TypeError, match="descending=True"):
        clradix.sort(d, 1, True)
    with pytest.raises(TypeError):
        clradix.sort(d, 1, None, None, True)   # nothing positional after order


@pytest.mark.parametrize("fn", [clradix.sort, clradix.argsort], ids=lambda f: f.__name__)
def test_refused_kind_and_stable(queue, fn):
    x = np.arange(10, dtype=np.uint32)[::-1].copy()
    d = cl_array.to_device(queue, x)
    for bad in ("introsort", "", 3, True):
        # numpy's own verdict and exception class, naming the kind
        with pytest.raises(Exception) as want:
            np.sort(x, kind=bad)
        with pytest.raises(want.type, match="kind="):
            fn(d, kind=bad)
        with pytest.raises(want.type, match="kind="):
            fn(x, kind=bad, queue=queue)
    for good in ("quick", "Stable", "m", b"stable"):   # what numpy takes, clradix takes
        np.testing.assert_array_equal(np.asarray(fn(x, kind=good, queue=queue)),
                                      np.asarray(getattr(np, fn.__name__)(x, kind="stable")))
    for bad in ("yes", 1, 0.0):
        with pytest.raises(TypeError, match="stable must be a bool or None"):
            fn(d, stable=bad)
    np.testing.assert_array_equal(d.get(), x)   # nothing ran
