#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README.md's C snippet is main() of tests/abi/readme_example.c, verbatim: the first ```c
# block of the README must equal the file's lines from "int main(void) {" to the first "}"
# in column 0 after it. The example itself is compiled and run by the test readme_example.
# usage: check_readme_snippet.sh README.md tests/abi/readme_example.c
set -euo pipefail
readme=$1; example=$2
snippet=$(awk '/^```c[[:space:]]*$/ && !done {inside=1; next} inside && /^```/ {inside=0; done=1} inside' "$readme")
body=$(awk '/^int main\(void\) \{$/ {inside=1} inside {print} inside && /^\}$/ {exit}' "$example")
if [ -z "$snippet" ]; then echo "no \`\`\`c block in $readme"; exit 1; fi
if [ -z "$body" ]; then echo "no 'int main(void) {' in $example"; exit 1; fi
if [ "$snippet" != "$body" ]; then
  echo "README.md's C snippet differs from main() of $example (README < > example):"
  diff <(printf '%s\n' "$snippet") <(printf '%s\n' "$body") || true
  exit 1
fi
echo "README.md's C snippet is main() of $(basename "$example") ($(printf '%s\n' "$body" | wc -l) lines)"
