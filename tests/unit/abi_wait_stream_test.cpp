// SPDX-License-Identifier: Apache-2.0
// wharf_update_options.wait_stream on the CUDA backend: an update's reads of device sources
// wait, on the device, for the work enqueued so far on the stream that produces them (a
// trainer's, an NCCL receive's), with no host synchronisation by the caller. Skips without a
// CUDA build or a visible GPU; on the host backend wait_stream must be NULL
// (AbiUpdate.WaitStreamMustBeNullOnTheHostBackend in container_test.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "wharf/wharf.h"

#ifdef WHARF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace {

#ifdef WHARF_HAVE_CUDA

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

void CUDART_CB sleep_on_stream(void* ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(ms)));
}

TEST(AbiWaitStream, UpdateReadsDeviceSourcesAfterTheProducersWork) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device visible";
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  wharf_status* st = wharf_runtime_create(&ro, &rt);
  if (st) {
    std::string m = wharf_status_message(st);
    wharf_status_free(st);
    GTEST_SKIP() << "no CUDA runtime: " << m;
  }
  constexpr int kN = 1 << 20;  // 4 MiB: a copy that takes measurable time
  int64_t shape[1] = {kN};
  wharf_constant_decl d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.fqn = "w";
  d.dtype = WHARF_DTYPE_F32;
  d.ndim = 1;
  d.shape = shape;
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.name = "trained";
  co.constants = &d;
  co.num_constants = 1;
  wharf_container* c = nullptr;
  ASSERT_EQ(wharf_container_create(rt, &co, &c), nullptr);

  // The producer: device memory holding 1s, then (on its own stream, after 300 ms of other
  // work) overwritten with 2s.
  float* src = nullptr;
  float* pinned = nullptr;
  CUDA_OK(cudaMalloc(&src, kN * sizeof(float)));
  CUDA_OK(cudaMallocHost(&pinned, kN * sizeof(float)));
  std::vector<float> ones(kN, 1.0f);
  CUDA_OK(cudaMemcpy(src, ones.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  for (int i = 0; i < kN; ++i) pinned[i] = 2.0f;
  cudaStream_t producer;
  CUDA_OK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  static int delay_ms = 300;
  CUDA_OK(cudaLaunchHostFunc(producer, sleep_on_stream, &delay_ms));
  CUDA_OK(cudaMemcpyAsync(src, pinned, kN * sizeof(float), cudaMemcpyHostToDevice, producer));

  wharf_constant_map* map = nullptr;
  ASSERT_EQ(wharf_constant_map_create(&map), nullptr);
  wharf_tensor_view v{};
  std::memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.data = src;
  v.dtype = WHARF_DTYPE_F32;
  v.device_type = WHARF_DEVICE_CUDA;
  v.ndim = 1;
  v.shape = shape;
  ASSERT_EQ(wharf_constant_map_set(map, "w", &v), nullptr);
  wharf_update_options uo;
  wharf_update_options_init(&uo);
  uo.wait_stream = producer;
  st = wharf_container_update(c, map, &uo);
  ASSERT_EQ(st, nullptr) << wharf_status_message(st);
  ASSERT_EQ(wharf_container_swap(c), nullptr);

  wharf_run* run = nullptr;
  ASSERT_EQ(wharf_run_begin(c, nullptr, nullptr, &run), nullptr);
  std::vector<float> back(kN, 0.0f);
  ASSERT_EQ(wharf_run_read(run, "w", 0, back.data(), kN * sizeof(float)), nullptr);
  EXPECT_EQ(back[0], 2.0f);
  EXPECT_EQ(back[kN - 1], 2.0f);
  ASSERT_EQ(wharf_run_end(run), nullptr);

  CUDA_OK(cudaStreamSynchronize(producer));
  CUDA_OK(cudaStreamDestroy(producer));
  wharf_constant_map_free(map);
  wharf_container_free(c);
  wharf_runtime_free(rt);
  CUDA_OK(cudaFree(src));
  CUDA_OK(cudaFreeHost(pinned));
}

#else

TEST(AbiWaitStream, UpdateReadsDeviceSourcesAfterTheProducersWork) {
  GTEST_SKIP() << "built without CUDA (WHARF_WITH_CUDA=OFF): wait_stream needs the CUDA backend";
}

#endif

}  // namespace
