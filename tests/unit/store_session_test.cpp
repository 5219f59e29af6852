// SPDX-License-Identifier: Apache-2.0
// The weight store and sessions on the host backend, through the public C API: sharing
// and its accounting, declaration mismatches, release order, detaching and store-level
// updates with an atomic swap across containers; session isolation, shared state across
// containers, initial values, reset, fork, one run at a time, budgets, lazy allocation,
// and state that survives weight swaps.
#define WHARF_EXPERIMENTAL 1  // wharf_container_has_staged
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/handles.h"
#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::map_of;
using wharf_test::St;

wharf_runtime* host_runtime() { return wharf_test::make_runtime(WHARF_BACKEND_HOST, {0, 2, 1 << 20}); }

uint64_t mem(wharf_runtime* rt, wharf_memory_tag tag) {
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  St st(wharf_runtime_get_memory_stats(rt, &ms));
  return ms.current[tag];
}

// Float tensors filled with one value each, and a map over them.
struct Weights {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> data;
  wharf_constant_map* map = nullptr;
  Weights() = default;
  Weights(const Weights&) = delete;
  ~Weights() { wharf_constant_map_free(map); }
  Weights& add(const std::string& name, std::vector<int64_t> shape, float value) {
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    names.push_back(name);
    shapes.push_back(std::move(shape));
    data.emplace_back(n, value);
    return *this;
  }
  uint64_t bytes(const std::string& name) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return data[i].size() * 4;
    return 0;
  }
  wharf_constant_map* build() {
    wharf_constant_map_free(map);
    EXPECT_EQ(wharf_constant_map_create(&map), nullptr);
    for (size_t i = 0; i < names.size(); ++i) {
      wharf_tensor_view v{sizeof(wharf_tensor_view),
                          0,
                          data[i].data(),
                          WHARF_DTYPE_F32,
                          WHARF_DEVICE_CPU,
                          0,
                          int32_t(shapes[i].size()),
                          shapes[i].data(),
                          nullptr};
      St st(wharf_constant_map_set(map, names[i].c_str(), &v));
      EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    }
    return map;
  }
};

// Prefill and decode: four shared weights, one head each.
void prefill(Weights* w, float v) {
  w->add("embed", {64, 32}, v).add("layers.0.w", {32, 32}, v).add("layers.1.w", {32, 32}, v).add("norm", {32}, v);
  w->add("prefill.head", {16, 32}, v);
}
void decode(Weights* w, float v) {
  w->add("embed", {64, 32}, v).add("layers.0.w", {32, 32}, v).add("layers.1.w", {32, 32}, v).add("norm", {32}, v);
  w->add("decode.head", {8, 32}, v);
}
const char* kShared[] = {"embed", "layers.0.w", "layers.1.w", "norm"};

wharf_container* from_map(wharf_runtime* rt, Weights* w, wharf_weight_store* store, const char* name,
                          wharf_code want = WHARF_OK, std::string* msg = nullptr) {
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.name = name;
  o.store = store;
  wharf_container* c = nullptr;
  St st(wharf_container_create_from_map(rt, w->build(), &o, &c));
  EXPECT_EQ(st.code(), want) << st.msg();
  if (msg) *msg = st.msg();
  return c;
}

wharf_tensor_view view_of(wharf_run* run, const char* fqn) {
  wharf_tensor_view v{};
  std::memset(&v, 0, sizeof v);
  St st(wharf_run_get_tensor(run, fqn, &v));
  EXPECT_EQ(st.code(), WHARF_OK) << fqn << ": " << st.msg();
  return v;
}

float first(wharf_run* run, const char* fqn) {
  float x = -1;
  St st(wharf_run_read(run, fqn, 0, &x, sizeof x));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  return x;
}

wharf_weight_store_stats stats(wharf_weight_store* s) {
  wharf_weight_store_stats st;
  std::memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  St r(wharf_weight_store_get_stats(s, &st));
  EXPECT_EQ(r.code(), WHARF_OK) << r.msg();
  return st;
}

// ---- weight store ----------------------------------------------------------------------

struct StoreTest : ::testing::Test {
  wharf_runtime* rt = nullptr;
  wharf_weight_store* store = nullptr;
  Weights pw, dw;
  uint64_t shared_bytes = 0;
  void SetUp() override {
    rt = host_runtime();
    ASSERT_OK(wharf_weight_store_create(rt, &store));
    prefill(&pw, 1.0f);
    decode(&dw, 2.0f);  // different data under shared names: the store keeps the first
    for (const char* n : kShared) shared_bytes += pw.bytes(n);
  }
  void TearDown() override {
    wharf_weight_store_free(store);
    wharf_runtime_free(rt);
  }
};

