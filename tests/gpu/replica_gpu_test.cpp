// SPDX-License-Identifier: Apache-2.0
// Replica groups on the CUDA backend with NCCL: one replica per visible GPU (N = the number
// of GPUs; on a one-GPU machine N = 1, which still runs NCCL with a single rank, so the
// dlopen, the communicator and the grouped ncclBroadcast calls are exercised), through the
// public C API. Every check of data is a kernel on the run's stream (test_kernels.h), so it
// is what the device saw at that point of the stream. Tests that need two GPUs say so and
// skip elsewhere; two replicas on one GPU are never faked (NCCL refuses duplicate devices).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "api/handles.h"
#include "api/replica_api.h"
#include "common/test_support.h"
#include "replicas/broadcaster.h"
#include "replicas/replica_group.h"
#include "test_kernels.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

using wharf_test::launch_check;
using wharf_test::launch_spin;
using wharf_test::pattern;

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

// Two device constants of odd sizes and one host-placed constant, int32 elements.
const char* const kNames[] = {"embed", "layers.0.w", "offloaded.w"};
const int64_t kCounts[] = {(3 << 20) + 7, 1 << 16, 4099};
constexpr size_t kNumConstants = 3;

// Pageable host sources holding pattern(seed + i, k) for constant i.
struct Sources {
  std::vector<std::vector<uint32_t>> data;
  wharf_constant_map* map = nullptr;
  explicit Sources(uint32_t seed, std::vector<size_t> which = {0, 1, 2}) {
    EXPECT_EQ(wharf_constant_map_create(&map), nullptr);
    for (size_t i : which) {
      data.emplace_back(size_t(kCounts[i]));
      for (int64_t k = 0; k < kCounts[i]; ++k) data.back()[size_t(k)] = pattern(seed + uint32_t(i), uint64_t(k));
      wharf_tensor_view v{};
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

wharf_runtime* cuda_runtime(int device, uint64_t limit = 0) {
  return wharf_test::make_runtime(WHARF_BACKEND_CUDA, {limit, 0, 0, device});
}

wharf_container* declare(wharf_runtime* rt, const std::string& name) {
  wharf_constant_decl d[kNumConstants];
  std::memset(d, 0, sizeof d);
  for (size_t i = 0; i < kNumConstants; ++i) {
    d[i].struct_size = sizeof d[i];
    d[i].fqn = kNames[i];
    d[i].dtype = WHARF_DTYPE_I32;
    d[i].ndim = 1;
    d[i].shape = &kCounts[i];
    d[i].placement = i == 2 ? WHARF_PLACEMENT_HOST : WHARF_PLACEMENT_DEVICE;
  }
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.name = name.c_str();
  o.constants = d;
  o.num_constants = kNumConstants;
  wharf_container* c = nullptr;
  St st(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  return c;
}

// One replica per visible GPU, each with a stream of its own for runs.
struct Gpus {
  int n = 0;
  std::vector<wharf_runtime*> rts;
  std::vector<wharf_container*> cs;
  std::vector<cudaStream_t> streams;
  std::vector<unsigned long long*> bad;  // one mismatch counter per replica (device memory)
  wharf_replica_group* group = nullptr;

  explicit Gpus(std::vector<uint64_t> limits = {}) : n(gpu_count()) {
    limits.resize(size_t(n), 0);
    for (int r = 0; r < n; ++r) {
      rts.push_back(cuda_runtime(r, limits[size_t(r)]));
      cs.push_back(declare(rts.back(), "replica" + std::to_string(r)));
      EXPECT_EQ(cudaSetDevice(r), cudaSuccess);
      cudaStream_t s = nullptr;
      EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
      streams.push_back(s);
      unsigned long long* b = nullptr;
      EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&b), sizeof *b), cudaSuccess);
      bad.push_back(b);
    }
  }
  ~Gpus() {
    wharf_replica_group_free(group);
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(r);
      cudaStreamSynchronize(streams[size_t(r)]);
      cudaStreamDestroy(streams[size_t(r)]);
      cudaFree(bad[size_t(r)]);
      wharf_container_free(cs[size_t(r)]);
      wharf_runtime_free(rts[size_t(r)]);
    }
  }
  Gpus(const Gpus&) = delete;

