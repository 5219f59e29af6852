#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Caller-supplied names and paths reach messages only through quote_name()/quote_path()
# (src/core/text.h), which escape newlines, terminal escapes and bytes that are not UTF-8. This
# fails on the hand-made quoting that bypasses them in the C/C++/CUDA sources of src/ and
# tools/: a string literal that ends in a quote and is followed by `+` ("constant '" + fqn),
# one that starts with a quote after `+` (+ "' is"), std::string("'"), the quote character
# concatenated ('\''), the same with a double quote ("\"" + s), and '%s' / \"%s\" formats.
# Comment lines are not checked. A possessive ("'s") is not a quote.
#   scripts/check-quoting.sh     lists each offending line; exit 1 if any
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

PATTERN="'\"[[:space:]]*(\\+|\$)"                  # "constant '" + fqn   (also at a line's end)
PATTERN+="|\\+[[:space:]]*\"'([^s]|s[^ a-z]|\$)"   # + "' is ..."          (not + "'s previous")
PATTERN+="|std::string\\(\"'\"\\)"                 # std::string("'")
PATTERN+="|'\\\\''[[:space:]]*\\+|\\+[[:space:]]*'\\\\''"   # '\'' + name
PATTERN+="|\\\\\"\"[[:space:]]*\\+|\\+[[:space:]]*\"\\\\\"" # "\"" + name
PATTERN+="|'%s'|\\\\\"%s\\\\\""                    # printf("'%s'", name)

hits=$(find src tools \( -name '*.c' -o -name '*.cc' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \
         -o -name '*.h' -o -name '*.hpp' \) -type f -print0 | sort -z |
       xargs -0 grep -nE -- "$PATTERN" /dev/null |
       grep -vE '^[^:]+:[0-9]+:[[:space:]]*(//|/\*|\*)' || true)
if [ -n "$hits" ]; then
  echo "check-quoting: names quoted by hand; use quote_name()/quote_path() (src/core/text.h):" >&2
  printf '%s\n' "$hits" >&2
  exit 1
fi
echo "check-quoting: every quoted name in src/ and tools/ goes through quote_name/quote_path"
