// SPDX-License-Identifier: Apache-2.0
// The CUDA backend of the device layer (src/device/cuda). Every test of the CudaTest fixture
// skips, with the reason cuda_device_available gives, when no GPU is visible (CI); the
// CudaAvailability tests check that no-GPU path itself and run everywhere.
//
// Ordering tests use a spin kernel (the GPU busy for a known time) so that "B ran after A"
// is observable: if the ordering under test were missing, the later operation would see the
// buffer before A wrote it.
//
// Two tests (DriverOutOfMemory, FailingCudaCallNamesTheOperation) make CUDA calls fail on
// purpose; run compute-sanitizer with --report-api-errors=no or filter them out.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "device/device.h"
#include "device/transfer.h"
#include "test_kernels.h"

namespace wharf {
namespace {

#define ASSERT_OK(expr)                                                          \
  do {                                                                           \
    const ::wharf::Status assert_ok_st_ = (expr);                                \
    ASSERT_TRUE(assert_ok_st_.ok()) << #expr << ": " << assert_ok_st_.message(); \
  } while (0)
#define EXPECT_OK(expr)                                                          \
  do {                                                                           \
    const ::wharf::Status expect_ok_st_ = (expr);                                \
    EXPECT_TRUE(expect_ok_st_.ok()) << #expr << ": " << expect_ok_st_.message(); \
  } while (0)

constexpr uint64_t kMiB = uint64_t(1) << 20;
constexpr uint64_t kSpinNs = 50'000'000;  // 50 ms: far longer than any enqueue-to-check gap

cudaStream_t native(Stream& s) { return static_cast<cudaStream_t>(s.native_handle()); }
int tag_index(MemTag t) { return static_cast<int>(t); }

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

// Counts mismatches against pattern(seed, i), so a failure prints one line, not a million.
uint64_t pattern_mismatches(const uint32_t* p, uint64_t n, uint32_t seed) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; ++i) bad += p[i] != wharf_test::pattern(seed, i);
  return bad;
}

// A host function on a stream that holds the stream busy until the test opens the gate: work
// that cannot finish early however the GPU (or compute-sanitizer, which serializes kernels)
// schedules it. It opens by itself after a minute so that a failing test cannot hang the
// process; release() opens it and waits for the stream, and so does the destructor after an
// early return (the host function reads this object).
class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream) : stream_(stream) {}
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  ~StreamGate() { (void)release(); }

  cudaError_t close() {
    cudaError_t e = cudaLaunchHostFunc(stream_, &StreamGate::wait, this);
    pending_ = e == cudaSuccess;
    return e;
  }

  cudaError_t release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
    if (!pending_) return cudaSuccess;
    pending_ = false;
    return cudaStreamSynchronize(stream_);
  }

 private:
  static void CUDART_CB wait(void* self) {
    auto* g = static_cast<StreamGate*>(self);
    std::unique_lock<std::mutex> lock(g->mu_);
    g->cv_.wait_for(lock, std::chrono::minutes(1), [g] { return g->open_; });
  }

  const cudaStream_t stream_;
  bool pending_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;  // guarded by mu_
};

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!cuda_device_available(0, &reason)) GTEST_SKIP() << "no usable CUDA device 0: " << reason;
    DeviceOptions opts;
    opts.device_index = 0;
    ASSERT_OK(create_cuda_device(opts, &dev_));
  }

  MemorySnapshot snap() const { return dev_->accounting().snapshot(); }

  std::shared_ptr<Device> dev_;
};

// ---- availability: runs with or without a GPU ------------------------------------------------

TEST(CudaAvailability, ReportsReasonsAndNeverCrashes) {
  EXPECT_TRUE(cuda_backend_built());
  std::string reason;
  EXPECT_FALSE(cuda_device_available(-1, &reason));
  EXPECT_FALSE(reason.empty());
  reason.clear();
  EXPECT_FALSE(cuda_device_available(1 << 20, &reason));
  EXPECT_FALSE(reason.empty());
  EXPECT_FALSE(cuda_device_available(-1, nullptr));  // reason is optional

  // A device that is not there is UNSUPPORTED, with the reason in the message.
  DeviceOptions far;
  far.device_index = 1 << 20;
  std::shared_ptr<Device> dev;
  Status st = create_cuda_device(far, &dev);
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.message();
  EXPECT_NE(st.message().find(reason), std::string::npos) << st.message();
  EXPECT_EQ(dev, nullptr);

  reason.clear();
  if (!cuda_device_available(0, &reason)) {
    EXPECT_FALSE(reason.empty());
    st = create_cuda_device(DeviceOptions{}, &dev);
    EXPECT_EQ(st.code(), Code::kUnsupported) << st.message();
    EXPECT_NE(st.message().find(reason), std::string::npos) << st.message();
    // The reason a CI log shows, so a skipped GPU suite is explained.
    std::printf("[          ] no CUDA device: %s\n", reason.c_str());
  }
}

// ---- device, memory and accounting -----------------------------------------------------------

TEST_F(CudaTest, Info) {
  EXPECT_EQ(dev_->backend(), Backend::kCuda);
  EXPECT_EQ(dev_->index(), 0);
  DeviceInfo info;
  ASSERT_OK(dev_->info(&info));
  EXPECT_EQ(info.backend, Backend::kCuda);
  EXPECT_EQ(info.index, 0);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.total_memory, 0u);
  EXPECT_GT(info.free_memory, 0u);
  EXPECT_LE(info.free_memory, info.total_memory);
  EXPECT_GE(info.compute_major, 5);  // oldest architecture CUDA 12+ supports
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_EQ(info.name, prop.name);
  EXPECT_EQ(info.total_memory, prop.totalGlobalMem);
  EXPECT_EQ(info.compute_major, prop.major);
  EXPECT_EQ(info.compute_minor, prop.minor);
}