  wharf_status* create() { return wharf_replica_group_create(cs.data(), cs.size(), &group); }
  // A group over an internal broadcaster (failure injection around the real NCCL one).
  wharf::Status create_with(std::unique_ptr<wharf::Broadcaster> b) {
    std::vector<std::shared_ptr<wharf::Container>> v;
    for (auto* c : cs) v.push_back(c->c);
    auto h = std::make_unique<wharf_replica_group>();
    WHARF_RETURN_IF_ERROR(wharf::ReplicaGroup::create(std::move(v), std::move(b), &h->g));
    group = h.release();
    return wharf::Status::Ok();
  }
  std::vector<std::shared_ptr<wharf::Runtime>> runtimes() const {
    std::vector<std::shared_ptr<wharf::Runtime>> out;
    for (auto* rt : rts) out.push_back(rt->rt);
    return out;
  }
  void load(uint32_t seed) {
    Sources s(seed);
    wharf_update_options o;
    wharf_update_options_init(&o);
    o.require_full = 1;
    St st(wharf_replica_group_update(group, s.map, &o));
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
    ASSERT_OK(wharf_replica_group_swap(group));
  }
  // Enqueues on `run`'s stream a check of every device constant against `seed` into bad[r].
  void enqueue_check(size_t r, wharf_run* run, uint32_t seed) {
    for (size_t i = 0; i < 2; ++i) {
      wharf_tensor_view v{};
      std::memset(&v, 0, sizeof v);
      v.struct_size = sizeof v;
      ASSERT_OK(wharf_run_get_tensor(run, kNames[i], &v));
      ASSERT_CUDA(launch_check(streams[r], static_cast<const uint32_t*>(v.data), uint64_t(kCounts[i]),
                               seed + uint32_t(i), bad[r]));
    }
  }
  // Mismatches of every constant of replica r against `seed`, read by kernels in a new run.
  unsigned long long mismatches(size_t r, uint32_t seed) {
    EXPECT_EQ(cudaSetDevice(int(r)), cudaSuccess);
    EXPECT_EQ(cudaMemsetAsync(bad[r], 0, sizeof(unsigned long long), streams[r]), cudaSuccess);
    wharf_run* run = nullptr;
    St st(wharf_run_begin(cs[r], nullptr, streams[r], &run));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    if (!run) return ~0ull;
    enqueue_check(r, run, seed);
    unsigned long long h = 0;
    EXPECT_EQ(cudaMemcpyAsync(&h, bad[r], sizeof h, cudaMemcpyDeviceToHost, streams[r]), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(streams[r]), cudaSuccess);
    // The host-placed constant (pinned host memory) is read on the host.
    wharf_tensor_view v{};
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    St ht(wharf_run_get_tensor(run, kNames[2], &v));
    EXPECT_EQ(ht.code(), WHARF_OK) << ht.msg();
    if (v.data)
      for (int64_t k = 0; k < kCounts[2]; ++k)
        if (static_cast<const uint32_t*>(v.data)[k] != pattern(seed + 2, uint64_t(k))) ++h;
    EXPECT_EQ(wharf_run_end(run), nullptr);
    return h;
  }
};

class ReplicaGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU visible";
    // open_nccl, not nccl_api: a check that loads nothing for good (the test that runs
    // without NCCL needs its process not to have it).
    std::shared_ptr<const wharf::NcclApi> nccl;
    wharf::Status st = wharf::open_nccl(wharf::nccl_library_path(), &nccl, nullptr);
    if (!st.ok()) GTEST_SKIP() << "NCCL cannot be loaded here (set WHARF_NCCL_LIBRARY): " << st.message();
  }
};

