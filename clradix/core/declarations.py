"""Kernel declarations read from rendered OpenCL C: each ``__kernel void name(...)`` parameter
list, so that a kernel's argument names and types are written once (in its ``.mako``).

A parameter is a pointer (it takes a Buffer) or a scalar whose OpenCL C type maps to a numpy
dtype; names the program ``#define``s or ``typedef``s (KEY_T, INDEX_T, ...) are resolved first.

Why not pyopencl's own readers: ``pyopencl.tools.parse_arg_list`` knows only the dtypes registered
with it (not ``half`` unless registered, not a pointer to a program's struct such as top-k's
``__global row_state*``) and none of a program's ``#define``s; ``Kernel.get_arg_info`` needs
programs built with ``-cl-kernel-arg-info`` (a build option some drivers ignore) and answers only
after the build, while a launch sequence's arguments are checked when it is made.
"""

import re
from typing import Dict, NamedTuple, Optional, Tuple

import numpy as np

# OpenCL C scalar types -> numpy dtypes
CL_SCALARS = {
    "char": np.int8, "uchar": np.uint8, "unsigned char": np.uint8,
    "short": np.int16, "ushort": np.uint16, "unsigned short": np.uint16,
    "int": np.int32, "uint": np.uint32, "unsigned int": np.uint32, "unsigned": np.uint32,
    "long": np.int64, "ulong": np.uint64, "unsigned long": np.uint64,
    "half": np.float16, "float": np.float32, "double": np.float64,
}
_QUALIFIERS = {"const", "restrict", "volatile", "__global", "global", "__local", "local",
               "__constant", "constant", "__private", "private", "__read_only", "__write_only"}
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]+?)[ \t]*$", re.M)
_TYPEDEF = re.compile(r"\btypedef\s+([\w\s]+?)\s+(\w+)\s*;")
# __kernel, its attributes (which hold parentheses, never a ';' or '{'), void, name, parameters
_KERNEL = re.compile(r"__kernel\b[^;{]*?\bvoid\s+(\w+)\s*\(([^)]*)\)")


class Param(NamedTuple):
    """One kernel parameter: its name, its OpenCL C type as written after resolving names, and
    the numpy dtype of a scalar (None: a pointer, which takes a Buffer)."""

    name: str
    cl_type: str
    dtype: Optional[np.dtype]


def parse_kernels(source) -> Dict[str, Tuple[Param, ...]]:
    """{kernel name: its parameters, in order} of every kernel in the OpenCL C ``source``."""
    text = _COMMENTS.sub(" ", source)
    aliases = {name: value for name, value in _DEFINE.findall(text)}
    aliases.update({name: " ".join(value.split()) for value, name in _TYPEDEF.findall(text)})
    kernels: Dict[str, Tuple[Param, ...]] = {}
    for name, params in _KERNEL.findall(text):
        params = params.strip()
        if not params or params == "void":
            kernels[name] = ()
            continue
        kernels[name] = tuple(_param(name, p, aliases) for p in params.split(","))
    return kernels


def _resolve(word, aliases):
    for _ in range(8):   # a #define of a #define
        if word not in aliases:
            break
        word = aliases[word]
    return word


def _param(kernel, text, aliases):
    pointer = "*" in text
    words = re.findall(r"\w+", text.replace("*", " "))
    if len(words) < 2:
        raise ValueError(f"kernel {kernel}: cannot read the parameter {text.strip()!r}")
    name = words[-1]
    type_words = [" ".join(_resolve(w, aliases).split()) for w in words[:-1]]
    type_words = [w for t in type_words for w in t.split() if w not in _QUALIFIERS]
    cl_type = " ".join(type_words)
    if pointer:
        return Param(name, cl_type + "*", None)
    dtype = CL_SCALARS.get(cl_type)
    if dtype is None:
        raise ValueError(f"kernel {kernel}: parameter {name} has the type {cl_type!r}, which has "
                         f"no numpy scalar type here")
    return Param(name, cl_type, np.dtype(dtype))
