// SPDX-License-Identifier: Apache-2.0
// Concurrency: every promise of generations, in-place updates, the weight store and runs,
// under forced interleavings (test hooks park or redirect a thread at the racy point) and
// under stress. Each numbered defect of issue 11 has a test here that failed before its fix;
// docs/concurrency.md states the model they check. Run under ThreadSanitizer by `make test`.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "api/handles.h"
#include "common/test_support.h"
#include "core/test_hooks.h"
#include "wharf/wharf.h"
#ifdef WHARF_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using wharf_test::finishes_within;
using wharf_test::St;

using namespace std::chrono_literals;

uint64_t constants_bytes(wharf_runtime* rt) {
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  St st(wharf_runtime_get_memory_stats(rt, &ms));
  return ms.current[WHARF_MEM_CONSTANTS];
}

const int64_t kShape[1] = {4};

// A map of 4-float constants, each filled with one value. The only place that builds views.
struct Map {
  std::vector<std::string> names;
  std::vector<std::vector<float>> data;
  wharf_constant_map* map = nullptr;
  Map(std::initializer_list<std::pair<const char*, float>> entries) {
    EXPECT_EQ(wharf_constant_map_create(&map), nullptr);
    for (auto& e : entries) {
      names.emplace_back(e.first);
      data.emplace_back(4, e.second);
    }
    for (size_t i = 0; i < names.size(); ++i) {
      wharf_tensor_view v{};
      std::memset(&v, 0, sizeof v);
      v.struct_size = sizeof v;
      v.data = data[i].data();
      v.dtype = WHARF_DTYPE_F32;
      v.device_type = WHARF_DEVICE_CPU;
      v.ndim = 1;
      v.shape = kShape;
      St st(wharf_constant_map_set(map, names[i].c_str(), &v));
      EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    }
  }
  ~Map() { wharf_constant_map_free(map); }
  Map(const Map&) = delete;
};

wharf_container* from_map(wharf_runtime* rt, const Map& m, wharf_weight_store* store = nullptr,
                          const char* name = "m") {
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.name = name;
  o.store = store;
  wharf_container* c = nullptr;
  St st(wharf_container_create_from_map(rt, m.map, &o, &c));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  return c;
}

wharf_status* update(wharf_container* c, const Map& m, bool in_place = false) {
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.target = in_place ? WHARF_TARGET_ACTIVE_IN_PLACE : WHARF_TARGET_INACTIVE;
  return wharf_container_update(c, m.map, &o);
}

// An in-place update with a chosen bound on waiting for pinned runs (internal options).
wharf::Status update_in_place_waiting(wharf_container* c, const Map& m, uint32_t max_wait_ms) {
  wharf::UpdateOptions o;
  o.in_place = true;
  o.in_place_max_wait_ms = max_wait_ms;
  return c->c->update(*m.map->map, o);
}

float first(wharf_run* run, const char* fqn) {
  float x = -1;
  St st(wharf_run_read(run, fqn, 0, &x, sizeof x));
  EXPECT_EQ(st.code(), WHARF_OK) << fqn << ": " << st.msg();
  return x;
}

// Reads `fqns` through a fresh run of `c`.
std::vector<float> now(wharf_container* c, std::initializer_list<const char*> fqns) {
  wharf_run* r = nullptr;
  St st(wharf_run_begin(c, nullptr, nullptr, &r));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  std::vector<float> out;
  if (!r) return out;
  for (const char* f : fqns) out.push_back(first(r, f));
  EXPECT_EQ(wharf_run_end(r), nullptr);
  return out;
}

// Every test runs on the host backend, and on the CUDA backend where a GPU is visible.
class Concurrency : public wharf_test::BackendTest {
 protected:
  Concurrency() { config = {0, 2, 1 << 20}; }
};

// 1. A run begun before a swap of A only pins the old generation, which shares B's storage
// with the new active one. An in-place update of B must not write what that run reads.
TEST_P(Concurrency, InPlaceNeverWritesStorageAnOlderGenerationsRunReads) {
  Map g1({{"A", 1}, {"B", 1}});
  wharf_container* c = from_map(rt, g1);
  wharf_run* old = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &old));
  Map a2({{"A", 2}});
  ASSERT_OK(update(c, a2));
  ASSERT_OK(wharf_container_swap(c));  // active: A=2, B shared with the old generation
  Map b3({{"B", 3}});
  finishes_within(5s, "in-place update", [&] { EXPECT_OK(update(c, b3, true)); });
  EXPECT_EQ(first(old, "B"), 1.0f) << "the open run of the older generation saw the in-place write";
  EXPECT_EQ(first(old, "A"), 1.0f);
  EXPECT_EQ(now(c, {"A", "B"}), (std::vector<float>{2, 3}));
  ASSERT_OK(wharf_run_end(old));
  // Rollback returns to the generation before the swap, untouched by the in-place write.
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_EQ(now(c, {"A", "B"}), (std::vector<float>{1, 1}));
  wharf_container_free(c);
}

