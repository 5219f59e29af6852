// SPDX-License-Identifier: Apache-2.0
// State arenas and batched runs (issue 26), on the host backend: one allocation per state
// for up to S sessions, slots taken and returned in O(1) without waiting for the device,
// slot reuse ordered after the previous user's last work, reset/fork touching only their
// slot, batched runs all or nothing over busy sessions and pinned to one generation, and a
// randomized run of joins, leaves, forks, resets and batched steps checking isolation.
#define WHARF_EXPERIMENTAL 1
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/handles.h"  // C++ layer: a second stream, test hooks
#include "common/test_support.h"
#include "core/test_hooks.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

constexpr int kH = 8;    // "h": float[8], initial 0.5
constexpr int kKv = 16;  // "kv": float[16], zeros

struct SessionArenaTest : ::testing::Test {
  wharf_runtime* rt = nullptr;
  std::vector<wharf_container*> containers;
  int64_t w_shape[1] = {4};
  int64_t h_shape[1] = {kH};
  int64_t kv_shape[1] = {kKv};
  std::vector<float> init_h = std::vector<float>(kH, 0.5f);
  wharf_tensor_view h_init{};

  void SetUp() override {
    rt = wharf_test::make_runtime(WHARF_BACKEND_HOST, {0, 1, 1 << 20});
    ASSERT_NE(rt, nullptr);
    h_init = wharf_tensor_view{
        sizeof(wharf_tensor_view), 0, init_h.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, h_shape, nullptr};
  }
  void TearDown() override {
    for (wharf_container* c : containers) wharf_container_free(c);
    wharf_runtime_free(rt);
  }

  // A container "name" with constant "w" (= w_value, active) and states "h", "kv".
  wharf_container* make(const char* name, uint32_t capacity, uint64_t budget = 0, const wharf_container* join = nullptr,
                        wharf_code want = WHARF_OK, const char* fragment = "") {
    wharf_state_decl states[2] = {{sizeof(wharf_state_decl), "h", WHARF_DTYPE_F32, 1, h_shape, &h_init},
                                  {sizeof(wharf_state_decl), "kv", WHARF_DTYPE_F32, 1, kv_shape, nullptr}};
    wharf_constant_decl cd = wharf_test::f32_decl("w", w_shape);
    wharf_container_options co;
    wharf_container_options_init(&co);
    co.name = name;
    co.constants = &cd;
    co.num_constants = 1;
    co.states = states;
    co.num_states = 2;
    co.max_session_bytes = budget;
    co.session_capacity = capacity;
    co.state_arena_of = join;
    wharf_container* c = nullptr;
    St st(wharf_container_create(rt, &co, &c));
    EXPECT_EQ(st.code(), want) << st.msg();
    EXPECT_TRUE(st.has(fragment)) << st.msg() << "\nexpected: " << fragment;
    if (!c) return nullptr;
    containers.push_back(c);
    load(c, 1.0f);
    return c;
  }
  void load(wharf_container* c, float value) {
    float w[4] = {value, value, value, value};
    wharf_constant_map* map = wharf_test::map_of("w", w, w_shape);
    St up(wharf_container_update(c, map, nullptr));
    wharf_constant_map_free(map);
    ASSERT_EQ(up.code(), WHARF_OK) << up.msg();
    ASSERT_OK(wharf_container_swap(c));
  }
  wharf_session* session(std::vector<wharf_container*> cs, wharf_code want = WHARF_OK, const char* fragment = "") {
    wharf_session* s = nullptr;
    St st(wharf_session_create(rt, cs.data(), cs.size(), nullptr, &s));
    EXPECT_EQ(st.code(), want) << st.msg();
    EXPECT_TRUE(st.has(fragment)) << st.msg() << "\nexpected: " << fragment;
    return s;
  }
  wharf_run* batch(wharf_container* c, std::vector<wharf_session*> ss) {
    wharf_run* run = nullptr;
    St st(wharf_run_begin_batch(c, ss.data(), ss.size(), nullptr, &run));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return run;
  }
  wharf_tensor_view view(wharf_run* run, const char* fqn) {
    wharf_tensor_view v;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    St st(wharf_run_get_tensor(run, fqn, &v));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return v;
  }
  float* f32(wharf_run* run, const char* fqn) { return static_cast<float*>(view(run, fqn).data); }
  std::vector<int64_t> slots(wharf_run* run) {
    wharf_tensor_view v;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    St st(wharf_run_get_slot_indices(run, &v));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    if (st.code() != WHARF_OK) return {};
    EXPECT_EQ(v.dtype, WHARF_DTYPE_I64);
    EXPECT_EQ(v.ndim, 1);
    EXPECT_NE(v.flags & WHARF_VIEW_READ_ONLY, 0u);
    const int64_t* p = static_cast<const int64_t*>(v.data);
    return std::vector<int64_t>(p, p + v.shape[0]);
  }
  wharf_state_arena_stats stats(wharf_container* c) {
    wharf_state_arena_stats s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    St st(wharf_container_get_state_arena_stats(c, &s));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return s;
  }
  uint64_t state_bytes_held() {
    wharf_memory_stats m;
    std::memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    St st(wharf_runtime_get_memory_stats(rt, &m));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return m.current[WHARF_MEM_STATE];
  }
};

