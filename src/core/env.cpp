// SPDX-License-Identifier: Apache-2.0
#include "core/env.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/logging.h"
#include "core/text.h"

extern char** environ;

namespace wharf {
namespace {

// The value of `name`, or null when unset or empty.
const char* value_of(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

Status bad(const char* name, const char* value, const std::string& expected) {
  return InvalidArgument(std::string(name) + "=" + quote_name(value) + " in the environment: expected " + expected);
}

// Levenshtein distance, for "did you mean".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

const std::vector<std::string>& known_env_variables() {
  static const std::vector<std::string> names = {
      // The library (docs/environment.md).
      "WHARF_AOTI_SHIM", "WHARF_CUBLASLT_LIBRARY", "WHARF_NCCL_LIBRARY", "WHARF_LOG_LEVEL", "WHARF_TRANSFER_CHUNK_KIB",
      "WHARF_TRANSFER_BLOCK_KIB", "WHARF_TRANSFER_RAMP", "WHARF_TRANSFER_ALLOC_AHEAD_MIB", "WHARF_STAGING_COPY",
      "WHARF_TRANSFER_TRACE", "WHARF_SERVING_WINDOW_MS", "WHARF_SERVING_DMA_KIB", "WHARF_SERVING_INFLIGHT_KIB",
      "WHARF_SERVING_COPY_THREADS", "WHARF_SERVING_POLL_US", "WHARF_SERVING_POOL_KEEP_MIB", "WHARF_DEFER_RUN_FREES",
      "WHARF_GRAPHS_LEGACY_REPLAY", "WHARF_AOTI_GEMV", "WHARF_AOTI_GEMV_PDL", "WHARF_AOTI_GEMM_GRAPH_ALGOS",
      // Tests, examples, benchmarks and build scripts.
      "WHARF_TEST_DATA", "WHARF_MODEL_DIR", "WHARF_MODEL_PACKAGE", "WHARF_LIB_DIR", "WHARF_JAR_LIBWHARF",
      "WHARF_APT_LOCK_TIMEOUT", "WHARF_APT_RETRY_SECONDS", "WHARF_EXPORT_ARGS", "WHARF_GO_CHILD", "WHARF_GO_PLAIN",
      "WHARF_GO_RACE", "WHARF_CUPTI", "WHARF_OFFLOAD_MODEL_DIR", "WHARF_OFFLOAD_DYN_MODEL_DIR", "WHARF_RANK_TEST_RANK",
      "WHARF_RANK_TEST_ID", "WHARF_RANK_TEST_SCENARIO", "WHARF_BATCH_FUZZ_SEED", "WHARF_BATCH_FUZZ_STEPS",
      "WHARF_WITH_CUDA"};
  return names;
}

std::vector<std::pair<std::string, std::string>> wharf_env_variables() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "WHARF_", 6) != 0) continue;
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;  // not a variable getenv can read
    std::string name(*e, size_t(eq - *e));
    bool seen = false;
    for (const auto& kv : out) seen |= kv.first == name;
    if (!seen) out.emplace_back(std::move(name), std::string(eq + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<UnknownEnvVariable> unknown_env_variables() {
  const std::vector<std::string>& known = known_env_variables();
  // The library's own switches come first in the list; the tooling's names only when none of
  // those is close (a service's setting is more likely a misspelt switch than a test's name).
  const size_t library_names = size_t(std::find(known.begin(), known.end(), "WHARF_TEST_DATA") - known.begin());
  std::vector<UnknownEnvVariable> out;  // in name order, as wharf_env_variables() gives them
  for (const auto& [name, value] : wharf_env_variables()) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    // Close: the parts after "WHARF_" differ in at most a third of the name's characters (at
    // least one), and one known name is closest; a tie suggests nothing rather than guess.
    const std::string tail = name.substr(6);
    auto closest_in = [&](size_t from, size_t to) -> std::string {
      size_t best = std::max<size_t>(1, tail.size() / 3) + 1, count = 0;
      std::string pick;
      for (size_t k = from; k < to; ++k) {
        const size_t d = edit_distance(tail, known[k].substr(6));
        if (d < best)
          best = d, count = 1, pick = known[k];
        else if (d == best && !pick.empty())
          ++count;
      }
      return count == 1 ? pick : std::string();
    };
    UnknownEnvVariable u{name, closest_in(0, library_names)};
    if (u.closest.empty()) u.closest = closest_in(library_names, known.size());
    out.push_back(std::move(u));
  }
  return out;
}

void warn_unknown_env_variables_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const UnknownEnvVariable& u : unknown_env_variables())
      WHARF_LOG(kWarn, quote_name(u.name) + " is set in the environment but Wharf reads no such variable" +
                           (u.closest.empty() ? std::string() : "; did you mean " + u.closest + "?") +
                           " (docs/environment.md lists them)");
  });
}

Status env_uint(const char* name, uint64_t min, uint64_t max, const char* unit, std::optional<uint64_t>* out) {
  out->reset();
  const char* v = value_of(name);
  if (!v) return Status::Ok();
  const std::string expected = std::string("a whole number") + (unit && *unit ? std::string(" of ") + unit : "") +
                               " from " + std::to_string(min) + " to " + std::to_string(max);
  uint64_t x = 0;
  for (const char* p = v; *p; ++p) {
    if (*p < '0' || *p > '9') return bad(name, v, expected);
    const uint64_t digit = uint64_t(*p - '0');
    if (x > (UINT64_MAX - digit) / 10) return bad(name, v, expected);
    x = x * 10 + digit;
  }
  if (x < min || x > max) return bad(name, v, expected);
  *out = x;
  return Status::Ok();
}

Status env_switch(const char* name, std::optional<bool>* out) {
  out->reset();
  const char* v = value_of(name);
  if (!v) return Status::Ok();
  if (std::strcmp(v, "0") != 0 && std::strcmp(v, "1") != 0) return bad(name, v, "0 (off) or 1 (on)");
  *out = v[0] == '1';
  return Status::Ok();
}

Status env_choice(const char* name, std::initializer_list<const char*> choices, std::optional<std::string>* out) {
  out->reset();
  const char* v = value_of(name);
  if (!v) return Status::Ok();
  std::string expected;
  for (const char* c : choices) {
    if (std::strcmp(v, c) == 0) {
      *out = std::string(v);
      return Status::Ok();
    }
    expected += (expected.empty() ? "" : " or ") + std::string(c);
  }
  return bad(name, v, expected);
}

}  // namespace wharf
