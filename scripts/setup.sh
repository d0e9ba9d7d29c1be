#!/usr/bin/env bash
# Installs every build and test dependency from Debian's packages (idempotent).
set -euo pipefail
# install_missing PKG...: those of them not installed yet
install_missing() {
  local missing=() p sudo=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
# (gdb: the multinode harness shows the stacks of a run that hung)
install_missing build-essential pkg-config m4 libucx-dev ucx-utils libopenmpi-dev openmpi-bin \
                libnuma-dev libmemkind-dev libgtest-dev libgmock-dev uthash-dev libxxhash-dev procps util-linux \
                iproute2 gdb
# GCC's plugin headers, for cables-cc -fopenmp's flush plugin (openmp/): the
# package named after the GCC just installed
install_missing "gcc-$(gcc -dumpversion | cut -d. -f1)-plugin-dev"
