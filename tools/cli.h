/* SPDX-License-Identifier: Apache-2.0 */
// Shared helpers of the wharf command-line program (the public API, plus the library's JSON
// writer and text quoting compiled in: see CMakeLists.txt).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "wharf/wharf.h"

namespace wharf_cli {

// Prints "wharf: <what>: <CODE>: <message>" and frees the status; true if there was an error.
bool failed(wharf_status* st, const char* what);
// The same for an error about `file`: "wharf: <CODE>: <message>" when the message names the
// file already (the library's do, through quote_path), "wharf: <file>: <CODE>: <message>"
// otherwise, so the file is named once.
bool failed_on(wharf_status* st, const std::string& file);
std::string human_bytes(uint64_t bytes);
std::string shape_str(const wharf_tensor_view& v);
// A tensor's size in bytes (sub-byte dtypes packed).
uint64_t tensor_bytes(const wharf_tensor_view& v);
const char* backend_str(wharf_backend b);
// A name, path or string from a file or the command line as shown in tables and messages:
// as it is when it is plain (well-formed UTF-8 with no space, quote, backslash, control or
// invisible layout character), else quoted and escaped by wharf::quote_path (core/text.h),
// as the library's own messages quote names: layers.0.weight, 'my model.safetensors',
// 'a\u001b[31m'. Nothing that drives a terminal is ever printed raw.
std::string shown(const std::string& s);

int cmd_info(bool json);
int cmd_inspect(const std::vector<std::string>& files, bool json);

struct LoadOptions {
  std::string file;                  // the checkpoint: a safetensors file or a *.safetensors.index.json
  std::vector<std::string> updates;  // files applied after it, in order, each published by a swap
  std::string backend = "auto";      // auto, cuda or host
  bool json = false;                 // one JSON object on stdout instead of the summary lines
};
// `wharf load`: the checkpoint loaded into a container, then the updates; a summary line on
// stdout for each (or, with json, one object at the end), and a progress line on stderr
// while it runs when stderr is a terminal.
int cmd_load(const LoadOptions& o);

struct GenerateOptions {
  std::string package;          // the model package's directory
  std::vector<int64_t> prompt;  // token ids
  int max_new_tokens = 0;
  std::string update;    // a safetensors file (or index) applied to the package's store and swapped in, or ""
  int update_after = 0;  // ... after this many generated tokens
  std::string backend = "auto";
  bool json = false;
  bool graphs = false;  // the decode method replays a CUDA graph (wharf_model_enable_graphs)
};
// `wharf generate` (generate.cpp): greedy decoding with a package's prefill and decode
// methods in one session, optionally hot-updating its weights mid-conversation; the tokens on
// stdout (or one JSON object with timings and each token's generation).
int cmd_generate(const GenerateOptions& o);

struct DemoOptions {
  bool host = false;          // force the host backend (weights-only demo)
  bool weights_only = false;  // skip the model demo even on a GPU
  std::string model_dir;      // the compiled model's directory (default: found automatically)
  int readers = 2;            // serving threads of the weights-only demo
};
int cmd_demo(const DemoOptions& o);
// The tiny decoder's directory ($WHARF_MODEL_DIR, <exe dir>/models/tiny_decoder, the source
// tree), or "" if none is found.
std::string find_model_dir(const char* exe_dir);
// The model demo (model_demo.cpp): 0 ok, 1 failed, 3 the model cannot load here, 4 no usable
// CUDA device (the reason is printed).
int run_model_demo(const std::string& dir);

}  // namespace wharf_cli
