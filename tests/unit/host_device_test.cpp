// SPDX-License-Identifier: Apache-2.0
// The host backend: accounting and the limit, and stream/event ordering with truly
// asynchronous worker-thread streams.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "device/device.h"
#include "device/runtime.h"

namespace wharf {
namespace {

std::shared_ptr<Device> host_device(uint64_t limit = 0) {
  DeviceOptions o;
  o.device_memory_limit = limit;
  std::shared_ptr<Device> d;
  EXPECT_TRUE(create_host_device(o, &d).ok());
  return d;
}

TEST(HostDevice, AccountingPerTagAndPeak) {
  auto dev = host_device();
  Buffer a, b, p;
  ASSERT_TRUE(dev->allocate(MemKind::kDevice, MemTag::kConstants, 1000, "a", &a).ok());
  ASSERT_TRUE(dev->allocate(MemKind::kDevice, MemTag::kState, 500, "b", &b).ok());
  ASSERT_TRUE(dev->allocate(MemKind::kPinnedHost, MemTag::kStaging, 300, "p", &p).ok());
  MemorySnapshot s = dev->accounting().snapshot();
  EXPECT_EQ(s.current[int(MemTag::kConstants)], 1000u);
  EXPECT_EQ(s.current[int(MemTag::kState)], 500u);
  EXPECT_EQ(s.current[int(MemTag::kStaging)], 300u);
  EXPECT_EQ(s.device_current, 1500u);
  EXPECT_EQ(s.pinned_current, 300u);
  a.reset();
  s = dev->accounting().snapshot();
  EXPECT_EQ(s.current[int(MemTag::kConstants)], 0u);
  EXPECT_EQ(s.peak[int(MemTag::kConstants)], 1000u);
  EXPECT_EQ(s.device_current, 500u);
  EXPECT_EQ(s.device_peak, 1500u);
  dev->accounting().reset_peak();
  s = dev->accounting().snapshot();
  EXPECT_EQ(s.device_peak, 500u);
  EXPECT_EQ(s.peak[int(MemTag::kConstants)], 0u);
}

TEST(HostDevice, LimitRefusesWithoutCounting) {
  auto dev = host_device(4096);
  Buffer a, b;
  ASSERT_TRUE(dev->allocate(MemKind::kDevice, MemTag::kConstants, 4000, "first", &a).ok());
  Status st = dev->allocate(MemKind::kDevice, MemTag::kConstants, 100, "constant 'big'", &b);
  EXPECT_EQ(st.code(), Code::kOutOfMemory);
  EXPECT_NE(st.message().find("constant 'big'"), std::string::npos);
  EXPECT_NE(st.message().find("4096"), std::string::npos);
  EXPECT_FALSE(b);
  EXPECT_EQ(dev->accounting().snapshot().device_current, 4000u);
  // Pinned host memory is not device memory: the cap does not apply.
  Buffer p;
  EXPECT_TRUE(dev->allocate(MemKind::kPinnedHost, MemTag::kStaging, 1 << 20, "p", &p).ok());
  a.reset();
  EXPECT_TRUE(dev->allocate(MemKind::kDevice, MemTag::kConstants, 4096, "again", &b).ok());
}

TEST(HostDevice, BufferKeepsDeviceAliveAndMoves) {
  Buffer b;
  {
    auto dev = host_device();
    ASSERT_TRUE(dev->allocate(MemKind::kDevice, MemTag::kWorkspace, 64, "w", &b).ok());
  }
  std::memset(b.data(), 1, 64);  // device handle gone, buffer still valid
  Buffer c = std::move(b);
  EXPECT_FALSE(b);
  EXPECT_TRUE(c);
  EXPECT_EQ(c.size(), 64u);
}

TEST(HostDevice, PointerKinds) {
  auto dev = host_device();
  Buffer d, p;
  ASSERT_TRUE(dev->allocate(MemKind::kDevice, MemTag::kConstants, 128, "d", &d).ok());
  ASSERT_TRUE(dev->allocate(MemKind::kPinnedHost, MemTag::kStaging, 128, "p", &p).ok());
  std::vector<char> pageable(16);
  EXPECT_EQ(dev->query_pointer(d.data()).kind, PointerKind::kDevice);
  EXPECT_EQ(dev->query_pointer(static_cast<char*>(d.data()) + 127).kind, PointerKind::kDevice);
  EXPECT_EQ(dev->query_pointer(p.data()).kind, PointerKind::kPinnedHost);
  EXPECT_EQ(dev->query_pointer(pageable.data()).kind, PointerKind::kPageableHost);
}

TEST(HostStream, RunsAsynchronouslyInOrder) {
  auto dev = host_device();
  std::unique_ptr<Stream> s;
  ASSERT_TRUE(dev->create_stream(&s).ok());
  std::atomic<bool> release{false};
  std::vector<int> order;
  // The first task blocks until the test releases it: enqueueing must not wait for it.
  ASSERT_TRUE(s->enqueue_host([&] {
                 while (!release) std::this_thread::yield();
                 order.push_back(1);
               }).ok());
  ASSERT_TRUE(s->enqueue_host([&] { order.push_back(2); }).ok());
  std::unique_ptr<Event> e;
  ASSERT_TRUE(dev->create_event(&e).ok());
  ASSERT_TRUE(s->record(*e).ok());
  bool done = true;
  ASSERT_TRUE(e->query(&done).ok());
  EXPECT_FALSE(done);
  release = true;
  ASSERT_TRUE(e->synchronize().ok());
  ASSERT_TRUE(e->query(&done).ok());
  EXPECT_TRUE(done);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(HostStream, CopyMemsetAndWaitAcrossStreams) {
  auto dev = host_device();
  std::unique_ptr<Stream> a, b;
  ASSERT_TRUE(dev->create_stream(&a).ok());
  ASSERT_TRUE(dev->create_stream(&b).ok());
  Buffer buf, out;
  ASSERT_TRUE(dev->allocate(MemKind::kDevice, MemTag::kWorkspace, 1024, "buf", &buf).ok());
  ASSERT_TRUE(dev->allocate(MemKind::kDevice, MemTag::kWorkspace, 1024, "out", &out).ok());
  std::memset(out.data(), 0, 1024);
  std::atomic<bool> release{false};
  // Stream A: wait for release, then fill the buffer. Stream B must not copy before that.
  ASSERT_TRUE(a->enqueue_host([&] {
                 while (!release) std::this_thread::yield();
               }).ok());
  ASSERT_TRUE(a->memset_async(buf.data(), 0x5a, 1024).ok());
  std::unique_ptr<Event> filled;
  ASSERT_TRUE(dev->create_event(&filled).ok());
  ASSERT_TRUE(a->record(*filled).ok());
  ASSERT_TRUE(b->wait(*filled).ok());
  ASSERT_TRUE(b->copy_async(out.data(), buf.data(), 1024).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(static_cast<unsigned char*>(out.data())[0], 0);  // B is still waiting
  release = true;
  ASSERT_TRUE(b->synchronize().ok());
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(static_cast<unsigned char*>(out.data())[i], 0x5a) << i;
}

TEST(HostStream, EventNeverRecordedIsComplete) {
  auto dev = host_device();
  std::unique_ptr<Event> e;
  ASSERT_TRUE(dev->create_event(&e).ok());
  bool done = false;
  ASSERT_TRUE(e->query(&done).ok());
  EXPECT_TRUE(done);
  EXPECT_TRUE(e->synchronize().ok());
}

TEST(HostStream, DeviceSynchronizeWaitsForAllStreams) {
  auto dev = host_device();
  std::unique_ptr<Stream> a, b;
  ASSERT_TRUE(dev->create_stream(&a).ok());
  ASSERT_TRUE(dev->create_stream(&b).ok());
  std::atomic<int> n{0};
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(a->enqueue_host([&] {
                   std::this_thread::sleep_for(std::chrono::microseconds(100));
                   ++n;
                 }).ok());
    ASSERT_TRUE(b->enqueue_host([&] { ++n; }).ok());
  }
  ASSERT_TRUE(dev->synchronize().ok());
  EXPECT_EQ(n.load(), 100);
}

TEST(HostStream, DestructorDrainsQueuedWork) {
  auto dev = host_device();
  std::atomic<int> n{0};
  {
    std::unique_ptr<Stream> s;
    ASSERT_TRUE(dev->create_stream(&s).ok());
    for (int i = 0; i < 10; ++i)
      ASSERT_TRUE(s->enqueue_host([&] {
                     std::this_thread::sleep_for(std::chrono::milliseconds(1));
                     ++n;
                   }).ok());
  }
  EXPECT_EQ(n.load(), 10);
}

TEST(HostStream, RejectsBadArguments) {
  auto dev = host_device();
  std::unique_ptr<Stream> s;
  ASSERT_TRUE(dev->create_stream(&s).ok());
  char x[4];
  EXPECT_EQ(s->copy_async(nullptr, x, 4).code(), Code::kInvalidArgument);
  EXPECT_EQ(s->memset_async(nullptr, 0, 4).code(), Code::kInvalidArgument);
  EXPECT_TRUE(s->copy_async(nullptr, nullptr, 0).ok());  // empty copies are no-ops
  std::unique_ptr<Stream> wrapped;
  EXPECT_EQ(dev->wrap_stream(reinterpret_cast<void*>(0x1), &wrapped).code(), Code::kInvalidArgument);
}

TEST(Runtime, AutoFallsBackToHostAndValidates) {
  RuntimeOptions o;  // AUTO
  std::shared_ptr<Runtime> rt;
  ASSERT_TRUE(Runtime::create(o, &rt).ok());
  if (!cuda_device_available(0, nullptr)) {
    EXPECT_EQ(rt->backend(), Backend::kHost);
  }
  EXPECT_GT(rt->options().copy_threads, 0u);
  EXPECT_GT(rt->options().staging_bytes, 0u);

  RuntimeOptions bad;
  bad.backend = 7;
  EXPECT_EQ(Runtime::create(bad, &rt).code(), Code::kInvalidArgument);
  bad = RuntimeOptions();
  bad.staging_bytes = 10;
  Status st = Runtime::create(bad, &rt);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("staging_bytes"), std::string::npos);
}

TEST(Runtime, CudaRequestedWithoutGpuIsRefusedClearly) {
  if (cuda_device_available(0, nullptr)) GTEST_SKIP() << "a CUDA device is visible";
  RuntimeOptions o;
  o.backend = 1;
  std::shared_ptr<Runtime> rt;
  Status st = Runtime::create(o, &rt);
  EXPECT_EQ(st.code(), Code::kUnsupported);
  EXPECT_FALSE(st.message().empty());
}

}  // namespace
}  // namespace wharf
