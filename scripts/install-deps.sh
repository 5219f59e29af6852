#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages Wharf's build and tests need. Idempotent: it asks apt only
# for what is missing, so a second run costs nothing. Run as root (or with sudo available).
#   install-deps.sh          everything: building, and every test suite (make test)
#   install-deps.sh build    only what building and installing the library needs (make install)
set -euo pipefail
pkgs=(cmake g++ make pkg-config libcli11-dev)
if [ "${1:-all}" != build ]; then
  pkgs+=(googletest libgtest-dev libgmock-dev libbenchmark-dev abigail-tools clang libclang-rt-14-dev
         golang-go swig junit4 default-jdk-headless python3)
  # Rust: a rustup toolchain (~/.cargo) when present, Debian's cargo otherwise.
  if ! command -v cargo >/dev/null && [ ! -x "$HOME/.cargo/bin/cargo" ]; then pkgs+=(cargo); fi
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
