// SPDX-License-Identifier: Apache-2.0
// Replica groups across processes on CUDA (the NCCL rank transport): two processes, one GPU
// each. The parent makes the id (its own CUDA runtime) and starts each rank as a fresh
// process image (fork + exec of this binary, running only RankGroupGpuChild.Rank with the
// rank, the id and the scenario in its environment), since a CUDA context does not survive
// fork. The parent collects both exit statuses within a bound; each child checks what it
// serves by copying the run's tensors to the host.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "common/test_support.h"
#include "core/test_hooks.h"
#include "replicas/broadcaster.h"
#include "test_kernels.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::pattern;
using wharf_test::St;

int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

// A device constant of 18 protocol pieces (more than one NCCL group of 16 x 4 MiB, so the
// host-placed constant after it lands mid-way in the second group), a small one, and a
// host-placed one (through the bounce buffers), int32 elements.
const char* const kNames[] = {"embed", "layers.0.w", "offloaded.w"};
const int64_t kCounts[] = {(17 << 20) + 7, 1 << 16, (1 << 20) + 3};
constexpr size_t kNumConstants = 3;

struct Sources {
  std::vector<std::vector<uint32_t>> data;
  wharf_constant_map* map = nullptr;
  explicit Sources(uint32_t seed) {
    EXPECT_EQ(wharf_constant_map_create(&map), nullptr);
    for (size_t i = 0; i < kNumConstants; ++i) {
      data.emplace_back(size_t(kCounts[i]));
      for (int64_t k = 0; k < kCounts[i]; ++k) data.back()[size_t(k)] = pattern(seed + uint32_t(i), uint64_t(k));
      wharf_tensor_view v;
      std::memset(&v, 0, sizeof v);
      v.struct_size = sizeof v;
      v.data = data.back().data();
      v.dtype = WHARF_DTYPE_I32;
      v.device_type = WHARF_DEVICE_CPU;
      v.ndim = 1;
      v.shape = &kCounts[i];
      St st(wharf_constant_map_set(map, kNames[i], &v));
      EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    }
  }
  ~Sources() { wharf_constant_map_free(map); }
  Sources(const Sources&) = delete;
};

// The seed every constant of `run` holds (constant i holds pattern(seed + i, k)), or -1.
long seed_of(wharf_run* run) {
  long seed = -1;
  for (size_t i = 0; i < kNumConstants; ++i) {
    wharf_tensor_view v{};
    St st(wharf_run_get_tensor(run, kNames[i], &v));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    std::vector<uint32_t> host(size_t(kCounts[i]));
    EXPECT_EQ(cudaMemcpy(host.data(), v.data, host.size() * 4, cudaMemcpyDefault), cudaSuccess);
    long s = -1;
    for (uint32_t cand = 1; cand <= 3; ++cand)
      if (host[0] == pattern(cand + uint32_t(i), 0)) s = long(cand);
    if (s < 0) return -1;
    for (int64_t k = 0; k < kCounts[i]; ++k)
      if (host[size_t(k)] != pattern(uint32_t(s) + uint32_t(i), uint64_t(k))) return -1;
    if (i == 0) seed = s;
    if (s != seed) return -1;
  }
  return seed;
}

