// SPDX-License-Identifier: Apache-2.0
// Replica groups on the host backend: the group's all-or-nothing logic with N = 1..4
// replicas (each on its own host runtime), forced failures (out of memory on one replica,
// a broadcast that fails for replica k), runs begun before a group swap, concurrent runs
// during updates and swaps, argument errors, and the NCCL loader. The CUDA/NCCL path runs
// in tests/gpu/replica_gpu_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "api/handles.h"
#include "api/replica_api.h"
#include "common/replica_model.h"
#include "common/scoped_env.h"
#include "common/test_support.h"
#include "core/test_hooks.h"
#include "replicas/broadcaster.h"
#include "replicas/replica_group.h"
#include "replicas/update_batches.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

using namespace std::chrono_literals;

// The model every replica declares (tests/common/replica_model.h), and for the session
// tests one state.
using namespace wharf_test::replica_model;
const int64_t kStateShape[] = {8};

uint64_t model_bytes() {
  uint64_t b = 0;
  for (size_t i = 0; i < kNumConstants; ++i) b += elements(i) * 4;
  return b;
}

// Declares the model; `change` as model_decls, and 7 another state shape.
wharf_container* declare(wharf_runtime* rt, const char* name, int change = 0, wharf_weight_store* store = nullptr,
                         bool state = false) {
  static const int64_t other_state[] = {9};
  std::vector<wharf_constant_decl> decls = model_decls(change);
  wharf_state_decl s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.fqn = "cache";
  s.dtype = WHARF_DTYPE_F32;
  s.ndim = 1;
  s.shape = change == 7 ? other_state : kStateShape;
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.name = name;
  o.constants = decls.data();
  o.num_constants = decls.size();
  o.states = &s;
  o.num_states = state ? 1 : 0;
  o.store = store;
  wharf_container* c = nullptr;
  St st(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  return c;
}

wharf_replica_group_stats stats_of(const wharf_replica_group* g) {
  wharf_replica_group_stats s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  St st(wharf_replica_group_get_stats(g, &s));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  return s;
}

// N replicas on N host runtimes; `limits[r]` caps replica r's memory (0: none).
struct Replicas {
  std::vector<wharf_runtime*> rts;
  std::vector<wharf_container*> cs;
  wharf_replica_group* group = nullptr;

  explicit Replicas(size_t n, std::vector<uint64_t> limits = {}, bool state = false) {
    limits.resize(n, 0);
    for (size_t r = 0; r < n; ++r) {
      rts.push_back(host_runtime(limits[r]));
      cs.push_back(declare(rts.back(), ("replica" + std::to_string(r)).c_str(), 0, nullptr, state));
    }
  }
  ~Replicas() {
    wharf_replica_group_free(group);
    for (auto* c : cs) wharf_container_free(c);
    for (auto* rt : rts) wharf_runtime_free(rt);
  }
  Replicas(const Replicas&) = delete;
  wharf_status* create() { return wharf_replica_group_create(cs.data(), cs.size(), &group); }
  // A group over an internal broadcaster (failure injection).
  wharf::Status create_with(std::unique_ptr<wharf::Broadcaster> b) {
    std::vector<std::shared_ptr<wharf::Container>> v;
    for (auto* c : cs) v.push_back(c->c);
    auto h = std::make_unique<wharf_replica_group>();
    WHARF_RETURN_IF_ERROR(wharf::ReplicaGroup::create(std::move(v), std::move(b), &h->g));
    group = h.release();
    return wharf::Status::Ok();
  }
  std::vector<float> versions() const {
    std::vector<float> out;
    for (auto* c : cs) out.push_back(version_now(c));
    return out;
  }
  std::vector<uint64_t> generations() const {
    std::vector<uint64_t> out;
    for (auto* c : cs) out.push_back(wharf_container_generation(c));
    return out;
  }
  std::vector<int32_t> staged() const {
    std::vector<int32_t> out;
    for (auto* c : cs) out.push_back(wharf_container_has_staged(c));
    return out;
  }
  std::vector<uint64_t> bytes() const {
    std::vector<uint64_t> out;
    for (auto* rt : rts) out.push_back(constants_bytes(rt));
    return out;
  }
  // Loads version v everywhere through the group and swaps.
  void load(float v) {
    Weights w(v);
    wharf_update_options o;
    wharf_update_options_init(&o);
    o.require_full = 1;
    St st(wharf_replica_group_update(group, w.map, &o));
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
    ASSERT_OK(wharf_replica_group_swap(group));
  }
};

std::vector<float> all(size_t n, float v) { return std::vector<float>(n, v); }

class ReplicaGroupN : public ::testing::TestWithParam<size_t> {};
INSTANTIATE_TEST_SUITE_P(Replicas, ReplicaGroupN, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

TEST_P(ReplicaGroupN, UpdateAndSwapReachEveryReplicaReadingTheSourcesOnce) {
  const size_t n = GetParam();
  Replicas R(n);
  ASSERT_OK(R.create());
  EXPECT_EQ(wharf_replica_group_num_replicas(R.group), n);
  ASSERT_NO_FATAL_FAILURE(R.load(1));
  EXPECT_EQ(R.versions(), all(n, 1));
  EXPECT_EQ(R.staged(), std::vector<int32_t>(n, 0));

  // A partial update: only layers.1.w changes, on every replica, staged until the swap.
  Weights w2(2, {2});
  ASSERT_OK(wharf_replica_group_update(R.group, w2.map, nullptr));
  EXPECT_EQ(R.staged(), std::vector<int32_t>(n, 1));
  EXPECT_EQ(R.versions(), all(n, 1)) << "staged, not published";
  const std::vector<uint64_t> gens = R.generations();
  ASSERT_OK(wharf_replica_group_swap(R.group));
  for (size_t r = 0; r < n; ++r) {
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(R.cs[r], nullptr, nullptr, &run));
    EXPECT_EQ(read_whole(run, 0), 100.0f) << "replica " << r;
    EXPECT_EQ(read_whole(run, 1), 101.0f) << "replica " << r;
    EXPECT_EQ(read_whole(run, 2), 202.0f) << "replica " << r;
    EXPECT_EQ(read_whole(run, 3), 103.0f) << "replica " << r;
    ASSERT_OK(wharf_run_end(run));
    EXPECT_GT(wharf_container_generation(R.cs[r]), gens[r]);
  }
  const wharf_replica_group_stats s = stats_of(R.group);
  EXPECT_EQ(s.num_replicas, n);
  EXPECT_EQ(s.nccl_version, 0) << "host groups do not use NCCL";
  EXPECT_EQ(s.num_updates, 2u);
  EXPECT_EQ(s.num_swaps, 2u);
  const uint64_t partial = elements(2) * 4;
  EXPECT_EQ(s.source_bytes, model_bytes() + partial) << "the sources are read once, whatever N";
  EXPECT_EQ(s.broadcast_bytes, (model_bytes() + partial) * (n - 1));
  EXPECT_EQ(s.num_broadcasts, 2u);
}

TEST_P(ReplicaGroupN, ExtraMemoryPerReplicaIsTheUpdatedBytes) {
  const size_t n = GetParam();
  Replicas R(n);
  ASSERT_OK(R.create());
  ASSERT_NO_FATAL_FAILURE(R.load(1));
  ASSERT_OK(wharf_replica_group_free_inactive(R.group));
  const std::vector<uint64_t> before = R.bytes();
  Weights w2(2, {0});
  ASSERT_OK(wharf_replica_group_update(R.group, w2.map, nullptr));
  const std::vector<uint64_t> after = R.bytes();
  for (size_t r = 0; r < n; ++r) EXPECT_EQ(after[r] - before[r], elements(0) * 4) << "replica " << r;
}

TEST_P(ReplicaGroupN, RunBegunBeforeTheGroupSwapFinishesOnTheOldWeights) {
  const size_t n = GetParam();
  Replicas R(n);
  ASSERT_OK(R.create());
  ASSERT_NO_FATAL_FAILURE(R.load(1));
  std::vector<wharf_run*> old(n, nullptr);
  for (size_t r = 0; r < n; ++r) ASSERT_OK(wharf_run_begin(R.cs[r], nullptr, nullptr, &old[r]));
  ASSERT_NO_FATAL_FAILURE(R.load(2));
  EXPECT_EQ(R.versions(), all(n, 2)) << "runs begun after the group swap see the new weights";
  for (size_t r = 0; r < n; ++r) {
    EXPECT_EQ(version_of(old[r]), 1.0f) << "replica " << r << ": the open run keeps its generation intact";
    ASSERT_OK(wharf_run_end(old[r]));
  }
}

TEST_P(ReplicaGroupN, SwapAgainRollsEveryReplicaBackAndFreeInactiveDropsIt) {
  const size_t n = GetParam();
  Replicas R(n);
  ASSERT_OK(R.create());
  ASSERT_NO_FATAL_FAILURE(R.load(1));
  ASSERT_NO_FATAL_FAILURE(R.load(2));
  ASSERT_OK(wharf_replica_group_swap(R.group));
  EXPECT_EQ(R.versions(), all(n, 1)) << "rollback";
  ASSERT_OK(wharf_replica_group_swap(R.group));
  EXPECT_EQ(R.versions(), all(n, 2));
  ASSERT_OK(wharf_replica_group_free_inactive(R.group));
  const std::vector<uint64_t> gens = R.generations();
  St st(wharf_replica_group_swap(R.group));
  EXPECT_EQ(st.code(), WHARF_FAILED_PRECONDITION);
  EXPECT_NE(st.msg().find("replica 0"), std::string::npos) << st.msg();
  EXPECT_NE(st.msg().find("nothing was swapped"), std::string::npos) << st.msg();
  EXPECT_EQ(R.generations(), gens);
  EXPECT_EQ(R.versions(), all(n, 2));
}

TEST_P(ReplicaGroupN, SessionsOfEachReplicaServeRunsAfterTheGroupSwap) {
  const size_t n = GetParam();
  Replicas R(n, {}, true);
  ASSERT_OK(R.create());
  Weights w(1);
  ASSERT_OK(wharf_replica_group_update(R.group, w.map, nullptr));
  ASSERT_OK(wharf_replica_group_swap(R.group));
  for (size_t r = 0; r < n; ++r) {
    wharf_session* s = nullptr;
    ASSERT_OK(wharf_session_create(R.rts[r], &R.cs[r], 1, nullptr, &s));
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(R.cs[r], s, nullptr, &run));
    wharf_tensor_view v{};
    ASSERT_OK(wharf_run_get_tensor(run, "cache", &v));
    EXPECT_EQ(v.ndim, 1);
    EXPECT_EQ(version_of(run), 1.0f);
    ASSERT_OK(wharf_run_end(run));
    wharf_session_free(s);
  }
}

