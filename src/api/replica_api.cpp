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

// The in-process calls (update, swap) on a rank of a group spanning processes.
Status require_local(const wharf_replica_group* group, const char* fn) {
  if (group->g) return Status::Ok();
  return FailedPrecondition(std::string(fn) +
                            ": the group spans processes (made by wharf_replica_group_create_rank, "
                            "rank " +
                            std::to_string(group->rg->rank()) +
                            "); its update and swap are one call, wharf_replica_group_update_ranks");
}

wharf_replica_group_rank_options default_rank_options() {
  wharf_replica_group_rank_options o;
  std::memset(&o, 0, sizeof o);
  return o;
}

const api::StructLayout& rank_options_layout() {
  using T = wharf_replica_group_rank_options;
  static const api::FieldInfo f[] = {WHARF_FIELD(T, struct_size), WHARF_FIELD(T, timeout_ms)};
  static const api::StructLayout l{"wharf_replica_group_rank_options", f, sizeof(f) / sizeof(f[0]), sizeof(T),
                                   2 * sizeof(uint32_t)};
  return l;
}

Status read_rank_options(const wharf_replica_group_rank_options* in, wharf_replica_group_rank_options* out) {
  *out = default_rank_options();
  if (!in) return Status::Ok();
  const api::StructLayout& L = rank_options_layout();
  const uint32_t size = api::stated_size(in);
  if (size < L.min_size)
    return InvalidArgument("wharf_replica_group_rank_options: struct_size " + std::to_string(size) +
                           " is too small; call wharf_replica_group_rank_options_init first");
  WHARF_RETURN_IF_ERROR(api::check_input_size(in, size, L, "wharf_replica_group_rank_options"));
  std::memcpy(static_cast<void*>(out), in, size < sizeof *out ? size : sizeof *out);
  out->struct_size = sizeof *out;
  return Status::Ok();
}

}  // namespace

extern "C" {

WHARF_API wharf_status* wharf_replica_group_get_unique_id(wharf_runtime* runtime, wharf_replica_group_id* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(runtime && out, "wharf_replica_group_get_unique_id: runtime and out must not be NULL");
    static_assert(sizeof(out->internal) == kRankIdBytes, "the C id and RankId have one size");
    RankId id;
    if (runtime->rt->backend() == Backend::kHost)
      WHARF_RETURN_IF_ERROR(make_host_rank_id(&id));
    else
      WHARF_RETURN_IF_ERROR(make_nccl_rank_id(&id).with_context("wharf_replica_group_get_unique_id"));
    std::memcpy(out->internal, id.bytes, sizeof id.bytes);
    return Status::Ok();
  });
}

WHARF_API void wharf_replica_group_rank_options_init_sized(wharf_replica_group_rank_options* opts, size_t struct_size) {
  api::init_sized(opts, struct_size, default_rank_options());
}

WHARF_API wharf_status* wharf_replica_group_create_rank(wharf_container* container, const wharf_replica_group_id* id,
                                                        uint32_t rank, uint32_t size,
                                                        const wharf_replica_group_rank_options* opts,
                                                        wharf_replica_group** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(out, "wharf_replica_group_create_rank: out is NULL");
    *out = nullptr;
    WHARF_API_REQUIRE(container && id, "wharf_replica_group_create_rank: container and id must not be NULL");
    wharf_replica_group_rank_options o;
    WHARF_RETURN_IF_ERROR(read_rank_options(opts, &o));
    RankId rid;
    std::memcpy(rid.bytes, id->internal, sizeof rid.bytes);
    const std::chrono::milliseconds timeout(o.timeout_ms ? o.timeout_ms : 30000);
    auto h = std::make_unique<wharf_replica_group>();
    WHARF_RETURN_IF_ERROR(RankGroup::create(container->c, rid, rank, size, timeout, &h->rg));
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_replica_group_update_ranks(wharf_replica_group* group, const wharf_constant_map* map,
                                                         const wharf_update_options* opts) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(group, "wharf_replica_group_update_ranks: group is NULL");
    if (!group->rg)
      return FailedPrecondition(
          "wharf_replica_group_update_ranks: the group is one process's (made by wharf_replica_group_create); use "
          "wharf_replica_group_update and wharf_replica_group_swap");
    // An argument error still takes part in the update (as a rank that failed), so the other
    // ranks fail at once naming this one instead of waiting for it until their timeout.
    Status refused;
    if (map && group->rg->rank() != 0)
      refused = InvalidArgument("wharf_replica_group_update_ranks: rank " + std::to_string(group->rg->rank()) +
                                " passed a map; only rank 0 (the source) passes one, the others pass NULL");
    UpdateOptions u;
    if (refused.ok()) refused = api::update_options_from_c(opts, &u);
    return group->rg->update(map ? map->map.get() : nullptr, u, refused);
  });
}

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
  if (!group) return 0;
  return group->g ? group->g->size() : group->rg->size();
}

WHARF_API wharf_status* wharf_replica_group_update(wharf_replica_group* group, const wharf_constant_map* map,
                                                   const wharf_update_options* opts) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(group && map, "wharf_replica_group_update: group and map must not be NULL");
    WHARF_RETURN_IF_ERROR(require_local(group, "wharf_replica_group_update"));
    UpdateOptions u;
    WHARF_RETURN_IF_ERROR(api::update_options_from_c(opts, &u));
    return group->g->update(*map->map, u);
  });
}

WHARF_API wharf_status* wharf_replica_group_swap(wharf_replica_group* group) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(group, "wharf_replica_group_swap: group is NULL");
    WHARF_RETURN_IF_ERROR(require_local(group, "wharf_replica_group_swap"));
    return group->g->swap();
  });
}

WHARF_API wharf_status* wharf_replica_group_free_inactive(wharf_replica_group* group) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(group, "wharf_replica_group_free_inactive: group is NULL");
    return group->g ? group->g->free_inactive() : group->rg->free_inactive();
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
    const ReplicaGroupStats s = group->g ? group->g->stats() : group->rg->stats();
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