long seed_now(wharf_container* c) {
  wharf_run* run = nullptr;
  St st(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  if (!run) return -3;
  const long s = seed_of(run);
  EXPECT_EQ(wharf_run_end(run), nullptr);
  return s;
}

std::string to_hex(const wharf_replica_group_id& id) {
  std::string s;
  char b[3];
  for (unsigned char c : id.internal) {
    std::snprintf(b, sizeof b, "%02x", c);
    s += b;
  }
  return s;
}

wharf_replica_group_id from_hex(const char* hex) {
  wharf_replica_group_id id;
  std::memset(&id, 0, sizeof id);
  for (size_t i = 0; i < sizeof id.internal && hex[2 * i] && hex[2 * i + 1]; ++i) {
    unsigned v = 0;
    std::sscanf(hex + 2 * i, "%2x", &v);
    id.internal[i] = static_cast<unsigned char>(v);
  }
  return id;
}

// Starts ranks 0 and 1 of `scenario` and returns their wait statuses (a rank still running
// after `limit` is killed and reported).
std::vector<int> run_two_ranks(const char* scenario, std::chrono::seconds limit = std::chrono::seconds(180)) {
  wharf_runtime* rt = wharf_test::make_runtime(WHARF_BACKEND_CUDA, {0, 0, 0, 0});
  wharf_replica_group_id id;
  St st(wharf_replica_group_get_unique_id(rt, &id));
  wharf_runtime_free(rt);
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  const std::string hex = to_hex(id);
  std::vector<pid_t> pids;
  std::fflush(stdout);
  for (int r = 0; r < 2; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("WHARF_RANK_TEST_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WHARF_RANK_TEST_ID", hex.c_str(), 1);
      ::setenv("WHARF_RANK_TEST_SCENARIO", scenario, 1);
      ::execl("/proc/self/exe", "wharf_gpu_tests", "--gtest_filter=RankGroupGpuChild.Rank", nullptr);
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<int> status(2, -1);
  std::vector<bool> done(2, false);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!(done[0] && done[1])) {
    for (int r = 0; r < 2; ++r)
      if (!done[r] && ::waitpid(pids[r], &status[r], WNOHANG) == pids[r]) done[r] = true;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < 2; ++r)
        if (!done[r]) {
          ADD_FAILURE() << "rank " << r << " did not exit within " << limit.count() << " s: killed";
          ::kill(pids[r], SIGKILL);
          ::waitpid(pids[r], &status[r], 0);
          done[r] = true;
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded polling of exits
  }
  return status;
}

bool exited_ok(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

class RankGroupGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs; this machine has " << gpu_count();
    std::shared_ptr<const wharf::NcclApi> nccl;
    wharf::Status st = wharf::open_nccl(wharf::nccl_library_path(), &nccl, nullptr);
    if (!st.ok()) GTEST_SKIP() << "NCCL cannot be loaded here (set WHARF_NCCL_LIBRARY): " << st.message();
  }
};

TEST_F(RankGroupGpu, TwoProcessesUpdateFromRankZeroAndSwapTogether) {
  const std::vector<int> st = run_two_ranks("update");
  EXPECT_TRUE(exited_ok(st[0])) << "rank 0: status " << st[0];
  EXPECT_TRUE(exited_ok(st[1])) << "rank 1: status " << st[1];
}

TEST_F(RankGroupGpu, AKilledRankFailsTheSurvivorWithinTheTimeoutAndItKeepsItsWeights) {
  const std::vector<int> st = run_two_ranks("kill");
  EXPECT_TRUE(exited_ok(st[0])) << "rank 0 (the survivor): status " << st[0];
  EXPECT_TRUE(WIFSIGNALED(st[1]) && WTERMSIG(st[1]) == SIGKILL) << "rank 1: status " << st[1];
}

// Rank 1 is short of device memory for the update's 12 MiB constant: it discards it (in the
// same 4 MiB NCCL pieces rank 0 sends), both ranks fail with OUT_OF_MEMORY naming rank 1,
// nothing changes, and the next update (which fits) reaches both.
TEST_F(RankGroupGpu, ARankShortOfMemoryFailsBothWithNothingChangedAndTheGroupGoesOn) {
  const std::vector<int> st = run_two_ranks("short");
  EXPECT_TRUE(exited_ok(st[0])) << "rank 0: status " << st[0];
  EXPECT_TRUE(exited_ok(st[1])) << "rank 1: status " << st[1];
}

// Derived constants: each rank folds "embed.copy" (a copy of embed, by cudaMemcpyAsync on
// the fold run's stream) on its own GPU after the broadcast; a fold failing on rank 1 fails
// both with nothing changed.
TEST_F(RankGroupGpu, EachRankFoldsOnItsOwnGpuAndAFailingFoldChangesNothing) {
  const std::vector<int> st = run_two_ranks("fold");
  EXPECT_TRUE(exited_ok(st[0])) << "rank 0: status " << st[0];
  EXPECT_TRUE(exited_ok(st[1])) << "rank 1: status " << st[1];
}

