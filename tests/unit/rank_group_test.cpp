// SPDX-License-Identifier: Apache-2.0
// Replica groups across processes on the host backend (the host rank transport standing in
// for NCCL): the parent makes the id, fork() gives each rank a process of its own with its
// own host runtime and container; each child checks what it serves through runs (EXPECT_*
// in the child fail its exit code) and the parent collects every exit status within a
// bound. No sleeps synchronise anything: the ranks meet through the group itself, and a
// rank is killed (or stopped) by a test hook inside its own update.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "api/replica_api.h"
#include "common/replica_model.h"
#include "common/test_support.h"
#include "core/test_hooks.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

using namespace wharf_test::replica_model;

// Bytes of the device-placed constants (host-placed ones are pinned memory, outside a limit).
uint64_t device_bytes() {
  uint64_t b = 0;
  for (size_t i = 0; i < 3; ++i) b += elements(i) * 4;
  return b;
}

// The model every rank declares; `change` as model_decls (1 another shape for constant 1,
// 6 makes it derived).
wharf_container* declare(wharf_runtime* rt, const std::string& name, int change = 0) {
  std::vector<wharf_constant_decl> decls = model_decls(change);
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.name = name.c_str();
  o.constants = decls.data();
  o.num_constants = decls.size();
  wharf_container* c = nullptr;
  St st(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  return c;
}

wharf_replica_group_id new_id() {
  wharf_runtime* rt = host_runtime();
  wharf_replica_group_id id;
  std::memset(&id, 0, sizeof id);
  EXPECT_EQ(wharf_replica_group_get_unique_id(rt, &id), nullptr);
  wharf_runtime_free(rt);
  return id;
}

wharf_replica_group_rank_options options(uint32_t timeout_ms) {
  wharf_replica_group_rank_options o;
  wharf_replica_group_rank_options_init(&o);
  o.timeout_ms = timeout_ms;
  return o;
}

// One rank's process: its runtime and container, loaded with version 1 on its own (before
// it joins, as a serving process would be), and its group.
struct Rank {
  wharf_runtime* rt = nullptr;
  wharf_container* c = nullptr;
  wharf_replica_group* g = nullptr;
  Rank(uint32_t r, uint64_t limit = 0, int change = 0) {
    rt = host_runtime(limit);
    c = declare(rt, "rank" + std::to_string(r), change);
    if (change) return;  // declared unlike the others: it never joins, nothing to load
    Weights w(1);
    wharf_update_options o;
    wharf_update_options_init(&o);
    o.require_full = 1;
    EXPECT_OK(wharf_container_update(c, w.map, &o));
    EXPECT_OK(wharf_container_swap(c));
    EXPECT_OK(wharf_container_free_inactive(c));
  }
  ~Rank() {
    wharf_replica_group_free(g);
    wharf_container_free(c);
    wharf_runtime_free(rt);
  }
  Rank(const Rank&) = delete;
  wharf_status* join(const wharf_replica_group_id& id, uint32_t r, uint32_t n, uint32_t timeout_ms = 20000) {
    const wharf_replica_group_rank_options o = options(timeout_ms);
    return wharf_replica_group_create_rank(c, &id, r, n, &o, &g);
  }
};

// Runs `body(rank)` in one forked process per rank; each exits 0 unless an EXPECT/ASSERT
// failed in it. Returns the wait statuses; a process still running after `limit` (a hang:
// the bug these tests look for) is killed and reported. `victim` (if < n) is a rank the
// test expects to die or stop: it is killed once every other rank has exited.
std::vector<int> run_ranks(uint32_t n, const std::function<void(uint32_t)>& body, uint32_t victim = UINT32_MAX,
                           std::chrono::seconds limit = std::chrono::seconds(90)) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids(n, -1);
  for (uint32_t r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      body(r);
      const bool failed = ::testing::Test::HasFailure();
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(failed ? 1 : 0);
    }
    EXPECT_GT(pid, 0) << "fork failed: " << std::strerror(errno);
    pids[r] = pid;
  }
  std::vector<int> status(n, -1);
  std::vector<bool> done(n, false);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  uint32_t left = n;
  bool victim_killed = false;
  while (left > 0) {
    bool progressed = false;
    for (uint32_t r = 0; r < n; ++r) {
      if (done[r] || pids[r] <= 0) {
        if (!done[r]) {
          done[r] = true;
          --left;
        }
        continue;
      }
      int st = 0;
      const pid_t got = ::waitpid(pids[r], &st, WNOHANG);
      if (got == pids[r]) {
        status[r] = st;
        done[r] = true;
        --left;
        progressed = true;
      }
    }
    // Every rank but the victim has exited: the victim (stopped, or dying) goes now.
    if (victim < n && !victim_killed && left == 1 && !done[victim]) {
      ::kill(pids[victim], SIGKILL);
      victim_killed = true;
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline) {
      for (uint32_t r = 0; r < n; ++r)
        if (!done[r]) {
          ADD_FAILURE() << "rank " << r << " did not exit within " << limit.count() << " s (a hang): killed";
          ::kill(pids[r], SIGKILL);
          ::waitpid(pids[r], &status[r], 0);
          done[r] = true;
        }
      break;
    }
    // Bounded polling of the children's exit (not synchronisation between the ranks).
    if (!progressed && left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

void expect_clean_exits(const std::vector<int>& status, uint32_t victim = UINT32_MAX) {
  for (size_t r = 0; r < status.size(); ++r) {
    if (r == victim) {
      EXPECT_TRUE(WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == SIGKILL)
          << "rank " << r << " should have been killed; status " << status[r];
      continue;
    }
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)
        << "rank " << r << " failed (its own output above says why); status " << status[r];
  }
}

wharf_replica_group_stats stats_of(const wharf_replica_group* g) {
  wharf_replica_group_stats s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  EXPECT_OK(wharf_replica_group_get_stats(g, &s));
  return s;
}

class RankGroupN : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(Ranks, RankGroupN, ::testing::Values(2u, 3u, 4u),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

TEST_P(RankGroupN, UpdateFromRankZeroReachesEveryRankAndSwapsTogether) {
  const uint32_t n = GetParam();
  const wharf_replica_group_id id = new_id();
  expect_clean_exits(run_ranks(n, [&](uint32_t r) {
    Rank R(r);
    ASSERT_OK(R.join(id, r, n));
    EXPECT_EQ(wharf_replica_group_num_replicas(R.g), n);
    EXPECT_EQ(version_now(R.c), 1) << "serves the old weights before the update";
    wharf_run* before = nullptr;
    ASSERT_OK(wharf_run_begin(R.c, nullptr, nullptr, &before));
    const uint64_t gen = wharf_container_generation(R.c);
    {
      // Runs never wait for the update: one begun in the middle of it (every byte sent,
      // before the vote), on the updating thread itself, serves the old weights.
      float mid = -5;
      wharf::ScopedTestHook hook([&](const char* p) {
        if (std::strcmp(p, "replica.rank.before_vote") == 0) mid = version_now(R.c);
      });
      Weights w(2);
      ASSERT_OK(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, nullptr));
      EXPECT_EQ(mid, 1) << "a run begun during the update serves the old weights";
    }
    EXPECT_EQ(version_of(before), 1) << "a run begun before the swap keeps its generation";
    EXPECT_OK(wharf_run_end(before));
    EXPECT_EQ(version_now(R.c), 2) << "rank " << r << " serves the new weights after the update";
    EXPECT_EQ(wharf_container_generation(R.c), gen + 1);
    EXPECT_EQ(wharf_container_has_staged(R.c), 0);
    // A partial update next: only constant 1 moves, everywhere.
    {
      Weights w(3, {1});
      ASSERT_OK(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, nullptr));
    }
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(R.c, nullptr, nullptr, &run));
    EXPECT_EQ(read_whole(run, 0), 200);
    EXPECT_EQ(read_whole(run, 1), 301);
    EXPECT_OK(wharf_run_end(run));
    const wharf_replica_group_stats s = stats_of(R.g);
    EXPECT_EQ(s.num_replicas, n);
    EXPECT_EQ(s.num_updates, 2u);
    EXPECT_EQ(s.num_swaps, 2u);
    uint64_t all = 0;
    for (size_t i = 0; i < kNumConstants; ++i) all += elements(i) * 4;
    const uint64_t updated = all + elements(1) * 4;
    EXPECT_EQ(s.source_bytes, r == 0 ? updated : 0u) << "the sources were read once, on rank 0";
    EXPECT_EQ(s.broadcast_bytes, r == 0 ? updated * (n - 1) : updated) << "sent to every other rank / received";
    EXPECT_EQ(s.nccl_version, 0) << "the host transport";
  }));
}