TEST_F(CudaTest, AllocationAccountingPerTag) {
  Buffer a, b, z;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kConstants, 3 * kMiB, "constants", &a));
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, 1 * kMiB + 1, "workspace", &b));
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kState, 0, "empty", &z));
  ASSERT_NE(a.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 256, 0u);  // cudaMalloc's alignment
  EXPECT_TRUE(z);                                              // zero bytes: a live, empty buffer
  EXPECT_EQ(z.data(), nullptr);
  EXPECT_EQ(a.size(), 3 * kMiB);
  EXPECT_EQ(a.kind(), MemKind::kDevice);
  EXPECT_EQ(a.tag(), MemTag::kConstants);

  MemorySnapshot s = snap();
  EXPECT_EQ(s.current[tag_index(MemTag::kConstants)], 3 * kMiB);
  EXPECT_EQ(s.current[tag_index(MemTag::kWorkspace)], kMiB + 1);
  EXPECT_EQ(s.current[tag_index(MemTag::kState)], 0u);
  EXPECT_EQ(s.device_current, 4 * kMiB + 1);
  EXPECT_EQ(s.device_peak, 4 * kMiB + 1);
  EXPECT_EQ(s.pinned_current, 0u);

  a.reset();
  s = snap();
  EXPECT_EQ(s.current[tag_index(MemTag::kConstants)], 0u);
  EXPECT_EQ(s.peak[tag_index(MemTag::kConstants)], 3 * kMiB);
  EXPECT_EQ(s.device_current, kMiB + 1);
  EXPECT_EQ(s.device_peak, 4 * kMiB + 1);
  b.reset();
  z.reset();
  EXPECT_EQ(snap().device_current, 0u);
}

TEST_F(CudaTest, DeviceMemoryLimitRefusesBeforeTheDriver) {
  DeviceOptions opts;
  opts.device_memory_limit = 64 * kMiB;
  std::shared_ptr<Device> dev;
  ASSERT_OK(create_cuda_device(opts, &dev));

  Buffer a;
  ASSERT_OK(dev->allocate(MemKind::kDevice, MemTag::kConstants, 48 * kMiB, "first", &a));
  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);

  Buffer b;
  Status st = dev->allocate(MemKind::kDevice, MemTag::kWorkspace, 32 * kMiB, "over-limit buffer", &b);
  EXPECT_EQ(st.code(), Code::kOutOfMemory) << st.message();
  EXPECT_NE(st.message().find("over-limit buffer"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("device_memory_limit"), std::string::npos) << st.message();
  EXPECT_FALSE(b);

  // Nothing counted, nothing taken from the GPU.
  MemorySnapshot s = dev->accounting().snapshot();
  EXPECT_EQ(s.device_current, 48 * kMiB);
  EXPECT_EQ(s.device_peak, 48 * kMiB);
  EXPECT_EQ(s.current[tag_index(MemTag::kWorkspace)], 0u);
  EXPECT_EQ(s.peak[tag_index(MemTag::kWorkspace)], 0u);
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  EXPECT_LT(int64_t(free_before) - int64_t(free_after), int64_t(32 * kMiB));

  // The limit caps device memory only; pinned host memory is not counted against it.
  Buffer p;
  ASSERT_OK(dev->allocate(MemKind::kPinnedHost, MemTag::kStaging, 80 * kMiB, "pinned", &p));

  a.reset();
  p.reset();
  s = dev->accounting().snapshot();
  EXPECT_EQ(s.device_current, 0u);
  EXPECT_EQ(s.pinned_current, 0u);
  // With the first buffer gone the same request fits: the refusal leaked nothing.
  ASSERT_OK(dev->allocate(MemKind::kDevice, MemTag::kWorkspace, 64 * kMiB, "exactly the limit", &b));
}

TEST_F(CudaTest, DriverOutOfMemory) {
  DeviceInfo info;
  ASSERT_OK(dev_->info(&info));
  Buffer b;
  const uint64_t huge = info.total_memory * 4;  // no device limit: this reaches the driver
  Status st = dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, huge, "huge buffer", &b);
  EXPECT_EQ(st.code(), Code::kOutOfMemory) << st.message();
  // From the runtime's memory pool (cudaMallocFromPoolAsync), or cudaMalloc without pools.
  EXPECT_NE(st.message().find("cudaMalloc"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(" of " + std::to_string(huge) + " bytes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("cudaErrorMemoryAllocation"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("huge buffer"), std::string::npos) << st.message();
  EXPECT_FALSE(b);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // the backend cleared what it reported
  EXPECT_EQ(snap().device_current, 0u);
  EXPECT_EQ(snap().current[tag_index(MemTag::kWorkspace)], 0u);
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, kMiB, "after OOM", &b));  // still usable
}

TEST_F(CudaTest, PinnedAllocationCountedAsPinned) {
  Buffer p;
  ASSERT_OK(dev_->allocate(MemKind::kPinnedHost, MemTag::kStaging, 2 * kMiB, "staging", &p));
  ASSERT_NE(p.data(), nullptr);
  std::memset(p.data(), 0x3C, p.size());  // host-writable
  MemorySnapshot s = snap();
  EXPECT_EQ(s.pinned_current, 2 * kMiB);
  EXPECT_EQ(s.pinned_peak, 2 * kMiB);
  EXPECT_EQ(s.device_current, 0u);
  EXPECT_EQ(s.current[tag_index(MemTag::kStaging)], 2 * kMiB);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, p.data()), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  p.reset();
  EXPECT_EQ(snap().pinned_current, 0u);
  EXPECT_EQ(snap().pinned_peak, 2 * kMiB);
}