// The fold of the "fold" scenario: embed.copy = embed; fails on purpose when *user is set.
wharf_status* copy_embed(wharf_run* run, void* user) {
  if (user && *static_cast<bool*>(user)) return wharf_status_create(WHARF_DATA_CORRUPT, "the test's fold failed");
  wharf_tensor_view from{}, to{};
  if (wharf_status* st = wharf_run_get_tensor(run, "embed", &from)) return st;
  if (wharf_status* st = wharf_run_get_tensor(run, "embed.copy", &to)) return st;
  if (cudaMemcpyAsync(to.data, from.data, size_t(kCounts[0]) * 4, cudaMemcpyDeviceToDevice,
                      static_cast<cudaStream_t>(wharf_run_stream(run))) != cudaSuccess)
    return wharf_status_create(WHARF_DEVICE_ERROR, "cudaMemcpyAsync failed");
  return nullptr;
}

// Whether embed.copy of a run begun now holds seed `seed`'s embed.
bool copy_holds(wharf_container* c, uint32_t seed) {
  wharf_run* run = nullptr;
  EXPECT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  if (!run) return false;
  wharf_tensor_view v{};
  EXPECT_OK(wharf_run_get_tensor(run, "embed.copy", &v));
  std::vector<uint32_t> host(static_cast<size_t>(kCounts[0]));
  EXPECT_EQ(cudaMemcpy(host.data(), v.data, host.size() * 4, cudaMemcpyDefault), cudaSuccess);
  EXPECT_OK(wharf_run_end(run));
  for (size_t k = 0; k < host.size(); ++k)
    if (host[k] != pattern(seed, k)) return false;
  return true;
}

