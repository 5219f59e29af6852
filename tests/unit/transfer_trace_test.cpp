// SPDX-License-Identifier: Apache-2.0
// The transfer engine's trace (TransferTrace, WHARF_TRANSFER_TRACE) on the host backend: every
// fill, block, direct copy, allocation and worker is recorded with consistent times, the
// device times come from timing events, and the summary's busy / idle arithmetic is right.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/test_hooks.h"
#include "common/scoped_env.h"
#include "common/transfer_support.h"
#include "device/host/host_device.h"
#include "device/runtime.h"
#include "device/transfer.h"
#include "device/transfer_env.h"

namespace wharf {
namespace {

using transfer_test::alloc;
using transfer_test::host_device;
using transfer_test::KiB;
using transfer_test::MiB;

// Whole fills unless a test asks for the ramp.
std::unique_ptr<TransferEngine> make_engine(const std::shared_ptr<Device>& dev, uint32_t threads, uint64_t chunk,
                                            uint64_t staging, uint64_t block, bool ramp = false) {
  return transfer_test::make_engine(dev, threads, chunk, staging, block, ramp);
}

size_t count_lines_starting(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  size_t n = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(word + " ", 0) == 0) ++n;
  return n;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(TransferTrace, HostTimingEventsMeasureBetweenCompletions) {
  auto dev = host_device();
  std::unique_ptr<Stream> s;
  ASSERT_TRUE(dev->create_stream(&s).ok());
  std::unique_ptr<Event> a, b, plain;
  ASSERT_TRUE(dev->create_timing_event(&a).ok());
  ASSERT_TRUE(dev->create_timing_event(&b).ok());
  ASSERT_TRUE(dev->create_event(&plain).ok());
  double ms = 0;
  // Never recorded: no time to give.
  EXPECT_EQ(b->elapsed_ms_since(*a, &ms).code(), Code::kFailedPrecondition);
  ASSERT_TRUE(s->record(*a).ok());
  ASSERT_TRUE(s->enqueue_host([] { usleep(20000); }).ok());
  ASSERT_TRUE(s->record(*b).ok());
  ASSERT_TRUE(s->record(*plain).ok());
  ASSERT_TRUE(s->synchronize().ok());
  Status st = b->elapsed_ms_since(*a, &ms);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_GE(ms, 19.0);
  EXPECT_LT(ms, 2000.0);
  ASSERT_TRUE(a->elapsed_ms_since(*b, &ms).ok());
  EXPECT_LE(ms, -19.0);
  // An event made without timing cannot be timed.
  EXPECT_EQ(plain->elapsed_ms_since(*a, &ms).code(), Code::kInvalidArgument);
  EXPECT_EQ(a->elapsed_ms_since(*plain, &ms).code(), Code::kInvalidArgument);
}

// One call with pageable sources (through the ring, destinations allocated during the call),
// a pinned source (a direct copy) and a pageable -> pinned host copy: every record is there,
// once, with times in order.
TEST(TransferTrace, RecordsEveryFillBlockDirectCopyAllocationAndWorker) {
  auto dev = host_device();
  const uint64_t chunk = 64 * KiB;
  auto eng = make_engine(dev, 3, chunk, 8 * chunk, 4 * chunk);  // blocks of 4 chunks, 2 block slots
  std::vector<unsigned char> pageable(3 * MiB + 100, 7);
  Buffer pinned_src = alloc(dev, MemKind::kPinnedHost, 200 * KiB);
  std::memset(pinned_src.data(), 9, 200 * KiB);
  Buffer direct_dst = alloc(dev, MemKind::kDevice, 200 * KiB);
  Buffer host_dst = alloc(dev, MemKind::kPinnedHost, 300 * KiB);
  std::vector<Buffer> allocated;
  std::vector<CopyRequest> reqs;
  reqs.push_back({nullptr, pageable.data(), 1 * MiB});                            // 16 fills
  reqs.push_back({nullptr, pageable.data() + 1 * MiB, 1 * MiB + 100});            // 17 fills
  reqs.push_back({direct_dst.data(), pinned_src.data(), 200 * KiB});              // direct
  reqs.push_back({host_dst.data(), pageable.data() + 2 * MiB + 100, 300 * KiB});  // host pieces
  AllocateFn allocate = [&](size_t i, void** dst) -> Status {
    allocated.push_back(alloc(dev, MemKind::kDevice, reqs[i].bytes));
    *dst = allocated.back().data();
    return Status::Ok();
  };
  TransferTrace tr;
  TransferStats stats;
  Status st = eng->copy(reqs, {}, &stats, allocate, nullptr, &tr);
  ASSERT_TRUE(st.ok()) << st.message();
  for (const Buffer& b : allocated) ASSERT_EQ(static_cast<unsigned char*>(b.data())[0], 7);

  EXPECT_EQ(tr.requests, 4u);
  EXPECT_EQ(tr.pageable_bytes, 2 * MiB + 100 + 300 * KiB);
  EXPECT_EQ(tr.pinned_bytes, 200 * KiB);
  EXPECT_TRUE(tr.error.empty());
  EXPECT_TRUE(tr.device_times);
  EXPECT_EQ(tr.staging_threads, 3u);
  EXPECT_EQ(tr.block_chunks, 4u);
  EXPECT_EQ(tr.chunk_bytes, chunk);
  EXPECT_EQ(tr.ring_bytes, 8 * chunk);
  EXPECT_EQ(tr.staged_copies, stats.staged_copies);

  // Fills: 33, every one read by a staging worker, after its wait, in its block.
  ASSERT_EQ(tr.fills.size(), 33u);
  uint64_t filled = 0;
  for (size_t f = 0; f < tr.fills.size(); ++f) {
    const TransferTrace::Fill& x = tr.fills[f];
    SCOPED_TRACE("fill " + std::to_string(f));
    EXPECT_EQ(x.block, f / 4);
    EXPECT_LT(x.thread, 3u);
#ifdef __linux__
    EXPECT_GE(x.cpu, 0);
#endif
    EXPECT_GE(x.wait_ns, 0);
    EXPECT_GE(x.read_start_ns, x.wait_ns);
    EXPECT_GE(x.read_end_ns, x.read_start_ns);
    EXPECT_LE(x.read_end_ns, tr.total_ns);
    filled += x.bytes;
  }
  EXPECT_EQ(filled, 2 * MiB + 100);
  // Blocks: 9 (8 of 4 fills, the last of 1), each enqueued after its last fill was read, with
  // device times inside the call.
  ASSERT_EQ(tr.blocks.size(), 9u);
  uint64_t sent = 0, copies = 0;
  for (size_t k = 0; k < tr.blocks.size(); ++k) {
    const TransferTrace::Block& b = tr.blocks[k];
    SCOPED_TRACE("block " + std::to_string(k));
    EXPECT_EQ(b.fills, k < 8 ? 4u : 1u);
    int64_t last_read = 0;
    for (size_t f = 4 * k; f < std::min<size_t>(4 * k + 4, tr.fills.size()); ++f)
      last_read = std::max(last_read, tr.fills[f].read_end_ns);
    EXPECT_GE(b.ready_ns, last_read);
    EXPECT_GE(b.enqueue_start_ns, b.ready_ns);
    EXPECT_GE(b.enqueue_end_ns, b.enqueue_start_ns);
    EXPECT_GE(b.copies, 1u);
    EXPECT_GE(b.device_start_ms, 0.0);
    EXPECT_GE(b.device_end_ms, b.device_start_ms);
    EXPECT_LE(b.device_end_ms, double(tr.total_ns) / 1e6 + 1.0);
    sent += b.bytes;
    copies += b.copies;
  }
  EXPECT_EQ(sent, 2 * MiB + 100);
  EXPECT_EQ(copies, stats.staged_copies);
  // The direct copy and the two allocations, on the calling thread, before it was done.
  ASSERT_EQ(tr.directs.size(), 1u);
  EXPECT_EQ(tr.directs[0].request, 2u);
  EXPECT_EQ(tr.directs[0].bytes, 200 * KiB);
  EXPECT_GE(tr.directs[0].enqueue_end_ns, tr.directs[0].enqueue_start_ns);
  EXPECT_GE(tr.directs[0].enqueue_start_ns, 0);
  EXPECT_GE(tr.directs[0].device_end_ms, tr.directs[0].device_start_ms);
  EXPECT_GE(tr.directs[0].device_start_ms, 0.0);
  ASSERT_EQ(tr.allocs.size(), 2u);
  EXPECT_EQ(tr.allocs[0].request, 0u);
  EXPECT_EQ(tr.allocs[1].request, 1u);
  EXPECT_EQ(tr.allocs[1].bytes, 1 * MiB + 100);
  for (const TransferTrace::Alloc& a : tr.allocs) {
    EXPECT_GE(a.start_ns, 0);
    EXPECT_GE(a.end_ns, a.start_ns);
    EXPECT_LE(a.end_ns, tr.requests_done_ns);
  }
  // Workers: the pool's three, each started after it was told to, the host pieces among them.
  ASSERT_EQ(tr.workers.size(), 3u);
  uint64_t worker_bytes = 0, pieces = 0;
  for (const TransferTrace::Worker& w : tr.workers) {
    EXPECT_GE(w.start_ns, tr.workers_begin_ns);
    EXPECT_GE(w.end_ns, w.start_ns);
    EXPECT_LE(w.end_ns, tr.workers_done_ns);
    worker_bytes += w.bytes;
    pieces += w.host_pieces;
  }
  EXPECT_EQ(worker_bytes, 2 * MiB + 100 + 300 * KiB);
  EXPECT_EQ(pieces, 5u);  // 300 KiB in 64 KiB pieces
  // The calling thread's milestones, in order.
  EXPECT_GE(tr.planned_ns, 0);
  EXPECT_GE(tr.workers_begin_ns, tr.planned_ns);
  EXPECT_GE(tr.requests_done_ns, tr.workers_begin_ns);
  EXPECT_GE(tr.workers_done_ns, tr.requests_done_ns);
  EXPECT_GE(tr.drain_start_ns, tr.workers_done_ns);
  EXPECT_GE(tr.total_ns, tr.drain_start_ns);

  const TransferTraceSummary s = summarize_transfer_trace(tr);
  EXPECT_EQ(s.bytes, 2 * MiB + 100 + 300 * KiB + 200 * KiB);
  EXPECT_EQ(s.staged_bytes, 2 * MiB + 100);
  EXPECT_EQ(s.dma_bytes, 2 * MiB + 100 + 200 * KiB);  // not the host pieces
  EXPECT_GE(s.first_enqueue_ms, 0.0);
  EXPECT_GE(s.first_dma_ms, 0.0);
  EXPECT_GE(s.last_dma_ms, s.first_dma_ms);
  EXPECT_NEAR(s.dma_busy_ms + s.dma_idle_ms, s.last_dma_ms - s.first_dma_ms, 1e-6);
  EXPECT_EQ(tr.allocs.size(), 2u);
  EXPECT_GE(s.alloc_ms, s.alloc_max_ms);

  const std::string text = format_transfer_trace(tr);
  EXPECT_EQ(count_lines_starting(text, "fill"), 33u);
  EXPECT_EQ(count_lines_starting(text, "block"), 9u);
  EXPECT_EQ(count_lines_starting(text, "direct"), 1u);
  EXPECT_EQ(count_lines_starting(text, "alloc"), 2u);
  EXPECT_EQ(count_lines_starting(text, "worker"), 3u);
  EXPECT_NE(text.find("first DMA"), std::string::npos) << text;
  EXPECT_NE(text.find("  summary      total_ms="), std::string::npos) << text;
  const std::string summary = format_transfer_trace(tr, /*summary_only=*/true);
  EXPECT_EQ(count_lines_starting(summary, "fill"), 0u);
  EXPECT_EQ(text.rfind(summary, 0), 0u);  // the full text begins with the summary
}

// The summary's arithmetic on a made-up trace: the busy time is the union of the copies'
// device intervals (overlaps counted once), the gaps are what lies between, largest first.
TEST(TransferTrace, SummaryCountsOverlapsOnceAndFindsTheGaps) {
  TransferTrace t;
  t.device_times = true;
  t.total_ns = 10'000'000;
  auto block = [](double a, double b) {
    TransferTrace::Block x;
    x.device_start_ms = a;
    x.device_end_ms = b;
    x.enqueue_start_ns = int64_t(a * 1e6);
    return x;
  };
  t.blocks = {block(1.0, 2.0), block(1.5, 3.0), block(3.5, 4.0), block(6.0, 7.0)};
  TransferTrace::Direct d;
  d.device_start_ms = 4.0;
  d.device_end_ms = 4.5;
  d.enqueue_start_ns = 500'000;
  d.enqueue_end_ns = 600'000;
  t.directs = {d};
  t.blocks.push_back(TransferTrace::Block{});  // never timed: left out
  const TransferTraceSummary s = summarize_transfer_trace(t);
  EXPECT_DOUBLE_EQ(s.first_dma_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.last_dma_ms, 7.0);
  EXPECT_DOUBLE_EQ(s.dma_busy_ms, 2.0 + 1.0 + 1.0);  // [1, 3], [3.5, 4.5], [6, 7]
  EXPECT_DOUBLE_EQ(s.dma_idle_ms, 2.0);
  ASSERT_EQ(s.gaps.size(), 2u);
  EXPECT_DOUBLE_EQ(s.gaps[0].ms, 1.5);
  EXPECT_DOUBLE_EQ(s.gaps[0].at_ms, 4.5);
  EXPECT_DOUBLE_EQ(s.gaps[1].ms, 0.5);
  EXPECT_DOUBLE_EQ(s.gaps[1].at_ms, 3.0);
  EXPECT_DOUBLE_EQ(s.first_enqueue_ms, 0.5);
  EXPECT_NEAR(s.direct_enqueue_ms, 0.1, 1e-9);
}

// WHARF_TRANSFER_TRACE=path: each call while it is set appends its trace to the file.
TEST(TransferTrace, TheEnvironmentVariableAppendsEachCallsTraceToAFile) {
  auto dev = host_device();
  auto eng = make_engine(dev, 2, 64 * KiB, 4 * 64 * KiB, 2 * 64 * KiB);
  std::vector<unsigned char> src(300 * KiB, 3);
  Buffer dst = alloc(dev, MemKind::kDevice, 300 * KiB);
  const std::vector<CopyRequest> reqs{{dst.data(), src.data(), 300 * KiB}};
  char path[] = "/tmp/wharf_transfer_trace_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(setenv("WHARF_TRANSFER_TRACE", path, 1), 0);
  Status a = eng->copy(reqs, {});
  Status b = eng->copy(reqs, {});
  unsetenv("WHARF_TRANSFER_TRACE");
  Status c = eng->copy(reqs, {});  // not traced
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  EXPECT_EQ(count_of(text.str(), "transfer trace: 1 requests"), 2u) << text.str();
  EXPECT_EQ(count_lines_starting(text.str(), "fill"), 2 * 5u);
  EXPECT_EQ(count_of(text.str(), "no device times"), 0u) << text.str();
}

// A failed call still hands out its trace, naming the error.
TEST(TransferTrace, AFailedCallsTraceNamesTheError) {
  auto dev = host_device();
  auto eng = make_engine(dev, 2, 64 * KiB, 4 * 64 * KiB, 2 * 64 * KiB);
  std::vector<unsigned char> src(1 * MiB, 3);
  const std::vector<CopyRequest> reqs{{nullptr, src.data(), 1 * MiB}};
  AllocateFn refuse = [](size_t, void**) { return Status(Code::kResourceExhausted, "no room for it"); };
  TransferTrace tr;
  Status st = eng->copy(reqs, {}, nullptr, refuse, nullptr, &tr);
  ASSERT_EQ(st.code(), Code::kResourceExhausted);
  EXPECT_NE(tr.error.find("no room for it"), std::string::npos) << tr.error;
  ASSERT_EQ(tr.allocs.size(), 1u);
  EXPECT_GE(tr.total_ns, tr.allocs[0].end_ns);
  EXPECT_NE(format_transfer_trace(tr).find("FAILED"), std::string::npos);
}

// The first blocks of a call, which the staging threads begin together, hold smaller fills
// growing block by block (so the first DMA need not wait for whole chunks); later fills hold
// whole chunks; without the ramp every fill does.
TEST(TransferRamp, TheFirstWavesFillsGrowBlockByBlock) {
  const uint64_t chunk = 4 * MiB;
  // The H100 host's shape: 12 threads, blocks of 4 chunks: the first 3 blocks start together.
  for (size_t f = 0; f < 4; ++f) EXPECT_EQ(staging_fill_bytes(f, chunk, 4, 12, true), 1 * MiB) << f;
  for (size_t f = 4; f < 8; ++f) EXPECT_EQ(staging_fill_bytes(f, chunk, 4, 12, true), 2 * MiB) << f;
  for (size_t f = 8; f < 12; ++f) EXPECT_EQ(staging_fill_bytes(f, chunk, 4, 12, true), 3 * MiB) << f;
  for (size_t f = 12; f < 100; ++f) EXPECT_EQ(staging_fill_bytes(f, chunk, 4, 12, true), chunk) << f;
  for (size_t f = 0; f < 20; ++f) EXPECT_EQ(staging_fill_bytes(f, chunk, 4, 12, false), chunk) << f;
  // One thread filling blocks of 4: the first block, which it reads alone, at half chunks.
  for (size_t f = 0; f < 4; ++f) EXPECT_EQ(staging_fill_bytes(f, chunk, 4, 1, true), 2 * MiB) << f;
  EXPECT_EQ(staging_fill_bytes(4, chunk, 4, 1, true), chunk);
  // Blocks of one chunk: each of the first `threads` fills a step larger, in whole pages.
  EXPECT_EQ(staging_fill_bytes(0, 64 * KiB, 1, 3, true), 16 * KiB);
  EXPECT_EQ(staging_fill_bytes(1, 64 * KiB, 1, 3, true), 32 * KiB);
  EXPECT_EQ(staging_fill_bytes(2, 64 * KiB, 1, 3, true), 48 * KiB);
  EXPECT_EQ(staging_fill_bytes(3, 64 * KiB, 1, 3, true), 64 * KiB);
  // Never below a page, never above a chunk.
  EXPECT_EQ(staging_fill_bytes(0, 64 * KiB, 1, 256, true), 4 * KiB);
  for (size_t f = 0; f < 300; ++f) {
    const uint64_t b = staging_fill_bytes(f, 64 * KiB, 1, 256, true);
    EXPECT_GE(b, 4 * KiB);
    EXPECT_LE(b, 64 * KiB);
    EXPECT_EQ(b % (4 * KiB), 0u);
  }
}

// Through the engine: the trace shows the first block's fills at half a chunk (2 threads,
// blocks of 2), the later ones whole, and every byte lands, from one request and from a slab
// (dst_group) whose members cross the smaller fills.
TEST(TransferRamp, TheEngineFillsTheFirstBlocksSmallerAndEveryByteLands) {
  auto dev = host_device();
  const uint64_t chunk = 64 * KiB;
  auto eng = make_engine(dev, 2, chunk, 4 * chunk, 2 * chunk, /*ramp=*/true);
  std::vector<unsigned char> src(700 * KiB + 123);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  Buffer dst = alloc(dev, MemKind::kDevice, src.size() + 4096);
  std::memset(dst.data(), 0xee, src.size() + 4096);
  TransferTrace tr;
  Status st = eng->copy({{dst.data(), src.data(), src.size()}}, {}, nullptr, nullptr, nullptr, &tr);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), src.size()), 0);
  EXPECT_EQ(static_cast<unsigned char*>(dst.data())[src.size()], 0xee);
  ASSERT_GE(tr.fills.size(), 4u);
  EXPECT_EQ(tr.fills[0].bytes, chunk / 2);
  EXPECT_EQ(tr.fills[1].bytes, chunk / 2);
  EXPECT_EQ(tr.fills[2].bytes, chunk);
  // A slab of members of 10 KiB .. 50 KiB back to back, crossing the half-chunk fills.
  std::vector<CopyRequest> reqs;
  uint64_t off = 0;
  for (int i = 0; off + 50 * KiB <= src.size(); ++i) {
    const uint64_t n = (10 + uint64_t(i * 13) % 41) * KiB;
    CopyRequest r{static_cast<char*>(dst.data()) + off, src.data() + off, n};
    r.dst_group = 3;
    reqs.push_back(r);
    off += n;
  }
  std::memset(dst.data(), 0xee, src.size() + 4096);
  st = eng->copy(reqs, {});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), off), 0);
  EXPECT_EQ(static_cast<unsigned char*>(dst.data())[off], 0xee);
}