TEST_F(StoreTest, SharedConstantsHaveOneAddressAndCostTheUnion) {
  wharf_container* p = from_map(rt, &pw, store, "prefill");
  const uint64_t after_first = mem(rt, WHARF_MEM_CONSTANTS);
  EXPECT_EQ(after_first, shared_bytes + pw.bytes("prefill.head"));
  wharf_container* d = from_map(rt, &dw, store, "decode");
  // The union, not the sum: decode added only its head.
  EXPECT_EQ(mem(rt, WHARF_MEM_CONSTANTS), after_first + dw.bytes("decode.head"));

  wharf_run *rp = nullptr, *rd = nullptr;
  ASSERT_OK(wharf_run_begin(p, nullptr, nullptr, &rp));
  ASSERT_OK(wharf_run_begin(d, nullptr, nullptr, &rd));
  for (const char* n : kShared) {
    EXPECT_EQ(view_of(rp, n).data, view_of(rd, n).data) << n;
    EXPECT_EQ(first(rd, n), 1.0f) << n << ": the joining container shares the stored weight";
  }
  EXPECT_NE(view_of(rp, "prefill.head").data, nullptr);
  EXPECT_EQ(first(rd, "decode.head"), 2.0f);
  ASSERT_OK(wharf_run_end(rp));
  ASSERT_OK(wharf_run_end(rd));

  wharf_weight_store_stats s = stats(store);
  EXPECT_EQ(s.num_unique_constants, 6u);
  EXPECT_EQ(s.unique_bytes, shared_bytes + pw.bytes("prefill.head") + dw.bytes("decode.head"));
  EXPECT_EQ(s.num_references, 10u);  // 4 shared x 2 containers + 2 heads
  EXPECT_EQ(s.saved_bytes, shared_bytes);
  wharf_container_free(p);
  wharf_container_free(d);
}

TEST_F(StoreTest, MismatchedDeclarationIsRefusedNamingBoth) {
  wharf_container* p = from_map(rt, &pw, store, "prefill");
  const wharf_weight_store_stats before = stats(store);
  const uint64_t bytes = mem(rt, WHARF_MEM_CONSTANTS);
  Weights bad;
  bad.add("embed", {64, 16}, 3.0f).add("other", {4}, 3.0f);
  std::string msg;
  wharf_container* c = from_map(rt, &bad, store, "verifier", WHARF_INVALID_ARGUMENT, &msg);
  EXPECT_EQ(c, nullptr);
  EXPECT_NE(msg.find("'embed'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'verifier'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'prefill'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[64, 16]"), std::string::npos) << msg;
  // Nothing changed: no allocation, no registration ("other" may still be declared anew).
  EXPECT_EQ(mem(rt, WHARF_MEM_CONSTANTS), bytes);
  EXPECT_EQ(stats(store).num_unique_constants, before.num_unique_constants);
  Weights ok;
  ok.add("other", {4, 4}, 1.0f);
  wharf_container_free(from_map(rt, &ok, store, "other"));
  wharf_container_free(p);
}

TEST_F(StoreTest, StorageIsReleasedWhenTheLastUserGoesInEitherOrder) {
  for (int order = 0; order < 2; ++order) {
    wharf_container* p = from_map(rt, &pw, store, "prefill");
    wharf_container* d = from_map(rt, &dw, store, "decode");
    const uint64_t both = mem(rt, WHARF_MEM_CONSTANTS);
    wharf_container* first_out = order == 0 ? p : d;
    wharf_container* last_out = order == 0 ? d : p;
    const uint64_t own_head = order == 0 ? pw.bytes("prefill.head") : dw.bytes("decode.head");
    wharf_container_free(first_out);
    EXPECT_EQ(mem(rt, WHARF_MEM_CONSTANTS), both - own_head) << "shared weights stay while one user remains";
    EXPECT_EQ(stats(store).saved_bytes, 0u);
    wharf_container_free(last_out);
    EXPECT_EQ(mem(rt, WHARF_MEM_CONSTANTS), 0u);
    EXPECT_EQ(stats(store).num_unique_constants, 0u);
  }
}

TEST_F(StoreTest, OpenRunKeepsSharedStorageAfterEveryContainerIsFreed) {
  wharf_container* p = from_map(rt, &pw, store, "prefill");
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(p, nullptr, nullptr, &run));
  wharf_container_free(p);
  wharf_weight_store_free(store);
  store = nullptr;
  EXPECT_GT(mem(rt, WHARF_MEM_CONSTANTS), 0u);
  EXPECT_EQ(first(run, "embed"), 1.0f);
  ASSERT_OK(wharf_run_end(run));
  EXPECT_EQ(mem(rt, WHARF_MEM_CONSTANTS), 0u);
}

TEST_F(StoreTest, ContainerUpdateDetachesOnlyThatContainer) {
  wharf_container* p = from_map(rt, &pw, store, "prefill");
  wharf_container* d = from_map(rt, &dw, store, "decode");
  Weights upd;
  upd.add("embed", {64, 32}, 7.0f);
  ASSERT_OK(wharf_container_update(p, upd.build(), nullptr));
  ASSERT_OK(wharf_container_swap(p));
  ASSERT_OK(wharf_container_free_inactive(p));
  wharf_run *rp = nullptr, *rd = nullptr;
  ASSERT_OK(wharf_run_begin(p, nullptr, nullptr, &rp));
  ASSERT_OK(wharf_run_begin(d, nullptr, nullptr, &rd));
  EXPECT_EQ(first(rp, "embed"), 7.0f);
  EXPECT_EQ(first(rd, "embed"), 1.0f);
  EXPECT_NE(view_of(rp, "embed").data, view_of(rd, "embed").data);
  EXPECT_EQ(view_of(rp, "norm").data, view_of(rd, "norm").data);
  ASSERT_OK(wharf_run_end(rp));
  ASSERT_OK(wharf_run_end(rd));
  EXPECT_EQ(stats(store).saved_bytes, shared_bytes - pw.bytes("embed"));
  wharf_container_free(p);
  wharf_container_free(d);
}

