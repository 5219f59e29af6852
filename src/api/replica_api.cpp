// SPDX-License-Identifier: Apache-2.0
// Replica group functions of wharf.h (experimental tier): argument checks and conversions only.
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "api/boundary.h"
#include "api/handles.h"
#include "api/replica_api.h"

using namespace wharf;

namespace {

const api::StructLayout& stats_layout() {
  using T = wharf_replica_group_stats;
  static const api::FieldInfo f[] = {WHARF_FIELD(T, struct_size),     WHARF_FIELD(T, num_replicas),
                                     WHARF_FIELD(T, nccl_version),    WHARF_FIELD(T, num_updates),
                                     WHARF_FIELD(T, num_swaps),       WHARF_FIELD(T, source_bytes),
                                     WHARF_FIELD(T, broadcast_bytes), WHARF_FIELD(T, num_broadcasts)};
  static const api::StructLayout l{"wharf_replica_group_stats", f, sizeof(f) / sizeof(f[0]), sizeof(T),
                                   sizeof(uint32_t)};
  return l;
}

}  // namespace

extern "C" {

WHARF_API wharf_status* wharf_replica_group_create(wharf_container* const* containers, size_t num_containers,
                                                   wharf_replica_group** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(out, "wharf_replica_group_create: out is NULL");
    *out = nullptr;
    WHARF_API_REQUIRE(num_containers > 0, "wharf_replica_group_create: no containers (num_containers is 0)");
    WHARF_API_REQUIRE(containers, "wharf_replica_group_create: containers is NULL with num_containers " +
                                      std::to_string(num_containers));
    std::vector<std::shared_ptr<Container>> replicas;
    for (size_t i = 0; i < num_containers; ++i) {
      WHARF_API_REQUIRE(containers[i], "wharf_replica_group_create: containers[" + std::to_string(i) + "] is NULL");
      replicas.push_back(containers[i]->c);
    }
    auto h = std::make_unique<wharf_replica_group>();
    WHARF_RETURN_IF_ERROR(ReplicaGroup::create(std::move(replicas), nullptr, &h->g));
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API void wharf_replica_group_free(wharf_replica_group* group) { delete group; }

WHARF_API size_t wharf_replica_group_num_replicas(const wharf_replica_group* group) {
  return group ? group->g->size() : 0;
}

WHARF_API wharf_status* wharf_replica_group_update(wharf_replica_group* group, const wharf_constant_map* map,
                                                   const wharf_update_options* opts) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(group && map, "wharf_replica_group_update: group and map must not be NULL");
    UpdateOptions u;
    WHARF_RETURN_IF_ERROR(api::update_options_from_c(opts, &u));
    return group->g->update(*map->map, u);
  });
}

WHARF_API wharf_status* wharf_replica_group_swap(wharf_replica_group* group) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(group, "wharf_replica_group_swap: group is NULL");
    return group->g->swap();
  });
}

WHARF_API wharf_status* wharf_replica_group_free_inactive(wharf_replica_group* group) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(group, "wharf_replica_group_free_inactive: group is NULL");
    return group->g->free_inactive();
  });
}

WHARF_API wharf_status* wharf_replica_group_get_stats(const wharf_replica_group* group,
                                                      wharf_replica_group_stats* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(group && out, "wharf_replica_group_get_stats: group and out must not be NULL");
    const uint32_t size = out->struct_size;
    if (size < sizeof(uint32_t))
      return InvalidArgument("wharf_replica_group_stats: output struct_size " + std::to_string(size) +
                             " is too small; set it to sizeof the struct");
    size_t n = 0;
    WHARF_RETURN_IF_ERROR(api::check_output_size(size, stats_layout(), "wharf_replica_group_stats", &n));
    const ReplicaGroupStats s = group->g->stats();
    wharf_replica_group_stats full;
    std::memset(&full, 0, sizeof full);
    full.num_replicas = s.num_replicas;
    full.nccl_version = s.nccl_version;
    full.num_updates = s.updates;
    full.num_swaps = s.swaps;
    full.source_bytes = s.source_bytes;
    full.broadcast_bytes = s.broadcast_bytes;
    full.num_broadcasts = s.broadcasts;
    std::memcpy(static_cast<void*>(out), &full, n);
    out->struct_size = size;
    return Status::Ok();
  });
}

}  // extern "C"