TEST_F(CudaTest, AllocationMatchesCudaMemGetInfo) {
  size_t free0 = 0, free1 = 0, free2 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  Buffer b;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kOffload, 256 * kMiB, "offload", &b));
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_GE(int64_t(free0) - int64_t(free1), int64_t(256 * kMiB)) << "free before " << free0 << ", after " << free1;
  EXPECT_EQ(snap().current[tag_index(MemTag::kOffload)], 256 * kMiB);
  EXPECT_EQ(snap().device_current, 256 * kMiB);
  DeviceInfo info;
  ASSERT_OK(dev_->info(&info));
  EXPECT_LE(info.free_memory, free0 - 256 * kMiB);  // info() reads the live figure
  b.reset();
  ASSERT_EQ(cudaMemGetInfo(&free2, &total), cudaSuccess);
  // cudaFree hands the memory back to the driver (no caching in the backend).
  EXPECT_GE(int64_t(free2) - int64_t(free1), int64_t(254 * kMiB)) << "after free " << free2;
}

TEST_F(CudaTest, QueryPointer) {
  std::vector<char> pageable(4096);
  int on_stack = 0;
  Buffer d, p;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, 4096, "d", &d));
  ASSERT_OK(dev_->allocate(MemKind::kPinnedHost, MemTag::kStaging, 4096, "p", &p));

  PointerInfo i = dev_->query_pointer(pageable.data());
  EXPECT_EQ(i.kind, PointerKind::kPageableHost);
  EXPECT_EQ(i.device_index, -1);
  EXPECT_EQ(dev_->query_pointer(&on_stack).kind, PointerKind::kPageableHost);
  EXPECT_EQ(dev_->query_pointer(nullptr).kind, PointerKind::kPageableHost);

  i = dev_->query_pointer(d.data());
  EXPECT_EQ(i.kind, PointerKind::kDevice);
  EXPECT_EQ(i.device_index, 0);
  i = dev_->query_pointer(static_cast<char*>(d.data()) + 4095);  // interior pointer
  EXPECT_EQ(i.kind, PointerKind::kDevice);
  EXPECT_EQ(i.device_index, 0);

  i = dev_->query_pointer(p.data());
  EXPECT_EQ(i.kind, PointerKind::kPinnedHost);
  EXPECT_EQ(dev_->query_pointer(static_cast<char*>(p.data()) + 100).kind, PointerKind::kPinnedHost);

  // Caller memory registered with CUDA is pinned too (the runtime copies it directly).
  std::vector<char> registered(64 * 1024);
  ASSERT_EQ(cudaHostRegister(registered.data(), registered.size(), cudaHostRegisterDefault), cudaSuccess);
  EXPECT_EQ(dev_->query_pointer(registered.data()).kind, PointerKind::kPinnedHost);
  ASSERT_EQ(cudaHostUnregister(registered.data()), cudaSuccess);
  EXPECT_EQ(dev_->query_pointer(registered.data()).kind, PointerKind::kPageableHost);

  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // no error left behind by the queries
}

// ---- streams: copies and memsets -------------------------------------------------------------

TEST_F(CudaTest, CopyRoundTripThroughEveryKindOfMemory) {
  const uint64_t n = 4 * kMiB + 13;  // odd size: no accidental alignment-only path
  std::vector<uint8_t> src(n), back(n, 0);
  for (uint64_t i = 0; i < n; ++i) src[i] = uint8_t(wharf_test::pattern(7, i));
  Buffer a, b, pin;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, n, "a", &a));
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, n, "b", &b));
  ASSERT_OK(dev_->allocate(MemKind::kPinnedHost, MemTag::kStaging, n, "pin", &pin));
  // Known-different contents (freshly allocated memory may hold an earlier test's data).
  ASSERT_EQ(cudaMemset(a.data(), 0, n), cudaSuccess);
  ASSERT_EQ(cudaMemset(b.data(), 0, n), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the legacy stream's memsets, before Wharf's streams
  std::memset(pin.data(), 0, n);

  std::unique_ptr<Stream> s;
  ASSERT_OK(dev_->create_stream(&s));
  ASSERT_NE(s->native_handle(), nullptr);
  // pageable -> device -> device -> pinned
  ASSERT_OK(s->copy_async(a.data(), src.data(), n));
  ASSERT_OK(s->copy_async(b.data(), a.data(), n));
  ASSERT_OK(s->copy_async(pin.data(), b.data(), n));
  ASSERT_OK(s->synchronize());
  EXPECT_EQ(std::memcmp(pin.data(), src.data(), n), 0);

  // pinned -> device -> pageable, with different data so a stale buffer cannot pass
  for (uint64_t i = 0; i < n; ++i) static_cast<uint8_t*>(pin.data())[i] = uint8_t(~src[i]);
  ASSERT_OK(s->copy_async(b.data(), pin.data(), n));
  ASSERT_OK(s->copy_async(back.data(), b.data(), n));
  ASSERT_OK(s->synchronize());
  EXPECT_EQ(std::memcmp(back.data(), pin.data(), n), 0);

  ASSERT_OK(s->copy_async(nullptr, nullptr, 0));  // zero bytes is a no-op, even with nulls
}

