"""The kernel templates' structure: each device primitive is defined once (common.mako, or the
one template that uses it), and every function has internal linkage (common.mako says why)."""

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[1] / "cl_templates"
# a function definition at the start of a line: qualifiers, a return type, its name
FUNCTION = re.compile(r"(?m)^((?:static|inline|STEP)\b[\w\s\*]*?)\b(\w+)\s*\(")


def _functions():
    """{function name: the template files that define it} of every template."""
    found = {}
    for path in sorted(TEMPLATES.glob("*.mako")):
        for m in FUNCTION.finditer(path.read_text()):
            found.setdefault(m.group(2), set()).add(path.name)
    return found


def test_no_function_is_defined_in_two_templates():
    twice = {name: sorted(files) for name, files in _functions().items() if len(files) > 1}
    assert not twice, f"defined in more than one template: {twice}"


def test_common_primitives_are_found():
    """(the check above sees the shared primitives, and the ones each template uses)"""
    found = _functions()
    for name in ("wg_any", "warp_scan_incl", "status_load", "arrive", "load_acquire",
                 "release_store", "global_fence", "sg_shuffle"):
        assert found.get(name) == {"common.mako"}, (name, found.get(name))
    # the top-k programs' shared steps are a template of their own
    for name in ("next_state", "claim_slots", "finished_last"):
        assert found.get(name) == {"radix_select_steps.mako"}, (name, found.get(name))


def test_bitonic_sort_is_common():
    """The bitonic sort (a def whose instances name themselves, unseen by the check above) is
    written once: its compare-exchange pairs appear in common.mako only."""
    pairing = "2 * t - (t & (stride - 1))"
    where = sorted(p.name for p in TEMPLATES.glob("*.mako") if pairing in p.read_text())
    assert where == ["common.mako"], where


def test_no_function_is_plain_inline():
    """A plain (C99) inline function the compiler leaves uninlined is a call to an external
    definition no one provides: every function is static (STEP is static inline)."""
    plain = [f"{path.name}:{n + 1}" for path in sorted(TEMPLATES.glob("*.mako"))
             for n, line in enumerate(path.read_text().splitlines())
             if line.startswith("inline ")]
    assert not plain, f"plain inline functions: {plain}"