TEST_F(ReplicaGpu, GroupUpdateFromPageableSourcesReachesEveryGpuThroughNccl) {
  Gpus g;
  ASSERT_OK(g.create());
  ASSERT_EQ(wharf_replica_group_num_replicas(g.group), size_t(g.n));
  ASSERT_NO_FATAL_FAILURE(g.load(100));
  for (int r = 0; r < g.n; ++r) EXPECT_EQ(g.mismatches(size_t(r), 100), 0u) << "replica " << r;
  // A partial update, staged then published.
  Sources part(200, {0});
  ASSERT_OK(wharf_replica_group_update(g.group, part.map, nullptr));
  for (int r = 0; r < g.n; ++r) {
    EXPECT_EQ(wharf_container_has_staged(g.cs[size_t(r)]), 1);
    EXPECT_EQ(g.mismatches(size_t(r), 100), 0u) << "staged, not published";
  }
  ASSERT_OK(wharf_replica_group_swap(g.group));
  for (int r = 0; r < g.n; ++r) {
    EXPECT_GT(g.mismatches(size_t(r), 100), 0u) << "embed changed";
    EXPECT_GT(g.mismatches(size_t(r), 200), 0u) << "only embed changed";
  }
  // NCCL did the broadcast: loaded, a communicator per GPU, one grouped call per update.
  wharf_replica_group_stats s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  ASSERT_OK(wharf_replica_group_get_stats(g.group, &s));
  EXPECT_EQ(s.num_replicas, uint32_t(g.n));
  EXPECT_GE(s.nccl_version, 20000) << "the group broadcasts with NCCL";
  EXPECT_EQ(s.num_broadcasts, 2u);
  EXPECT_EQ(s.num_updates, 2u);
  const uint64_t full = uint64_t(kCounts[0] + kCounts[1] + kCounts[2]) * 4;
  EXPECT_EQ(s.source_bytes, full + uint64_t(kCounts[0]) * 4);
  EXPECT_EQ(s.broadcast_bytes, (full + uint64_t(kCounts[0]) * 4) * uint64_t(g.n - 1));
  std::printf("replica group: %d GPU(s), NCCL %d, %llu broadcast rounds\n", g.n, s.nccl_version,
              static_cast<unsigned long long>(s.num_broadcasts));
}

// A kernel of a run begun before the group swap, still queued behind a spin when the update
// and the swap happen, reads the old weights on every GPU; a run begun after reads the new.
TEST_F(ReplicaGpu, RunBegunBeforeTheGroupSwapReadsTheOldWeights) {
  Gpus g;
  ASSERT_OK(g.create());
  ASSERT_NO_FATAL_FAILURE(g.load(300));
  std::vector<wharf_run*> old(size_t(g.n), nullptr);
  for (int r = 0; r < g.n; ++r) {
    ASSERT_CUDA(cudaSetDevice(r));
    ASSERT_CUDA(cudaMemsetAsync(g.bad[size_t(r)], 0, sizeof(unsigned long long), g.streams[size_t(r)]));
    ASSERT_OK(wharf_run_begin(g.cs[size_t(r)], nullptr, g.streams[size_t(r)], &old[size_t(r)]));
    ASSERT_CUDA(launch_spin(g.streams[size_t(r)], 300ull * 1000 * 1000));
    ASSERT_NO_FATAL_FAILURE(g.enqueue_check(size_t(r), old[size_t(r)], 300));
    ASSERT_OK(wharf_run_end(old[size_t(r)]));
  }
  ASSERT_NO_FATAL_FAILURE(g.load(400));
  for (int r = 0; r < g.n; ++r) {
    unsigned long long h = ~0ull;
    ASSERT_CUDA(cudaSetDevice(r));
    ASSERT_CUDA(cudaMemcpyAsync(&h, g.bad[size_t(r)], sizeof h, cudaMemcpyDeviceToHost, g.streams[size_t(r)]));
    ASSERT_CUDA(cudaStreamSynchronize(g.streams[size_t(r)]));
    EXPECT_EQ(h, 0u) << "replica " << r << ": the old run's kernel read the old weights";
    EXPECT_EQ(g.mismatches(size_t(r), 400), 0u) << "replica " << r << ": a new run reads the new weights";
  }
}

