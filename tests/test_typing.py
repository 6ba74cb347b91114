"""mypy on the package and on the python examples of README.md and docs/usage.md
(scripts/check-readme-examples.py: each block a module of its own), with the configuration in
setup.cfg; and a broken example fails that check, wrong types that the annotations of sort,
argsort and topk reveal included (numpy in, numpy out; pyopencl Arrays in, pyopencl Arrays
out)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "scripts" / "check-readme-examples.py"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One mypy cache for the module's runs (the first one analyses numpy and pyopencl)."""
    return tmp_path_factory.mktemp("mypy-cache")


def _run(*args):
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_package(cache_dir):
    proc = _run("-m", "mypy", "--cache-dir", str(cache_dir), "clradix")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("page", ["README.md", "docs/usage.md"])
def test_readme_examples(cache_dir, page):
    """Each example block of the page, checked as a module of its own: it stands alone (a block
    that needs names of an earlier one fails)."""
    proc = _run(str(CHECK), str(ROOT / page), "--cache-dir", str(cache_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr


GOOD = '''
```python
import numpy as np, pyopencl as cl, pyopencl.array as cla
import clradix

queue = cl.CommandQueue(cl.create_some_context())
keys = cla.to_device(queue, np.arange(10, dtype=np.float32))
on_device: cla.Array = clradix.sort(keys, kind="stable")
on_host: np.ndarray = clradix.argsort(np.arange(10), stable=False)
values, indices = clradix.topk(keys, 3)
host_values: np.ndarray = values.get()
```
'''

# each line a mistake mypy must report (at that line of the Markdown file)
BROKEN = {
    "clradix.sort(np.arange(3), kidn='stable')": "Unexpected keyword argument",
    "clradix.sort(np.arange(3)).get()": "has no attribute \"get\"",
    "n: int = clradix.argsort(np.arange(3))": "Incompatible types in assignment",
    "v: np.ndarray = clradix.topk(keys, 2)[0]": "Incompatible types in assignment",
    "clradix.no_such_function(keys)": "has no attribute \"no_such_function\"",
}


def test_a_broken_example_fails(cache_dir, tmp_path):
    good = tmp_path / "GOOD.md"
    good.write_text(GOOD)
    proc = _run(str(CHECK), str(good), "--cache-dir", str(cache_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    broken = tmp_path / "BROKEN.md"
    lines = GOOD.rstrip().splitlines()[:-1] + list(BROKEN) + ["```", ""]
    broken.write_text("\n".join(lines))
    proc = _run(str(CHECK), str(broken), "--cache-dir", str(cache_dir))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    for line, message in BROKEN.items():
        at = lines.index(line) + 1
        assert any(f"BROKEN.md:{at}: error:" in o and message in o for o in out.splitlines()), \
            (line, message, out)
