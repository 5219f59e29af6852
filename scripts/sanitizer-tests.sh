#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The checks `make test` runs after ctest and the binding tests, each in its own build folder
# (CPU only, no benchmarks, only the targets it needs), with the time of each step:
#
#   tsa   clang's thread-safety analysis over the library objects (build-tsa): a lock mistake
#         against the annotations of src/core/sync.h fails the build.
#   asan  the whole unit-test binary under AddressSanitizer + UndefinedBehaviorSanitizer
#         (build-asan); any report, leaks included, fails.
#   tsan  the whole unit-test binary under ThreadSanitizer (build-tsan); any report fails.
#         TSAN_FILTER (a gtest filter) runs a part.
#   fuzz  the safetensors reader and index parser under libFuzzer + ASan + UBSan for
#         FUZZ_SECONDS (default 60) seconds (tests/fuzz/run.sh, into FUZZ_BUILD, default
#         build/fuzz, where `make fuzz` keeps its corpus too); a crash, a sanitizer report or a
#         violated property fails. About 10 s of build on top of the run.
#
# Both sanitizer builds compile the WHARF_DCHECK invariants in (CMakeLists.txt does that for
# every WHARF_SANITIZE build). Usage: scripts/sanitizer-tests.sh [all|tsa|asan|tsan|fuzz]...
# The folders can be renamed with TSA_BUILD, ASAN_BUILD, TSAN_BUILD and FUZZ_BUILD.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
JOBS=${JOBS:-2}
# The whole unit suite (session 10; it was the concurrency-heavy suites only: ~115 s instead of
# ~25 s on 2 cores). A narrower TSAN_FILTER runs a part, e.g. '*Concurrency*:*Store*'.
TSAN_FILTER=${TSAN_FILTER:-'*'}
TSA_BUILD=${TSA_BUILD:-build-tsa}
ASAN_BUILD=${ASAN_BUILD:-build-asan}
TSAN_BUILD=${TSAN_BUILD:-build-tsan}
FUZZ_BUILD=${FUZZ_BUILD:-build/fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
COMMON=(-DWHARF_WITH_CUDA=OFF -DWHARF_BUILD_BENCH=OFF)

# Runs "$@" as one named step and prints how long it took; a failure names the step.
step() {
  local name=$1
  shift
  local t0=$SECONDS
  echo "== sanitizer-tests: $name"
  if ! "$@"; then
    echo "== sanitizer-tests: $name FAILED after $((SECONDS - t0)) s" >&2
    exit 1
  fi
  echo "== sanitizer-tests: $name ok, $((SECONDS - t0)) s"
}

# Configure output is noise here; errors still reach stderr.
quiet() { "$@" >/dev/null; }

# Runs a test binary with its whole output in LOG and prints what --gtest_brief would (the
# failures and the totals). On failure it prints last a digest of the first sanitizer report:
# the test that was running, the report's first lines and its summary, so that the tail of a
# CI log (often all that is kept) says what went wrong and where.
# Usage: logged LOG [NAME=VALUE...] BINARY ARGS... (run through env(1)).
logged() {
  local log=$1
  shift
  local rc=0
  env "$@" >"$log" 2>&1 || rc=$?
  { grep -E '^\[  (FAILED|PASSED)  \]|^\[==========\] [0-9]+ tests.* ran' "$log" || true; } | tail -n 40
  [ "$rc" -eq 0 ] && return 0
  echo "== test binary exited $rc; whole output: $log"
  awk '
    # The report is printed with its first stack last (the tail of a log is what is kept):
    # the other stacks (freed by, allocated by, thread created by) first, 6 frames each.
    /^\[ RUN      \]/ { running = substr($0, 14) }
    /^\[==========\] [0-9]+ tests? from .* ran/ { running = "" }  # after the last test: at exit (a leak report)
    !state && /ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:|invariant broken/ {
      state = 1; head = $0; test = running
      next
    }
    state && /^(SUMMARY: |Shadow bytes)/ { if (/^SUMMARY: /) summary = $0; state = 3 }
    state == 1 || state == 2 {
      if (/^ *$/ || / in (testing::|void testing::|__libc_|_start)/) next
      if (/^ *#[0-9]+ /) {
        if (state == 1 && ++f1 <= 10) head = head "\n" $0
        if (state == 2 && ++f2 <= 6) rest = rest "\n" $0
        next
      }
      if (state == 1 && f1 == 0) { head = head "\n" $0; next }
      state = 2; f2 = 0; rest = rest "\n" $0
    }
    !state && !failed && /: Failure$/ { failed = 1; fail = "== first failure, in " (running == "" ? "?" : running) ":" }
    !state && failed && m < 12 { fail = fail "\n" $0; m++ }
    END {
      if (state) {
        if (rest != "") print substr(rest, 2)
        print "== first sanitizer report, " (test == "" ? "outside any test (before the first, or at exit: leaks)" : "while " test " ran") ":"
        print head
        if (summary != "") print summary
      } else if (failed) print fail
      else print "== no sanitizer report and no failed assertion in the output (a crash?)"
    }
  ' "$log"
  return "$rc"
}

need_clang() {
  command -v clang++ >/dev/null || bash scripts/install-deps.sh
  command -v clang++ >/dev/null || { echo "sanitizer-tests: clang++ not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
}

tsa() {
  need_clang
  # The compiler is fixed at the first configure: a folder made by another compiler starts over.
  if [ -f "$TSA_BUILD/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' "$TSA_BUILD/CMakeCache.txt"; then
    rm -rf "$TSA_BUILD"
  fi
  step "tsa configure" quiet env CC=clang CXX=clang++ cmake -S . -B "$TSA_BUILD" "${COMMON[@]}" -DWHARF_BUILD_TESTS=OFF \
    -DWHARF_THREAD_SAFETY_CHECK=ON -DCMAKE_BUILD_TYPE=Debug
  step "tsa build (clang -Werror=thread-safety, library objects)" cmake --build "$TSA_BUILD" -j"$JOBS" --target wharf_tsa
}

asan() {
  step "asan configure" quiet cmake -S . -B "$ASAN_BUILD" "${COMMON[@]}" -DWHARF_SANITIZE=address
  step "asan build" cmake --build "$ASAN_BUILD" -j"$JOBS" --target wharf_unit_tests
  # halt_on_error: UBSan reports abort (also -fno-sanitize-recover); leaks fail at exit.
  step "asan+ubsan unit tests" logged "$ASAN_BUILD/unit-tests.log" \
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" "$ASAN_BUILD/tests/wharf_unit_tests"
}

tsan() {
  step "tsan configure" quiet cmake -S . -B "$TSAN_BUILD" "${COMMON[@]}" -DWHARF_SANITIZE=thread
  step "tsan build" cmake --build "$TSAN_BUILD" -j"$JOBS" --target wharf_unit_tests
  # A report makes the binary exit non-zero (exitcode=66) even when every test passed.
  step "tsan tests ($TSAN_FILTER)" logged "$TSAN_BUILD/unit-tests.log" \
    TSAN_OPTIONS="halt_on_error=0:exitcode=66:second_deadlock_stack=1" \
    "$TSAN_BUILD/tests/wharf_unit_tests" --gtest_filter="$TSAN_FILTER"
}

fuzz() {
  need_clang
  step "fuzz (safetensors reader, index, ZIP and package manifest, ${FUZZ_SECONDS} s)" env FUZZ_OUT="$FUZZ_BUILD" JOBS="$JOBS" \
    bash tests/fuzz/run.sh "$FUZZ_SECONDS"
}

[ $# -eq 0 ] && set -- all
t_all=$SECONDS
for what in "$@"; do
  case $what in
    all) tsa; asan; tsan; fuzz ;;
    tsa|asan|tsan|fuzz) $what ;;
    *) echo "usage: $0 [all|tsa|asan|tsan|fuzz]..." >&2; exit 2 ;;
  esac
done
echo "== sanitizer-tests: all passed, $((SECONDS - t_all)) s"