// 1b. With no run open, the rollback generation still shares B's storage with the active one:
// an in-place write of B must leave the rollback generation's B alone.
TEST_P(Concurrency, InPlaceKeepsTheRollbackGenerationIntact) {
  Map g1({{"A", 1}, {"B", 1}});
  wharf_container* c = from_map(rt, g1);
  Map a2({{"A", 2}});
  ASSERT_OK(update(c, a2));
  ASSERT_OK(wharf_container_swap(c));
  const uint64_t before = constants_bytes(rt);
  Map b3({{"B", 3}});
  ASSERT_OK(update(c, b3, true));
  EXPECT_EQ(constants_bytes(rt), before + 16) << "B is shared with the rollback generation: fresh storage";
  EXPECT_EQ(now(c, {"A", "B"}), (std::vector<float>{2, 3}));
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_EQ(now(c, {"A", "B"}), (std::vector<float>{1, 1})) << "the in-place write reached the rollback generation";
  // Storage nothing else references is overwritten: no extra memory.
  ASSERT_OK(wharf_container_free_inactive(c));
  const uint64_t alone = constants_bytes(rt);
  Map b4({{"B", 4}});
  ASSERT_OK(update(c, b4, true));
  EXPECT_EQ(constants_bytes(rt), alone);
  EXPECT_EQ(now(c, {"A", "B"}), (std::vector<float>{1, 4}));
  wharf_container_free(c);
}

// 2. An in-place update of one store member writes storage the store shares: the other
// member (with a run open on it, and its later runs) must keep the old weight.
TEST_P(Concurrency, InPlaceUpdateOfOneStoreMemberLeavesTheOthersAlone) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Map w1({{"w", 1}});
  wharf_container* prefill = from_map(rt, w1, store, "prefill");
  wharf_container* decode = from_map(rt, w1, store, "decode");
  wharf_run* d = nullptr;
  ASSERT_OK(wharf_run_begin(decode, nullptr, nullptr, &d));
  Map w3({{"w", 3}});
  finishes_within(5s, "in-place update", [&] { EXPECT_OK(update(prefill, w3, true)); });
  EXPECT_EQ(first(d, "w"), 1.0f) << "decode's open run saw prefill's in-place write";
  ASSERT_OK(wharf_run_end(d));
  EXPECT_EQ(now(decode, {"w"}), (std::vector<float>{1}));
  EXPECT_EQ(now(prefill, {"w"}), (std::vector<float>{3}));
  wharf_container_free(prefill);
  wharf_container_free(decode);
  wharf_weight_store_free(store);
}

// 3. A batching server: one thread holds a run and begins another while an in-place update
// waits for the first. Neither may hang; when the runs end in time the write reuses the
// storage (no extra memory).
TEST_P(Concurrency, ThreadHoldingARunMayBeginAnotherWhileAnInPlaceUpdateWaits) {
  Map g1({{"A", 1}});
  wharf_container* c = from_map(rt, g1);
  const uint64_t before = constants_bytes(rt);
  wharf_run* r1 = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &r1));
  std::atomic<bool> waiting{false};
  wharf::ScopedTestHook hook([&](const char* point) {
    if (std::strcmp(point, "container.in_place.waiting") == 0) waiting = true;
  });
  Map a5({{"A", 5}});
  auto updater = std::async(std::launch::async, [&] { return update_in_place_waiting(c, a5, 10000); });
  while (!waiting) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(20ms);  // the updater is inside its wait now
  wharf_run* r2 = nullptr;
  auto begin2 = std::async(std::launch::async, [&] { return St(wharf_run_begin(c, nullptr, nullptr, &r2)).code(); });
  bool begun = begin2.wait_for(3s) == std::future_status::ready;
  EXPECT_TRUE(begun) << "run_begin by a thread holding a run hung behind a waiting in-place update";
  EXPECT_EQ(first(r1, "A"), 1.0f);
  ASSERT_OK(wharf_run_end(r1));  // lets the old implementation make progress too
  finishes_within(5s, "second run_begin", [&] { EXPECT_EQ(begin2.get(), WHARF_OK); });
  if (r2) {
    EXPECT_EQ(first(r2, "A"), 1.0f);
    ASSERT_OK(wharf_run_end(r2));
  }
  finishes_within(15s, "in-place update", [&] {
    wharf::Status st = updater.get();
    EXPECT_TRUE(st.ok()) << st.message();
  });
  EXPECT_EQ(constants_bytes(rt), before) << "the runs ended within the bound: the write reused the storage";
  EXPECT_EQ(now(c, {"A"}), (std::vector<float>{5}));
  wharf_container_free(c);
}

