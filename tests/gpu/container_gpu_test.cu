// SPDX-License-Identifier: Apache-2.0
// Containers and runs on the CUDA backend: sources of every kind, kernels reading weights
// through leases, storage that outlives in-flight kernels, in-place updates ordered after
// kernels on the device, fold kernels, and concurrent runs against an updating writer.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/test_support.h"
#include "device/device.h"
#include "test_kernels.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

__global__ void count_mismatch_kernel(const float* p, uint64_t n, float expect, unsigned long long* bad) {
  unsigned long long local = 0;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    local += p[i] != expect;
  if (local) atomicAdd(bad, local);
}

__global__ void scale_kernel(const float* src, float* dst, uint64_t n, float k) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    dst[i] = src[i] * k;
}

void count_mismatch(cudaStream_t s, const wharf_tensor_view& v, float expect, unsigned long long* bad) {
  uint64_t n = 1;
  for (int i = 0; i < v.ndim; ++i) n *= uint64_t(v.shape[i]);
  count_mismatch_kernel<<<64, 256, 0, s>>>(static_cast<const float*>(v.data), n, expect, bad);
}

// Mismatch counters in device memory, read back after the stream is done.
struct Counters {
  unsigned long long* d = nullptr;
  int n;
  explicit Counters(int count) : n(count) {
    EXPECT_EQ(cudaMalloc(&d, n * sizeof(unsigned long long)), cudaSuccess);
    EXPECT_EQ(cudaMemset(d, 0, n * sizeof(unsigned long long)), cudaSuccess);
  }
  ~Counters() { cudaFree(d); }
  unsigned long long operator[](int i) const {
    unsigned long long v = ~0ull;
    EXPECT_EQ(cudaMemcpy(&v, d + i, sizeof v, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
  unsigned long long* at(int i) { return d + i; }
};

constexpr int kTensors = 8;
constexpr int64_t kElems = 1 << 20;  // 4 MiB of F32 each

std::string name(int i) { return "layers." + std::to_string(i) + ".w"; }

class GpuContainer : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!wharf::cuda_device_available(0, &reason)) GTEST_SKIP() << "no usable CUDA device: " << reason;
    wharf_runtime_options o;
    wharf_runtime_options_init(&o);
    o.backend = WHARF_BACKEND_CUDA;
    ASSERT_OK(wharf_runtime_create(&o, &rt));
    host.assign(kTensors, std::vector<float>(kElems, 0.0f));
  }
  void TearDown() override {
    wharf_container_free(c);
    wharf_runtime_free(rt);
  }
  // A map over the pageable host tensors, every element of tensor i = stamp.
  wharf_constant_map* stamped(float stamp, int count = kTensors) {
    wharf_constant_map* m = nullptr;
    EXPECT_EQ(wharf_constant_map_create(&m), nullptr);
    for (int i = 0; i < count; ++i) {
      std::fill(host[i].begin(), host[i].end(), stamp);
      wharf_tensor_view v{
          sizeof(wharf_tensor_view), 0, host[i].data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, &shape, nullptr};
      EXPECT_EQ(wharf_constant_map_set(m, name(i).c_str(), &v), nullptr);
    }
    return m;
  }
  void load(float stamp) {
    wharf_constant_map* m = stamped(stamp);
    St st(wharf_container_create_from_map(rt, m, nullptr, &c));
    wharf_constant_map_free(m);
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
  }
  uint64_t constants_bytes() {
    wharf_memory_stats ms;
    std::memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    St st(wharf_runtime_get_memory_stats(rt, &ms));
    return ms.current[WHARF_MEM_CONSTANTS];
  }

  wharf_runtime* rt = nullptr;
  wharf_container* c = nullptr;
  std::vector<std::vector<float>> host;
  int64_t shape = kElems;
};