// Two allocations can sit back to back in the address space; one DMA spanning both is
// rejected by CUDA (cudaErrorInvalidValue). The engine packs both requests into one staging
// chunk and must still copy each into its own allocation. (Found by `wharf demo`.)
TEST_F(CudaTest, TransferEngineNeverMergesCopiesAcrossAdjacentAllocations) {
  const uint64_t n = 2 * kMiB;  // cudaMalloc's granularity: neighbours are often adjacent
  std::vector<Buffer> bufs(16);
  for (size_t i = 0; i < bufs.size(); ++i)
    ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, n, "buf" + std::to_string(i), &bufs[i]));
  Buffer *lo = nullptr, *hi = nullptr;
  for (auto& x : bufs)
    for (auto& y : bufs)
      if (static_cast<char*>(x.data()) + n == y.data()) lo = &x, hi = &y;
  if (!lo) GTEST_SKIP() << "no two adjacent allocations to test with";
  std::vector<uint32_t> a(n / 4), b(n / 4), back(n / 4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = wharf_test::pattern(1, i), b[i] = wharf_test::pattern(2, i);
  TransferOptions topts;
  topts.threads = 1;
  topts.chunk_bytes = 4 * kMiB;  // both requests land in one chunk, destinations adjacent
  topts.staging_bytes = 8 * kMiB;
  std::unique_ptr<TransferEngine> engine;
  ASSERT_OK(TransferEngine::create(dev_, topts, &engine));
  ASSERT_OK(engine->copy({{lo->data(), a.data(), n}, {hi->data(), b.data(), n}}, {}));
  ASSERT_EQ(cudaMemcpy(back.data(), lo->data(), n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(pattern_mismatches(back.data(), back.size(), 1), 0u);
  ASSERT_EQ(cudaMemcpy(back.data(), hi->data(), n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(pattern_mismatches(back.data(), back.size(), 2), 0u);
}

// While runs are being served (issue 26) the engine splits its DMAs into pieces and paces
// them with an event per piece (device/serving.h): staged (pageable) and direct (pinned)
// copies still land byte for byte, in more DMAs, and the pacing waits happened.
TEST_F(CudaTest, TransferEnginePacedForServingRunsLandsByteForByte) {
  const uint64_t n = 5 * kMiB + 1024, m = 3 * kMiB;
  Buffer d1, d2, pin;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, n, "d1", &d1));
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, m, "d2", &d2));
  ASSERT_OK(dev_->allocate(MemKind::kPinnedHost, MemTag::kStaging, m, "pin", &pin));
  std::vector<uint32_t> a(n / 4), back(n / 4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = wharf_test::pattern(3, i);
  auto* p = static_cast<uint32_t*>(pin.data());
  for (size_t i = 0; i < m / 4; ++i) p[i] = wharf_test::pattern(4, i);
  auto signal = std::make_shared<ServingSignal>();
  signal->note_run();
  TransferOptions topts;
  topts.threads = 4;
  topts.chunk_bytes = 1 * kMiB;
  topts.staging_bytes = 8 * kMiB;
  topts.block_bytes = 4 * kMiB;
  topts.serving = signal;
  ServingPolicy policy;
  policy.dma_bytes = 64 * 1024;
  policy.inflight_bytes = 128 * 1024;
  policy.window_ms = 60000;
  topts.serving_policy = policy;
  std::unique_ptr<TransferEngine> engine;
  ASSERT_OK(TransferEngine::create(dev_, topts, &engine));
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(cudaMemset(d1.data(), 0, n), cudaSuccess);
    ASSERT_EQ(cudaMemset(d2.data(), 0, m), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the legacy stream's memsets, before the engine's streams
    TransferStats stats;
    ASSERT_OK(engine->copy({{d1.data(), a.data(), n}, {d2.data(), pin.data(), m}}, {}, &stats));
    EXPECT_TRUE(stats.serving);
    EXPECT_EQ(stats.staged_copies, (n + policy.dma_bytes - 1) / policy.dma_bytes) << "one DMA per 64 KiB piece";
    EXPECT_EQ(stats.direct_copies, m / policy.dma_bytes);
    EXPECT_GT(stats.paced_waits, 0u);
    ASSERT_EQ(cudaMemcpy(back.data(), d1.data(), n, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(pattern_mismatches(back.data(), n / 4, 3), 0u) << "round " << round;
    ASSERT_EQ(cudaMemcpy(back.data(), d2.data(), m, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(pattern_mismatches(back.data(), m / 4, 4), 0u) << "round " << round;
  }
}

TEST_F(CudaTest, MemsetAsyncDevice) {
  const uint64_t n = kMiB + 7;
  Buffer d, pin;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, n, "d", &d));
  ASSERT_OK(dev_->allocate(MemKind::kPinnedHost, MemTag::kStaging, n, "pin", &pin));
  std::memset(pin.data(), 0, n);
  std::unique_ptr<Stream> s;
  ASSERT_OK(dev_->create_stream(&s));
  ASSERT_OK(s->memset_async(d.data(), 0xAB, n));
  ASSERT_OK(s->memset_async(static_cast<char*>(d.data()) + 100, 0x11, 200));
  ASSERT_OK(s->copy_async(pin.data(), d.data(), n));
  ASSERT_OK(s->synchronize());
  const auto* p = static_cast<const uint8_t*>(pin.data());
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; ++i) bad += p[i] != ((i >= 100 && i < 300) ? 0x11 : 0xAB);
  EXPECT_EQ(bad, 0u);
}

TEST_F(CudaTest, MemsetAsyncHostMemoryIsStreamOrdered) {
  Buffer pin;
  ASSERT_OK(dev_->allocate(MemKind::kPinnedHost, MemTag::kStaging, 4096, "pin", &pin));
  std::vector<uint8_t> pageable(4096, 0);
  std::memset(pin.data(), 0, 4096);
  std::unique_ptr<Stream> s;
  ASSERT_OK(dev_->create_stream(&s));
  ASSERT_EQ(wharf_test::launch_spin(native(*s), kSpinNs), cudaSuccess);
  ASSERT_OK(s->memset_async(pin.data(), 0x5A, 4096));
  ASSERT_OK(s->memset_async(pageable.data(), 0x6B, 4096));
  // The GPU is still spinning: the host-side memsets must not have run yet.
  EXPECT_EQ(static_cast<volatile uint8_t*>(pin.data())[4095], 0);
  EXPECT_EQ(static_cast<volatile uint8_t*>(pageable.data())[4095], 0);
  ASSERT_OK(s->synchronize());
  const auto* p = static_cast<const uint8_t*>(pin.data());
  for (int i = 0; i < 4096; ++i) {
    ASSERT_EQ(p[i], 0x5A) << i;
    ASSERT_EQ(pageable[i], 0x6B) << i;
  }
}

// ---- events and ordering ---------------------------------------------------------------------

TEST_F(CudaTest, EventRecordedAfterSpinKernel) {
  std::unique_ptr<Stream> s;
  std::unique_ptr<Event> e;
  ASSERT_OK(dev_->create_stream(&s));
  ASSERT_OK(dev_->create_event(&e));
  bool done = false;
  ASSERT_OK(e->query(&done));
  EXPECT_TRUE(done);  // never recorded

  ASSERT_EQ(wharf_test::launch_spin(native(*s), kSpinNs), cudaSuccess);
  ASSERT_OK(s->record(*e));
  ASSERT_OK(e->query(&done));
  EXPECT_FALSE(done);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // "not ready" must not linger as an error
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_OK(e->synchronize());
  EXPECT_GT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(10));  // it did wait
  ASSERT_OK(e->query(&done));
  EXPECT_TRUE(done);
  EXPECT_EQ(cudaStreamQuery(native(*s)), cudaSuccess);
}

// Timing events (the transfer trace's device clock): the time between two records around a
// 50 ms spin is about 50 ms; events made without timing, or not yet complete, refuse.
TEST_F(CudaTest, TimingEventsMeasureTheWorkBetweenThem) {
  std::unique_ptr<Stream> s;
  std::unique_ptr<Event> a, b, plain;
  ASSERT_OK(dev_->create_stream(&s));
  ASSERT_OK(dev_->create_timing_event(&a));
  ASSERT_OK(dev_->create_timing_event(&b));
  ASSERT_OK(dev_->create_event(&plain));
  ASSERT_OK(s->record(*a));
  ASSERT_EQ(wharf_test::launch_spin(native(*s), kSpinNs), cudaSuccess);
  ASSERT_OK(s->record(*b));
  ASSERT_OK(s->record(*plain));
  double ms = 0;
  EXPECT_FALSE(b->elapsed_ms_since(*a, &ms).ok());  // b not complete yet
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_OK(s->synchronize());
  ASSERT_OK(b->elapsed_ms_since(*a, &ms));
  EXPECT_GT(ms, 45.0);
  EXPECT_LT(ms, 1000.0);
  EXPECT_EQ(plain->elapsed_ms_since(*a, &ms).code(), Code::kInvalidArgument);
  EXPECT_EQ(a->elapsed_ms_since(*plain, &ms).code(), Code::kInvalidArgument);
}

// The transfer engine's trace on the GPU: every block and direct copy has device times, in
// order within the call, and the copy engine moved the bytes at a plausible rate while busy.
TEST_F(CudaTest, TransferTraceTimesEveryBlockOnTheDevice) {
  const uint64_t n = 64 * kMiB, m = 16 * kMiB;
  Buffer d1, d2, pin;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, n, "d1", &d1));
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, m, "d2", &d2));
  ASSERT_OK(dev_->allocate(MemKind::kPinnedHost, MemTag::kStaging, m, "pin", &pin));
  std::vector<uint32_t> a(n / 4), back(n / 4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = wharf_test::pattern(5, i);
  std::memset(pin.data(), 1, m);
  TransferOptions topts;
  topts.threads = 4;
  topts.chunk_bytes = 4 * kMiB;
  topts.staging_bytes = 32 * kMiB;
  std::unique_ptr<TransferEngine> engine;
  ASSERT_OK(TransferEngine::create(dev_, topts, &engine));
  for (int round = 0; round < 2; ++round) {  // the second reuses the trace's timing events
    TransferTrace tr;
    ASSERT_OK(engine->copy({{d1.data(), a.data(), n}, {d2.data(), pin.data(), m}}, {}, nullptr, nullptr, nullptr, &tr));
    ASSERT_EQ(cudaMemcpy(back.data(), d1.data(), n, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(pattern_mismatches(back.data(), n / 4, 5), 0u) << "round " << round;
    ASSERT_TRUE(tr.device_times);
    ASSERT_FALSE(tr.blocks.empty());
    const double total_ms = double(tr.total_ns) / 1e6;
    for (const TransferTrace::Block& b : tr.blocks) {
      EXPECT_GE(b.device_start_ms, 0.0);
      EXPECT_GE(b.device_end_ms, b.device_start_ms);
      EXPECT_LE(b.device_end_ms, total_ms + 1.0);  // the device's clock starts within us of the host's
    }
    ASSERT_EQ(tr.directs.size(), 1u);
    EXPECT_GT(tr.directs[0].device_end_ms, tr.directs[0].device_start_ms);
    const TransferTraceSummary s = summarize_transfer_trace(tr);
    EXPECT_EQ(s.dma_bytes, n + m);
    EXPECT_GT(s.dma_busy_ms, 0.0);
    EXPECT_GT(double(s.dma_bytes) / (s.dma_busy_ms * 1e6), 1.0) << "GB/s while busy";
  }
}

TEST_F(CudaTest, StreamWaitOrdersWorkAcrossStreams) {
  const uint64_t n = kMiB;  // uint32 elements
  const uint32_t seed = 42;
  Buffer d, pin;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, n * 4, "d", &d));
  ASSERT_OK(dev_->allocate(MemKind::kPinnedHost, MemTag::kStaging, n * 4, "pin", &pin));
  ASSERT_EQ(cudaMemset(d.data(), 0, n * 4), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the legacy stream's memset, before Wharf's streams
  std::memset(pin.data(), 0, n * 4);

  std::unique_ptr<Stream> a, b;
  std::unique_ptr<Event> ev;
  ASSERT_OK(dev_->create_stream(&a));
  ASSERT_OK(dev_->create_stream(&b));
  ASSERT_OK(dev_->create_event(&ev));
  // A: busy for 50 ms, then writes the pattern. B: waits for A's event, then reads.
  ASSERT_EQ(wharf_test::launch_spin(native(*a), kSpinNs), cudaSuccess);
  ASSERT_EQ(wharf_test::launch_fill(native(*a), static_cast<uint32_t*>(d.data()), n, seed), cudaSuccess);
  ASSERT_OK(a->record(*ev));
  ASSERT_OK(b->wait(*ev));
  ASSERT_OK(b->copy_async(pin.data(), d.data(), n * 4));
  ASSERT_OK(b->synchronize());
  // Without the wait B would have copied the zeros A had not yet overwritten.
  EXPECT_EQ(pattern_mismatches(static_cast<const uint32_t*>(pin.data()), n, seed), 0u);
  ASSERT_OK(a->synchronize());
}

TEST_F(CudaTest, EventsOfAnotherBackendAreRejected) {
  std::shared_ptr<Device> host;
  ASSERT_OK(create_host_device(DeviceOptions{}, &host));
  std::unique_ptr<Event> host_event;
  ASSERT_OK(host->create_event(&host_event));
  std::unique_ptr<Stream> s;
  ASSERT_OK(dev_->create_stream(&s));
  EXPECT_EQ(s->record(*host_event).code(), Code::kInvalidArgument);
  EXPECT_EQ(s->wait(*host_event).code(), Code::kInvalidArgument);
}

TEST_F(CudaTest, EnqueueHostRunsAfterDeviceWorkAndBlocksLaterWork) {
  const uint64_t n = 256 * 1024;
  const uint32_t seed = 9;
  Buffer d, pin;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, n * 4, "d", &d));
  ASSERT_OK(dev_->allocate(MemKind::kPinnedHost, MemTag::kStaging, n * 4, "pin", &pin));
  std::memset(pin.data(), 0, n * 4);
  uint64_t expected = 0;
  for (uint64_t i = 0; i < n; ++i) expected += wharf_test::pattern(seed, i);

  std::unique_ptr<Stream> s;
  std::unique_ptr<Event> ev;
  ASSERT_OK(dev_->create_stream(&s));
  ASSERT_OK(dev_->create_event(&ev));
  ASSERT_EQ(wharf_test::launch_spin(native(*s), kSpinNs), cudaSuccess);
  ASSERT_EQ(wharf_test::launch_fill(native(*s), static_cast<uint32_t*>(d.data()), n, seed), cudaSuccess);
  ASSERT_OK(s->copy_async(pin.data(), d.data(), n * 4));

  std::atomic<uint64_t> sum{0};
  std::atomic<bool> second_done{false};
  const auto* host = static_cast<const uint32_t*>(pin.data());
  ASSERT_OK(s->enqueue_host([host, n, &sum] {
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; ++i) acc += host[i];
    sum = acc;
  }));
  ASSERT_OK(s->enqueue_host([&second_done] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    second_done = true;
  }));
  ASSERT_OK(s->record(*ev));  // later work: must not complete before the host function
  ASSERT_OK(ev->synchronize());
  EXPECT_TRUE(second_done.load());
  EXPECT_EQ(sum.load(), expected);  // read the copy's result, not the zeros before it
  ASSERT_OK(s->synchronize());

  EXPECT_EQ(s->enqueue_host(std::function<void()>()).code(), Code::kInvalidArgument);
  // A throwing host function is contained (logged), and the stream keeps working.
  ASSERT_OK(s->enqueue_host([] { throw std::runtime_error("test exception from a host function"); }));
  std::atomic<bool> after{false};
  ASSERT_OK(s->enqueue_host([&after] { after = true; }));
  ASSERT_OK(s->synchronize());
  EXPECT_TRUE(after.load());
}

