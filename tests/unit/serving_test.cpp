// SPDX-License-Identifier: Apache-2.0
// Serving while updating (device/serving.h, issue 26) on the host backend: the serving signal
// runs raise, the policy's environment switches, and what the transfer engine does while runs
// are served (copies in pieces, paced, fewer staging threads) and does not do otherwise. The
// effect on latency is measured on a GPU by bench/serve_update_bench.
#include "device/serving.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "api/handles.h"
#include "common/scoped_env.h"
#include "common/test_support.h"
#include "device/host/host_device.h"
#include "device/runtime.h"
#include "device/transfer.h"
#include "wharf/wharf.h"

namespace wharf {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

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

Buffer alloc(const std::shared_ptr<Device>& dev, MemKind kind, uint64_t bytes, int fill) {
  Buffer b;
  Status st = dev->allocate(kind, MemTag::kWorkspace, bytes, "test buffer", &b);
  EXPECT_TRUE(st.ok()) << st.message();
  if (b.data()) std::memset(b.data(), fill, bytes);
  return b;
}

// An engine of 3 threads, 64 KiB chunks, a ring of 8 chunks in blocks of 4 (256 KiB), whose
// serving signal is `signal` and whose policy is `policy`.
std::unique_ptr<TransferEngine> engine(const std::shared_ptr<Device>& dev, std::shared_ptr<ServingSignal> signal,
                                       const ServingPolicy& policy) {
  TransferOptions o;
  o.threads = 3;
  o.chunk_bytes = 64 * KiB;
  o.staging_bytes = 8 * 64 * KiB;
  o.block_bytes = 4 * 64 * KiB;
  o.ramp_start = false;  // whole-chunk fills: the DMA counts below assume them
  o.serving = std::move(signal);
  o.serving_policy = policy;
  std::unique_ptr<TransferEngine> e;
  Status st = TransferEngine::create(dev, o, &e);
  EXPECT_TRUE(st.ok()) << st.message();
  return e;
}

ServingPolicy pieces_of(uint64_t dma, uint64_t inflight, uint32_t threads = 0) {
  ServingPolicy p;
  p.dma_bytes = dma;
  p.inflight_bytes = inflight;
  p.copy_threads = threads;
  p.window_ms = 60000;
  return p;
}

std::shared_ptr<Device> host_device() {
  std::shared_ptr<Device> d;
  EXPECT_TRUE(create_host_device(DeviceOptions{}, &d).ok());
  return d;
}

TEST(ServingSignal, ARunMakesItActiveForItsWindow) {
  ServingSignal s;
  EXPECT_FALSE(s.active(60000)) << "no run yet";
  s.note_run();
  EXPECT_TRUE(s.active(60000));
  EXPECT_FALSE(s.active(0)) << "a window of 0 means never serving";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(s.active(5)) << "the last run is older than the window";
  EXPECT_TRUE(s.active(60000));
}

TEST(ServingSignal, OnePerCudaDevice) {
  EXPECT_EQ(ServingSignal::for_cuda_device(0), ServingSignal::for_cuda_device(0));
  EXPECT_NE(ServingSignal::for_cuda_device(0), ServingSignal::for_cuda_device(1));
}

TEST(ServingPolicy, EnvironmentOverridesEachDefault) {
  const ServingPolicy d;
  ServingPolicy p;
  {
    wharf_test::ScopedEnv env({{"WHARF_SERVING_DMA_KIB", "512"},
                               {"WHARF_SERVING_INFLIGHT_KIB", "0"},
                               {"WHARF_SERVING_COPY_THREADS", "4"},
                               {"WHARF_SERVING_WINDOW_MS", "250"},
                               {"WHARF_SERVING_POLL_US", "0"}});
    Status st = ServingPolicy::from_env(&p);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  EXPECT_EQ(p.dma_bytes, 512 * KiB);
  EXPECT_EQ(p.inflight_bytes, 0u);
  EXPECT_EQ(p.copy_threads, 4u);
  EXPECT_EQ(p.window_ms, 250u);
  EXPECT_EQ(p.poll_us, 0u);
  ServingPolicy q;
  q.window_ms = 7;  // overwritten: the defaults, as nothing is set
  ASSERT_TRUE(ServingPolicy::from_env(&q).ok());
  EXPECT_EQ(q.dma_bytes, d.dma_bytes);
  EXPECT_EQ(q.inflight_bytes, d.inflight_bytes);
  EXPECT_EQ(q.copy_threads, d.copy_threads);
  EXPECT_EQ(q.window_ms, d.window_ms);
  EXPECT_EQ(q.poll_us, d.poll_us);
}

// A typo in an A/B run must not measure the default: a malformed or out-of-range value is an
// error naming the variable, and the policy is left as it was.
TEST(ServingPolicy, AMalformedValueIsAnErrorNamingTheVariable) {
  struct Bad {
    const char *name, *value;
  };
  for (const Bad& b : {Bad{"WHARF_SERVING_WINDOW_MS", "not a number"}, Bad{"WHARF_SERVING_DMA_KIB", "-1"},
                       Bad{"WHARF_SERVING_COPY_THREADS", "257"}, Bad{"WHARF_SERVING_POLL_US", "100001"},
                       Bad{"WHARF_SERVING_INFLIGHT_KIB", "4 "}}) {
    wharf_test::ScopedEnv env(b.name, b.value);
    ServingPolicy p;
    p.window_ms = 7;
    Status st = ServingPolicy::from_env(&p);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << b.name;
    EXPECT_NE(st.message().find(std::string(b.name) + "='" + b.value + "'"), std::string::npos) << st.message();
    EXPECT_EQ(p.window_ms, 7u) << "unchanged on error";
  }
}

// Waiting for the copy engine while serving: by polling (the default) or CUDA's spin
// (poll_us 0, never a poll). Either way every byte lands.
TEST(ServingTransfer, WaitsPollOrSpinAndTheBytesLand) {
  auto dev = host_device();
  const uint64_t n = 3 * MiB + 77;
  auto src = pattern(n, 5);
  Buffer dst = alloc(dev, MemKind::kDevice, n, 0);
  for (uint64_t poll : {uint64_t(0), uint64_t(20)}) {
    SCOPED_TRACE("poll_us " + std::to_string(poll));
    auto signal = std::make_shared<ServingSignal>();
    signal->note_run();
    ServingPolicy p = pieces_of(16 * KiB, 16 * KiB);
    p.poll_us = poll;
    auto eng = engine(dev, signal, p);
    std::memset(dst.data(), 0, n);
    TransferStats s;
    Status st = eng->copy({{dst.data(), src.data(), n}}, {}, &s);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(std::memcmp(dst.data(), src.data(), n), 0);
    EXPECT_GT(s.paced_waits, 0u);
    if (poll == 0) {
      EXPECT_EQ(s.polls, 0u) << "spinning never polls";
    }
  }
}

// 1 MiB + 4321 bytes from pageable memory: 17 fills in 5 blocks (the last of one partial
// fill), and 1 MiB device to device. Not serving: one DMA per block and one direct copy.
// Serving with pieces of 64 KiB: 4 per full block + 1, 16 direct; with 64 KiB in flight every
// piece after the first waits for the one before. The bytes land the same either way.
TEST(ServingTransfer, WhileServingCopiesGoInPiecesAndArePaced) {
  auto dev = host_device();
  const uint64_t n = MiB + 4321, guard = 4096;
  auto src = pattern(n, 1);
  Buffer dsrc = alloc(dev, MemKind::kDevice, MiB, 0);
  std::memcpy(dsrc.data(), pattern(MiB, 2).data(), MiB);
  Buffer dst = alloc(dev, MemKind::kDevice, n + guard, 0);
  Buffer ddst = alloc(dev, MemKind::kDevice, MiB, 0);
  struct Case {
    const char* what;
    bool noted;
    ServingPolicy policy;
    uint64_t staged, direct, paced;
    bool serving;
  } cases[] = {
      {"no run noted", false, pieces_of(64 * KiB, 64 * KiB), 5, 1, 0, false},
      {"serving, pieces, paced", true, pieces_of(64 * KiB, 64 * KiB), 17, 16, 16 + 15, true},
      {"serving, pieces, not paced", true, pieces_of(64 * KiB, 0), 17, 16, 0, true},
      {"serving, whole copies, paced", true, pieces_of(0, 64 * KiB), 5, 1, 4 + 0, true},
      {"window 0: never serving", true,
       [] {
         ServingPolicy p = pieces_of(64 * KiB, 64 * KiB);
         p.window_ms = 0;
         return p;
       }(),
       5, 1, 0, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto signal = std::make_shared<ServingSignal>();
    if (c.noted) signal->note_run();
    auto eng = engine(dev, signal, c.policy);
    for (int round = 0; round < 2; ++round) {
      std::memset(dst.data(), 0xee, n + guard);
      std::memset(ddst.data(), 0xee, MiB);
      TransferStats a, b;
      Status st = eng->copy({{dst.data(), src.data(), n}}, {}, &a);
      ASSERT_TRUE(st.ok()) << st.message();
      st = eng->copy({{ddst.data(), dsrc.data(), MiB}}, {}, &b);
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_EQ(std::memcmp(dst.data(), src.data(), n), 0) << "round " << round;
      for (uint64_t i = 0; i < guard; ++i)
        ASSERT_EQ(static_cast<unsigned char*>(dst.data())[n + i], 0xee) << "wrote past the request";
      ASSERT_EQ(std::memcmp(ddst.data(), dsrc.data(), MiB), 0) << "round " << round;
      EXPECT_EQ(a.serving, c.serving);
      EXPECT_EQ(a.staged_copies, c.staged);
      EXPECT_EQ(b.direct_copies, c.direct);
      // Paced waits: the staged copy's pieces after the first, then the direct copy's (its
      // first piece finds the stream drained by the staged copy's call).
      EXPECT_EQ(a.paced_waits + b.paced_waits, c.paced) << a.paced_waits << " + " << b.paced_waits;
    }
  }
}

TEST(ServingTransfer, WhileServingTheRingIsFilledByFewerThreads) {
  auto dev = host_device();
  const uint64_t n = 2 * MiB;
  auto src = pattern(n, 3);
  Buffer dst = alloc(dev, MemKind::kDevice, n, 0);
  for (bool noted : {false, true}) {
    auto signal = std::make_shared<ServingSignal>();
    if (noted) signal->note_run();
    auto eng = engine(dev, signal, pieces_of(0, 0, 1));
    TransferStats s;
    Status st = eng->copy({{dst.data(), src.data(), n}}, {}, &s);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(std::memcmp(dst.data(), src.data(), n), 0);
    EXPECT_EQ(s.staging_threads, noted ? 1u : 3u);
  }
}

// Many callers and every staging thread enqueue while pacing: the pacing lock keeps the
// pending list in stream order and every byte lands.
TEST(ServingTransfer, ConcurrentCallersWhilePacingAllCorrect) {
  auto dev = host_device();
  auto signal = std::make_shared<ServingSignal>();
  signal->note_run();
  auto eng = engine(dev, signal, pieces_of(16 * KiB, 48 * KiB));
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      const uint64_t n = 700 * KiB + uint64_t(t) * 977;
      auto src = pattern(n, 10 + uint32_t(t));
      Buffer dst = alloc(dev, MemKind::kDevice, n, 0);
      Buffer dev_src = alloc(dev, MemKind::kDevice, n, 0);
      std::memcpy(dev_src.data(), src.data(), n);
      Buffer dst2 = alloc(dev, MemKind::kDevice, n, 0);
      for (int r = 0; r < 5; ++r) {
        Status st = eng->copy({{dst.data(), src.data(), n}, {dst2.data(), dev_src.data(), n}}, {});
        if (!st.ok() || std::memcmp(dst.data(), src.data(), n) != 0 || std::memcmp(dst2.data(), src.data(), n) != 0)
          ++bad;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// Every run raises its runtime's signal (Container::acquire), so an update on that runtime
// paces its copies while runs are served.
TEST(ServingTransfer, ARunMarksItsRuntimeAsServing) {
  wharf_test::Model m(1.0f);
  Runtime& rt = *m.rt->rt;
  const uint64_t window = 100;  // the default window is 0 (pacing off); the signal is kept regardless
  EXPECT_FALSE(rt.serving().active(window)) << "no run yet (a host runtime has a signal of its own)";
  EXPECT_EQ(m.first(), 1.0f);
  EXPECT_TRUE(rt.serving().active(window));
}

// Where and when user memory bound to a constant was released.
struct Released {
  std::mutex mu;
  bool done = false;
  std::thread::id on;
};
void on_release(void*, void* user) {
  auto* r = static_cast<Released*>(user);
  std::lock_guard<std::mutex> lock(r->mu);
  r->done = true;
  r->on = std::this_thread::get_id();
}

// A run's end that reaps the last holder of some storage (generation U, dropped by a swap and
// free_inactive while run A still used it; reaped at run B's end) does not free it on the
// thread ending the run: the runtime's release thread does, and wharf_runtime_synchronize
// waits for it (the CUDA backend's default; WHARF_DEFER_RUN_FREES=1 here). With
// WHARF_DEFER_RUN_FREES=0 (the host backend's default) it is freed on the thread ending the
// run, as before.
// WHARF_DEFER_RUN_FREES is 0 or 1; anything else fails wharf_runtime_create naming it (it
// used to mean "on" for any value but "0").
TEST(ServingFrees, AMalformedDeferSwitchFailsTheRuntimeNamingIt) {
  for (const char* bad : {"yes", "off", "2"}) {
    wharf_test::ScopedEnv env("WHARF_DEFER_RUN_FREES", bad);
    wharf_runtime_options o;
    wharf_runtime_options_init(&o);
    o.backend = WHARF_BACKEND_HOST;
    wharf_runtime* rt = nullptr;
    wharf_test::St st(wharf_runtime_create(&o, &rt));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << bad;
    EXPECT_NE(st.msg().find(std::string("WHARF_DEFER_RUN_FREES='") + bad + "'"), std::string::npos) << st.msg();
    EXPECT_EQ(rt, nullptr);
  }
}

TEST(ServingFrees, ARunsEndHandsTheLastStorageOfAGenerationToTheReleaseThread) {
  for (bool defer : {true, false}) {
    SCOPED_TRACE(defer ? "WHARF_DEFER_RUN_FREES=1" : "WHARF_DEFER_RUN_FREES=0");
    std::optional<wharf_test::ScopedEnv> env;
    env.emplace("WHARF_DEFER_RUN_FREES", defer ? "1" : "0");  // the host backend's default is 0
    wharf_test::Model m(1.0f);
    env.reset();
    wharf_container* c = m.c;
    float user[4] = {2, 2, 2, 2}, next[4] = {3, 3, 3, 3};
    int64_t shape[1] = {4};
    Released released;
    wharf_tensor_view v = wharf_test::f32_view(user, 1, shape);
    ASSERT_EQ(wharf_container_bind_user_constant(c, "w", &v, on_release, &released), nullptr);
    ASSERT_EQ(wharf_container_swap(c), nullptr);  // U: the user memory, active
    wharf_run* a = nullptr;
    ASSERT_EQ(wharf_run_begin(c, nullptr, nullptr, &a), nullptr);  // pins U
    wharf_constant_map* map = wharf_test::map_of("w", next, shape);
    ASSERT_EQ(wharf_container_update(c, map, nullptr), nullptr);
    wharf_constant_map_free(map);
    ASSERT_EQ(wharf_container_swap(c), nullptr);
    ASSERT_EQ(wharf_container_free_inactive(c), nullptr);  // U is held by run A alone now
    ASSERT_EQ(wharf_run_end(a), nullptr);                  // ... then by the retire list
    ASSERT_EQ(wharf_runtime_synchronize(m.rt), nullptr);   // A's end event has fired
    {
      std::lock_guard<std::mutex> lock(released.mu);
      ASSERT_FALSE(released.done) << "U is released only when a later reap finds it";
    }
    EXPECT_EQ(m.first(), 3.0f);  // run B: its end reaps U
    if (!defer) {
      std::lock_guard<std::mutex> lock(released.mu);
      EXPECT_TRUE(released.done);
    }
    ASSERT_EQ(wharf_runtime_synchronize(m.rt), nullptr);
    std::lock_guard<std::mutex> lock(released.mu);
    EXPECT_TRUE(released.done) << "synchronize waits for the release thread";
    if (defer)
      EXPECT_NE(released.on, std::this_thread::get_id()) << "freed on the thread ending the run";
    else
      EXPECT_EQ(released.on, std::this_thread::get_id());
  }
}

}  // namespace
}  // namespace wharf
