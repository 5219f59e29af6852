/* SPDX-License-Identifier: Apache-2.0 */
/* A C consumer of an installed Wharf, built by tests/consumers/pkgconfig_consumer.sh (through
 * pkg-config) and cmake_consumer.sh (through find_package): it loads a safetensors file
 * (tests/consumers/model.safetensors: w = [1, 2, 3, 4]), serves it, updates w, swaps and reads w
 * back through a run. Exit status 0 when every step worked. */
#include <stdio.h>
#include <string.h>

#include "wharf/wharf.h"

#define TRY(call)                                                                      \
  do {                                                                                 \
    wharf_status* st_ = (call);                                                        \
    if (st_) {                                                                         \
      fprintf(stderr, "%s: %s\n", #call, wharf_status_message(st_));                  \
      wharf_status_free(st_);                                                          \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

int main(int argc, char** argv) {
  float fresh[4] = {5, 6, 7, 8}, got[4];
  int64_t shape[1] = {4};
  wharf_runtime_options ro;
  wharf_runtime* rt = NULL;
  wharf_constant_map *file = NULL, *update = NULL;
  wharf_container* model = NULL;
  wharf_run* run = NULL;
  wharf_tensor_view v;
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE.safetensors\n", argv[0]);
    return 2;
  }
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_HOST;
  TRY(wharf_runtime_create(&ro, &rt));
  TRY(wharf_constant_map_load_safetensors(argv[1], &file));
  TRY(wharf_container_create_from_map(rt, file, NULL, &model));
  wharf_constant_map_free(file);

  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.data = fresh;
  v.dtype = WHARF_DTYPE_F32;
  v.device_type = WHARF_DEVICE_CPU;
  v.ndim = 1;
  v.shape = shape;
  TRY(wharf_constant_map_create(&update));
  TRY(wharf_constant_map_set(update, "w", &v));
  TRY(wharf_container_update(model, update, NULL));
  wharf_constant_map_free(update);
  TRY(wharf_container_swap(model));

  TRY(wharf_run_begin(model, NULL, NULL, &run));
  TRY(wharf_run_read(run, "w", 0, got, sizeof got));
  printf("wharf %s, generation %llu: w = [%g, %g, %g, %g]\n", wharf_version(),
         (unsigned long long)wharf_run_generation(run), got[0], got[1], got[2], got[3]);
  TRY(wharf_run_end(run));
  wharf_container_free(model);
  wharf_runtime_free(rt);
  return memcmp(got, fresh, sizeof got) == 0 ? 0 : 1;
}
