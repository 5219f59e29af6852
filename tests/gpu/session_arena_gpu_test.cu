// SPDX-License-Identifier: Apache-2.0
// State arenas and batched runs on the CUDA backend (issue 26), through the public C API:
// a batched kernel reads the slot indices Wharf put on the device and checks, then writes,
// only its rows' slots of the arena; a host mirror of every session says what each slot
// must hold. Randomized joins, leaves, forks, resets and batched steps on a stream of the
// test's own; a freed session's slot reused while its last kernel still runs.
//
// Every check is a kernel on the run's stream: the counts are what the device saw there.
#define WHARF_EXPERIMENTAL 1
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "test_kernels.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::pattern;
using wharf_test::St;

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

constexpr int64_t kElems = 4096;  // uint32 per session slot of "kv"
constexpr int kThreads = 256;

// Row r (one block) of a batched step: its slot is slots[r]; every element must hold
// expect(expect_seed[r], i) (seed 0: zeros, the initial value); then it writes
// pattern(new_seed[r], i) unless new_seed[r] is 0. Mismatches are added to *bad.
__global__ void batched_step(uint32_t* arena, const int64_t* slots, const uint32_t* expect_seed,
                             const uint32_t* new_seed, unsigned long long* bad) {
  const int r = blockIdx.x;
  uint32_t* row = arena + slots[r] * kElems;
  unsigned long long miss = 0;
  for (int64_t i = threadIdx.x; i < kElems; i += blockDim.x) {
    const uint32_t want = expect_seed[r] == 0 ? 0u : pattern(expect_seed[r], uint64_t(i));
    if (row[i] != want) ++miss;
    if (new_seed[r] != 0) row[i] = pattern(new_seed[r], uint64_t(i));
  }
  if (miss) atomicAdd(bad, miss);
}

struct SessionArenaGpuTest : ::testing::Test {
  wharf_runtime* rt = nullptr;
  std::vector<wharf_container*> containers;
  cudaStream_t stream = nullptr;
  unsigned long long* bad = nullptr;
  uint32_t* d_seeds = nullptr;  // expect[cap], then new[cap]
  int64_t w_shape[1] = {4};
  int64_t kv_shape[1] = {kElems};
  std::string why;