// ---- wrapped streams and device-wide synchronization -----------------------------------------

TEST_F(CudaTest, WrapStreamUsesTheCallersStreamWithoutOwningIt) {
  std::unique_ptr<Stream> w;
  EXPECT_EQ(dev_->wrap_stream(nullptr, &w).code(), Code::kInvalidArgument);
  EXPECT_EQ(w, nullptr);

  cudaStream_t mine = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_OK(dev_->wrap_stream(mine, &w));
  EXPECT_EQ(w->native_handle(), static_cast<void*>(mine));

  const uint64_t n = 64 * 1024;
  std::vector<uint8_t> src(n), back(n, 0);
  for (uint64_t i = 0; i < n; ++i) src[i] = uint8_t(i * 31 + 5);
  Buffer d;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, n, "d", &d));
  ASSERT_OK(w->copy_async(d.data(), src.data(), n));
  ASSERT_OK(w->copy_async(back.data(), d.data(), n));
  ASSERT_OK(w->synchronize());
  EXPECT_EQ(back, src);

  // Work the caller put on its own stream is waited for by device->synchronize while the
  // wrapper exists (the runtime may have enqueued work there).
  ASSERT_EQ(wharf_test::launch_spin(mine, kSpinNs), cudaSuccess);
  ASSERT_OK(dev_->synchronize());
  EXPECT_EQ(cudaStreamQuery(mine), cudaSuccess);

  // Dropping the wrapper leaves the caller's stream alive and usable.
  w.reset();
  ASSERT_EQ(cudaMemsetAsync(d.data(), 0, n, mine), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(mine), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(mine), cudaSuccess);
}

