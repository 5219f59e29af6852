// SPDX-License-Identifier: Apache-2.0
// `wharf demo` on a GPU machine: the committed tiny decoder (an AOTInductor model compiled
// without libtorch, tests/data/models/tiny_decoder) serves two conversations with greedy
// decoding while a quarter of its weights is hot-updated from pageable CPU memory mid-way.
// It checks the first conversation's tokens against PyTorch's up to the update, and prints
// per-token latency, the update's time and the memory peak beside what AOTInductor's
// full-size inactive constant buffer would cost. Public C API only (experimental tier):
// inputs are host memory, outputs are read with wharf_run_copy.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "cli.h"

namespace wharf_cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kVocab = 256;

double ms_since(Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); }

bool file_exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

uint64_t constants_bytes(wharf_runtime* rt, bool peak) {
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  wharf_status_free(wharf_runtime_get_memory_stats(rt, &ms));
  return peak ? ms.peak[WHARF_MEM_CONSTANTS] : ms.current[WHARF_MEM_CONSTANTS];
}

struct Conversation {
  const char* name;
  std::vector<int64_t> prompt;
  std::vector<int64_t> tokens;
  wharf_session* session = nullptr;
  double prefill_ms = 0;
  std::vector<double> step_ms;
};

// One forward of `toks` at positions [pos, pos + n) in `conv`'s session: the argmax of the
// last position's logits, or -1 (the error printed).
int64_t forward(wharf_container* c, wharf_model* model, Conversation& conv, const std::vector<int64_t>& toks,
                int64_t pos, double* ms) {
  const auto t0 = Clock::now();
  wharf_run* run = nullptr;
  if (failed(wharf_run_begin(c, conv.session, nullptr, &run), "beginning a run")) return -1;
  std::vector<int64_t> positions(toks.size());
  for (size_t i = 0; i < toks.size(); ++i) positions[i] = pos + int64_t(i);
  const int64_t tshape[2] = {1, int64_t(toks.size())}, pshape[1] = {int64_t(toks.size())};
  wharf_tensor_view in[2];
  std::memset(in, 0, sizeof in);
  in[0].struct_size = in[1].struct_size = sizeof in[0];
  in[0].data = const_cast<int64_t*>(toks.data());
  in[0].dtype = WHARF_DTYPE_I64;
  in[0].device_type = WHARF_DEVICE_CPU;  // host memory: copied on the run's stream
  in[0].ndim = 2;
  in[0].shape = tshape;
  in[1].data = positions.data();
  in[1].dtype = WHARF_DTYPE_I64;
  in[1].device_type = WHARF_DEVICE_CPU;
  in[1].ndim = 1;
  in[1].shape = pshape;
  wharf_tensor_view out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  int64_t next = -1;
  std::vector<float> last(kVocab);
  if (!failed(wharf_model_run(model, run, in, 2, &out, 1), "running the model") &&
      !failed(wharf_run_copy(run, last.data(), static_cast<const float*>(out.data) + (out.shape[1] - 1) * kVocab,
                             kVocab * sizeof(float)),
              "reading the logits"))
    next = std::max_element(last.begin(), last.end()) - last.begin();
  if (failed(wharf_run_end(run), "ending a run")) next = -1;
  *ms = ms_since(t0);
  return next;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

}  // namespace

std::string find_model_dir(const char* argv0_dir) {
  std::vector<std::string> candidates;
  if (const char* e = std::getenv("WHARF_MODEL_DIR")) candidates.push_back(e);
  if (argv0_dir) candidates.push_back(std::string(argv0_dir) + "/models/tiny_decoder");
#ifdef WHARF_SOURCE_DIR
  candidates.push_back(std::string(WHARF_SOURCE_DIR) + "/tests/data/models/tiny_decoder");
#endif
  for (const std::string& d : candidates)
    if (file_exists(d + "/tiny_decoder.so")) return d;
  return "";
}