TEST_F(StoreTest, StoreUpdateWritesOnceAndSwapPublishesEverywhere) {
  wharf_container* p = from_map(rt, &pw, store, "prefill");
  wharf_container* d = from_map(rt, &dw, store, "decode");
  EXPECT_CODE(wharf_weight_store_swap(store), WHARF_FAILED_PRECONDITION);
  const uint64_t before = mem(rt, WHARF_MEM_CONSTANTS);
  Weights upd;
  upd.add("embed", {64, 32}, 5.0f).add("norm", {32}, 5.0f).add("decode.head", {8, 32}, 5.0f);
  wharf_run* old_run = nullptr;
  ASSERT_OK(wharf_run_begin(d, nullptr, nullptr, &old_run));
  ASSERT_OK(wharf_weight_store_update(store, upd.build(), nullptr));
  // One copy per FQN, whatever the number of containers sharing it.
  EXPECT_EQ(mem(rt, WHARF_MEM_CONSTANTS), before + pw.bytes("embed") + pw.bytes("norm") + dw.bytes("decode.head"));
  ASSERT_OK(wharf_weight_store_swap(store));
  EXPECT_EQ(first(old_run, "embed"), 1.0f) << "a run begun before the swap keeps its generation";
  ASSERT_OK(wharf_run_end(old_run));
  wharf_run *rp = nullptr, *rd = nullptr;
  ASSERT_OK(wharf_run_begin(p, nullptr, nullptr, &rp));
  ASSERT_OK(wharf_run_begin(d, nullptr, nullptr, &rd));
  EXPECT_EQ(first(rp, "embed"), 5.0f);
  EXPECT_EQ(first(rd, "embed"), 5.0f);
  EXPECT_EQ(first(rp, "norm"), 5.0f);
  EXPECT_EQ(first(rd, "decode.head"), 5.0f);
  EXPECT_EQ(first(rp, "layers.0.w"), 1.0f);
  EXPECT_EQ(view_of(rp, "embed").data, view_of(rd, "embed").data);
  EXPECT_EQ(wharf_run_generation(rp), 2u);
  ASSERT_OK(wharf_run_end(rp));
  ASSERT_OK(wharf_run_end(rd));
  EXPECT_EQ(stats(store).saved_bytes, shared_bytes);
  // A container joining now shares the new weights.
  Weights third;
  third.add("embed", {64, 32}, 9.0f);
  wharf_container* t = from_map(rt, &third, store, "third");
  wharf_run* rt3 = nullptr;
  ASSERT_OK(wharf_run_begin(t, nullptr, nullptr, &rt3));
  EXPECT_EQ(first(rt3, "embed"), 5.0f);
  ASSERT_OK(wharf_run_end(rt3));
  EXPECT_CODE(wharf_weight_store_swap(store), WHARF_FAILED_PRECONDITION);
  wharf_container_free(t);
  wharf_container_free(p);
  wharf_container_free(d);
}

// A model package's tied weight: the checkpoint names it model.embed_tokens.weight, the
// compiled methods bind lm_head.weight; an update may use either name, not both.
TEST_F(StoreTest, AnAliasUpdatesTheWeightItNames) {
  wharf_container* p = from_map(rt, &pw, store, "prefill");
  wharf_container* d = from_map(rt, &dw, store, "decode");
  store->store->set_aliases({{"model.embed_tokens.weight", "embed"}});
  Weights upd;
  upd.add("model.embed_tokens.weight", {64, 32}, 7.0f).add("norm", {32}, 7.0f);
  ASSERT_OK(wharf_weight_store_update(store, upd.build(), nullptr));
  ASSERT_OK(wharf_weight_store_swap(store));
  wharf_run* r = nullptr;
  ASSERT_OK(wharf_run_begin(d, nullptr, nullptr, &r));
  EXPECT_EQ(first(r, "embed"), 7.0f);
  EXPECT_EQ(first(r, "norm"), 7.0f);
  wharf_tensor_view v;
  std::memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  St nf(wharf_run_get_tensor(r, "model.embed_tokens.weight", &v));
  EXPECT_EQ(nf.code(), WHARF_NOT_FOUND) << "the alias is a name for updates, not a constant";
  ASSERT_OK(wharf_run_end(r));
  // Both names in one update: refused, nothing staged.
  Weights both;
  both.add("model.embed_tokens.weight", {64, 32}, 8.0f).add("embed", {64, 32}, 8.0f);
  St st(wharf_weight_store_update(store, both.build(), nullptr));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << st.msg();
  EXPECT_TRUE(st.has("'model.embed_tokens.weight' and 'embed' name one weight")) << st.msg();
  EXPECT_CODE(wharf_weight_store_swap(store), WHARF_FAILED_PRECONDITION);
  // Without aliases the name is unknown to the store.
  store->store->set_aliases({});
  St unknown(wharf_weight_store_update(store, upd.build(), nullptr));
  EXPECT_NE(unknown.code(), WHARF_OK) << "model.embed_tokens.weight is no constant of the store";
  wharf_container_free(p);
  wharf_container_free(d);
}

