// SPDX-License-Identifier: Apache-2.0
// Offloaders on the CUDA backend: a toy model of N layers (h = h * w + b per layer) run with
// k of N layers offloaded to pinned host memory gives exactly the result of the same model
// with every weight resident; the same under CUDA graph capture and replay (the copy stream
// forks from and joins into the capture); and a hot update in the middle of a sequence of
// runs: a run in flight keeps its generation, later runs prefetch the new weights.
#define WHARF_EXPERIMENTAL 1
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "device/device.h"
#include "test_kernels.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << cudaGetErrorString(expr)

constexpr int kLayers = 8;
constexpr int64_t kD = 1 << 20;  // elements per layer weight (4 MiB of F32)
constexpr int64_t kB = 256;      // bias elements

__global__ void layer_kernel(float* h, const float* w, const float* b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    h[i] = h[i] * w[i] + b[i % kB];
}

std::string wname(int L) { return "layers." + std::to_string(L) + ".w"; }
std::string bname(int L) { return "layers." + std::to_string(L) + ".b"; }

float wval(int stamp, int L, int64_t i) { return 1.0f + 1e-3f * float((i + L * 3 + stamp * 5) % 7); }
float bval(int stamp, int L, int64_t i) { return 1e-2f * float(stamp) * float(L + 1) - 1e-3f * float(i % 5); }

