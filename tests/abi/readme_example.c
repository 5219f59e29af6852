/* SPDX-License-Identifier: Apache-2.0 */
/* The C example of README.md, compiled and run by ctest (test `readme_example`).
 *
 * README.md quotes main() below verbatim, and the test `readme_c_snippet` fails when the two
 * differ: change both together. What main() leaves out is only this file's prelude: the
 * includes and TRY, which prints a failed call's status and makes the program fail.
 *
 * It loads a two-constant model from host memory, opens a run, hot-updates one constant
 * into the inactive generation (copy-on-write: only that constant gets new storage), swaps,
 * and shows that new runs see the new weights while the open run keeps the old ones. */
#include <stdio.h>
#include <string.h>

#include "wharf/wharf.h"

#define TRY(call)                                                                  \
  do {                                                                             \
    wharf_status* failed_ = (call);                                                \
    if (failed_) {                                                                 \
      fprintf(stderr, "%s: %s: %s\n", #call, wharf_code_name(wharf_status_code(failed_)), \
              wharf_status_message(failed_));                                      \
      wharf_status_free(failed_);                                                  \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

int main(void) {
  /* Weights in the caller's memory (pageable host here; pinned host or CUDA memory work too). */
  float weight[6] = {1, 2, 3, 4, 5, 6}, bias[3] = {0.5f, 0.5f, 0.5f};
  float fresh[6] = {10, 20, 30, 40, 50, 60}, got[6];
  int64_t weight_shape[2] = {2, 3}, bias_shape[1] = {3};
  wharf_tensor_view v;
  wharf_runtime_options ro;
  wharf_runtime* rt = NULL;
  wharf_constant_map* map = NULL;
  wharf_container* model = NULL;
  wharf_run *before = NULL, *after = NULL;
  wharf_memory_stats mem;
  wharf_status* st;

  /* 1. A runtime: a CUDA GPU when one is usable, the host backend otherwise. */
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_AUTO;
  TRY(wharf_runtime_create(&ro, &rt));

  /* 2. A constant map names borrowed tensors: FQN -> (data, dtype, shape, device). */
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v; /* every struct says its size first */
  v.dtype = WHARF_DTYPE_F32;
  v.device_type = WHARF_DEVICE_CPU;
  TRY(wharf_constant_map_create(&map));
  v.data = weight; v.ndim = 2; v.shape = weight_shape;
  TRY(wharf_constant_map_set(map, "layers.0.weight", &v));
  v.data = bias; v.ndim = 1; v.shape = bias_shape;
  TRY(wharf_constant_map_set(map, "layers.0.bias", &v));

  /* 3. A container declared from the map, loaded and made active (generation 1). */
  TRY(wharf_container_create_from_map(rt, map, NULL, &model));
  wharf_constant_map_free(map); /* borrowed only for the call */

  /* 4. A run pins the active generation until wharf_run_end. Kernels would use the device
   *    pointers from wharf_run_get_tensor on wharf_run_stream(run); here we read bytes back. */
  TRY(wharf_run_begin(model, NULL, NULL, &before));
  TRY(wharf_run_read(before, "layers.0.weight", 0, got, sizeof got));
  printf("generation %llu: weight[0] = %g\n", (unsigned long long)wharf_run_generation(before), got[0]);

  /* 5. Hot update of one constant into the inactive generation, then an O(1) swap. The
   *    bias is not copied: the new generation shares its storage with the old one. */
  TRY(wharf_constant_map_create(&map));
  v.data = fresh; v.ndim = 2; v.shape = weight_shape;
  TRY(wharf_constant_map_set(map, "layers.0.weight", &v));
  TRY(wharf_container_update(model, map, NULL));
  TRY(wharf_container_swap(model));
  wharf_constant_map_free(map);

  memset(&mem, 0, sizeof mem);
  mem.struct_size = sizeof mem;
  TRY(wharf_runtime_get_memory_stats(rt, &mem));
  printf("constants: %llu bytes (36 loaded + 24 updated)\n",
         (unsigned long long)mem.current[WHARF_MEM_CONSTANTS]);
  if (mem.current[WHARF_MEM_CONSTANTS] != 60) return 1;

  /* 6. New runs see the new weights; the open run still reads the generation it pinned. */
  TRY(wharf_run_begin(model, NULL, NULL, &after));
  TRY(wharf_run_read(after, "layers.0.weight", 0, got, sizeof got));
  printf("generation %llu: weight[0] = %g\n", (unsigned long long)wharf_run_generation(after), got[0]);
  if (got[0] != 10) return 1;
  TRY(wharf_run_read(before, "layers.0.weight", 0, got, sizeof got));
  printf("the open run still reads weight[0] = %g\n", got[0]);
  if (got[0] != 1) return 1;
  TRY(wharf_run_end(after));
  TRY(wharf_run_end(before));

  /* 7. Errors are values: a status with a code and a message naming the fault. Everything
   *    is validated before anything is copied, so a bad map changes nothing. */
  TRY(wharf_constant_map_create(&map));
  v.data = bias; v.ndim = 1; v.shape = bias_shape; /* the bias's shape under the weight's name */
  TRY(wharf_constant_map_set(map, "layers.0.weight", &v));
  st = wharf_container_update(model, map, NULL);
  printf("%s: %s\n", wharf_code_name(wharf_status_code(st)), wharf_status_message(st));
  if (wharf_status_code(st) != WHARF_INVALID_ARGUMENT) return 1;
  wharf_status_free(st);
  wharf_constant_map_free(map);

  wharf_container_free(model);
  wharf_runtime_free(rt);
  return 0;
}