TEST_F(StoreTest, InvalidStoreUpdateStagesNothing) {
  wharf_container* p = from_map(rt, &pw, store, "prefill");
  wharf_container* d = from_map(rt, &dw, store, "decode");
  const uint64_t before = mem(rt, WHARF_MEM_CONSTANTS);
  Weights unknown;
  unknown.add("embed", {64, 32}, 5.0f).add("nope", {2}, 5.0f);
  EXPECT_CODE(wharf_weight_store_update(store, unknown.build(), nullptr), WHARF_NOT_FOUND);
  Weights wrong;
  wrong.add("embed", {64, 32}, 5.0f).add("norm", {31}, 5.0f);
  EXPECT_CODE(wharf_weight_store_update(store, wrong.build(), nullptr), WHARF_INVALID_ARGUMENT);
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  EXPECT_CODE(wharf_weight_store_update(store, unknown.build(), &o), WHARF_UNSUPPORTED);
  EXPECT_EQ(mem(rt, WHARF_MEM_CONSTANTS), before);
  EXPECT_CODE(wharf_weight_store_swap(store), WHARF_FAILED_PRECONDITION);
  EXPECT_CODE(wharf_container_swap(p), WHARF_FAILED_PRECONDITION);
  wharf_container_free(p);
  wharf_container_free(d);
}

// Store updates add up until the swap: two updates touching different containers (and an
// empty one) are all published by one swap, and the store tracks the newest storage.
TEST_F(StoreTest, StoreUpdatesAccumulateUntilTheSwap) {
  wharf_container* p = from_map(rt, &pw, store, "prefill");
  wharf_container* d = from_map(rt, &dw, store, "decode");
  Weights u1, u2, empty;
  u1.add("prefill.head", {16, 32}, 3.0f).add("embed", {64, 32}, 3.0f);
  u2.add("decode.head", {8, 32}, 4.0f).add("embed", {64, 32}, 4.0f);
  ASSERT_OK(wharf_weight_store_update(store, u1.build(), nullptr));
  ASSERT_OK(wharf_weight_store_update(store, u2.build(), nullptr));
  ASSERT_OK(wharf_weight_store_update(store, empty.build(), nullptr));
  ASSERT_OK(wharf_weight_store_swap(store));
  wharf_run *rp = nullptr, *rd = nullptr;
  ASSERT_OK(wharf_run_begin(p, nullptr, nullptr, &rp));
  ASSERT_OK(wharf_run_begin(d, nullptr, nullptr, &rd));
  EXPECT_EQ(first(rp, "prefill.head"), 3.0f);
  EXPECT_EQ(first(rd, "decode.head"), 4.0f);
  EXPECT_EQ(first(rp, "embed"), 4.0f) << "the later update of a FQN wins";
  EXPECT_EQ(view_of(rp, "embed").data, view_of(rd, "embed").data);
  ASSERT_OK(wharf_run_end(rp));
  ASSERT_OK(wharf_run_end(rd));
  ASSERT_OK(wharf_container_free_inactive(p));
  ASSERT_OK(wharf_container_free_inactive(d));
  wharf_weight_store_stats s = stats(store);
  EXPECT_EQ(s.num_unique_constants, 6u);
  EXPECT_EQ(s.num_references, 10u);
  // require_full names a missing FQN and stages nothing.
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.require_full = 1;
  St st(wharf_weight_store_update(store, u1.build(), &o));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(st.msg().find("require_full"), std::string::npos) << st.msg();
  EXPECT_CODE(wharf_weight_store_swap(store), WHARF_FAILED_PRECONDITION);
  wharf_container_free(p);
  wharf_container_free(d);
}

// A store's storage lives on its runtime's device: a container of another runtime must not
// join it (it would be handed memory it cannot address, accounted to the other runtime).
TEST_F(StoreTest, StoreOfAnotherRuntimeIsRefused) {
  wharf_runtime* other = host_runtime();
  std::string msg;
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.name = "stranger";
  o.store = store;
  wharf_container* c = nullptr;
  St st(wharf_container_create_from_map(other, pw.build(), &o, &c));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << st.msg();
  EXPECT_NE(st.msg().find("another runtime"), std::string::npos) << st.msg();
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(stats(store).num_unique_constants, 0u);
  EXPECT_EQ(mem(other, WHARF_MEM_CONSTANTS), 0u);
  wharf_runtime_free(other);
}

// The fold of a store update is written for the members that declare derived constants;
// members without any are staged without calling it.
int g_fold_calls = 0;
wharf_status* doubling_fold(wharf_run* run, void*) {
  ++g_fold_calls;
  wharf_tensor_view w{}, w2{};
  if (wharf_status* s = wharf_run_get_tensor(run, "w", &w)) return s;
  if (wharf_status* s = wharf_run_get_tensor(run, "w2", &w2)) return s;  // NOT_FOUND for "plain"
  for (int i = 0; i < 4; ++i) static_cast<float*>(w2.data)[i] = 2 * static_cast<const float*>(w.data)[i];
  return nullptr;
}

