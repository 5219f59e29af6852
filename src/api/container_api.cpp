// SPDX-License-Identifier: Apache-2.0
// Container and run functions of wharf.h: argument checks and conversions only.
#include <climits>
#include <cstddef>
#include <cstring>
#include <cstdint>

#include "api/boundary.h"
#include "api/handles.h"
#include "core/text.h"

using namespace wharf;

namespace {

// The checks a C declaration (constant or state) needs before its fields are read.
Status check_decl(const char* kind, size_t i, const char* fqn, int32_t dtype, int32_t ndim, const int64_t* shape) {
  std::string what =
      fqn ? std::string(kind) + " " + quote_name(fqn) : std::string(kind) + " declaration " + std::to_string(i);
  if (!fqn || !*fqn) return InvalidArgument(what + ": fqn is NULL or empty");
  if (ndim < 0 || ndim > WHARF_MAX_DIMS)
    return InvalidArgument(what + ": ndim " + std::to_string(ndim) + " outside 0.." + std::to_string(WHARF_MAX_DIMS));
  if (ndim > 0 && !shape) return InvalidArgument(what + ": shape is NULL with ndim " + std::to_string(ndim));
  if (!dtype_valid(dtype)) return InvalidArgument(what + ": unknown dtype value " + std::to_string(dtype));
  return Status::Ok();
}

Status decls_from_c(const wharf_container_options& o, std::vector<ConstantDecl>* out) {
  if (o.num_constants > 0 && !o.constants)
    return InvalidArgument("wharf_container_options: constants is NULL with num_constants " +
                           std::to_string(o.num_constants));
  api::StructArray<wharf_constant_decl> array;
  WHARF_RETURN_IF_ERROR(array.init(o.constants, o.num_constants, "constant declaration"));
  out->clear();
  out->reserve(o.num_constants);
  for (size_t i = 0; i < o.num_constants; ++i) {
    wharf_constant_decl c;
    WHARF_RETURN_IF_ERROR(array.get(i, &c, "constant declaration"));
    WHARF_RETURN_IF_ERROR(check_decl("constant", i, c.fqn, api::enum_int(c.dtype), c.ndim, c.shape));
    ConstantDecl d;
    d.fqn = c.fqn;
    d.dtype = static_cast<DType>(api::enum_int(c.dtype));
    d.shape.assign(c.shape, c.shape + c.ndim);
    d.placement = static_cast<Placement>(api::enum_int(c.placement));
    d.flags = c.flags;
    out->push_back(std::move(d));
  }
  return Status::Ok();
}

Status states_from_c(const wharf_container_options& o, std::vector<StateInit>* out) {
  if (o.num_states > 0 && !o.states)
    return InvalidArgument("wharf_container_options: states is NULL with num_states " + std::to_string(o.num_states));
  api::StructArray<wharf_state_decl> array;
  WHARF_RETURN_IF_ERROR(array.init(o.states, o.num_states, "state declaration"));
  out->clear();
  for (size_t i = 0; i < o.num_states; ++i) {
    wharf_state_decl c;
    WHARF_RETURN_IF_ERROR(array.get(i, &c, "state declaration"));
    WHARF_RETURN_IF_ERROR(check_decl("state", i, c.fqn, api::enum_int(c.dtype), c.ndim, c.shape));
    StateInit si;
    si.fqn = c.fqn;
    si.dtype = static_cast<DType>(api::enum_int(c.dtype));
    si.shape.assign(c.shape, c.shape + c.ndim);
    if (c.initial) {
      void* data = nullptr;
      WHARF_RETURN_IF_ERROR(
          api::meta_from_view(*c.initial, "initial value of state " + quote_name(si.fqn), &si.meta, &data));
      si.has_initial = true;
      si.data = data;
    }
    out->push_back(std::move(si));
  }
  return Status::Ok();
}

// The parts of the options both create functions share.
Status config_from_c(const wharf_container_options& o, ContainerConfig* cfg) {
  cfg->name = o.name ? o.name : "";
  cfg->store = o.store ? o.store->store : nullptr;
  cfg->max_session_bytes = o.max_session_bytes;
  cfg->session_capacity = o.session_capacity;
  if (o.state_arena_of) {
    cfg->arena = o.state_arena_of->c->arena();
    if (!cfg->arena)
      return InvalidArgument("wharf_container_options.state_arena_of: container " +
                             quote_name(o.state_arena_of->c->name()) + " has no state arena (session_capacity 0)");
  }
  return states_from_c(o, &cfg->states);
}

Status update_from_c(const wharf_update_options& o, UpdateOptions* out) {
  const int32_t target = api::enum_int(o.target);
  if (target != WHARF_TARGET_INACTIVE && target != WHARF_TARGET_ACTIVE_IN_PLACE)
    return InvalidArgument("wharf_update_options: unknown target " + std::to_string(target));
  out->in_place = target == WHARF_TARGET_ACTIVE_IN_PLACE;
  out->require_full = o.require_full != 0;
  out->wait_stream = o.wait_stream;
  out->in_place_max_wait_ms = o.in_place_max_wait_ms;
  out->progress = api::progress_from_c(o.progress, o.progress_user);
  if (o.fold) {
    wharf_fold_fn fn = o.fold;
    void* user = o.fold_user;
    out->fold = [fn, user](const std::shared_ptr<Container>& c, const std::shared_ptr<Generation>& gen,
                           Stream& stream) -> Status {
      std::unique_ptr<Run> run = Run::over(c, gen, stream);
      wharf_run handle;
      handle.run = run.get();
      return api::from_c(fn(&handle, user));
    };
  }
  return Status::Ok();
}

}  // namespace

