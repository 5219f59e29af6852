// SPDX-License-Identifier: Apache-2.0
// Session functions of wharf.h: argument checks and conversions only.
#include <cstddef>
#include <cstring>

#include "api/boundary.h"
#include "api/handles.h"
#include "core/logging.h"

using namespace wharf;

extern "C" {

WHARF_API void wharf_session_options_init_sized(wharf_session_options* opts, size_t struct_size) {
  wharf_session_options o;
  std::memset(&o, 0, sizeof o);
  api::init_sized(opts, struct_size, o);
}

WHARF_API wharf_status* wharf_session_create(wharf_runtime* runtime, wharf_container* const* containers,
                                             size_t num_containers, const wharf_session_options* opts,
                                             wharf_session** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(runtime && out, "wharf_session_create: runtime and out must not be NULL");
    *out = nullptr;
    WHARF_API_REQUIRE(containers && num_containers > 0, "wharf_session_create: at least one container is required");
    wharf_session_options o;
    wharf_session_options_init(&o);
    WHARF_RETURN_IF_ERROR(api::read_options(opts, &o, "wharf_session_options"));
    std::vector<std::shared_ptr<Container>> cs;
    for (size_t i = 0; i < num_containers; ++i) {
      if (!containers[i]) return InvalidArgument("wharf_session_create: containers[" + std::to_string(i) + "] is NULL");
      cs.push_back(containers[i]->c);
    }
    SessionOptions so;
    so.max_state_bytes = o.max_state_bytes;
    so.allocate_eagerly = o.allocate_eagerly != 0;
    auto h = std::make_unique<wharf_session>();
    WHARF_RETURN_IF_ERROR(Session::create(runtime->rt, std::move(cs), so, &h->s));
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_session_reset(wharf_session* session) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(session, "wharf_session_reset: session is NULL");
    return session->s->reset();
  });
}

WHARF_API wharf_status* wharf_session_fork(const wharf_session* src, wharf_session** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(src && out, "wharf_session_fork: src and out must not be NULL");
    *out = nullptr;
    auto h = std::make_unique<wharf_session>();
    WHARF_RETURN_IF_ERROR(src->s->fork(&h->s));
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API uint64_t wharf_session_state_bytes(const wharf_session* session) {
  return session ? session->s->state_bytes() : 0;
}

WHARF_API int64_t wharf_session_slot(const wharf_session* session) { return session ? session->s->slot() : -1; }

WHARF_API void wharf_session_free(wharf_session* session) {
  // The destructor may wait for the device; nothing may throw out of here.
  try {
    delete session;
  } catch (...) {
    WHARF_LOG(kError, "wharf_session_free: unexpected exception");
  }
}

}  // extern "C"