TEST_F(StoreTest, StoreFoldRunsOnlyForContainersWithDerivedConstants) {
  int64_t s4[1] = {4};
  wharf_constant_decl decls[2] = {
      {sizeof(wharf_constant_decl), "w", WHARF_DTYPE_F32, 1, s4, WHARF_PLACEMENT_DEVICE, 0},
      {sizeof(wharf_constant_decl), "w2", WHARF_DTYPE_F32, 1, s4, WHARF_PLACEMENT_DEVICE, WHARF_CONSTANT_DERIVED}};
  wharf_container* c[2] = {nullptr, nullptr};
  const char* names[2] = {"folded", "plain"};
  for (int i = 0; i < 2; ++i) {
    wharf_container_options o;
    wharf_container_options_init(&o);
    o.name = names[i];
    o.constants = decls;
    o.num_constants = i == 0 ? 2 : 1;
    o.store = store;
    ASSERT_OK(wharf_container_create(rt, &o, &c[i]));
  }
  Weights w;
  w.add("w", {4}, 3.0f);
  wharf_update_options uo;
  wharf_update_options_init(&uo);
  EXPECT_CODE(wharf_weight_store_update(store, w.build(), &uo), WHARF_INVALID_ARGUMENT);  // "folded" needs a fold
  uo.fold = doubling_fold;
  g_fold_calls = 0;
  ASSERT_OK(wharf_weight_store_update(store, w.build(), &uo));
  EXPECT_EQ(g_fold_calls, 1);
  ASSERT_OK(wharf_weight_store_swap(store));
  wharf_run* r = nullptr;
  ASSERT_OK(wharf_run_begin(c[0], nullptr, nullptr, &r));
  EXPECT_EQ(first(r, "w2"), 6.0f);
  ASSERT_OK(wharf_run_end(r));
  ASSERT_OK(wharf_run_begin(c[1], nullptr, nullptr, &r));
  EXPECT_EQ(first(r, "w"), 3.0f);
  ASSERT_OK(wharf_run_end(r));
  wharf_container_free(c[0]);
  wharf_container_free(c[1]);
}

// Readers begin a run on prefill, then one on decode: the decode run, begun later, must
// never see an older store generation than the prefill one, and every run sees one value
// across all its weights.
TEST_F(StoreTest, RunsAcrossContainersNeverSeeAMixDuringStoreSwaps) {
  wharf_container* p = from_map(rt, &pw, store, "prefill");
  wharf_container* d = from_map(rt, &dw, store, "decode");
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, runs{0};
  auto reader = [&] {
    while (!stop) {
      wharf_run *rp = nullptr, *rd = nullptr;
      if (wharf_run_begin(p, nullptr, nullptr, &rp) != nullptr) {
        ++bad;
        continue;
      }
      float vp = first(rp, "embed");
      if (first(rp, "norm") != vp) ++bad;
      if (wharf_run_begin(d, nullptr, nullptr, &rd) != nullptr) {
        ++bad;
        wharf_status_free(wharf_run_end(rp));
        continue;
      }
      float vd = first(rd, "embed");
      if (first(rd, "layers.1.w") != vd || vd < vp) ++bad;
      wharf_status_free(wharf_run_end(rd));
      wharf_status_free(wharf_run_end(rp));
      ++runs;
    }
  };
  std::thread a(reader), b(reader);
  for (int r = 2; r < 40; ++r) {
    Weights upd;
    for (const char* n : kShared)
      upd.add(n,
              n == std::string("norm")    ? std::vector<int64_t>{32}
              : n == std::string("embed") ? std::vector<int64_t>{64, 32}
                                          : std::vector<int64_t>{32, 32},
              float(r));
    ASSERT_OK(wharf_weight_store_update(store, upd.build(), nullptr));
    ASSERT_OK(wharf_weight_store_swap(store));
    ASSERT_OK(wharf_container_free_inactive(p));
    ASSERT_OK(wharf_container_free_inactive(d));
  }
  stop = true;
  a.join();
  b.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(runs.load(), 0);
  wharf_container_free(p);
  wharf_container_free(d);
}

// ---- sessions --------------------------------------------------------------------------

struct SessionTest : ::testing::Test {
  wharf_runtime* rt = nullptr;
  wharf_container *prefill_c = nullptr, *decode_c = nullptr, *plain = nullptr;
  Weights w;
  std::vector<float> init_h;  // initial value of "h"
  int64_t kv_shape[2] = {4, 16};
  int64_t h_shape[1] = {8};
  int64_t other_shape[1] = {3};

