// SPDX-License-Identifier: Apache-2.0
// Updates from safetensors files (wharf.h): open (read and validate the header of the file or
// of every shard of an index, with pread), then the map update path, as one update. Argument
// checks and conversions only: the opening is ConstantMap::open_safetensors, the update
// Container::update / WeightStore::update, whose validate-first rule makes a bad file or a
// mismatching tensor change nothing. The tensors are read (pread) by the transfer engine's
// staging threads into the pinned ring: no mapping, so a file that shrinks meanwhile is an
// IO_ERROR of the copy, and a failed copy stages nothing.
#include "api/boundary.h"
#include "api/handles.h"
#include "core/text.h"

using namespace wharf;

namespace {

// Opens `path` into a map of file ranges (its messages name the file). The map, and with it
// every open file, is released when the caller's call returns; the copies have read what they
// need by then.
Status load(const char* path, std::unique_ptr<ConstantMap>* out) { return ConstantMap::open_safetensors(path, out); }

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
