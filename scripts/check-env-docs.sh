#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Keeps the environment variables in step (docs/environment.md's promise that it lists every
# one): each WHARF_* name the library or its tools read (getenv, env_uint/env_switch/env_choice,
# the shim's mode_from_env) is in known_env_variables() (src/core/env.cpp, which warns about
# any other WHARF_* name set), and each name there is documented in docs/environment.md, which
# names no other.
#   scripts/check-env-docs.sh     lists each mismatch; exit 1 if any
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

read_names=$(grep -rhoE '(getenv|env_uint|env_switch|env_choice|mode_from_env)\("WHARF_[A-Z0-9_]+"' src tools |
  grep -oE 'WHARF_[A-Z0-9_]+' | sort -u)
known=$(sed -n '/^const std::vector<std::string>& known_env_variables() {/,/^}/p' src/core/env.cpp |
  grep -oE '"WHARF_[A-Z0-9_]+"' | tr -d '"' | sort -u)
# The header's constants (WHARF_INVALID_ARGUMENT, ...) are named there too; they are not variables.
constants=$(grep -oE '^\s*WHARF_[A-Z0-9_]+\s*(=|,)' include/wharf/wharf.h | grep -oE 'WHARF_[A-Z0-9_]+' | sort -u)
documented=$(grep -oE '`WHARF_[A-Z0-9_]+`' docs/environment.md | tr -d '`' | sort -u | comm -23 - <(echo "$constants"))

fail=0
if [ -z "$read_names" ] || [ -z "$known" ] || [ -z "$documented" ]; then
  echo "check-env-docs: found no names (read: $(echo $read_names | wc -w), known: $(echo $known | wc -w), documented: $(echo $documented | wc -w))" >&2
  exit 1
fi
for n in $(comm -23 <(echo "$read_names") <(echo "$known")); do
  echo "check-env-docs: $n is read in src/ or tools/ but not in known_env_variables() (src/core/env.cpp)" >&2; fail=1
done
for n in $(comm -23 <(echo "$known") <(echo "$documented")); do
  echo "check-env-docs: $n is in known_env_variables() but not documented in docs/environment.md" >&2; fail=1
done
for n in $(comm -13 <(echo "$known") <(echo "$documented")); do
  echo "check-env-docs: docs/environment.md documents $n, which known_env_variables() does not list" >&2; fail=1
done
[ "$fail" -eq 0 ] || exit 1
echo "check-env-docs: $(echo "$known" | wc -l) variables, $(echo "$read_names" | wc -l) read in src/ and tools/, all documented"