// 3b. No starvation: runs that never end within the bound make the update give the pinned
// constant fresh storage and return; the runs keep reading the old data.
TEST_P(Concurrency, InPlaceUpdateFinishesInBoundedTimeUnderRunsThatStayOpen) {
  Map g1({{"A", 1}, {"B", 1}});
  wharf_container* c = from_map(rt, g1);
  const uint64_t before = constants_bytes(rt);
  wharf_run* r1 = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &r1));
  Map a5({{"A", 5}});
  auto t0 = std::chrono::steady_clock::now();
  finishes_within(5s, "in-place update", [&] {
    wharf::Status st = update_in_place_waiting(c, a5, 50);
    EXPECT_TRUE(st.ok()) << st.message();
  });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(first(r1, "A"), 1.0f);
  EXPECT_EQ(constants_bytes(rt), before + 16) << "the pinned constant got fresh storage";
  EXPECT_EQ(now(c, {"A", "B"}), (std::vector<float>{5, 1}));
  ASSERT_OK(wharf_run_end(r1));
  wharf_container_free(c);
}

// 4. An update takes its base, copies, then stages. A rollback swap in between: the result
// must be the update applied over the rolled-back weights (the only serial order left).
TEST_P(Concurrency, UpdateRacingARollbackStagesOverTheCurrentBase) {
  Map g1({{"A", 1}, {"B", 1}});
  wharf_container* c = from_map(rt, g1);
  Map g2({{"A", 2}, {"B", 2}});
  ASSERT_OK(update(c, g2));
  ASSERT_OK(wharf_container_swap(c));  // active (2,2), inactive (1,1)
  Map a5({{"A", 5}});
  {
    wharf::ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "container.update.after_base") == 0) EXPECT_OK(wharf_container_swap(c));  // rollback
    });
    ASSERT_OK(update(c, a5));
  }
  EXPECT_EQ(now(c, {"A", "B"}), (std::vector<float>{1, 1}));  // the rollback happened
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_EQ(now(c, {"A", "B"}), (std::vector<float>{5, 1})) << "a mix of the update and the rolled-back generation";
  wharf_container_free(c);
}

// 4b. free_inactive between an update's base and its staging discards what was staged
// before: the update must not resurrect it.
TEST_P(Concurrency, UpdateRacingFreeInactiveDoesNotResurrectTheFreedUpdate) {
  Map g1({{"A", 1}, {"B", 1}});
  wharf_container* c = from_map(rt, g1);
  Map a2({{"A", 2}});
  ASSERT_OK(update(c, a2));  // staged, then freed below
  Map b3({{"B", 3}});
  {
    wharf::ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "container.update.before_stage") == 0) EXPECT_OK(wharf_container_free_inactive(c));
    });
    ASSERT_OK(update(c, b3));
  }
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_EQ(now(c, {"A", "B"}), (std::vector<float>{1, 3}));
  wharf_container_free(c);
}

// 4c. The same race through a weight store update.
TEST_P(Concurrency, StoreUpdateRacingARollbackStagesOverTheCurrentBase) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Map g1({{"A", 1}, {"B", 1}});
  wharf_container* c = from_map(rt, g1, store);
  Map g2({{"A", 2}, {"B", 2}});
  ASSERT_OK(update(c, g2));
  ASSERT_OK(wharf_container_swap(c));
  Map a5({{"A", 5}});
  {
    wharf::ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "store.update.before_stage") == 0) EXPECT_OK(wharf_container_swap(c));
    });
    ASSERT_OK(wharf_weight_store_update(store, a5.map, nullptr));
  }
  ASSERT_OK(wharf_weight_store_swap(store));
  EXPECT_EQ(now(c, {"A", "B"}), (std::vector<float>{5, 1}));
  wharf_container_free(c);
  wharf_weight_store_free(store);
}

// 5. A store update that reaches a member never loaded fails before anything is staged, so
// the store swap cannot publish some members and fail on others.
TEST_P(Concurrency, StoreUpdateReachingAnUnloadedMemberStagesNothing) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Map w1({{"w", 1}, {"p", 1}});
  wharf_container* prefill = from_map(rt, w1, store, "prefill");
  const wharf_constant_decl decls[2] = {wharf_test::f32_decl("w", kShape), wharf_test::f32_decl("d", kShape)};
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.name = "decode";
  o.store = store;
  o.constants = decls;
  o.num_constants = 2;
  wharf_container* decode = nullptr;
  ASSERT_OK(wharf_container_create(rt, &o, &decode));  // declared, never loaded
  const uint64_t gen = wharf_container_generation(prefill);
  Map w2({{"w", 2}});
  St st(wharf_weight_store_update(store, w2.map, nullptr));
  EXPECT_EQ(st.code(), WHARF_FAILED_PRECONDITION) << st.msg();
  EXPECT_NE(st.msg().find("decode"), std::string::npos) << st.msg();
  EXPECT_CODE(wharf_weight_store_swap(store), WHARF_FAILED_PRECONDITION);  // nothing staged
  EXPECT_EQ(wharf_container_generation(prefill), gen);
  EXPECT_EQ(now(prefill, {"w"}), (std::vector<float>{1}));
  wharf_container_free(decode);
  wharf_container_free(prefill);
  wharf_weight_store_free(store);
}

