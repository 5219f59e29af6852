// SPDX-License-Identifier: Apache-2.0
#include "core/env.h"

#include <cstdlib>
#include <cstring>

#include "core/text.h"

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

}  // namespace

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
