/* SPDX-License-Identifier: Apache-2.0 */
// Switches read from the environment (docs/environment.md lists every one).
//
// One rule for all of them: unset or empty means "not set" (the built-in default applies); a
// value that is set but malformed or out of range is an error that names the variable, its
// value and what it accepts, never silently the default. A switch is read where the object it
// configures is made (a runtime's transfer engine, a device's memory pool), so a bad value
// surfaces as INVALID_ARGUMENT from the call that made it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace wharf {

// A decimal whole number in [min, max] ("0x10", "+1", "-1", " 1", "1k": malformed). `unit`
// ("KiB", "ms", ...) only words the error: "expected a whole number of KiB from 1 to 1024".
Status env_uint(const char* name, uint64_t min, uint64_t max, const char* unit, std::optional<uint64_t>* out);

// "0" (false) or "1" (true).
Status env_switch(const char* name, std::optional<bool>* out);

// One of `choices`, spelled exactly.
Status env_choice(const char* name, std::initializer_list<const char*> choices, std::optional<std::string>* out);

// Every WHARF_* variable the library, its tools, tests and build scripts read (docs/
// environment.md lists each; scripts/check-env-docs.sh keeps the three in step).
const std::vector<std::string>& known_env_variables();

// The WHARF_* variables set in this process's environment, by name, each with the value getenv
// reads (a name environ holds twice counts once, with its first value), sorted by name.
std::vector<std::pair<std::string, std::string>> wharf_env_variables();

// The WHARF_* variables set in this process's environment that none of the above reads (a
// typo such as WHARF_SERVING_WINDOW for WHARF_SERVING_WINDOW_MS would otherwise measure the
// default), each with the known name closest to it ("" when none is close).
struct UnknownEnvVariable {
  std::string name;
  std::string closest;
};
std::vector<UnknownEnvVariable> unknown_env_variables();

// Logs one warning per unknown variable, once per process (the first runtime's creation).
void warn_unknown_env_variables_once();

}  // namespace wharf
