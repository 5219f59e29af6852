// SPDX-License-Identifier: Apache-2.0
// Progress and cancellation of long calls (issue 22): wharf_progress_fn in the update,
// container and model options. The callback is called on the calling thread at least every
// 64 MiB and once with done == total before anything is staged; a non-zero answer cancels
// the call, which returns WHARF_CANCELLED having changed nothing: tested mid-copy through the
// staging ring (pageable sources, a small ring kept full), with direct copies in flight
// (sources in device memory), from a file, at the final call, for a weight store, a replica
// group and a container created from a map. Every test runs on the host backend and, where a
// GPU is visible, on CUDA.
#define WHARF_EXPERIMENTAL
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

constexpr int64_t kFloats = 4 << 20;  // 16 MiB per tensor
const int64_t kShape[1] = {kFloats};
constexpr uint64_t kTensorBytes = uint64_t(kFloats) * 4;

// What the callback saw, and when it cancels (cancel_at: the call number that answers 1;
// 0 = never; -1 = the final call, done == total).
struct Calls {
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  std::thread::id thread;
  bool other_thread = false;
  int cancel_at = 0;
};

int32_t on_progress(uint64_t done, uint64_t total, void* user) {
  auto* c = static_cast<Calls*>(user);
  if (std::this_thread::get_id() != c->thread) c->other_thread = true;
  c->seen.emplace_back(done, total);
  if (c->cancel_at == -1) return done == total ? 1 : 0;
  return c->cancel_at > 0 && int(c->seen.size()) == c->cancel_at ? 1 : 0;
}

// Host arrays of three 16 MiB tensors, each filled with one value, in a map.
struct Weights {
  std::vector<std::vector<float>> data;
  wharf_constant_map* map = nullptr;
  explicit Weights(float v) {
    EXPECT_EQ(wharf_constant_map_create(&map), nullptr);
    const char* names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; ++i) {
      data.emplace_back(size_t(kFloats), v);
      const wharf_tensor_view t = wharf_test::f32_view(data.back().data(), 1, kShape);
      St st(wharf_constant_map_set(map, names[i], &t));
      EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    }
  }
  ~Weights() { wharf_constant_map_free(map); }
  Weights(const Weights&) = delete;
};

class Progress : public wharf_test::BackendTest {
 protected:
  Progress() { config = {0, 2, 1 << 20}; }  // a small ring: full whenever a callback runs mid-copy
  void TearDown() override {
    for (wharf_runtime* r : extra) wharf_runtime_free(r);
    BackendTest::TearDown();
  }
  uint64_t constants_bytes(wharf_runtime* r = nullptr) {
    wharf_memory_stats ms;
    std::memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    St st(wharf_runtime_get_memory_stats(r ? r : rt, &ms));
    return ms.current[WHARF_MEM_CONSTANTS];
  }
  wharf_container* container(const Weights& w, wharf_runtime* r = nullptr) {
    wharf_container_options o;
    wharf_container_options_init(&o);
    o.name = "m";
    wharf_container* c = nullptr;
    St st(wharf_container_create_from_map(r ? r : rt, w.map, &o, &c));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return c;
  }
  // The first float of every tensor, through a run.
  std::vector<float> values(wharf_container* c) {
    wharf_run* run = nullptr;
    St st(wharf_run_begin(c, nullptr, nullptr, &run));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    std::vector<float> out;
    for (const char* n : {"a", "b", "c"}) {
      float x = -1;
      St r(wharf_run_read(run, n, 0, &x, sizeof x));
      EXPECT_EQ(r.code(), WHARF_OK) << r.msg();
      out.push_back(x);
    }
    EXPECT_EQ(wharf_run_end(run), nullptr);
    return out;
  }
  wharf_update_options options(Calls* calls) {
    calls->thread = std::this_thread::get_id();
    wharf_update_options o;
    wharf_update_options_init(&o);
    o.progress = on_progress;
    o.progress_user = calls;
    return o;
  }
  // The calls' contract: on the calling thread, `total` fixed, `done` never decreasing, a
  // call at least every 64 MiB, and (unless cancelled earlier) a last one with done == total.
  void expect_contract(const Calls& calls, uint64_t total, bool complete) {
    EXPECT_FALSE(calls.other_thread);
    ASSERT_FALSE(calls.seen.empty());
    uint64_t last = 0;
    for (const auto& [done, t] : calls.seen) {
      EXPECT_EQ(t, total);
      EXPECT_GE(done, last);
      EXPECT_LE(done - last, 64ull << 20) << "a gap of more than 64 MiB between calls";
      last = done;
    }
    if (complete) {
      EXPECT_EQ(calls.seen.back().first, total);
    }
  }