constexpr uint64_t kSessionBytes = (kH + kKv) * sizeof(float);

TEST_F(SessionArenaTest, OneAllocationPerStateWithFixedSlotAddresses) {
  wharf_container* c = make("m", 4);
  wharf_state_arena_stats s0 = stats(c);
  EXPECT_EQ(s0.num_slots, 4u);
  EXPECT_EQ(s0.num_slots_used, 0u);
  EXPECT_EQ(s0.num_slots_free, 4u);
  EXPECT_EQ(s0.bytes, 4 * kSessionBytes);
  const uint64_t held = state_bytes_held();
  wharf_session* a = session({c});
  wharf_session* b = session({c});
  EXPECT_EQ(wharf_session_slot(a), 0);
  EXPECT_EQ(wharf_session_slot(b), 1);
  EXPECT_EQ(stats(c).num_slots_used, 2u);
  wharf_run* rb = nullptr;
  ASSERT_OK(wharf_run_begin(c, b, nullptr, &rb));  // a run of one arena session: its slot
  wharf_tensor_view kv_b = view(rb, "kv");
  EXPECT_EQ(kv_b.ndim, 1);
  EXPECT_EQ(kv_b.shape[0], kKv);
  EXPECT_EQ(slots(rb), std::vector<int64_t>({1}));
  EXPECT_EQ(wharf_run_num_sessions(rb), 1u);
  ASSERT_OK(wharf_run_end(rb));
  wharf_run* run = batch(c, {b, a});
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(wharf_run_num_sessions(run), 2u);
  wharf_tensor_view kv = view(run, "kv");
  ASSERT_EQ(kv.ndim, 2);
  EXPECT_EQ(kv.shape[0], 4);
  EXPECT_EQ(kv.shape[1], kKv);
  EXPECT_EQ(kv.flags & WHARF_VIEW_READ_ONLY, 0u);
  EXPECT_EQ(kv_b.data, static_cast<char*>(kv.data) + 1 * kKv * sizeof(float)) << "slot 1 is row 1 of the arena";
  EXPECT_EQ(slots(run), std::vector<int64_t>({1, 0}));
  wharf_session* g = nullptr;
  EXPECT_CODE(wharf_run_get_session(run, &g), WHARF_FAILED_PRECONDITION);
  ASSERT_OK(wharf_run_end(run));
  // Sessions, their first runs and batched runs allocate no state memory.
  EXPECT_EQ(state_bytes_held(), held);
  wharf_session_free(a);
  wharf_session_free(b);
  EXPECT_EQ(stats(c).num_slots_used, 0u);
  // Without an arena: no slot, no slot tensor, no stats.
  wharf_container* plain = make("plain", 0);
  wharf_session* p = session({plain});
  EXPECT_EQ(wharf_session_slot(p), -1);
  ASSERT_OK(wharf_run_begin(plain, p, nullptr, &run));
  wharf_tensor_view v;
  std::memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  EXPECT_CODE(wharf_run_get_slot_indices(run, &v), WHARF_FAILED_PRECONDITION);
  ASSERT_OK(wharf_run_end(run));
  wharf_state_arena_stats st;
  std::memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  EXPECT_CODE(wharf_container_get_state_arena_stats(plain, &st), WHARF_FAILED_PRECONDITION);
  wharf_session_free(p);
}

