#!/usr/bin/env bash
# Installs every build and test dependency from Debian's packages (idempotent).
set -euo pipefail
pkgs=(build-essential pkg-config m4 libucx-dev ucx-utils libopenmpi-dev openmpi-bin
      libnuma-dev libmemkind-dev libgtest-dev libgmock-dev uthash-dev libxxhash-dev procps util-linux)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# GCC's plugin headers, for cables-cc -fopenmp's flush plugin (openmp/): the
# package named after the installed GCC's major version
gcc_major=$(gcc -dumpversion | cut -d. -f1)
if ! dpkg-query -W -f='${Status}' "gcc-$gcc_major-plugin-dev" 2>/dev/null | grep -q "install ok installed"; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing gcc-$gcc_major-plugin-dev"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "gcc-$gcc_major-plugin-dev" >/dev/null
fi
