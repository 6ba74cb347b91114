"""Host and kernels agree on every layout they share, for every program the planners can choose
(scripts/render-all.py's configurations: made-up NVIDIA, AMD, Intel, PoCL and oclgrind devices,
every key type, value width, index width and route): the local memory a policy budgets holds
each kernel's local arrays, and kernels that take the same temporaries take them in the same
order. The sizes the host computes (onesweep's rings and os_fused's head, top-k's digit width and
row state) are template parameters, which the templates check when they render."""

import importlib.util
import re
from pathlib import Path

import pytest

from clradix.core.declarations import parse_kernels
from clradix.core.keys import VALUE_BYTES
from clradix.core.render import render

ROOT = Path(__file__).resolve().parents[1]


def _planned():
    spec = importlib.util.spec_from_file_location("render_all", ROOT / "scripts" / "render-all.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.planned_programs())


@pytest.fixture(scope="module")
def planned():
    return _planned()


_TYPE_BYTES = {"uchar": 1, "char": 1, "ushort": 2, "short": 2, "uint": 4, "int": 4, "float": 4,
               "ulong": 8, "long": 8, "ulong2": 16, "uint4": 16}
_DEFINE = re.compile(r"(?m)^#define (\w+) (.+?)\s*$")
_LOCAL = re.compile(r"__local (\w+) (\w+)(?:\[([^\]]+)\])?;")
_KERNEL = re.compile(r"__kernel\b[^{]*?void (\w+)\(")
_TYPEDEF = re.compile(r"typedef struct \{")
_MEMBER = re.compile(r"(\w+) (\w+)(?:\[([^\]]+)\])?;")


def _count(text, defines):
    return 1 if not text else int(eval(re.sub(r"(\d)u\b", r"\1", text), {}, defines))


def _aggregate(body, defines, types, union=False):
    """(size, alignment) of a struct's or union's members, laid out as C does: each member at a
    multiple of its alignment, the whole a multiple of the largest."""
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    size, align, at = 0, 1, 0
    while True:
        nested = re.search(r"\b(union|struct) \{", body[at:])
        member = _MEMBER.search(body, at)
        if member is None and nested is None:
            break
        if nested is not None and (member is None or at + nested.start() < member.start()):
            open_ = at + nested.end()
            depth, end = 1, open_
            while depth:
                depth += {"{": 1, "}": -1}.get(body[end], 0)
                end += 1
            close = re.compile(r"\s*(\w+);").match(body, end)
            one = _aggregate(body[open_:end - 1], defines, types, nested.group(1) == "union")
            n, at = 1, close.end()
        else:
            one = types[defines.get(member.group(1), member.group(1))]
            n, at = _count(member.group(3), defines), member.end()
        m_size, m_align = one
        align = max(align, m_align)
        if union:
            size = max(size, m_size * n)
        else:
            size = -(-size // m_align) * m_align + m_size * n
    return -(-size // align) * align, align


def _kernel_locals(source):
    """{kernel name: bytes of the __local variables its body declares}, structs (typedef struct
    {...} Name;, with nested unions and structs) laid out as C lays them out."""
    defines = {}
    for name, value in _DEFINE.findall(source):
        try:
            defines[name] = int(eval(re.sub(r"(\d)u\b", r"\1", value), {}, dict(defines)))
        except Exception:
            defines.setdefault(name, value)
    types = {t: (n, n) for t, n in _TYPE_BYTES.items()}
    for m in _TYPEDEF.finditer(source):
        depth, end = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(source[end], 0)
            end += 1
        name = re.compile(r"\s*(\w+);").match(source, end).group(1)
        try:
            types[name] = _aggregate(source[m.end():end - 1], defines, types)
        except KeyError:
            pass   # a private struct of pointers or bools: never __local here
    sizes = {}
    starts = [(m.start(), m.group(1)) for m in _KERNEL.finditer(source)] + [(len(source), None)]
    for (at, name), (end, _) in zip(starts, starts[1:]):
        total = 0
        for type_, _, count in _LOCAL.findall(source[at:end]):
            t = defines.get(type_, type_)
            total += types[t][0] * _count(count, defines)
        sizes[name] = total
    return sizes


def test_struct_layout_is_cs():
    """The layout test's struct sizes are C's: members at multiples of their alignment, unions as
    large as their largest member, the whole a multiple of the largest alignment."""
    source = """#define N 3
typedef struct { uchar a; uint b; } A;
typedef struct { union { uchar c[N]; ushort d; } u; ulong e; A f[2]; uchar g; } B;
__kernel void k(void) { __local B s; __local A t[2]; }"""
    assert _kernel_locals(source) == {"k": 40 + 16}


def test_local_memory_budget_holds_every_kernel(planned):
    """Each sort driver's local_bytes and SegmentPolicy.local_bytes (what the planners fit to the
    device) are at least what each kernel of the policy's program declares."""
    checked = sorts = 0
    for config, driver, builds in planned:
        policy = getattr(driver, "policy", None)
        if policy is None or not hasattr(driver if config.startswith("sort/") else policy,
                                         "local_bytes"):
            continue
        for b in builds:
            if b.template not in ("onesweep.cl.mako", "onesweep_fused.cl.mako",
                                  "onesweep_small.cl.mako", "reduce_then_scan.cl.mako",
                                  "segmented.cl.mako"):
                continue
            kernels = _kernel_locals(render(b.template, **b.params))
            kb = driver.codec.itemsize
            if b.template == "segmented.cl.mako":
                budget = policy.local_bytes(kb, driver.index_bytes)
            else:
                budget = driver.local_bytes(policy, kb, driver.index_bytes,
                                            VALUE_BYTES[driver.value_t], driver.debug)
                sorts += 1
            used = {k: v for k, v in kernels.items() if k in b.kernels}
            if not used and b.template == "onesweep.cl.mako":
                # under a register cap os_histogram and os_bins are a program of their own,
                # and they declare no local memory
                continue
            assert used and max(used.values()) <= budget, (config, used, budget)
            checked += 1
    assert checked > 1000 and sorts > 1000


def test_kernels_take_shared_temporaries_in_one_order(planned):
    """Every top-k kernel that takes several of the call's temporaries (byte offsets into one
    allocation) takes them in the order of radix_select._temp_parts, as the driver passes them."""
    from clradix.drivers.radix_select import CANDIDATES
    order = ["state_off", "hist_off", "counters_off", *(f"{c}_off" for c in CANDIDATES),
             "sync_off"]
    checked = set()
    for config, driver, builds in planned:
        for b in builds:
            if b.template not in ("radix_select.cl.mako", "radix_select_threshold.cl.mako"):
                continue
            for kernel, params in parse_kernels(render(b.template, **b.params)).items():
                names = [p.name for p in params if p.name in order]
                assert names == sorted(names, key=order.index), (config, kernel, names)
                checked.add(kernel)
    assert {"topk_init", "topk_pass", "topk_fused", "topk_pass_t", "topk_sample"} <= checked