  std::vector<wharf_runtime*> extra;
};

TEST_P(Progress, UpdateReportsOnTheCallingThreadUpToTheTotal) {
  Weights v1(1);
  wharf_container* c = container(v1);
  Weights v2(2);
  Calls calls;
  wharf_update_options o = options(&calls);
  ASSERT_OK(wharf_container_update(c, v2.map, &o));
  expect_contract(calls, 3 * kTensorBytes, true);
  EXPECT_GE(calls.seen.size(), 2u) << "48 MiB: at least one call mid-copy (every 64 MiB at most apart) and a final one";
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_EQ(values(c), (std::vector<float>{2, 2, 2}));
  wharf_container_free(c);
}

// Cancelled mid-copy through the staging ring (pageable sources): nothing staged, nothing
// left allocated, and the next update goes through.
TEST_P(Progress, CancelMidCopyThroughTheStagingRingChangesNothing) {
  Weights v1(1);
  wharf_container* c = container(v1);
  const uint64_t gen = wharf_container_generation(c);
  const uint64_t before = constants_bytes();
  Weights v2(2);
  Calls calls;
  calls.cancel_at = 1;
  wharf_update_options o = options(&calls);
  St st(wharf_container_update(c, v2.map, &o));
  EXPECT_EQ(st.code(), WHARF_CANCELLED) << st.msg();
  EXPECT_NE(st.msg().find("container 'm'"), std::string::npos) << st.msg();
  EXPECT_NE(st.msg().find("nothing was changed"), std::string::npos) << st.msg();
  EXPECT_LT(calls.seen.back().first, 3 * kTensorBytes) << "cancelled mid-copy, not at the end";
  EXPECT_EQ(wharf_container_has_staged(c), 0);
  EXPECT_EQ(wharf_container_generation(c), gen);
  EXPECT_EQ(constants_bytes(), before) << "the cancelled update's slots were released";
  EXPECT_CODE(wharf_container_swap(c), WHARF_FAILED_PRECONDITION);  // nothing to swap in
  EXPECT_EQ(values(c), (std::vector<float>{1, 1, 1}));
  ASSERT_OK(wharf_container_update(c, v2.map, nullptr));
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_EQ(values(c), (std::vector<float>{2, 2, 2}));
  wharf_container_free(c);
}

// Cancelled with direct copies in flight: the sources are device memory (another
// container's constants), copied without the ring.
TEST_P(Progress, CancelWithDirectCopiesInFlightChangesNothing) {
  Weights v1(1), v7(7);
  wharf_container* c = container(v1);
  wharf_container* src = container(v7);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(src, nullptr, nullptr, &run));
  std::vector<wharf_tensor_view> views(3);
  for (int i = 0; i < 3; ++i) {
    std::memset(&views[size_t(i)], 0, sizeof views[size_t(i)]);
    views[size_t(i)].struct_size = sizeof views[size_t(i)];
    ASSERT_OK(wharf_run_get_tensor(run, std::string(1, char('a' + i)).c_str(), &views[size_t(i)]));
  }
  wharf_constant_map* map = nullptr;
  ASSERT_OK(wharf_constant_map_create(&map));
  for (int i = 0; i < 3; ++i)
    ASSERT_OK(wharf_constant_map_set(map, std::string(1, char('a' + i)).c_str(), &views[size_t(i)]));
  const uint64_t before = constants_bytes();
  Calls calls;
  calls.cancel_at = 1;
  wharf_update_options o = options(&calls);
  St st(wharf_container_update(c, map, &o));
  EXPECT_EQ(st.code(), WHARF_CANCELLED) << st.msg();
  ASSERT_FALSE(calls.seen.empty());
  EXPECT_LT(calls.seen.back().first, 3 * kTensorBytes) << "cancelled mid-copy, not at the end";
  EXPECT_EQ(wharf_container_has_staged(c), 0);
  EXPECT_EQ(constants_bytes(), before);
  EXPECT_EQ(values(c), (std::vector<float>{1, 1, 1}));
  // Without cancelling, the same map goes through (the sources were fine).
  Calls all;
  wharf_update_options o2 = options(&all);
  ASSERT_OK(wharf_container_update(c, map, &o2));
  expect_contract(all, 3 * kTensorBytes, true);
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_EQ(values(c), (std::vector<float>{7, 7, 7}));
  wharf_constant_map_free(map);
  EXPECT_EQ(wharf_run_end(run), nullptr);
  wharf_container_free(src);
  wharf_container_free(c);
}

