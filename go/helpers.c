/* SPDX-License-Identifier: Apache-2.0 */
// C helpers of the Go binding; see helpers.h.
#include "helpers.h"

#include <string.h>

#include "_cgo_export.h"

wharf_status* wharf_go_map_set(wharf_constant_map* map, const char* fqn, const wharf_tensor_view* view,
                               const int64_t* shape, const int64_t* strides) {
  if (!view) return wharf_constant_map_set(map, fqn, NULL);
  wharf_tensor_view v = *view;
  v.struct_size = (uint32_t)sizeof v;
  v.shape = shape;
  v.strides = strides;
  return wharf_constant_map_set(map, fqn, &v);
}

static wharf_status* fold_trampoline(wharf_run* target, void* user) {
  return wharfGoFold(target, (uintptr_t)user);
}

int32_t wharf_go_progress(uint64_t done, uint64_t total, void* user) {
  return wharfGoProgress(done, total, (uintptr_t)user);
}

void wharf_go_container_progress(wharf_container_options* o, uintptr_t h) {
  o->progress = wharf_go_progress;
  o->progress_user = (void*)h;
}

void wharf_go_update_options(wharf_update_options* o, const wharf_go_update_args* a) {
  wharf_update_options_init_sized(o, sizeof(*o));
  o->target = (wharf_update_target)a->target;
  o->require_full = a->require_full;
  if (a->fold_handle) {
    o->fold = fold_trampoline;
    o->fold_user = (void*)a->fold_handle;
  }
  o->wait_stream = (void*)a->wait_stream;
  if (a->progress_handle) {
    o->progress = wharf_go_progress;
    o->progress_user = (void*)a->progress_handle;
  }
  if (a->in_place_max_wait_ms >= 0)
    o->in_place_max_wait_ms = a->in_place_max_wait_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)a->in_place_max_wait_ms;
}

wharf_status* wharf_go_update(wharf_container* container, const wharf_constant_map* map,
                              const wharf_go_update_args* args) {
  wharf_update_options o;
  wharf_go_update_options(&o, args);
  return wharf_container_update(container, map, &o);
}

wharf_status* wharf_go_store_update(wharf_weight_store* store, const wharf_constant_map* map,
                                    const wharf_go_update_args* args) {
  wharf_update_options o;
  wharf_go_update_options(&o, args);
  return wharf_weight_store_update(store, map, &o);
}

wharf_status* wharf_go_update_from_file(wharf_container* container, const char* path,
                                        const wharf_go_update_args* args) {
  wharf_update_options o;
  wharf_go_update_options(&o, args);
  return wharf_container_update_from_file(container, path, &o);
}

wharf_status* wharf_go_store_update_from_file(wharf_weight_store* store, const char* path,
                                              const wharf_go_update_args* args) {
  wharf_update_options o;
  wharf_go_update_options(&o, args);
  return wharf_weight_store_update_from_file(store, path, &o);
}

/* Builds the temporary map of wharf_go_update_packed (see helpers.h). */
static wharf_status* packed_map(void* buf, const char* names, const int32_t* dtypes, const int32_t* ndims,
                                const int64_t* shapes, const uint64_t* offsets, size_t n, wharf_constant_map** out) {
  wharf_constant_map* map = NULL;
  wharf_status* st = wharf_constant_map_create(&map);
  if (st) return st;
  const char* name = names;
  const int64_t* shape = shapes;
  for (size_t i = 0; i < n; ++i) {
    wharf_tensor_view v;
    memset(&v, 0, sizeof v);
    v.struct_size = (uint32_t)sizeof v;
    v.data = (char*)buf + offsets[i];
    v.dtype = (wharf_dtype)dtypes[i];
    v.device_type = WHARF_DEVICE_CPU;
    v.device_index = 0;
    v.ndim = ndims[i];
    v.shape = shape;
    v.strides = NULL;
    st = wharf_constant_map_set(map, name, &v);
    if (st) {
      wharf_constant_map_free(map);
      return st;
    }
    while (*name) ++name;
    ++name;
    shape += ndims[i];
  }
  *out = map;
  return NULL;
}

wharf_status* wharf_go_update_packed(wharf_container* container, void* buf, const char* names,
                                     const int32_t* dtypes, const int32_t* ndims, const int64_t* shapes,
                                     const uint64_t* offsets, size_t n, const wharf_go_update_args* args) {
  wharf_constant_map* map = NULL;
  wharf_status* st = packed_map(buf, names, dtypes, ndims, shapes, offsets, n, &map);
  if (st) return st;
  wharf_update_options o;
  wharf_go_update_options(&o, args);
  st = wharf_container_update(container, map, &o);
  // The update returned, so the library no longer reads buf; the map (holding the only
  // copies of the pointers into buf) is freed before control returns to Go.
  wharf_constant_map_free(map);
  return st;
}

wharf_status* wharf_go_store_update_packed(wharf_weight_store* store, void* buf, const char* names,
                                           const int32_t* dtypes, const int32_t* ndims, const int64_t* shapes,
                                           const uint64_t* offsets, size_t n, const wharf_go_update_args* args) {
  wharf_constant_map* map = NULL;
  wharf_status* st = packed_map(buf, names, dtypes, ndims, shapes, offsets, n, &map);
  if (st) return st;
  wharf_update_options o;
  wharf_go_update_options(&o, args);
  st = wharf_weight_store_update(store, map, &o);
  wharf_constant_map_free(map);  // as in wharf_go_update_packed: no pointer into buf survives
  return st;
}


static void release_trampoline(void* data, void* user) {
  (void)data;
  wharfGoRelease((uintptr_t)user);
}

wharf_status* wharf_go_bind(wharf_container* container, const char* fqn, const wharf_tensor_view* view,
                            const int64_t* shape, uintptr_t release_handle) {
  wharf_tensor_view v = *view;
  v.struct_size = (uint32_t)sizeof v;
  v.shape = shape;
  v.strides = NULL;
  return wharf_container_bind_user_constant(container, fqn, &v, release_trampoline, (void*)release_handle);
}

static void log_trampoline(wharf_log_level level, const char* message, void* user) {
  (void)user;
  wharfGoLog((int)level, (char*)message);
}

void wharf_go_set_log(int enable, wharf_log_level min_level) {
  wharf_log_set_callback(enable ? log_trampoline : NULL, min_level, NULL);
}
