// SPDX-License-Identifier: Apache-2.0
// TransferEngine on the host backend: the staging ring, its events and the worker threads
// run for real (the "DMA" is a memcpy task on the copy stream's worker), so data, ordering,
// accounting and error paths are all checked without a GPU.
#include "device/transfer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <random>
#include <thread>
#include <vector>

#include "core/logging.h"
#include "core/test_hooks.h"
#include "common/test_support.h"
#include "common/transfer_support.h"
#include "device/host/host_device.h"
#include "io/read_only_file.h"

namespace wharf {
namespace {

using transfer_test::alloc;
using transfer_test::host_device;
using transfer_test::KiB;
using transfer_test::MiB;

// The ramp on, as the engine has it, unless a test counts whole fills.
std::unique_ptr<TransferEngine> make_engine(const std::shared_ptr<Device>& dev, uint32_t threads, uint64_t chunk,
                                            uint64_t staging, uint64_t block = TransferOptions{}.block_bytes,
                                            bool ramp = true) {
  return transfer_test::make_engine(dev, threads, chunk, staging, block, ramp);
}

// Bytes that differ at every offset and between seeds, so a misplaced or skipped piece shows.
std::vector<unsigned char> pattern(uint64_t n, uint32_t seed) {
  std::vector<unsigned char> v(n);
  uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (uint64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<unsigned char>(x);
  }
  return v;
}

uint64_t staging_current(const std::shared_ptr<Device>& dev) {
  return dev->accounting().snapshot().current[int(MemTag::kStaging)];
}

// Index of the first differing byte, or -1.
int64_t first_diff(const void* a, const void* b, uint64_t n) {
  auto* x = static_cast<const unsigned char*>(a);
  auto* y = static_cast<const unsigned char*>(b);
  for (uint64_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return int64_t(i);
  return -1;
}

bool all_equal(const void* p, unsigned char v, uint64_t n) {
  auto* x = static_cast<const unsigned char*>(p);
  for (uint64_t i = 0; i < n; ++i)
    if (x[i] != v) return false;
  return true;
}

TEST(Transfer, CreateValidatesOptions) {
  auto dev = host_device();
  std::unique_ptr<TransferEngine> e;
  TransferOptions o;
  o.threads = 0;
  EXPECT_EQ(TransferEngine::create(dev, o, &e).code(), Code::kInvalidArgument);
  o = TransferOptions{};
  o.chunk_bytes = 64 * KiB - 1;
  Status st = TransferEngine::create(dev, o, &e);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("chunk_bytes"), std::string::npos) << st.message();
  o = TransferOptions{};
  o.staging_bytes = o.chunk_bytes - 1;
  st = TransferEngine::create(dev, o, &e);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("staging_bytes"), std::string::npos) << st.message();
  EXPECT_EQ(TransferEngine::create(nullptr, TransferOptions{}, &e).code(), Code::kInvalidArgument);
  EXPECT_FALSE(e);
  o = TransferOptions{};
  o.chunk_bytes = 64 * KiB;
  o.staging_bytes = 64 * KiB;  // the minimum: a one-chunk ring
  EXPECT_TRUE(TransferEngine::create(dev, o, &e).ok());
  EXPECT_TRUE(e);
  EXPECT_EQ(staging_current(dev), 0u) << "the ring must be allocated lazily";
}

TEST(Transfer, PageableToDeviceNotAChunkMultiple) {
  auto dev = host_device();
  auto eng = make_engine(dev, 3, 1 * MiB, 6 * MiB);
  const uint64_t n = 10 * MiB + 123, guard = 4096;
  auto src = pattern(n, 1);
  Buffer dst = alloc(dev, MemKind::kDevice, n + guard, 0xee);
  TransferStats stats;
  Status st = eng->copy({{dst.data(), src.data(), n}}, {}, &stats);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(first_diff(dst.data(), src.data(), n), -1);
  EXPECT_TRUE(all_equal(static_cast<char*>(dst.data()) + n, 0xee, guard)) << "wrote past the request";
  EXPECT_EQ(stats.pageable_bytes, n);
  EXPECT_EQ(stats.pinned_bytes, 0u);
  EXPECT_EQ(stats.device_bytes, 0u);
}

// Ring shapes: fewer chunks than 2*threads, a single chunk, an odd chunk count per thread.
struct RingShape {
  uint32_t threads;
  uint64_t chunk, staging;
};
class TransferRing : public ::testing::TestWithParam<RingShape> {};

TEST_P(TransferRing, CopiesThroughEveryRingShape) {
  const RingShape p = GetParam();
  auto dev = host_device();
  auto eng = make_engine(dev, p.threads, p.chunk, p.staging);
  const uint64_t n = 5 * MiB + 7;
  auto src = pattern(n, 2);
  Buffer dst = alloc(dev, MemKind::kDevice, n);
  for (int round = 0; round < 2; ++round) {  // the second round reuses a ring with recorded events
    std::memset(dst.data(), 0, n);
    Status st = eng->copy({{dst.data(), src.data(), n}}, {});
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(first_diff(dst.data(), src.data(), n), -1) << "round " << round;
  }
  EXPECT_EQ(staging_current(dev), (p.staging / p.chunk) * p.chunk);
}

INSTANTIATE_TEST_SUITE_P(Shapes, TransferRing,
                         ::testing::Values(RingShape{4, 64 * KiB, 128 * KiB},     // 2 chunks: 1 thread
                                           RingShape{3, 64 * KiB, 64 * KiB},      // 1 chunk
                                           RingShape{2, 64 * KiB, 7 * 64 * KiB},  // 4 + 3 chunks
                                           RingShape{12, 1 * MiB, 24 * MiB}));    // the GPU default shape

TEST(Transfer, ManySmallRequests) {
  auto dev = host_device();
  auto eng = make_engine(dev, 3, 64 * KiB, 8 * 64 * KiB);
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint64_t> size(1 * KiB, 4 * KiB);
  const int kRequests = 1000, kGuard = 64;
  std::vector<std::vector<unsigned char>> srcs;
  std::vector<uint64_t> offsets;
  uint64_t off = 0;
  for (int i = 0; i < kRequests; ++i) {
    srcs.push_back(pattern(size(rng), 100 + i));
    offsets.push_back(off);
    off += srcs.back().size();
    // Every third destination is followed by a gap: runs of adjacent destinations become one
    // DMA, gaps split them, and the gap bytes must stay untouched.
    if (i % 3 == 2) off += kGuard;
  }
  Buffer dst = alloc(dev, MemKind::kDevice, off, 0xee);
  std::vector<CopyRequest> reqs;
  uint64_t total = 0;
  for (int i = 0; i < kRequests; ++i) {
    reqs.push_back({static_cast<char*>(dst.data()) + offsets[i], srcs[i].data(), srcs[i].size()});
    total += srcs[i].size();
  }
  TransferStats stats;
  Status st = eng->copy(reqs, {}, &stats);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(stats.pageable_bytes, total);
  auto* d = static_cast<unsigned char*>(dst.data());
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_EQ(first_diff(d + offsets[i], srcs[i].data(), srcs[i].size()), -1) << "request " << i;
    if (i % 3 == 2) {
      ASSERT_TRUE(all_equal(d + offsets[i] + srcs[i].size(), 0xee, kGuard)) << "gap after " << i;
    }
  }
}

