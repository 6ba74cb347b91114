"""Type-check the README's examples: every ```python block of README.md (or of the Markdown file
given) becomes a module of its own in a temporary folder, and mypy checks them against the
checkout's clradix with the project's configuration (setup.cfg). The exit status is mypy's, so a
broken example (a misspelt name, a wrong argument, an import that does not exist) fails. Each
block keeps its lines' numbers, so mypy's messages point into the Markdown file.

    python scripts/check-readme-examples.py [README.md] [mypy options ...]
"""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(markdown):
    """The code of each ```python block of ``markdown``, in order, after as many empty lines as
    precede it in ``markdown`` (its line numbers are the file's)."""
    return ["\n" * markdown.count("\n", 0, m.start(1)) + m.group(1)
            for m in _BLOCK.finditer(markdown)]


def main(argv):
    readme = Path(argv[0]) if argv and not argv[0].startswith("-") else ROOT / "README.md"
    mypy_args = argv[1:] if argv and not argv[0].startswith("-") else argv
    blocks = python_blocks(readme.read_text(encoding="utf-8"))
    if not blocks:
        print(f"{readme}: no ```python block", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="readme-examples-") as tmp:
        files = []
        for i, code in enumerate(blocks, 1):
            path = Path(tmp) / f"readme_example_{i}.py"
            path.write_text(code, encoding="utf-8")
            files.append(str(path))
        # the checkout's clradix first, whatever is installed
        env = dict(os.environ, MYPYPATH=os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("MYPYPATH")) if p))
        # the package's own findings are `mypy clradix`'s to report: here only the examples'
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "setup.cfg"),
               "--follow-imports", "silent", *mypy_args, *files]
        proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    for path in files:   # the Markdown file's name, not the temporary one
        out = out.replace(path, str(readme))
    print(out, end="")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
