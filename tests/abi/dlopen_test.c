/* SPDX-License-Identifier: Apache-2.0 */
/* Loads libwharf.so with dlopen (no link-time dependency, as an existing C runtime would),
 * resolves every symbol named on the command line (the library's exported list), and
 * drives the main calls through the resolved pointers only: a host runtime, a constant map,
 * a container loaded from it, a run that resolves and reads a constant, an update and a swap
 * seen by a new run, and an error status. As a dlopen user should, it checks
 * wharf_version_number() before using what 0.3 added, and fills option structs with the
 * _sized inits (the unsized exported ones fill their first release's layout). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "wharf/wharf.h"

/* Every entry point this program calls, resolved by name. */
struct api {
  uint32_t (*abi_version)(void);
  const char* (*version)(void);
  uint32_t (*version_number)(void);
  wharf_code (*status_code)(const wharf_status*);
  const char* (*status_message)(const wharf_status*);
  void (*status_free)(wharf_status*);
  const char* (*code_name)(wharf_code);
  void (*runtime_options_init_sized)(wharf_runtime_options*, size_t);
  wharf_status* (*runtime_create)(const wharf_runtime_options*, wharf_runtime**);
  void (*runtime_free)(wharf_runtime*);
  wharf_backend (*runtime_backend)(const wharf_runtime*);
  wharf_status* (*constant_map_create)(wharf_constant_map**);
  wharf_status* (*constant_map_set)(wharf_constant_map*, const char*, const wharf_tensor_view*);
  void (*constant_map_free)(wharf_constant_map*);
  wharf_status* (*container_create_from_map)(wharf_runtime*, const wharf_constant_map*,
                                             const wharf_container_options*, wharf_container**);
  wharf_status* (*container_update)(wharf_container*, const wharf_constant_map*, const wharf_update_options*);
  wharf_status* (*container_swap)(wharf_container*);
  uint64_t (*container_generation)(const wharf_container*);
  void (*container_free)(wharf_container*);
  wharf_status* (*run_begin)(wharf_container*, wharf_session*, void*, wharf_run**);
  wharf_status* (*run_get_tensor)(const wharf_run*, const char*, wharf_tensor_view*);
  wharf_status* (*run_read)(const wharf_run*, const char*, uint64_t, void*, uint64_t);
  uint64_t (*run_generation)(const wharf_run*);
  wharf_status* (*run_end)(wharf_run*);
};

/* dlsym returns void*; ISO C has no object-to-function pointer conversion, so copy the bits
 * (what POSIX guarantees to work). */
static int resolve(void* h, const char* name, void* fn_ptr, size_t size) {
  void* sym = dlsym(h, name);
  if (!sym) {
    fprintf(stderr, "symbol %s does not resolve: %s\n", name, dlerror());
    return 0;
  }
  memcpy(fn_ptr, &sym, size);
  return 1;
}
#define RESOLVE(h, a, field) resolve((h), "wharf_" #field, &(a).field, sizeof((a).field))

static int failures = 0;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

static int ok(const struct api* a, wharf_status* st, const char* what) {
  if (!st) return 1;
  ++failures;
  fprintf(stderr, "%s: %s: %s\n", what, a->code_name(a->status_code(st)), a->status_message(st));
  a->status_free(st);
  return 0;
}