// One rank of the tests above (skipped unless started by them).
TEST(RankGroupGpuChild, Rank) {
  const char* rank_env = std::getenv("WHARF_RANK_TEST_RANK");
  if (!rank_env) GTEST_SKIP() << "a rank process of the RankGroupGpu tests (started by them)";
  const uint32_t r = uint32_t(std::atoi(rank_env));
  const std::string scenario = std::getenv("WHARF_RANK_TEST_SCENARIO");
  const wharf_replica_group_id id = from_hex(std::getenv("WHARF_RANK_TEST_ID"));
  wharf_test::RuntimeConfig cfg;
  cfg.device_index = int32_t(r);
  // "short": room for one generation of the device constants, the transport's 4 MiB scratch
  // and 4 MiB more, not for a second 68 MiB embed.
  if (scenario == "short" && r == 1) cfg.device_memory_limit = uint64_t(kCounts[0] + kCounts[1]) * 4 + (8u << 20);
  wharf_runtime* rt = wharf_test::make_runtime(WHARF_BACKEND_CUDA, cfg);
  ASSERT_NE(rt, nullptr);
  std::vector<wharf_constant_decl> decls;
  for (size_t i = 0; i < kNumConstants; ++i) {
    wharf_constant_decl d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.fqn = kNames[i];
    d.dtype = WHARF_DTYPE_I32;
    d.ndim = 1;
    d.shape = &kCounts[i];
    d.placement = i == 2 ? WHARF_PLACEMENT_HOST : WHARF_PLACEMENT_DEVICE;
    decls.push_back(d);
  }
  if (scenario == "fold") {
    wharf_constant_decl d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.fqn = "embed.copy";
    d.dtype = WHARF_DTYPE_I32;
    d.ndim = 1;
    d.shape = &kCounts[0];
    d.flags = WHARF_CONSTANT_DERIVED;
    decls.push_back(d);
  }
  bool fail_fold = false;
  wharf_update_options fo;
  wharf_update_options_init(&fo);
  fo.fold = copy_embed;
  fo.fold_user = &fail_fold;
  const wharf_update_options* uo = scenario == "fold" ? &fo : nullptr;
  wharf_container_options o;
  wharf_container_options_init(&o);
  const std::string name = "rank" + std::to_string(r);
  o.name = name.c_str();
  o.constants = decls.data();
  o.num_constants = decls.size();
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create(rt, &o, &c));
  {
    Sources v1(1);
    ASSERT_OK(wharf_container_update(c, v1.map, uo));
    ASSERT_OK(wharf_container_swap(c));
    ASSERT_OK(wharf_container_free_inactive(c));
  }
  ASSERT_EQ(seed_now(c), 1);
  wharf_replica_group_rank_options ro;
  wharf_replica_group_rank_options_init(&ro);
  ro.timeout_ms = scenario == "kill" ? 15000 : 60000;  // kill: the survivor waits out 15 s
  wharf_replica_group* g = nullptr;
  ASSERT_OK(wharf_replica_group_create_rank(c, &id, r, 2, &ro, &g));
  Sources v2(2);
  if (scenario == "update") {
    wharf_run* before = nullptr;
    ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &before));
    ASSERT_OK(wharf_replica_group_update_ranks(g, r == 0 ? v2.map : nullptr, nullptr));
    EXPECT_EQ(seed_of(before), 1) << "a run begun before the update keeps its generation";
    EXPECT_OK(wharf_run_end(before));
    EXPECT_EQ(seed_now(c), 2) << "rank " << r << " serves the new weights";
  } else if (scenario == "short") {
    St st(wharf_replica_group_update_ranks(g, r == 0 ? v2.map : nullptr, nullptr));
    EXPECT_EQ(st.code(), WHARF_OUT_OF_MEMORY) << st.msg();
    EXPECT_NE(st.msg().find("rank 1"), std::string::npos) << st.msg();
    EXPECT_EQ(seed_now(c), 1) << "nothing changed on rank " << r;
    EXPECT_EQ(wharf_container_has_staged(c), 0);
    // The group goes on: an update that fits (layers.0.w only) reaches both.
    wharf_constant_map* small = nullptr;
    ASSERT_OK(wharf_constant_map_create(&small));
    wharf_tensor_view v;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.data = v2.data[1].data();
    v.dtype = WHARF_DTYPE_I32;
    v.device_type = WHARF_DEVICE_CPU;
    v.ndim = 1;
    v.shape = &kCounts[1];
    ASSERT_OK(wharf_constant_map_set(small, kNames[1], &v));
    St ok(wharf_replica_group_update_ranks(g, r == 0 ? small : nullptr, nullptr));
    wharf_constant_map_free(small);
    EXPECT_EQ(ok.code(), WHARF_OK) << ok.msg();
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
    wharf_tensor_view got{};
    EXPECT_OK(wharf_run_get_tensor(run, kNames[1], &got));
    uint32_t first = 0;
    EXPECT_EQ(cudaMemcpy(&first, got.data, 4, cudaMemcpyDefault), cudaSuccess);
    EXPECT_OK(wharf_run_end(run));
    EXPECT_EQ(first, pattern(2 + 1, 0)) << "layers.0.w moved to version 2 on rank " << r;
  } else if (scenario == "fold") {
    EXPECT_TRUE(copy_holds(c, 1));
    ASSERT_OK(wharf_replica_group_update_ranks(g, r == 0 ? v2.map : nullptr, &fo));
    EXPECT_EQ(seed_now(c), 2);
    EXPECT_TRUE(copy_holds(c, 2)) << "rank " << r << " folded embed.copy from the new embed";
    fail_fold = r == 1;
    Sources v3(3);
    St st(wharf_replica_group_update_ranks(g, r == 0 ? v3.map : nullptr, &fo));
    EXPECT_EQ(st.code(), WHARF_DATA_CORRUPT) << st.msg();
    EXPECT_EQ(seed_now(c), 2) << "nothing changed on rank " << r;
    EXPECT_TRUE(copy_holds(c, 2));
  } else {  // "kill": rank 1 dies after receiving its first constant
    wharf::ScopedTestHook hook([&](const char* p) {
      if (r == 1 && std::strcmp(p, "replica.rank.received") == 0) ::raise(SIGKILL);
    });
    const auto t0 = std::chrono::steady_clock::now();
    St st(wharf_replica_group_update_ranks(g, r == 0 ? v2.map : nullptr, nullptr));
    EXPECT_EQ(st.code(), WHARF_IO_ERROR) << st.msg();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60)) << "bounded by the timeout";
    EXPECT_EQ(seed_now(c), 1) << "the survivor keeps serving its weights";
  }
  wharf_replica_group_free(g);
  wharf_container_free(c);
  wharf_runtime_free(rt);
}

}  // namespace