// A failure on one replica (memory) stages nothing on any replica.
TEST_P(ReplicaGroupN, OutOfMemoryOnOneReplicaChangesNoReplica) {
  const size_t n = GetParam();
  // The short replica holds one generation of its device constants (host-placed ones are
  // pinned memory, outside the limit) and room for a little more, not a full update: the
  // last one is refused (its storage is allocated while replica 0 reads); replica 0 (which
  // allocates while it copies, batch by batch) after two batches were copied and broadcast.
  const uint64_t device_bytes = model_bytes() - elements(3) * 4;
  for (size_t shorted : {n - 1, size_t(0)}) {
    if (shorted == 0 && n == 1) break;  // the same case
    SCOPED_TRACE("short replica " + std::to_string(shorted));
    std::vector<uint64_t> limits(n, 0);
    limits[shorted] = device_bytes + (shorted == 0 && n > 1 ? elements(0) * 4 + elements(1) * 4 : elements(1) * 4);
    Replicas R(n, limits);
    ASSERT_OK(R.create());
    R.group->g->set_broadcast_batch_bytes_for_test(elements(1) * 4);
    ASSERT_NO_FATAL_FAILURE(R.load(1));
    ASSERT_OK(wharf_replica_group_free_inactive(R.group));
    const std::vector<uint64_t> gens = R.generations();
    const std::vector<uint64_t> bytes = R.bytes();
    const uint64_t broadcasts = stats_of(R.group).num_broadcasts;
    Weights w2(2);
    St st(wharf_replica_group_update(R.group, w2.map, nullptr));
    EXPECT_EQ(st.code(), WHARF_OUT_OF_MEMORY) << st.msg();
    EXPECT_NE(st.msg().find("replica " + std::to_string(shorted)), std::string::npos) << st.msg();
    if (shorted == 0 && n > 1) {
      EXPECT_EQ(stats_of(R.group).num_broadcasts, broadcasts + 2) << "two batches went out before the third failed";
    }
    EXPECT_EQ(R.generations(), gens);
    EXPECT_EQ(R.staged(), std::vector<int32_t>(n, 0));
    EXPECT_EQ(R.bytes(), bytes) << "every fresh slot was returned";
    EXPECT_EQ(R.versions(), all(n, 1));
    EXPECT_EQ(stats_of(R.group).num_updates, 1u);
    St sw(wharf_replica_group_swap(R.group));
    EXPECT_EQ(sw.code(), WHARF_FAILED_PRECONDITION) << "nothing staged (the rollback generation was freed)";
    // Partial updates fit; the group is not wedged.
    Weights w3(3, {1});
    ASSERT_OK(wharf_replica_group_update(R.group, w3.map, nullptr));
    ASSERT_OK(wharf_replica_group_swap(R.group));
  }
}

// A broadcaster that copies into replicas below `fail_at` and then fails, as an NCCL error
// on replica `fail_at` would (its partial writes land in staged storage, which is dropped).
// `fail` counts down the enqueues that still succeed before the failing one (0: the first
// fails; -1: none fails); `fail_in_finish` reports the failure from finish() instead.
class FailingBroadcaster : public wharf::Broadcaster {
 public:
  FailingBroadcaster(size_t n, size_t fail_at, std::atomic<int>* fail, bool fail_in_finish = false)
      : n_(n), fail_at_(fail_at), fail_(fail), fail_in_finish_(fail_in_finish) {}
  const char* kind() const override { return "test"; }
  wharf::Status enqueue(const std::vector<wharf::BroadcastBuffer>& buffers) override {
    const bool now = fail_->load() == 0;
    if (fail_->load() >= 0) fail_->fetch_sub(1);
    for (size_t r = 1; r < n_; ++r) {
      if (now && r == fail_at_) {
        wharf::Status st = wharf::DeviceError("injected broadcast failure on replica " + std::to_string(r));
        if (!fail_in_finish_) return st;
        pending_ = st;
        break;
      }
      for (const auto& b : buffers) std::memcpy(b.ptrs[r], b.ptrs[0], b.bytes);
    }
    enqueued_++;
    return wharf::Status::Ok();
  }
  wharf::Status finish() override {
    finished_++;
    wharf::Status st = pending_;
    pending_ = wharf::Status::Ok();
    return st;
  }
  int enqueued_ = 0, finished_ = 0;

 private:
  size_t n_, fail_at_;
  std::atomic<int>* fail_;
  bool fail_in_finish_;
  wharf::Status pending_;
};