static int drive(const struct api* a) {
  wharf_runtime_options o;
  wharf_runtime* rt = NULL;
  wharf_constant_map* map = NULL;
  wharf_container* model = NULL;
  wharf_run *run = NULL, *fresh_run = NULL;
  wharf_tensor_view v, got;
  wharf_status* st;
  float w[6] = {1, 2, 3, 4, 5, 6}, w2[6] = {6, 5, 4, 3, 2, 1}, back[6];
  int64_t shape[2] = {2, 3}, wrong[1] = {6};

  if (a->abi_version() != WHARF_ABI_VERSION) {
    fprintf(stderr, "ABI %u, header %d\n", a->abi_version(), WHARF_ABI_VERSION);
    return 0;
  }
  if (a->version_number() < 300) {
    fprintf(stderr, "library %s is older than 0.3\n", a->version());
    return 0;
  }
  a->runtime_options_init_sized(&o, sizeof o);
  o.backend = WHARF_BACKEND_HOST;
  if (!ok(a, a->runtime_create(&o, &rt), "runtime_create")) return 0;
  CHECK(a->runtime_backend(rt) == WHARF_BACKEND_HOST);

  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.data = w;
  v.dtype = WHARF_DTYPE_F32;
  v.device_type = WHARF_DEVICE_CPU;
  v.ndim = 2;
  v.shape = shape;
  ok(a, a->constant_map_create(&map), "constant_map_create");
  ok(a, a->constant_map_set(map, "layers.0.weight", &v), "constant_map_set");
  if (ok(a, a->container_create_from_map(rt, map, NULL, &model), "container_create_from_map")) {
    CHECK(a->container_generation(model) != 0);
    ok(a, a->run_begin(model, NULL, NULL, &run), "run_begin");
    got.struct_size = sizeof got;
    ok(a, a->run_get_tensor(run, "layers.0.weight", &got), "run_tensor");
    CHECK(got.dtype == WHARF_DTYPE_F32 && got.ndim == 2 && got.shape[1] == 3);
    CHECK(got.strides != NULL && got.strides[0] == 3 && got.strides[1] == 1);
    ok(a, a->run_read(run, "layers.0.weight", 0, back, sizeof back), "run_read");
    CHECK(back[0] == 1 && back[5] == 6);

    /* Update from the same (now rewritten) memory, swap; the open run keeps its weights. */
    memcpy(w, w2, sizeof w);
    ok(a, a->container_update(model, map, NULL), "container_update");
    ok(a, a->container_swap(model), "container_swap");
    ok(a, a->run_begin(model, NULL, NULL, &fresh_run), "run_begin 2");
    CHECK(a->run_generation(fresh_run) != a->run_generation(run));
    ok(a, a->run_read(fresh_run, "layers.0.weight", 0, back, sizeof back), "run_read 2");
    CHECK(back[0] == 6);
    ok(a, a->run_read(run, "layers.0.weight", 0, back, sizeof back), "run_read old");
    CHECK(back[0] == 1);
    ok(a, a->run_end(fresh_run), "run_end 2");
    ok(a, a->run_end(run), "run_end");

    /* An error crosses as a status value. */
    a->constant_map_free(map);
    map = NULL;
    v.ndim = 1;
    v.shape = wrong;
    ok(a, a->constant_map_create(&map), "constant_map_create 2");
    ok(a, a->constant_map_set(map, "layers.0.weight", &v), "constant_map_set 2");
    st = a->container_update(model, map, NULL);
    CHECK(a->status_code(st) == WHARF_INVALID_ARGUMENT);
    CHECK(strstr(a->status_message(st), "layers.0.weight") != NULL);
    a->status_free(st);
    a->container_free(model);
  }
  a->constant_map_free(map);
  a->runtime_free(rt);
  return failures == 0;
}

int main(int argc, char** argv) {
  void* h;
  int i, missing = 0, resolved = 1;
  struct api a;
  if (argc < 2) {
    fprintf(stderr, "usage: %s libwharf.so [symbol...]\n", argv[0]);
    return 2;
  }
  h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 1;
  }
  for (i = 2; i < argc; ++i) {
    if (!dlsym(h, argv[i])) {
      fprintf(stderr, "symbol %s does not resolve\n", argv[i]);
      ++missing;
    }
  }
  memset(&a, 0, sizeof a);
  resolved &= RESOLVE(h, a, abi_version);
  resolved &= RESOLVE(h, a, version);
  resolved &= RESOLVE(h, a, version_number);
  resolved &= RESOLVE(h, a, status_code);
  resolved &= RESOLVE(h, a, status_message);
  resolved &= RESOLVE(h, a, status_free);
  resolved &= RESOLVE(h, a, code_name);
  resolved &= RESOLVE(h, a, runtime_options_init_sized);
  resolved &= RESOLVE(h, a, runtime_create);
  resolved &= RESOLVE(h, a, runtime_free);
  resolved &= RESOLVE(h, a, runtime_backend);
  resolved &= RESOLVE(h, a, constant_map_create);
  resolved &= RESOLVE(h, a, constant_map_set);
  resolved &= RESOLVE(h, a, constant_map_free);
  resolved &= RESOLVE(h, a, container_create_from_map);
  resolved &= RESOLVE(h, a, container_update);
  resolved &= RESOLVE(h, a, container_swap);
  resolved &= RESOLVE(h, a, container_generation);
  resolved &= RESOLVE(h, a, container_free);
  resolved &= RESOLVE(h, a, run_begin);
  resolved &= RESOLVE(h, a, run_get_tensor);
  resolved &= RESOLVE(h, a, run_read);
  resolved &= RESOLVE(h, a, run_generation);
  resolved &= RESOLVE(h, a, run_end);
  if (!resolved || !drive(&a)) return 1;
  printf("dlopen: wharf %s, %d symbols resolved, main calls driven through dlsym\n", a.version(), argc - 2);
  dlclose(h);
  return missing ? 1 : 0;
}