// Returns 0 on success, 1 on a failure, 3 when the model cannot load here and 4 when there is
// no usable CUDA device (having said why): the caller then runs the weights-only demo.
int run_model_demo(const std::string& dir) {
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  wharf_status* st = wharf_runtime_create(&ro, &rt);
  if (st) {
    std::printf("(no CUDA device for the model demo: %s)\n\n", wharf_status_message(st));
    wharf_status_free(st);
    return 4;
  }
  wharf_constant_map* weights = nullptr;
  if (failed(wharf_constant_map_load_safetensors((dir + "/tiny_decoder.safetensors").c_str(), &weights), "weights")) {
    wharf_runtime_free(rt);
    return 1;
  }
  // The KV caches start as zeros (they become each conversation's session state).
  const int64_t cache_shape[4] = {1, 4, 64, 16};
  std::vector<float> zeros(4 * 64 * 16, 0.0f);
  for (const char* name : {"layers.0.k_cache", "layers.0.v_cache", "layers.1.k_cache", "layers.1.v_cache"}) {
    wharf_tensor_view v;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.data = zeros.data();
    v.dtype = WHARF_DTYPE_F32;
    v.device_type = WHARF_DEVICE_CPU;
    v.ndim = 4;
    v.shape = cache_shape;
    wharf_status_free(wharf_constant_map_set(weights, name, &v));
  }
  wharf_model_options mo;
  wharf_model_options_init(&mo);
  mo.name = "tiny_decoder";
  wharf_model* model = nullptr;
  const auto tl = Clock::now();
  st = wharf_model_load(rt, (dir + "/tiny_decoder.so").c_str(), weights, &mo, &model);
  if (st) {
    std::printf("(the compiled model cannot run here: %s)\n\n", wharf_status_message(st));
    wharf_status_free(st);
    wharf_constant_map_free(weights);
    wharf_runtime_free(rt);
    return 3;
  }
  const double load_ms = ms_since(tl);
  wharf_container* c = wharf_model_container(model);
  const uint64_t model_bytes = constants_bytes(rt, false);
  std::printf("== wharf %s demo: an AOTInductor model served while its weights change ==\n\n", wharf_version());
  std::printf("model:     %s (compiled without libtorch), %zu parameters, %zu state tensors per conversation\n",
              (dir + "/tiny_decoder.so").c_str(), wharf_container_num_constants(c), wharf_container_num_states(c));
  std::printf("loaded:    %s of weights in %.1f ms\n\n", human_bytes(model_bytes).c_str(), load_ms);

  wharf_constant_map* ref = nullptr;
  std::vector<int64_t> want;
  Conversation a{"conversation A", {}, {}, nullptr, 0, {}}, b{"conversation B", {5, 9, 200, 33, 7}, {}, nullptr, 0, {}};
  if (!failed(wharf_constant_map_load_safetensors((dir + "/reference.safetensors").c_str(), &ref), "reference")) {
    wharf_tensor_view pv, tv;
    std::memset(&pv, 0, sizeof pv);
    std::memset(&tv, 0, sizeof tv);
    pv.struct_size = tv.struct_size = sizeof pv;
    if (!wharf_constant_map_find(ref, "prompt", &pv) && !wharf_constant_map_find(ref, "tokens", &tv)) {
      a.prompt.assign(static_cast<const int64_t*>(pv.data), static_cast<const int64_t*>(pv.data) + pv.shape[1]);
      want.assign(static_cast<const int64_t*>(tv.data), static_cast<const int64_t*>(tv.data) + tv.shape[0]);
    }
  }
  int rc = 0;
  for (Conversation* conv : {&a, &b})
    if (failed(wharf_session_create(rt, &c, 1, nullptr, &conv->session), "creating a session")) rc = 1;
  const int before_update = int(want.size()), total = 2 * before_update;
  double update_ms = 0;
  uint64_t updated_bytes = 0, peak_extra = 0;
  for (int step = 0; step < total && rc == 0; ++step) {
    if (step == before_update) {
      // Hot update from pageable CPU memory: layer 1 (a quarter of the weights) scaled by
      // 1.5, into the inactive generation, then an O(1) swap between two decode steps.
      wharf_constant_map* upd = nullptr;
      std::vector<std::vector<float>> copies;
      if (failed(wharf_constant_map_create(&upd), "creating the update map")) {
        rc = 1;
        break;
      }
      for (size_t i = 0; i < wharf_constant_map_num_entries(weights); ++i) {
        const char* name = nullptr;
        wharf_tensor_view v;
        std::memset(&v, 0, sizeof v);
        v.struct_size = sizeof v;
        wharf_status_free(wharf_constant_map_get_entry(weights, i, &name, &v));
        if (std::strncmp(name, "layers.1.", 9) != 0 || std::strstr(name, "_cache")) continue;
        size_t n = 1;
        for (int d = 0; d < v.ndim; ++d) n *= size_t(v.shape[d]);
        copies.emplace_back(static_cast<const float*>(v.data), static_cast<const float*>(v.data) + n);
        for (float& x : copies.back()) x *= 1.5f;
        v.data = copies.back().data();
        wharf_status_free(wharf_constant_map_set(upd, name, &v));
        updated_bytes += n * sizeof(float);
      }
      wharf_runtime_reset_peak(rt);
      const uint64_t base = constants_bytes(rt, false);
      const auto tu = Clock::now();
      if (failed(wharf_container_update(c, upd, nullptr), "updating") || failed(wharf_container_swap(c), "swapping"))
        rc = 1;
      update_ms = ms_since(tu);
      peak_extra = constants_bytes(rt, true) - base;
      wharf_constant_map_free(upd);
      std::printf("-- hot update: %zu tensors of layer 1 (%s, pageable CPU memory) in %.2f ms, then swapped --\n",
                  copies.size(), human_bytes(updated_bytes).c_str(), update_ms);
    }
    for (Conversation* conv : {&a, &b}) {
      double ms = 0;
      int64_t next;
      if (conv->tokens.empty()) {
        next = forward(c, model, *conv, conv->prompt, 0, &ms);
        conv->prefill_ms = ms;
      } else {
        next = forward(c, model, *conv, {conv->tokens.back()}, int64_t(conv->prompt.size() + conv->tokens.size() - 1),
                       &ms);
        conv->step_ms.push_back(ms);
      }
      if (next < 0) {
        rc = 1;
        break;
      }
      conv->tokens.push_back(next);
    }
  }
  if (rc == 0) {
    for (Conversation* conv : {&a, &b})
      std::printf("%s: prompt [%s] -> tokens [%s]\n", conv->name, join(conv->prompt).c_str(),
                  join(conv->tokens).c_str());
    std::vector<int64_t> head(a.tokens.begin(), a.tokens.begin() + std::min(a.tokens.size(), want.size()));
    const bool match = !want.empty() && head == want;
    std::printf("\nreference: conversation A's first %zu tokens %s PyTorch's for the same model [%s]\n", want.size(),
                match ? "equal" : "DIFFER from", join(want).c_str());
    std::vector<double> steps = a.step_ms;
    steps.insert(steps.end(), b.step_ms.begin(), b.step_ms.end());
    std::printf("latency:   prefill %.2f ms, decode median %.2f ms per token (begin + run + read + end)\n",
                a.prefill_ms, median(steps));
    std::printf("update:    %s in %.2f ms; extra constant memory at peak %s (updated bytes only)\n",
                human_bytes(updated_bytes).c_str(), update_ms, human_bytes(peak_extra).c_str());
    std::printf("           AOTInductor's inactive constant buffer would add the whole model: %s\n",
                human_bytes(model_bytes).c_str());
    if (!match) rc = 1;
  }
  for (Conversation* conv : {&a, &b}) wharf_session_free(conv->session);
  wharf_constant_map_free(ref);
  wharf_model_free(model);
  wharf_constant_map_free(weights);
  wharf_runtime_free(rt);
  return rc;
}

}  // namespace wharf_cli
