// SPDX-License-Identifier: Apache-2.0
// Runtime functions of wharf.h: argument checks and conversions only.
#include <cstddef>
#include <cstring>

#include "api/boundary.h"
#include "api/handles.h"

using namespace wharf;

extern "C" {

namespace {
wharf_runtime_options runtime_defaults() {
  wharf_runtime_options o;
  std::memset(&o, 0, sizeof o);
  o.backend = WHARF_BACKEND_AUTO;
  return o;
}
}  // namespace

WHARF_API void wharf_runtime_options_init_sized(wharf_runtime_options* opts, size_t struct_size) {
  api::init_sized(opts, struct_size, runtime_defaults());
}

WHARF_API wharf_status* wharf_runtime_create(const wharf_runtime_options* opts, wharf_runtime** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(out, "wharf_runtime_create: out is NULL");
    *out = nullptr;
    wharf_runtime_options o;
    wharf_runtime_options_init(&o);
    WHARF_RETURN_IF_ERROR(api::read_options(opts, &o, "wharf_runtime_options"));
    RuntimeOptions ro;
    ro.backend = api::enum_int(o.backend);
    ro.device_index = o.device_index;
    ro.device_memory_limit = o.device_memory_limit;
    ro.copy_threads = o.copy_threads;
    ro.staging_bytes = o.staging_bytes;
    auto handle = std::make_unique<wharf_runtime>();
    WHARF_RETURN_IF_ERROR(Runtime::create(ro, &handle->rt));
    *out = handle.release();
    return Status::Ok();
  });
}

// Releases the handle's reference; containers, stores and sessions hold their own.
WHARF_API void wharf_runtime_free(wharf_runtime* runtime) { delete runtime; }

WHARF_API wharf_backend wharf_runtime_backend(const wharf_runtime* runtime) {
  if (!runtime) return WHARF_BACKEND_AUTO;
  return static_cast<wharf_backend>(runtime->rt->backend());
}

WHARF_API wharf_status* wharf_runtime_get_device_info(const wharf_runtime* runtime, wharf_device_info* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(runtime, "wharf_runtime_get_device_info: runtime is NULL");
    DeviceInfo info;
    WHARF_RETURN_IF_ERROR(runtime->rt->device().info(&info));
    wharf_device_info full;
    std::memset(&full, 0, sizeof(full));
    full.struct_size = sizeof(full);
    full.backend = static_cast<wharf_backend>(info.backend);
    full.device_index = info.index;
    std::strncpy(full.name, info.name.c_str(), sizeof(full.name) - 1);
    full.total_memory = info.total_memory;
    full.free_memory = info.free_memory;
    full.compute_major = info.compute_major;
    full.compute_minor = info.compute_minor;
    return api::write_output(full, out, "wharf_device_info");
  });
}

WHARF_API wharf_status* wharf_runtime_synchronize(wharf_runtime* runtime) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(runtime, "wharf_runtime_synchronize: runtime is NULL");
    return runtime->rt->synchronize();
  });
}

WHARF_API wharf_status* wharf_runtime_get_memory_stats(const wharf_runtime* runtime, wharf_memory_stats* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(runtime, "wharf_runtime_get_memory_stats: runtime is NULL");
    MemorySnapshot s = runtime->rt->device().accounting().snapshot();
    wharf_memory_stats full;
    std::memset(&full, 0, sizeof(full));
    full.struct_size = sizeof(full);
    for (int i = 0; i < WHARF_MEM_TAG_CAPACITY; ++i) {
      full.current[i] = s.current[i];
      full.peak[i] = s.peak[i];
    }
    full.device_current = s.device_current;
    full.device_peak = s.device_peak;
    full.pinned_host_current = s.pinned_current;
    full.pinned_host_peak = s.pinned_peak;
    return api::write_output(full, out, "wharf_memory_stats");
  });
}

WHARF_API void wharf_runtime_reset_peak(wharf_runtime* runtime) {
  if (runtime) runtime->rt->device().accounting().reset_peak();
}

}  // extern "C"