TEST_P(ReplicaGroupN, BroadcastFailureOnReplicaKChangesNoReplica) {
  const size_t n = GetParam();
  if (n < 2) GTEST_SKIP() << "one replica broadcasts to nobody";
  for (size_t k = 1; k < n; ++k) {
    SCOPED_TRACE("failing replica " + std::to_string(k));
    Replicas R(n);
    std::atomic<int> fail{-1};
    wharf::Status cs = R.create_with(std::make_unique<FailingBroadcaster>(n, k, &fail));
    ASSERT_TRUE(cs.ok()) << cs.message();
    ASSERT_NO_FATAL_FAILURE(R.load(1));
    ASSERT_NO_FATAL_FAILURE(R.load(2));  // replicas hold 2, rollback generation 1
    const std::vector<uint64_t> gens = R.generations();
    const std::vector<uint64_t> bytes = R.bytes();
    std::vector<wharf_run*> open(n, nullptr);
    for (size_t r = 0; r < n; ++r) ASSERT_OK(wharf_run_begin(R.cs[r], nullptr, nullptr, &open[r]));
    fail = 0;
    Weights w3(3);
    St st(wharf_replica_group_update(R.group, w3.map, nullptr));
    EXPECT_EQ(st.code(), WHARF_DEVICE_ERROR);
    EXPECT_NE(st.msg().find("injected broadcast failure on replica " + std::to_string(k)), std::string::npos)
        << st.msg();
    EXPECT_NE(st.msg().find("nothing was staged"), std::string::npos) << st.msg();
    EXPECT_EQ(R.generations(), gens);
    EXPECT_EQ(R.staged(), std::vector<int32_t>(n, 0));
    EXPECT_EQ(R.bytes(), bytes);
    for (size_t r = 0; r < n; ++r) {
      EXPECT_EQ(version_of(open[r]), 2.0f);
      ASSERT_OK(wharf_run_end(open[r]));
    }
    // The rollback generation survived the failure everywhere.
    ASSERT_OK(wharf_replica_group_swap(R.group));
    EXPECT_EQ(R.versions(), all(n, 1));
    // And the next update goes through.
    ASSERT_NO_FATAL_FAILURE(R.load(4));
    EXPECT_EQ(R.versions(), all(n, 4));
  }
}

// The update in several broadcast batches (each batch's broadcast overlaps the next copy): a
// failure in any batch, reported by enqueue or by finish, stages nothing, and finish always
// waits for what was issued. Full batches of one 32x32 constant, or of the whole model (16
// KiB): then the batches shrink toward the end (update_batches.h) and come out the same.
TEST_P(ReplicaGroupN, BroadcastInBatchesIsAllOrNothing) {
  const size_t n = GetParam();
  if (n < 2) GTEST_SKIP() << "one replica broadcasts to nobody";
  for (uint64_t full : {elements(1) * 4, uint64_t(16) << 10})
    for (int in_finish = 0; in_finish < 2; ++in_finish)
      for (int failing_batch = 0; failing_batch < 3; ++failing_batch) {
        SCOPED_TRACE("full batch " + std::to_string(full) + " bytes, failing batch " + std::to_string(failing_batch) +
                     (in_finish ? " (in finish)" : " (in enqueue)"));
        Replicas R(n);
        std::atomic<int> fail{-1};
        auto b = std::make_unique<FailingBroadcaster>(n, n - 1, &fail, in_finish != 0);
        FailingBroadcaster* probe = b.get();
        wharf::Status cs = R.create_with(std::move(b));
        ASSERT_TRUE(cs.ok()) << cs.message();
        // Batches: embed | layers.0.w | layers.1.w | offloaded.w (host-placed: copied, not
        // broadcast). With 16 KiB full batches the first would have held all three device
        // constants before the batches shrank.
        R.group->g->set_broadcast_batch_bytes_for_test(full);
        ASSERT_NO_FATAL_FAILURE(R.load(1));
        EXPECT_EQ(probe->enqueued_, 3) << "three batches with device constants";
        EXPECT_EQ(probe->finished_, 1) << "one wait at the end";
        EXPECT_EQ(stats_of(R.group).num_broadcasts, 3u);
        EXPECT_EQ(R.versions(), all(n, 1));
        const std::vector<uint64_t> gens = R.generations();
        const std::vector<uint64_t> bytes = R.bytes();
        fail = failing_batch;
        Weights w2(2);
        St st(wharf_replica_group_update(R.group, w2.map, nullptr));
        EXPECT_EQ(st.code(), WHARF_DEVICE_ERROR) << st.msg();
        EXPECT_NE(st.msg().find("injected broadcast failure on replica " + std::to_string(n - 1)), std::string::npos)
            << st.msg();
        EXPECT_EQ(probe->finished_, 2) << "finish waits also after a failure";
        EXPECT_EQ(R.generations(), gens);
        EXPECT_EQ(R.staged(), std::vector<int32_t>(n, 0));
        EXPECT_EQ(R.bytes(), bytes);
        EXPECT_EQ(R.versions(), all(n, 1));
      }
}

// The batch sequence (update_batches.h) for a few plans: full batches, then shrinking to a
// 16th of a full one; a constant is never split; one replica (no limit) is one batch.
TEST(ReplicaGroupBatches, ShrinkTowardTheEndOfTheUpdate) {
  const uint64_t MiB = 1ull << 20, GiB = 1ull << 30;
  auto sizes_of = [](const std::vector<uint64_t>& bytes, const std::vector<size_t>& ends) {
    std::vector<uint64_t> out;
    size_t begin = 0;
    for (size_t e : ends) {
      uint64_t b = 0;
      for (; begin < e; ++begin) b += bytes[begin];
      out.push_back(b);
    }
    EXPECT_EQ(begin, bytes.size()) << "the batches cover the plan";
    return out;
  };
  // The benchmark's model: 8 GiB in 64 tensors of 128 MiB.
  const std::vector<uint64_t> bench(64, 128 * MiB);
  EXPECT_EQ(sizes_of(bench, wharf::update_batches(bench, GiB)),
            (std::vector<uint64_t>{GiB, GiB, GiB, GiB, GiB, 768 * MiB, 640 * MiB, 512 * MiB, 384 * MiB, 256 * MiB,
                                   128 * MiB, 128 * MiB, 128 * MiB, 128 * MiB}));
  // A constant larger than a batch is a batch of its own; the rest shrinks from there.
  std::vector<uint64_t> big{3 * GiB};
  big.insert(big.end(), 8, 128 * MiB);
  EXPECT_EQ(sizes_of(big, wharf::update_batches(big, GiB)),
            (std::vector<uint64_t>{3 * GiB, 256 * MiB, 256 * MiB, 128 * MiB, 128 * MiB, 128 * MiB, 128 * MiB}));
  // Below a 16th of a batch: one batch (small constants are not cut into many tiny batches).
  const std::vector<uint64_t> small(10, MiB);
  EXPECT_EQ(wharf::update_batches(small, GiB), std::vector<size_t>{10});
  const std::vector<uint64_t> empty_bytes(3, 0);
  EXPECT_EQ(wharf::update_batches(empty_bytes, GiB), std::vector<size_t>{3});
  // No limit (a group of one replica): one batch.
  EXPECT_EQ(wharf::update_batches(bench, UINT64_MAX), std::vector<size_t>{64});
  EXPECT_TRUE(wharf::update_batches({}, GiB).empty());
  // Full batches of 0 bytes: one constant each.
  EXPECT_EQ(wharf::update_batches({1, 2, 3}, 0), (std::vector<size_t>{1, 2, 3}));
}

