/* A C99 program over the public API, linked against libwharf.so: what a C runtime does. */
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
  st = wharf_runtime_memory_stats(rt, &stats);
  CHECK(st == NULL && stats.device_current == 0);

  CHECK(wharf_constant_map_create(&map) == NULL);
  memset(&v, 0, sizeof(v));
  v.data = data;
  v.dtype = WHARF_DTYPE_F32;
  v.device_type = WHARF_DEVICE_CPU;
  v.ndim = 2;
  v.shape = shape;
  CHECK(wharf_constant_map_set(map, "w", &v) == NULL);
  st = wharf_constant_map_set(map, "w", &v);
  CHECK(wharf_status_code(st) == WHARF_ALREADY_EXISTS);
  wharf_status_free(st);
  CHECK(wharf_constant_map_size(map) == 1);
  CHECK(wharf_constant_map_find(map, "w", &found) == NULL);
  CHECK(found.data == data && found.ndim == 2 && found.shape[1] == 3 && found.strides == NULL);

  wharf_constant_map_free(map);
  wharf_runtime_free(rt);
  wharf_runtime_free(NULL);
  wharf_constant_map_free(NULL);

  printf("c99_api: %d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
