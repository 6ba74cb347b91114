#!/usr/bin/env bash
# Downloads into build/wheels (ignored by git) the wheels `python -m benchmarks dask` needs on a
# machine that reaches no package registry: dask and distributed with their dependencies, for
# CPython 3.12 on x86-64 Linux (numpy, pyopencl and the rest of clradix are there already; the
# array benchmarks need neither pandas nor pyarrow). There, from the checkout's root:
#
#     python -m pip install --no-index --find-links build/wheels dask distributed
#
# Usage: bash scripts/fetch-dask-wheels.sh [DEST] [PYTHON_VERSION]   (build/wheels, 3.12)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-build/wheels}
pyver=${2:-3.12}
mkdir -p "$dest"
python3 -m pip download -q --only-binary=:all: --python-version "$pyver" --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 \
  -d "$dest" dask distributed
ls "$dest"
du -sh "$dest"
