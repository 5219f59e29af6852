/* SPDX-License-Identifier: Apache-2.0 */
// What the model functions of the API layer need from the offloader functions: reading a
// caller's offloader options, and a handle for an offloader the library made.
#pragma once

#include <memory>

#include "api/boundary.h"
#include "offload/offloader.h"

struct wharf_offloader {
  std::shared_ptr<wharf::Offloader> o;
};

namespace wharf {
namespace api {

// Reads versioned offloader options (NULL: defaults) into a config; `fn` prefixes messages.
Status offloader_config_from_c(const wharf_offloader_options* opts, const char* fn, OffloaderConfig* out);

}  // namespace api
}  // namespace wharf