// The other replicas' storage is allocated while replica 0 reads: with replica 1's last
// allocation parked, replica 0's first batch is read and broadcast (before, every replica's
// storage was allocated before the first read: 1.16x-1.42x one GPU's update on 4 x H100).
TEST_P(ReplicaGroupN, OtherReplicasAllocateWhileReplicaZeroReads) {
  const size_t n = GetParam();
  if (n == 1) GTEST_SKIP() << "one replica allocates while it copies";
  Replicas R(n);
  ASSERT_OK(R.create());
  R.group->g->set_broadcast_batch_bytes_for_test(elements(0) * 4);
  ASSERT_NO_FATAL_FAILURE(R.load(1));
  std::mutex mu;
  std::condition_variable cv;
  bool broadcast_seen = false, read_before_last_allocation = false;
  int allocations = 0;
  const int per_replica = int(kNumConstants);  // a full update allocates every constant
  wharf::ScopedTestHook hook([&](const char* point) {
    std::unique_lock<std::mutex> lock(mu);
    if (std::strcmp(point, "replica.broadcast.before") == 0) {
      broadcast_seen = true;
      cv.notify_all();
    } else if (std::strcmp(point, "replica.allocate") == 0 && ++allocations == per_replica * int(n - 1)) {
      // The last allocation of all waits (bounded) for a batch of replica 0's to go out.
      read_before_last_allocation = cv.wait_for(lock, 5s, [&] { return broadcast_seen; });
    }
  });
  Weights w2(2);
  ASSERT_OK(wharf_replica_group_update(R.group, w2.map, nullptr));
  EXPECT_TRUE(read_before_last_allocation) << "replica 0 read nothing until every replica had its storage";
  EXPECT_EQ(allocations, per_replica * int(n - 1));
  ASSERT_OK(wharf_replica_group_swap(R.group));
  EXPECT_EQ(R.versions(), all(n, 2));
}