// Allocating ahead of need (TransferOptions::alloc_ahead_bytes): a staged request's
// destination is allocated only once the staging threads have begun fills close to its first
// one (otherwise the calling thread allocates them all at the start); every byte lands, and a
// failed allocation midway still ends the copy.
TEST(TransferAllocAhead, DestinationsAreAllocatedOnlyAsTheFillsApproachThem) {
  auto dev = host_device();
  const uint64_t chunk = 64 * KiB, per = 8 * chunk;
  const size_t kRequests = 8;
  TransferOptions o;
  o.threads = 2;
  o.chunk_bytes = chunk;
  o.staging_bytes = 4 * chunk;
  o.block_bytes = 2 * chunk;
  o.ramp_start = false;  // request i's first fill is 8 i
  o.alloc_ahead_bytes = chunk;
  std::unique_ptr<TransferEngine> eng;
  ASSERT_TRUE(TransferEngine::create(dev, o, &eng).ok());
  std::vector<unsigned char> src(kRequests * per);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + i / 4096);
  std::vector<CopyRequest> reqs;
  for (size_t i = 0; i < kRequests; ++i) reqs.push_back({nullptr, src.data() + i * per, per});
  for (size_t fail_at : {kRequests, size_t(5)}) {
    SCOPED_TRACE(fail_at == kRequests ? "all allocated" : "allocation 5 fails");
    std::atomic<int> fills_begun{0};
    ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "transfer.staged.fill") == 0) fills_begun.fetch_add(1);
    });
    std::vector<int> begun_at(kRequests, -1);
    std::vector<Buffer> dsts(kRequests);
    AllocateFn allocate = [&](size_t i, void** out) -> Status {
      begun_at[i] = fills_begun.load();
      if (i == fail_at) return Status(Code::kResourceExhausted, "no room for request 5");
      dsts[i] = alloc(dev, MemKind::kDevice, per);
      *out = dsts[i].data();
      return Status::Ok();
    };
    TransferTrace tr;
    Status st = eng->copy(reqs, {}, nullptr, allocate, nullptr, &tr);
    if (fail_at < kRequests) {
      EXPECT_EQ(st.code(), Code::kResourceExhausted) << st.message();
      for (size_t i = fail_at + 1; i < kRequests; ++i) EXPECT_EQ(begun_at[i], -1) << "request " << i;
    } else {
      ASSERT_TRUE(st.ok()) << st.message();
      for (size_t i = 0; i < kRequests; ++i)
        ASSERT_EQ(std::memcmp(dsts[i].data(), src.data() + i * per, per), 0) << "request " << i;
    }
    EXPECT_EQ(tr.alloc_ahead_bytes, chunk);
    // Request i's first fill is 8 i; it was allocated once fill 8 i - 1 had been taken, and
    // each of the 2 threads may have taken one fill it had not begun yet.
    for (size_t i = 1; i < std::min(fail_at + 1, kRequests); ++i)
      EXPECT_GE(begun_at[i], int(8 * i) - 1 - 2) << "request " << i << " allocated too early";
  }
}