  wharf_container* make(const char* name, std::vector<wharf_state_decl> states, uint64_t budget = 0) {
    wharf_constant_decl cd{sizeof(wharf_constant_decl), "w", WHARF_DTYPE_F32, 1, h_shape, WHARF_PLACEMENT_DEVICE, 0};
    wharf_container_options o;
    wharf_container_options_init(&o);
    o.name = name;
    o.constants = &cd;
    o.num_constants = 1;
    o.states = states.data();
    o.num_states = states.size();
    o.max_session_bytes = budget;
    wharf_container* c = nullptr;
    St st(wharf_container_create(rt, &o, &c));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    if (!c) return nullptr;
    Weights one;
    one.add("w", {8}, 1.0f);
    St u(wharf_container_update(c, one.build(), nullptr));
    EXPECT_EQ(u.code(), WHARF_OK) << u.msg();
    St s(wharf_container_swap(c));
    EXPECT_EQ(s.code(), WHARF_OK) << s.msg();
    return c;
  }
  wharf_tensor_view h_init{};
  void SetUp() override {
    rt = host_runtime();
    init_h.assign(8, 0.5f);
    h_init = wharf_tensor_view{
        sizeof(wharf_tensor_view), 0, init_h.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, h_shape, nullptr};
    prefill_c = make("prefill", {{sizeof(wharf_state_decl), "kv", WHARF_DTYPE_F32, 2, kv_shape, nullptr},
                                 {sizeof(wharf_state_decl), "h", WHARF_DTYPE_F32, 1, h_shape, &h_init}});
    decode_c = make("decode", {{sizeof(wharf_state_decl), "kv", WHARF_DTYPE_F32, 2, kv_shape, nullptr}});
    plain = make("plain", {});
  }
  void TearDown() override {
    wharf_container_free(prefill_c);
    wharf_container_free(decode_c);
    wharf_container_free(plain);
    wharf_runtime_free(rt);
  }
  wharf_session* session(std::vector<wharf_container*> cs, wharf_code want = WHARF_OK,
                         const wharf_session_options* o = nullptr) {
    wharf_session* s = nullptr;
    St st(wharf_session_create(rt, cs.data(), cs.size(), o, &s));
    EXPECT_EQ(st.code(), want) << st.msg();
    return s;
  }
  // Begins a run and waits for the state's initialisation, so the host may touch it.
  wharf_run* begin(wharf_container* c, wharf_session* s) {
    wharf_run* run = nullptr;
    St st(wharf_run_begin(c, s, nullptr, &run));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    St sync(wharf_runtime_synchronize(rt));
    return run;
  }
  float* state(wharf_run* run, const char* fqn) { return static_cast<float*>(view_of(run, fqn).data); }
};

TEST_F(SessionTest, RunsNameTheirSessionExplicitly) {
  wharf_run* run = nullptr;
  St st(wharf_run_begin(prefill_c, nullptr, nullptr, &run));
  EXPECT_EQ(st.code(), WHARF_FAILED_PRECONDITION);
  EXPECT_NE(st.msg().find("session"), std::string::npos) << st.msg();
  EXPECT_EQ(run, nullptr);
  wharf_session* s = session({decode_c});
  EXPECT_CODE(wharf_run_begin(prefill_c, s, nullptr, &run), WHARF_INVALID_ARGUMENT);
  // A container without states runs with or without a session covering it.
  ASSERT_OK(wharf_run_begin(plain, nullptr, nullptr, &run));
  ASSERT_OK(wharf_run_end(run));
  wharf_session_free(s);
  EXPECT_CODE(wharf_session_create(rt, nullptr, 0, nullptr, &s), WHARF_INVALID_ARGUMENT);
}

TEST_F(SessionTest, SessionsAreIsolated) {
  wharf_session* a = session({prefill_c});
  wharf_session* b = session({prefill_c});
  wharf_run* ra = begin(prefill_c, a);
  float* pa = state(ra, "kv");
  for (int i = 0; i < 64; ++i) pa[i] = float(100 + i);
  ASSERT_OK(wharf_run_end(ra));
  wharf_run* rb = begin(prefill_c, b);
  float* pb = state(rb, "kv");
  EXPECT_NE(pa, pb);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(pb[i], 0.0f) << "a new session starts from zeros";
  for (int i = 0; i < 64; ++i) pb[i] = float(-i);
  ASSERT_OK(wharf_run_end(rb));
  ra = begin(prefill_c, a);
  EXPECT_EQ(state(ra, "kv"), pa) << "a session keeps its buffers between runs";
  for (int i = 0; i < 64; ++i) ASSERT_EQ(pa[i], float(100 + i));
  EXPECT_EQ(wharf_session_state_bytes(a), uint64_t(64 * 4 + 8 * 4));
  ASSERT_OK(wharf_run_end(ra));
  wharf_session_free(a);
  wharf_session_free(b);
}

TEST_F(SessionTest, OneBufferForAStateSharedByTwoContainers) {
  wharf_session* s = session({prefill_c, decode_c});
  EXPECT_EQ(wharf_session_state_bytes(s), uint64_t(64 * 4 + 8 * 4)) << "kv counted once";
  wharf_run* r1 = begin(prefill_c, s);
  float* kv = state(r1, "kv");
  kv[5] = 42.0f;
  ASSERT_OK(wharf_run_end(r1));
  wharf_run* r2 = begin(decode_c, s);
  EXPECT_EQ(state(r2, "kv"), kv);
  EXPECT_EQ(state(r2, "kv")[5], 42.0f);
  wharf_tensor_view hv{};
  EXPECT_CODE(wharf_run_get_tensor(r2, "nope", &hv), WHARF_NOT_FOUND);
  ASSERT_OK(wharf_run_end(r2));
  wharf_session_free(s);

  // Disagreeing declarations under one FQN are refused, naming both containers.
  int64_t other_kv[2] = {4, 8};
  wharf_container* odd = make("odd", {{sizeof(wharf_state_decl), "kv", WHARF_DTYPE_F32, 2, other_kv, nullptr}});
  wharf_container* cs[2] = {prefill_c, odd};
  wharf_session* bad = nullptr;
  St st(wharf_session_create(rt, cs, 2, nullptr, &bad));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(st.msg().find("'prefill'"), std::string::npos) << st.msg();
  EXPECT_NE(st.msg().find("'odd'"), std::string::npos) << st.msg();
  wharf_container_free(odd);
}