// 5b. A member's own swap would publish store-staged weights for it alone: refused.
TEST_P(Concurrency, MemberSwapOfAPendingStoreUpdateIsRefused) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Map w1({{"w", 1}});
  wharf_container* prefill = from_map(rt, w1, store, "prefill");
  wharf_container* decode = from_map(rt, w1, store, "decode");
  Map w2({{"w", 2}});
  ASSERT_OK(wharf_weight_store_update(store, w2.map, nullptr));
  EXPECT_CODE(wharf_container_swap(prefill), WHARF_FAILED_PRECONDITION);
  EXPECT_CODE(wharf_container_free_inactive(prefill), WHARF_FAILED_PRECONDITION);
  EXPECT_EQ(now(prefill, {"w"}), (std::vector<float>{1}));
  ASSERT_OK(wharf_weight_store_swap(store));
  EXPECT_EQ(now(prefill, {"w"}), (std::vector<float>{2}));
  EXPECT_EQ(now(decode, {"w"}), (std::vector<float>{2}));
  wharf_container_free(prefill);
  wharf_container_free(decode);
  wharf_weight_store_free(store);
}

// 6. The store must not hand a joining container storage its owner replaced (alive only
// through the owner's rollback generation).
TEST_P(Concurrency, JoiningAStoreNeverTakesStaleStorage) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Map w1({{"w", 1}});
  wharf_container* a = from_map(rt, w1, store, "a");
  Map w2({{"w", 2}});
  ASSERT_OK(update(a, w2));
  ASSERT_OK(wharf_container_swap(a));  // a serves 2; 1 lives on in a's rollback generation
  Map w3({{"w", 3}});
  wharf_container* b = from_map(rt, w3, store, "b");
  EXPECT_EQ(now(b, {"w"}), (std::vector<float>{3})) << "b took storage no member serves";
  // A later member shares b's copy (served by b).
  const uint64_t before = constants_bytes(rt);
  wharf_container* c = from_map(rt, w3, store, "c");
  EXPECT_EQ(constants_bytes(rt), before);
  EXPECT_EQ(now(c, {"w"}), (std::vector<float>{3}));
  wharf_container_free(c);
  wharf_container_free(b);
  wharf_container_free(a);
  wharf_weight_store_free(store);
}

// Fold helpers: "d" is derived as 10 * "s" (read back to the host and written with a copy,
// so one fold serves both backends).
wharf_status* times_ten(wharf_run* run, void*) {
  float s[4];
  wharf_status* st = wharf_run_read(run, "s", 0, s, sizeof s);
  if (st) return st;
  wharf_tensor_view d{};
  std::memset(&d, 0, sizeof d);
  if ((st = wharf_run_get_tensor(run, "d", &d))) return st;
  for (float& x : s) x *= 10;
#ifdef WHARF_HAVE_CUDA
  if (d.device_type == WHARF_DEVICE_CUDA) {
    EXPECT_EQ(cudaMemcpy(d.data, s, sizeof s, cudaMemcpyHostToDevice), cudaSuccess);
    return nullptr;
  }
#endif
  std::memcpy(d.data, s, sizeof s);
  return nullptr;
}
wharf_status* failing(wharf_run*, void*) {
  wharf_dtype d;
  return wharf_dtype_from_name("fold-failed", &d);  // any real status
}