// While a group update is parked just before it stages, runs on every replica see the old
// weights; after the swap, the new ones everywhere.
TEST_P(ReplicaGroupN, RunsDuringAParkedGroupUpdateSeeTheOldWeights) {
  const size_t n = GetParam();
  Replicas R(n);
  ASSERT_OK(R.create());
  ASSERT_NO_FATAL_FAILURE(R.load(1));
  std::promise<void> parked, release;
  std::shared_future<void> released = release.get_future().share();
  wharf::ScopedTestHook hook([&](const char* point) {
    if (std::strcmp(point, "replica.update.before_stage") == 0) {
      parked.set_value();
      released.wait();
    }
  });
  Weights w2(2);
  auto updater =
      std::async(std::launch::async, [&] { return St(wharf_replica_group_update(R.group, w2.map, nullptr)).code(); });
  ASSERT_EQ(parked.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(R.versions(), all(n, 1));
  EXPECT_EQ(R.staged(), std::vector<int32_t>(n, 0)) << "nothing is staged before every replica is complete";
  // A second group call waits for the first (group calls are serialised).
  auto swapper = std::async(std::launch::async, [&] { return St(wharf_replica_group_swap(R.group)).code(); });
  EXPECT_EQ(swapper.wait_for(50ms), std::future_status::timeout);
  release.set_value();
  EXPECT_EQ(updater.get(), WHARF_OK);
  EXPECT_EQ(swapper.get(), WHARF_OK);
  EXPECT_EQ(R.versions(), all(n, 2));
}

// Runs begin on every replica in a loop while a writer updates and swaps the group: every
// run sees one version in all its constants, and a run begun after a group swap returned
// never sees an older version than that swap published.
TEST_P(ReplicaGroupN, ConcurrentRunsDuringGroupUpdatesAndSwapsNeverSeeAMix) {
  const size_t n = GetParam();
  Replicas R(n);
  ASSERT_OK(R.create());
  ASSERT_NO_FATAL_FAILURE(R.load(1));
  std::atomic<int> published{1};
  std::atomic<bool> done{false};
  std::atomic<int> runs{0}, mixes{0}, stale{0};
  std::vector<std::thread> readers;
  for (size_t t = 0; t < 3; ++t)
    readers.emplace_back([&, t] {
      size_t r = t % n;
      while (!done) {
        const int floor = published.load();
        wharf_run* run = nullptr;
        if (wharf_status* st = wharf_run_begin(R.cs[r], nullptr, nullptr, &run)) {
          wharf_status_free(st);
          mixes++;
          continue;
        }
        const float v = version_of(run);
        if (v < 0)
          mixes++;
        else if (v < float(floor))
          stale++;
        wharf_status_free(wharf_run_end(run));
        runs++;
        r = (r + 1) % n;
      }
    });
  for (int v = 2; v <= 30; ++v) {
    // Each round overlaps runs: wait until a reader has finished one since the last swap.
    const int seen = runs.load();
    while (runs.load() == seen) std::this_thread::yield();
    Weights w(static_cast<float>(v));
    St st(wharf_replica_group_update(R.group, w.map, nullptr));
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
    ASSERT_OK(wharf_replica_group_swap(R.group));
    published = v;
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(runs.load(), 0);
  EXPECT_EQ(mixes.load(), 0);
  EXPECT_EQ(stale.load(), 0);
  EXPECT_EQ(R.versions(), all(n, 30));
}

TEST(ReplicaGroup, MembersAreWrittenOnlyThroughTheGroupUntilItIsFreed) {
  Replicas R(2);
  ASSERT_OK(R.create());
  ASSERT_NO_FATAL_FAILURE(R.load(1));
  Weights w2(2);
  for (wharf_container* c : R.cs) {
    St up(wharf_container_update(c, w2.map, nullptr));
    EXPECT_EQ(up.code(), WHARF_FAILED_PRECONDITION);
    EXPECT_NE(up.msg().find("replica group"), std::string::npos) << up.msg();
    St sw(wharf_container_swap(c));
    EXPECT_EQ(sw.code(), WHARF_FAILED_PRECONDITION) << sw.msg();
    St fi(wharf_container_free_inactive(c));
    EXPECT_EQ(fi.code(), WHARF_FAILED_PRECONDITION) << fi.msg();
    static float user[16 * 8];
    int64_t shape[] = {16, 8};
    wharf_tensor_view v{sizeof(wharf_tensor_view), 0, user, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, shape, nullptr};
    St bind(wharf_container_bind_user_constant(c, "offloaded.w", &v, nullptr, nullptr));
    EXPECT_EQ(bind.code(), WHARF_FAILED_PRECONDITION) << bind.msg();
  }
  EXPECT_EQ(R.versions(), all(2, 1));
  // A container is in one group at a time.
  wharf_replica_group* second = nullptr;
  St again(wharf_replica_group_create(R.cs.data(), 2, &second));
  EXPECT_EQ(again.code(), WHARF_FAILED_PRECONDITION);
  EXPECT_NE(again.msg().find("already replica 0 of another replica group"), std::string::npos) << again.msg();
  EXPECT_EQ(second, nullptr);
  // Freed: the containers are their own again.
  wharf_replica_group_free(R.group);
  R.group = nullptr;
  ASSERT_OK(wharf_container_update(R.cs[1], w2.map, nullptr));
  ASSERT_OK(wharf_container_swap(R.cs[1]));
  EXPECT_EQ(version_now(R.cs[1]), 2.0f);
  EXPECT_EQ(version_now(R.cs[0]), 1.0f);
}

TEST(ReplicaGroup, ArgumentErrorsChangeNothing) {
  Replicas R(3);
  wharf_replica_group* g = nullptr;
  {
    St st(wharf_replica_group_create(R.cs.data(), 2, nullptr));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  }
  {
    St st(wharf_replica_group_create(R.cs.data(), 0, &g));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
    EXPECT_NE(st.msg().find("no containers"), std::string::npos) << st.msg();
  }
  {
    St st(wharf_replica_group_create(nullptr, 2, &g));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  }
  {
    wharf_container* with_null[] = {R.cs[0], nullptr};
    St st(wharf_replica_group_create(with_null, 2, &g));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
    EXPECT_NE(st.msg().find("containers[1] is NULL"), std::string::npos) << st.msg();
  }
  {
    wharf_container* twice[] = {R.cs[0], R.cs[1], R.cs[0]};
    St st(wharf_replica_group_create(twice, 3, &g));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
    EXPECT_NE(st.msg().find("containers 0 and 2 are the same container 'replica0'"), std::string::npos) << st.msg();
  }
  {
    // Two replicas on one runtime (on CUDA: on one GPU) are refused.
    wharf_container* same_rt = declare(R.rts[0], "other");
    wharf_container* pair[] = {R.cs[0], same_rt};
    St st(wharf_replica_group_create(pair, 2, &g));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
    EXPECT_NE(st.msg().find("share one runtime"), std::string::npos) << st.msg();
    wharf_container_free(same_rt);
  }
  EXPECT_EQ(g, nullptr);
  // Nothing above left a trace: the three form a group.
  ASSERT_OK(R.create());
  ASSERT_NO_FATAL_FAILURE(R.load(1));
  // Bad group updates change nothing.
  {
    Weights w(2);
    wharf_constant_map* bad = nullptr;
    ASSERT_OK(wharf_constant_map_create(&bad));
    float x[4] = {0, 0, 0, 0};
    int64_t shape[] = {4};
    wharf_tensor_view v{sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, shape, nullptr};
    ASSERT_OK(wharf_constant_map_set(bad, "unknown", &v));
    St nf(wharf_replica_group_update(R.group, bad, nullptr));
    EXPECT_EQ(nf.code(), WHARF_NOT_FOUND) << nf.msg();
    ASSERT_OK(wharf_constant_map_set(bad, "norm", &v));
    wharf_constant_map_free(bad);
    wharf_update_options o;
    wharf_update_options_init(&o);
    o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
    St ip(wharf_replica_group_update(R.group, w.map, &o));
    EXPECT_EQ(ip.code(), WHARF_UNSUPPORTED) << ip.msg();
    Weights partial(2, {0});
    wharf_update_options_init(&o);
    o.require_full = 1;
    St full(wharf_replica_group_update(R.group, partial.map, &o));
    EXPECT_EQ(full.code(), WHARF_INVALID_ARGUMENT) << full.msg();
    St nul(wharf_replica_group_update(nullptr, w.map, nullptr));
    EXPECT_EQ(nul.code(), WHARF_INVALID_ARGUMENT);
    EXPECT_EQ(R.staged(), std::vector<int32_t>(3, 0));
    EXPECT_EQ(R.versions(), all(3, 1));
  }
  {
    St st(wharf_replica_group_swap(nullptr));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
    St fi(wharf_replica_group_free_inactive(nullptr));
    EXPECT_EQ(fi.code(), WHARF_INVALID_ARGUMENT);
    EXPECT_EQ(wharf_replica_group_num_replicas(nullptr), 0u);
    wharf_replica_group_stats s;
    std::memset(&s, 0, sizeof s);
    St small(wharf_replica_group_get_stats(R.group, &s));
    EXPECT_EQ(small.code(), WHARF_INVALID_ARGUMENT) << "struct_size 0";
    s.struct_size = offsetof(wharf_replica_group_stats, num_updates);  // an older, shorter struct
    ASSERT_OK(wharf_replica_group_get_stats(R.group, &s));
    EXPECT_EQ(s.num_replicas, 3u);
    EXPECT_EQ(s.num_updates, 0u) << "not written past the caller's struct_size";
  }
  wharf_replica_group_free(nullptr);
}

TEST(ReplicaGroup, MismatchedDeclarationsAreNamed) {
  struct Case {
    int change;
    const char* expect;
  };
  const Case cases[] = {
      {1, "constant 1 as 'layers.0.w' F32 [32, 16] device"},
      {2, "constant 1 as 'layers.0.w' F16"},
      {3, "constant 1 as 'layers.0.v'"},
      {4, "constant 1 as 'layers.0.w' F32 [32, 32] host"},
      {5, "its constants as 3 constants, replica 0 (container 'a') as 4"},
      {7, "state 0 as 'cache' F32 [9]"},
      {8, "its states as 0 states, replica 0 (container 'a') as 1"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE("change " + std::to_string(k.change));
    wharf_runtime* a = host_runtime();
    wharf_runtime* b = host_runtime();
    wharf_container* ca = declare(a, "a", 0, nullptr, k.change >= 7);
    wharf_container* cb = declare(b, "b", k.change, nullptr, k.change == 7);
    wharf_container* pair[] = {ca, cb};
    wharf_replica_group* g = nullptr;
    St st(wharf_replica_group_create(pair, 2, &g));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
    EXPECT_NE(st.msg().find("replica 1 (container 'b') declares"), std::string::npos) << st.msg();
    EXPECT_NE(st.msg().find(k.expect), std::string::npos) << st.msg();
    EXPECT_EQ(g, nullptr);
    // Nothing stuck to the containers: each is still its own.
    Weights w(1);
    St own(wharf_container_update(ca, w.map, nullptr));
    EXPECT_EQ(own.code(), WHARF_OK) << own.msg();
    wharf_container_free(ca);
    wharf_container_free(cb);
    wharf_runtime_free(a);
    wharf_runtime_free(b);
  }
}

TEST(ReplicaGroup, StagedContainersAreRefused) {
  wharf_runtime* a = host_runtime();
  wharf_runtime* b = host_runtime();
  {
    wharf_container* ca = declare(a, "a");
    wharf_container* cb = declare(b, "b");
    Weights w(1);
    ASSERT_OK(wharf_container_update(cb, w.map, nullptr));  // staged, not swapped
    wharf_container* pair[] = {ca, cb};
    wharf_replica_group* g = nullptr;
    St st(wharf_replica_group_create(pair, 2, &g));
    EXPECT_EQ(st.code(), WHARF_FAILED_PRECONDITION);
    EXPECT_NE(st.msg().find("replica 1 (container 'b') has an update staged"), std::string::npos) << st.msg();
    ASSERT_OK(wharf_container_swap(cb));
    ASSERT_OK(wharf_replica_group_create(pair, 2, &g));
    // A group update with require_full brings both to the same weights.
    wharf_update_options o;
    wharf_update_options_init(&o);
    o.require_full = 1;
    Weights w2(2);
    ASSERT_OK(wharf_replica_group_update(g, w2.map, &o));
    ASSERT_OK(wharf_replica_group_swap(g));
    EXPECT_EQ(version_now(ca), 2.0f);
    EXPECT_EQ(version_now(cb), 2.0f);
    wharf_replica_group_free(g);
    wharf_container_free(ca);
    wharf_container_free(cb);
  }
  wharf_runtime_free(a);
  wharf_runtime_free(b);
}

// Derived constants: the fold runs on every replica over its own next generation, after the
// broadcast and before anything is staged.
TEST_P(ReplicaGroupN, DerivedConstantsAreFoldedOnEveryReplica) {
  const size_t n = GetParam();
  std::vector<wharf_runtime*> rts;
  std::vector<wharf_container*> cs;
  for (size_t r = 0; r < n; ++r) {
    rts.push_back(host_runtime());
    cs.push_back(declare(rts.back(), ("folded" + std::to_string(r)).c_str(), 6));
  }
  wharf_replica_group* g = nullptr;
  ASSERT_OK(wharf_replica_group_create(cs.data(), n, &g));
  Fold fold;
  wharf_update_options o = fold_options(&fold);
  o.require_full = 1;
  {
    Weights w(1, {0, 2, 3});
    // Without a fold callback the derived constant could not be recomputed: refused.
    St none(wharf_replica_group_update(g, w.map, nullptr));
    EXPECT_EQ(none.code(), WHARF_INVALID_ARGUMENT) << none.msg();
    EXPECT_NE(none.msg().find("fold callback"), std::string::npos) << none.msg();
    ASSERT_OK(wharf_replica_group_update(g, w.map, &o));
    ASSERT_OK(wharf_replica_group_swap(g));
  }
  EXPECT_EQ(fold.calls, int(n)) << "one fold per replica";
  for (auto* c : cs) EXPECT_EQ(version_now(c), 1.0f);
  o.require_full = 0;
  {
    Weights w(2, {0});  // only embed: layers.0.w is folded from it everywhere
    ASSERT_OK(wharf_replica_group_update(g, w.map, &o));
    ASSERT_OK(wharf_replica_group_swap(g));
  }
  EXPECT_EQ(fold.calls, int(2 * n));
  for (auto* c : cs) {
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
    EXPECT_EQ(read_whole(run, 0), 200);
    EXPECT_EQ(read_whole(run, 1), 201) << "folded from the new embed on this replica";
    EXPECT_EQ(read_whole(run, 2), 102);
    EXPECT_OK(wharf_run_end(run));
  }
  wharf_replica_group_free(g);
  for (auto* c : cs) wharf_container_free(c);
  for (auto* rt : rts) wharf_runtime_free(rt);
}

TEST_P(ReplicaGroupN, AFoldFailingOnOneReplicaChangesNoReplica) {
  const size_t n = GetParam();
  for (size_t victim : {n - 1, size_t(0)}) {
    SCOPED_TRACE("fold fails on replica " + std::to_string(victim));
    std::vector<wharf_runtime*> rts;
    std::vector<wharf_container*> cs;
    for (size_t r = 0; r < n; ++r) {
      rts.push_back(host_runtime());
      cs.push_back(declare(rts.back(), ("folded" + std::to_string(r)).c_str(), 6));
    }
    wharf_replica_group* g = nullptr;
    ASSERT_OK(wharf_replica_group_create(cs.data(), n, &g));
    Fold fold;
    wharf_update_options o = fold_options(&fold);
    {
      Weights w(1, {0, 2, 3});
      ASSERT_OK(wharf_replica_group_update(g, w.map, &o));
      ASSERT_OK(wharf_replica_group_swap(g));
      ASSERT_OK(wharf_replica_group_free_inactive(g));
    }
    std::vector<uint64_t> gens, bytes;
    for (size_t r = 0; r < n; ++r) {
      gens.push_back(wharf_container_generation(cs[r]));
      bytes.push_back(constants_bytes(rts[r]));
    }
    fold.calls = 0;
    fold.fail_at = int(victim);  // replicas fold in order
    {
      Weights w(2, {0, 2});
      St st(wharf_replica_group_update(g, w.map, &o));
      EXPECT_EQ(st.code(), WHARF_DATA_CORRUPT) << st.msg();
      EXPECT_NE(st.msg().find("replica " + std::to_string(victim)), std::string::npos) << st.msg();
      EXPECT_NE(st.msg().find("on purpose"), std::string::npos) << st.msg();
    }
    for (size_t r = 0; r < n; ++r) {
      EXPECT_EQ(version_now(cs[r]), 1.0f) << "replica " << r;
      EXPECT_EQ(wharf_container_has_staged(cs[r]), 0) << "replica " << r;
      EXPECT_EQ(wharf_container_generation(cs[r]), gens[r]);
      EXPECT_EQ(constants_bytes(rts[r]), bytes[r]) << "replica " << r << ": the fresh storage was dropped";
    }
    EXPECT_EQ(stats_of(g).num_updates, 1u);
    // The group is not wedged.
    fold.fail_at = -1;
    {
      Weights w(3, {0, 2});
      ASSERT_OK(wharf_replica_group_update(g, w.map, &o));
      ASSERT_OK(wharf_replica_group_swap(g));
    }
    for (auto* c : cs) {
      wharf_run* run = nullptr;
      ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
      EXPECT_EQ(read_whole(run, 1), 301);
      EXPECT_EQ(read_whole(run, 2), 302);
      EXPECT_EQ(read_whole(run, 3), 103);
      EXPECT_OK(wharf_run_end(run));
    }
    wharf_replica_group_free(g);
    for (auto* c : cs) wharf_container_free(c);
    for (auto* rt : rts) wharf_runtime_free(rt);
  }
}

TEST(ReplicaGroup, GroupCallsFromInsideItsFoldAreRefusedNotDeadlocked) {
  wharf_runtime* rts[] = {host_runtime(), host_runtime()};
  wharf_container* cs[] = {declare(rts[0], "a", 6), declare(rts[1], "b", 6)};
  wharf_replica_group* g = nullptr;
  ASSERT_OK(wharf_replica_group_create(cs, 2, &g));
  Weights w(1, {0, 2, 3});
  std::vector<int> codes;
  Fold fold;
  fold.inside = [&] {
    St up(wharf_replica_group_update(g, w.map, nullptr));
    St sw(wharf_replica_group_swap(g));
    St fi(wharf_replica_group_free_inactive(g));
    codes = {up.code(), sw.code(), fi.code()};
  };
  wharf_update_options o = fold_options(&fold);
  ASSERT_OK(wharf_replica_group_update(g, w.map, &o));
  EXPECT_EQ(codes, std::vector<int>(3, WHARF_FAILED_PRECONDITION));
  fold.inside = nullptr;
  ASSERT_OK(wharf_replica_group_swap(g));
  EXPECT_EQ(version_now(cs[0]), 1.0f);
  EXPECT_EQ(version_now(cs[1]), 1.0f);
  wharf_replica_group_free(g);
  for (auto* c : cs) wharf_container_free(c);
  for (auto* rt : rts) wharf_runtime_free(rt);
}

// Weight stores: a grouped store member brings its whole store. Each replica holds a store
// with two methods over the same weights ("prefill", and "decode" with a derived constant of
// its own); a group update reaches both on every replica, sharing one storage per weight.
namespace store_group {

const int64_t kScaledShape[] = {64, 32};

wharf_container* decode(wharf_runtime* rt, wharf_weight_store* store, const std::string& name) {
  std::vector<wharf_constant_decl> decls = model_decls();
  wharf_constant_decl d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.fqn = "decode.scaled";
  d.dtype = WHARF_DTYPE_F32;
  d.ndim = 2;
  d.shape = kScaledShape;
  d.flags = WHARF_CONSTANT_DERIVED;
  decls.push_back(d);
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.name = name.c_str();
  o.constants = decls.data();
  o.num_constants = decls.size();
  o.store = store;
  wharf_container* c = nullptr;
  St st(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  return c;
}

float scaled(wharf_container* c) {
  wharf_run* run = nullptr;
  EXPECT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  if (!run) return -3;
  wharf_tensor_view v{};
  EXPECT_OK(wharf_run_get_tensor(run, "decode.scaled", &v));
  const float x = static_cast<const float*>(v.data)[0];
  EXPECT_OK(wharf_run_end(run));
  return x;
}

const void* data_of(wharf_container* c, const char* fqn) {
  wharf_run* run = nullptr;
  EXPECT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  if (!run) return nullptr;
  wharf_tensor_view v{};
  EXPECT_OK(wharf_run_get_tensor(run, fqn, &v));
  EXPECT_OK(wharf_run_end(run));
  return v.data;
}

// One replica: a runtime, its store, prefill and decode, loaded with version 1 through the
// store (as a model package loads its methods).
struct StoreReplica {
  wharf_runtime* rt = host_runtime();
  wharf_weight_store* store = nullptr;
  wharf_container* prefill = nullptr;
  wharf_container* dec = nullptr;
  Fold fold{"decode.scaled", 1000};
  explicit StoreReplica(size_t r) {
    EXPECT_OK(wharf_weight_store_create(rt, &store));
    prefill = declare(rt, ("prefill" + std::to_string(r)).c_str(), 0, store);
    dec = decode(rt, store, "decode" + std::to_string(r));
    Weights w(1);
    wharf_update_options o = fold_options(&fold);
    EXPECT_OK(wharf_weight_store_update(store, w.map, &o));
    EXPECT_OK(wharf_weight_store_swap(store));
  }
  ~StoreReplica() {
    wharf_container_free(prefill);
    wharf_container_free(dec);
    wharf_weight_store_free(store);
    wharf_runtime_free(rt);
  }
  StoreReplica(const StoreReplica&) = delete;
};

}  // namespace store_group

TEST_P(ReplicaGroupN, AStoreMemberBringsItsWholeStoreIntoTheGroup) {
  using namespace store_group;
  const size_t n = GetParam();
  std::vector<std::unique_ptr<StoreReplica>> R;
  std::vector<wharf_container*> grouped;
  for (size_t r = 0; r < n; ++r) {
    R.push_back(std::make_unique<StoreReplica>(r));
    grouped.push_back(R.back()->prefill);
  }
  for (auto& x : R) {
    ASSERT_EQ(version_now(x->prefill), 1.0f);
    ASSERT_EQ(scaled(x->dec), 1100.0f);
  }
  wharf_replica_group* g = nullptr;
  ASSERT_OK(wharf_replica_group_create(grouped.data(), n, &g));
  // Every member of every store is written only through the group now.
  Weights w2(2);
  for (auto& x : R) {
    wharf_update_options so = fold_options(&x->fold);
    St own(wharf_container_update(x->dec, w2.map, &so));
    EXPECT_EQ(own.code(), WHARF_FAILED_PRECONDITION) << own.msg();
    St store_up(wharf_weight_store_update(x->store, w2.map, &so));
    EXPECT_EQ(store_up.code(), WHARF_FAILED_PRECONDITION) << store_up.msg();
    EXPECT_NE(store_up.msg().find("replica group"), std::string::npos) << store_up.msg();
  }
  // The group update reaches both methods on every replica; decode folds on each.
  Fold fold{"decode.scaled", 1000};
  wharf_update_options o = fold_options(&fold);
  {
    Weights w(2, {0, 1});
    St none(wharf_replica_group_update(g, w.map, nullptr));
    EXPECT_EQ(none.code(), WHARF_INVALID_ARGUMENT) << "decode declares a derived constant: " << none.msg();
    ASSERT_OK(wharf_replica_group_update(g, w.map, &o));
  }
  EXPECT_EQ(fold.calls, int(n)) << "decode folds once per replica (prefill has nothing to fold)";
  for (auto& x : R) EXPECT_EQ(version_now(x->prefill), 1.0f) << "staged, not swapped";
  ASSERT_OK(wharf_replica_group_swap(g));
  for (size_t r = 0; r < n; ++r) {
    StoreReplica& x = *R[r];
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(x.dec, nullptr, nullptr, &run));
    EXPECT_EQ(read_whole(run, 0), 200);
    EXPECT_EQ(read_whole(run, 1), 201);
    EXPECT_EQ(read_whole(run, 2), 102);
    EXPECT_OK(wharf_run_end(run));
    EXPECT_EQ(scaled(x.dec), 1200.0f) << "replica " << r << ": decode folded from the new embed";
    ASSERT_OK(wharf_run_begin(x.prefill, nullptr, nullptr, &run));
    EXPECT_EQ(read_whole(run, 0), 200);
    EXPECT_EQ(read_whole(run, 1), 201);
    EXPECT_OK(wharf_run_end(run));
    EXPECT_EQ(data_of(x.prefill, "embed"), data_of(x.dec, "embed")) << "one storage per weight per replica";
    EXPECT_EQ(data_of(x.prefill, "layers.0.w"), data_of(x.dec, "layers.0.w"));
  }
  // The stores point at the new storage: a container joining replica 0's store now shares
  // the group's weights instead of loading its own (its map's data is not read).
  {
    Weights mine(9, {0, 1, 2});
    wharf_container_options co;
    wharf_container_options_init(&co);
    co.name = "joiner";
    co.store = R[0]->store;
    wharf_container* joiner = nullptr;
    ASSERT_OK(wharf_container_create_from_map(R[0]->rt, mine.map, &co, &joiner));
    EXPECT_EQ(data_of(joiner, "embed"), data_of(R[0]->prefill, "embed"));
    // It is not in the group: a group update does not reach it (it keeps what it joined
    // with), and it is updated on its own.
    Weights w(3, {0});
    ASSERT_OK(wharf_replica_group_update(g, w.map, &o));
    ASSERT_OK(wharf_replica_group_swap(g));
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(joiner, nullptr, nullptr, &run));
    EXPECT_EQ(read_whole(run, 0), 200) << "the joiner keeps the weights it joined with";
    EXPECT_OK(wharf_run_end(run));
    Weights own(5, {0});
    EXPECT_OK(wharf_container_update(joiner, own.map, nullptr));
    EXPECT_OK(wharf_container_swap(joiner));
    wharf_container_free(joiner);
  }
  for (auto& x : R) EXPECT_EQ(scaled(x->dec), 1300.0f);
  // Freed: the stores are their own again.
  wharf_replica_group_free(g);
  for (auto& x : R) {
    wharf_update_options so = fold_options(&x->fold);
    Weights w(4, {0});
    ASSERT_OK(wharf_weight_store_update(x->store, w.map, &so));
    ASSERT_OK(wharf_weight_store_swap(x->store));
    EXPECT_EQ(scaled(x->dec), 1400.0f);
  }
}

// Stores under concurrency (also run under ThreadSanitizer): while group updates and swaps
// run, readers on both methods of every replica's store never see a mix of versions (within
// a method, or between the two methods once the swap returned), store updates of the grouped
// stores are always refused (never staged behind the group's back), and containers joining
// a store race the group's updates without a torn generation.
TEST_P(ReplicaGroupN, StoreMembersUnderConcurrentUpdatesRunsStoreCallsAndJoiners) {
  using namespace store_group;
  const size_t n = GetParam();
  std::vector<std::unique_ptr<StoreReplica>> R;
  std::vector<wharf_container*> grouped;
  for (size_t r = 0; r < n; ++r) {
    R.push_back(std::make_unique<StoreReplica>(r));
    grouped.push_back(R.back()->prefill);
  }
  wharf_replica_group* g = nullptr;
  ASSERT_OK(wharf_replica_group_create(grouped.data(), n, &g));
  std::atomic<int> published{1};
  std::atomic<bool> done{false};
  std::atomic<int> runs{0}, mixes{0}, stale{0}, store_ok{0}, store_refused{0};
  std::vector<std::thread> threads;
  struct Join {  // also when an assertion returns early
    std::atomic<bool>& done;
    std::vector<std::thread>& threads;
    ~Join() {
      done = true;
      for (auto& t : threads)
        if (t.joinable()) t.join();
    }
  } join{done, threads};
  for (size_t t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      size_t r = t % n;
      while (!done) {
        const int floor = published.load();
        StoreReplica& x = *R[r];
        wharf_container* c = t == 0 ? x.prefill : x.dec;
        wharf_run* run = nullptr;
        if (wharf_status* st = wharf_run_begin(c, nullptr, nullptr, &run)) {
          wharf_status_free(st);
          mixes++;
          continue;
        }
        const float v = version_of(run);
        if (v < 0)
          mixes++;
        else if (v < float(floor))
          stale++;
        wharf_status_free(wharf_run_end(run));
        runs++;
        r = (r + 1) % n;
      }
    });
  // A thread that keeps trying the grouped stores' own updates.
  threads.emplace_back([&] {
    Weights w(99, {0});
    size_t r = 0;
    while (!done) {
      StoreReplica& x = *R[r];
      Fold f{"decode.scaled", 1000};
      wharf_update_options o = fold_options(&f);
      wharf_status* st = wharf_weight_store_update(x.store, w.map, &o);
      if (!st)
        store_ok++;
      else if (wharf_status_code(st) == WHARF_FAILED_PRECONDITION || wharf_status_code(st) == WHARF_BUSY)
        store_refused++;
      wharf_status_free(st);
      r = (r + 1) % n;
    }
  });
  Fold fold{"decode.scaled", 1000};
  wharf_update_options o = fold_options(&fold);
  for (int v = 2; v <= 20; ++v) {
    const int seen = runs.load();
    while (runs.load() == seen) std::this_thread::yield();
    Weights w(static_cast<float>(v));
    St st(wharf_replica_group_update(g, w.map, &o));
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
    ASSERT_OK(wharf_replica_group_swap(g));
    published = v;
    // A joiner taking replica (v % n)'s store right after a swap shares the new version.
    StoreReplica& x = *R[size_t(v) % n];
    Weights mine(77, {0, 1, 2});
    wharf_container_options co;
    wharf_container_options_init(&co);
    co.name = "joiner";
    co.store = x.store;
    wharf_container* joiner = nullptr;
    ASSERT_OK(wharf_container_create_from_map(x.rt, mine.map, &co, &joiner));
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(joiner, nullptr, nullptr, &run));
    EXPECT_EQ(read_whole(run, 0), float(v) * 100) << "the joiner shares the published weights";
    EXPECT_OK(wharf_run_end(run));
    wharf_container_free(joiner);
  }
  done = true;
  for (auto& t : threads) t.join();
  EXPECT_GT(runs.load(), 0);
  EXPECT_EQ(mixes.load(), 0);
  EXPECT_EQ(stale.load(), 0);
  EXPECT_EQ(store_ok.load(), 0) << "a grouped store's own update must never stage";
  EXPECT_GT(store_refused.load(), 0);
  for (auto& x : R) {
    EXPECT_EQ(version_now(x->prefill), 20.0f);
    EXPECT_EQ(version_now(x->dec), 20.0f);
    EXPECT_EQ(scaled(x->dec), 3000.0f);
  }
  wharf_replica_group_free(g);
}