// Out of device memory on the last GPU while staging: no GPU changes, and the memory comes back.
TEST_F(ReplicaGpu, ForcedFailureOnOneGpuChangesNoReplica) {
  const uint64_t device_bytes = uint64_t(kCounts[0] + kCounts[1]) * 4;
  std::vector<uint64_t> limits(size_t(gpu_count()), 0);
  limits.back() = device_bytes + uint64_t(kCounts[1]) * 4;  // one generation and one small constant
  Gpus g(limits);
  ASSERT_OK(g.create());
  ASSERT_NO_FATAL_FAILURE(g.load(500));
  ASSERT_OK(wharf_replica_group_free_inactive(g.group));
  std::vector<uint64_t> gens, constants;
  for (int r = 0; r < g.n; ++r) {
    gens.push_back(wharf_container_generation(g.cs[size_t(r)]));
    wharf_memory_stats m;
    std::memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    ASSERT_OK(wharf_runtime_get_memory_stats(g.rts[size_t(r)], &m));
    constants.push_back(m.current[WHARF_MEM_CONSTANTS]);
  }
  Sources next(600);
  St st(wharf_replica_group_update(g.group, next.map, nullptr));
  EXPECT_EQ(st.code(), WHARF_OUT_OF_MEMORY) << st.msg();
  EXPECT_NE(st.msg().find("replica " + std::to_string(g.n - 1)), std::string::npos) << st.msg();
  for (int r = 0; r < g.n; ++r) {
    EXPECT_EQ(wharf_container_generation(g.cs[size_t(r)]), gens[size_t(r)]);
    EXPECT_EQ(wharf_container_has_staged(g.cs[size_t(r)]), 0);
    wharf_memory_stats m;
    std::memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    ASSERT_OK(wharf_runtime_get_memory_stats(g.rts[size_t(r)], &m));
    EXPECT_EQ(m.current[WHARF_MEM_CONSTANTS], constants[size_t(r)]) << "replica " << r;
    EXPECT_EQ(g.mismatches(size_t(r), 500), 0u) << "replica " << r;
  }
  // The group goes on: a partial update fits everywhere.
  Sources part(700, {1});
  ASSERT_OK(wharf_replica_group_update(g.group, part.map, nullptr));
  ASSERT_OK(wharf_replica_group_swap(g.group));
}

// The real NCCL broadcast, with an error reported after it completed (as an asynchronous NCCL
// error would be): every byte NCCL wrote went into staged storage, which is dropped, so no
// replica changes; the next update goes through.
class FailAfterNccl : public wharf::Broadcaster {
 public:
  FailAfterNccl(std::unique_ptr<wharf::Broadcaster> inner, bool* fail) : inner_(std::move(inner)), fail_(fail) {}
  const char* kind() const override { return inner_->kind(); }
  int nccl_version() const override { return inner_->nccl_version(); }
  wharf::Status enqueue(const std::vector<wharf::BroadcastBuffer>& b) override { return inner_->enqueue(b); }
  wharf::Status finish() override {
    WHARF_RETURN_IF_ERROR(inner_->finish());
    if (*fail_) return wharf::DeviceError("injected NCCL failure after the broadcast completed");
    return wharf::Status::Ok();
  }

 private:
  std::unique_ptr<wharf::Broadcaster> inner_;
  bool* fail_;
};

