// SPDX-License-Identifier: Apache-2.0
// Weight store functions of wharf.h: argument checks and conversions only.
#include <cstring>

#include "api/boundary.h"
#include "api/handles.h"

using namespace wharf;

extern "C" {

WHARF_API wharf_status* wharf_weight_store_create(wharf_runtime* runtime, wharf_weight_store** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(runtime && out, "wharf_weight_store_create: runtime and out must not be NULL");
    *out = nullptr;
    auto h = std::make_unique<wharf_weight_store>();
    h->store = std::make_shared<WeightStore>(runtime->rt);
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API void wharf_weight_store_free(wharf_weight_store* store) { delete store; }

WHARF_API wharf_status* wharf_weight_store_get_stats(const wharf_weight_store* store, wharf_weight_store_stats* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(store, "wharf_weight_store_get_stats: store is NULL");
    WeightStoreStats st = store->store->stats();
    wharf_weight_store_stats full;
    std::memset(&full, 0, sizeof(full));
    full.struct_size = sizeof(full);
    full.num_unique_constants = st.unique_constants;
    full.unique_bytes = st.unique_bytes;
    full.num_references = st.references;
    full.saved_bytes = st.saved_bytes;
    return api::write_output(full, out, "wharf_weight_store_stats");
  });
}

WHARF_API wharf_status* wharf_weight_store_update(wharf_weight_store* store, const wharf_constant_map* map,
                                                  const wharf_update_options* opts) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(store && map, "wharf_weight_store_update: store and map must not be NULL");
    UpdateOptions u;
    WHARF_RETURN_IF_ERROR(api::update_options_from_c(opts, &u));
    return store->store->update(*map->map, u);
  });
}

WHARF_API wharf_status* wharf_weight_store_swap(wharf_weight_store* store) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(store, "wharf_weight_store_swap: store is NULL");
    return store->store->swap();
  });
}

}  // extern "C"