class GpuOffload : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!wharf::cuda_device_available(0, &reason)) GTEST_SKIP() << "no usable CUDA device: " << reason;
    wharf_runtime_options o;
    wharf_runtime_options_init(&o);
    o.backend = WHARF_BACKEND_CUDA;
    ASSERT_OK(wharf_runtime_create(&o, &rt));
    ASSERT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    ASSERT_CUDA(cudaMalloc(&h, kD * sizeof(float)));
    ASSERT_CUDA(cudaMalloc(&h0, kD * sizeof(float)));
    std::vector<float> init(kD);
    for (int64_t i = 0; i < kD; ++i) init[size_t(i)] = 0.5f + float(i % 13) * 0.01f;
    ASSERT_CUDA(cudaMemcpy(h0, init.data(), kD * sizeof(float), cudaMemcpyHostToDevice));
  }
  void TearDown() override {
    if (s) cudaStreamSynchronize(s);
    wharf_offloader_free(off);
    wharf_container_free(resident);
    wharf_container_free(offloaded);
    wharf_runtime_free(rt);
    if (h) cudaFree(h);
    if (h0) cudaFree(h0);
    if (s) cudaStreamDestroy(s);
  }

  // Layers with host_layer(L) are host-placed (the offloaded ones), the rest device-placed.
  template <class F>
  void make(wharf_container** out, bool offloaded_model, F host_layer) {
    static const int64_t wshape = kD, bshape = kB;
    names.clear();
    for (int L = 0; L < kLayers; ++L) {
      names.push_back(wname(L));
      names.push_back(bname(L));
    }
    std::vector<wharf_constant_decl> decls;
    for (const std::string& nm : names) {
      wharf_constant_decl d;
      std::memset(&d, 0, sizeof d);
      d.struct_size = sizeof d;
      d.fqn = nm.c_str();
      d.dtype = WHARF_DTYPE_F32;
      d.ndim = 1;
      d.shape = nm.back() == 'w' ? &wshape : &bshape;
      int L = std::stoi(nm.substr(7));
      d.placement = offloaded_model && host_layer(L) ? WHARF_PLACEMENT_HOST : WHARF_PLACEMENT_DEVICE;
      decls.push_back(d);
    }
    wharf_container_options co;
    wharf_container_options_init(&co);
    co.name = offloaded_model ? "offloaded" : "resident";
    co.constants = decls.data();
    co.num_constants = decls.size();
    ASSERT_OK(wharf_container_create(rt, &co, out));
  }
  // Writes generation `stamp` of every weight into `c` and swaps it in (`in_place`: writes
  // it into the active generation instead).
  void publish(wharf_container* c, int stamp, bool in_place = false) {
    std::vector<std::vector<float>> data;
    data.reserve(names.size());
    static const int64_t wshape = kD, bshape = kB;
    wharf_constant_map* m = nullptr;
    ASSERT_OK(wharf_constant_map_create(&m));
    for (int L = 0; L < kLayers; ++L) {
      data.emplace_back(size_t(kD));
      for (int64_t i = 0; i < kD; ++i) data.back()[size_t(i)] = wval(stamp, L, i);
      wharf_tensor_view wv{
          sizeof(wharf_tensor_view), 0, data.back().data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, &wshape, nullptr};
      ASSERT_OK(wharf_constant_map_set(m, wname(L).c_str(), &wv));
      data.emplace_back(size_t(kB));
      for (int64_t i = 0; i < kB; ++i) data.back()[size_t(i)] = bval(stamp, L, i);
      wharf_tensor_view bv{
          sizeof(wharf_tensor_view), 0, data.back().data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, &bshape, nullptr};
      ASSERT_OK(wharf_constant_map_set(m, bname(L).c_str(), &bv));
    }
    wharf_update_options uo;
    wharf_update_options_init(&uo);
    if (in_place) uo.target = WHARF_TARGET_ACTIVE_IN_PLACE;
    St st(wharf_container_update(c, m, &uo));
    wharf_constant_map_free(m);
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
    if (!in_place) ASSERT_OK(wharf_container_swap(c));
  }
  void setup(uint32_t k, uint32_t cap, uint32_t group_size, uint32_t num_in_group) {
    auto selected = [&](int L) { return group_size == 0 || uint32_t(L) % group_size >= group_size - num_in_group; };
    ASSERT_NO_FATAL_FAILURE(make(&resident, false, selected));
    ASSERT_NO_FATAL_FAILURE(publish(resident, 1));
    ASSERT_NO_FATAL_FAILURE(make(&offloaded, true, selected));
    ASSERT_NO_FATAL_FAILURE(publish(offloaded, 1));
    wharf_offloader_options oo;
    wharf_offloader_options_init(&oo);
    oo.prefetch_step = k;
    oo.slot_capacity = cap;
    oo.group_size = group_size;
    oo.num_in_group = num_in_group;
    ASSERT_OK(wharf_offloader_create(offloaded, &oo, &off));
  }

  // Enqueues one forward pass of `run` on s: h = h0, then every layer. With `with_offload`,
  // offloaded layers read their slots; `spin_ns` of spinning before each layer makes a
  // premature slot overwrite visible. `stop_after`: the layers to enqueue before returning
  // (the rest by forward_rest).
  void forward(wharf_run* run, bool with_offload, uint64_t spin_ns = 0, int stop_after = kLayers) {
    ASSERT_CUDA(cudaMemcpyAsync(h, h0, kD * sizeof(float), cudaMemcpyDeviceToDevice, s));
    if (with_offload) ASSERT_OK(wharf_run_begin_offload(run, off));
    next_layer = 0;
    forward_rest(run, with_offload, spin_ns, stop_after);
  }
  void forward_rest(wharf_run* run, bool with_offload, uint64_t spin_ns = 0, int stop_after = kLayers) {
    for (; next_layer < stop_after; ++next_layer) {
      const uint32_t L = uint32_t(next_layer);
      wharf_tensor_view v[2];
      std::memset(v, 0, sizeof v);
      v[0].struct_size = v[1].struct_size = sizeof v[0];
      bool slots = with_offload && wharf_offloader_num_layer_constants(off, L) == 2;
      if (with_offload) ASSERT_OK(wharf_run_wait_offload(run, off, L, v, 2));
      if (!slots) {
        ASSERT_OK(wharf_run_get_tensor(run, wname(int(L)).c_str(), &v[0]));
        ASSERT_OK(wharf_run_get_tensor(run, bname(int(L)).c_str(), &v[1]));
      }
      ASSERT_EQ(v[0].device_type, WHARF_DEVICE_CUDA) << "layer " << L;
      if (spin_ns) ASSERT_CUDA(wharf_test::launch_spin(s, spin_ns));
      layer_kernel<<<256, 256, 0, s>>>(h, static_cast<const float*>(v[0].data), static_cast<const float*>(v[1].data),
                                       kD);
      ASSERT_CUDA(cudaGetLastError());
      if (with_offload) ASSERT_OK(wharf_run_mark_offload_issued(run, off, L));
    }
    if (with_offload && stop_after == kLayers) ASSERT_OK(wharf_run_end_offload(run, off));
  }
  std::vector<float> result() {
    std::vector<float> out(kD);
    EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), h, kD * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  std::vector<float> reference() {
    wharf_run* r = nullptr;
    EXPECT_EQ(wharf_run_begin(resident, nullptr, s, &r), nullptr);
    forward(r, false);
    std::vector<float> out = result();
    EXPECT_EQ(wharf_run_end(r), nullptr);
    return out;
  }
  std::vector<float> offloaded_pass(uint64_t spin_ns) {
    wharf_run* r = nullptr;
    EXPECT_EQ(wharf_run_begin(offloaded, nullptr, s, &r), nullptr);
    forward(r, true, spin_ns);
    std::vector<float> out = result();
    EXPECT_EQ(wharf_run_end(r), nullptr);
    return out;
  }
  static size_t mismatches(const std::vector<float>& a, const std::vector<float>& b) {
    size_t bad = 0;
    for (size_t i = 0; i < a.size(); ++i) bad += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return bad;
  }
  wharf_memory_stats stats() {
    wharf_memory_stats ms;
    std::memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    EXPECT_EQ(wharf_runtime_get_memory_stats(rt, &ms), nullptr);
    return ms;
  }

  wharf_runtime* rt = nullptr;
  wharf_container* resident = nullptr;
  wharf_container* offloaded = nullptr;
  wharf_offloader* off = nullptr;
  cudaStream_t s = nullptr;
  float* h = nullptr;
  float* h0 = nullptr;
  std::vector<std::string> names;
  int next_layer = 0;
};