TEST_F(ReplicaGpu, NcclErrorAfterTheBroadcastChangesNoReplica) {
  Gpus g;
  std::shared_ptr<const wharf::NcclApi> nccl;
  wharf::Status st = wharf::nccl_api(&nccl);
  ASSERT_TRUE(st.ok()) << st.message();
  std::unique_ptr<wharf::Broadcaster> inner;
  st = wharf::make_nccl_broadcaster(nccl, g.runtimes(), &inner);
  ASSERT_TRUE(st.ok()) << st.message();
  bool fail = false;
  st = g.create_with(std::make_unique<FailAfterNccl>(std::move(inner), &fail));
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_NO_FATAL_FAILURE(g.load(1000));
  ASSERT_OK(wharf_replica_group_free_inactive(g.group));
  std::vector<uint64_t> gens;
  for (int r = 0; r < g.n; ++r) gens.push_back(wharf_container_generation(g.cs[size_t(r)]));
  fail = true;
  Sources next(1100);
  St up(wharf_replica_group_update(g.group, next.map, nullptr));
  EXPECT_EQ(up.code(), WHARF_DEVICE_ERROR) << up.msg();
  EXPECT_NE(up.msg().find("injected NCCL failure"), std::string::npos) << up.msg();
  EXPECT_NE(up.msg().find("nothing was staged"), std::string::npos) << up.msg();
  for (int r = 0; r < g.n; ++r) {
    EXPECT_EQ(wharf_container_generation(g.cs[size_t(r)]), gens[size_t(r)]);
    EXPECT_EQ(wharf_container_has_staged(g.cs[size_t(r)]), 0);
    EXPECT_EQ(g.mismatches(size_t(r), 1000), 0u) << "replica " << r;
  }
  St sw(wharf_replica_group_swap(g.group));
  EXPECT_EQ(sw.code(), WHARF_FAILED_PRECONDITION) << "nothing staged, the rollback generation was freed";
  fail = false;
  ASSERT_NO_FATAL_FAILURE(g.load(1200));
  for (int r = 0; r < g.n; ++r) EXPECT_EQ(g.mismatches(size_t(r), 1200), 0u) << "replica " << r;
}