// The staging threads copy pageable sources into the ring with streaming stores or memcpy
// (TransferOptions::staging_copy, WHARF_STAGING_COPY): both put every byte of sources of any
// size and alignment, packed side by side in the chunks, where it belongs, and nothing else.
// The engine's debug profile names the copy it used.
struct CapturedLog {
  static void sink(int level, const char* message, void* user) {
    auto* self = static_cast<CapturedLog*>(user);
    std::lock_guard<std::mutex> lock(self->mu);
    self->text += message;
    self->text += '\n';
  }
  CapturedLog() { set_log_sink(&sink, LogLevel::kDebug, this); }
  ~CapturedLog() { set_log_sink(nullptr, LogLevel::kWarn, nullptr); }
  std::string all() {
    std::lock_guard<std::mutex> lock(mu);
    return text;
  }
  std::mutex mu;
  std::string text;
};

TEST(Transfer, BothStagingCopiesStageEveryByte) {
  for (StagingCopy mode : {StagingCopy::kStream, StagingCopy::kMemcpy}) {
    SCOPED_TRACE(staging_copy_name(mode));
    auto dev = host_device();
    TransferOptions o;
    o.threads = 3;
    o.chunk_bytes = 64 * KiB;
    o.staging_bytes = 8 * 64 * KiB;
    o.staging_copy = mode;
    std::unique_ptr<TransferEngine> eng;
    ASSERT_TRUE(TransferEngine::create(dev, o, &eng).ok());
    // Sizes below, at and above the streaming threshold and across chunks; sources at every
    // offset modulo 64 (cut from one buffer), destinations with a guarded gap after each.
    const std::vector<uint64_t> sizes{1, 63, 100, 4095, 4096, 4097, 7777, 64 * KiB + 1, 200 * KiB + 13, 1 * MiB + 7};
    const uint64_t kGap = 64;
    uint64_t src_total = 0, dst_total = 0;
    for (uint64_t n : sizes) src_total += n + 1, dst_total += n + kGap + 1;
    const auto src = pattern(src_total, 21);
    Buffer dst = alloc(dev, MemKind::kDevice, dst_total, 0xee);
    std::vector<CopyRequest> reqs;
    std::vector<uint64_t> src_off, dst_off;
    uint64_t so = 0, d = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      so += i % 2;  // odd source offsets for every other request
      d += (i * 7) % 3;
      src_off.push_back(so);
      dst_off.push_back(d);
      reqs.push_back({static_cast<char*>(dst.data()) + d, src.data() + so, sizes[i]});
      so += sizes[i];
      d += sizes[i] + kGap;
    }
    ASSERT_LE(so, src_total);
    ASSERT_LE(d, dst_total);
    CapturedLog log;
    TransferStats stats;
    Status st = eng->copy(reqs, {}, &stats);
    ASSERT_TRUE(st.ok()) << st.message();
    auto* out = static_cast<unsigned char*>(dst.data());
    for (size_t i = 0; i < sizes.size(); ++i) {
      ASSERT_EQ(first_diff(out + dst_off[i], src.data() + src_off[i], sizes[i]), -1) << "request " << i;
      ASSERT_TRUE(all_equal(out + dst_off[i] + sizes[i], 0xee, kGap)) << "gap after request " << i;
    }
    EXPECT_NE(log.all().find(std::string("reads (") + staging_copy_name(mode) + ")"), std::string::npos) << log.all();
  }
}

TEST(Transfer, MixedSourceKindsInOneCall) {
  auto dev = host_device();
  auto eng = make_engine(dev, 3, 1 * MiB, 6 * MiB);
  const uint64_t np = 3 * MiB + 5, nq = 1 * MiB + 3, nd = 2 * MiB + 1, nh = 2 * MiB + 9;
  auto pageable = pattern(np, 10);
  auto pageable_h = pattern(nh, 13);
  Buffer pinned_src = alloc(dev, MemKind::kPinnedHost, nq);
  Buffer device_src = alloc(dev, MemKind::kDevice, nd);
  auto q = pattern(nq, 11), d = pattern(nd, 12);
  std::memcpy(pinned_src.data(), q.data(), nq);
  std::memcpy(device_src.data(), d.data(), nd);
  Buffer dp = alloc(dev, MemKind::kDevice, np), dq = alloc(dev, MemKind::kDevice, nq);
  Buffer dd = alloc(dev, MemKind::kDevice, nd), dh = alloc(dev, MemKind::kPinnedHost, nh);
  Buffer d2h = alloc(dev, MemKind::kPinnedHost, nd);  // device -> pinned host: a direct copy
  TransferStats stats;
  Status st = eng->copy({{dp.data(), pageable.data(), np},
                         {dq.data(), pinned_src.data(), nq},
                         {dd.data(), device_src.data(), nd},
                         {dh.data(), pageable_h.data(), nh},
                         {d2h.data(), device_src.data(), nd}},
                        {}, &stats);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(first_diff(dp.data(), pageable.data(), np), -1);
  EXPECT_EQ(first_diff(dq.data(), q.data(), nq), -1);
  EXPECT_EQ(first_diff(dd.data(), d.data(), nd), -1);
  EXPECT_EQ(first_diff(dh.data(), pageable_h.data(), nh), -1);
  EXPECT_EQ(first_diff(d2h.data(), d.data(), nd), -1);
  EXPECT_EQ(stats.pageable_bytes, np + nh);
  EXPECT_EQ(stats.pinned_bytes, nq);
  EXPECT_EQ(stats.device_bytes, 2 * nd);
}

TEST(Transfer, PageableToPinnedHostIsAHostCopy) {
  auto dev = host_device();
  auto eng = make_engine(dev, 3, 1 * MiB, 4 * MiB);
  const uint64_t n = 5 * MiB + 3;
  auto src = pattern(n, 20);
  Buffer dst = alloc(dev, MemKind::kPinnedHost, n);
  TransferStats stats;
  Status st = eng->copy({{dst.data(), src.data(), n}}, {}, &stats);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(first_diff(dst.data(), src.data(), n), -1);
  EXPECT_EQ(stats.pageable_bytes, n);
  // No DMA is involved, so the ring is never needed.
  EXPECT_EQ(staging_current(dev), 0u);
}