TEST_F(CudaTest, DeviceSynchronizeWaitsForItsStreamsButNotForeignWork) {
  std::unique_ptr<Stream> s1, s2;
  ASSERT_OK(dev_->create_stream(&s1));
  ASSERT_OK(dev_->create_stream(&s2));
  cudaStream_t foreign = nullptr;  // another library's stream on the same GPU
  ASSERT_EQ(cudaStreamCreateWithFlags(&foreign, cudaStreamNonBlocking), cudaSuccess);

  // The foreign stream stays busy until the gate opens after the checks, not for a set time
  // (under compute-sanitizer an 800 ms spin there had ended before the query).
  ASSERT_EQ(wharf_test::launch_spin(native(*s1), kSpinNs), cudaSuccess);
  ASSERT_EQ(wharf_test::launch_spin(native(*s2), 2 * kSpinNs), cudaSuccess);
  StreamGate gate(foreign);
  ASSERT_EQ(gate.close(), cudaSuccess);
  // On another thread, so that a synchronize that waited for the gate fails the test instead
  // of hanging it. The future's destructor joins the thread.
  auto synced = std::async(std::launch::async, [this] { return dev_->synchronize(); });
  if (synced.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "dev_->synchronize() has not returned 10 s after its streams' 50 and 100 ms spins: it "
                     "waits for the foreign stream's work (cudaDeviceSynchronize?)";
    EXPECT_EQ(gate.release(), cudaSuccess);
    EXPECT_OK(synced.get());
    ASSERT_EQ(cudaStreamDestroy(foreign), cudaSuccess);
    return;
  }
  ASSERT_OK(synced.get());
  EXPECT_EQ(cudaStreamQuery(native(*s1)), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(native(*s2)), cudaSuccess);
  // Not cudaDeviceSynchronize: the foreign stream is still busy.
  EXPECT_EQ(cudaStreamQuery(foreign), cudaErrorNotReady);
  (void)cudaGetLastError();
  ASSERT_EQ(gate.release(), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(foreign), cudaSuccess);

  // A destroyed stream leaves the registry: synchronizing afterwards is fine.
  s1.reset();
  ASSERT_OK(dev_->synchronize());
}