TEST_P(RankGroupN, ARankShortOfMemoryFailsTheUpdateOnEveryRankWithNothingChanged) {
  const uint32_t n = GetParam();
  for (uint32_t shorted : {n - 1, 0u}) {
    SCOPED_TRACE("short rank " + std::to_string(shorted));
    const wharf_replica_group_id id = new_id();
    expect_clean_exits(run_ranks(n, [&](uint32_t r) {
      // Room for one generation and one more constant 1, not a full second generation.
      Rank R(r, r == shorted ? device_bytes() + elements(1) * 4 : 0);
      ASSERT_OK(R.join(id, r, n));
      const uint64_t gen = wharf_container_generation(R.c);
      const uint64_t bytes = constants_bytes(R.rt);
      {
        Weights w(2);
        St st(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, nullptr));
        EXPECT_EQ(st.code(), WHARF_OUT_OF_MEMORY) << st.msg();
        EXPECT_NE(st.msg().find("rank " + std::to_string(shorted)), std::string::npos) << st.msg();
      }
      EXPECT_EQ(version_now(R.c), 1) << "nothing changed on rank " << r;
      EXPECT_EQ(wharf_container_generation(R.c), gen);
      EXPECT_EQ(wharf_container_has_staged(R.c), 0);
      EXPECT_EQ(constants_bytes(R.rt), bytes) << "the fresh slots were dropped";
      EXPECT_EQ(stats_of(R.g).num_updates, 0u);
      // The group is not wedged: an update that fits goes through everywhere.
      Weights w3(3, {1});
      ASSERT_OK(wharf_replica_group_update_ranks(R.g, r == 0 ? w3.map : nullptr, nullptr));
      wharf_run* run = nullptr;
      ASSERT_OK(wharf_run_begin(R.c, nullptr, nullptr, &run));
      EXPECT_EQ(read_whole(run, 1), 301);
      EXPECT_EQ(read_whole(run, 2), 102);
      EXPECT_OK(wharf_run_end(run));
    }));
    if (n == 1) break;
  }
}

