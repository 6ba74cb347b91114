#!/usr/bin/env bash
# Makes sure this machine has an OpenCL device that can build kernels; prints what it uses.
#
# pip's pocl-binary-distribution (the `pocl` extra) works on most x86-64 CPUs, but its LLVM 14
# does not recognise the newest processors (it reports the CPU as "generic" and then refuses to
# compile). On Debian and Ubuntu this script then installs the distribution's PoCL
# (pocl-opencl-icd), which the OpenCL loader finds next to pip's.
set -euo pipefail
py=${PYTHON:-python}
if "$py" -m clradix info >/dev/null 2>&1; then
  "$py" -m clradix info | tail -n 1
  exit 0
fi
echo "no OpenCL device here can build kernels; trying the distribution's PoCL" >&2
if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq pocl-opencl-icd >/dev/null
fi
"$py" -m clradix info
