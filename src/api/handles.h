/* SPDX-License-Identifier: Apache-2.0 */
// The opaque handle types of wharf.h and their conversions to internal types.
#pragma once

#include <memory>

#include "api/boundary.h"
#include "constants/constant_map.h"
#include "constants/container.h"
#include "constants/weight_store.h"
#include "runs/run.h"
#include "sessions/session.h"
#include "core/tensor.h"
#include "device/runtime.h"
#include "wharf/wharf.h"

struct wharf_runtime {
  std::shared_ptr<wharf::Runtime> rt;
};

struct wharf_constant_map {
  std::unique_ptr<wharf::ConstantMap> map;
};

struct wharf_container {
  std::shared_ptr<wharf::Container> c;
};

struct wharf_weight_store {
  std::shared_ptr<wharf::WeightStore> store;
};

struct wharf_session {
  std::shared_ptr<wharf::Session> s;
};

// A run handle owns its run, except the one a fold callback receives (owned by the update).
struct wharf_run {
  std::unique_ptr<wharf::Run> owned;
  wharf::Run* run = nullptr;
};

namespace wharf {
namespace api {

// Takes ownership of a status returned by a caller's callback and converts it.
Status from_c(wharf_status* st);

// Reads a caller's tensor view (struct_size rules, enums, rank) and copies its metadata (not
// data); `*data` is the view's data + byte_offset.
Status meta_from_view(const wharf_tensor_view& v, const std::string& what, TensorMeta* out, void** data);
// Fills a caller's output view whose shape/strides point into `meta` (which must outlive the
// view); `flags` are its WHARF_VIEW_* flags.
void view_from_meta(const TensorMeta& meta, void* data, wharf_tensor_view* out, uint32_t flags = 0);
// Fills a caller's output view of a run's tensor, with contiguous row-major strides
// (WHARF_VIEW_READ_ONLY when b.read_only).
void view_from_bound(const BoundTensor& b, wharf_tensor_view* out);
// Row-major strides of `shape`, interned for the process's life (nullptr for a scalar).
const int64_t* contiguous_strides(const std::vector<int64_t>& shape);
// Reads versioned update options (NULL: defaults) and checks them; a fold callback becomes
// a function that hands the C callback a run over the generation being written.
Status update_options_from_c(const wharf_update_options* opts, UpdateOptions* out);
// A C progress callback as a ProgressFn (empty for NULL): nonzero from the callback cancels.
ProgressFn progress_from_c(wharf_progress_fn fn, void* user);

}  // namespace api
}  // namespace wharf
