/* SPDX-License-Identifier: Apache-2.0 */
// ModelPackage: a Wharf model package (docs/model-package.md) loaded in one call: the
// manifest read and checked whole, the weight files' headers checked against it, then the
// weights loaded once into a new weight store and every method loaded as a Model over it,
// with the manifest's state declarations (shape, dtype, initial value).
//
// Order (the contract of wharf_model_package_load): everything that can be checked without
// the device is checked first (the manifest, every path, every weight file's and the state
// file's header against the manifest), so a bad package is refused before any device memory
// is touched; then the methods are loaded (the first one copies the weights; the others take
// them from the store), and their compiled tables are checked against the manifest. On any
// error nothing is left behind: every object is owned by the package under construction.
//
// Threads: a loaded package is immutable; every query is safe from many threads, and so are
// its models, store and sessions (their own rules).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/progress.h"
#include "core/status.h"
#include "graphs/bucket_plan.h"
#include "sessions/session.h"

namespace wharf {

class Model;
class Runtime;
class WeightStore;
class ConstantMap;

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

// Method `pm`'s symbolic dimensions for graph buckets (ModelOptions::dims): per input and
// output where each name appears; rows_independent (may be padded) for a batched method's
// session dimension (padded by default too) and for dims marked "pad": "repeat"; any other
// dimension gets a pad_refusal naming `field` (the method's manifest field, "methods[0]"):
// a package whose prefill does not mark T was exported before the prefill's masks followed
// cache_position and must be re-exported to pad it.
std::vector<SymbolicDim> package_method_dims(const PackageMethod& pm, const std::string& field);

// A dtype name of a manifest: PyTorch's ("float32", "bfloat16", "int64", ...) or safetensors'
// ("F32", "BF16", "I64", ...). False when neither.
bool package_dtype_from_name(std::string_view name, DType* out);

struct PackageOptions {
  std::string shim_path;           // as ModelOptions::shim_path
  uint64_t max_session_bytes = 0;  // every method's container's budget (0 = none)
  // > 0: one state arena of this many sessions for the manifest's states, joined by every
  // method's container (a package session takes one slot); 0 = per-session buffers. A batched
  // method (PackageMethod::session_capacity S) loads when this is S, is left out (listed, not
  // loaded) when this is 0, and any other value refuses the package.
  uint32_t session_capacity = 0;
  ProgressFn progress;  // of loading the weights (all methods as one total); empty = none
};

class ModelPackage {
 public:
  static Status load(std::shared_ptr<Runtime> runtime, const std::string& dir, const PackageOptions& opts,
                     std::shared_ptr<ModelPackage>* out);
  ~ModelPackage();
  ModelPackage(const ModelPackage&) = delete;
  ModelPackage& operator=(const ModelPackage&) = delete;

  const Manifest& manifest() const { return manifest_; }
  const std::string& dir() const { return dir_; }
  const std::shared_ptr<WeightStore>& store() const { return store_; }
  size_t num_methods() const { return methods_.size(); }
  // Method i's model (in the manifest's order); null for a batched method the package was
  // loaded without (PackageOptions.session_capacity 0).
  const std::shared_ptr<Model>& method(size_t i) const { return methods_[i]; }
  int find_method(std::string_view name) const;  // -1 if none
  // The model of method `name`: NOT_FOUND (listing the methods), or FAILED_PRECONDITION for
  // a batched method not loaded (naming the session_capacity it needs).
  Status get_method(std::string_view name, std::shared_ptr<Model>* out) const;
  // A session over every method's container: prefill and decode share its state.
  Status create_session(const SessionOptions& opts, std::shared_ptr<Session>* out) const;

 private:
  ModelPackage() = default;

  std::shared_ptr<Runtime> runtime_;
  std::string dir_;
  Manifest manifest_;
  std::shared_ptr<WeightStore> store_;
  std::vector<std::shared_ptr<Model>> methods_;
};

}  // namespace wharf
