"""Key codecs: how each key dtype becomes an order-preserving unsigned integer.

Radix sort works on unsigned bit patterns. Every supported key dtype has an *order key*: an unsigned
integer of the same width whose unsigned order is the order numpy's stable sort uses.

- unsigned integers: the bits themselves;
- signed integers: the bits with the sign bit flipped;
- IEEE floats (and bfloat16, with the optional ml_dtypes package): positive values get the sign
  bit set, negative values have all bits inverted, every NaN (any sign, any payload) becomes all
  ones (after +inf), and -0.0 becomes +0.0, so the two zeros compare equal and keep their input
  order;
- bool: its byte, as uint8 (False < True, numpy's and torch's order). A bool array holding a byte
  other than 0 and 1 (made through a view) sorts by that byte.

``KEY_DTYPES`` lists numpy's numeric key types; bool (always) and bfloat16 (with ml_dtypes) are
key types beside them, which ``key_codec`` accepts.

The float map is not injective (NaNs and the two zeros collapse), so clradix never stores order keys:
keys travel through the sort in their own bits and the order key is computed in registers each time
a digit is extracted. Output keys are therefore bit-exact (NaN payloads and the sign of zero survive),
and no pass is spent on encoding or decoding.

This module is the single place that knows about key types. The OpenCL side of the same map is the
``order_key`` def in ``cl_templates/common.mako``, rendered from :meth:`KeyCodec.template_args`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Dict, Optional

import numpy as np
from numpy.typing import DTypeLike

_UNSIGNED_CL = {8: "uchar", 16: "ushort", 32: "uint", 64: "ulong"}
_UNSIGNED_NP = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
# Bit pattern of +inf: any magnitude above it is a NaN.
_FLOAT_INF_BITS = {16: 0x7C00, 32: 0x7F800000, 64: 0x7FF0000000000000}
# bfloat16 (the optional ml_dtypes package): float32's upper half
_BFLOAT16_INF_BITS = 0x7F80


@dataclass(frozen=True)
class KeyCodec:
    """Everything the kernels and the host need to know about one key dtype."""

    dtype: np.dtype
    kind: str  # "uint" (and bool), "int" or "float"
    bits: int
    inf_bits: int = 0  # floats: the bit pattern of +inf (any larger magnitude is a NaN)

    @property
    def itemsize(self):
        return self.bits // 8

    @property
    def cl_type(self):
        """The unsigned OpenCL type that carries the key's bits."""
        return _UNSIGNED_CL[self.bits]

    @property
    def unsigned_dtype(self):
        return np.dtype(_UNSIGNED_NP[self.bits])

    def template_args(self):
        """Parameters of the ``order_key`` template def."""
        return {
            "key_kind": self.kind,
            "key_bits": self.bits,
            "key_t": self.cl_type,
            "key_inf_bits": self.inf_bits,
        }

    def flip(self, descending):
        """The kernels' ``flip`` argument: all ones (as an unsigned key) to reverse the order of
        the order keys, zero to keep it."""
        return self.unsigned_dtype.type(((1 << self.bits) - 1) if descending else 0)

    def order_key(self, keys):
        """numpy reference of the order key (the same map the kernels compute)."""
        keys = np.ascontiguousarray(keys, dtype=self.dtype)
        u = keys.view(self.unsigned_dtype).copy()
        ut = self.unsigned_dtype.type
        sign = ut(1 << (self.bits - 1))
        ones = ut((1 << self.bits) - 1)
        if self.kind == "int":
            u ^= sign
        elif self.kind == "float":
            inf_bits = ut(self.inf_bits)
            mag = u & ut(~int(sign) & int(ones))
            nan = mag > inf_bits
            u[u == sign] = 0  # -0.0 -> +0.0
            neg = (u & sign) != 0
            u[neg] ^= ones
            u[~neg] ^= sign
            u[nan] = ones
        return u


_CODECS: Dict[np.dtype, KeyCodec] = {}
for _dt, _kind in [
    (np.uint8, "uint"), (np.uint16, "uint"), (np.uint32, "uint"), (np.uint64, "uint"),
    (np.int8, "int"), (np.int16, "int"), (np.int32, "int"), (np.int64, "int"),
    (np.float16, "float"), (np.float32, "float"), (np.float64, "float"),
]:
    _d = np.dtype(_dt)
    _CODECS[_d] = KeyCodec(_d, _kind, _d.itemsize * 8,
                           _FLOAT_INF_BITS[_d.itemsize * 8] if _kind == "float" else 0)

KEY_DTYPES = tuple(_CODECS)

# bool keys are their bytes (uint8's order; not in KEY_DTYPES, which lists numpy's numeric types)
_CODECS[np.dtype(np.bool_)] = KeyCodec(np.dtype(np.bool_), "uint", 8)

# The names of every key dtype: numpy's numeric types, bool, and bfloat16 (with ml_dtypes). The one
# list that the command lines (parse_dtype) and the tuning cache's entries take.
KEY_DTYPE_NAMES = tuple(str(d) for d in KEY_DTYPES) + ("bool", "bfloat16")