// What a method compiled over the whole arena binds (Model, Run::arena_state_at): the whole
// arena at its fixed address in a run of one arena session as in a batched run, and the run's
// slots on the host; a run without an arena has none.
TEST_F(SessionArenaTest, EveryRunOfArenaSessionsGivesAMethodTheWholeArena) {
  wharf_container* c = make("m", 4);
  wharf_session* a = session({c});
  wharf_session* b = session({c});
  wharf_run* all = batch(c, {b, a});
  ASSERT_NE(all, nullptr);
  const wharf_tensor_view h = view(all, "h");
  wharf::BoundTensor t;
  ASSERT_TRUE(all->run->arena_state_at(0, &t).ok());  // state 0 is "h"
  EXPECT_EQ(t.data, h.data);
  ASSERT_EQ(*t.shape, std::vector<int64_t>({4, kH}));
  EXPECT_EQ(t.nbytes, 4u * kH * sizeof(float));
  EXPECT_FALSE(t.read_only);
  EXPECT_EQ(all->run->slots(), std::vector<int64_t>({1, 0}));
  ASSERT_OK(wharf_run_end(all));
  wharf_run* one = nullptr;
  ASSERT_OK(wharf_run_begin(c, b, nullptr, &one));
  wharf::BoundTensor u;
  ASSERT_TRUE(one->run->arena_state_at(0, &u).ok());
  EXPECT_EQ(u.data, h.data) << "one address for the arena's life, whatever the run's sessions";
  EXPECT_EQ(*u.shape, *t.shape);
  EXPECT_EQ(one->run->slots(), std::vector<int64_t>({1}));
  EXPECT_EQ(one->run->arena_state_at(2, &u).code(), wharf::Code::kInvalidArgument);
  ASSERT_OK(wharf_run_end(one));
  wharf_session_free(a);
  wharf_session_free(b);
  wharf_container* plain = make("plain", 0);
  wharf_session* p = session({plain});
  ASSERT_OK(wharf_run_begin(plain, p, nullptr, &one));
  const wharf::Status st = one->run->arena_state_at(0, &u);
  EXPECT_EQ(st.code(), wharf::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("'h'"), std::string::npos) << st.message();
  EXPECT_TRUE(one->run->slots().empty());
  ASSERT_OK(wharf_run_end(one));
  wharf_session_free(p);
}

TEST_F(SessionArenaTest, CapacityAndBudgetErrorsNameTheirLimitAndHoldNothing) {
  wharf_container* c = make("m", 2);
  wharf_session* a = session({c});
  wharf_session* b = session({c});
  session({c}, WHARF_RESOURCE_EXHAUSTED, "session_capacity 2");
  wharf_session* f = nullptr;
  ASSERT_OK(wharf_session_reset(a));
  {
    St st(wharf_session_fork(a, &f));
    EXPECT_EQ(st.code(), WHARF_RESOURCE_EXHAUSTED) << st.msg();
    EXPECT_TRUE(st.has("session_capacity 2")) << st.msg();
  }
  EXPECT_EQ(stats(c).num_slots_used, 2u);
  wharf_session_free(b);
  wharf_session* b2 = session({c});  // the freed slot is taken again
  EXPECT_EQ(wharf_session_slot(b2), 1);
  wharf_session_free(b2);
  wharf_session_free(a);

  // The container budget counts each session's own bytes, as without an arena; a refused
  // session takes no slot.
  wharf_container* d = make("budgeted", 4, 2 * kSessionBytes);
  wharf_session* x = session({d});
  wharf_session* y = session({d});
  session({d}, WHARF_RESOURCE_EXHAUSTED, "max_session_bytes");
  EXPECT_EQ(stats(d).num_slots_used, 2u);
  wharf_session_options so;
  wharf_session_options_init(&so);
  so.max_state_bytes = kSessionBytes - 1;
  wharf_session* z = nullptr;
  wharf_session_free(y);
  EXPECT_CODE(wharf_session_create(rt, &d, 1, &so, &z), WHARF_RESOURCE_EXHAUSTED);
  EXPECT_EQ(stats(d).num_slots_used, 1u);
  wharf_session_free(x);

  // Arena declarations: not both ways, no arena to join, a capacity of a container without states.
  make("both", 2, 0, c, WHARF_INVALID_ARGUMENT, "both a session_capacity");
  wharf_container* plain = make("plain", 0);
  make("joiner", 0, 0, plain, WHARF_INVALID_ARGUMENT, "has no state arena");
  // More sessions than slots in one batch.
  wharf_session* s1 = session({c});
  wharf_session* s2 = session({c});
  std::vector<wharf_session*> three = {s1, s2, s1};
  wharf_run* run = nullptr;
  EXPECT_FAILS(wharf_run_begin_batch(c, three.data(), 3, nullptr, &run), WHARF_INVALID_ARGUMENT, "session_capacity 2");
  wharf_session_free(s1);
  wharf_session_free(s2);
}