// The runtime's default staging shape (transfer.h's kDefaultStaging*; docs/performance.md,
// "Small staging chunks"): chunks of 512 KiB, a ring of 4 MiB per copy thread, blocks of up
// to 8 MiB (at most half the ring), as the engine it makes reports them while it copies.
TEST(TransferDefaults, TheRuntimeStagesInSmallChunksInARingOf4MiBPerThread) {
  if (std::getenv("WHARF_TRANSFER_CHUNK_KIB") || std::getenv("WHARF_TRANSFER_BLOCK_KIB"))
    GTEST_SKIP() << "WHARF_TRANSFER_CHUNK_KIB / _BLOCK_KIB replace the defaults in this process";
  struct Want {
    uint32_t threads;
    uint64_t ring, block_chunks;
  };
  // 12 threads: 96 chunks, blocks of 16 (8 MiB). 3 threads: 24 chunks, 16 does not divide
  // them, so the largest number <= 16 that does and leaves two blocks: 12 (6 MiB).
  for (const Want w : {Want{12, 48 * MiB, 16}, Want{3, 12 * MiB, 12}}) {
    RuntimeOptions o;
    o.backend = 2;  // host
    o.copy_threads = w.threads;
    std::shared_ptr<Runtime> rt;
    ASSERT_TRUE(Runtime::create(o, &rt).ok());
    EXPECT_EQ(rt->options().staging_bytes, w.ring);
    TransferEngine* eng = nullptr;
    ASSERT_TRUE(rt->transfers(&eng).ok());
    std::vector<unsigned char> src(20 * MiB + 777);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 29 + 3);
    Buffer dst = alloc(rt->device_ptr(), MemKind::kDevice, src.size());
    TransferTrace tr;
    Status st = eng->copy({{dst.data(), src.data(), src.size()}}, {}, nullptr, nullptr, nullptr, &tr);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(std::memcmp(dst.data(), src.data(), src.size()), 0);
    EXPECT_EQ(tr.chunk_bytes, 512 * KiB) << w.threads << " threads";
    EXPECT_EQ(tr.ring_bytes, w.ring) << w.threads << " threads";
    EXPECT_EQ(tr.block_chunks, w.block_chunks) << w.threads << " threads";
    EXPECT_EQ(tr.staging_threads, w.threads);
  }
}

