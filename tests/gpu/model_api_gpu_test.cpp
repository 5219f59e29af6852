// SPDX-License-Identifier: Apache-2.0
// The tiny decoder through the public C API only, as a C service would drive it: load the
// weights file, load the model, a session, prefill and greedy decode with wharf_model_run,
// compared with PyTorch's tokens; then a weight update from host memory and a swap.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "common/test_paths.h"
#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

std::string dir() {
  if (const char* e = std::getenv("WHARF_MODEL_DIR")) return e;
  return wharf_test::test_data("models/tiny_decoder");
}

TEST(ModelApiGpu, GreedyDecodingThroughTheCApi) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
  const std::string d = dir();
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  ASSERT_OK(wharf_runtime_create(&ro, &rt));
  wharf_constant_map* weights = nullptr;
  ASSERT_OK(wharf_constant_map_load_safetensors((d + "/tiny_decoder.safetensors").c_str(), &weights));
  // The KV caches' shapes and zero initial values (mutated buffers become session state).
  const int64_t cache_shape[4] = {1, 4, 64, 16};
  std::vector<float> zeros(4 * 64 * 16, 0.0f);
  for (const char* name : {"layers.0.k_cache", "layers.0.v_cache", "layers.1.k_cache", "layers.1.v_cache"}) {
    wharf_tensor_view v{};
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.data = zeros.data();
    v.dtype = WHARF_DTYPE_F32;
    v.device_type = WHARF_DEVICE_CPU;
    v.ndim = 4;
    v.shape = cache_shape;
    ASSERT_OK(wharf_constant_map_set(weights, name, &v));
  }
  wharf_model_options mo;
  wharf_model_options_init(&mo);
  mo.name = "tiny";
  wharf_model* model = nullptr;
  St loaded(wharf_model_load(rt, (d + "/tiny_decoder.so").c_str(), weights, &mo, &model));
  if (loaded.code() != WHARF_OK && loaded.msg().find("GLIBC") != std::string::npos)
    GTEST_SKIP() << "the compiled model needs a newer C library: " << loaded.msg();
  ASSERT_EQ(loaded.code(), WHARF_OK) << loaded.msg();
  ASSERT_EQ(wharf_model_num_inputs(model), 2u);
  ASSERT_EQ(wharf_model_num_outputs(model), 1u);
  wharf_container* c = wharf_model_container(model);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(wharf_container_num_states(c), 4u);

  wharf_constant_map* ref = nullptr;
  ASSERT_OK(wharf_constant_map_load_safetensors((d + "/reference.safetensors").c_str(), &ref));
  wharf_tensor_view pv, tv;
  std::memset(&pv, 0, sizeof pv);
  std::memset(&tv, 0, sizeof tv);
  pv.struct_size = tv.struct_size = sizeof pv;
  ASSERT_OK(wharf_constant_map_find(ref, "prompt", &pv));
  ASSERT_OK(wharf_constant_map_find(ref, "tokens", &tv));
  const int64_t* prompt = static_cast<const int64_t*>(pv.data);
  const int64_t* want = static_cast<const int64_t*>(tv.data);
  const int64_t plen = pv.shape[1], steps = tv.shape[0];

  wharf_session* s = nullptr;
  ASSERT_OK(wharf_session_create(rt, &c, 1, nullptr, &s));
  int64_t *d_tok = nullptr, *d_pos = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_tok), 64 * 8), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_pos), 64 * 8), cudaSuccess);
  std::vector<int64_t> got;
  int64_t next = -1;
  for (int64_t k = 0; k < steps; ++k) {
    std::vector<int64_t> toks, pos;
    if (k == 0) {
      toks.assign(prompt, prompt + plen);
      for (int64_t i = 0; i < plen; ++i) pos.push_back(i);
    } else {
      toks = {next};
      pos = {plen + k - 1};
    }
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(c, s, nullptr, &run));
    cudaStream_t stream = static_cast<cudaStream_t>(wharf_run_stream(run));
    cudaMemcpyAsync(d_tok, toks.data(), toks.size() * 8, cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(d_pos, pos.data(), pos.size() * 8, cudaMemcpyHostToDevice, stream);
    const int64_t tshape[2] = {1, int64_t(toks.size())}, pshape[1] = {int64_t(pos.size())};
    wharf_tensor_view in[2];
    std::memset(in, 0, sizeof in);
    in[0].struct_size = in[1].struct_size = sizeof in[0];
    in[0].data = d_tok;
    in[0].dtype = WHARF_DTYPE_I64;
    in[0].device_type = WHARF_DEVICE_CUDA;
    in[0].ndim = 2;
    in[0].shape = tshape;
    in[1].data = d_pos;
    in[1].dtype = WHARF_DTYPE_I64;
    in[1].device_type = WHARF_DEVICE_CUDA;
    in[1].ndim = 1;
    in[1].shape = pshape;
    wharf_tensor_view out{};
    std::memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    ASSERT_OK(wharf_model_run(model, run, in, 2, &out, 1));
    ASSERT_EQ(out.ndim, 3);
    ASSERT_EQ(out.shape[2], 256);
    std::vector<float> last(256);
    const float* logits = static_cast<const float*>(out.data);
    cudaMemcpyAsync(last.data(), logits + (out.shape[1] - 1) * 256, 256 * 4, cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    ASSERT_OK(wharf_run_end(run));
    next = 0;
    for (int i = 1; i < 256; ++i)
      if (last[i] > last[size_t(next)]) next = i;
    got.push_back(next);
  }
  EXPECT_EQ(got, std::vector<int64_t>(want, want + steps));

  // A hot update from host memory and a swap: the model serves the new generation.
  const uint64_t gen = wharf_container_generation(c);
  wharf_tensor_view head{};
  std::memset(&head, 0, sizeof head);
  head.struct_size = sizeof head;
  ASSERT_OK(wharf_constant_map_find(weights, "norm.weight", &head));
  std::vector<float> norm(64, 1.5f);
  wharf_tensor_view nv = head;
  nv.data = norm.data();
  wharf_constant_map* upd = nullptr;
  ASSERT_OK(wharf_constant_map_create(&upd));
  ASSERT_OK(wharf_constant_map_set(upd, "norm.weight", &nv));
  ASSERT_OK(wharf_container_update(c, upd, nullptr));
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_GT(wharf_container_generation(c), gen);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, s, nullptr, &run));
  float seen = 0;
  ASSERT_OK(wharf_run_read(run, "norm.weight", 0, &seen, sizeof seen));
  EXPECT_EQ(seen, 1.5f);
  ASSERT_OK(wharf_run_end(run));

  cudaFree(d_tok);
  cudaFree(d_pos);
  wharf_constant_map_free(upd);
  wharf_session_free(s);
  wharf_model_free(model);
  wharf_constant_map_free(ref);
  wharf_constant_map_free(weights);
  wharf_runtime_free(rt);
}

}  // namespace