TEST_F(GpuContainer, SourcesOfEveryKindLandOnTheDevice) {
  // tensor 0: pageable, 1: pinned, 2: device memory, in one map.
  float* pinned = nullptr;
  float* dev = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&pinned), kElems * 4, cudaHostAllocDefault), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), kElems * 4), cudaSuccess);
  std::vector<float> pageable(kElems, 1.0f), staging(kElems, 3.0f);
  for (int64_t i = 0; i < kElems; ++i) pinned[i] = 2.0f;
  ASSERT_EQ(cudaMemcpy(dev, staging.data(), kElems * 4, cudaMemcpyHostToDevice), cudaSuccess);
  wharf_constant_map* m = nullptr;
  ASSERT_OK(wharf_constant_map_create(&m));
  wharf_tensor_view v0{
      sizeof(wharf_tensor_view), 0, pageable.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, &shape, nullptr};
  wharf_tensor_view v1{sizeof(wharf_tensor_view), 0, pinned, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, &shape, nullptr};
  wharf_tensor_view v2{sizeof(wharf_tensor_view), 0, dev, WHARF_DTYPE_F32, WHARF_DEVICE_CUDA, 0, 1, &shape, nullptr};
  ASSERT_OK(wharf_constant_map_set(m, "a", &v0));
  ASSERT_OK(wharf_constant_map_set(m, "b", &v1));
  ASSERT_OK(wharf_constant_map_set(m, "c", &v2));
  ASSERT_OK(wharf_container_create_from_map(rt, m, nullptr, &c));
  wharf_constant_map_free(m);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Counters bad(3);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, s, &run));
  EXPECT_EQ(wharf_run_stream(run), static_cast<void*>(s));
  const char* names[3] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) {
    wharf_tensor_view v{};
    ASSERT_OK(wharf_run_get_tensor(run, names[i], &v));
    EXPECT_EQ(v.device_type, WHARF_DEVICE_CUDA);
    cudaPointerAttributes attr;
    ASSERT_EQ(cudaPointerGetAttributes(&attr, v.data), cudaSuccess);
    EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
    count_mismatch(s, v, float(i + 1), bad.at(i));
  }
  float last = 0;
  ASSERT_OK(wharf_run_read(run, "c", (kElems - 1) * 4, &last, 4));
  EXPECT_EQ(last, 3.0f);
  ASSERT_OK(wharf_run_end(run));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(bad[0] + bad[1] + bad[2], 0ull);
  cudaStreamDestroy(s);
  cudaFree(dev);
  cudaFreeHost(pinned);
}

TEST_F(GpuContainer, HostPlacedConstantLivesInPinnedHostMemory) {
  int64_t n = 256;
  wharf_constant_decl d[1] = {{sizeof(wharf_constant_decl), "table", WHARF_DTYPE_F32, 1, &n, WHARF_PLACEMENT_HOST, 0}};
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.constants = d;
  o.num_constants = 1;
  ASSERT_OK(wharf_container_create(rt, &o, &c));
  std::vector<float> src(256, 7.0f);
  wharf_constant_map* m = nullptr;
  ASSERT_OK(wharf_constant_map_create(&m));
  wharf_tensor_view v{sizeof(wharf_tensor_view), 0, src.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, &n, nullptr};
  ASSERT_OK(wharf_constant_map_set(m, "table", &v));
  ASSERT_OK(wharf_container_update(c, m, nullptr));
  ASSERT_OK(wharf_container_swap(c));
  wharf_constant_map_free(m);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  wharf_tensor_view t{};
  ASSERT_OK(wharf_run_get_tensor(run, "table", &t));
  EXPECT_EQ(t.device_type, WHARF_DEVICE_CPU);
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, t.data), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);  // pinned
  EXPECT_EQ(static_cast<float*>(t.data)[255], 7.0f);
  ASSERT_OK(wharf_run_end(run));
}