// The A/B knobs WHARF_TRANSFER_CHUNK_KIB / _BLOCK_KIB replace the default sizes when a runtime
// makes its engine; a value that is not a whole number of KiB, or one the engine refuses,
// fails transfers() with an error naming the variable (not a silent default).
TEST(TransferDefaults, TheEnvironmentsSizesApplyOrFailNamingTheVariable) {
  auto transfers_with = [](const char* chunk, const char* block, std::shared_ptr<Runtime>* rt, TransferEngine** eng) {
    wharf_test::ScopedEnv env({{"WHARF_TRANSFER_CHUNK_KIB", chunk}, {"WHARF_TRANSFER_BLOCK_KIB", block}});
    RuntimeOptions o;
    o.backend = 2;  // host
    o.copy_threads = 4;
    EXPECT_TRUE(Runtime::create(o, rt).ok());
    return (*rt)->transfers(eng);
  };
  std::shared_ptr<Runtime> rt;
  TransferEngine* eng = nullptr;
  {
    Status st = transfers_with("1024", "4096", &rt, &eng);  // 1 MiB chunks, 4 MiB blocks
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<unsigned char> src(10 * MiB + 5);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
    Buffer dst = alloc(rt->device_ptr(), MemKind::kDevice, src.size());
    TransferTrace tr;
    st = eng->copy({{dst.data(), src.data(), src.size()}}, {}, nullptr, nullptr, nullptr, &tr);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(std::memcmp(dst.data(), src.data(), src.size()), 0);
    EXPECT_EQ(tr.chunk_bytes, 1 * MiB);
    EXPECT_EQ(tr.block_chunks, 4u);
  }
  struct Bad {
    const char *chunk, *block, *names, *says;
  };
  for (const Bad& b : {Bad{"abc", nullptr, "WHARF_TRANSFER_CHUNK_KIB='abc'", "whole number of KiB"},
                       Bad{"4096x", nullptr, "WHARF_TRANSFER_CHUNK_KIB='4096x'", "whole number of KiB"},
                       Bad{nullptr, "-5", "WHARF_TRANSFER_BLOCK_KIB='-5'", "whole number of KiB"},
                       Bad{nullptr, "0", "WHARF_TRANSFER_BLOCK_KIB='0'", "whole number of KiB"},
                       Bad{"16", nullptr, "WHARF_TRANSFER_CHUNK_KIB", "below the minimum"}}) {
    Status st = transfers_with(b.chunk, b.block, &rt, &eng);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << b.names;
    EXPECT_NE(st.message().find(b.names), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(b.says), std::string::npos) << st.message();
  }
}