namespace wharf {
namespace api {
ProgressFn progress_from_c(wharf_progress_fn fn, void* user) {
  if (!fn) return nullptr;
  return [fn, user](uint64_t done, uint64_t total) { return fn(done, total, user) == 0; };
}

Status update_options_from_c(const wharf_update_options* opts, UpdateOptions* out) {
  wharf_update_options o;
  wharf_update_options_init(&o);
  WHARF_RETURN_IF_ERROR(api::read_options(opts, &o, "wharf_update_options"));
  return update_from_c(o, out);
}
}  // namespace api
}  // namespace wharf

extern "C" {

WHARF_API void wharf_container_options_init_sized(wharf_container_options* opts, size_t struct_size) {
  wharf_container_options o;
  std::memset(&o, 0, sizeof o);
  api::init_sized(opts, struct_size, o);
}

WHARF_API void wharf_update_options_init_sized(wharf_update_options* opts, size_t struct_size) {
  wharf_update_options o;
  std::memset(&o, 0, sizeof o);
  o.target = WHARF_TARGET_INACTIVE;
  o.in_place_max_wait_ms = 1000;
  api::init_sized(opts, struct_size, o);
}

WHARF_API wharf_status* wharf_container_create(wharf_runtime* runtime, const wharf_container_options* opts,
                                               wharf_container** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(runtime && opts && out, "wharf_container_create: runtime, opts and out must not be NULL");
    *out = nullptr;
    wharf_container_options o;
    wharf_container_options_init(&o);
    WHARF_RETURN_IF_ERROR(api::read_options(opts, &o, "wharf_container_options"));
    ContainerConfig cfg;
    WHARF_RETURN_IF_ERROR(decls_from_c(o, &cfg.constants));
    WHARF_RETURN_IF_ERROR(config_from_c(o, &cfg));
    auto h = std::make_unique<wharf_container>();
    WHARF_RETURN_IF_ERROR(Container::create(runtime->rt, std::move(cfg), &h->c));
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_container_create_from_map(wharf_runtime* runtime, const wharf_constant_map* map,
                                                        const wharf_container_options* opts, wharf_container** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(runtime && map && out, "wharf_container_create_from_map: runtime, map and out must not be NULL");
    *out = nullptr;
    wharf_container_options o;
    wharf_container_options_init(&o);
    WHARF_RETURN_IF_ERROR(api::read_options(opts, &o, "wharf_container_options"));
    WHARF_API_REQUIRE(o.num_constants == 0,
                      "wharf_container_create_from_map: options.constants must be empty (the map declares them)");
    const ConstantMap& m = *map->map;
    ContainerConfig cfg;
    WHARF_RETURN_IF_ERROR(config_from_c(o, &cfg));
    std::vector<ConstantDecl>& decls = cfg.constants;
    decls.reserve(m.size());
    for (size_t i = 0; i < m.size(); ++i) {
      ConstantDecl d;
      d.fqn = m.entry(i).fqn;
      d.dtype = m.entry(i).meta.dtype;
      d.shape = m.entry(i).meta.shape;
      decls.push_back(std::move(d));
    }
    std::shared_ptr<Container> c;
    cfg.loading = true;  // loaded right below
    WHARF_RETURN_IF_ERROR(Container::create(runtime->rt, std::move(cfg), &c));
    WHARF_RETURN_IF_ERROR(c->load(m, api::progress_from_c(o.progress, o.progress_user)));
    auto h = std::make_unique<wharf_container>();
    h->c = std::move(c);
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API void wharf_container_free(wharf_container* container) { delete container; }

WHARF_API wharf_status* wharf_container_update(wharf_container* container, const wharf_constant_map* map,
                                               const wharf_update_options* opts) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(container && map, "wharf_container_update: container and map must not be NULL");
    UpdateOptions u;
    WHARF_RETURN_IF_ERROR(api::update_options_from_c(opts, &u));
    return container->c->update(*map->map, u);
  });
}

