#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README.md's C snippets are functions of the examples, verbatim: the first ```c block of the
# README must equal the lines of tests/abi/readme_example.c from "int main(void) {" to the
# first "}" in column 0 after it; with BLOCK and START, the README's BLOCK-th ```c block must
# equal the example's lines from the first one matching the regular expression START to the
# next "}" in column 0 (the model package example's generate()). The examples themselves are
# compiled (and readme_example run) by ctest.
# usage: check_readme_snippet.sh README.md EXAMPLE.c [BLOCK START]
set -euo pipefail
readme=$1; example=$2; block=${3:-1}; start=${4:-'^int main[(]void[)] [{]$'}
snippet=$(awk -v want="$block" '/^```c[[:space:]]*$/ {n++; if (n == want) {inside=1; next}} inside && /^```/ {inside=0} inside' "$readme")
body=$(awk -v start="$start" '$0 ~ start {inside=1} inside {print} inside && /^\}$/ {exit}' "$example")
if [ -z "$snippet" ]; then echo "no \`\`\`c block number $block in $readme"; exit 1; fi
if [ -z "$body" ]; then echo "no line matching '$start' in $example"; exit 1; fi
if [ "$snippet" != "$body" ]; then
  echo "README.md's C snippet $block differs from $example (README < > example):"
  diff <(printf '%s\n' "$snippet") <(printf '%s\n' "$body") || true
  exit 1
fi
echo "README.md's C snippet $block is in $(basename "$example") verbatim ($(printf '%s\n' "$body" | wc -l) lines)"
