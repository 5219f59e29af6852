/* SPDX-License-Identifier: Apache-2.0 */
/* ABI across releases: a C program compiled against the 0.3.0 header, the first promised ABI
 * (tests/abi/wharf-0.3.0.h, seen here as wharf/wharf.h), and run against the library built
 * now (test `abi_old_header`).
 *
 * An existing binary keeps its structs, enum values and calling conventions; this test is
 * such a binary. It drives the stable API the way a C runtime does (host backend, so it runs
 * anywhere): versions, option structs with the 0.3.0 struct_size (and a shorter one), constant
 * maps, safetensors save/load/update from a file, containers (create_from_map, create with
 * declarations and states), updates into the inactive generation and in place, swap and
 * rollback, free_inactive, fold and release callbacks (the fold's read-only marks), runs
 * (begin, get_tensor, read, end), sessions, memory stats, and errors (codes, messages, statuses
 * made by callers, NULL-safe frees). When a later release changes wharf.h, this file and the
 * frozen header stay as they are: they are the 0.3.0 caller. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wharf/wharf.h"

#if WHARF_VERSION_NUMBER != 300 || WHARF_ABI_VERSION != 1
#error "old_header_test must be compiled against tests/abi/wharf-0.3.0.h"
#endif

static int failures = 0, passes = 0;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      ++passes;                                                                \
    } else {                                                                   \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* Expects success; prints the status otherwise. */
static int ok(wharf_status* st, const char* what) {
  if (!st) {
    ++passes;
    return 1;
  }
  ++failures;
  fprintf(stderr, "%s: %s: %s\n", what, wharf_code_name(wharf_status_code(st)), wharf_status_message(st));
  wharf_status_free(st);
  return 0;
}

/* Expects `code`, and a message containing `needle`. */
static void expect(wharf_status* st, wharf_code code, const char* needle, const char* what) {
  if (wharf_status_code(st) != code || !strstr(wharf_status_message(st), needle)) {
    ++failures;
    fprintf(stderr, "%s: expected %s mentioning '%s', got %s: %s\n", what, wharf_code_name(code), needle,
            wharf_code_name(wharf_status_code(st)), wharf_status_message(st));
  } else {
    ++passes;
  }
  wharf_status_free(st);
}

static wharf_tensor_view f32_view(float* data, int32_t ndim, const int64_t* shape) {
  wharf_tensor_view v;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.data = data;
  v.dtype = WHARF_DTYPE_F32;
  v.device_type = WHARF_DEVICE_CPU;
  v.ndim = ndim;
  v.shape = shape;
  return v;
}

static float read_first(wharf_container* c, const char* fqn) {
  wharf_run* run = NULL;
  float x = -1;
  if (!ok(wharf_run_begin(c, NULL, NULL, &run), "run_begin")) return -1;
  ok(wharf_run_read(run, fqn, 0, &x, sizeof x), "run_read");
  ok(wharf_run_end(run), "run_end");
  return x;
}

/* Fold: "scaled" = 2 * "w" (the host backend's storage is host memory). */
static wharf_status* fold_double(wharf_run* target, void* user) {
  wharf_tensor_view w, s;
  wharf_status* st;
  int64_t i;
  ++*(int*)user;
  w.struct_size = s.struct_size = sizeof(wharf_tensor_view);
  if ((st = wharf_run_get_tensor(target, "w", &w)) != NULL) return st;
  if ((st = wharf_run_get_tensor(target, "scaled", &s)) != NULL) return st;
  /* "w" was written by this update and "scaled" is derived: both may be written. */
  if ((w.flags & WHARF_VIEW_READ_ONLY) || (s.flags & WHARF_VIEW_READ_ONLY))
    return wharf_status_create(WHARF_INTERNAL, "a fold's written or derived constant is marked read-only");
  for (i = 0; i < w.shape[0]; ++i) ((float*)s.data)[i] = 2 * ((const float*)w.data)[i];
  return NULL;
}