TEST(ReplicaGroup, StoresOfDifferentSizesAreRefusedNamingTheReplica) {
  using namespace store_group;
  StoreReplica a(0), b(1);
  Weights mine(9, {0, 1, 2});
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.name = "extra";
  co.store = b.store;
  wharf_container* extra = nullptr;
  ASSERT_OK(wharf_container_create_from_map(b.rt, mine.map, &co, &extra));
  wharf_container* pair[] = {a.prefill, b.prefill};
  wharf_replica_group* g = nullptr;
  St st(wharf_replica_group_create(pair, 2, &g));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << st.msg();
  EXPECT_NE(st.msg().find("replica 1 (container 'prefill1') stands for a weight store of 3 containers"),
            std::string::npos)
      << st.msg();
  EXPECT_EQ(g, nullptr);
  // Nothing stuck: the store is its own.
  Weights w(2, {0});
  wharf_update_options so = fold_options(&b.fold);
  EXPECT_OK(wharf_weight_store_update(b.store, w.map, &so));
  wharf_container_free(extra);
}

TEST(ReplicaGroup, AFoldFailingInOneReplicasStoreChangesNoMemberAnywhere) {
  using namespace store_group;
  StoreReplica a(0), b(1);
  wharf_container* pair[] = {a.prefill, b.prefill};
  wharf_replica_group* g = nullptr;
  ASSERT_OK(wharf_replica_group_create(pair, 2, &g));
  const uint64_t ga = wharf_container_generation(a.dec), gb = wharf_container_generation(b.prefill);
  Fold fold{"decode.scaled", 1000};
  fold.fail_at = 1;  // replica 1's decode
  wharf_update_options o = fold_options(&fold);
  Weights w(2);
  St st(wharf_replica_group_update(g, w.map, &o));
  EXPECT_EQ(st.code(), WHARF_DATA_CORRUPT) << st.msg();
  EXPECT_NE(st.msg().find("decode1"), std::string::npos) << st.msg();
  for (StoreReplica* x : {&a, &b}) {
    EXPECT_EQ(version_now(x->prefill), 1.0f);
    EXPECT_EQ(scaled(x->dec), 1100.0f);
    EXPECT_EQ(wharf_container_has_staged(x->prefill), 0);
    EXPECT_EQ(wharf_container_has_staged(x->dec), 0);
  }
  EXPECT_EQ(wharf_container_generation(a.dec), ga);
  EXPECT_EQ(wharf_container_generation(b.prefill), gb);
  // The group is not wedged.
  fold.fail_at = -1;
  ASSERT_OK(wharf_replica_group_update(g, w.map, &o));
  ASSERT_OK(wharf_replica_group_swap(g));
  for (StoreReplica* x : {&a, &b}) EXPECT_EQ(scaled(x->dec), 1200.0f);
  wharf_replica_group_free(g);
}