// Every switch of device/transfer_env.h reaches the runtime's engine (its trace reports what
// the engine used), and each malformed or out-of-range value fails transfers() naming the
// variable; before, WHARF_TRANSFER_RAMP / _ALLOC_AHEAD_MIB / WHARF_STAGING_COPY and the
// WHARF_SERVING_* policy were read once per process, or at every copy, and a typo was
// silently the default.
TEST(TransferDefaults, EveryEnvironmentSwitchAppliesOrFailsNamingTheVariable) {
  auto engine_with = [](std::initializer_list<std::pair<const char*, const char*>> vars, std::shared_ptr<Runtime>* rt,
                        TransferEngine** eng) {
    wharf_test::ScopedEnv env(vars);
    RuntimeOptions o;
    o.backend = 2;  // host
    o.copy_threads = 4;
    EXPECT_TRUE(Runtime::create(o, rt).ok());
    return (*rt)->transfers(eng);
  };
  auto traced_copy = [](Runtime& rt, TransferEngine& eng, TransferTrace* tr) {
    std::vector<unsigned char> src(3 * MiB + 5);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 5 + 3);
    Buffer dst = alloc(rt.device_ptr(), MemKind::kDevice, src.size());
    Status st = eng.copy({{dst.data(), src.data(), src.size()}}, {}, nullptr, nullptr, nullptr, tr);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(std::memcmp(dst.data(), src.data(), src.size()), 0);
  };
  std::shared_ptr<Runtime> rt;
  TransferEngine* eng = nullptr;
  {  // unset: the defaults
    ASSERT_TRUE(engine_with({{"WHARF_TRANSFER_RAMP", nullptr},
                             {"WHARF_TRANSFER_ALLOC_AHEAD_MIB", nullptr},
                             {"WHARF_STAGING_COPY", nullptr}},
                            &rt, &eng)
                    .ok());
    TransferTrace tr;
    traced_copy(*rt, *eng, &tr);
    EXPECT_TRUE(tr.ramp_start);
    EXPECT_EQ(tr.alloc_ahead_bytes, 0u);
    EXPECT_EQ(tr.staging_copy, "memcpy");
  }
  {  // each set to what is not the default
    Status st = engine_with(
        {{"WHARF_TRANSFER_RAMP", "0"}, {"WHARF_TRANSFER_ALLOC_AHEAD_MIB", "3"}, {"WHARF_STAGING_COPY", "stream"}}, &rt,
        &eng);
    ASSERT_TRUE(st.ok()) << st.message();
    TransferTrace tr;
    traced_copy(*rt, *eng, &tr);
    EXPECT_FALSE(tr.ramp_start);
    EXPECT_EQ(tr.alloc_ahead_bytes, 3 * MiB);
    EXPECT_EQ(tr.staging_copy, "stream");
  }
  {  // the serving policy: applied to the options the runtime makes its engine with
    wharf_test::ScopedEnv env({{"WHARF_SERVING_WINDOW_MS", "100"}, {"WHARF_SERVING_DMA_KIB", "256"}});
    TransferOptions t = default_staging_options(4);
    Status st = apply_transfer_env(&t);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE(t.serving_policy.has_value());
    EXPECT_EQ(t.serving_policy->window_ms, 100u);
    EXPECT_EQ(t.serving_policy->dma_bytes, 256 * KiB);
  }
  struct Bad {
    const char *name, *value, *says;
  };
  for (const Bad& b :
       {Bad{"WHARF_TRANSFER_RAMP", "yes", "0 (off) or 1 (on)"}, Bad{"WHARF_TRANSFER_RAMP", "2", "0 (off) or 1 (on)"},
        Bad{"WHARF_TRANSFER_ALLOC_AHEAD_MIB", "8M", "whole number of MiB"},
        Bad{"WHARF_TRANSFER_ALLOC_AHEAD_MIB", "99999999999", "whole number of MiB"},
        Bad{"WHARF_STAGING_COPY", "Stream", "memcpy or stream"},
        Bad{"WHARF_SERVING_WINDOW_MS", "1e3", "whole number of ms"}}) {
    TransferOptions before = default_staging_options(4), t = before;
    {
      wharf_test::ScopedEnv env(b.name, b.value);
      Status direct = apply_transfer_env(&t);
      EXPECT_EQ(direct.code(), Code::kInvalidArgument) << b.name;
      EXPECT_FALSE(t.ramp_start.has_value() || t.alloc_ahead_bytes.has_value() || t.staging_copy.has_value() ||
                   t.serving_policy.has_value())
          << "options unchanged on error";
    }
    Status st = engine_with({{b.name, b.value}}, &rt, &eng);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << b.name << "=" << b.value;
    EXPECT_NE(st.message().find(std::string(b.name) + "='" + b.value + "'"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(b.says), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace wharf