TEST_F(SessionTest, InitialValuesResetAndFork) {
  wharf_session* a = session({prefill_c});
  wharf_run* r = begin(prefill_c, a);
  float* h = state(r, "h");
  for (int i = 0; i < 8; ++i) ASSERT_EQ(h[i], 0.5f);
  for (int i = 0; i < 8; ++i) h[i] = float(i);
  state(r, "kv")[0] = 9.0f;
  EXPECT_CODE(wharf_session_reset(a), WHARF_BUSY);
  wharf_session* f = nullptr;
  EXPECT_CODE(wharf_session_fork(a, &f), WHARF_BUSY);
  ASSERT_OK(wharf_run_end(r));

  ASSERT_OK(wharf_session_fork(a, &f));
  wharf_run* rf = begin(prefill_c, f);
  float* fh = state(rf, "h");
  EXPECT_NE(fh, h);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(fh[i], float(i)) << "a fork starts equal";
  EXPECT_EQ(state(rf, "kv")[0], 9.0f);
  fh[0] = -1.0f;
  ASSERT_OK(wharf_run_end(rf));
  r = begin(prefill_c, a);
  EXPECT_EQ(state(r, "h")[0], 0.0f) << "and then diverges";
  ASSERT_OK(wharf_run_end(r));

  ASSERT_OK(wharf_session_reset(a));
  r = begin(prefill_c, a);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(state(r, "h")[i], 0.5f) << "reset restores the initial value";
  EXPECT_EQ(state(r, "kv")[0], 0.0f);
  ASSERT_OK(wharf_run_end(r));
  rf = begin(prefill_c, f);
  EXPECT_EQ(state(rf, "h")[0], -1.0f) << "the fork is untouched by the source's reset";
  ASSERT_OK(wharf_run_end(rf));
  wharf_session_free(a);
  wharf_session_free(f);
}