// A registered stream being captured into a CUDA graph on another thread (a graph capture
// of a model with offloaded layers joins the offloader's copy stream into its capture) is
// skipped: synchronizing it would fail the call and invalidate that thread's capture.
TEST_F(CudaTest, DeviceSynchronizeLeavesACaptureOnAnotherThreadAlone) {
  std::unique_ptr<Stream> s, other;
  ASSERT_OK(dev_->create_stream(&s));
  ASSERT_OK(dev_->create_stream(&other));
  Buffer d;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, 4096, "d", &d));
  ASSERT_EQ(cudaStreamBeginCapture(native(*s), cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d.data(), 7, 4096, native(*s)), cudaSuccess);
  ASSERT_EQ(wharf_test::launch_spin(native(*other), kSpinNs), cudaSuccess);
  Status synced;
  // The query from that thread too: on this one (capturing in thread-local mode) it is an
  // unsafe call, which fails and invalidates the capture.
  cudaError_t other_state = cudaErrorUnknown;
  std::thread t([&] {
    synced = dev_->synchronize();
    other_state = cudaStreamQuery(native(*other));
  });
  t.join();
  EXPECT_TRUE(synced.ok()) << synced.message();
  EXPECT_EQ(other_state, cudaSuccess) << "the other streams are still waited for";
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(native(*s), &graph), cudaSuccess) << "the capture was invalidated";
  ASSERT_NE(graph, nullptr);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, native(*s)), cudaSuccess);
  std::vector<uint8_t> back(4096, 0);
  ASSERT_OK(s->copy_async(back.data(), d.data(), back.size()));
  ASSERT_OK(s->synchronize());
  EXPECT_EQ(back, std::vector<uint8_t>(4096, 7));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST_F(CudaTest, DeviceSynchronizeWhileStreamsComeAndGo) {
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread churn([&] {
    for (int i = 0; i < 200; ++i) {
      std::unique_ptr<Stream> s;
      if (!dev_->create_stream(&s).ok()) {
        ++failures;
        continue;
      }
      if (wharf_test::launch_spin(native(*s), 20'000) != cudaSuccess) ++failures;  // 20 us
    }  // each stream is destroyed with work possibly still queued
    stop = true;
  });
  int rounds = 0;
  while (!stop.load()) {
    Status st = dev_->synchronize();
    EXPECT_TRUE(st.ok()) << st.message();
    ++rounds;
  }
  churn.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(rounds, 0);
  ASSERT_OK(dev_->synchronize());
}

TEST_F(CudaTest, StreamsKeepTheirDeviceAlive) {
  std::shared_ptr<Device> dev;
  ASSERT_OK(create_cuda_device(DeviceOptions{}, &dev));
  std::unique_ptr<Stream> s;
  ASSERT_OK(dev->create_stream(&s));
  Buffer d;
  ASSERT_OK(dev->allocate(MemKind::kDevice, MemTag::kWorkspace, 4096, "d", &d));
  std::weak_ptr<Device> weak = dev;
  dev.reset();
  std::vector<uint8_t> src(4096, 0x77), back(4096, 0);
  ASSERT_OK(s->copy_async(d.data(), src.data(), 4096));
  ASSERT_OK(s->copy_async(back.data(), d.data(), 4096));
  ASSERT_OK(s->synchronize());
  EXPECT_EQ(back, src);
  d.reset();
  EXPECT_FALSE(weak.expired());  // only the stream holds the device now
  ASSERT_OK(s->memset_async(back.data(), 0, 4096));
  ASSERT_OK(s->synchronize());
  EXPECT_EQ(back[4095], 0);
  s.reset();
  EXPECT_TRUE(weak.expired());
}

// ---- errors ----------------------------------------------------------------------------------

TEST_F(CudaTest, NullPointersAreInvalidArguments) {
  std::unique_ptr<Stream> s;
  ASSERT_OK(dev_->create_stream(&s));
  Buffer d;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, 4096, "d", &d));
  Status st = s->copy_async(nullptr, d.data(), 4096);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("copy of 4096 bytes"), std::string::npos) << st.message();
  EXPECT_EQ(s->copy_async(d.data(), nullptr, 4096).code(), Code::kInvalidArgument);
  st = s->memset_async(nullptr, 0, 4096);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("memset of 4096 bytes"), std::string::npos) << st.message();
  ASSERT_OK(s->synchronize());
}