TEST_P(RankGroupN, ARankKilledMidUpdateFailsTheSurvivorsNamingItAndTheyKeepTheOldWeights) {
  const uint32_t n = GetParam();
  for (uint32_t victim : {n - 1, 0u}) {
    SCOPED_TRACE("victim rank " + std::to_string(victim));
    const wharf_replica_group_id id = new_id();
    expect_clean_exits(run_ranks(
                           n,
                           [&](uint32_t r) {
                             Rank R(r);
                             ASSERT_OK(R.join(id, r, n));
                             const uint64_t gen = wharf_container_generation(R.c);
                             // The victim dies inside its update: rank 0 after sending its
                             // first constant, another rank after receiving its first.
                             const char* point = r == 0 ? "replica.rank.sent" : "replica.rank.received";
                             wharf::ScopedTestHook hook([&](const char* p) {
                               if (r == victim && std::strcmp(p, point) == 0) ::raise(SIGKILL);
                             });
                             Weights w(2);
                             const auto t0 = std::chrono::steady_clock::now();
                             St st(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, nullptr));
                             const auto took = std::chrono::steady_clock::now() - t0;
                             EXPECT_EQ(st.code(), WHARF_IO_ERROR) << st.msg();
                             EXPECT_NE(st.msg().find("rank " + std::to_string(victim)), std::string::npos) << st.msg();
                             EXPECT_LT(took, std::chrono::seconds(10))
                                 << "a dead peer is seen at once, not at the timeout";
                             EXPECT_EQ(version_now(R.c), 1) << "rank " << r << " still serves the old weights";
                             EXPECT_EQ(wharf_container_generation(R.c), gen);
                             EXPECT_EQ(wharf_container_has_staged(R.c), 0);
                             // The group is aborted; the container keeps serving.
                             St again(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, nullptr));
                             EXPECT_EQ(again.code(), WHARF_FAILED_PRECONDITION) << again.msg();
                             EXPECT_EQ(version_now(R.c), 1);
                           },
                           victim),
                       victim);
  }
}

TEST(RankGroup, AStoppedRankFailsTheSurvivorsWithinTheTimeoutNamingIt) {
  const uint32_t n = 3, victim = 2;
  const uint32_t timeout_ms = 1500;
  const wharf_replica_group_id id = new_id();
  expect_clean_exits(run_ranks(
                         n,
                         [&](uint32_t r) {
                           Rank R(r);
                           ASSERT_OK(R.join(id, r, n, timeout_ms));
                           wharf::ScopedTestHook hook([&](const char* p) {
                             if (r == victim && std::strcmp(p, "replica.rank.before_vote") == 0) ::raise(SIGSTOP);
                           });
                           Weights w(2);
                           const auto t0 = std::chrono::steady_clock::now();
                           St st(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, nullptr));
                           const auto took = std::chrono::steady_clock::now() - t0;
                           EXPECT_EQ(st.code(), WHARF_IO_ERROR) << st.msg();
                           EXPECT_NE(st.msg().find("rank 2"), std::string::npos) << st.msg();
                           EXPECT_GE(took, std::chrono::milliseconds(timeout_ms)) << "rank 0 waited the timeout";
                           EXPECT_LT(took, std::chrono::milliseconds(2 * timeout_ms + 5000)) << "bounded";
                           EXPECT_EQ(version_now(R.c), 1);
                         },
                         victim),
                     victim);
}

TEST(RankGroup, ArgumentErrorsOfOneRankFailEveryRankNamingIt) {
  const uint32_t n = 2;
  const wharf_replica_group_id id = new_id();
  expect_clean_exits(run_ranks(n, [&](uint32_t r) {
    Rank R(r);
    ASSERT_OK(R.join(id, r, n));
    Weights w(2);
    // Rank 1 passes a map (only rank 0 may): it fails with INVALID_ARGUMENT, and so does
    // rank 0, naming rank 1; nothing changes and the group stays usable.
    St st(wharf_replica_group_update_ranks(R.g, w.map, nullptr));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << st.msg();
    EXPECT_NE(st.msg().find("rank 1"), std::string::npos) << st.msg();
    EXPECT_EQ(version_now(R.c), 1);
    // Rank 0 passes no map: every rank fails with rank 0's error.
    St none(wharf_replica_group_update_ranks(R.g, nullptr, nullptr));
    EXPECT_EQ(none.code(), WHARF_INVALID_ARGUMENT) << none.msg();
    EXPECT_NE(none.msg().find("map is NULL on rank 0"), std::string::npos) << none.msg();
    // A map rank 0 refuses (an unknown constant): every rank fails with its code.
    wharf_constant_map* bad = nullptr;
    ASSERT_EQ(wharf_constant_map_create(&bad), nullptr);
    std::vector<float> x(4, 1.0f);
    const int64_t shape[] = {4};
    wharf_tensor_view t{
        sizeof(wharf_tensor_view), 0, x.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, shape, nullptr};
    ASSERT_OK(wharf_constant_map_set(bad, "no.such.constant", &t));
    St refused(wharf_replica_group_update_ranks(R.g, r == 0 ? bad : nullptr, nullptr));
    wharf_constant_map_free(bad);
    EXPECT_NE(refused.code(), WHARF_OK);
    EXPECT_NE(refused.msg().find("no.such.constant"), std::string::npos) << refused.msg();
    EXPECT_EQ(version_now(R.c), 1);
    ASSERT_OK(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, nullptr));
    EXPECT_EQ(version_now(R.c), 2);
  }));
}

