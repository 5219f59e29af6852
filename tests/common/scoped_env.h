// SPDX-License-Identifier: Apache-2.0
// Environment variables set (or unset) for one scope and restored after it, for the tests of
// the WHARF_* switches (docs/environment.md). setenv is not safe beside threads reading the
// environment: use it only while the test has no other threads of its own running.
#ifndef WHARF_TESTS_COMMON_SCOPED_ENV_H_
#define WHARF_TESTS_COMMON_SCOPED_ENV_H_

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace wharf_test {

class ScopedEnv {
 public:
  // Each pair: a name and its value for the scope (nullptr: unset). A braced list converts.
  ScopedEnv(const std::vector<std::pair<const char*, const char*>>& vars) {
    for (const auto& v : vars) {
      Saved s{v.first, false, {}};
      if (const char* old = std::getenv(v.first)) s.had = true, s.value = old;
      saved_.push_back(s);
      if (v.second)
        ::setenv(v.first, v.second, 1);
      else
        ::unsetenv(v.first);
    }
  }
  ScopedEnv(const char* name, const char* value)
      : ScopedEnv(std::vector<std::pair<const char*, const char*>>{{name, value}}) {}
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had)
        ::setenv(it->name.c_str(), it->value.c_str(), 1);
      else
        ::unsetenv(it->name.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  struct Saved {
    std::string name;
    bool had;
    std::string value;
  };
  std::vector<Saved> saved_;
};

}  // namespace wharf_test

#endif  // WHARF_TESTS_COMMON_SCOPED_ENV_H_