// A container of "s" and "d" (derived), optionally in a weight store.
wharf_container* derived_container(wharf_runtime* rt, wharf_weight_store* store = nullptr) {
  const wharf_constant_decl decls[2] = {wharf_test::f32_decl("s", kShape),
                                        wharf_test::f32_decl("d", kShape, WHARF_CONSTANT_DERIVED)};
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.constants = decls;
  o.num_constants = 2;
  o.store = store;
  wharf_container* c = nullptr;
  St st(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  return c;
}

// 7. A failing fold in an in-place update leaves the old weights and derived constants.
TEST_P(Concurrency, FailedInPlaceUpdateChangesNothing) {
  wharf_container* c = derived_container(rt);
  Map s1({{"s", 1}});
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.fold = times_ten;
  ASSERT_OK(wharf_container_update(c, s1.map, &o));
  ASSERT_OK(wharf_container_swap(c));
  const uint64_t gen = wharf_container_generation(c);
  const uint64_t before = constants_bytes(rt);
  Map s2({{"s", 2}});
  o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  o.fold = failing;
  EXPECT_CODE(wharf_container_update(c, s2.map, &o), WHARF_NOT_FOUND);
  EXPECT_EQ(now(c, {"s", "d"}), (std::vector<float>{1, 10}));
  EXPECT_EQ(wharf_container_generation(c), gen);
  EXPECT_EQ(constants_bytes(rt), before);
  o.fold = times_ten;
  ASSERT_OK(wharf_container_update(c, s2.map, &o));
  EXPECT_EQ(now(c, {"s", "d"}), (std::vector<float>{2, 20}));
  EXPECT_GT(wharf_container_generation(c), gen);
  wharf_container_free(c);
}

// 8. wharf_run_generation races with a rollback swap renumbering the run's generation
// (ThreadSanitizer reports it). A run's id is the one it pinned.
TEST_P(Concurrency, RunGenerationIsTheIdPinnedAtBegin) {
  Map g1({{"A", 1}});
  wharf_container* c = from_map(rt, g1);
  Map g2({{"A", 2}});
  ASSERT_OK(update(c, g2));
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    while (!stop) EXPECT_OK(wharf_container_swap(c));
  });
  for (int i = 0; i < 2000; ++i) {
    wharf_run* r = nullptr;
    ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &r));
    uint64_t id = wharf_run_generation(r);
    std::this_thread::yield();
    EXPECT_EQ(wharf_run_generation(r), id);
    ASSERT_OK(wharf_run_end(r));
  }
  stop = true;
  swapper.join();
  wharf_container_free(c);
}

// 9. Containers freed after a store update staged them do not pile up in the store.
TEST_P(Concurrency, FreedStagedContainersDoNotAccumulateInTheStore) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Map w1({{"w", 1}});
  wharf_container* keep = from_map(rt, w1, store, "keep");
  for (int i = 0; i < 100; ++i) {
    wharf_container* c = from_map(rt, w1, store, "temp");
    Map w({{"w", float(i)}});
    ASSERT_OK(wharf_weight_store_update(store, w.map, nullptr));
    wharf_container_free(c);
  }
  EXPECT_LE(store->store->staged_members_for_test(), 2u);
  ASSERT_OK(wharf_weight_store_swap(store));
  EXPECT_EQ(now(keep, {"w"}), (std::vector<float>{99}));
  wharf_container_free(keep);
  wharf_weight_store_free(store);
}

// 10. Re-entrant calls from fold callbacks answer an error instead of hanging.
struct Reentry {
  wharf_weight_store* store = nullptr;
  wharf_container* c = nullptr;
  wharf_code swap_code = WHARF_OK, update_code = WHARF_OK, begin_code = WHARF_INTERNAL;
  float seen = -1;
};
wharf_status* store_fold_reenters(wharf_run* run, void* user) {
  auto* r = static_cast<Reentry*>(user);
  r->swap_code = St(wharf_weight_store_swap(r->store)).code();
  Map m({{"s", 7}});
  r->update_code = St(wharf_weight_store_update(r->store, m.map, nullptr)).code();
  return times_ten(run, nullptr);
}
wharf_status* in_place_fold_begins_a_run(wharf_run* run, void* user) {
  auto* r = static_cast<Reentry*>(user);
  wharf_run* inner = nullptr;
  r->begin_code = St(wharf_run_begin(r->c, nullptr, nullptr, &inner)).code();
  if (inner) {
    r->seen = first(inner, "s");
    wharf_status_free(wharf_run_end(inner));
  }
  return times_ten(run, nullptr);
}

TEST_P(Concurrency, ReentrantCallsFromFoldsFailInsteadOfHanging) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  wharf_container* c = derived_container(rt, store);
  ASSERT_NE(c, nullptr);
  Map s1({{"s", 1}});
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.fold = times_ten;
  ASSERT_OK(wharf_container_update(c, s1.map, &o));
  ASSERT_OK(wharf_container_swap(c));

  Reentry r;
  r.store = store;
  r.c = c;
  Map s2({{"s", 2}});
  o.fold = store_fold_reenters;
  o.fold_user = &r;
  finishes_within(5s, "store update with a re-entrant fold",
                  [&] { EXPECT_OK(wharf_weight_store_update(store, s2.map, &o)); });
  EXPECT_EQ(r.swap_code, WHARF_FAILED_PRECONDITION);
  EXPECT_EQ(r.update_code, WHARF_FAILED_PRECONDITION);
  ASSERT_OK(wharf_weight_store_swap(store));
  EXPECT_EQ(now(c, {"s", "d"}), (std::vector<float>{2, 20}));

  Map s3({{"s", 3}});
  o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  o.fold = in_place_fold_begins_a_run;
  finishes_within(5s, "in-place update whose fold begins a run",
                  [&] { EXPECT_OK(wharf_container_update(c, s3.map, &o)); });
  EXPECT_EQ(r.begin_code, WHARF_OK);
  EXPECT_EQ(r.seen, 2.0f);  // the run begun inside the fold sees the weights before the update
  EXPECT_EQ(now(c, {"s", "d"}), (std::vector<float>{3, 30}));
  wharf_container_free(c);
  wharf_weight_store_free(store);
}

