/* SPDX-License-Identifier: Apache-2.0 */
/* C helpers of the Go binding (compiled by cgo with the package). Each runs a short
 * sequence of wharf.h calls inside one cgo call, so that Go memory passed to it as an
 * argument is used only for the length of that call, as the cgo pointer rules require. */
#ifndef WHARF_GO_HELPERS_H
#define WHARF_GO_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "wharf.h"

/* wharf_constant_map_set with the view's shape and strides passed separately (they may
 * be Go memory: the map copies them). view->shape and view->strides are ignored. */
wharf_status* wharf_go_map_set(wharf_constant_map* map, const char* fqn, const wharf_tensor_view* view,
                               const int64_t* shape, const int64_t* strides);

/* The update options the Go binding passes (a struct without pointers, so it may be Go
 * memory): fold_handle != 0 installs the Go fold trampoline (a runtime/cgo.Handle passed
 * back to wharfGoFold); in_place_max_wait_ms < 0 keeps the library's default. */
typedef struct wharf_go_update_args {
  int32_t target;
  int32_t require_full;
  uintptr_t fold_handle;
  uintptr_t wait_stream; /* a cudaStream_t, 0 = none */
  int64_t in_place_max_wait_ms;
  uintptr_t progress_handle; /* != 0: the Go progress trampoline (wharfGoProgress) */
} wharf_go_update_args;

/* Fills o (a caller's struct, initialised here) from args. */
void wharf_go_update_options(wharf_update_options* o, const wharf_go_update_args* args);

/* wharf_container_update with the options of args. */
wharf_status* wharf_go_update(wharf_container* container, const wharf_constant_map* map,
                              const wharf_go_update_args* args);

/* Builds a temporary map of n host tensors stored in buf (tensor i: name names[i] taken
 * from the NUL-separated `names`, dtype dtypes[i], ndims[i] dimensions taken in order from
 * `shapes`, data at buf + offsets[i]), updates the container from it and frees the map,
 * all before returning. buf may be Go memory. Bounds were checked by the caller. */
wharf_status* wharf_go_update_packed(wharf_container* container, void* buf, const char* names,
                                     const int32_t* dtypes, const int32_t* ndims, const int64_t* shapes,
                                     const uint64_t* offsets, size_t n, const wharf_go_update_args* args);

/* wharf_weight_store_update with the options of args. */
wharf_status* wharf_go_store_update(wharf_weight_store* store, const wharf_constant_map* map,
                                    const wharf_go_update_args* args);

/* wharf_container_update_from_file and wharf_weight_store_update_from_file with the
 * options of args. */
wharf_status* wharf_go_update_from_file(wharf_container* container, const char* path,
                                        const wharf_go_update_args* args);
wharf_status* wharf_go_store_update_from_file(wharf_weight_store* store, const char* path,
                                              const wharf_go_update_args* args);

/* wharf_go_update_packed for a weight store: the same temporary map, passed to
 * wharf_weight_store_update. */
wharf_status* wharf_go_store_update_packed(wharf_weight_store* store, void* buf, const char* names,
                                           const int32_t* dtypes, const int32_t* ndims, const int64_t* shapes,
                                           const uint64_t* offsets, size_t n, const wharf_go_update_args* args);

/* wharf_container_bind_user_constant with the Go release trampoline (wharfGoRelease
 * receives release_handle). */
wharf_status* wharf_go_bind(wharf_container* container, const char* fqn, const wharf_tensor_view* view,
                            const int64_t* shape, uintptr_t release_handle);

/* The progress callback of the Go binding: calls wharfGoProgress with user as its
 * runtime/cgo.Handle. */
int32_t wharf_go_progress(uint64_t done, uint64_t total, void* user);

/* Installs wharf_go_progress with the handle h in container options (model options, of
 * the experimental tier: model.go's preamble). */
void wharf_go_container_progress(wharf_container_options* o, uintptr_t h);

/* Routes the library's log lines to wharfGoLog (enable != 0) or restores the default. */
void wharf_go_set_log(int enable, wharf_log_level min_level);

#endif
