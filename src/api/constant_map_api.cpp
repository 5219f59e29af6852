// SPDX-License-Identifier: Apache-2.0
// Constant-map functions of wharf.h: argument checks and conversions only.
#include "api/boundary.h"
#include "api/handles.h"
#include "core/text.h"

using namespace wharf;

extern "C" {

WHARF_API wharf_status* wharf_constant_map_create(wharf_constant_map** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(out, "wharf_constant_map_create: out is NULL");
    auto h = std::make_unique<wharf_constant_map>();
    h->map = std::make_unique<ConstantMap>();
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_constant_map_set(wharf_constant_map* map, const char* fqn,
                                               const wharf_tensor_view* view) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(map, "wharf_constant_map_set: map is NULL");
    WHARF_API_REQUIRE(fqn && *fqn, "wharf_constant_map_set: fqn is NULL or empty");
    std::string what = "constant " + quote_name(fqn);
    WHARF_API_REQUIRE(view, "wharf_constant_map_set: view of " + what + " is NULL");
    TensorMeta meta;
    void* data = nullptr;
    WHARF_RETURN_IF_ERROR(api::meta_from_view(*view, what, &meta, &data));
    return map->map->set(fqn, std::move(meta), data);
  });
}

WHARF_API wharf_status* wharf_constant_map_find(const wharf_constant_map* map, const char* fqn,
                                                wharf_tensor_view* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(map && fqn && out, "wharf_constant_map_find: map, fqn and out must not be NULL");
    const MapEntry* e = map->map->find(fqn);
    if (!e) return NotFound("constant " + quote_name(fqn) + " is not in the map");
    api::view_from_meta(e->meta, e->data, out, map->map->mapped() ? WHARF_VIEW_READ_ONLY : 0u);
    return Status::Ok();
  });
}

WHARF_API size_t wharf_constant_map_num_entries(const wharf_constant_map* map) { return map ? map->map->size() : 0; }

WHARF_API wharf_status* wharf_constant_map_get_entry(const wharf_constant_map* map, size_t i, const char** fqn,
                                                     wharf_tensor_view* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(map && out, "wharf_constant_map_get_entry: map and out must not be NULL");
    if (i >= map->map->size())
      return InvalidArgument("wharf_constant_map_get_entry: index " + std::to_string(i) + " out of range (map has " +
                             std::to_string(map->map->size()) + " entries)");
    const MapEntry& e = map->map->entry(i);
    if (fqn) *fqn = e.fqn.c_str();
    api::view_from_meta(e.meta, e.data, out, map->map->mapped() ? WHARF_VIEW_READ_ONLY : 0u);
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_constant_map_load_safetensors(const char* path, wharf_constant_map** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(path && out, "wharf_constant_map_load_safetensors: path and out must not be NULL");
    *out = nullptr;
    auto h = std::make_unique<wharf_constant_map>();
    WHARF_RETURN_IF_ERROR(ConstantMap::load_safetensors(path, &h->map));
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API size_t wharf_constant_map_num_metadata_entries(const wharf_constant_map* map) {
  return map ? map->map->metadata().size() : 0;
}

WHARF_API wharf_status* wharf_constant_map_get_metadata_entry(const wharf_constant_map* map, size_t i, const char** key,
                                                              const char** value) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(map, "wharf_constant_map_get_metadata_entry: map is NULL");
    const auto& md = map->map->metadata();
    if (i >= md.size())
      return InvalidArgument("wharf_constant_map_get_metadata_entry: index " + std::to_string(i) + " out of range (" +
                             std::to_string(md.size()) + " entries)");
    if (key) *key = md[i].first.c_str();
    if (value) *value = md[i].second.c_str();
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_constant_map_set_metadata(wharf_constant_map* map, const char* key, const char* value) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(map && key && value, "wharf_constant_map_set_metadata: map, key and value must not be NULL");
    return map->map->set_metadata(key, value);
  });
}

WHARF_API wharf_status* wharf_constant_map_save_safetensors(const wharf_constant_map* map, const char* path) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(map && path, "wharf_constant_map_save_safetensors: map and path must not be NULL");
    return map->map->save_safetensors(path);
  });
}

WHARF_API void wharf_constant_map_free(wharf_constant_map* map) { delete map; }

}  // extern "C"
