// Shared helpers of the wharf command-line program (which uses only the public API).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "wharf/wharf.h"

namespace wharf_cli {

// Prints "wharf: <what>: <CODE>: <message>" and frees the status; true if there was an error.
bool failed(wharf_status* st, const char* what);
std::string human_bytes(uint64_t bytes);
std::string shape_str(const wharf_tensor_view& v);
const char* backend_str(wharf_backend b);
int cmd_info(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_demo(int argc, char** argv);

}  // namespace wharf_cli