_ml_dtypes: Optional[ModuleType]
try:  # bfloat16 keys where the optional ml_dtypes package provides the dtype (not in KEY_DTYPES,
    # which lists numpy's own types)
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None

_BFLOAT16_CODEC = None if _ml_dtypes is None else \
    KeyCodec(np.dtype(_ml_dtypes.bfloat16), "float", 16, _BFLOAT16_INF_BITS)
_BFLOAT16_NAMES = ("bfloat16", "bf16")
_BFLOAT16_MISSING = ("bfloat16 keys need the ml_dtypes package, which is not installed: "
                     "pip install 'clradix[bfloat16]' (or pip install ml_dtypes)")


def _bfloat16_codec():
    """The bfloat16 codec, or None without the ml_dtypes package (whose absence is read at each
    call: bfloat16 is not in the table of the other key types)."""
    return None if _ml_dtypes is None else _BFLOAT16_CODEC


def _names_bfloat16(dtype):
    """Whether ``dtype`` (a name, a type or a dtype) is called bfloat16."""
    name = dtype if isinstance(dtype, str) else (getattr(dtype, "name", None)
                                                 or getattr(dtype, "__name__", None))
    return isinstance(name, str) and name.strip() in _BFLOAT16_NAMES


def _supported():
    """The key types, as the refusals list them."""
    names = ", ".join(str(k) for k in KEY_DTYPES)
    if _ml_dtypes is None:
        return (f"{names} or bool (bfloat16 too with the ml_dtypes package: "
                f"pip install 'clradix[bfloat16]')")
    return f"{names}, bool or bfloat16"


# Values are moved as opaque bytes: one OpenCL type per width (the one value-width map: the
# drivers and the templates' parameters take it from here).
VALUE_CL_TYPES = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong", 16: "uint4"}
# ... and its inverse: the width of a value type a program was rendered with (None: no values)
VALUE_BYTES: Dict[Optional[str], int] = {None: 0, **{t: w for w, t in VALUE_CL_TYPES.items()}}


def value_type_of(value_bytes):
    """The OpenCL type of ``value_bytes``-byte values (None for 0: no values)."""
    return VALUE_CL_TYPES[value_bytes] if value_bytes else None


# Short names accepted wherever a dtype is typed on a command line.
SHORT_NAMES = {"u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "i8": "int8",
               "i16": "int16", "i32": "int32", "i64": "int64", "f16": "float16", "f32": "float32",
               "f64": "float64", "bf16": "bfloat16"}


def parse_dtype(name):
    """A key dtype from a name such as ``u32``, ``float32``, ``bool`` or ``bf16``: any key dtype
    (:data:`KEY_DTYPE_NAMES`, each command line's one list); TypeError naming the key dtypes,
    and for bfloat16 without ml_dtypes what to install."""
    name = str(name).strip()
    name = SHORT_NAMES.get(name, name)
    if name in _BFLOAT16_NAMES:
        codec = _bfloat16_codec()
        if codec is None:
            raise TypeError(f"unsupported key dtype {name!r}: {_BFLOAT16_MISSING}")
        return codec.dtype
    try:
        return key_codec(name).dtype
    except TypeError:
        raise TypeError(f"unsupported key dtype {name!r}: expected one of {_supported()}, "
                        f"or {', '.join(SHORT_NAMES)}") from None


def key_codec(dtype: DTypeLike) -> KeyCodec:
    """The codec of ``dtype``; TypeError naming the dtype when it is not a supported key type
    (and, for bfloat16 without the ml_dtypes package, what to install)."""
    try:
        d = np.dtype(dtype)
    except TypeError:
        if _names_bfloat16(dtype):   # a name numpy knows only once ml_dtypes is imported
            codec = _bfloat16_codec()
            if codec is not None:
                return codec
            raise TypeError(f"unsupported key dtype {dtype!r}: {_BFLOAT16_MISSING}") from None
        raise TypeError(f"unsupported key dtype {dtype!r}: expected one of "
                        f"{_supported()}") from None
    codec = _CODECS.get(d)
    if codec is not None:
        return codec
    if d.name == "bfloat16" and d.isnative:
        codec = _bfloat16_codec()
        if codec is not None and codec.dtype == d:
            return codec
        if codec is None:
            raise TypeError(f"unsupported key dtype {d}: {_BFLOAT16_MISSING}")
    raise TypeError(f"unsupported key dtype {d} (byte order {d.byteorder!r}): expected one of "
                    f"{_supported()}, in native byte order")


def value_cl_type(dtype):
    """The OpenCL type that carries a value of ``dtype`` as opaque bytes."""
    d = np.dtype(dtype)
    try:
        return VALUE_CL_TYPES[d.itemsize]
    except KeyError:
        raise TypeError(f"unsupported value dtype {d}: values must be 1, 2, 4, 8 or 16 bytes wide, "
                        f"this one is {d.itemsize} (records of any width: pass a pyopencl "
                        f"Array, or a list of them)") from None
