#!/usr/bin/env bash
# Prints a folder to use as OCL_ICD_VENDORS that registers the oclgrind simulator (Debian's
# `oclgrind` package, which installs no .icd file of its own) next to the system's drivers.
# Installs the package with apt-get when it is missing.
#   export OCL_ICD_VENDORS=$(bash scripts/oclgrind-icd.sh)
set -euo pipefail
lib=/usr/lib/oclgrind/liboclgrind-rt-icd.so
if [ ! -f "$lib" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "no $lib and no apt-get: install oclgrind (https://github.com/jrprice/Oclgrind)" >&2
    exit 1
  fi
  echo "installing Debian's oclgrind" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq oclgrind >/dev/null
fi
dir=${1:-${TMPDIR:-/tmp}/clradix-oclgrind-icd}
mkdir -p "$dir"
echo "$lib" > "$dir/oclgrind.icd"
cp /etc/OpenCL/vendors/*.icd "$dir/" 2>/dev/null || true
echo "$dir"
