// SPDX-License-Identifier: Apache-2.0
// Updates from safetensors files (wharf.h): load (memory-map and validate the file or every
// shard of an index), then the map update path, as one update. Argument checks and
// conversions only: the loading is ConstantMap::load_safetensors, the update
// Container::update / WeightStore::update, whose validate-first rule makes a bad file or a
// mismatching tensor change nothing.
#include "api/boundary.h"
#include "api/handles.h"
#include "core/text.h"

using namespace wharf;

namespace {

// Loads `path` into a map whose views point into the file's mapping(s) (its messages name the
// file). The map, and with it every mapping, is released when the caller's call returns; the
// update path reads pageable sources through the staging ring before it returns, so nothing
// refers to the mapping after.
Status load(const char* path, std::unique_ptr<ConstantMap>* out) { return ConstantMap::load_safetensors(path, out); }

// The update's own errors (a tensor the container does not declare, a shape that differs)
// say which file they came from.
Status from_file(Status st, const char* path) { return st.with_context("updating from " + quote_path(path)); }

}  // namespace

extern "C" {

WHARF_API wharf_status* wharf_container_update_from_file(wharf_container* container, const char* path,
                                                         const wharf_update_options* opts) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(container && path, "wharf_container_update_from_file: container and path must not be NULL");
    UpdateOptions u;
    WHARF_RETURN_IF_ERROR(api::update_options_from_c(opts, &u));  // before the file is opened
    std::unique_ptr<ConstantMap> map;
    WHARF_RETURN_IF_ERROR(load(path, &map));
    return from_file(container->c->update(*map, u), path);
  });
}

WHARF_API wharf_status* wharf_weight_store_update_from_file(wharf_weight_store* store, const char* path,
                                                            const wharf_update_options* opts) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(store && path, "wharf_weight_store_update_from_file: store and path must not be NULL");
    UpdateOptions u;
    WHARF_RETURN_IF_ERROR(api::update_options_from_c(opts, &u));
    std::unique_ptr<ConstantMap> map;
    WHARF_RETURN_IF_ERROR(load(path, &map));
    return from_file(store->store->update(*map, u), path);
  });
}

}  // extern "C"
