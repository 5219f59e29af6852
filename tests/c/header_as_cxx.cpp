// SPDX-License-Identifier: Apache-2.0
// The public header must compile as C++ (-pedantic -Werror) as well as C99, with and without
// its experimental tier (included twice: the tier's guard is separate from the header's).
#include "wharf/wharf.h"
#define WHARF_EXPERIMENTAL 1
#include "wharf/wharf.h"

static_assert(sizeof(wharf_tensor_view) > 0, "header usable from C++");
static_assert(WHARF_VERSION_NUMBER == WHARF_VERSION_MAJOR * 10000 + WHARF_VERSION_MINOR * 100 + WHARF_VERSION_PATCH,
              "version number encoding");
static_assert(offsetof(wharf_tensor_view, struct_size) == 0 && offsetof(wharf_constant_decl, struct_size) == 0 &&
                  offsetof(wharf_state_decl, struct_size) == 0 && offsetof(wharf_replica_group_stats, struct_size) == 0,
              "every struct begins with struct_size");
[[maybe_unused]] static int64_t (*const find_constant)(const wharf_container*, const char*) = wharf_container_find_constant;
