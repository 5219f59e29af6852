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

#include "core/status.h"

namespace wharf {

// A decimal whole number in [min, max] ("0x10", "+1", "-1", " 1", "1k": malformed). `unit`
// ("KiB", "ms", ...) only words the error: "expected a whole number of KiB from 1 to 1024".
Status env_uint(const char* name, uint64_t min, uint64_t max, const char* unit, std::optional<uint64_t>* out);

// "0" (false) or "1" (true).
Status env_switch(const char* name, std::optional<bool>* out);

// One of `choices`, spelled exactly.
Status env_choice(const char* name, std::initializer_list<const char*> choices, std::optional<std::string>* out);

}  // namespace wharf
