"""Refused calls: the right exception, a message that names the problem, and no byte changed."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.policy import PolicyError


@pytest.fixture
def setup(ctx, queue):
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2 ** 32, 1000, dtype=np.uint32)
    vals = np.arange(1000, dtype=np.uint32)
    d_keys = cl_array.to_device(queue, keys)
    d_vals = cl_array.to_device(queue, vals)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=keys)
    return dict(sorter=clradix.Sorter(ctx), keys=keys, vals=vals, d_keys=d_keys, d_vals=d_vals,
                buf=buf)


def _other_queue():
    dev = cl.get_platforms()[0].get_devices()[0]
    return cl.CommandQueue(cl.Context([dev]))


CASES = [
    ("bool dtype", TypeError, "unsupported key dtype",
     lambda s, q: s["sorter"].sort(q, s["buf"], dtype=np.bool_)),
    ("complex dtype", TypeError, "complex64",
     lambda s, q: s["sorter"].sort(q, s["buf"], dtype=np.complex64)),
    ("big-endian dtype", TypeError, "byte order",
     lambda s, q: s["sorter"].sort(q, s["buf"], dtype=">u4")),
    ("conflicting dtype", TypeError, "array holds uint32",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], dtype=np.float32)),
    ("n beyond buffer", ValueError, "short by 4 bytes",
     lambda s, q: s["sorter"].sort(q, s["buf"], n=1001)),
    ("n beyond array", ValueError, "exceeds the array's 1000 elements by 5",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], n=1005)),
    ("negative n", ValueError, "non-negative",
     lambda s, q: s["sorter"].sort(q, s["buf"], n=-1)),
    ("values shorter", ValueError, "fewer than the 1000 keys (short by 1)",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], values=s["d_vals"][:999])),
    ("values are keys", ValueError, "another buffer",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], values=s["d_keys"])),
    ("value width 3", TypeError, "3",
     lambda s, q: s["sorter"].sort(q, s["d_keys"],
                                   values=cl_array.empty(q, 1000, np.dtype("V3")))),
    ("end_bit too big", ValueError, "outside the 32 bits",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], end_bit=33)),
    ("begin after end", ValueError, "bit range [9, 8)",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], begin_bit=9, end_bit=8)),
    ("2-D array", ValueError, "1-D",
     lambda s, q: s["sorter"].sort(q, s["d_keys"].reshape(10, 100))),
    ("strided array", ValueError, "not contiguous",
     lambda s, q: s["sorter"].sort(q, s["d_keys"][::2])),
    ("not a buffer", TypeError, "expected a pyopencl Buffer",
     lambda s, q: s["sorter"].sort(q, s["keys"])),
    ("not a queue", TypeError, "CommandQueue",
     lambda s, q: s["sorter"].sort(None, s["buf"])),
    ("foreign queue", ValueError, "another OpenCL context",
     lambda s, q: s["sorter"].sort(_other_queue(), s["buf"])),
    ("radix bits 3", PolicyError, "radix_bits=3",
     lambda s, q: clradix.Sorter(q.context, radix_bits=3).sort(q, s["buf"])),
    ("tile too large", PolicyError, "exceeds 65536",
     lambda s, q: clradix.Sorter(q.context, wg_size=256, items_per_thread=512).sort(q, s["buf"])),
    ("wg not a power of two", PolicyError, "power of two",
     lambda s, q: clradix.Sorter(q.context, wg_size=96).sort(q, s["buf"])),
    ("argsort out dtype", TypeError, "uint32",
     lambda s, q: s["sorter"].argsort(q, s["d_keys"], out=cl_array.empty(q, 1000, np.int64))),
    ("argsort out short", ValueError, "exceeds",
     lambda s, q: s["sorter"].argsort(q, s["d_keys"], out=cl_array.empty(q, 999, np.uint32))),
    ("module sort on numpy", TypeError, "pyopencl.array.Array",
     lambda s, q: clradix.sort(s["keys"])),
    ("module sort 2-D", ValueError, "1-D",
     lambda s, q: clradix.sort(s["d_keys"].reshape(2, 500))),
]


@pytest.mark.parametrize("name,exc,msg,call", CASES, ids=[c[0] for c in CASES])
def test_refused(setup, queue, name, exc, msg, call):
    with pytest.raises(exc) as info:
        call(setup, queue)
    assert msg in str(info.value)
    queue.finish()
    np.testing.assert_array_equal(setup["d_keys"].get(), setup["keys"])
    np.testing.assert_array_equal(setup["d_vals"].get(), setup["vals"])
    out = np.empty_like(setup["keys"])
    cl.enqueue_copy(queue, out, setup["buf"])
    np.testing.assert_array_equal(out, setup["keys"])


def test_value_size_ambiguous_buffer(setup, queue, ctx):
    vbuf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 1000 * 4 + 3)
    with pytest.raises(ValueError, match="pass value_dtype"):
        setup["sorter"].sort(queue, setup["buf"], values=vbuf)