// One reader thread per GPU begins runs in a loop while the group is updated and swapped
// (seed 3000 + 10 v for version v). Each run finds its version from embed's first element
// and then checks every device constant against that version with kernels: no run sees a
// mix, and no run begun after a group swap returned sees an older version than it published.
TEST_F(ReplicaGpu, RunsOnEveryGpuDuringGroupUpdatesAndSwapsNeverSeeAMix) {
  Gpus g;
  ASSERT_OK(g.create());
  constexpr int kRounds = 6;
  auto seed_of = [](int v) { return uint32_t(3000 + 10 * v); };
  ASSERT_NO_FATAL_FAILURE(g.load(seed_of(0)));
  std::atomic<int> published{0};
  std::atomic<bool> done{false};
  std::atomic<int> runs{0}, mixes{0}, stale{0}, errors{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < g.n; ++r)
    readers.emplace_back([&, r] {
      const size_t i = size_t(r);
      if (cudaSetDevice(r) != cudaSuccess) {
        errors++;
        return;
      }
      while (!done) {
        const int floor = published.load();
        wharf_run* run = nullptr;
        if (wharf_status* st = wharf_run_begin(g.cs[i], nullptr, g.streams[i], &run)) {
          wharf_status_free(st);
          errors++;
          continue;
        }
        wharf_tensor_view v{};
        std::memset(&v, 0, sizeof v);
        v.struct_size = sizeof v;
        uint32_t head = 0;
        int version = -1;
        if (wharf_status* st = wharf_run_get_tensor(run, kNames[0], &v))
          wharf_status_free(st);
        else if (cudaMemcpyAsync(&head, v.data, sizeof head, cudaMemcpyDeviceToHost, g.streams[i]) == cudaSuccess &&
                 cudaStreamSynchronize(g.streams[i]) == cudaSuccess)
          for (int k = 0; k <= kRounds; ++k)
            if (pattern(seed_of(k), 0) == head) version = k;
        unsigned long long bad = ~0ull;
        if (version >= 0 && cudaMemsetAsync(g.bad[i], 0, sizeof bad, g.streams[i]) == cudaSuccess) {
          for (size_t c = 0; c < 2; ++c) {
            wharf_tensor_view t{};
            std::memset(&t, 0, sizeof t);
            t.struct_size = sizeof t;
            if (wharf_status* st = wharf_run_get_tensor(run, kNames[c], &t))
              wharf_status_free(st);
            else
              launch_check(g.streams[i], static_cast<const uint32_t*>(t.data), uint64_t(kCounts[c]),
                           seed_of(version) + uint32_t(c), g.bad[i]);
          }
          if (cudaMemcpyAsync(&bad, g.bad[i], sizeof bad, cudaMemcpyDeviceToHost, g.streams[i]) != cudaSuccess ||
              cudaStreamSynchronize(g.streams[i]) != cudaSuccess)
            bad = ~0ull;
        }
        if (wharf_status* st = wharf_run_end(run)) {
          wharf_status_free(st);
          errors++;
        }
        if (version < 0 || bad != 0)
          mixes++;
        else if (version < floor)
          stale++;
        runs++;
      }
    });
  for (int v = 1; v <= kRounds; ++v) {
    const int seen = runs.load();
    while (runs.load() == seen && errors.load() == 0) std::this_thread::yield();
    g.load(seed_of(v));
    if (HasFatalFailure()) break;  // the readers are still joined below
    published = v;
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(runs.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mixes.load(), 0);
  EXPECT_EQ(stale.load(), 0);
  for (int r = 0; r < g.n; ++r) EXPECT_EQ(g.mismatches(size_t(r), seed_of(kRounds)), 0u) << "replica " << r;
}

// Two replicas on one GPU are refused before NCCL is asked (it takes one rank per device).
TEST_F(ReplicaGpu, TwoReplicasOnOneGpuAreRefused) {
  wharf_runtime* a = cuda_runtime(0);
  wharf_runtime* b = cuda_runtime(0);
  wharf_container* ca = declare(a, "a");
  wharf_container* cb = declare(b, "b");
  wharf_container* pair[] = {ca, cb};
  wharf_replica_group* g = nullptr;
  St st(wharf_replica_group_create(pair, 2, &g));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(st.msg().find("both on CUDA device 0"), std::string::npos) << st.msg();
  EXPECT_EQ(g, nullptr);
  wharf_container_free(ca);
  wharf_container_free(cb);
  wharf_runtime_free(a);
  wharf_runtime_free(b);
}

// Where NCCL cannot be loaded, a group of two or more GPUs is UNSUPPORTED with the loader's
// reason, and a group of one GPU works without it. Run in a fresh process (the threadsafe
// death-test style re-executes the binary) so no earlier test has loaded NCCL.
TEST_F(ReplicaGpu, WithoutNcclTwoGpusAreUnsupportedAndOneGpuWorks) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The child computes its verdict with every Wharf and CUDA object destroyed (the lambda's
  // scope), then leaves with _exit: std::exit with the group's threads still running raced
  // the process's static destructors (a SIGSEGV seen once on the H100).
  auto verdict = []() -> int {
    setenv("WHARF_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    Gpus g;
    St st(g.create());
    if (g.n >= 2) {
      const bool ok = st.code() == WHARF_UNSUPPORTED &&
                      st.msg().find("/nonexistent/libnccl.so.2") != std::string::npos &&
                      st.msg().find("No such file") != std::string::npos;
      if (!ok) std::fprintf(stderr, "unexpected: %s\n", st.msg().c_str());
      return ok ? 0 : 1;
    }
    if (st.code() != WHARF_OK) {
      std::fprintf(stderr, "one GPU without NCCL: %s\n", st.msg().c_str());
      return 1;
    }
    g.load(800);
    wharf_replica_group_stats s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    St ss(wharf_replica_group_get_stats(g.group, &s));
    return s.nccl_version == 0 && g.mismatches(0, 800) == 0 ? 0 : 1;
  };
  EXPECT_EXIT(
      {
        const int code = verdict();
        std::fflush(nullptr);
        _exit(code);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(ReplicaGpu, BroadcastBetweenTwoGpus) {
  if (gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs; this machine has " << gpu_count();
  // Every replica, not only replica 0, holds the sources' bytes after a group update from
  // pageable memory, over several rounds (NCCL communicators reused).
  Gpus g;
  ASSERT_OK(g.create());
  for (uint32_t seed = 900; seed < 905; ++seed) {
    ASSERT_NO_FATAL_FAILURE(g.load(seed));
    for (int r = 0; r < g.n; ++r) EXPECT_EQ(g.mismatches(size_t(r), seed), 0u) << "replica " << r << " seed " << seed;
  }
}

}  // namespace
