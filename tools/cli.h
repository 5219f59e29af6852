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
// The tiny decoder's directory ($WHARF_MODEL_DIR, <exe dir>/models/tiny_decoder, the source
// tree), or "" if none is found.
std::string find_model_dir(const char* exe_dir);
// The model demo (model_demo.cpp): 0 ok, 1 failed, 3 cannot run here (no GPU or model).
int run_model_demo(const std::string& dir);

}  // namespace wharf_cli