TEST(RankGroup, CancellingOnRankZeroFailsEveryRankWithNothingChanged) {
  // Rank 0's progress callback cancels after the bytes were read and sent (its final
  // report): the vote carries CANCELLED to every rank, and nothing is published anywhere.
  const uint32_t n = 3;
  const wharf_replica_group_id id = new_id();
  expect_clean_exits(run_ranks(n, [&](uint32_t r) {
    Rank R(r);
    ASSERT_OK(R.join(id, r, n));
    Weights w(2);
    wharf_update_options o;
    wharf_update_options_init(&o);
    o.progress = [](uint64_t done, uint64_t total, void*) -> int32_t { return done < total ? 0 : 1; };
    St st(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, &o));
    EXPECT_EQ(st.code(), WHARF_CANCELLED) << st.msg();
    EXPECT_NE(st.msg().find(r == 0 ? "cancelled" : "rank 0"), std::string::npos) << st.msg();
    EXPECT_EQ(version_now(R.c), 1);
    EXPECT_EQ(wharf_container_has_staged(R.c), 0);
    ASSERT_OK(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, nullptr));
    EXPECT_EQ(version_now(R.c), 2);
  }));
}

// Rank 0 reads in batches that shrink toward the end (update_batches.h): with full batches
// of the whole model (16 KiB) its 4 constants go in 4 batches (one before the batches
// shrank). Every rank gets the update; and when rank 0 runs out of memory in the third batch,
// after two were sent, every rank fails with nothing changed (rank 0 sends zeros for the
// rest, the vote carries its error) and the group goes on.
TEST_P(RankGroupN, RankZeroReadsInShrinkingBatchesAllOrNothing) {
  const uint32_t n = GetParam();
  for (bool short_of_memory : {false, true}) {
    SCOPED_TRACE(short_of_memory ? "rank 0 short of memory" : "enough memory");
    const wharf_replica_group_id id = new_id();
    expect_clean_exits(run_ranks(n, [&](uint32_t r) {
      // Room on rank 0 for a new embed and layers.0.w, not layers.1.w.
      Rank R(r, r == 0 && short_of_memory ? device_bytes() + elements(0) * 4 + elements(1) * 4 : 0);
      ASSERT_OK(R.join(id, r, n));
      R.g->rg->set_batch_bytes_for_test(uint64_t(16) << 10);
      const uint64_t gen = wharf_container_generation(R.c);
      const uint64_t bytes = constants_bytes(R.rt);
      // "batch" is reached by the reading thread (the caller's), "sent" by rank 0's sending
      // thread: the first constant's send waits (bounded) until the second batch is being
      // read, which only a sender apart from the reader lets happen.
      std::atomic<int> batches{0}, sent{0}, sent_at_third{-1};
      std::promise<void> second_batch;
      std::future<void> second_batch_read = second_batch.get_future();
      bool overlapped = false;
      std::mutex ids_mu;
      std::set<std::thread::id> sender_ids;
      const std::thread::id caller = std::this_thread::get_id();
      {
        wharf::ScopedTestHook hook([&](const char* p) {
          if (std::strcmp(p, "replica.rank.batch") == 0) {
            const int b = ++batches;
            if (b == 2) second_batch.set_value();
            if (b == 3) sent_at_third = sent.load();
          }
          if (std::strcmp(p, "replica.rank.sent") == 0) {
            {
              std::lock_guard<std::mutex> lock(ids_mu);
              sender_ids.insert(std::this_thread::get_id());
            }
            if (++sent == 1)
              overlapped = second_batch_read.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
          }
        });
        Weights w(2);
        St st(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, nullptr));
        if (short_of_memory) {
          EXPECT_EQ(st.code(), WHARF_OUT_OF_MEMORY) << st.msg();
          EXPECT_NE(st.msg().find("rank 0"), std::string::npos) << st.msg();
        } else {
          EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
        }
      }
      if (r == 0) {
        EXPECT_EQ(batches, 4) << "embed | layers.0.w | layers.1.w | offloaded.w";
        EXPECT_TRUE(overlapped) << "batch 2 is read while batch 1 is being sent";
        EXPECT_EQ(sender_ids.size(), 1u) << "every send of an update from one thread (NCCL groups are per thread)";
        EXPECT_EQ(sender_ids.count(caller), 0u) << "not the reading thread";
        EXPECT_EQ(sent, 4) << "every constant goes out (as zeros after a local failure)";
        // Batch 1 went out before batch 3 was read (batch 2 may still be going out: it is
        // issued while batch 3 is read).
        EXPECT_GE(sent_at_third.load(), 1) << "the broadcasts overlap the reads";
        EXPECT_LE(sent_at_third.load(), 2);
      } else {
        EXPECT_EQ(batches, 0) << "batches are rank 0's";
      }
      if (short_of_memory) {
        EXPECT_EQ(version_now(R.c), 1) << "nothing changed on rank " << r;
        EXPECT_EQ(wharf_container_generation(R.c), gen);
        EXPECT_EQ(wharf_container_has_staged(R.c), 0);
        EXPECT_EQ(constants_bytes(R.rt), bytes) << "the fresh slots were dropped";
        Weights w3(3, {1});
        ASSERT_OK(wharf_replica_group_update_ranks(R.g, r == 0 ? w3.map : nullptr, nullptr));
        wharf_run* run = nullptr;
        ASSERT_OK(wharf_run_begin(R.c, nullptr, nullptr, &run));
        EXPECT_EQ(read_whole(run, 1), 301);
        EXPECT_EQ(read_whole(run, 2), 102);
        EXPECT_OK(wharf_run_end(run));
      } else {
        EXPECT_EQ(version_now(R.c), 2) << "rank " << r << " serves the new weights";
        EXPECT_EQ(wharf_container_generation(R.c), gen + 1);
      }
    }));
  }
}