TEST_F(SessionTest, OneRunAtATimePerSessionManySessionsAtOnce) {
  wharf_session* s = session({prefill_c});
  wharf_run *r1 = nullptr, *r2 = nullptr;
  ASSERT_OK(wharf_run_begin(prefill_c, s, nullptr, &r1));
  EXPECT_CODE(wharf_run_begin(prefill_c, s, nullptr, &r2), WHARF_BUSY);
  EXPECT_EQ(r2, nullptr);
  ASSERT_OK(wharf_run_end(r1));
  ASSERT_OK(wharf_run_begin(prefill_c, s, nullptr, &r2));
  ASSERT_OK(wharf_run_end(r2));
  wharf_session_free(s);

  // Eight threads, a session each, writing their id and finding it intact every time.
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      wharf_session* own = nullptr;
      wharf_container* c = t % 2 ? prefill_c : decode_c;
      St st(wharf_session_create(rt, &c, 1, nullptr, &own));
      if (st.code() != WHARF_OK) {
        ++bad;
        return;
      }
      for (int i = 0; i < 200; ++i) {
        wharf_run* run = nullptr;
        if (wharf_run_begin(c, own, nullptr, &run) != nullptr) {
          ++bad;
          continue;
        }
        float v = -1;
        wharf_status_free(wharf_run_read(run, "kv", 0, &v, 4));  // waits for the stream
        if (i > 0 && v != float(t)) ++bad;
        float* kv = static_cast<float*>(view_of(run, "kv").data);
        kv[0] = float(t);
        wharf_status_free(wharf_run_end(run));
      }
      wharf_session_free(own);
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(SessionTest, BudgetsAndLazyAllocation) {
  const uint64_t per_session = 64 * 4 + 8 * 4;
  const uint64_t templates = mem(rt, WHARF_MEM_STATE);  // "h"'s initial value
  EXPECT_EQ(templates, 8u * 4);
  wharf_container* limited =
      make("limited", {{sizeof(wharf_state_decl), "kv", WHARF_DTYPE_F32, 2, kv_shape, nullptr}}, 2 * 64 * 4);
  wharf_session* s1 = session({limited});
  wharf_session* s2 = session({limited});
  wharf_session* s3 = session({limited}, WHARF_RESOURCE_EXHAUSTED);
  EXPECT_EQ(s3, nullptr);
  EXPECT_EQ(mem(rt, WHARF_MEM_STATE), templates) << "state is allocated at the first run";
  wharf_session_free(s1);
  s3 = session({limited});
  EXPECT_NE(s3, nullptr) << "a freed session returns its budget";
  wharf_session_free(s2);
  wharf_session_free(s3);

  wharf_session_options o;
  wharf_session_options_init(&o);
  o.max_state_bytes = per_session - 1;
  EXPECT_EQ(session({prefill_c}, WHARF_RESOURCE_EXHAUSTED, &o), nullptr);
  o.max_state_bytes = 0;
  o.allocate_eagerly = 1;
  wharf_session* eager = session({prefill_c}, WHARF_OK, &o);
  EXPECT_EQ(mem(rt, WHARF_MEM_STATE), templates + per_session);
  wharf_session* lazy = session({prefill_c});
  wharf_run* r = begin(prefill_c, lazy);
  EXPECT_EQ(mem(rt, WHARF_MEM_STATE), templates + 2 * per_session);
  ASSERT_OK(wharf_run_end(r));
  r = begin(prefill_c, eager);
  EXPECT_EQ(state(r, "h")[3], 0.5f) << "eager sessions are initialised too";
  ASSERT_OK(wharf_run_end(r));
  wharf_session_free(eager);
  wharf_session_free(lazy);
  EXPECT_EQ(mem(rt, WHARF_MEM_STATE), templates);
  wharf_container_free(limited);
}

TEST_F(SessionTest, StateSurvivesWeightSwapsAndOutlivesItsHandle) {
  wharf_session* s = session({prefill_c});
  wharf_run* r = begin(prefill_c, s);
  state(r, "kv")[1] = 3.0f;
  ASSERT_OK(wharf_run_end(r));
  Weights upd;
  upd.add("w", {8}, 2.0f);
  ASSERT_OK(wharf_container_update(prefill_c, upd.build(), nullptr));
  ASSERT_OK(wharf_container_swap(prefill_c));
  r = begin(prefill_c, s);
  EXPECT_EQ(first(r, "w"), 2.0f);
  EXPECT_EQ(state(r, "kv")[1], 3.0f) << "the conversation keeps its state across the swap";
  // Freeing the session handle while its run is open: the run keeps it alive.
  wharf_session_free(s);
  EXPECT_EQ(state(r, "kv")[1], 3.0f);
  ASSERT_OK(wharf_run_end(r));
  EXPECT_EQ(mem(rt, WHARF_MEM_STATE), 8u * 4);
}

TEST_F(SessionTest, StateDeclarationErrors) {
  int64_t bad_shape[1] = {-1};
  wharf_constant_decl cd{sizeof(wharf_constant_decl), "w", WHARF_DTYPE_F32, 1, h_shape, WHARF_PLACEMENT_DEVICE, 0};
  auto create = [&](std::vector<wharf_state_decl> states) {
    wharf_container_options o;
    wharf_container_options_init(&o);
    o.constants = &cd;
    o.num_constants = 1;
    o.states = states.data();
    o.num_states = states.size();
    wharf_container* c = nullptr;
    St st(wharf_container_create(rt, &o, &c));
    wharf_container_free(c);
    return st.code();
  };
  EXPECT_EQ(create({{sizeof(wharf_state_decl), "w", WHARF_DTYPE_F32, 1, h_shape, nullptr}}),
            WHARF_INVALID_ARGUMENT);  // a constant's FQN
  EXPECT_EQ(create({{sizeof(wharf_state_decl), "s", WHARF_DTYPE_F32, 1, h_shape, nullptr},
                    {sizeof(wharf_state_decl), "s", WHARF_DTYPE_F32, 1, h_shape, nullptr}}),
            WHARF_INVALID_ARGUMENT);
  EXPECT_EQ(create({{sizeof(wharf_state_decl), "s", WHARF_DTYPE_F32, 1, bad_shape, nullptr}}), WHARF_INVALID_ARGUMENT);
  EXPECT_EQ(create({{sizeof(wharf_state_decl), "", WHARF_DTYPE_F32, 1, h_shape, nullptr}}), WHARF_INVALID_ARGUMENT);
  wharf_tensor_view wrong{
      sizeof(wharf_tensor_view), 0, init_h.data(), WHARF_DTYPE_F16, WHARF_DEVICE_CPU, 0, 1, h_shape, nullptr};
  EXPECT_EQ(create({{sizeof(wharf_state_decl), "s", WHARF_DTYPE_F32, 1, h_shape, &wrong}}), WHARF_INVALID_ARGUMENT);
  EXPECT_EQ(create({{sizeof(wharf_state_decl), "s", WHARF_DTYPE_F32, 1, h_shape, &h_init}}), WHARF_OK);
  EXPECT_EQ(mem(rt, WHARF_MEM_STATE), 8u * 4) << "refused and freed containers leave no templates behind";
}

// A store member may not swap a pending store update on its own.

TEST(AbiContracts, StoreMemberSwapOfPendingStoreUpdateIsRefused) {
  wharf_runtime* rt = wharf_test::make_runtime(WHARF_BACKEND_HOST);
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  float x[4] = {1, 1, 1, 1}, y[4] = {2, 2, 2, 2};
  int64_t shape[1] = {4};
  wharf_constant_map* map = map_of("w", x, shape);
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.store = store;
  wharf_container *p = nullptr, *d = nullptr;
  o.name = "prefill";
  ASSERT_OK(wharf_container_create_from_map(rt, map, &o, &p));
  o.name = "decode";
  ASSERT_OK(wharf_container_create_from_map(rt, map, &o, &d));
  wharf_constant_map_free(map);
  map = map_of("w", y, shape);
  ASSERT_OK(wharf_weight_store_update(store, map, nullptr));
  EXPECT_EQ(wharf_container_has_staged(p), 1);
  St st(wharf_container_swap(p));
  EXPECT_EQ(st.code(), WHARF_FAILED_PRECONDITION);
  EXPECT_TRUE(st.has("wharf_weight_store_swap")) << st.msg();
  ASSERT_OK(wharf_weight_store_swap(store));
  EXPECT_EQ(wharf_container_has_staged(p), 0);
  wharf_constant_map_free(map);
  wharf_container_free(p);
  wharf_container_free(d);
  wharf_weight_store_free(store);
  wharf_runtime_free(rt);
}

}  // namespace