  void SetUp() override {
    rt = wharf_test::make_runtime(WHARF_BACKEND_CUDA, {}, &why);
    if (!rt) GTEST_SKIP() << "no CUDA runtime here: " << why;
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ASSERT_CUDA(cudaMalloc(&bad, sizeof *bad));
    ASSERT_CUDA(cudaMemset(bad, 0, sizeof *bad));
    ASSERT_CUDA(cudaMalloc(&d_seeds, 2 * 64 * sizeof(uint32_t)));
    ASSERT_CUDA(cudaDeviceSynchronize());
  }
  void TearDown() override {
    if (stream) cudaStreamSynchronize(stream);
    for (wharf_container* c : containers) wharf_container_free(c);
    if (bad) cudaFree(bad);
    if (d_seeds) cudaFree(d_seeds);
    if (stream) cudaStreamDestroy(stream);
    wharf_runtime_free(rt);
  }
  wharf_container* make(const char* name, uint32_t capacity) {
    wharf_state_decl kv = {sizeof(wharf_state_decl), "kv", WHARF_DTYPE_U32, 1, kv_shape, nullptr};
    wharf_constant_decl cd = wharf_test::f32_decl("w", w_shape);
    wharf_container_options co;
    wharf_container_options_init(&co);
    co.name = name;
    co.constants = &cd;
    co.num_constants = 1;
    co.states = &kv;
    co.num_states = 1;
    co.session_capacity = capacity;
    wharf_container* c = nullptr;
    St st(wharf_container_create(rt, &co, &c));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    if (!c) return nullptr;
    containers.push_back(c);
    float w[4] = {1, 1, 1, 1};
    wharf_constant_map* map = wharf_test::map_of("w", w, w_shape);
    St up(wharf_container_update(c, map, nullptr));
    wharf_constant_map_free(map);
    EXPECT_EQ(up.code(), WHARF_OK) << up.msg();
    St sw(wharf_container_swap(c));
    EXPECT_EQ(sw.code(), WHARF_OK) << sw.msg();
    return c;
  }
  wharf_session* session(wharf_container* c) {
    wharf_session* s = nullptr;
    St st(wharf_session_create(rt, &c, 1, nullptr, &s));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return s;
  }
  // One batched step on `on`: rows check expect[r] and write next[r] (0: check only).
  void step(wharf_container* c, const std::vector<wharf_session*>& rows, const std::vector<uint32_t>& expect,
            const std::vector<uint32_t>& next, cudaStream_t on) {
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin_batch(c, rows.data(), rows.size(), on, &run));
    wharf_tensor_view kv, slots;
    std::memset(&kv, 0, sizeof kv);
    std::memset(&slots, 0, sizeof slots);
    kv.struct_size = slots.struct_size = sizeof kv;
    ASSERT_OK(wharf_run_get_tensor(run, "kv", &kv));
    ASSERT_OK(wharf_run_get_slot_indices(run, &slots));
    ASSERT_EQ(kv.device_type, WHARF_DEVICE_CUDA);
    ASSERT_EQ(slots.device_type, WHARF_DEVICE_CUDA);
    ASSERT_EQ(kv.ndim, 2);
    ASSERT_EQ(slots.shape[0], int64_t(rows.size()));
    // Seeds through the run's stream (pageable: staged before the call returns).
    std::vector<uint32_t> seeds(128, 0);
    std::copy(expect.begin(), expect.end(), seeds.begin());
    std::copy(next.begin(), next.end(), seeds.begin() + 64);
    ASSERT_CUDA(cudaMemcpyAsync(d_seeds, seeds.data(), seeds.size() * 4, cudaMemcpyHostToDevice, on));
    batched_step<<<unsigned(rows.size()), kThreads, 0, on>>>(
        static_cast<uint32_t*>(kv.data), static_cast<const int64_t*>(slots.data), d_seeds, d_seeds + 64, bad);
    ASSERT_CUDA(cudaGetLastError());
    ASSERT_OK(wharf_run_end(run));
  }
  unsigned long long mismatches() {
    unsigned long long v = ~0ull;
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(&v, bad, sizeof v, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
};

TEST_F(SessionArenaGpuTest, BatchedKernelsSeeOnlyTheirSessionsUnderJoinsLeavesForksAndResets) {
  constexpr uint32_t kCap = 32;
  wharf_container* c = make("m", kCap);
  ASSERT_NE(c, nullptr);
  std::map<wharf_session*, uint32_t> live;  // session -> the seed its slot holds (0: zeros)
  std::mt19937 rng(2026);
  uint32_t next_seed = 1;
  auto pick = [&] {
    auto it = live.begin();
    std::advance(it, std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng));
    return it->first;
  };
  for (int s = 0; s < 1500; ++s) {
    const int op = std::uniform_int_distribution<int>(0, 99)(rng);
    if (live.empty() || (op < 15 && live.size() < kCap)) {
      wharf_session* x = session(c);
      ASSERT_NE(x, nullptr);
      live[x] = 0;
    } else if (op < 25) {
      wharf_session* x = pick();
      wharf_session_free(x);  // its slot may be taken at the next join, its kernel still queued
      live.erase(x);
    } else if (op < 33 && live.size() < kCap) {
      wharf_session* x = pick();
      wharf_session* f = nullptr;
      ASSERT_OK(wharf_session_fork(x, &f));
      live[f] = live[x];
    } else if (op < 40) {
      wharf_session* x = pick();
      ASSERT_OK(wharf_session_reset(x));
      live[x] = 0;
    } else {
      std::vector<wharf_session*> rows;
      for (auto& e : live)
        if (std::uniform_int_distribution<int>(0, 2)(rng) > 0) rows.push_back(e.first);
      if (rows.empty()) continue;
      std::shuffle(rows.begin(), rows.end(), rng);
      std::vector<uint32_t> expect, next;
      for (wharf_session* x : rows) {
        expect.push_back(live[x]);
        next.push_back(next_seed);
        live[x] = next_seed++;
      }
      ASSERT_NO_FATAL_FAILURE(step(c, rows, expect, next, stream));
    }
  }
  // Every live session, checked once more (no writes).
  std::vector<wharf_session*> rows;
  std::vector<uint32_t> expect, none;
  for (auto& e : live) {
    rows.push_back(e.first);
    expect.push_back(e.second);
    none.push_back(0);
  }
  if (!rows.empty()) ASSERT_NO_FATAL_FAILURE(step(c, rows, expect, none, stream));
  EXPECT_EQ(mismatches(), 0u) << "a kernel found a slot that was not what its session last wrote";
  for (auto& e : live) wharf_session_free(e.first);
}

// Capacity 1: the slot of a session freed while its last kernel (a long spin, then a write)
// is still running is taken at once by a new session, whose first run on another stream
// must see its initial zeros: the initialisation waits for the old kernel on the device.
TEST_F(SessionArenaGpuTest, AReusedSlotIsInitialisedAfterTheOldSessionsLastKernel) {
  wharf_container* c = make("m", 1);
  ASSERT_NE(c, nullptr);
  wharf_session* a = session(c);
  ASSERT_CUDA(wharf_test::launch_spin(stream, 200ull * 1000 * 1000));  // 200 ms ahead of a's write
  ASSERT_NO_FATAL_FAILURE(step(c, {a}, {0}, {77}, stream));
  wharf_session_free(a);  // returns at once; the spin and the write are still queued
  wharf_session* b = session(c);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(wharf_session_slot(b), 0);
  cudaStream_t other = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  ASSERT_NO_FATAL_FAILURE(step(c, {b}, {0}, {0}, other));
  EXPECT_EQ(mismatches(), 0u) << "the new session saw the old session's late write, or not its zeros";
  wharf_session_free(b);
  cudaStreamDestroy(other);
}

}  // namespace