TEST_F(SessionArenaTest, ContainersOfOneArenaShareASlotAndArenasDoNotMix) {
  wharf_container* prefill = make("prefill", 3);
  wharf_container* decode = make("decode", 0, 0, prefill);
  ASSERT_NE(decode, nullptr);
  wharf_session* s = session({prefill, decode});
  EXPECT_EQ(stats(prefill).num_slots_used, 1u);
  EXPECT_EQ(stats(decode).num_slots_used, 1u) << "the same arena";
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(prefill, s, nullptr, &run));
  float* kv = f32(run, "kv");
  for (int i = 0; i < kKv; ++i) kv[i] = float(i);
  ASSERT_OK(wharf_run_end(run));
  ASSERT_OK(wharf_run_begin(decode, s, nullptr, &run));
  EXPECT_EQ(f32(run, "kv"), kv);
  EXPECT_EQ(f32(run, "kv")[5], 5.0f);
  ASSERT_OK(wharf_run_end(run));
  wharf_session_free(s);
  // A different arena, or per-session buffers, in one session: refused naming both.
  wharf_container* other = make("other", 2);
  wharf_container* plain = make("plain", 0);
  session({prefill, other}, WHARF_INVALID_ARGUMENT, "'other'");
  session({prefill, plain}, WHARF_INVALID_ARGUMENT, "'plain'");
  EXPECT_EQ(stats(prefill).num_slots_used, 0u);
  // A joiner declaring a state the arena lacks, or another shape.
  int64_t other_shape[1] = {3};
  wharf_state_decl bad = {sizeof(wharf_state_decl), "kv", WHARF_DTYPE_F32, 1, other_shape, nullptr};
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.name = "mismatch";
  co.states = &bad;
  co.num_states = 1;
  co.state_arena_of = prefill;
  wharf_container* m = nullptr;
  EXPECT_FAILS(wharf_container_create(rt, &co, &m), WHARF_INVALID_ARGUMENT, "'prefill'");
  wharf_state_decl unknown = {sizeof(wharf_state_decl), "conv", WHARF_DTYPE_F32, 1, other_shape, nullptr};
  co.states = &unknown;
  EXPECT_FAILS(wharf_container_create(rt, &co, &m), WHARF_INVALID_ARGUMENT, "not held by the state arena");
  // A batch needs an arena and sessions of it.
  wharf_session* p = session({plain});
  EXPECT_FAILS(wharf_run_begin_batch(plain, &p, 1, nullptr, &run), WHARF_FAILED_PRECONDITION, "no state arena");
  wharf_session* o = session({other});
  EXPECT_FAILS(wharf_run_begin_batch(prefill, &o, 1, nullptr, &run), WHARF_INVALID_ARGUMENT, "sessions[0]");
  wharf_session_free(p);
  wharf_session_free(o);
}

// The slot of a freed session goes to the next one at once (no wait), but the new session's
// first work is ordered after the old one's last work on the device. The old session's last
// run is on a second stream that is parked; its "kernel" writes the slot when the park ends.
// `shared`: A's last run ends as a batched run's does (one event recorded for the batch,
// handed to the session), else with the session's own event.
void reuse_after_parked_last_user(SessionArenaTest& t, bool shared);

TEST_F(SessionArenaTest, ASlotIsReusedOnlyAfterTheDeviceFinishedItsLastUser) {
  reuse_after_parked_last_user(*this, false);
}

TEST_F(SessionArenaTest, ASlotIsReusedOnlyAfterTheDeviceFinishedItsLastBatch) {
  reuse_after_parked_last_user(*this, true);
}