WHARF_API wharf_status* wharf_container_swap(wharf_container* container) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(container, "wharf_container_swap: container is NULL");
    return container->c->swap();
  });
}

WHARF_API wharf_status* wharf_container_free_inactive(wharf_container* container) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(container, "wharf_container_free_inactive: container is NULL");
    return container->c->free_inactive();
  });
}

WHARF_API uint64_t wharf_container_generation(const wharf_container* container) {
  return container ? container->c->generation() : 0;
}

WHARF_API size_t wharf_container_num_constants(const wharf_container* container) {
  return container ? container->c->decls().size() : 0;
}

WHARF_API wharf_status* wharf_container_get_constant_info(const wharf_container* container, size_t i,
                                                          wharf_constant_info* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(container, "wharf_container_get_constant_info: container is NULL");
    const auto& decls = container->c->decls();
    if (i >= decls.size())
      return InvalidArgument("wharf_container_get_constant_info: index " + std::to_string(i) + " out of range (" +
                             std::to_string(decls.size()) + " constants)");
    const ConstantDecl& d = decls[i];
    wharf_constant_info full;
    std::memset(&full, 0, sizeof(full));
    full.struct_size = sizeof(full);
    full.fqn = d.fqn.c_str();
    full.dtype = static_cast<wharf_dtype>(d.dtype);
    full.ndim = int32_t(d.shape.size());
    full.shape = d.shape.empty() ? nullptr : d.shape.data();
    full.placement = static_cast<wharf_placement>(d.placement);
    full.flags = d.flags;
    full.nbytes = d.nbytes;
    return api::write_output(full, out, "wharf_constant_info");
  });
}

WHARF_API wharf_status* wharf_container_bind_user_constant(wharf_container* container, const char* fqn,
                                                           const wharf_tensor_view* view, wharf_release_fn release,
                                                           void* user) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(container && fqn && view,
                      "wharf_container_bind_user_constant: container, fqn and view must not be NULL");
    UserConstant uc;
    WHARF_RETURN_IF_ERROR(api::meta_from_view(*view, "constant " + quote_name(fqn), &uc.meta, &uc.data));
    if (release) {
      void* data = uc.data;
      uc.release = [release, data, user] { release(data, user); };
    }
    return container->c->bind_user_constant(fqn, std::move(uc));
  });
}

WHARF_API wharf_status* wharf_run_begin(wharf_container* container, wharf_session* session, void* stream,
                                        wharf_run** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(container && out, "wharf_run_begin: container and out must not be NULL");
    *out = nullptr;
    auto h = std::make_unique<wharf_run>();
    WHARF_RETURN_IF_ERROR(Run::begin(container->c, session ? session->s : nullptr, stream, &h->owned));
    h->run = h->owned.get();
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_run_get_tensor(const wharf_run* run, const char* fqn, wharf_tensor_view* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(run && fqn && out, "wharf_run_get_tensor: run, fqn and out must not be NULL");
    BoundTensor b;
    WHARF_RETURN_IF_ERROR(run->run->tensor(fqn, &b));
    api::view_from_bound(b, out);
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_run_read(const wharf_run* run, const char* fqn, uint64_t offset, void* dst,
                                       uint64_t bytes) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(run && fqn, "wharf_run_read: run and fqn must not be NULL");
    return run->run->read(fqn, offset, dst, bytes);
  });
}

WHARF_API uint64_t wharf_run_generation(const wharf_run* run) { return run ? run->run->generation() : 0; }

WHARF_API void* wharf_run_stream(const wharf_run* run) { return run ? run->run->stream().native_handle() : nullptr; }

WHARF_API wharf_status* wharf_run_end(wharf_run* run) {
  if (!run) return nullptr;
  // A fold callback's run belongs to the update (it lives on the update's stack).
  if (!run->owned)
    return api::make_status(Code::kInvalidArgument, "wharf_run_end: a fold callback's run is ended by the update");
  std::unique_ptr<wharf_run> h(run);  // freed on every path
  return api::guarded(__func__, [&]() -> Status { return h->owned->end(); });
}

WHARF_API const char* wharf_container_name(const wharf_container* container) {
  return container ? container->c->name().c_str() : "";
}

WHARF_API size_t wharf_container_num_states(const wharf_container* container) {
  return container ? container->c->states().size() : 0;
}

