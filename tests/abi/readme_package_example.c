/* SPDX-License-Identifier: Apache-2.0 */
/* The model package example of README.md ("Load a package"), compiled as strict C99 by ctest
 * (target wharf_readme_package_example) and run on the GPU machine against a package
 * (scripts/gpu-run.sh: `readme_package_example PACKAGE_DIR 1,2,3 N` prints the tokens).
 *
 * README.md quotes generate() below verbatim (test `readme_package_snippet`): change both
 * together. The prelude (includes, TRY, which prints a failed call's status and returns 1)
 * and main() are this file's only. Leaks on error paths are accepted in an example. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHARF_EXPERIMENTAL
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

/* Greedy decoding: n tokens after the prompt's len, into out. */
static int generate(wharf_runtime* rt, const char* dir, const int64_t* prompt, int64_t len, int64_t* out, int n) {
  wharf_model_package* pkg = NULL;
  wharf_model *prefill = NULL, *decode = NULL;
  wharf_session* session = NULL;
  wharf_model_package_tensor_info logits_info;
  float* logits;
  int64_t vocab, i, k, pos[1024];
  int step;

  /* One call: the manifest and every file checked, the weights read once into a weight
   * store, each method loaded over it, the KV caches declared from the manifest. */
  TRY(wharf_model_package_load(rt, dir, NULL, &pkg));
  TRY(wharf_model_package_get_method(pkg, "prefill", &prefill));
  TRY(wharf_model_package_get_method(pkg, "decode", &decode));
  memset(&logits_info, 0, sizeof logits_info);
  logits_info.struct_size = sizeof logits_info;
  TRY(wharf_model_package_get_method_output(pkg, 0, 0, &logits_info));
  vocab = logits_info.shape[logits_info.ndim - 1];
  logits = malloc((size_t)vocab * sizeof *logits);
  if (!logits || len > 1024) return 1;

  /* A session is one conversation: its KV cache is shared by prefill and decode. */
  TRY(wharf_model_package_create_session(pkg, NULL, &session));
  for (step = 0; step < n; ++step) {
    wharf_model* method = step == 0 ? prefill : decode; /* the prompt, then one token */
    int64_t count = step == 0 ? len : 1;
    int64_t ids_shape[2] = {1, 0}, pos_shape[1];
    wharf_tensor_view in[2], logits_view;
    wharf_run* run = NULL;
    const float* last;
    for (i = 0; i < count; ++i) pos[i] = step == 0 ? i : len + step - 1;
    ids_shape[1] = pos_shape[0] = count;
    memset(in, 0, sizeof in);
    memset(&logits_view, 0, sizeof logits_view);
    in[0].struct_size = in[1].struct_size = logits_view.struct_size = sizeof logits_view;
    in[0].data = (void*)(step == 0 ? prompt : &out[step - 1]); /* host memory is fine */
    in[0].dtype = in[1].dtype = WHARF_DTYPE_I64;
    in[0].device_type = in[1].device_type = WHARF_DEVICE_CPU;
    in[0].ndim = 2;
    in[0].shape = ids_shape;
    in[1].data = pos;
    in[1].ndim = 1;
    in[1].shape = pos_shape;

    TRY(wharf_run_begin(wharf_model_container(method), session, NULL, &run));
    TRY(wharf_model_run(method, run, in, 2, &logits_view, 1));
    /* The last position's logits to the host; the next token is their argmax. */
    last = (const float*)logits_view.data + (logits_view.shape[1] - 1) * vocab;
    TRY(wharf_run_copy(run, logits, last, (uint64_t)vocab * sizeof *logits));
    TRY(wharf_run_end(run));
    for (k = 0, i = 1; i < vocab; ++i)
      if (logits[i] > logits[k]) k = i;
    out[step] = k;
  }
  /* A hot update would go here, between any two steps, reaching both methods at once:
   * wharf_weight_store_update_from_file(wharf_model_package_store(pkg), "new.safetensors",
   * NULL), then wharf_weight_store_swap(wharf_model_package_store(pkg)). */
  free(logits);
  wharf_session_free(session);
  wharf_model_free(prefill);
  wharf_model_free(decode);
  wharf_model_package_free(pkg);
  return 0;
}

int main(int argc, char** argv) {
  wharf_runtime_options ro;
  wharf_runtime* rt = NULL;
  int64_t prompt[1024], out[1024];
  int64_t len = 0;
  int n, i, rc;
  const char* p;
  if (argc != 4) {
    fprintf(stderr, "usage: %s PACKAGE_DIR 1,2,3 NEW_TOKENS\n", argv[0]);
    return argc == 1 ? 0 : 2; /* with no argument (ctest): compiled is enough */
  }
  for (p = argv[2]; *p && len < 1024; ++len) {
    prompt[len] = strtoll(p, (char**)&p, 10);
    if (*p == ',') ++p;
  }
  n = atoi(argv[3]);
  if (n < 1 || n > 1024) return 2;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  TRY(wharf_runtime_create(&ro, &rt));
  rc = generate(rt, argv[1], prompt, len, out, n);
  for (i = 0; rc == 0 && i < n; ++i) printf("%s%lld", i ? "," : "", (long long)out[i]);
  if (rc == 0) printf("\n");
  wharf_runtime_free(rt);
  return rc;
}