TEST_F(GpuContainer, StorageOutlivesKernelsStillReadingIt) {
  load(1.0f);
  uint64_t model = constants_bytes();
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Counters bad(1);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, s, &run));
  ASSERT_EQ(wharf_test::launch_spin(s, 300'000'000), cudaSuccess);  // 300 ms before reading
  for (int i = 0; i < kTensors; ++i) {
    wharf_tensor_view v{};
    ASSERT_OK(wharf_run_get_tensor(run, name(i).c_str(), &v));
    count_mismatch(s, v, 1.0f, bad.at(0));
  }
  ASSERT_OK(wharf_run_end(run));
  // Replace everything and drop the old generation while the kernels have not run yet. The
  // new slots must not reuse the old storage: the kernels would then read 2.0.
  wharf_constant_map* m = stamped(2.0f);
  ASSERT_OK(wharf_container_update(c, m, nullptr));
  ASSERT_OK(wharf_container_swap(c));
  ASSERT_OK(wharf_container_free_inactive(c));
  wharf_constant_map_free(m);
  EXPECT_EQ(constants_bytes(), 2 * model);  // generation 1 is held for the in-flight run
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(bad[0], 0ull);
  ASSERT_OK(wharf_container_free_inactive(c));  // reaps the finished run
  EXPECT_EQ(constants_bytes(), model);
  cudaStreamDestroy(s);
}

TEST_F(GpuContainer, InPlaceUpdateWaitsOnTheDeviceForEndedRuns) {
  load(1.0f);
  uint64_t model = constants_bytes();
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Counters bad(2);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, s, &run));
  ASSERT_EQ(wharf_test::launch_spin(s, 200'000'000), cudaSuccess);
  for (int i = 0; i < kTensors; ++i) {
    wharf_tensor_view v{};
    ASSERT_OK(wharf_run_get_tensor(run, name(i).c_str(), &v));
    count_mismatch(s, v, 1.0f, bad.at(0));
  }
  ASSERT_OK(wharf_run_end(run));
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  wharf_constant_map* m = stamped(5.0f);
  wharf_runtime_reset_peak(rt);
  ASSERT_OK(wharf_container_update(c, m, &o));
  wharf_constant_map_free(m);
  EXPECT_EQ(constants_bytes(), model);  // no extra memory
  ASSERT_OK(wharf_run_begin(c, nullptr, s, &run));
  for (int i = 0; i < kTensors; ++i) {
    wharf_tensor_view v{};
    ASSERT_OK(wharf_run_get_tensor(run, name(i).c_str(), &v));
    count_mismatch(s, v, 5.0f, bad.at(1));
  }
  ASSERT_OK(wharf_run_end(run));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(bad[0], 0ull);  // the earlier kernels saw only old data
  EXPECT_EQ(bad[1], 0ull);  // later ones only new data
  cudaStreamDestroy(s);
}

wharf_status* double_fold(wharf_run* run, void*) {
  wharf_tensor_view w, w2;
  wharf_status* st = wharf_run_get_tensor(run, "w", &w);
  if (st) return st;
  if ((st = wharf_run_get_tensor(run, "w2", &w2))) return st;
  auto s = static_cast<cudaStream_t>(wharf_run_stream(run));
  scale_kernel<<<64, 256, 0, s>>>(static_cast<const float*>(w.data), static_cast<float*>(w2.data), uint64_t(w.shape[0]),
                                  2.0f);
  return nullptr;
}

TEST_F(GpuContainer, FoldKernelComputesDerivedConstant) {
  int64_t n = 4096;
  wharf_constant_decl d[2] = {
      {sizeof(wharf_constant_decl), "w", WHARF_DTYPE_F32, 1, &n, WHARF_PLACEMENT_DEVICE, 0},
      {sizeof(wharf_constant_decl), "w2", WHARF_DTYPE_F32, 1, &n, WHARF_PLACEMENT_DEVICE, WHARF_CONSTANT_DERIVED}};
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.constants = d;
  o.num_constants = 2;
  ASSERT_OK(wharf_container_create(rt, &o, &c));
  std::vector<float> w(4096, 1.5f);
  wharf_constant_map* m = nullptr;
  ASSERT_OK(wharf_constant_map_create(&m));
  wharf_tensor_view v{sizeof(wharf_tensor_view), 0, w.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, &n, nullptr};
  ASSERT_OK(wharf_constant_map_set(m, "w", &v));
  wharf_update_options u;
  wharf_update_options_init(&u);
  u.fold = double_fold;
  ASSERT_OK(wharf_container_update(c, m, &u));
  ASSERT_OK(wharf_container_swap(c));
  wharf_constant_map_free(m);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  std::vector<float> out(4096);
  ASSERT_OK(wharf_run_read(run, "w2", 0, out.data(), 4096 * 4));
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[4095], 3.0f);
  ASSERT_OK(wharf_run_end(run));
}

