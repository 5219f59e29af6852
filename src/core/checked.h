/* SPDX-License-Identifier: Apache-2.0 */
// Checked arithmetic for sizes computed from untrusted shapes (files, caller views).
#pragma once

#include <cstdint>
#include <limits>

namespace wharf {

// a * b into *out; false on overflow.
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

}  // namespace wharf