TEST(RankGroup, MismatchedDeclarationsFailEveryRankNamingTheRank) {
  const uint32_t n = 3;
  const wharf_replica_group_id id = new_id();
  expect_clean_exits(run_ranks(n, [&](uint32_t r) {
    Rank R(r, 0, r == 2 ? 1 : 0);
    St st(R.join(id, r, n));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << st.msg();
    EXPECT_NE(st.msg().find("rank 2"), std::string::npos) << st.msg();
    EXPECT_EQ(R.g, nullptr);
    // The container left no group behind: its own update works.
    Weights w(2, {0});
    EXPECT_OK(wharf_container_update(R.c, w.map, nullptr));
  }));
}

TEST(RankGroup, ARankGivenTwiceFailsEveryRankNamingIt) {
  // Processes 1 and 2 both claim rank 1 of 3; rank 2 never comes, so rank 0 refuses at its
  // timeout, and every process (the duplicate at once) fails naming rank 1.
  const uint32_t n = 3, timeout_ms = 1000;
  const wharf_replica_group_id id = new_id();
  expect_clean_exits(run_ranks(n, [&](uint32_t p) {
    const uint32_t r = p == 2 ? 1 : p;
    Rank R(p);
    const auto t0 = std::chrono::steady_clock::now();
    St st(R.join(id, r, n, timeout_ms));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << st.msg();
    EXPECT_NE(st.msg().find("rank 1 joined twice"), std::string::npos) << st.msg();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2 * timeout_ms + 5000));
    EXPECT_EQ(R.g, nullptr);
    EXPECT_EQ(version_now(R.c), 1);
  }));
}

// Derived constants: every rank folds its own next generation after the bytes arrived and
// before the vote, each with the fold callback its own call passes.
struct FoldedRank {
  wharf_runtime* rt = host_runtime();
  wharf_weight_store* store = nullptr;
  wharf_container* c = nullptr;    // "layers.0.w" derived (model_decls(6))
  wharf_container* dec = nullptr;  // with a store: a second method, "decode.scaled" derived
  wharf_replica_group* g = nullptr;
  Fold fold;
  Fold dec_fold{"decode.scaled", 1000};
  Fold dec_layer;  // decode's own layers.0.w (derived constants are never shared)
  // Both methods' folds in one callback (a store update's fold is run for each member).
  static wharf_status* both(wharf_run* run, void* user) {
    FoldedRank* R = static_cast<FoldedRank*>(user);
    wharf_tensor_view v{};
    wharf_status* probe = wharf_run_get_tensor(run, "decode.scaled", &v);
    const bool is_decode = probe == nullptr;
    wharf_status_free(probe);
    if (!is_decode) return fold_from_embed(run, &R->fold);
    if (wharf_status* st = fold_from_embed(run, &R->dec_fold)) return st;
    return fold_from_embed(run, &R->dec_layer);
  }
  wharf_update_options options() {
    wharf_update_options o;
    wharf_update_options_init(&o);
    o.fold = both;
    o.fold_user = this;
    return o;
  }
  FoldedRank(uint32_t r, bool with_store) {
    if (with_store) EXPECT_OK(wharf_weight_store_create(rt, &store));
    std::vector<wharf_constant_decl> decls = model_decls(6);
    const std::string name = "rank" + std::to_string(r);
    wharf_container_options o;
    wharf_container_options_init(&o);
    o.name = name.c_str();
    o.constants = decls.data();
    o.num_constants = decls.size();
    o.store = store;
    EXPECT_OK(wharf_container_create(rt, &o, &c));
    if (with_store) {
      static const int64_t scaled_shape[] = {64, 32};
      wharf_constant_decl d;
      std::memset(&d, 0, sizeof d);
      d.struct_size = sizeof d;
      d.fqn = "decode.scaled";
      d.dtype = WHARF_DTYPE_F32;
      d.ndim = 2;
      d.shape = scaled_shape;
      d.flags = WHARF_CONSTANT_DERIVED;
      std::vector<wharf_constant_decl> dd = model_decls(6);
      dd.push_back(d);
      const std::string dname = "decode" + std::to_string(r);
      o.name = dname.c_str();
      o.constants = dd.data();
      o.num_constants = dd.size();
      EXPECT_OK(wharf_container_create(rt, &o, &dec));
    }
    Weights w(1, {0, 2, 3});
    wharf_update_options u = options();
    u.require_full = 1;
    if (with_store) {
      EXPECT_OK(wharf_weight_store_update(store, w.map, &u));
      EXPECT_OK(wharf_weight_store_swap(store));
    } else {
      EXPECT_OK(wharf_container_update(c, w.map, &u));
      EXPECT_OK(wharf_container_swap(c));
      EXPECT_OK(wharf_container_free_inactive(c));
    }
    fold.calls = dec_fold.calls = 0;
  }
  ~FoldedRank() {
    wharf_replica_group_free(g);
    wharf_container_free(dec);
    wharf_container_free(c);
    wharf_weight_store_free(store);
    wharf_runtime_free(rt);
  }
  FoldedRank(const FoldedRank&) = delete;
  float scaled() {
    wharf_run* run = nullptr;
    EXPECT_OK(wharf_run_begin(dec, nullptr, nullptr, &run));
    if (!run) return -3;
    wharf_tensor_view v{};
    EXPECT_OK(wharf_run_get_tensor(run, "decode.scaled", &v));
    const float x = static_cast<const float*>(v.data)[0];
    EXPECT_OK(wharf_run_end(run));
    return x;
  }
};

