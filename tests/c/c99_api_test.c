/* SPDX-License-Identifier: Apache-2.0 */
/* A C99 program over the public API, linked against libwharf.so: what a C runtime does.
 * It sees the experimental tier too (WHARF_EXPERIMENTAL), so both parts of the header compile
 * as strict C99. */
#define WHARF_EXPERIMENTAL 1
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wharf/wharf.h"

static int failures = 0, passes = 0;
#define CHECK(cond)                                                        \
  do {                                                                     \
    if (cond) {                                                            \
      ++passes;                                                            \
    } else {                                                               \
      ++failures;                                                          \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                      \
  } while (0)

/* A fold that gives up with a status of its own making. */
static wharf_status* giving_up_fold(wharf_run* target, void* user) {
  wharf_tensor_view w = {0};
  wharf_status* st = wharf_run_get_tensor(target, "w", &w);
  if (st) return st;
  *(int*)user += 1;
  return wharf_status_create(WHARF_FAILED_PRECONDITION, "calibration table for 'w' is missing");
}

static void fold_status_reaches_the_caller(wharf_runtime* rt) {
  int64_t shape[1] = {4};
  float w[4] = {1, 2, 3, 4};
  wharf_constant_decl decls[2] = {
      {.fqn = "w", .dtype = WHARF_DTYPE_F32, .ndim = 1, .shape = shape, .struct_size = sizeof(wharf_constant_decl)},
      {.fqn = "w.q", .dtype = WHARF_DTYPE_F32, .ndim = 1, .shape = shape, .flags = WHARF_CONSTANT_DERIVED,
       .struct_size = sizeof(wharf_constant_decl)}};
  wharf_tensor_view v = {.struct_size = sizeof(wharf_tensor_view), .data = w, .dtype = WHARF_DTYPE_F32,
                         .device_type = WHARF_DEVICE_CPU, .ndim = 1, .shape = shape};
  wharf_container_options co;
  wharf_update_options uo;
  wharf_container* c = NULL;
  wharf_constant_map* map = NULL;
  wharf_status* st;
  int calls = 0;

  wharf_container_options_init(&co);
  co.name = "quantised";
  co.constants = decls;
  co.num_constants = 2;
  CHECK(wharf_container_create(rt, &co, &c) == NULL);
  CHECK(strcmp(wharf_container_name(c), "quantised") == 0);
  CHECK(wharf_container_find_constant(c, "w.q") == 1);
  CHECK(wharf_constant_map_create(&map) == NULL);
  CHECK(wharf_constant_map_set(map, "w", &v) == NULL);
  wharf_update_options_init(&uo);
  CHECK(uo.struct_size == sizeof uo && uo.in_place_max_wait_ms == 1000);
  uo.fold = giving_up_fold;
  uo.fold_user = &calls;
  st = wharf_container_update(c, map, &uo);
  CHECK(calls == 1);
  CHECK(wharf_status_code(st) == WHARF_FAILED_PRECONDITION);
  CHECK(strcmp(wharf_status_message(st),
               "container 'quantised': fold callback: calibration table for 'w' is missing") == 0);
  wharf_status_free(st);
  CHECK(wharf_container_has_staged(c) == 0);
  CHECK(wharf_status_create(WHARF_OK, "ignored") == NULL);
  wharf_constant_map_free(map);
  wharf_container_free(c);
}

int main(void) {
  wharf_runtime_options opts;
  wharf_runtime* rt = NULL;
  wharf_memory_stats stats;
  wharf_constant_map* map = NULL;
  wharf_status* st;
  float data[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  wharf_tensor_view v;
  wharf_tensor_view found;
  wharf_dtype dt;

  CHECK(wharf_abi_version() == WHARF_ABI_VERSION);
  CHECK(strlen(wharf_version()) >= 5);
  CHECK(wharf_version_number() == WHARF_VERSION_NUMBER);
  {
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", WHARF_VERSION_MAJOR, WHARF_VERSION_MINOR, WHARF_VERSION_PATCH);
    CHECK(strcmp(wharf_version(), expect) == 0);
  }
  CHECK(wharf_dtype_size(WHARF_DTYPE_BF16) == 2);
  CHECK(strcmp(wharf_dtype_name(WHARF_DTYPE_F8_E4M3), "F8_E4M3") == 0);
  st = wharf_dtype_from_name("I64", &dt);
  CHECK(st == NULL && dt == WHARF_DTYPE_I64);
  st = wharf_dtype_from_name("Q4", &dt);
  CHECK(wharf_status_code(st) == WHARF_NOT_FOUND);
  CHECK(strstr(wharf_status_message(st), "Q4") != NULL);
  wharf_status_free(st);
  CHECK(wharf_status_code(NULL) == WHARF_OK);
  wharf_status_free(NULL);

  wharf_runtime_options_init(&opts);
  opts.backend = WHARF_BACKEND_HOST;
  opts.device_memory_limit = 1 << 20;
  st = wharf_runtime_create(&opts, &rt);
  CHECK(st == NULL);
  wharf_status_free(st);
  if (!rt) return 1;
  CHECK(wharf_runtime_backend(rt) == WHARF_BACKEND_HOST);

  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  st = wharf_runtime_get_memory_stats(rt, &stats);
  CHECK(st == NULL && stats.device_current == 0);

  CHECK(wharf_constant_map_create(&map) == NULL);
  memset(&v, 0, sizeof(v));
  v.struct_size = sizeof(v);
  v.data = data;
  v.dtype = WHARF_DTYPE_F32;
  v.device_type = WHARF_DEVICE_CPU;
  v.ndim = 2;
  v.shape = shape;
  CHECK(wharf_constant_map_set(map, "w", &v) == NULL);
  st = wharf_constant_map_set(map, "w", &v);
  CHECK(wharf_status_code(st) == WHARF_ALREADY_EXISTS);
  wharf_status_free(st);
  CHECK(wharf_constant_map_num_entries(map) == 1);
  memset(&found, 0, sizeof(found));
  CHECK(wharf_constant_map_find(map, "w", &found) == NULL);
  CHECK(found.data == data && found.ndim == 2 && found.shape[1] == 3 && found.strides == NULL);
  CHECK(found.struct_size == sizeof(found) && found.byte_offset == 0);

  fold_status_reaches_the_caller(rt);

  wharf_constant_map_free(map);
  wharf_runtime_free(rt);
  wharf_runtime_free(NULL);
  wharf_constant_map_free(NULL);

  printf("c99_api: %d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
