// SPDX-License-Identifier: Apache-2.0
// Opens a compiled model's library: a `.so` as is, or the one inside a PyTorch `.pt2`
// package (torch._inductor.aoti_compile_and_package), read from the package's ZIP entry
// `<archive>/data/aotinductor/<model>/<hash>.so` into an anonymous memory file (memfd) and
// opened from there: no temporary file on disk, nothing left behind. The package's weights,
// if any, are not read: Wharf's model loader takes weights from the caller's map.
#pragma once

#include <string>

#include "core/status.h"

namespace wharf {

// dlopen()s the model at `path` with `flags`. A package that cannot be read or holds no
// single model library is an error status (naming the package and the entry); a library
// the dynamic loader refuses leaves *handle null and sets *dl_error (the caller words it).
Status open_model_library(const std::string& path, int flags, void** handle, std::string* dl_error);

// Whether `path` names a `.pt2` package (by its suffix).
bool is_model_package(const std::string& path);

}  // namespace wharf
