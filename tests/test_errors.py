"""Refused calls: the right exception, a message that names the problem, and no byte changed."""

import re

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clradix
from clradix.core.errors import PolicyError
from numpy.exceptions import AxisError


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


_OTHER_CONTEXTS = []


def _other_queue():
    """A queue of a context of its own, kept alive as a user keeps theirs (Intel's CPU runtime
    frees a context its last handle releases, though a queue still holds it)."""
    dev = cl.get_platforms()[0].get_devices()[0]
    _OTHER_CONTEXTS.append(cl.Context([dev]))
    return cl.CommandQueue(_OTHER_CONTEXTS[-1])


CASES = [
    ("bytes dtype", TypeError, "unsupported key dtype |S1 (byte order '|')",
     lambda s, q: s["sorter"].sort(q, s["buf"], dtype="S1")),
    ("complex dtype", TypeError, "unsupported key dtype complex64",
     lambda s, q: s["sorter"].sort(q, s["buf"], dtype=np.complex64)),
    ("big-endian dtype", TypeError, "unsupported key dtype >u4 (byte order '>')",
     lambda s, q: s["sorter"].sort(q, s["buf"], dtype=">u4")),
    ("conflicting dtype", TypeError, "keys: dtype=float32 given, but the array holds uint32",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], dtype=np.float32)),
    ("n beyond buffer", ValueError,
     "keys: buffer of 4000 bytes is too small for n=1001 uint32 (4004 bytes), short by 4 bytes",
     lambda s, q: s["sorter"].sort(q, s["buf"], n=1001)),
    ("n beyond array", ValueError, "keys: n=1005 exceeds the array's 1000 elements by 5",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], n=1005)),
    ("negative n", ValueError, "n must be non-negative, got -1",
     lambda s, q: s["sorter"].sort(q, s["buf"], n=-1)),
    ("values shorter", ValueError, "values: 999 elements are fewer than the 1000 keys (short by 1)",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], values=s["d_vals"][:999])),
    ("values are keys", ValueError, "values must be another buffer than the keys",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], values=s["d_keys"])),
    ("value Buffer of width 3", TypeError,
     "unsupported value dtype |V3: values must be 1, 2, 4, 8 or 16 bytes wide, this one is 3",
     lambda s, q: s["sorter"].sort(q, s["d_keys"],
                                   values=cl_array.empty(q, 1000, np.dtype("V3")).base_data,
                                   value_dtype="V3")),
    ("values list with a Buffer", TypeError, "values[1]: a Buffer does not say its record width",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], values=[s["d_vals"], s["d_vals"].base_data])),
    ("end_bit too big", ValueError, "bit range [0, 33) is outside the 32 bits of uint32 keys",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], end_bit=33)),
    ("begin after end", ValueError, "bit range [9, 8) is outside the 32 bits of uint32 keys",
     lambda s, q: s["sorter"].sort(q, s["d_keys"], begin_bit=9, end_bit=8)),
    ("2-D array", ValueError, "keys: expected a 1-D array, got shape (10, 100)",
     lambda s, q: s["sorter"].sort(q, s["d_keys"].reshape(10, 100))),
    ("strided array", ValueError, "keys: array is not contiguous (strides (8,) for itemsize 4)",
     lambda s, q: s["sorter"].sort(q, s["d_keys"][::2])),
    ("not a buffer", TypeError,
     "keys: expected a pyopencl Buffer or pyopencl.array.Array, got ndarray",
     lambda s, q: s["sorter"].sort(q, s["keys"])),
    ("not a queue", TypeError, "expected a pyopencl.CommandQueue, got NoneType",
     lambda s, q: s["sorter"].sort(None, s["buf"])),
    ("foreign queue", ValueError, "queue belongs to another OpenCL context",
     lambda s, q: s["sorter"].sort(_other_queue(), s["buf"])),
    ("radix bits 3", PolicyError, "radix_bits=3 is not supported: expected 2, 4 or 8",
     lambda s, q: clradix.Sorter(q.context, radix_bits=3).sort(q, s["buf"])),
    ("tile too large", PolicyError,
     # (onesweep, the NVIDIA planner's choice here, says "must be below 65536" and why)
     "tile of 131072 keys (wg_size x items_per_thread) ",
     lambda s, q: clradix.Sorter(q.context, wg_size=256, items_per_thread=512).sort(q, s["buf"])),
    # (100: no subgroup width divides it, which onesweep's work-groups would also take)
    ("wg not a power of two", PolicyError, "wg_size=100 must be a power of two",
     lambda s, q: clradix.Sorter(q.context, wg_size=100).sort(q, s["buf"])),
    ("argsort out dtype", TypeError, "out: indices are int32, uint32, int64 or uint64, got "
     "dtype('float32')",
     lambda s, q: s["sorter"].argsort(q, s["d_keys"], out=cl_array.empty(q, 1000, np.float32))),
    ("argsort out dtype disagrees", TypeError,
     "out: dtype=int64 given, but the array holds uint32",
     lambda s, q: s["sorter"].argsort(q, s["d_keys"], out=cl_array.empty(q, 1000, np.uint32),
                                      index_dtype=np.int64)),
    ("argsort out short", ValueError, "out: n=1000 exceeds the array's 999 elements by 1",
     lambda s, q: s["sorter"].argsort(q, s["d_keys"], out=cl_array.empty(q, 999, np.uint32))),
    # an out= of another dtype is named as out (it once blamed index_dtype, never passed)
    ("module argsort out dtype", TypeError, "out: indices are int32, uint32, int64 or uint64, "
     "got dtype('float32')",
     lambda s, q: clradix.argsort(s["d_keys"], out=cl_array.empty(q, 1000, np.float32))),
    ("module argsort numpy out dtype", TypeError, "out: indices are int32, uint32, int64 or "
     "uint64, got dtype('float32')",
     lambda s, q: clradix.argsort(s["keys"], out=np.empty(1000, np.float32), queue=q)),
    ("module topk out dtype", TypeError, "out[1] (indices): indices are int32, uint32, int64 "
     "or uint64, got dtype('float32')",
     lambda s, q: clradix.topk(s["d_keys"], 3, out=(cl_array.empty(q, 3, np.uint32),
                                                    cl_array.empty(q, 3, np.float32)))),
    ("module searchsorted out dtype", TypeError, "out: indices are int32, uint32, int64 or "
     "uint64, got dtype('float32')",
     lambda s, q: clradix.searchsorted(s["d_keys"], s["d_keys"],
                                       out=cl_array.empty(q, 1000, np.float32))),
    ("module lexsort out dtype", TypeError, "out: indices are int32, uint32, int64 or uint64, "
     "got dtype('float32')",
     lambda s, q: clradix.lexsort([s["d_keys"]], out=cl_array.empty(q, 1000, np.float32))),
    ("module sort on a Buffer", TypeError,
     "a: a Buffer does not say its shape or type: wrap it in a pyopencl.array.Array",
     lambda s, q: clradix.sort(s["buf"])),
    ("module sort axis out of range", AxisError, "axis 3 is out of bounds for array of "
     "dimension 3", lambda s, q: clradix.sort(s["d_keys"].reshape(2, 2, 250), 3)),
    ("module sort descending not a bool", TypeError, "descending must be a bool, got str 'no'",
     lambda s, q: clradix.sort(s["d_keys"], descending="no")),
    ("module sort order", ValueError, "order='f0': numpy's order= sorts structured arrays",
     lambda s, q: clradix.sort(s["d_keys"], order="f0")),
]