static void count_release(void* data, void* user) {
  (void)data;
  ++*(int*)user;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : ".";
  char path[4096];
  wharf_runtime_options ro;
  wharf_runtime* rt = NULL;
  wharf_device_info info;
  wharf_memory_stats mem;
  wharf_constant_map *map = NULL, *loaded = NULL, *bad = NULL;
  wharf_container* model = NULL;
  wharf_run *run = NULL, *old_run = NULL;
  wharf_tensor_view v, got;
  wharf_update_options uo;
  wharf_constant_info ci;
  float w[4] = {1, 2, 3, 4}, b[2] = {5, 6}, w2[4] = {10, 20, 30, 40}, w3[4] = {7, 7, 7, 7};
  float back[4];
  int64_t shape_w[2] = {2, 2}, shape_b[1] = {2}, shape_bad[1] = {4};
  uint64_t g1, g2;
  const char* fqn = NULL;

  /* Versions: same ABI major, a library at least as new as this header. */
  CHECK(wharf_abi_version() == WHARF_ABI_VERSION);
  {
    int major = -1, minor = -1;
    CHECK(sscanf(wharf_version(), "%d.%d", &major, &minor) == 2);
    CHECK(major > WHARF_VERSION_MAJOR || (major == WHARF_VERSION_MAJOR && minor >= WHARF_VERSION_MINOR));
  }
  CHECK(wharf_version_number() >= (uint32_t)WHARF_VERSION_NUMBER);
  CHECK(strcmp(wharf_code_name(WHARF_BUSY), "BUSY") == 0);
  {
    wharf_status* made = wharf_status_create(WHARF_RESOURCE_EXHAUSTED, "made by the caller");
    CHECK(wharf_status_code(made) == WHARF_RESOURCE_EXHAUSTED && strcmp(wharf_status_message(made), "made by the caller") == 0);
    wharf_status_free(made);
    CHECK(wharf_status_create(WHARF_OK, "fine") == NULL);
  }
  {
    /* A newer library must not write past a struct of this (older) header's size. */
    struct {
      wharf_container_options o;
      unsigned char canary[64];
    } guarded;
    size_t i;
    int intact = 1;
    memset(&guarded, 0xAB, sizeof guarded);
    wharf_container_options_init(&guarded.o);
    for (i = 0; i < sizeof guarded.canary; ++i) intact &= guarded.canary[i] == 0xAB;
    CHECK(intact);
    CHECK(guarded.o.struct_size == sizeof(wharf_container_options));
  }
  CHECK(wharf_dtype_size(WHARF_DTYPE_BF16) == 2 && wharf_dtype_size(WHARF_DTYPE_I64) == 8);

  /* A runtime from options whose struct_size stops before device_memory_limit: the fields it
   * does not cover take their defaults. */
  wharf_runtime_options_init(&ro);
  CHECK(ro.struct_size == sizeof ro && ro.backend == WHARF_BACKEND_AUTO);
  ro.backend = WHARF_BACKEND_HOST;
  ro.device_memory_limit = 1; /* not covered below, so ignored */
  ro.struct_size = (uint32_t)offsetof(wharf_runtime_options, device_memory_limit);
  if (!ok(wharf_runtime_create(&ro, &rt), "runtime_create (short struct)")) return 1;
  CHECK(wharf_runtime_backend(rt) == WHARF_BACKEND_HOST);
  wharf_runtime_free(rt);
  rt = NULL;

  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_HOST;
  ro.copy_threads = 2;
  if (!ok(wharf_runtime_create(&ro, &rt), "runtime_create")) return 1;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ok(wharf_runtime_get_device_info(rt, &info), "device_info");
  CHECK(info.backend == WHARF_BACKEND_HOST && info.compute_major == 0 && info.total_memory > 0);

  /* Constant maps. */
  ok(wharf_constant_map_create(&map), "map_create");
  v = f32_view(w, 2, shape_w);
  ok(wharf_constant_map_set(map, "layers.0.weight", &v), "map_set w");
  v = f32_view(b, 1, shape_b);
  ok(wharf_constant_map_set(map, "layers.0.bias", &v), "map_set b");
  expect(wharf_constant_map_set(map, "layers.0.bias", &v), WHARF_ALREADY_EXISTS, "layers.0.bias", "duplicate");
  CHECK(wharf_constant_map_num_entries(map) == 2);
  ok(wharf_constant_map_get_entry(map, 1, &fqn, &got), "map_entry");
  CHECK(fqn && strcmp(fqn, "layers.0.bias") == 0 && got.data == b && got.shape[0] == 2);
  expect(wharf_constant_map_find(map, "nope", &got), WHARF_NOT_FOUND, "nope", "map_find");

  /* Safetensors round trip. */
  snprintf(path, sizeof path, "%s/abi_old_header_0_3.safetensors", dir);
  ok(wharf_constant_map_save_safetensors(map, path), "save");
  ok(wharf_constant_map_load_safetensors(path, &loaded), "load");
  CHECK(wharf_constant_map_num_entries(loaded) == 2);
  ok(wharf_constant_map_find(loaded, "layers.0.weight", &got), "find loaded");
  CHECK(got.dtype == WHARF_DTYPE_F32 && got.ndim == 2 && ((const float*)got.data)[3] == 4);
  expect(wharf_constant_map_load_safetensors("/nonexistent/x.safetensors", &bad), WHARF_NOT_FOUND,
         "x.safetensors", "load missing");

  /* A container from the loaded file: ready to run, generation 1. */
  if (!ok(wharf_container_create_from_map(rt, loaded, NULL, &model), "create_from_map")) return 1;
  wharf_constant_map_free(loaded);
  remove(path);
  CHECK(wharf_container_num_constants(model) == 2);
  g1 = wharf_container_generation(model);
  CHECK(g1 != 0);
  memset(&ci, 0, sizeof ci);
  ci.struct_size = sizeof ci;
  ok(wharf_container_get_constant_info(model, 0, &ci), "constant_info");
  CHECK(ci.fqn && (strcmp(ci.fqn, "layers.0.weight") == 0 ? ci.nbytes == 16 : ci.nbytes == 8) && ci.placement == WHARF_PLACEMENT_DEVICE);
  expect(wharf_container_get_constant_info(model, 2, &ci), WHARF_INVALID_ARGUMENT, "", "constant_info past end");

  /* A run resolves constants and reads them. */
  ok(wharf_run_begin(model, NULL, NULL, &old_run), "run_begin");
  CHECK(wharf_run_generation(old_run) == g1 && wharf_run_stream(old_run) == NULL);
  ok(wharf_run_get_tensor(old_run, "layers.0.bias", &got), "run_tensor");
  CHECK(got.dtype == WHARF_DTYPE_F32 && got.ndim == 1 && got.shape[0] == 2 && got.device_type == WHARF_DEVICE_CPU);
  CHECK(got.flags == WHARF_VIEW_READ_ONLY); /* a run's constants are shared: read-only */
  expect(wharf_run_get_tensor(old_run, "missing", &got), WHARF_NOT_FOUND, "missing", "run_tensor");
  ok(wharf_run_read(old_run, "layers.0.weight", 0, back, sizeof back), "run_read");
  CHECK(back[0] == 1 && back[3] == 4);
  expect(wharf_run_read(old_run, "layers.0.weight", 8, back, 16), WHARF_INVALID_ARGUMENT, "layers.0.weight",
         "read past end");

  /* Update one constant into the inactive generation, swap: new runs see it, the open run
   * keeps its generation. Extra constant memory is the updated bytes only. */
  wharf_constant_map_free(map);
  ok(wharf_constant_map_create(&map), "map_create 2");
  v = f32_view(w2, 2, shape_w);
  ok(wharf_constant_map_set(map, "layers.0.weight", &v), "map_set w2");
  wharf_update_options_init(&uo);
  CHECK(uo.struct_size == sizeof uo && uo.target == WHARF_TARGET_INACTIVE && uo.fold == NULL);
  ok(wharf_container_update(model, map, &uo), "update");
  memset(&mem, 0, sizeof mem);
  mem.struct_size = sizeof mem;
  ok(wharf_runtime_get_memory_stats(rt, &mem), "memory_stats");
  CHECK(mem.current[WHARF_MEM_CONSTANTS] == 24 + 16);
  ok(wharf_container_swap(model), "swap");
  g2 = wharf_container_generation(model);
  CHECK(g2 != g1);
  CHECK(read_first(model, "layers.0.weight") == 10);
  CHECK(read_first(model, "layers.0.bias") == 5); /* shared, not copied */
  ok(wharf_run_read(old_run, "layers.0.weight", 0, back, sizeof back), "old run read");
  CHECK(back[0] == 1);
  ok(wharf_run_end(old_run), "run_end old");
  CHECK(wharf_run_end(NULL) == NULL);

  /* Swapping again without an update rolls back; free_inactive leaves nothing to swap. */
  ok(wharf_container_swap(model), "swap back");
  CHECK(read_first(model, "layers.0.weight") == 1);
  ok(wharf_container_swap(model), "swap forward");
  CHECK(read_first(model, "layers.0.weight") == 10);
  ok(wharf_container_free_inactive(model), "free_inactive");
  expect(wharf_container_swap(model), WHARF_FAILED_PRECONDITION, "", "swap with nothing staged");

  /* In place: published at once under a new generation id; runs begun afterwards see the new
   * data. */
  wharf_constant_map_free(map);
  ok(wharf_constant_map_create(&map), "map_create 3");
  v = f32_view(w3, 2, shape_w);
  ok(wharf_constant_map_set(map, "layers.0.weight", &v), "map_set w3");
  uo.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  g2 = wharf_container_generation(model);
  ok(wharf_container_update(model, map, &uo), "update in place");
  CHECK(wharf_container_generation(model) > g2); /* no swap needed */
  CHECK(read_first(model, "layers.0.weight") == 7);

  /* Errors change nothing: wrong shape, unknown name, wrong dtype. */
  ok(wharf_constant_map_create(&bad), "map_create bad");
  v = f32_view(w2, 1, shape_bad);
  ok(wharf_constant_map_set(bad, "layers.0.weight", &v), "map_set bad");
  uo.target = WHARF_TARGET_INACTIVE;
  expect(wharf_container_update(model, bad, &uo), WHARF_INVALID_ARGUMENT, "layers.0.weight", "wrong shape");
  wharf_constant_map_free(bad);
  ok(wharf_constant_map_create(&bad), "map_create bad 2");
  v = f32_view(w2, 1, shape_b);
  ok(wharf_constant_map_set(bad, "layers.9.bias", &v), "map_set unknown");
  expect(wharf_container_update(model, bad, &uo), WHARF_NOT_FOUND, "layers.9.bias", "unknown fqn");
  wharf_constant_map_free(bad);
  bad = NULL;
  CHECK(read_first(model, "layers.0.weight") == 7);
  wharf_container_free(model);
  model = NULL;

  /* A container from declarations with a derived constant and a fold callback, then a
   * user-managed constant with a release callback. */
  {
    int64_t shape4[1] = {4};
    wharf_constant_decl decls[2];
    wharf_container_options co;
    int folds = 0, releases = 0;
    float user_mem[4] = {9, 9, 9, 9};
    memset(decls, 0, sizeof decls);
    decls[0].struct_size = sizeof decls[0];
    decls[0].fqn = "w";
    decls[0].dtype = WHARF_DTYPE_F32;
    decls[0].ndim = 1;
    decls[0].shape = shape4;
    decls[1] = decls[0];
    decls[1].fqn = "scaled";
    decls[1].flags = WHARF_CONSTANT_DERIVED;
    wharf_container_options_init(&co);
    co.name = "folded";
    co.constants = decls;
    co.num_constants = 2;
    if (ok(wharf_container_create(rt, &co, &model), "container_create")) {
      expect(wharf_run_begin(model, NULL, NULL, &run), WHARF_FAILED_PRECONDITION, "", "run before weights");
      wharf_constant_map_free(map);
      ok(wharf_constant_map_create(&map), "map_create 4");
      v = f32_view(w, 1, shape4);
      ok(wharf_constant_map_set(map, "w", &v), "map_set w");
      wharf_update_options_init(&uo);
      expect(wharf_container_update(model, map, &uo), WHARF_INVALID_ARGUMENT, "fold", "derived without fold");
      uo.fold = fold_double;
      uo.fold_user = &folds;
      uo.require_full = 1;
      ok(wharf_container_update(model, map, &uo), "update with fold");
      CHECK(folds == 1);
      ok(wharf_container_swap(model), "swap folded");
      ok(wharf_run_begin(model, NULL, NULL, &run), "run folded");
      ok(wharf_run_read(run, "scaled", 0, back, sizeof back), "read scaled");
      CHECK(back[0] == 2 && back[3] == 8);
      ok(wharf_run_end(run), "end folded");
      /* Containers with derived constants refuse bound user memory (bind through a fold). */
      v = f32_view(user_mem, 1, shape4);
      expect(wharf_container_bind_user_constant(model, "w", &v, count_release, &releases),
             WHARF_FAILED_PRECONDITION, "derived", "bind with derived");
      CHECK(releases == 0);
      wharf_container_free(model);
      model = NULL;
    }

    /* Bound user memory: used without a copy, released once nothing references it. */
    co.num_constants = 1;
    if (ok(wharf_container_create(rt, &co, &model), "container_create user")) {
      v = f32_view(user_mem, 1, shape4);
      ok(wharf_container_bind_user_constant(model, "w", &v, count_release, &releases), "bind");
      ok(wharf_container_swap(model), "swap bound");
      ok(wharf_run_begin(model, NULL, NULL, &run), "run bound");
      ok(wharf_run_get_tensor(run, "w", &got), "tensor bound");
      CHECK(got.data == (void*)user_mem);
      ok(wharf_run_end(run), "end bound");
      CHECK(releases == 0);
      wharf_container_free(model);
      model = NULL;
      ok(wharf_runtime_synchronize(rt), "synchronize");
      CHECK(releases == 1);
    }
  }

  /* A container with session state, updated from a safetensors file. */
  {
    int64_t shape4[1] = {4}, shape2[1] = {2};
    wharf_constant_decl d;
    wharf_state_decl sd;
    wharf_container_options co;
    wharf_session* session = NULL;
    wharf_state_info si;
    float five[4] = {5, 5, 5, 5}, st_back[2] = {1, 1};
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.fqn = "w";
    d.dtype = WHARF_DTYPE_F32;
    d.ndim = 1;
    d.shape = shape4;
    memset(&sd, 0, sizeof sd);
    sd.struct_size = sizeof sd;
    sd.fqn = "kv";
    sd.dtype = WHARF_DTYPE_F32;
    sd.ndim = 1;
    sd.shape = shape2;
    wharf_container_options_init(&co);
    co.name = "stateful";
    co.constants = &d;
    co.num_constants = 1;
    co.states = &sd;
    co.num_states = 1;
    if (ok(wharf_container_create(rt, &co, &model), "container_create stateful")) {
      CHECK(strcmp(wharf_container_name(model), "stateful") == 0 && wharf_container_num_states(model) == 1);
      memset(&si, 0, sizeof si);
      si.struct_size = sizeof si;
      ok(wharf_container_get_state_info(model, 0, &si), "state_info");
      CHECK(strcmp(si.fqn, "kv") == 0 && si.nbytes == 8);
      wharf_constant_map_free(map);
      ok(wharf_constant_map_create(&map), "map_create 5");
      v = f32_view(five, 1, shape4);
      ok(wharf_constant_map_set(map, "w", &v), "map_set five");
      snprintf(path, sizeof path, "%s/abi_old_header_0_3_update.safetensors", dir);
      ok(wharf_constant_map_save_safetensors(map, path), "save update");
      ok(wharf_container_update_from_file(model, path, NULL), "update_from_file");
      remove(path);
      ok(wharf_container_swap(model), "swap stateful");
      expect(wharf_run_begin(model, NULL, NULL, &run), WHARF_FAILED_PRECONDITION, "", "run without a session");
      ok(wharf_session_create(rt, &model, 1, NULL, &session), "session_create");
      if (ok(wharf_run_begin(model, session, NULL, &run), "run with session")) {
        ok(wharf_run_read(run, "kv", 0, st_back, sizeof st_back), "read state");
        CHECK(st_back[0] == 0 && st_back[1] == 0); /* zeros: no initial value */
        ok(wharf_run_read(run, "w", 0, back, sizeof back), "read w");
        CHECK(back[0] == 5);
        ok(wharf_run_end(run), "end stateful");
      }
      CHECK(wharf_session_state_bytes(session) == 8);
      ok(wharf_session_reset(session), "session_reset");
      wharf_session_free(session);
      wharf_container_free(model);
      model = NULL;
    }
  }

  /* NULL-safe frees and NULL statuses. */
  wharf_constant_map_free(map);
  wharf_constant_map_free(NULL);
  wharf_container_free(NULL);
  wharf_runtime_free(rt);
  wharf_runtime_free(NULL);
  wharf_status_free(NULL);
  CHECK(wharf_status_code(NULL) == WHARF_OK && strcmp(wharf_status_message(NULL), "") == 0);

  printf("abi_old_header: header 0.3.0 (ABI %d) against library %s (ABI %u): %d passed, %d failed\n",
         WHARF_ABI_VERSION, wharf_version(), wharf_abi_version(), passes, failures);
  return failures ? 1 : 0;
}
