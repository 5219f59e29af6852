#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/install-deps.sh waits for the apt lock instead of failing (a fresh cloud VM runs
# unattended-upgrades), with apt-get, dpkg-query and sudo replaced by stubs on PATH: every
# package reads as missing; apt-get answers "Could not get lock" twice, then succeeds.
# usage: install_deps_test.sh SOURCE_DIR
set -euo pipefail
S=$1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "install_deps_test: $*" >&2; exit 1; }
mkdir "$T/bin"
cat >"$T/bin/dpkg-query" <<'STUB'
#!/bin/sh
exit 1
STUB
cat >"$T/bin/sudo" <<'STUB'
#!/bin/sh
exec "$@"
STUB
# apt-get: logs its arguments; fails as a held lock does while $T/locked-N files remain.
cat >"$T/bin/apt-get" <<STUB
#!/bin/sh
echo "\$*" >>"$T/calls"
for f in "$T"/locked-*; do
  [ -e "\$f" ] || break
  rm "\$f"
  echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
  exit 100
done
[ -e "$T/broken" ] && { echo "E: Unable to locate package nonsense" >&2; exit 100; }
exit 0
STUB
chmod +x "$T/bin/"*
export PATH="$T/bin:$PATH" WHARF_APT_RETRY_SECONDS=0

touch "$T/locked-1" "$T/locked-2"
bash "$S/scripts/install-deps.sh" build >"$T/out" 2>&1 || fail "failed while the lock was held: $(cat "$T/out")"
grep -q "waiting up to 600 s" "$T/out" || fail "no word about waiting: $(cat "$T/out")"
[ "$(grep -c '^-o DPkg::Lock::Timeout=600 update -qq$' "$T/calls")" = 3 ] || fail "update not retried: $(cat "$T/calls")"
grep -q '^-o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends cmake g++ make pkg-config libcli11-dev$' \
  "$T/calls" || fail "install call: $(cat "$T/calls")"

# Another failure is not waited for.
rm -f "$T/calls"; touch "$T/broken"
if bash "$S/scripts/install-deps.sh" build >"$T/out" 2>&1; then fail "an apt failure was ignored"; fi
grep -q "Unable to locate package" "$T/out" || fail "apt's error not shown: $(cat "$T/out")"
[ "$(wc -l <"$T/calls")" = 1 ] || fail "a failure that is not a lock was retried: $(cat "$T/calls")"
echo "install_deps_test: ok"