TEST_F(GpuOffload, KOfNLayersOffloadedEqualTheResidentModel) {
  struct Case {
    uint32_t k, cap, group_size, num_in_group;
  };
  const Case cases[] = {{1, 1, 0, 1}, {2, 2, 0, 1}, {1, 2, 0, 1}, {2, 3, 4, 2}, {1, 1, 4, 1}, {0, 1, 0, 1}};
  for (const Case& cs : cases) {
    SCOPED_TRACE("k " + std::to_string(cs.k) + " cap " + std::to_string(cs.cap) + " group " +
                 std::to_string(cs.group_size) + "/" + std::to_string(cs.num_in_group));
    TearDown();
    rt = nullptr, resident = offloaded = nullptr, off = nullptr, s = nullptr, h = h0 = nullptr;
    SetUp();
    ASSERT_NO_FATAL_FAILURE(setup(cs.k, cs.cap, cs.group_size, cs.num_in_group));
    const std::vector<float> want = reference();
    // Spinning before each layer keeps readers late: a copy ordered wrongly would land first.
    for (uint64_t spin : {uint64_t(0), uint64_t(200000)}) {
      EXPECT_EQ(mismatches(offloaded_pass(spin), want), 0u) << "spin " << spin;
    }
    // The pool: cap slots of one layer (w then b, 256-aligned), under WHARF_MEM_OFFLOAD; the
    // offloaded weights themselves are pinned host memory.
    wharf_memory_stats ms = stats();
    uint32_t n_off = 0;
    for (uint32_t L = 0; L < kLayers; ++L) n_off += wharf_offloader_num_layer_constants(off, L) > 0;
    uint64_t slot = kD * 4 + kB * 4;
    EXPECT_EQ(ms.current[WHARF_MEM_OFFLOAD], uint64_t(std::min(std::max(cs.cap, 1u), n_off)) * slot);
  }
}

TEST_F(GpuOffload, CaptureAndReplayEqualTheResidentModel) {
  ASSERT_NO_FATAL_FAILURE(setup(1, 2, 0, 1));
  const std::vector<float> want1 = reference();
  wharf_run* r = nullptr;
  ASSERT_OK(wharf_run_begin(offloaded, nullptr, s, &r));
  // Thread-local capture mode: any call the offloader makes that is unsafe during a capture
  // (a host sync, an event query, an allocation) fails the capture.
  ASSERT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  forward(r, true, /*spin_ns=*/200000);  // late readers: a copy node ordered wrongly lands first
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(s, &graph));  // fails if the copy stream was not joined back
  ASSERT_OK(wharf_run_end(r));
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int rep = 0; rep < 3; ++rep) {
    ASSERT_CUDA(cudaMemsetAsync(h, 0, kD * sizeof(float), s));
    ASSERT_CUDA(cudaGraphLaunch(exec, s));
    EXPECT_EQ(mismatches(result(), want1), 0u) << "replay " << rep;
  }
  // Eager runs before and after replays share the slots correctly (ordered on s).
  EXPECT_EQ(mismatches(offloaded_pass(0), want1), 0u);
  ASSERT_CUDA(cudaGraphLaunch(exec, s));
  EXPECT_EQ(mismatches(result(), want1), 0u);
  // A swap: eager runs prefetch the new weights; the graph replays the generation it captured
  // (kept alive by the offloader: compute-sanitizer would flag a read of freed memory).
  ASSERT_NO_FATAL_FAILURE(publish(resident, 2));
  ASSERT_NO_FATAL_FAILURE(publish(offloaded, 2));
  ASSERT_OK(wharf_container_free_inactive(offloaded));
  const std::vector<float> want2 = reference();
  EXPECT_GT(mismatches(want1, want2), 0u);
  EXPECT_EQ(mismatches(offloaded_pass(0), want2), 0u);
  ASSERT_CUDA(cudaGraphLaunch(exec, s));
  EXPECT_EQ(mismatches(result(), want1), 0u);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// An in-place update of offloaded constants after a capture: the container would overwrite