TEST_P(RankGroupN, DerivedConstantsAreFoldedOnEveryRank) {
  const uint32_t n = GetParam();
  const wharf_replica_group_id id = new_id();
  expect_clean_exits(run_ranks(n, [&](uint32_t r) {
    FoldedRank R(r, false);
    const wharf_replica_group_rank_options ro = options(20000);
    ASSERT_OK(wharf_replica_group_create_rank(R.c, &id, r, n, &ro, &R.g));
    EXPECT_EQ(version_now(R.c), 1);
    Weights w(2, {0});  // only embed: each rank folds layers.0.w from it
    wharf_update_options o = R.options();
    ASSERT_OK(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, &o));
    EXPECT_EQ(R.fold.calls, 1) << "rank " << r << " folded once, on its own";
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(R.c, nullptr, nullptr, &run));
    EXPECT_EQ(read_whole(run, 0), 200);
    EXPECT_EQ(read_whole(run, 1), 201) << "folded from the new embed on rank " << r;
    EXPECT_EQ(read_whole(run, 2), 102);
    EXPECT_OK(wharf_run_end(run));
    // A rank that passes no fold callback fails (its container could not recompute
    // layers.0.w), and so does every other rank, naming it; nothing changes.
    const uint32_t bare = n - 1;
    Weights w3(3, {0});
    wharf_update_options none;
    wharf_update_options_init(&none);
    St st(wharf_replica_group_update_ranks(R.g, r == 0 ? w3.map : nullptr, r == bare ? &none : &o));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << st.msg();
    EXPECT_NE(st.msg().find(r == bare ? "fold callback" : "rank " + std::to_string(bare)), std::string::npos)
        << st.msg();
    ASSERT_OK(wharf_run_begin(R.c, nullptr, nullptr, &run));
    EXPECT_EQ(read_whole(run, 0), 200) << "nothing changed";
    EXPECT_EQ(read_whole(run, 1), 201);
    EXPECT_OK(wharf_run_end(run));
  }));
}

TEST_P(RankGroupN, AFoldFailingOnOneRankFailsEveryRankWithNothingChanged) {
  const uint32_t n = GetParam();
  for (uint32_t victim : {n - 1, 0u}) {
    SCOPED_TRACE("fold fails on rank " + std::to_string(victim));
    const wharf_replica_group_id id = new_id();
    expect_clean_exits(run_ranks(n, [&](uint32_t r) {
      FoldedRank R(r, false);
      const wharf_replica_group_rank_options ro = options(20000);
      ASSERT_OK(wharf_replica_group_create_rank(R.c, &id, r, n, &ro, &R.g));
      const uint64_t gen = wharf_container_generation(R.c);
      const uint64_t bytes = constants_bytes(R.rt);
      if (r == victim) R.fold.fail_at = 0;
      wharf_update_options o = R.options();
      {
        Weights w(2, {0, 2});
        St st(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, &o));
        EXPECT_EQ(st.code(), WHARF_DATA_CORRUPT) << st.msg();
        EXPECT_NE(st.msg().find(r == victim ? "on purpose" : "rank " + std::to_string(victim)), std::string::npos)
            << st.msg();
      }
      EXPECT_EQ(version_now(R.c), 1) << "nothing changed on rank " << r;
      EXPECT_EQ(wharf_container_generation(R.c), gen);
      EXPECT_EQ(wharf_container_has_staged(R.c), 0);
      EXPECT_EQ(constants_bytes(R.rt), bytes) << "the fresh storage was dropped";
      // The group stays usable.
      Weights w3(3, {0});
      ASSERT_OK(wharf_replica_group_update_ranks(R.g, r == 0 ? w3.map : nullptr, &o));
      wharf_run* run = nullptr;
      ASSERT_OK(wharf_run_begin(R.c, nullptr, nullptr, &run));
      EXPECT_EQ(read_whole(run, 1), 301);
      EXPECT_EQ(read_whole(run, 2), 102);
      EXPECT_OK(wharf_run_end(run));
    }));
  }
}