WHARF_API wharf_status* wharf_container_get_state_info(const wharf_container* container, size_t i,
                                                       wharf_state_info* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(container, "wharf_container_get_state_info: container is NULL");
    const auto& states = container->c->states();
    if (i >= states.size())
      return InvalidArgument("wharf_container_get_state_info: index " + std::to_string(i) + " out of range (" +
                             std::to_string(states.size()) + " states)");
    const StateDecl& d = states[i];
    wharf_state_info full;
    std::memset(&full, 0, sizeof(full));
    full.struct_size = sizeof(full);
    full.fqn = d.fqn.c_str();
    full.dtype = static_cast<wharf_dtype>(d.dtype);
    full.ndim = int32_t(d.shape.size());
    full.shape = d.shape.empty() ? nullptr : d.shape.data();
    full.nbytes = d.nbytes;
    return api::write_output(full, out, "wharf_state_info");
  });
}

// --- experimental tier -------------------------------------------------------------------

WHARF_API int64_t wharf_container_find_constant(const wharf_container* container, const char* fqn) {
  if (!container || !fqn) return -1;
  try {
    return container->c->find(fqn);
  } catch (...) {
    return -1;  // out of host memory for the name
  }
}

WHARF_API int64_t wharf_container_find_state(const wharf_container* container, const char* fqn) {
  if (!container || !fqn) return -1;
  try {
    return container->c->find_state(fqn);
  } catch (...) {
    return -1;
  }
}

WHARF_API int32_t wharf_container_has_staged(const wharf_container* container) {
  return container && container->c->staged() ? 1 : 0;
}

WHARF_API wharf_status* wharf_run_get_tensor_at(const wharf_run* run, size_t index, wharf_tensor_view* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(run && out, "wharf_run_get_tensor_at: run and out must not be NULL");
    BoundTensor b;
    WHARF_RETURN_IF_ERROR(run->run->tensor_at(index > size_t(INT32_MAX) ? -1 : int(index), &b));
    api::view_from_bound(b, out);
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_run_get_state_at(const wharf_run* run, size_t index, wharf_tensor_view* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(run && out, "wharf_run_get_state_at: run and out must not be NULL");
    BoundTensor b;
    WHARF_RETURN_IF_ERROR(run->run->state_at(index > size_t(INT32_MAX) ? -1 : int(index), &b));
    api::view_from_bound(b, out);
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_run_get_session(const wharf_run* run, wharf_session** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(run && out, "wharf_run_get_session: run and out must not be NULL");
    *out = nullptr;
    if (run->run->batched())
      return FailedPrecondition("wharf_run_get_session: a batched run over " +
                                std::to_string(run->run->batch().size()) + " sessions has no one session");
    if (!run->run->session()) return Status::Ok();
    auto h = std::make_unique<wharf_session>();
    h->s = run->run->session();
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_run_begin_batch(wharf_container* container, wharf_session* const* sessions,
                                              size_t num_sessions, void* stream, wharf_run** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(container && out, "wharf_run_begin_batch: container and out must not be NULL");
    *out = nullptr;
    WHARF_API_REQUIRE(sessions && num_sessions > 0, "wharf_run_begin_batch: at least one session is required");
    std::vector<std::shared_ptr<Session>> ss;
    ss.reserve(num_sessions);
    for (size_t i = 0; i < num_sessions; ++i) {
      if (!sessions[i]) return InvalidArgument("wharf_run_begin_batch: sessions[" + std::to_string(i) + "] is NULL");
      ss.push_back(sessions[i]->s);
    }
    auto h = std::make_unique<wharf_run>();
    WHARF_RETURN_IF_ERROR(Run::begin_batch(container->c, std::move(ss), stream, &h->owned));
    h->run = h->owned.get();
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API size_t wharf_run_num_sessions(const wharf_run* run) {
  if (!run) return 0;
  if (run->run->batched()) return run->run->batch().size();
  return run->run->session() ? 1 : 0;
}

WHARF_API wharf_status* wharf_run_get_slot_indices(const wharf_run* run, wharf_tensor_view* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(run && out, "wharf_run_get_slot_indices: run and out must not be NULL");
    BoundTensor b;
    WHARF_RETURN_IF_ERROR(run->run->slot_indices(&b));
    api::view_from_bound(b, out);
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_container_get_state_arena_stats(const wharf_container* container,
                                                              wharf_state_arena_stats* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(container && out, "wharf_container_get_state_arena_stats: container and out must not be NULL");
    const std::shared_ptr<StateArena>& a = container->c->arena();
    if (!a)
      return FailedPrecondition("container " + quote_name(container->c->name()) +
                                " has no state arena (created with session_capacity 0)");
    wharf_state_arena_stats full;
    std::memset(&full, 0, sizeof(full));
    full.struct_size = sizeof(full);
    full.num_slots = a->capacity();
    full.num_slots_used = a->slots_used();
    full.num_slots_free = full.num_slots - full.num_slots_used;
    full.bytes = a->bytes();
    return api::write_output(full, out, "wharf_state_arena_stats");
  });
}

}  // extern "C"