TEST(Transfer, StagingRingIsAccountedOnceAndKept) {
  auto dev = host_device();
  const uint64_t chunk = 1 * MiB, staging = 5 * MiB + 1000;  // rounds down to 5 chunks
  auto eng = make_engine(dev, 2, chunk, staging);
  const uint64_t ring = 5 * chunk;
  EXPECT_EQ(staging_current(dev), 0u);

  // A pinned source needs no staging.
  Buffer pinned = alloc(dev, MemKind::kPinnedHost, 1 * MiB, 1);
  Buffer dst = alloc(dev, MemKind::kDevice, 3 * MiB);
  ASSERT_TRUE(eng->copy({{dst.data(), pinned.data(), 1 * MiB}}, {}).ok());
  EXPECT_EQ(staging_current(dev), 0u);

  auto src = pattern(3 * MiB, 21);
  ASSERT_TRUE(eng->copy({{dst.data(), src.data(), src.size()}}, {}).ok());
  MemorySnapshot s = dev->accounting().snapshot();
  EXPECT_EQ(s.current[int(MemTag::kStaging)], ring);
  EXPECT_EQ(s.pinned_current, ring + 1 * MiB);  // the ring and the test's pinned buffer

  auto src2 = pattern(3 * MiB, 22);
  ASSERT_TRUE(eng->copy({{dst.data(), src2.data(), src2.size()}}, {}).ok());
  EXPECT_EQ(first_diff(dst.data(), src2.data(), src2.size()), -1);
  s = dev->accounting().snapshot();
  EXPECT_EQ(s.current[int(MemTag::kStaging)], ring);
  EXPECT_EQ(s.peak[int(MemTag::kStaging)], ring) << "a second call must not allocate again";

  eng.reset();
  EXPECT_EQ(staging_current(dev), 0u);
}