// A swap during an in-place update answers BUSY (it would publish a generation that shares
// storage being written) and changes nothing.
TEST_P(Concurrency, SwapDuringAnInPlaceUpdateIsBusy) {
  Map g1({{"A", 1}});
  wharf_container* c = from_map(rt, g1);
  Map g2({{"A", 2}});
  ASSERT_OK(update(c, g2));
  ASSERT_OK(wharf_container_swap(c));
  Map a5({{"A", 5}});
  wharf_code swap_code = WHARF_OK, free_code = WHARF_OK;
  {
    wharf::ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "container.in_place.before_publish") != 0) return;
      swap_code = St(wharf_container_swap(c)).code();
      free_code = St(wharf_container_free_inactive(c)).code();
    });
    ASSERT_OK(update(c, a5, true));
  }
  EXPECT_EQ(swap_code, WHARF_BUSY);
  EXPECT_EQ(free_code, WHARF_BUSY);
  EXPECT_EQ(now(c, {"A"}), (std::vector<float>{5}));
  ASSERT_OK(wharf_container_swap(c));  // rollback still reaches the pre-swap weights
  EXPECT_EQ(now(c, {"A"}), (std::vector<float>{1}));
  wharf_container_free(c);
}

// New runs wait only while reused storage is being written, and then see the new data.
TEST_P(Concurrency, RunsBegunDuringTheInPlaceWriteSeeTheNewData) {
  Map g1({{"A", 1}, {"B", 1}});
  wharf_container* c = from_map(rt, g1);
  const uint64_t before = constants_bytes(rt);
  std::atomic<bool> in_write{false}, release{false};
  std::future<std::vector<float>> reader;
  wharf::ScopedTestHook hook([&](const char* point) {
    if (std::strcmp(point, "container.in_place.before_write") != 0) return;
    in_write = true;
    while (!release) std::this_thread::sleep_for(1ms);
  });
  Map ab({{"A", 7}, {"B", 7}});
  auto updater = std::async(std::launch::async, [&] { return St(update(c, ab, true)).code(); });
  while (!in_write) std::this_thread::sleep_for(1ms);
  reader = std::async(std::launch::async, [&] { return now(c, {"A", "B"}); });
  EXPECT_EQ(reader.wait_for(50ms), std::future_status::timeout) << "a run began while storage was being written";
  release = true;
  EXPECT_EQ(updater.get(), WHARF_OK);
  EXPECT_EQ(reader.get(), (std::vector<float>{7, 7}));
  EXPECT_EQ(constants_bytes(rt), before);
  wharf_container_free(c);
}

// Issue 21, 1. A container joining a weight store takes the constants the store serves; it
// must take them from one store version, even when a store swap publishes a new version
// while its update runs (looked up one by one, it got A from one version and B from the
// next, or its own A beside the store's B).
TEST_P(Concurrency, JoinerTakesOneStoreVersionWhenAStoreSwapLandsMidUpdate) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Map v1({{"A", 1}, {"B", 1}});
  wharf_container* a = from_map(rt, v1, store, "a");
  Map v2({{"A", 2}, {"B", 2}});
  ASSERT_OK(wharf_weight_store_update(store, v2.map, nullptr));  // staged on a, not published
  Map own({{"A", 9}, {"B", 9}});
  wharf_container* j = nullptr;
  {
    // The joiner's update parks after reading the store; the store swap lands meanwhile.
    const std::thread::id main_thread = std::this_thread::get_id();
    std::promise<void> parked, resume;
    std::shared_future<void> resumed = resume.get_future().share();
    bool once = false;
    wharf::ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "container.update.after_store_snapshot") != 0 ||
          std::this_thread::get_id() == main_thread || once)
        return;
      once = true;
      parked.set_value();
      resumed.wait();
    });
    std::thread joiner([&] { j = from_map(rt, own, store, "j"); });
    parked.get_future().wait();
    EXPECT_OK(wharf_weight_store_swap(store));
    resume.set_value();
    joiner.join();
  }
  ASSERT_NE(j, nullptr);
  const std::vector<float> got = now(j, {"A", "B"});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], got[1]) << "the joiner's first generation mixes two sources";
  EXPECT_NE(got[0], 9) << "the store served both constants; the joiner loaded its own";
  EXPECT_EQ(now(a, {"A", "B"}), (std::vector<float>{2, 2}));
  wharf_container_free(j);
  wharf_container_free(a);
  wharf_weight_store_free(store);
}