// The first swap needs every constant on every replica: a partial first update is refused
// by the swap, naming the replica, and swaps none.
TEST(ReplicaGroup, IncompleteFirstUpdateSwapsNoReplica) {
  Replicas R(2);
  ASSERT_OK(R.create());
  Weights part(1, {0, 1});
  ASSERT_OK(wharf_replica_group_update(R.group, part.map, nullptr));
  St st(wharf_replica_group_swap(R.group));
  EXPECT_EQ(st.code(), WHARF_FAILED_PRECONDITION);
  EXPECT_NE(st.msg().find("replica group swap: replica 0"), std::string::npos) << st.msg();
  EXPECT_EQ(R.generations(), std::vector<uint64_t>(2, 0));
  Weights rest(1, {2, 3});
  ASSERT_OK(wharf_replica_group_update(R.group, rest.map, nullptr));
  ASSERT_OK(wharf_replica_group_swap(R.group));
  EXPECT_EQ(R.versions(), all(2, 1));
}

// --- NCCL loading (no GPU needed) ------------------------------------------------------

TEST(Nccl, AMissingLibraryIsUnsupportedWithTheLoadersReason) {
  wharf_test::ScopedEnv env("WHARF_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
  EXPECT_EQ(wharf::nccl_library_path(), "/nonexistent/libnccl.so.2");
  std::shared_ptr<const wharf::NcclApi> api;
  int version = -1;
  wharf::Status st = wharf::open_nccl(wharf::nccl_library_path(), &api, &version);
  EXPECT_EQ(st.code(), wharf::Code::kUnsupported);
  EXPECT_NE(st.message().find("'/nonexistent/libnccl.so.2'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("No such file"), std::string::npos) << "dlerror's text: " << st.message();
  EXPECT_NE(st.message().find("WHARF_NCCL_LIBRARY"), std::string::npos) << st.message();
  EXPECT_EQ(api, nullptr);
  EXPECT_EQ(version, -1);
}

TEST(Nccl, ALibraryWithoutNcclIsUnsupported) {
  // A real shared library that is not NCCL: libc.
  std::shared_ptr<const wharf::NcclApi> api;
  wharf::Status st = wharf::open_nccl("libc.so.6", &api, nullptr);
  EXPECT_EQ(st.code(), wharf::Code::kUnsupported);
  EXPECT_NE(st.message().find("has no ncclGetVersion"), std::string::npos) << st.message();
}

TEST(Nccl, TheDefaultLibraryLoadsWhereInstalled) {
  wharf_test::ScopedEnv env("WHARF_NCCL_LIBRARY", nullptr);
  EXPECT_EQ(wharf::nccl_library_path(), "libnccl.so.2");
  std::shared_ptr<const wharf::NcclApi> api;
  int version = 0;
  wharf::Status st = wharf::open_nccl("libnccl.so.2", &api, &version);
  if (!st.ok()) GTEST_SKIP() << "NCCL is not installed here: " << st.message();
  EXPECT_NE(api, nullptr);
  EXPECT_GE(version, 20000) << "NCCL 2 reports major * 10000 + minor * 100 + patch";
}

}  // namespace