// Weight stores: each rank's grouped container brings its store (prefill and decode sharing
// the weights); an update reaches both methods on every rank, a fold failing in one rank's
// decode fails every rank with nothing changed on any member, and afterwards the store
// serves the new weights to a container joining it.
TEST(RankGroup, StoreMembersUpdateTogetherOnEveryRankOrNowhere) {
  const uint32_t n = 3, victim = 2;
  const wharf_replica_group_id id = new_id();
  expect_clean_exits(run_ranks(n, [&](uint32_t r) {
    FoldedRank R(r, true);
    const wharf_replica_group_rank_options ro = options(20000);
    ASSERT_OK(wharf_replica_group_create_rank(R.c, &id, r, n, &ro, &R.g));
    EXPECT_EQ(R.scaled(), 1100);
    wharf_update_options o = R.options();
    if (r == victim) R.dec_fold.fail_at = 0;
    {
      Weights w(2, {0});
      St st(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, &o));
      EXPECT_EQ(st.code(), WHARF_DATA_CORRUPT) << st.msg();
      EXPECT_NE(st.msg().find(r == victim ? "decode2" : "rank 2"), std::string::npos) << st.msg();
    }
    EXPECT_EQ(version_now(R.c), 1);
    EXPECT_EQ(version_now(R.dec), 1);
    EXPECT_EQ(R.scaled(), 1100);
    EXPECT_EQ(wharf_container_has_staged(R.dec), 0);
    {
      Weights w(2, {0});
      ASSERT_OK(wharf_replica_group_update_ranks(R.g, r == 0 ? w.map : nullptr, &o));
    }
    EXPECT_EQ(R.scaled(), 1200) << "decode folded on rank " << r;
    wharf_run* a = nullptr;
    wharf_run* b = nullptr;
    ASSERT_OK(wharf_run_begin(R.c, nullptr, nullptr, &a));
    ASSERT_OK(wharf_run_begin(R.dec, nullptr, nullptr, &b));
    wharf_tensor_view va{}, vb{};
    EXPECT_OK(wharf_run_get_tensor(a, "embed", &va));
    EXPECT_OK(wharf_run_get_tensor(b, "embed", &vb));
    EXPECT_EQ(va.data, vb.data) << "one storage per weight on rank " << r;
    EXPECT_EQ(static_cast<const float*>(vb.data)[0], 200.0f);
    EXPECT_EQ(read_whole(a, 1), 201);
    EXPECT_EQ(read_whole(b, 1), 201);
    EXPECT_OK(wharf_run_end(a));
    EXPECT_OK(wharf_run_end(b));
    // The store itself is the group's while grouped.
    Weights w4(4, {0});
    St own(wharf_weight_store_update(R.store, w4.map, &o));
    EXPECT_EQ(own.code(), WHARF_FAILED_PRECONDITION) << own.msg();
    // A container joining the store now shares the group's new weights.
    Weights mine(9, {0, 1, 2});
    wharf_container_options co;
    wharf_container_options_init(&co);
    co.name = "joiner";
    co.store = R.store;
    wharf_container* joiner = nullptr;
    ASSERT_OK(wharf_container_create_from_map(R.rt, mine.map, &co, &joiner));
    wharf_run* j = nullptr;
    ASSERT_OK(wharf_run_begin(joiner, nullptr, nullptr, &j));
    EXPECT_EQ(read_whole(j, 0), 200);
    EXPECT_OK(wharf_run_end(j));
    wharf_container_free(joiner);
  }));
}