__global__ void add_kernel(const float* a, const float* b, float* d, uint64_t n) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    d[i] = a[i] + b[i];
}

// Records each constant's view flags, then d = a + b on the fold's stream.
struct SumFold {
  uint32_t flags[3] = {~0u, ~0u, ~0u};
};
wharf_status* sum_fold(wharf_run* run, void* user) {
  auto* f = static_cast<SumFold*>(user);
  wharf_tensor_view v[3];
  const char* names[3] = {"a", "b", "d"};
  for (int i = 0; i < 3; ++i) {
    std::memset(&v[i], 0, sizeof v[i]);
    v[i].struct_size = sizeof v[i];
    if (wharf_status* st = wharf_run_get_tensor(run, names[i], &v[i])) return st;
    f->flags[i] = v[i].flags;
  }
  if (v[2].flags & WHARF_VIEW_READ_ONLY)
    return wharf_status_create(WHARF_INTERNAL, "the derived constant is read-only");
  auto s = static_cast<cudaStream_t>(wharf_run_stream(run));
  add_kernel<<<64, 256, 0, s>>>(static_cast<const float*>(v[0].data), static_cast<const float*>(v[1].data),
                                static_cast<float*>(v[2].data), uint64_t(v[0].shape[0]));
  return nullptr;
}

// A fold's run marks read-only every constant it may not write (issue 21, item 5): those its
// update did not write share their device storage with the active generation, which a
// kernel of an open run reads. Derived constants and the written ones are writable.
TEST_F(GpuContainer, FoldRunMarksConstantsItsUpdateDidNotWriteReadOnly) {
  int64_t n = 4096;
  wharf_constant_decl d[3] = {
      {sizeof(wharf_constant_decl), "a", WHARF_DTYPE_F32, 1, &n, WHARF_PLACEMENT_DEVICE, 0},
      {sizeof(wharf_constant_decl), "b", WHARF_DTYPE_F32, 1, &n, WHARF_PLACEMENT_DEVICE, 0},
      {sizeof(wharf_constant_decl), "d", WHARF_DTYPE_F32, 1, &n, WHARF_PLACEMENT_DEVICE, WHARF_CONSTANT_DERIVED}};
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.constants = d;
  o.num_constants = 3;
  ASSERT_OK(wharf_container_create(rt, &o, &c));
  std::vector<float> a(4096, 1.0f), b(4096, 10.0f), a2(4096, 2.0f);
  auto map_of = [&](std::vector<std::pair<const char*, float*>> entries) {
    wharf_constant_map* m = nullptr;
    EXPECT_EQ(wharf_constant_map_create(&m), nullptr);
    for (auto& e : entries) {
      wharf_tensor_view v{sizeof(wharf_tensor_view), 0, e.second, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, &n, nullptr};
      EXPECT_EQ(wharf_constant_map_set(m, e.first, &v), nullptr);
    }
    return m;
  };
  wharf_update_options u;
  wharf_update_options_init(&u);
  u.fold = sum_fold;
  SumFold first;
  u.fold_user = &first;
  wharf_constant_map* both = map_of({{"a", a.data()}, {"b", b.data()}});
  ASSERT_OK(wharf_container_update(c, both, &u));
  ASSERT_OK(wharf_container_swap(c));
  for (uint32_t f : first.flags) EXPECT_EQ(f, 0u);

  wharf_run* open = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &open));
  wharf_tensor_view ob{};
  std::memset(&ob, 0, sizeof ob);
  ob.struct_size = sizeof ob;
  ASSERT_OK(wharf_run_get_tensor(open, "b", &ob));
  EXPECT_EQ(ob.flags, WHARF_VIEW_READ_ONLY);
  EXPECT_EQ(ob.device_type, WHARF_DEVICE_CUDA);
  SumFold partial;
  u.fold_user = &partial;
  wharf_constant_map* only_a = map_of({{"a", a2.data()}});
  ASSERT_OK(wharf_container_update(c, only_a, &u));
  EXPECT_EQ(partial.flags[0], 0u);
  EXPECT_EQ(partial.flags[1], WHARF_VIEW_READ_ONLY);
  EXPECT_EQ(partial.flags[2], 0u);
  // The open run's kernel still reads b = 10 everywhere.
  Counters bad(1);
  count_mismatch(static_cast<cudaStream_t>(wharf_run_stream(open)), ob, 10.0f, bad.at(0));
  ASSERT_OK(wharf_run_end(open));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(bad[0], 0ull);
  ASSERT_OK(wharf_container_swap(c));
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  std::vector<float> out(4096);
  ASSERT_OK(wharf_run_read(run, "d", 0, out.data(), 4096 * 4));
  EXPECT_EQ(out[0], 12.0f);
  EXPECT_EQ(out[4095], 12.0f);
  ASSERT_OK(wharf_run_end(run));
  wharf_constant_map_free(both);
  wharf_constant_map_free(only_a);
}

