/* SPDX-License-Identifier: Apache-2.0 */
// A Wharf model package's manifest (docs/model-package.md): its structure and the parser that
// reads and checks manifest.json's text. Pure (no file, no device): the loader
// (models/model_package.h) reads the file and checks the rest, and the fuzzer
// (tests/fuzz) feeds it hostile text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace wharf {

// The format version this loader reads (manifest "format_version"; newer ones are refused).
constexpr uint64_t kModelPackageFormatVersion = 1;

// A method's input or output as the manifest declares it.
struct PackageTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;           // -1 where the dimension is symbolic
  std::vector<std::string> dim_names;   // the symbolic dimension's name; "" where fixed
  std::vector<int64_t> dim_min;         // fixed: the size; symbolic: the manifest's min (0 if none)
  std::vector<int64_t> dim_max;         // fixed: the size; symbolic: the manifest's max (-1 if none)
  std::vector<const char*> dim_name_c;  // dim_names as C strings, null where fixed (for the C API)
};

struct PackageMethod {
  std::string name;
  std::string file;  // as the manifest gives it (relative to the package)
  std::vector<PackageTensor> inputs, outputs;
  // > 0: a batched method compiled over a state arena of this many sessions (its states
  // [S, ...shape], an input "slots" int64 [N]); loaded only with PackageOptions.session_capacity
  // equal to it. 0: a per-session method.
  uint32_t session_capacity = 0;
  int slots_input = -1;  // a batched method's input "slots"
  // The dims marked `"pad": "repeat"`: a run may be padded along them by repeating its last
  // row (graph buckets; the exporter marks its prefill's T, whose rows' masks are at their own
  // cache_position, and decode_batch's N).
  std::vector<std::string> repeat_dims;
};

struct PackageParameter {
  std::string fqn;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
};

struct PackageState {
  std::string fqn;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::string initial_tensor;  // the tensor of the state file holding its initial value; "" = zeros
};

struct Manifest {
  uint64_t format_version = 0;
  std::string name;
  uint64_t max_seq_len = 0;  // 0 when the manifest gives none
  std::vector<std::string> weight_files;
  std::vector<PackageParameter> parameters;
  // weights.aliases: another name of a listed parameter (a tied weight's checkpoint name,
  // e.g. model.embed_tokens.weight -> lm_head.weight); updates may use either name.
  std::vector<std::pair<std::string, std::string>> aliases;
  std::vector<PackageState> states;
  std::string state_file;  // "" = none
  std::vector<PackageMethod> methods;
};

// Parses and checks manifest text (no file is read): every required field, its type, dtypes,
// shapes, symbolic dimensions, unique names, paths that stay inside the package (by name;
// the files themselves are checked by the loader). `where` starts every message
// ("model package '/m': manifest.json"). INVALID_ARGUMENT naming the field, or UNSUPPORTED for
// a format_version newer than kModelPackageFormatVersion.
Status parse_manifest(std::string_view text, const std::string& where, Manifest* out);

// A dtype name of a manifest: PyTorch's ("float32", "bfloat16", "int64", ...) or safetensors'
// ("F32", "BF16", "I64", ...). False when neither.
bool package_dtype_from_name(std::string_view name, DType* out);

// "methods[2]": the field of item i of a manifest array, as messages name it.
inline std::string manifest_item(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

}  // namespace wharf