// The final call (done == total) is the last chance: everything is copied, nothing staged.
TEST_P(Progress, CancelAtTheFinalCallStagesNothing) {
  Weights v1(1);
  wharf_container* c = container(v1);
  const uint64_t before = constants_bytes();
  Weights v2(2);
  Calls calls;
  calls.cancel_at = -1;
  wharf_update_options o = options(&calls);
  St st(wharf_container_update(c, v2.map, &o));
  EXPECT_EQ(st.code(), WHARF_CANCELLED) << st.msg();
  expect_contract(calls, 3 * kTensorBytes, true);
  EXPECT_EQ(wharf_container_has_staged(c), 0);
  EXPECT_EQ(constants_bytes(), before);
  EXPECT_EQ(values(c), (std::vector<float>{1, 1, 1}));
  wharf_container_free(c);
}

TEST_P(Progress, CancelAnUpdateFromAFileChangesNothing) {
  Weights v1(1), v3(3);
  wharf_container* c = container(v1);
  char path[] = "/tmp/wharf_progress_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_OK(wharf_constant_map_save_safetensors(v3.map, path));
  const uint64_t before = constants_bytes();
  Calls calls;
  calls.cancel_at = 2;
  wharf_update_options o = options(&calls);
  St st(wharf_container_update_from_file(c, path, &o));
  EXPECT_EQ(st.code(), WHARF_CANCELLED) << st.msg();
  EXPECT_EQ(wharf_container_has_staged(c), 0);
  EXPECT_EQ(constants_bytes(), before);
  Calls all;
  wharf_update_options o2 = options(&all);
  ASSERT_OK(wharf_container_update_from_file(c, path, &o2));
  expect_contract(all, 3 * kTensorBytes, true);
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_EQ(values(c), (std::vector<float>{3, 3, 3}));
  std::remove(path);
  wharf_container_free(c);
}

TEST_P(Progress, CancelAWeightStoreUpdateStagesNoMember) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Weights v1(1);
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.store = store;
  co.name = "prefill";
  wharf_container* p = nullptr;
  ASSERT_OK(wharf_container_create_from_map(rt, v1.map, &co, &p));
  co.name = "decode";
  wharf_container* d = nullptr;
  ASSERT_OK(wharf_container_create_from_map(rt, v1.map, &co, &d));
  const uint64_t before = constants_bytes();
  Weights v2(2);
  Calls calls;
  calls.cancel_at = 1;
  wharf_update_options o = options(&calls);
  St st(wharf_weight_store_update(store, v2.map, &o));
  EXPECT_EQ(st.code(), WHARF_CANCELLED) << st.msg();
  EXPECT_NE(st.msg().find("weight store update"), std::string::npos) << st.msg();
  EXPECT_CODE(wharf_weight_store_swap(store), WHARF_FAILED_PRECONDITION);  // nothing staged
  EXPECT_EQ(constants_bytes(), before);
  EXPECT_EQ(values(p), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(values(d), (std::vector<float>{1, 1, 1}));
  Calls all;
  wharf_update_options o2 = options(&all);
  ASSERT_OK(wharf_weight_store_update(store, v2.map, &o2));
  expect_contract(all, 3 * kTensorBytes, true);  // each source byte once, for two members
  ASSERT_OK(wharf_weight_store_swap(store));
  EXPECT_EQ(values(d), (std::vector<float>{2, 2, 2}));
  wharf_container_free(d);
  wharf_container_free(p);
  wharf_weight_store_free(store);
}

