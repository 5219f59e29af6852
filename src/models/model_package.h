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
#include "models/manifest.h"
#include "core/progress.h"
#include "core/status.h"
#include "graphs/bucket_plan.h"
#include "sessions/session.h"

namespace wharf {

class Model;
class Runtime;
class WeightStore;
class ConstantMap;

// Method `pm`'s symbolic dimensions for graph buckets (ModelOptions::dims): per input and
// output where each name appears; rows_independent (may be padded) for a batched method's
// session dimension (padded by default too) and for dims marked "pad": "repeat"; any other
// dimension gets a pad_refusal naming `field` (the method's manifest field, "methods[0]"):
// a package whose prefill does not mark T was exported before the prefill's masks followed
// cache_position and must be re-exported to pad it.
std::vector<SymbolicDim> package_method_dims(const PackageMethod& pm, const std::string& field);

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