// storage nothing else references, and the graph's copy nodes read that storage at every
// launch with no run pinning it. The offloader holds the captured generation's offloaded
// storage as a second owner, so the update gives those constants fresh storage: eager runs
// read the new weights, the graph still the ones it captured (not a mix of both).
TEST_F(GpuOffload, AnInPlaceUpdateLeavesWhatACapturedGraphCopiesAlone) {
  ASSERT_NO_FATAL_FAILURE(setup(1, 2, 0, 1));
  const std::vector<float> want1 = reference();
  wharf_run* r = nullptr;
  ASSERT_OK(wharf_run_begin(offloaded, nullptr, s, &r));
  ASSERT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  forward(r, true);
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(s, &graph));
  ASSERT_OK(wharf_run_end(r));
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  ASSERT_CUDA(cudaGraphLaunch(exec, s));
  EXPECT_EQ(mismatches(result(), want1), 0u);
  ASSERT_NO_FATAL_FAILURE(publish(resident, 2));
  ASSERT_NO_FATAL_FAILURE(publish(offloaded, 2, /*in_place=*/true));
  const std::vector<float> want2 = reference();
  EXPECT_GT(mismatches(want1, want2), 0u);
  EXPECT_EQ(mismatches(offloaded_pass(0), want2), 0u) << "eager runs read the in-place update";
  ASSERT_CUDA(cudaGraphLaunch(exec, s));
  EXPECT_EQ(mismatches(result(), want1), 0u) << "the in-place update overwrote what the captured graph copies";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// A run captured between two eager runs on other streams: the second eager run's copies wait
// for the first run's end, not for the capture (whose end is no point in time). The first
// run spins before each layer, so its last layers read their slots long after its copies
// were issued; a copy of the second run (another generation) ordered after the capture alone
// refilled slot 0 before the first run's layer 6 read it.
TEST_F(GpuOffload, AnEagerRunAfterACaptureWaitsForTheRunBeforeIt) {
  ASSERT_NO_FATAL_FAILURE(setup(1, 2, 0, 1));
  const std::vector<float> want1 = reference();
  cudaStream_t s2 = nullptr, s3 = nullptr;
  float *h2 = nullptr, *h3 = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  ASSERT_CUDA(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  ASSERT_CUDA(cudaMalloc(&h2, kD * sizeof(float)));
  ASSERT_CUDA(cudaMalloc(&h3, kD * sizeof(float)));
  // A: generation 1 on s, 20 ms of spinning before each layer.
  wharf_run* a = nullptr;
  ASSERT_OK(wharf_run_begin(offloaded, nullptr, s, &a));
  forward(a, true, 20'000'000);
  ASSERT_OK(wharf_run_end(a));
  // B: captured on s2 (never launched).
  std::swap(s, s2);
  std::swap(h, h2);
  wharf_run* b = nullptr;
  ASSERT_OK(wharf_run_begin(offloaded, nullptr, s, &b));
  ASSERT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  forward(b, true);
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(s, &graph));
  ASSERT_OK(wharf_run_end(b));
  std::swap(s, s2);
  std::swap(h, h2);
  // C: generation 2 on s3, enqueued while A still spins.
  ASSERT_NO_FATAL_FAILURE(publish(offloaded, 2));
  std::swap(s, s3);
  std::swap(h, h3);
  wharf_run* c = nullptr;
  ASSERT_OK(wharf_run_begin(offloaded, nullptr, s, &c));
  forward(c, true);
  ASSERT_OK(wharf_run_end(c));
  std::swap(s, s3);
  std::swap(h, h3);
  EXPECT_EQ(mismatches(result(), want1), 0u) << "a run after the capture refilled a slot the run before it still read";
  ASSERT_CUDA(cudaStreamSynchronize(s3));
  cudaGraphDestroy(graph);
  cudaFree(h2);
  cudaFree(h3);
  cudaStreamDestroy(s2);
  cudaStreamDestroy(s3);
}

TEST_F(GpuOffload, HotUpdateMidSequence) {
  ASSERT_NO_FATAL_FAILURE(setup(2, 2, 0, 1));
  const std::vector<float> want1 = reference();
  EXPECT_EQ(mismatches(offloaded_pass(100000), want1), 0u);
  // A run in flight across an update and swap keeps its generation for every layer.
  wharf_run* r = nullptr;
  ASSERT_OK(wharf_run_begin(offloaded, nullptr, s, &r));
  forward(r, true, 100000, kLayers / 2);
  ASSERT_NO_FATAL_FAILURE(publish(offloaded, 2));
  ASSERT_NO_FATAL_FAILURE(publish(resident, 2));
  forward_rest(r, true, 100000);
  EXPECT_EQ(mismatches(result(), want1), 0u);
  ASSERT_OK(wharf_run_end(r));
  // Later runs prefetch the new weights.
  const std::vector<float> want2 = reference();
  EXPECT_EQ(mismatches(offloaded_pass(100000), want2), 0u);
  EXPECT_EQ(mismatches(offloaded_pass(0), want2), 0u);
  // Rollback: back to the first weights.
  ASSERT_OK(wharf_container_swap(offloaded));
  EXPECT_EQ(mismatches(offloaded_pass(0), want1), 0u);
}

}  // namespace