// In one process: a group of one rank, and the checks that need no peer.
TEST(RankGroup, ArgumentErrorTable) {
  wharf_runtime* rt = host_runtime();
  const wharf_replica_group_id id = new_id();
  wharf_replica_group_id zero;
  std::memset(&zero, 0, sizeof zero);
  wharf_replica_group* g = nullptr;
  wharf_container* c = declare(rt, "solo");
  wharf_replica_group_rank_options small;
  std::memset(&small, 0, sizeof small);
  small.struct_size = 2;
  wharf_replica_group_id out_id;
  struct Case {
    const char* what;
    std::function<wharf_status*()> call;
    wharf_code code;
  };
  const Case cases[] = {
      {"get_unique_id runtime NULL", [&] { return wharf_replica_group_get_unique_id(nullptr, &out_id); },
       WHARF_INVALID_ARGUMENT},
      {"get_unique_id out NULL", [&] { return wharf_replica_group_get_unique_id(rt, nullptr); },
       WHARF_INVALID_ARGUMENT},
      {"out NULL", [&] { return wharf_replica_group_create_rank(c, &id, 0, 1, nullptr, nullptr); },
       WHARF_INVALID_ARGUMENT},
      {"container NULL", [&] { return wharf_replica_group_create_rank(nullptr, &id, 0, 1, nullptr, &g); },
       WHARF_INVALID_ARGUMENT},
      {"id NULL", [&] { return wharf_replica_group_create_rank(c, nullptr, 0, 1, nullptr, &g); },
       WHARF_INVALID_ARGUMENT},
      {"size 0", [&] { return wharf_replica_group_create_rank(c, &id, 0, 0, nullptr, &g); }, WHARF_INVALID_ARGUMENT},
      {"rank >= size", [&] { return wharf_replica_group_create_rank(c, &id, 2, 2, nullptr, &g); },
       WHARF_INVALID_ARGUMENT},
      {"an id not made by get_unique_id", [&] { return wharf_replica_group_create_rank(c, &zero, 0, 1, nullptr, &g); },
       WHARF_INVALID_ARGUMENT},
      {"options struct_size too small", [&] { return wharf_replica_group_create_rank(c, &id, 0, 1, &small, &g); },
       WHARF_INVALID_ARGUMENT},
      {"update_ranks group NULL", [&] { return wharf_replica_group_update_ranks(nullptr, nullptr, nullptr); },
       WHARF_INVALID_ARGUMENT},
  };
  for (const Case& k : cases) {
    St st(k.call());
    EXPECT_EQ(st.code(), k.code) << k.what << ": " << st.msg();
    EXPECT_EQ(g, nullptr) << k.what;
  }
  // Nothing was joined: the container is free to update on its own.
  {
    Weights w(1);
    ASSERT_OK(wharf_container_update(c, w.map, nullptr));
    ASSERT_OK(wharf_container_swap(c));
  }

  // A group of one rank forms without peers and updates like a container.
  ASSERT_OK(wharf_replica_group_create_rank(c, &id, 0, 1, nullptr, &g));
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(wharf_replica_group_num_replicas(g), 1u);
  wharf_replica_group* twice = nullptr;
  const wharf_replica_group_id id2 = new_id();
  St in_group(wharf_replica_group_create_rank(c, &id2, 0, 1, nullptr, &twice));
  EXPECT_EQ(in_group.code(), WHARF_FAILED_PRECONDITION) << in_group.msg();
  Weights w2(2);
  St own(wharf_container_update(c, w2.map, nullptr));
  EXPECT_EQ(own.code(), WHARF_FAILED_PRECONDITION) << "members are written only through the group: " << own.msg();
  St old_update(wharf_replica_group_update(g, w2.map, nullptr));
  EXPECT_EQ(old_update.code(), WHARF_FAILED_PRECONDITION) << old_update.msg();
  St old_swap(wharf_replica_group_swap(g));
  EXPECT_EQ(old_swap.code(), WHARF_FAILED_PRECONDITION) << old_swap.msg();
  wharf_update_options in_place;
  wharf_update_options_init(&in_place);
  in_place.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  St ip(wharf_replica_group_update_ranks(g, w2.map, &in_place));
  EXPECT_EQ(ip.code(), WHARF_UNSUPPORTED) << ip.msg();
  St no_map(wharf_replica_group_update_ranks(g, nullptr, nullptr));
  EXPECT_EQ(no_map.code(), WHARF_INVALID_ARGUMENT) << no_map.msg();
  EXPECT_EQ(version_now(c), 1);
  ASSERT_OK(wharf_replica_group_update_ranks(g, w2.map, nullptr));
  EXPECT_EQ(version_now(c), 2);
  EXPECT_OK(wharf_replica_group_free_inactive(g));
  wharf_replica_group_free(g);
  g = nullptr;

  // Rank 0 of two with nobody joining: IO_ERROR within the timeout, naming the missing rank.
  const wharf_replica_group_id id3 = new_id();
  const wharf_replica_group_rank_options quick = options(300);
  const auto t0 = std::chrono::steady_clock::now();
  St alone(wharf_replica_group_create_rank(c, &id3, 0, 2, &quick, &g));
  EXPECT_EQ(alone.code(), WHARF_IO_ERROR) << alone.msg();
  EXPECT_NE(alone.msg().find("rank(s) 1 of 2"), std::string::npos) << alone.msg();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(g, nullptr);
  // And a peer whose rank 0 never comes says so.
  St peer(wharf_replica_group_create_rank(c, &id3, 1, 2, &quick, &g));
  EXPECT_EQ(peer.code(), WHARF_IO_ERROR) << peer.msg();
  EXPECT_NE(peer.msg().find("rank 0 was not reachable"), std::string::npos) << peer.msg();
  EXPECT_EQ(g, nullptr);
  // The failed attempts left the container free.
  EXPECT_OK(wharf_container_update(c, w2.map, nullptr));

  wharf_container_free(c);
  wharf_runtime_free(rt);
}

}  // namespace