void reuse_after_parked_last_user(SessionArenaTest& t, bool shared) {
  wharf_runtime* rt = t.rt;
  auto& containers = t.containers;
  auto stats = [&](wharf_container* c) { return t.stats(c); };
  auto session = [&](std::vector<wharf_container*> cs) { return t.session(cs); };
  auto f32 = [&](wharf_run* run, const char* fqn) { return t.f32(run, fqn); };
  wharf_container* c = t.make("m", 1);
  std::shared_ptr<wharf::Container> cc = containers[0]->c;
  std::unique_ptr<wharf::Stream> other;
  ASSERT_TRUE(rt->rt->device().create_stream(&other).ok());
  std::shared_ptr<wharf::Session> a;
  ASSERT_TRUE(wharf::Session::create(rt->rt, {cc}, wharf::SessionOptions{}, &a).ok());
  ASSERT_TRUE(a->begin_run(*other).ok());
  wharf::StateView kv;
  ASSERT_TRUE(a->find("kv", &kv).ok());
  float* slot = static_cast<float*>(kv.data);
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  // A's device work still running: parked, then it writes A's slot.
  ASSERT_TRUE(other
                  ->enqueue_host([open, slot] {
                    open.wait();
                    for (int i = 0; i < kKv; ++i) slot[i] = 9.0f;
                  })
                  .ok());
  if (shared) {
    std::unique_ptr<wharf::Event> done;
    ASSERT_TRUE(rt->rt->device().create_event(&done).ok());
    std::shared_ptr<wharf::Event> batch_done(std::move(done));
    ASSERT_TRUE(other->record(*batch_done).ok());
    a->end_run_shared(batch_done);
  } else {
    ASSERT_TRUE(a->end_run(*other).ok());
  }
  // Freeing does not wait for the parked work, and the slot is free at once.
  wharf_test::finishes_within(std::chrono::seconds(5), "freeing a session whose last run is parked",
                              [&] { a.reset(); });
  EXPECT_EQ(stats(c).num_slots_used, 0u);
  wharf_session* b = nullptr;
  wharf_test::finishes_within(std::chrono::seconds(5), "creating a session over a parked slot",
                              [&] { b = session({c}); });
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(wharf_session_slot(b), 0);
  // B's first run initialises the slot on the runtime's stream, after A's last work.
  std::atomic<bool> begun{false};
  wharf_run* run = nullptr;
  std::thread t([&] {
    St st(wharf_run_begin(c, b, nullptr, &run));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    begun = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(begun.load()) << "the new session's first run began while the slot's last user was still running";
  gate.set_value();
  t.join();
  ASSERT_NE(run, nullptr);
  float* mine = f32(run, "kv");
  EXPECT_EQ(mine, slot);
  for (int i = 0; i < kKv; ++i) EXPECT_EQ(mine[i], 0.0f) << "kv[" << i << "]: the old session's late write survived";
  for (int i = 0; i < kH; ++i) EXPECT_EQ(f32(run, "h")[i], 0.5f);
  ASSERT_OK(wharf_run_end(run));
  wharf_session_free(b);
  ASSERT_TRUE(other->synchronize().ok());
}

TEST_F(SessionArenaTest, ThousandsOfSessionsTakeAndReturnSlotsWithoutAllocating) {
  constexpr uint32_t kN = 4096;
  wharf_container* c = make("m", kN);
  const uint64_t held = state_bytes_held();
  std::vector<wharf_session*> ss(kN);
  const auto t0 = std::chrono::steady_clock::now();
  for (int round = 0; round < 2; ++round) {
    std::set<int64_t> seen;
    for (uint32_t i = 0; i < kN; ++i) {
      ss[i] = session({c});
      ASSERT_NE(ss[i], nullptr);
      seen.insert(wharf_session_slot(ss[i]));
    }
    EXPECT_EQ(seen.size(), kN) << "every session has a slot of its own";
    EXPECT_EQ(*seen.rbegin(), int64_t(kN - 1));
    session({c}, WHARF_RESOURCE_EXHAUSTED, "session_capacity 4096");
    EXPECT_EQ(state_bytes_held(), held) << "a session of an arena allocates nothing";
    for (uint32_t i = 0; i < kN; i += 2) wharf_session_free(ss[i]);  // free in any order
    for (uint32_t i = 1; i < kN; i += 2) wharf_session_free(ss[i]);
    EXPECT_EQ(stats(c).num_slots_used, 0u);
  }
  // Generous: a free list is microseconds per session; a scan or a device wait per
  // session would be far slower on this scale.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

// A batched host "kernel": for each row, write `value + row` into the row's slot of "kv".
void write_rows(float* kv, const std::vector<int64_t>& slots, float value) {
  for (size_t r = 0; r < slots.size(); ++r)
    for (int i = 0; i < kKv; ++i) kv[slots[r] * kKv + i] = value + float(r);
}

TEST_F(SessionArenaTest, ResetAndForkTouchOnlyTheirSlot) {
  wharf_container* c = make("m", 4);
  wharf_session* a = session({c});
  wharf_session* b = session({c});
  wharf_session* x = session({c});
  wharf_run* run = batch(c, {a, b, x});
  ASSERT_NE(run, nullptr);
  float* kv = f32(run, "kv");
  write_rows(kv, slots(run), 10.0f);  // a: 10, b: 11, x: 12
  float* h = f32(run, "h");
  for (int64_t k : slots(run)) h[k * kH] = 3.0f;
  ASSERT_OK(wharf_run_end(run));
  ASSERT_OK(wharf_session_reset(b));
  wharf_session* f = nullptr;
  ASSERT_OK(wharf_session_fork(a, &f));
  EXPECT_EQ(wharf_session_slot(f), 3);
  run = batch(c, {a, b, x, f});
  ASSERT_NE(run, nullptr);
  kv = f32(run, "kv");
  h = f32(run, "h");
  for (int i = 0; i < kKv; ++i) {
    EXPECT_EQ(kv[0 * kKv + i], 10.0f) << "a";
    EXPECT_EQ(kv[1 * kKv + i], 0.0f) << "b, reset";
    EXPECT_EQ(kv[2 * kKv + i], 12.0f) << "x, untouched by b's reset";
    EXPECT_EQ(kv[3 * kKv + i], 10.0f) << "the fork of a";
  }
  EXPECT_EQ(h[0 * kH], 3.0f);
  EXPECT_EQ(h[1 * kH], 0.5f) << "b's initial value";
  EXPECT_EQ(h[2 * kH], 3.0f);
  EXPECT_EQ(h[3 * kH], 3.0f);
  write_rows(kv + 3 * kKv, {0}, 40.0f);  // the fork writes its own slot
  ASSERT_OK(wharf_run_end(run));
  ASSERT_OK(wharf_session_reset(f));
  run = batch(c, {a, f});
  kv = f32(run, "kv");
  EXPECT_EQ(kv[0], 10.0f) << "a is untouched by its fork's write and reset";
  EXPECT_EQ(kv[3 * kKv], 0.0f);
  ASSERT_OK(wharf_run_end(run));
  for (wharf_session* s : {a, b, x, f}) wharf_session_free(s);
}

TEST_F(SessionArenaTest, ABatchIsAllOrNothingOverBusySessions) {
  wharf_container* c = make("m", 4);
  wharf_session* a = session({c});
  wharf_session* b = session({c});
  wharf_session* x = session({c});
  wharf_run* rb = nullptr;
  ASSERT_OK(wharf_run_begin(c, b, nullptr, &rb));
  std::vector<wharf_session*> abx = {a, b, x};
  wharf_run* run = nullptr;
  EXPECT_FAILS(wharf_run_begin_batch(c, abx.data(), 3, nullptr, &run), WHARF_BUSY, "sessions[1]");
  EXPECT_EQ(run, nullptr);
  // Nothing was held: a and x run, reset and fork as usual.
  wharf_run* r = nullptr;
  ASSERT_OK(wharf_run_begin(c, a, nullptr, &r));
  ASSERT_OK(wharf_run_end(r));
  ASSERT_OK(wharf_session_reset(x));
  ASSERT_OK(wharf_run_end(rb));
  run = batch(c, abx);
  ASSERT_NE(run, nullptr);
  // While the batch is open every one of its sessions is busy, for anything.
  EXPECT_CODE(wharf_run_begin(c, x, nullptr, &r), WHARF_BUSY);
  EXPECT_CODE(wharf_session_reset(a), WHARF_BUSY);
  wharf_session* f = nullptr;
  EXPECT_CODE(wharf_session_fork(b, &f), WHARF_BUSY);
  EXPECT_EQ(stats(c).num_slots_used, 3u) << "the refused fork returned its slot";
  std::vector<wharf_session*> xa = {x, a};
  wharf_run* other = nullptr;
  EXPECT_FAILS(wharf_run_begin_batch(c, xa.data(), 2, nullptr, &other), WHARF_BUSY, "sessions[0]");
  ASSERT_OK(wharf_run_end(run));
  // The same session twice is refused, naming both positions.
  std::vector<wharf_session*> twice = {a, x, a};
  EXPECT_FAILS(wharf_run_begin_batch(c, twice.data(), 3, nullptr, &run), WHARF_INVALID_ARGUMENT,
               "sessions[0] and sessions[2]");
  ASSERT_OK(wharf_run_begin(c, a, nullptr, &r));  // and left nothing held
  ASSERT_OK(wharf_run_end(r));
  for (wharf_session* s : {a, b, x}) wharf_session_free(s);
}

// A batch pins one generation for all its rows: a swap (and the old generation's release)
// while the batch is being begun does not reach it; the next batch sees the new weights.
TEST_F(SessionArenaTest, ABatchKeepsTheGenerationItPinnedAcrossAConcurrentSwap) {
  wharf_container* c = make("m", 4);
  wharf_session* a = session({c});
  wharf_session* b = session({c});
  const uint64_t old_gen = wharf_container_generation(c);
  std::promise<void> parked, resume;
  std::shared_future<void> go = resume.get_future().share();
  std::atomic<bool> once{false};
  wharf::ScopedTestHook hook([&](const char* point) {
    if (std::string(point) != "run.begin_batch.pinned" || once.exchange(true)) return;
    parked.set_value();
    go.wait();
  });
  wharf_run* run = nullptr;
  std::thread t([&] { run = batch(c, {a, b}); });
  parked.get_future().wait();
  // The batch pinned generation old_gen; publish a new one and drop the old.
  load(c, 2.0f);
  ASSERT_OK(wharf_container_free_inactive(c));
  EXPECT_GT(wharf_container_generation(c), old_gen);
  resume.set_value();
  t.join();
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(wharf_run_generation(run), old_gen);
  float w = 0;
  ASSERT_OK(wharf_run_read(run, "w", 0, &w, sizeof w));
  EXPECT_EQ(w, 1.0f) << "the batch read the generation published after it pinned";
  ASSERT_OK(wharf_run_end(run));
  run = batch(c, {b, a});
  EXPECT_EQ(wharf_run_generation(run), wharf_container_generation(c));
  ASSERT_OK(wharf_run_read(run, "w", 0, &w, sizeof w));
  EXPECT_EQ(w, 2.0f);
  ASSERT_OK(wharf_run_end(run));
  wharf_session_free(a);
  wharf_session_free(b);
}

// Thousands of random steps of joins, leaves, forks, resets, single runs and batched steps
// of a host "model" that appends to its rows' slots; a mirror of every session's expected
// state is checked against the arena at every step, for every row of the batch. The slot
// bookkeeping too: after every step no slot is held by two live sessions, freed slots are
// taken again, and a join or fork into a full arena is refused and changes nothing.
TEST_F(SessionArenaTest, RandomizedJoinsLeavesForksAndResetsKeepSessionsIsolated) {
  constexpr uint32_t kCap = 12;
  wharf_container* c = make("m", kCap);
  struct Mirror {
    std::vector<float> h, kv;
  };
  std::map<wharf_session*, Mirror> live;
  auto initial = [] { return Mirror{std::vector<float>(kH, 0.5f), std::vector<float>(kKv, 0.0f)}; };
  std::mt19937 rng(26);
  auto pick = [&]() {
    auto it = live.begin();
    std::advance(it, std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng));
    return it->first;
  };
  auto check_row = [&](const float* h, const float* kv, const Mirror& m, int step) {
    for (int i = 0; i < kH; ++i) ASSERT_EQ(h[i], m.h[i]) << "step " << step << " h[" << i << "]";
    for (int i = 0; i < kKv; ++i) ASSERT_EQ(kv[i], m.kv[i]) << "step " << step << " kv[" << i << "]";
  };
  int batched_steps = 0, refused = 0, reused = 0;
  std::set<int64_t> ever;  // slots some session has held
  auto taken = [&](wharf_session* s) {
    if (!ever.insert(wharf_session_slot(s)).second) ++reused;
  };
  for (int step = 0; step < 3000; ++step) {
    const int op = std::uniform_int_distribution<int>(0, 99)(rng);
    if (live.empty() || (op < 15 && live.size() < kCap)) {  // join
      wharf_session* s = session({c});
      ASSERT_NE(s, nullptr);
      live[s] = initial();
      taken(s);
    } else if (op < 15) {  // a full arena: a join and a fork are refused, holding nothing
      session({c}, WHARF_RESOURCE_EXHAUSTED, "session_capacity 12");
      wharf_session* f = nullptr;
      EXPECT_FAILS(wharf_session_fork(pick(), &f), WHARF_RESOURCE_EXHAUSTED, "session_capacity 12");
      EXPECT_EQ(f, nullptr);
      ++refused;
    } else if (op < 25) {  // leave
      wharf_session* s = pick();
      wharf_session_free(s);
      live.erase(s);
    } else if (op < 33 && live.size() < kCap) {  // fork
      wharf_session* s = pick();
      wharf_session* f = nullptr;
      ASSERT_OK(wharf_session_fork(s, &f));
      live[f] = live[s];
      taken(f);
    } else if (op < 40) {  // reset
      wharf_session* s = pick();
      ASSERT_OK(wharf_session_reset(s));
      live[s] = initial();
    } else if (op < 48) {  // one session alone
      wharf_session* s = pick();
      wharf_run* run = nullptr;
      ASSERT_OK(wharf_run_begin(c, s, nullptr, &run));
      float* h = f32(run, "h");
      float* kv = f32(run, "kv");
      ASSERT_NO_FATAL_FAILURE(check_row(h, kv, live[s], step));
      Mirror& m = live[s];
      m.h[step % kH] += 1.0f;
      m.kv[step % kKv] = float(step);
      h[step % kH] = m.h[step % kH];
      kv[step % kKv] = m.kv[step % kKv];
      ASSERT_OK(wharf_run_end(run));
    } else {  // a batched step over a random subset, in random order
      std::vector<wharf_session*> rows;
      for (auto& e : live)
        if (std::uniform_int_distribution<int>(0, 2)(rng) > 0) rows.push_back(e.first);
      if (rows.empty()) continue;
      std::shuffle(rows.begin(), rows.end(), rng);
      wharf_run* run = batch(c, rows);
      ASSERT_NE(run, nullptr);
      ++batched_steps;
      float* h = f32(run, "h");
      float* kv = f32(run, "kv");
      std::vector<int64_t> sl = slots(run);
      ASSERT_EQ(sl.size(), rows.size());
      for (size_t r = 0; r < rows.size(); ++r) {
        ASSERT_EQ(sl[r], wharf_session_slot(rows[r]));
        ASSERT_NO_FATAL_FAILURE(check_row(h + sl[r] * kH, kv + sl[r] * kKv, live[rows[r]], step));
      }
      // The model writes only its rows' slots: each row appends a value of its own.
      for (size_t r = 0; r < rows.size(); ++r) {
        Mirror& m = live[rows[r]];
        const int pos = (step + int(r)) % kKv;
        m.kv[pos] = float(step * 100 + int(r));
        m.h[pos % kH] += 0.25f;
        kv[sl[r] * kKv + pos] = m.kv[pos];
        h[sl[r] * kH + pos % kH] = m.h[pos % kH];
      }
      ASSERT_OK(wharf_run_end(run));
    }
    ASSERT_EQ(stats(c).num_slots_used, live.size());
    std::set<int64_t> held;
    for (auto& e : live) {
      const int64_t k = wharf_session_slot(e.first);
      ASSERT_TRUE(k >= 0 && k < int64_t(kCap)) << "step " << step << ": slot " << k;
      ASSERT_TRUE(held.insert(k).second) << "step " << step << ": slot " << k << " is held by two live sessions";
    }
  }
  EXPECT_GT(batched_steps, 1000);
  EXPECT_GT(refused, 10) << "the arena was never full";
  EXPECT_GT(reused, 100) << "freed slots were seldom taken again";
  // A last full check of every live session.
  std::vector<wharf_session*> all;
  for (auto& e : live) all.push_back(e.first);
  if (!all.empty()) {
    wharf_run* run = batch(c, all);
    float* h = f32(run, "h");
    float* kv = f32(run, "kv");
    for (wharf_session* s : all) {
      const int64_t k = wharf_session_slot(s);
      ASSERT_NO_FATAL_FAILURE(check_row(h + k * kH, kv + k * kKv, live[s], -1));
    }
    ASSERT_OK(wharf_run_end(run));
  }
  for (auto& e : live) wharf_session_free(e.first);
}

}  // namespace