// Issue 21, 1. Right after a store swap returns, the store serves the new version: its
// entries moved with the members' generations (they moved after the members' locks were
// released, and a joiner in between found the entries' storage served by nobody and loaded
// its own data).
TEST_P(Concurrency, JoinerRightAfterAStoreSwapTakesTheNewVersion) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Map v1({{"A", 1}, {"B", 1}});
  wharf_container* a = from_map(rt, v1, store, "a");
  Map v2({{"A", 2}, {"B", 2}});
  ASSERT_OK(wharf_weight_store_update(store, v2.map, nullptr));
  Map own({{"A", 9}, {"B", 9}});
  wharf_container* j = nullptr;
  {
    const std::thread::id main_thread = std::this_thread::get_id();
    bool once = false;
    wharf::ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "store.swap.after_publish") != 0 || std::this_thread::get_id() != main_thread || once)
        return;
      once = true;  // the swap has published: a container joining now must get version 2
      std::thread joiner([&] { j = from_map(rt, own, store, "j"); });
      joiner.join();
    });
    ASSERT_OK(wharf_weight_store_swap(store));
    ASSERT_TRUE(once);
  }
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(now(j, {"A", "B"}), (std::vector<float>{2, 2}));
  const uint64_t before = constants_bytes(rt);
  wharf_container* k = from_map(rt, own, store, "k");
  EXPECT_EQ(constants_bytes(rt), before) << "a later joiner shares the store's copy";
  wharf_container_free(k);
  wharf_container_free(j);
  wharf_container_free(a);
  wharf_weight_store_free(store);
}

// A container created from a map over a store is a store member before its creator has
// loaded it. A store update reaching it then must not take it over: it loaded the new member
// with the store's weights and left the creator's own swap refused (create_from_map failed
// with FAILED_PRECONDITION, or BUSY when the two overlapped). The update now answers BUSY.
TEST_P(Concurrency, StoreUpdateNeverTakesOverAContainerItsCreatorIsLoading) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Map v1({{"A", 1}, {"B", 1}});
  wharf_container* a = from_map(rt, v1, store, "a");
  Map v2({{"A", 2}, {"B", 2}});
  Map own({{"A", 9}, {"B", 9}});
  wharf_code store_update = WHARF_OK;
  std::string store_msg;
  wharf_container* j = nullptr;
  {
    bool once = false;
    wharf::ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "container.create.after_join") != 0 || once) return;
      once = true;  // j has joined the store and is not loaded yet: a store update runs now
      std::thread t([&] {
        St u(wharf_weight_store_update(store, v2.map, nullptr));
        store_update = u.code();
        store_msg = u.msg();
      });
      t.join();
    });
    wharf_container_options o;
    wharf_container_options_init(&o);
    o.name = "j";
    o.store = store;
    St st(wharf_container_create_from_map(rt, own.map, &o, &j));
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
    ASSERT_TRUE(once);
  }
  EXPECT_EQ(store_update, WHARF_BUSY) << store_msg;
  EXPECT_NE(store_msg.find("'j'"), std::string::npos) << store_msg;
  EXPECT_EQ(now(j, {"A", "B"}), (std::vector<float>{1, 1})) << "j took the store's served weights";
  // Once j is loaded, the store update reaches every member.
  ASSERT_OK(wharf_weight_store_update(store, v2.map, nullptr));
  ASSERT_OK(wharf_weight_store_swap(store));
  EXPECT_EQ(now(j, {"A", "B"}), (std::vector<float>{2, 2}));
  EXPECT_EQ(now(a, {"A", "B"}), (std::vector<float>{2, 2}));
  wharf_container_free(j);
  wharf_container_free(a);
  wharf_weight_store_free(store);
}

