#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages Wharf's build and tests need. Idempotent: it asks apt only
# for what is missing, so a second run costs nothing. Run as root (or with sudo available).
#   install-deps.sh          everything: building, and every test suite (make test)
#   install-deps.sh build    only what building and installing the library needs (make install)
#   install-deps.sh dist     that and the Java jar's tools, for the release archive (make dist)
set -euo pipefail
pkgs=(cmake g++ make pkg-config libcli11-dev)
if [ "${1:-all}" = dist ]; then
  pkgs+=(swig default-jdk-headless)
elif [ "${1:-all}" != build ]; then
  pkgs+=(googletest libgtest-dev libgmock-dev libbenchmark-dev abigail-tools clang clang-format
         libclang-rt-14-dev golang-go swig junit4 default-jdk-headless python3)
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

# apt-get that waits for the package system's locks instead of failing: a freshly started
# cloud VM runs unattended-upgrades (apt-daily) for minutes and holds them. DPkg::Lock::Timeout
# makes apt wait for the dpkg lock (apt 1.9.11 and later); the lists lock of `apt-get update`
# is not covered by it on every apt version, so a "Could not get lock" failure is retried too,
# every WHARF_APT_RETRY_SECONDS (5), until WHARF_APT_LOCK_TIMEOUT seconds (600) have passed.
lock_timeout=${WHARF_APT_LOCK_TIMEOUT:-600}
retry_every=${WHARF_APT_RETRY_SECONDS:-5}
apt_get() {
  local start=$SECONDS err rc said=""
  err=$(mktemp)
  while :; do
    rc=0
    $SUDO apt-get -o DPkg::Lock::Timeout="$lock_timeout" "$@" 2>"$err" || rc=$?
    if [ "$rc" = 0 ] || ! grep -qE "Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock" "$err" ||
       [ $((SECONDS - start)) -ge "$lock_timeout" ]; then
      cat "$err" >&2
      rm -f "$err"
      return "$rc"
    fi
    if [ -z "$said" ]; then
      echo "install-deps: another process holds the apt lock (unattended-upgrades on a fresh VM?); waiting up to ${lock_timeout} s" >&2
      said=1
    fi
    sleep "$retry_every"
  done
}
apt_get update -qq
apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
