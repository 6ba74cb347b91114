"""Sphinx configuration: the API reference from the docstrings (autodoc) and the
Markdown pages (MyST). Build, failing on any warning (a broken reference among them):

    python -m sphinx -W --keep-going -b html docs docs/_build/html

No intersphinx: CI has no network, so types of other libraries (pyopencl, numpy, dask, ...) are
listed in ``nitpick_ignore_regex`` instead of being linked.
"""

import os
import sys

# the checkout's clradix, whatever is installed
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

import clradix  # noqa: E402

project = "clradix"
author = "clradix contributors"
release = clradix.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# Markdown: GitHub-style anchors for headings down to ###, so that links such as
# guarantees.md#segments resolve (and are checked) as on GitHub.
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"show-inheritance": False}
# No napoleon: the docstrings are prose without Google or numpy sections, and napoleon would read
# "name: text" first lines of attributes as types.

# Every reference must resolve; references into other libraries cannot (no intersphinx here).
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(pyopencl|cl|cla|numpy|np|numpy\.typing|npt|dask|da|dd|distributed|pandas|pd"
               r"|ml_dtypes|mako|platformdirs)(\..*)?"),
    (r"py:.*", r"(Event|Array|Buffer|CommandQueue|Context|Device|MemoryPool|dtype|ndarray"
               r"|DTypeLike|ArrayLike|NDArray)"),
    # typing and the standard library, as the annotations spell them
    (r"py:.*", r"(typing|collections\.abc|threading|logging|concurrent\.futures)\..*"),
    (r"py:class", r"(optional|callable|sequence|array-like|array_like|default .*)"),
    # the type variable of the generic result tuples (numpy arrays or pyopencl Arrays)
    (r"py:.*", r"(clradix\.dispatch\.(api|unique|selection)\.)?_A"),
]

html_theme = "alabaster"
html_static_path = []
html_title = f"clradix {release}"