@pytest.mark.parametrize("name,exc,msg,call", CASES, ids=[c[0] for c in CASES])
def test_refused(setup, queue, name, exc, msg, call):
    with pytest.raises(exc) as info:
        call(setup, queue)
    # exactly this class (not a subclass: a PolicyError is a ValueError too), and the words and
    # numbers that name the problem
    assert info.type is exc, f"{info.type.__name__}: {info.value}"
    assert msg in str(info.value), str(info.value)
    queue.finish()
    np.testing.assert_array_equal(setup["d_keys"].get(), setup["keys"])
    np.testing.assert_array_equal(setup["d_vals"].get(), setup["vals"])
    out = np.empty_like(setup["keys"])
    cl.enqueue_copy(queue, out, setup["buf"])
    np.testing.assert_array_equal(out, setup["keys"])


def test_value_size_ambiguous_buffer(setup, queue, ctx):
    vbuf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 1000 * 4 + 3)
    with pytest.raises(ValueError) as info:
        setup["sorter"].sort(queue, setup["buf"], values=vbuf)
    assert info.type is ValueError
    # names the operand and the remedy
    assert re.match(r"values: .*; pass value_dtype=", str(info.value)), str(info.value)
    queue.finish()
    out = np.empty_like(setup["keys"])
    cl.enqueue_copy(queue, out, setup["buf"])
    np.testing.assert_array_equal(out, setup["keys"])