TEST_P(Progress, CancelAReplicaGroupUpdateStagesNoReplica) {
  // Host: two replicas on two runtimes. CUDA: one replica (a group has one per GPU, and the
  // lent machine has one); the cancellation point is the copy into replica 0 either way.
  Weights v1(1);
  std::vector<wharf_container*> cs{container(v1)};
  if (GetParam() == WHARF_BACKEND_HOST) {
    wharf_runtime* r2 = another_runtime();
    ASSERT_NE(r2, nullptr);
    extra.push_back(r2);
    cs.push_back(container(v1, r2));
  }
  wharf_replica_group* g = nullptr;
  ASSERT_OK(wharf_replica_group_create(cs.data(), cs.size(), &g));
  Weights v2(2);
  Calls calls;
  calls.cancel_at = 1;
  wharf_update_options o = options(&calls);
  St st(wharf_replica_group_update(g, v2.map, &o));
  EXPECT_EQ(st.code(), WHARF_CANCELLED) << st.msg();
  EXPECT_NE(st.msg().find("replica group update"), std::string::npos) << st.msg();
  for (wharf_container* c : cs) {
    EXPECT_EQ(wharf_container_has_staged(c), 0);
    EXPECT_EQ(values(c), (std::vector<float>{1, 1, 1}));
  }
  Calls all;
  wharf_update_options o2 = options(&all);
  ASSERT_OK(wharf_replica_group_update(g, v2.map, &o2));
  expect_contract(all, 3 * kTensorBytes, true);  // each source byte once, however many replicas
  ASSERT_OK(wharf_replica_group_swap(g));
  for (wharf_container* c : cs) EXPECT_EQ(values(c), (std::vector<float>{2, 2, 2}));
  wharf_replica_group_free(g);
  for (wharf_container* c : cs) wharf_container_free(c);
}

TEST_P(Progress, CancelCreateFromMapCreatesNothing) {
  Weights v1(1);
  const uint64_t before = constants_bytes();
  Calls calls;
  calls.thread = std::this_thread::get_id();
  calls.cancel_at = 1;
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.progress = on_progress;
  co.progress_user = &calls;
  wharf_container* c = reinterpret_cast<wharf_container*>(&calls);  // must come back NULL
  St st(wharf_container_create_from_map(rt, v1.map, &co, &c));
  EXPECT_EQ(st.code(), WHARF_CANCELLED) << st.msg();
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(constants_bytes(), before);
  Calls all;
  all.thread = std::this_thread::get_id();
  co.progress_user = &all;
  ASSERT_OK(wharf_container_create_from_map(rt, v1.map, &co, &c));
  expect_contract(all, 3 * kTensorBytes, true);
  EXPECT_EQ(values(c), (std::vector<float>{1, 1, 1}));
  wharf_container_free(c);
}

// An in-place update overwrites storage runs read once it returns: it cannot be cancelled
// midway, so it takes no progress callback (refused before anything happens).
TEST_P(Progress, InPlaceUpdateRefusesAProgressCallback) {
  Weights v1(1), v2(2);
  wharf_container* c = container(v1);
  Calls calls;
  wharf_update_options o = options(&calls);
  o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  St st(wharf_container_update(c, v2.map, &o));
  EXPECT_EQ(st.code(), WHARF_UNSUPPORTED) << st.msg();
  EXPECT_TRUE(calls.seen.empty());
  EXPECT_EQ(values(c), (std::vector<float>{1, 1, 1}));
  wharf_container_free(c);
}

TEST(ProgressCodes, CancelledHasANameAndRoundTrips) {
  EXPECT_STREQ(wharf_code_name(WHARF_CANCELLED), "CANCELLED");
  wharf_status* s = wharf_status_create(WHARF_CANCELLED, "stopped");
  EXPECT_EQ(wharf_status_code(s), WHARF_CANCELLED);
  EXPECT_STREQ(wharf_status_message(s), "stopped");
  wharf_status_free(s);
}

WHARF_TEST_ON_BACKENDS(Progress);

}  // namespace