// A deterministic CUDA failure without corrupting the context: synchronizing a stream
// that is being captured into a graph is illegal (cudaErrorStreamCaptureUnsupported, or
// ...Invalidated), and leaves the context intact.
TEST_F(CudaTest, FailingCudaCallNamesTheOperation) {
  std::unique_ptr<Stream> s;
  ASSERT_OK(dev_->create_stream(&s));
  ASSERT_EQ(cudaStreamBeginCapture(native(*s), cudaStreamCaptureModeRelaxed), cudaSuccess);
  Status st = s->synchronize();
  const cudaError_t left = cudaGetLastError();  // read before EndCapture sets its own
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(native(*s), &graph);  // ends the (invalidated) capture
  if (graph) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();

  EXPECT_EQ(st.code(), Code::kDeviceError) << st.message();
  EXPECT_NE(st.message().find("cudaStreamSynchronize"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("cudaErrorStreamCapture"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(hex(s->native_handle())), std::string::npos) << st.message();
  EXPECT_EQ(left, cudaSuccess) << "the backend should clear the error it reported";

  // Not a sticky error: the stream and device keep working.
  std::vector<uint8_t> src(1024, 0x42), back(1024, 0);
  Buffer d;
  ASSERT_OK(dev_->allocate(MemKind::kDevice, MemTag::kWorkspace, 1024, "d", &d));
  ASSERT_OK(s->copy_async(d.data(), src.data(), 1024));
  ASSERT_OK(s->copy_async(back.data(), d.data(), 1024));
  ASSERT_OK(s->synchronize());
  EXPECT_EQ(back, src);
}

// ---- several GPUs (skipped on one) ------------------------------------------------------------

TEST_F(CudaTest, EntryPointsSelectTheirDeviceOnAnyThread) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  if (count < 2) GTEST_SKIP() << "needs 2 CUDA devices, " << count << " visible";
  DeviceOptions opts;
  opts.device_index = 1;
  std::shared_ptr<Device> dev1;
  ASSERT_OK(create_cuda_device(opts, &dev1));
  std::thread t([&] {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);  // the caller's thread has device 0 current
    Buffer b;
    ASSERT_OK(dev1->allocate(MemKind::kDevice, MemTag::kWorkspace, kMiB, "b", &b));
    cudaPointerAttributes attr{};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, b.data()), cudaSuccess);
    EXPECT_EQ(attr.device, 1);
    PointerInfo pi = dev_->query_pointer(b.data());  // seen from device 0
    EXPECT_EQ(pi.kind, PointerKind::kDevice);
    EXPECT_EQ(pi.device_index, 1);
    std::unique_ptr<Stream> s;
    std::unique_ptr<Event> e;
    ASSERT_OK(dev1->create_stream(&s));
    ASSERT_OK(dev1->create_event(&e));
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);  // creating them made device 1 current again
    ASSERT_OK(s->memset_async(b.data(), 1, kMiB));
    ASSERT_OK(s->record(*e));  // event and stream both on device 1, whatever is current
    ASSERT_OK(e->synchronize());
    // An event of device 0 cannot be recorded on a device-1 stream.
    std::unique_ptr<Event> e0;
    ASSERT_OK(dev_->create_event(&e0));
    EXPECT_EQ(s->record(*e0).code(), Code::kInvalidArgument);
    ASSERT_OK(s->wait(*e0));  // but cross-device waits are fine
    ASSERT_OK(s->synchronize());
  });
  t.join();
}

}  // namespace
}  // namespace wharf
