#!/usr/bin/env bash
# Prints a folder to use as OCL_ICD_VENDORS that registers Intel's CPU OpenCL runtime (pip's
# intel-opencl-rt, whose own .icd file holds a placeholder path) next to the system's drivers.
#   pip install '.[intel]' && export OCL_ICD_VENDORS=$(bash scripts/intel-opencl-icd.sh)
set -euo pipefail
py=${PYTHON:-python}
prefix=$("$py" -c "import sys; print(sys.prefix)")
lib="$prefix/lib/libintelocl.so"
if [ ! -f "$lib" ]; then
  echo "no $lib: install the runtime first (pip install '.[intel]')" >&2
  exit 1
fi
dir=${1:-$prefix/etc/clradix-icd}
mkdir -p "$dir"
echo "$lib" > "$dir/intel-cpu.icd"
cp /etc/OpenCL/vendors/*.icd "$dir/" 2>/dev/null || true
echo "$dir"