TEST(Transfer, WaitsForEventsBeforeCopying) {
  auto dev = host_device();
  auto eng = make_engine(dev, 3, 64 * KiB, 4 * 64 * KiB);
  std::unique_ptr<Stream> other;
  ASSERT_TRUE(dev->create_stream(&other).ok());
  std::atomic<bool> release{false};
  // Stands for work that still uses the destinations (e.g. a kernel reading old constants).
  ASSERT_TRUE(other
                  ->enqueue_host([&] {
                    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                  })
                  .ok());
  std::unique_ptr<Event> busy;
  ASSERT_TRUE(dev->create_event(&busy).ok());
  ASSERT_TRUE(other->record(*busy).ok());

  // Every path must wait: staged (pageable -> device), direct (pinned -> device) and the
  // host memcpy path (pageable -> pinned host).
  const uint64_t n = 300 * KiB + 1;
  auto a = pattern(n, 30), c = pattern(n, 32);
  Buffer pinned_src = alloc(dev, MemKind::kPinnedHost, n);
  auto b = pattern(n, 31);
  std::memcpy(pinned_src.data(), b.data(), n);
  Buffer da = alloc(dev, MemKind::kDevice, n), db = alloc(dev, MemKind::kDevice, n);
  Buffer dc = alloc(dev, MemKind::kPinnedHost, n);

  Status st;
  std::atomic<bool> returned{false};
  std::thread caller([&] {
    st = eng->copy({{da.data(), a.data(), n}, {db.data(), pinned_src.data(), n}, {dc.data(), c.data(), n}},
                   {busy.get()});
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(returned.load());
  EXPECT_TRUE(all_equal(da.data(), 0, n)) << "staged copy landed before the event";
  EXPECT_TRUE(all_equal(db.data(), 0, n)) << "direct copy landed before the event";
  EXPECT_TRUE(all_equal(dc.data(), 0, n)) << "host copy landed before the event";
  release = true;
  caller.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(first_diff(da.data(), a.data(), n), -1);
  EXPECT_EQ(first_diff(db.data(), b.data(), n), -1);
  EXPECT_EQ(first_diff(dc.data(), c.data(), n), -1);
}

// copy() returns only when the data is in place: here the copy stream is held back by a
// wait_for event, so a copy() that merely enqueued would return early.
TEST(Transfer, ReturnsOnlyWhenComplete) {
  auto dev = host_device();
  auto eng = make_engine(dev, 2, 64 * KiB, 256 * KiB);
  std::unique_ptr<Stream> other;
  ASSERT_TRUE(dev->create_stream(&other).ok());
  std::atomic<bool> release{false};
  ASSERT_TRUE(other
                  ->enqueue_host([&] {
                    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                  })
                  .ok());
  std::unique_ptr<Event> busy;
  ASSERT_TRUE(dev->create_event(&busy).ok());
  ASSERT_TRUE(other->record(*busy).ok());
  const uint64_t n = 64 * KiB;
  Buffer src = alloc(dev, MemKind::kPinnedHost, n, 0x42);
  Buffer dst = alloc(dev, MemKind::kDevice, n);
  Status st;
  std::atomic<bool> returned{false};
  std::thread caller([&] {
    st = eng->copy({{dst.data(), src.data(), n}}, {busy.get()});
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(returned.load()) << "copy() returned with its copy still queued";
  release = true;
  caller.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(all_equal(dst.data(), 0x42, n));
}

TEST(Transfer, ZeroBytesAndBadPointers) {
  auto dev = host_device();
  auto eng = make_engine(dev, 2, 64 * KiB, 128 * KiB);
  const uint64_t n = 200 * KiB;
  auto src = pattern(n, 40);
  Buffer dst = alloc(dev, MemKind::kDevice, n);

  // Zero-byte requests are no-ops, null pointers included.
  TransferStats stats;
  ASSERT_TRUE(eng->copy({{nullptr, nullptr, 0}, {dst.data(), src.data(), 0}}, {}, &stats).ok());
  EXPECT_EQ(stats.pageable_bytes + stats.pinned_bytes + stats.device_bytes, 0u);
  EXPECT_TRUE(all_equal(dst.data(), 0, n));
  ASSERT_TRUE(eng->copy({}, {}).ok());

  // A bad request fails the whole call before anything is copied, and is named.
  Status st = eng->copy({{dst.data(), src.data(), n}, {dst.data(), nullptr, 8}}, {});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("request 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("null source"), std::string::npos) << st.message();
  EXPECT_TRUE(all_equal(dst.data(), 0, n)) << "request 0 ran although request 1 was invalid";

  st = eng->copy({{dst.data(), src.data(), 1}, {dst.data(), src.data(), 1}, {nullptr, src.data(), 8}}, {});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("request 2"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("null destination"), std::string::npos) << st.message();

  // Destinations must be memory of the device (device or pinned), not the caller's heap.
  std::vector<unsigned char> heap(n);
  st = eng->copy({{heap.data(), src.data(), n}}, {});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("request 0"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("pageable"), std::string::npos) << st.message();

  st = eng->copy({{dst.data(), src.data(), n}}, {nullptr});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_TRUE(all_equal(dst.data(), 0, n));

  // Still usable after the errors.
  ASSERT_TRUE(eng->copy({{dst.data(), src.data(), n}}, {}).ok());
  EXPECT_EQ(first_diff(dst.data(), src.data(), n), -1);
}

// An event the host stream cannot wait on: its wait() fails, which must fail the call
// before any copy is enqueued (the copies would otherwise run unordered).
class ForeignEvent final : public Event {
 public:
  Status query(bool* done) override {
    *done = true;
    return Status::Ok();
  }
  Status synchronize() override { return Status::Ok(); }
  Status elapsed_ms_since(Event&, double*) override { return InvalidArgument("a foreign event has no timestamps"); }
};

TEST(Transfer, FailedWaitCopiesNothing) {
  auto dev = host_device();
  auto eng = make_engine(dev, 2, 64 * KiB, 256 * KiB);
  const uint64_t n = 300 * KiB;
  auto src = pattern(n, 50);
  Buffer pinned_src = alloc(dev, MemKind::kPinnedHost, n, 0x77);
  Buffer da = alloc(dev, MemKind::kDevice, n), db = alloc(dev, MemKind::kDevice, n);
  ForeignEvent foreign;
  Status st = eng->copy({{da.data(), src.data(), n}, {db.data(), pinned_src.data(), n}}, {&foreign});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("wait_for event 0"), std::string::npos) << st.message();
  EXPECT_TRUE(all_equal(da.data(), 0, n));
  EXPECT_TRUE(all_equal(db.data(), 0, n));
}

TEST(Transfer, ConcurrentCallersAllCorrect) {
  auto dev = host_device();
  // A small ring (4 chunks, 2 staging threads) so concurrent callers contend for it.
  auto eng = make_engine(dev, 3, 64 * KiB, 4 * 64 * KiB);
  constexpr int kCallers = 4, kRounds = 6;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      const uint64_t n = 1 * MiB + 1000 * c + 1, m = 5000 + 17 * c;
      Buffer dst = alloc(dev, MemKind::kDevice, n), dst2 = alloc(dev, MemKind::kDevice, m);
      Buffer pinned = alloc(dev, MemKind::kPinnedHost, m);
      for (int r = 0; r < kRounds; ++r) {
        auto src = pattern(n, 1000 * c + r);
        auto src2 = pattern(m, 2000 * c + r);
        std::memcpy(pinned.data(), src2.data(), m);
        Status st = eng->copy({{dst.data(), src.data(), n}, {dst2.data(), pinned.data(), m}}, {});
        if (!st.ok() || first_diff(dst.data(), src.data(), n) != -1 || first_diff(dst2.data(), src2.data(), m) != -1) {
          ADD_FAILURE() << "caller " << c << " round " << r << ": " << st.message();
          ++failures;
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(staging_current(dev), 4 * 64 * KiB);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WHARF_TEST_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WHARF_TEST_UNDER_SANITIZER 1
#endif
#endif

TEST(Transfer, StagingAllocationFailureLeavesNothingBehind) {
#ifdef WHARF_TEST_UNDER_SANITIZER
  GTEST_SKIP() << "sanitizer allocators abort on an impossible allocation instead of returning null";
#endif
  auto dev = host_device();
  // Pinned memory is not capped by device_memory_limit, so ask for a ring no machine can
  // give: the host backend's allocation fails and reports OUT_OF_MEMORY.
  auto eng = make_engine(dev, 2, 1 * MiB, 1ull << 60);
  const uint64_t n = 2 * MiB;
  auto src = pattern(n, 60);
  Buffer dst = alloc(dev, MemKind::kDevice, n);
  Status st = eng->copy({{dst.data(), src.data(), n}}, {});
  EXPECT_EQ(st.code(), Code::kOutOfMemory) << st.message();
  EXPECT_NE(st.message().find("staging ring"), std::string::npos) << st.message();
  EXPECT_EQ(staging_current(dev), 0u);
  EXPECT_EQ(dev->accounting().snapshot().pinned_current, 0u);
  EXPECT_TRUE(all_equal(dst.data(), 0, n));
  // Paths that need no ring still work.
  Buffer pinned = alloc(dev, MemKind::kPinnedHost, n);
  std::memcpy(pinned.data(), src.data(), n);
  ASSERT_TRUE(eng->copy({{dst.data(), pinned.data(), n}}, {}).ok());
  EXPECT_EQ(first_diff(dst.data(), src.data(), n), -1);
}

// Destinations left null are allocated by the callback, on the calling thread, in request
// order, one call per request that has bytes; every path (staged, direct, host) gets them.
TEST(Transfer, AllocatesNullDestinationsInRequestOrder) {
  auto dev = host_device();
  auto eng = make_engine(dev, 3, 64 * KiB, 8 * 64 * KiB);
  Buffer pinned_src = alloc(dev, MemKind::kPinnedHost, 300 * KiB);
  std::vector<std::vector<unsigned char>> srcs;
  std::vector<CopyRequest> reqs;
  for (int i = 0; i < 40; ++i) {
    const uint64_t n = (i % 5 == 4) ? 0 : 1 * KiB + uint64_t(i) * 7 * KiB;  // some empty
    srcs.push_back(pattern(n, 300 + uint32_t(i)));
    CopyRequest r;
    r.src = srcs.back().data();
    r.bytes = n;
    r.dst_kind = (i % 7 == 3) ? MemKind::kPinnedHost : MemKind::kDevice;
    if (i % 6 == 1 && n <= 300 * KiB) {  // a pinned source: the direct path
      std::memcpy(static_cast<char*>(pinned_src.data()), srcs.back().data(), n);
      r.src = pinned_src.data();
      reqs.push_back(r);
      // Only one request may use the shared pinned source's bytes; give later ones their own.
      srcs.back().assign(static_cast<unsigned char*>(pinned_src.data()),
                         static_cast<unsigned char*>(pinned_src.data()) + n);
      break;
    }
    reqs.push_back(r);
  }
  // One more pageable request after the direct one.
  srcs.push_back(pattern(70 * KiB, 999));
  CopyRequest tail;
  tail.src = srcs.back().data();
  tail.bytes = 70 * KiB;
  reqs.push_back(tail);

  std::vector<Buffer> dsts(reqs.size());
  std::vector<size_t> order;
  const std::thread::id caller = std::this_thread::get_id();
  AllocateFn allocate = [&](size_t i, void** out) -> Status {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
    dsts[i] = alloc(dev, reqs[i].dst_kind, reqs[i].bytes, 0xaa);
    *out = dsts[i].data();
    return Status::Ok();
  };
  Status st = eng->copy(reqs, {}, nullptr, allocate);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<size_t> want;
  for (size_t i = 0; i < reqs.size(); ++i)
    if (reqs[i].bytes) want.push_back(i);
  EXPECT_EQ(order, want);
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (!reqs[i].bytes) continue;
    ASSERT_EQ(first_diff(dsts[i].data(), srcs[i].data(), reqs[i].bytes), -1) << "request " << i;
    EXPECT_EQ(dev->query_pointer(dsts[i].data()).kind,
              reqs[i].dst_kind == MemKind::kPinnedHost ? PointerKind::kPinnedHost : PointerKind::kDevice);
  }
}

// The point of allocating during the copy: while a later destination is being allocated,
// earlier requests' copies are already on the stream. The callback for the last request
// waits until request 0's copies are enqueued (the direct copy is enqueued before the next
// allocation; staged fills report through a test hook), synchronizes the device, and finds
// request 0's bytes in place. Were allocation done before copying, nothing would be enqueued
// yet and the bytes would be missing. (Reading after the device synchronization is ordered
// after the copy's writes: no data race for TSan.)
TEST(Transfer, EarlierCopiesCompleteWhileLaterDestinationsAreAllocated) {
  auto dev = host_device();
  auto eng = make_engine(dev, 2, 64 * KiB, 4 * 64 * KiB, TransferOptions{}.block_bytes, /*ramp=*/false);
  for (bool pinned_source : {false, true}) {
    SCOPED_TRACE(pinned_source ? "direct path" : "staged path");
    const uint64_t n = 256 * KiB;  // staged: exactly 4 fills of one 64 KiB chunk each
    auto a = pattern(n, 1), b = pattern(n, 2);
    Buffer pa = alloc(dev, MemKind::kPinnedHost, n), pb = alloc(dev, MemKind::kPinnedHost, n);
    std::memcpy(pa.data(), a.data(), n);
    std::memcpy(pb.data(), b.data(), n);
    CopyRequest r0, r1;
    r0.src = pinned_source ? pa.data() : static_cast<const void*>(a.data());
    r1.src = pinned_source ? pb.data() : static_cast<const void*>(b.data());
    r0.bytes = r1.bytes = n;
    std::atomic<int> fills_enqueued{0};
    ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "transfer.staged.enqueued") == 0) fills_enqueued.fetch_add(1);
    });
    Buffer d0, d1;
    bool first_landed = false;
    AllocateFn allocate = [&](size_t i, void** out) -> Status {
      if (i == 0) {
        d0 = alloc(dev, MemKind::kDevice, n, 0);
        *out = d0.data();
        return Status::Ok();
      }
      if (!pinned_source) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (fills_enqueued.load() < 4 && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      EXPECT_TRUE(dev->synchronize().ok());
      first_landed = first_diff(d0.data(), a.data(), n) == -1;
      d1 = alloc(dev, MemKind::kDevice, n, 0);
      *out = d1.data();
      return Status::Ok();
    };
    Status st = eng->copy({r0, r1}, {}, nullptr, allocate);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(first_landed) << "request 0 was not copied while request 1's destination was being allocated";
    EXPECT_EQ(first_diff(d1.data(), b.data(), n), -1);
  }
}

// A failing allocation fails the copy with its status (named), stops further allocations,
// and returns with nothing in flight; what was allocated stays the caller's.
TEST(Transfer, AllocationFailureStopsTheCopy) {
  auto dev = host_device();
  auto eng = make_engine(dev, 3, 64 * KiB, 8 * 64 * KiB);
  std::vector<std::vector<unsigned char>> srcs;
  std::vector<CopyRequest> reqs;
  for (int i = 0; i < 12; ++i) {
    srcs.push_back(pattern(100 * KiB, 500 + uint32_t(i)));
    CopyRequest r;
    r.src = srcs.back().data();
    r.bytes = 100 * KiB;
    reqs.push_back(r);
  }
  std::vector<Buffer> dsts(reqs.size());
  size_t calls = 0;
  AllocateFn allocate = [&](size_t i, void** out) -> Status {
    ++calls;
    if (i == 5) return OutOfMemory("test: no memory for request 5");
    dsts[i] = alloc(dev, MemKind::kDevice, reqs[i].bytes, 0);
    *out = dsts[i].data();
    return Status::Ok();
  };
  Status st = eng->copy(reqs, {}, nullptr, allocate);
  EXPECT_EQ(st.code(), Code::kOutOfMemory) << st.message();
  EXPECT_NE(st.message().find("copy request 5 of 12: allocating its destination"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("test: no memory for request 5"), std::string::npos) << st.message();
  EXPECT_EQ(calls, 6u);
  for (size_t i = 6; i < dsts.size(); ++i) EXPECT_EQ(dsts[i].data(), nullptr);
  // Nothing is in flight: the destinations already allocated can be freed at once, and
  // the engine serves the next call.
  dsts.clear();
  Buffer d = alloc(dev, MemKind::kDevice, 100 * KiB);
  ASSERT_TRUE(eng->copy({{d.data(), srcs[0].data(), 100 * KiB}}, {}).ok());
  EXPECT_EQ(first_diff(d.data(), srcs[0].data(), 100 * KiB), -1);

  // A null destination with no callback is the caller's mistake.
  CopyRequest r;
  r.src = srcs[0].data();
  r.bytes = 1;
  st = eng->copy({r}, {});
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.message();
  EXPECT_NE(st.message().find("null destination (and no allocate callback)"), std::string::npos) << st.message();
}

// --- blocks and dst groups: fewer, larger DMAs out of the ring ---------------------------------

// A request spanning many chunks leaves the ring in one DMA per block of chunks (filled by
// several threads), through a ring that wraps several times; blocks below a chunk give one
// DMA per chunk. Run twice: the second call reuses blocks whose events an earlier call
// recorded.
TEST(Transfer, ARequestLeavesTheRingInBlockSizedCopies) {
  auto dev = host_device();
  const uint64_t chunk = 64 * KiB, n = 40 * chunk + 4321, guard = 4096;  // 41 fills
  auto src = pattern(n, 30);
  Buffer dst = alloc(dev, MemKind::kDevice, n + guard);
  struct Case {
    uint64_t block;
    uint64_t copies;
  } cases[] = {
      {4 * chunk, 11},   // 8 chunks in blocks of 4: 11 blocks, the last one partial
      {64 * chunk, 11},  // capped at half the ring: blocks of 4
      {3 * chunk, 21},   // 3 does not divide 8 chunks: blocks of 2
      {0, 41},           // one chunk per block: one DMA per fill
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("block_bytes " + std::to_string(c.block));
    auto eng = make_engine(dev, 3, chunk, 8 * chunk, c.block, /*ramp=*/false);
    for (int round = 0; round < 2; ++round) {
      std::memset(dst.data(), 0xee, n + guard);
      TransferStats stats;
      Status st = eng->copy({{dst.data(), src.data(), n}}, {}, &stats);
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_EQ(first_diff(dst.data(), src.data(), n), -1) << "round " << round;
      EXPECT_TRUE(all_equal(static_cast<char*>(dst.data()) + n, 0xee, guard)) << "wrote past the request";
      EXPECT_EQ(stats.staged_copies, c.copies);
    }
  }
}

// Requests of one dst_group lie back to back in one allocation (a slab of small constants):
// packed into the ring as in their destination, across chunk and block boundaries, they
// leave it in one DMA per block. Mixed sizes, from one byte to more than two chunks. The
// same requests without the group are copied piece by piece, and land the same.
TEST(Transfer, ADstGroupLeavesTheRingInOneCopyPerBlock) {
  auto dev = host_device();
  const uint64_t chunk = 64 * KiB, guard = 4096;
  auto eng = make_engine(dev, 3, chunk, 8 * chunk, 4 * chunk, /*ramp=*/false);
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint64_t> size(1, 150 * KiB);
  std::vector<std::vector<unsigned char>> srcs;
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  for (int i = 0; i < 200; ++i) {
    srcs.push_back(pattern(i % 50 == 7 ? 1 : size(rng), 300 + uint32_t(i)));
    offsets.push_back(total);
    total += srcs.back().size();
  }
  Buffer slab = alloc(dev, MemKind::kDevice, total + guard);
  auto* d = static_cast<unsigned char*>(slab.data());
  for (uint64_t group : {uint64_t(7), uint64_t(0)}) {
    SCOPED_TRACE("dst_group " + std::to_string(group));
    std::memset(d, 0xee, total + guard);
    std::vector<CopyRequest> reqs;
    for (size_t i = 0; i < srcs.size(); ++i) {
      CopyRequest r{d + offsets[i], srcs[i].data(), srcs[i].size()};
      r.dst_group = group;
      reqs.push_back(r);
    }
    TransferStats stats;
    Status st = eng->copy(reqs, {}, &stats);
    ASSERT_TRUE(st.ok()) << st.message();
    for (size_t i = 0; i < srcs.size(); ++i)
      ASSERT_EQ(first_diff(d + offsets[i], srcs[i].data(), srcs[i].size()), -1) << "request " << i;
    EXPECT_TRUE(all_equal(d + total, 0xee, guard)) << "wrote past the group";
    const uint64_t fills = (total + chunk - 1) / chunk, blocks = (fills + 3) / 4;
    if (group != 0)
      EXPECT_EQ(stats.staged_copies, blocks);
    else
      EXPECT_GE(stats.staged_copies, srcs.size()) << "requests without a group never share a copy";
  }
}

// The engine merges only destinations that really continue each other: members of one
// group with a gap between them, or separated by a member copied directly (a pinned
// source), each get their own copy, and nothing is written between them.
TEST(Transfer, ADstGroupWhoseMembersLieApartIsCopiedPieceByPiece) {
  auto dev = host_device();
  auto eng = make_engine(dev, 3, 64 * KiB, 8 * 64 * KiB, 4 * 64 * KiB, /*ramp=*/false);
  const uint64_t n = 10 * KiB, gap = 256;
  auto a = pattern(n, 40), b = pattern(n, 41), c = pattern(n, 42), e = pattern(n, 43), f = pattern(n, 44);
  Buffer pinned_b = alloc(dev, MemKind::kPinnedHost, n);
  std::memcpy(pinned_b.data(), b.data(), n);
  Buffer one = alloc(dev, MemKind::kDevice, 3 * n, 0xee);        // a, b, c back to back
  Buffer two = alloc(dev, MemKind::kDevice, 2 * n + gap, 0xee);  // e, then f after a gap
  auto* p = static_cast<char*>(one.data());
  auto* q = static_cast<char*>(two.data());
  std::vector<CopyRequest> reqs = {{p, a.data(), n},
                                   {p + n, pinned_b.data(), n},
                                   {p + 2 * n, c.data(), n},
                                   {q, e.data(), n},
                                   {q + n + gap, f.data(), n}};
  for (size_t i = 0; i < reqs.size(); ++i) reqs[i].dst_group = i < 3 ? 1 : 2;
  TransferStats stats;
  Status st = eng->copy(reqs, {}, &stats);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(first_diff(p, a.data(), n), -1);
  EXPECT_EQ(first_diff(p + n, b.data(), n), -1);
  EXPECT_EQ(first_diff(p + 2 * n, c.data(), n), -1);
  EXPECT_EQ(first_diff(q, e.data(), n), -1);
  EXPECT_TRUE(all_equal(q + n, 0xee, gap)) << "a merged copy wrote the gap between two members";
  EXPECT_EQ(first_diff(q + n + gap, f.data(), n), -1);
  EXPECT_EQ(stats.staged_copies, 4u);  // a, c, e, f: adjacent in the ring, not on the device
  EXPECT_EQ(stats.pinned_bytes, n);
}

// A source kind the caller already asked for (CopyRequest::src_kind) is used as given: the
// container asks once per small tensor and the engine does not ask again. Told "pageable", a
// pinned source goes through the ring; untold, the engine finds it pinned.
TEST(Transfer, ASourceKindTheCallerKnowsIsNotAskedAgain) {
  auto dev = host_device();
  auto eng = make_engine(dev, 3, 64 * KiB, 8 * 64 * KiB, TransferOptions{}.block_bytes, /*ramp=*/false);
  const uint64_t n = 200 * KiB + 3;
  auto src = pattern(n, 50);
  Buffer pinned = alloc(dev, MemKind::kPinnedHost, n);
  std::memcpy(pinned.data(), src.data(), n);
  Buffer dst = alloc(dev, MemKind::kDevice, n);
  for (bool told : {true, false}) {
    SCOPED_TRACE(told ? "told pageable" : "not told");
    std::memset(dst.data(), 0, n);
    CopyRequest r{dst.data(), pinned.data(), n};
    if (told) r.src_kind = PointerKind::kPageableHost;
    TransferStats stats;
    ASSERT_TRUE(eng->copy({r}, {}, &stats).ok());
    EXPECT_EQ(first_diff(dst.data(), src.data(), n), -1);
    EXPECT_EQ(stats.pageable_bytes, told ? n : 0u);
    EXPECT_EQ(stats.pinned_bytes, told ? 0u : n);
    EXPECT_EQ(stats.staged_copies, told ? 1u : 0u);  // 4 fills, one block
  }
}

// Destinations of a group allocated by the callback, which fails inside the group: the copy
// fails with its status after draining, nothing is left in flight, and the engine serves the
// next call (what an update that runs out of memory inside a slab relies on).
TEST(Transfer, AllocationFailureInsideADstGroupStopsTheCopy) {
  auto dev = host_device();
  auto eng = make_engine(dev, 3, 64 * KiB, 8 * 64 * KiB, 4 * 64 * KiB, /*ramp=*/false);
  const uint64_t n = 48 * KiB;
  std::vector<std::vector<unsigned char>> srcs;
  std::vector<CopyRequest> reqs;
  for (int i = 0; i < 40; ++i) {
    srcs.push_back(pattern(n, 600 + uint32_t(i)));
    CopyRequest r;
    r.src = srcs.back().data();
    r.bytes = n;
    r.dst_group = 1 + uint64_t(i) / 20;  // two slabs of 20
    reqs.push_back(r);
  }
  Buffer slabs[2];
  AllocateFn allocate = [&](size_t i, void** out) -> Status {
    if (i == 27) return OutOfMemory("test: no memory for request 27");
    Buffer& s = slabs[i / 20];
    if (i % 20 == 0) s = alloc(dev, MemKind::kDevice, 20 * n, 0);
    *out = static_cast<char*>(s.data()) + (i % 20) * n;
    return Status::Ok();
  };
  Status st = eng->copy(reqs, {}, nullptr, allocate);
  EXPECT_EQ(st.code(), Code::kOutOfMemory) << st.message();
  EXPECT_NE(st.message().find("copy request 27 of 40"), std::string::npos) << st.message();
  // Nothing in flight: the slabs can go at once, and the next call works.
  slabs[0].reset();
  slabs[1].reset();
  Buffer d = alloc(dev, MemKind::kDevice, 20 * n);
  std::vector<CopyRequest> again(reqs.begin(), reqs.begin() + 20);
  for (size_t i = 0; i < again.size(); ++i) again[i].dst = static_cast<char*>(d.data()) + i * n;
  TransferStats stats;
  ASSERT_TRUE(eng->copy(again, {}, &stats).ok());
  for (size_t i = 0; i < again.size(); ++i)
    ASSERT_EQ(first_diff(static_cast<char*>(d.data()) + i * n, srcs[i].data(), n), -1) << "request " << i;
  EXPECT_EQ(stats.staged_copies, 4u);  // 960 KiB: 15 fills, 4 blocks
}

// --- file sources (pread into the ring, or straight into pinned host memory) ------------------

class TempFile {
 public:
  explicit TempFile(const std::vector<unsigned char>& bytes) {
    static std::atomic<int> n{0};
    path_ = ::testing::TempDir() + "wharf_transfer_" + std::to_string(::getpid()) + "_" + std::to_string(n++);
    std::ofstream f(path_, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    EXPECT_TRUE(f.good());
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }
  std::shared_ptr<const io::ReadOnlyFile> open() const {
    std::shared_ptr<const io::ReadOnlyFile> f;
    Status st = io::ReadOnlyFile::open(path_, &f);
    EXPECT_TRUE(st.ok()) << st.message();
    return f;
  }

 private:
  std::string path_;
};

CopyRequest file_request(void* dst, const io::ReadOnlyFile* file, uint64_t offset, uint64_t bytes, const char* name) {
  CopyRequest r;
  r.dst = dst;
  r.file = file;
  r.file_offset = offset;
  r.bytes = bytes;
  r.name = name;
  return r;
}

TEST(Transfer, FileSourcesAreReadIntoDeviceAndPinnedDestinations) {
  auto dev = host_device();
  auto eng = make_engine(dev, 3, 64 * KiB, 256 * KiB);  // many fills per request
  const uint64_t n = 2 * MiB + 77;
  const auto bytes = pattern(n, 7);
  TempFile tf(bytes);
  auto file = tf.open();
  // Ranges at odd offsets, packed into shared fills, beside a pageable source.
  const uint64_t a_off = 13, a_n = 700 * KiB + 5, b_off = a_off + a_n, b_n = 3 * KiB, c_off = 1 * MiB, c_n = n - c_off;
  Buffer a = alloc(dev, MemKind::kDevice, a_n), b = alloc(dev, MemKind::kDevice, b_n);
  Buffer c = alloc(dev, MemKind::kPinnedHost, c_n);  // no DMA: read straight in
  const auto mem = pattern(100 * KiB, 8);
  Buffer m = alloc(dev, MemKind::kDevice, mem.size());
  TransferStats stats;
  Status st = eng->copy({file_request(a.data(), file.get(), a_off, a_n, "a"),
                         {m.data(), mem.data(), mem.size()},
                         file_request(b.data(), file.get(), b_off, b_n, "b"),
                         file_request(c.data(), file.get(), c_off, c_n, "c")},
                        {}, &stats);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(first_diff(a.data(), bytes.data() + a_off, a_n), -1);
  EXPECT_EQ(first_diff(b.data(), bytes.data() + b_off, b_n), -1);
  EXPECT_EQ(first_diff(c.data(), bytes.data() + c_off, c_n), -1);
  EXPECT_EQ(first_diff(m.data(), mem.data(), mem.size()), -1);
  EXPECT_EQ(stats.file_bytes, a_n + b_n + c_n);
  EXPECT_EQ(stats.pageable_bytes, mem.size());

  // A request names its source once: an address or a file, not both, not neither.
  CopyRequest both = file_request(a.data(), file.get(), 0, 1, "a");
  both.src = mem.data();
  st = eng->copy({both}, {});
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.message();
  EXPECT_NE(st.message().find("both a source address and a file"), std::string::npos) << st.message();
}

// A file truncated after it was opened (and validated) fails before anything is written.
TEST(Transfer, AFileTruncatedBeforeTheCopyFailsItWithNothingWritten) {
  auto dev = host_device();
  auto eng = make_engine(dev, 2, 64 * KiB, 256 * KiB);
  const uint64_t n = 512 * KiB;
  TempFile tf(pattern(n, 3));
  auto file = tf.open();
  ASSERT_EQ(::truncate(tf.path().c_str(), off_t(n - 10)), 0);
  Buffer a = alloc(dev, MemKind::kDevice, 256 * KiB, 0xee), b = alloc(dev, MemKind::kDevice, 256 * KiB, 0xee);
  Status st = eng->copy({file_request(a.data(), file.get(), 0, 256 * KiB, "layers.0.weight"),
                         file_request(b.data(), file.get(), 256 * KiB, 256 * KiB, "layers.1.weight")},
                        {});
  EXPECT_EQ(st.code(), Code::kIoError) << st.message();
  for (const char* want : {"copy request 1 of 2 ('layers.1.weight')", tf.path().c_str(), "is 524278 bytes",
                           "need 524288", "truncated", "nothing was copied"})
    EXPECT_NE(st.message().find(want), std::string::npos) << st.message() << "\nexpected: " << want;
  EXPECT_TRUE(all_equal(a.data(), 0xee, 256 * KiB));
  EXPECT_TRUE(all_equal(b.data(), 0xee, 256 * KiB));
}

// A file that shrinks while the ring is being filled: the read that runs short fails the copy
// with IO_ERROR naming the file, the tensor and the offset; no crash, the engine serves on.
TEST(Transfer, AFileShrunkDuringTheCopyIsAnIoError) {
  auto dev = host_device();
  // One worker: the hook runs on the thread that reads every fill, so the fills after the
  // third are read after the truncation whatever the scheduling.
  auto eng = make_engine(dev, 1, 64 * KiB, 256 * KiB);
  const uint64_t n = 1 * MiB;
  const auto bytes = pattern(n, 4);
  TempFile tf(bytes);
  auto file = tf.open();
  Buffer d = alloc(dev, MemKind::kDevice, n);
  std::atomic<int> fills{0};
  Status st;
  {
    // The third fill to start reads after the file lost its second half.
    ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "transfer.staged.fill") == 0 && fills.fetch_add(1) == 2) {
        EXPECT_EQ(::truncate(tf.path().c_str(), off_t(n / 2)), 0);
      }
    });
    st = eng->copy({file_request(d.data(), file.get(), 0, n, "blocks.3.norm")}, {});
  }
  EXPECT_GE(fills.load(), 3);
  EXPECT_EQ(st.code(), Code::kIoError) << st.message();
  for (const char* want :
       {"copy request 0 of 1 ('blocks.3.norm')", tf.path().c_str(), "at offset", "shrank while being read"})
    EXPECT_NE(st.message().find(want), std::string::npos) << st.message() << "\nexpected: " << want;

  // Pinned host destinations are read with pread directly: the same error.
  Buffer p = alloc(dev, MemKind::kPinnedHost, n);
  st = eng->copy({file_request(p.data(), file.get(), 0, n, "t")}, {});
  EXPECT_EQ(st.code(), Code::kIoError) << st.message();
  EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();
  // The engine serves the next call.
  st = eng->copy({file_request(d.data(), file.get(), 0, n / 2, "t")}, {});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(first_diff(d.data(), bytes.data(), n / 2), -1);
}

// A fill that stalls (a staging thread descheduled for milliseconds, as seen on busy GPU
// hosts) holds only its own block's ring slot: while it is parked, every other block of the
// copy is filled and enqueued through the remaining slots. Before slots were taken per block,
// block k used slot k mod B, so at most B - 1 blocks after the stalled one could proceed and
// then every thread waited for it, the copy engine idle.
TEST(Transfer, AStalledFillHoldsOnlyItsOwnSlot) {
  auto dev = host_device();
  // 4 threads, 64 KiB chunks in blocks of 2, a ring of 4 slots; 64 fills = 32 blocks.
  auto eng = make_engine(dev, 4, 64 * KiB, 512 * KiB, 128 * KiB, /*ramp=*/false);
  const uint64_t n = 4 * MiB;
  const auto bytes = pattern(n, 11);
  Buffer d = alloc(dev, MemKind::kDevice, n);
  std::mutex m;
  std::condition_variable cv;
  int fills_begun = 0, fills_enqueued = 0, enqueued_while_parked = -1;
  bool others_done = false, released = false;
  Status st;
  {
    ScopedTestHook hook([&](const char* point) {
      std::unique_lock<std::mutex> lock(m);
      if (std::strcmp(point, "transfer.staged.fill") == 0 && fills_begun++ == 0) {
        // The first fill to begin parks until the other blocks' 62 fills are on the stream
        // (or 10 s pass: the old engine never gets there).
        others_done = cv.wait_for(lock, std::chrono::seconds(10), [&] { return fills_enqueued >= 62; });
        enqueued_while_parked = fills_enqueued;
        released = true;
      } else if (std::strcmp(point, "transfer.staged.enqueued") == 0) {
        ++fills_enqueued;
        cv.notify_all();
      }
    });
    st = eng->copy({{d.data(), bytes.data(), n}}, {});
  }
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(released);
  EXPECT_TRUE(others_done) << "only " << enqueued_while_parked << " of the other 62 fills were enqueued while one "
                           << "fill was stalled";
  EXPECT_EQ(first_diff(d.data(), bytes.data(), n), -1);
}

// A fill that fails while other blocks wait for a ring slot: the failure wakes them, the copy
// returns the read's error (no thread is left waiting for a slot that is never freed) and the
// engine serves the next call. With two slots of four chunks and four threads, one fill of
// block 0 and one of block 1 are parked, holding both slots, while the other two threads take
// block 2's fills and wait in Job::slot_of; then the file loses its bytes and both parked
// reads fail.
TEST(Transfer, AFailedFillWakesTheFillsWaitingForASlot) {
  auto dev = host_device();
  // 4 threads, 64 KiB chunks in blocks of 4, a ring of 2 slots; 16 fills = 4 blocks.
  auto eng = make_engine(dev, 4, 64 * KiB, 512 * KiB, 256 * KiB, /*ramp=*/false);
  const uint64_t n = 1 * MiB;
  const auto bytes = pattern(n, 12);
  TempFile tf(bytes);
  auto file = tf.open();
  Buffer d = alloc(dev, MemKind::kDevice, n, 0xee);
  std::mutex m;
  std::condition_variable cv;
  int begun = 0;
  bool emptied = false;
  Status st;
  {
    ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "transfer.staged.fill") != 0) return;
      std::unique_lock<std::mutex> lock(m);
      const int c = begun++;
      cv.notify_all();
      if (c < 4) {
        // The four threads' first fills are fills 0-3 (block 0, slot 0): each thread holds
        // one until all four have begun. Then three go on, into block 1 (slot 1).
        cv.wait_for(lock, std::chrono::seconds(10), [&] { return begun >= 4; });
        if (c != 0) return;
        // Block 0's parked fill: once block 1's four fills have begun (the fifth of them
        // parked below), the two free threads take block 2's fills and find no free slot.
        cv.wait_for(lock, std::chrono::seconds(10), [&] { return begun >= 8; });
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // they reach slot_of
        lock.lock();
        EXPECT_EQ(::truncate(tf.path().c_str(), 0), 0);
        emptied = true;
        cv.notify_all();
      } else if (c == 4) {
        // The first fill of block 1 to begin: holds slot 1 until the file is empty.
        cv.wait_for(lock, std::chrono::seconds(10), [&] { return emptied; });
      }
    });
    wharf_test::finishes_within(
        std::chrono::seconds(30), "a copy whose fill failed while others waited for a slot",
        [&] { st = eng->copy({file_request(d.data(), file.get(), 0, n, "blocks.7.ffn")}, {}); });
  }
  EXPECT_TRUE(emptied);
  EXPECT_EQ(begun, 8) << "fills of block 2 were read while blocks 0 and 1 held both slots";
  EXPECT_EQ(st.code(), Code::kIoError) << st.message();
  for (const char* want : {"copy request 0 of 1 ('blocks.7.ffn')", tf.path().c_str(), "shrank while being read"})
    EXPECT_NE(st.message().find(want), std::string::npos) << st.message() << "\nexpected: " << want;

  // The engine serves the next call through the same slots: the file's bytes back, copied whole.
  {
    std::ofstream f(tf.path(), std::ios::binary | std::ios::trunc);  // the same file, refilled
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(n));
    ASSERT_TRUE(f.good());
  }
  st = eng->copy({file_request(d.data(), file.get(), 0, n, "blocks.7.ffn")}, {});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(first_diff(d.data(), bytes.data(), n), -1);
}

}  // namespace
}  // namespace wharf