TEST_F(GpuContainer, PartialUpdateCostsTheUpdatedBytesOnDevice) {
  load(1.0f);
  uint64_t model = constants_bytes();
  size_t free0 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  wharf_constant_map* m = stamped(2.0f, kTensors / 4);
  ASSERT_OK(wharf_container_update(c, m, nullptr));
  wharf_constant_map_free(m);
  size_t free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  uint64_t updated = uint64_t(kTensors / 4) * kElems * 4;
  EXPECT_EQ(constants_bytes() - model, updated);
  EXPECT_GE(free0 - free1, updated);                // the driver agrees
  EXPECT_LT(free0 - free1, updated + (64u << 20));  // and it is not a model copy
}

// Four serving threads, each on its own stream, check on the device that every tensor of
// their run holds the run's generation stamp, while the main thread updates and swaps.
TEST_F(GpuContainer, ConcurrentRunsSeeExactlyOneGenerationOnDevice) {
  load(1.0f);
  std::mutex mu;
  std::map<uint64_t, float> stamp_of{{wharf_container_generation(c), 1.0f}};
  std::atomic<bool> stop{false};
  std::atomic<int> runs{0}, errors{0};
  Counters bad(1);
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      cudaStream_t s;
      if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        ++errors;
        return;
      }
      while (!stop) {
        wharf_run* run = nullptr;
        St st(wharf_run_begin(c, nullptr, s, &run));
        if (st.code() != WHARF_OK) {
          ++errors;
          break;
        }
        float expect;
        {
          std::lock_guard<std::mutex> lock(mu);
          expect = stamp_of.at(wharf_run_generation(run));
        }
        for (int i = 0; i < kTensors; ++i) {
          wharf_tensor_view v{};
          St ts(wharf_run_get_tensor(run, name(i).c_str(), &v));
          if (ts.code() != WHARF_OK)
            ++errors;
          else
            count_mismatch(s, v, expect, bad.at(0));
        }
        St end(wharf_run_end(run));
        if (end.code() != WHARF_OK) ++errors;
        ++runs;
        // One request at a time per stream, as a server does; unbounded queues would only
        // measure the launch backlog (and crawl under compute-sanitizer).
        if (cudaStreamSynchronize(s) != cudaSuccess) ++errors;
      }
      if (cudaStreamSynchronize(s) != cudaSuccess) ++errors;
      cudaStreamDestroy(s);
    });
  }
  for (int k = 2; k < 30; ++k) {
    wharf_constant_map* m = stamped(float(k));
    ASSERT_OK(wharf_container_update(c, m, nullptr));
    {
      std::lock_guard<std::mutex> lock(mu);
      stamp_of[wharf_container_generation(c) + 1] = float(k);
    }
    ASSERT_OK(wharf_container_swap(c));
    ASSERT_OK(wharf_container_free_inactive(c));
    wharf_constant_map_free(m);
  }
  stop = true;
  for (auto& t : readers) t.join();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(runs.load(), 0);
  EXPECT_EQ(bad[0], 0ull);
}

}  // namespace
