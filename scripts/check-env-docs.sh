#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Keeps the environment variables in step (docs/environment.md's promise that it lists every
# one): each WHARF_* name read anywhere in the repository's code (the library, its tools,
# tests, benchmarks, bindings and scripts) is in known_env_variables() (src/core/env.cpp, which
# warns about any other WHARF_* name set), and each name there is documented in
# docs/environment.md, which names no other.
#   scripts/check-env-docs.sh     lists each mismatch; exit 1 if any
set -euo pipefail
export LC_ALL=C  # one collation for sort and comm
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

# Every name read: C/C++ (getenv, core/env.h's readers, the tests' data_dir/env_u64 helpers),
# Go (os.Getenv/LookupEnv, a const naming it), Rust (env::var/var_os), Java (System.getenv),
# Python (os.environ[...]/.get), shell ($NAME, ${NAME}), make (NAME ?=) and CMake ($ENV{NAME}).
code_dirs=(src tools tests bench go rust java)
read_names=$( {
  grep -rhoE --exclude-dir=results \
    '(getenv|env_uint|env_switch|env_choice|mode_from_env|data_dir|env_u64|Getenv|LookupEnv|var_os|env::var)\("WHARF_[A-Z0-9_]+"' \
    --include='*.c' --include='*.cpp' --include='*.h' --include='*.cu' --include='*.go' --include='*.rs' \
    --include='*.java' "${code_dirs[@]}" || true
  grep -rhoE 'const [A-Za-z]+ = "WHARF_[A-Z0-9_]+"' --include='*.go' go || true
  grep -rhoE --exclude-dir=results 'environ(\.get)?[[(]"WHARF_[A-Z0-9_]+"' --include='*.py' "${code_dirs[@]}" || true
  grep -rhoE --exclude-dir=results '\$\{?WHARF_[A-Z0-9_]+' --include='*.sh' scripts "${code_dirs[@]}" || true
  grep -hoE '\$ENV\{WHARF_[A-Z0-9_]+\}|^WHARF_[A-Z0-9_]+ \?=' Makefile CMakeLists.txt tests/CMakeLists.txt bench/CMakeLists.txt || true
} | grep -oE 'WHARF_[A-Z0-9_]+' | sort -u)
# What the library's own reads are, for the count below.
lib_names=$({ grep -rhoE '(getenv|env_uint|env_switch|env_choice|mode_from_env)\("WHARF_[A-Z0-9_]+"' src || true; } |
  grep -oE 'WHARF_[A-Z0-9_]+' | sort -u)
known=$({ sed -n '/^const std::vector<std::string>& known_env_variables() {/,/^}/p' src/core/env.cpp |
  grep -oE '"WHARF_[A-Z0-9_]+"' || true; } | tr -d '"' | sort -u)
# The header's constants (WHARF_INVALID_ARGUMENT, ...) are named there too; they are not variables.
constants=$({ grep -oE '^\s*WHARF_[A-Z0-9_]+\s*(=|,)' include/wharf/wharf.h || true; } | grep -oE 'WHARF_[A-Z0-9_]+' | sort -u)
documented=$({ grep -oE '`WHARF_[A-Z0-9_]+`' docs/environment.md || true; } | tr -d '`' | sort -u |
  comm -23 - <(echo "$constants"))

fail=0
if [ -z "$read_names" ] || [ -z "$known" ] || [ -z "$documented" ]; then
  echo "check-env-docs: found no names (read: $(echo $read_names | wc -w), known: $(echo $known | wc -w), documented: $(echo $documented | wc -w))" >&2
  exit 1
fi
for n in $(comm -23 <(echo "$read_names") <(echo "$known")); do
  echo "check-env-docs: $n is read (${code_dirs[*]} or scripts) but not in known_env_variables() (src/core/env.cpp)" >&2; fail=1
done
for n in $(comm -23 <(echo "$known") <(echo "$documented")); do
  echo "check-env-docs: $n is in known_env_variables() but not documented in docs/environment.md" >&2; fail=1
done
for n in $(comm -13 <(echo "$known") <(echo "$documented")); do
  echo "check-env-docs: docs/environment.md documents $n, which known_env_variables() does not list" >&2; fail=1
done
[ "$fail" -eq 0 ] || exit 1
echo "check-env-docs: $(echo "$known" | wc -l) variables known and documented, $(echo "$read_names" | wc -l) read in the code ($(echo "$lib_names" | wc -l) by the library)"