// Issue 21, 1 (the reproduction): one thread updates and swaps the store in a loop (every
// constant = v), another creates containers over it (create + update, and create from a
// map), swaps and reads every constant. Every generation holds one store version.
TEST_P(Concurrency, JoinersNeverSeeATornStoreGenerationUnderStress) {
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Map v0({{"A", 0}, {"B", 0}, {"C", 0}});
  wharf_container* a = from_map(rt, v0, store, "a");
  std::atomic<bool> stop{false};
  std::atomic<int> published{0};
  std::thread writer([&] {
    for (int v = 1; !stop; ++v) {
      Map m({{"A", float(v)}, {"B", float(v)}, {"C", float(v)}});
      St u(wharf_weight_store_update(store, m.map, nullptr));
      // BUSY: a joiner is being updated; FAILED_PRECONDITION: one joined and is not loaded yet.
      EXPECT_TRUE(u.code() == WHARF_OK || u.code() == WHARF_BUSY || u.code() == WHARF_FAILED_PRECONDITION) << u.msg();
      if (u.code() != WHARF_OK) continue;
      EXPECT_OK(wharf_weight_store_swap(store));
      ++published;
      std::this_thread::yield();
    }
  });
  Map own({{"A", -1}, {"B", -1}, {"C", -1}});
  const wharf_constant_decl decls[3] = {wharf_test::f32_decl("A", kShape), wharf_test::f32_decl("B", kShape),
                                        wharf_test::f32_decl("C", kShape)};
  int torn = 0, joins = 0;
  // At least 300 joins and 100 store versions published meanwhile (bounded in time).
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (int i = 0; (i < 300 || published < 100) && std::chrono::steady_clock::now() < deadline && !HasFailure(); ++i) {
    wharf_container* j = nullptr;
    if (i % 2 == 0) {
      j = from_map(rt, own, store, "j");
    } else {
      wharf_container_options o;
      wharf_container_options_init(&o);
      o.name = "j";
      o.store = store;
      o.constants = decls;
      o.num_constants = 3;
      ASSERT_OK(wharf_container_create(rt, &o, &j));
      St u(update(j, own));
      // BUSY: a store update that writes every constant admitted j first (it loads j; its
      // swap publishes the store's version there, checked below like the rest).
      EXPECT_TRUE(u.code() == WHARF_OK || u.code() == WHARF_BUSY) << u.msg();
      St s(u.code() == WHARF_OK ? wharf_container_swap(j) : wharf_status_create(WHARF_FAILED_PRECONDITION, "busy"));
      if (s.code() == WHARF_FAILED_PRECONDITION) {
        // A store update staged on j after its update: j's own swap is refused, and the
        // store's swap publishes the store's version there (checked below like the rest).
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (wharf_container_generation(j) == 0 && std::chrono::steady_clock::now() < until)
          std::this_thread::yield();
        ASSERT_NE(wharf_container_generation(j), 0u) << s.msg();
      } else {
        EXPECT_EQ(s.code(), WHARF_OK) << s.msg();
      }
    }
    if (!j) continue;
    const std::vector<float> got = now(j, {"A", "B", "C"});
    ++joins;
    if (got.size() == 3 && (got[0] != got[1] || got[1] != got[2] || got[0] < 0)) {
      ++torn;
      ADD_FAILURE() << "join " << i << " saw A=" << got[0] << " B=" << got[1] << " C=" << got[2];
    }
    wharf_container_free(j);
  }
  stop = true;
  writer.join();
  EXPECT_EQ(torn, 0) << "of " << joins << " joins";
  EXPECT_GE(published.load(), 100) << "the store writer barely ran: the test proves little";
  wharf_container_free(a);
  wharf_weight_store_free(store);
}

// Stress: A and B are always written together with one value. However updates, in-place
// writes, swaps, rollbacks and frees interleave, every run sees A == B, and the same value
// at its start and its end.
TEST_P(Concurrency, EveryRunSeesOneWholeGenerationUnderStress) {
  Map g1({{"A", 0}, {"B", 0}});
  wharf_container* c = from_map(rt, g1);
  std::atomic<bool> stop{false};
  std::atomic<int> runs{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&] {
      while (!stop) {
        wharf_run* r = nullptr;
        St st(wharf_run_begin(c, nullptr, nullptr, &r));
        ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
        float a = first(r, "A"), b = first(r, "B");
        std::this_thread::yield();
        float a2 = first(r, "A"), b2 = first(r, "B");
        EXPECT_EQ(a, b);
        EXPECT_EQ(a, a2);
        EXPECT_EQ(b, b2);
        EXPECT_EQ(wharf_run_end(r), nullptr);
        ++runs;
      }
    });
  std::thread writer([&] {
    for (int i = 1; i <= 300; ++i) {
      Map m({{"A", float(i)}, {"B", float(i)}});
      wharf::Status st;
      switch (i % 4) {
        case 0:
          st = update_in_place_waiting(c, m, 5);
          break;
        default: {
          wharf_update_options o;
          wharf_update_options_init(&o);
          St s(wharf_container_update(c, m.map, &o));
          EXPECT_EQ(s.code(), WHARF_OK) << s.msg();
        }
      }
      EXPECT_TRUE(st.ok()) << st.message();
      if (i % 3 == 0) EXPECT_OK(wharf_container_free_inactive(c));
    }
  });
  std::thread swapper([&] {
    while (!stop) {
      St s(wharf_container_swap(c));  // OK, or nothing staged, or BUSY during an in-place write
      EXPECT_TRUE(s.code() == WHARF_OK || s.code() == WHARF_FAILED_PRECONDITION || s.code() == WHARF_BUSY) << s.msg();
      std::this_thread::yield();
    }
  });
  writer.join();
  stop = true;
  swapper.join();
  for (auto& t : readers) t.join();
  EXPECT_GT(runs.load(), 0);
  wharf_container_free(c);
}

WHARF_TEST_ON_BACKENDS(Concurrency);

}  // namespace
