"""The package's layers import one way only: dispatch -> planning -> drivers -> policies -> core.

Every module under clradix/ is parsed (ast) and each import of a clradix module is checked: a
module may import from its own layer or a lower one, never a higher one. The top-level modules
(the package, its command line, autotune, clradix.dask) sit above every layer."""

import ast
from pathlib import Path

import clradix

LAYERS = ["core", "policies", "drivers", "planning", "dispatch"]
ROOT = Path(clradix.__file__).resolve().parent
TOP = len(LAYERS)


def _layer(module):
    """The layer index of a dotted module name under clradix (TOP: above every layer)."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    if module in ("clradix._version", "clradix.cl_templates"):
        return -1   # leaves: anything may import them
    return TOP


def _module_name(path):
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path):
    """Dotted names of the clradix modules ``path`` imports (absolute and relative)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("clradix"):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("clradix"):
                continue
            if node.module is None or target == "clradix":
                # "from . import x" / "from .. import core": each name may be a module
                for alias in node.names:
                    yield node.lineno, f"{target}.{alias.name}"
            else:
                yield node.lineno, target


def test_modules_import_only_their_own_or_lower_layers():
    wrong = []
    modules = sorted(ROOT.rglob("*.py"))
    assert any("dispatch" in str(p) for p in modules)
    for path in modules:
        name = _module_name(path)
        here = _layer(name)
        for line, target in _imports(path):
            if _layer(target) > here:
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line}: {name} ({_describe(here)}) "
                             f"imports {target} ({_describe(_layer(target))})")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_the_layers_exist():
    for layer in LAYERS:
        assert (ROOT / layer / "__init__.py").is_file()


def _describe(layer):
    return LAYERS[layer] if 0 <= layer < TOP else "top level" if layer == TOP else "leaf"


def test_no_module_imports_another_modules_private_names():
    """A module's ``_names`` are its own: what another module needs is public (the numpy-like
    functions share clradix.dispatch.call's names, not api.py's helpers)."""
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (
                    node.level or (node.module or "").startswith("clradix")):
                private = [a.name for a in node.names
                           if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    wrong.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {private}")
    assert not wrong, "private names imported from another module:\n" + "\n".join(wrong)
