// SPDX-License-Identifier: Apache-2.0
// Containers on the host backend: copy-on-write generations, validate-then-copy, swap and
// rollback, leases that keep storage alive until the device is done, in-place updates,
// fold callbacks, user-managed constants, and concurrency.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/handles.h"
#include "constants/constant_map.h"
#include "constants/container.h"
#include "constants/generation.h"
#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::f32_decl;
using wharf_test::f32_view;
using wharf_test::map_of;
using wharf_test::Model;
using wharf_test::St;

// Three copy threads and a 1 MiB staging ring: small enough that updates cycle through it.
wharf_runtime* host_runtime(uint64_t limit = 0) {
  return wharf_test::make_runtime(WHARF_BACKEND_HOST, {limit, 3, 1 << 20});
}

// A set of float tensors in pageable memory, and a map over them.
struct Weights {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> data;
  wharf_constant_map* map = nullptr;

  Weights() = default;
  Weights(const Weights&) = delete;
  ~Weights() { wharf_constant_map_free(map); }

  void add(const std::string& name, std::vector<int64_t> shape, float value) {
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    names.push_back(name);
    shapes.push_back(std::move(shape));
    data.emplace_back(n, value);
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

void model(Weights* w, float value) {
  w->add("embed", {64, 32}, value);
  w->add("layers.0.w", {32, 32}, value);
  w->add("layers.1.w", {32, 32}, value);
  w->add("norm", {32}, value);
}

float read_first(wharf_run* run, const char* fqn) {
  wharf_tensor_view v{};
  St st(wharf_run_get_tensor(run, fqn, &v));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  return st.code() == WHARF_OK ? static_cast<float*>(v.data)[0] : -1.0f;
}

void* address_of(wharf_run* run, const char* fqn) {
  wharf_tensor_view v{};
  St st(wharf_run_get_tensor(run, fqn, &v));
  return v.data;
}

uint64_t constants_bytes(wharf_runtime* rt, bool peak = false) {
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  St st(wharf_runtime_get_memory_stats(rt, &ms));
  return peak ? ms.peak[WHARF_MEM_CONSTANTS] : ms.current[WHARF_MEM_CONSTANTS];
}

struct Fixture : ::testing::Test {
  wharf_runtime* rt = nullptr;
  wharf_container* c = nullptr;
  Weights base;
  void SetUp() override {
    rt = host_runtime();
    model(&base, 1.0f);
    St st(wharf_container_create_from_map(rt, base.build(), nullptr, &c));
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
  }
  void TearDown() override {
    wharf_container_free(c);
    wharf_runtime_free(rt);
  }
  // Updates the named constants to `value` and swaps.
  void update_swap(const std::vector<std::string>& names, float value, Weights* keep) {
    for (const auto& n : names) {
      for (size_t i = 0; i < base.names.size(); ++i)
        if (base.names[i] == n) keep->add(n, base.shapes[i], value);
    }
    ASSERT_OK(wharf_container_update(c, keep->build(), nullptr));
    ASSERT_OK(wharf_container_swap(c));
  }
};

TEST_F(Fixture, CreateFromMapIsReadyToRun) {
  EXPECT_EQ(wharf_container_num_constants(c), 4u);
  EXPECT_EQ(wharf_container_generation(c), 1u);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(read_first(run, "layers.1.w"), 1.0f);
  EXPECT_EQ(wharf_run_generation(run), 1u);
  EXPECT_EQ(wharf_run_stream(run), nullptr);  // host backend
  wharf_tensor_view v{};
  St nf(wharf_run_get_tensor(run, "nope", &v));
  EXPECT_EQ(nf.code(), WHARF_NOT_FOUND);
  EXPECT_NE(nf.msg().find("'nope'"), std::string::npos);
  ASSERT_OK(wharf_run_end(run));
  // The data was copied: the caller's memory can change without affecting the model.
  base.data[0][0] = 42.0f;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(read_first(run, "embed"), 1.0f);
  ASSERT_OK(wharf_run_end(run));
  wharf_constant_info info;
  info.struct_size = sizeof info;
  ASSERT_OK(wharf_container_get_constant_info(c, 0, &info));
  EXPECT_STREQ(info.fqn, "embed");
  EXPECT_EQ(info.nbytes, 64u * 32u * 4u);
  EXPECT_EQ(info.placement, WHARF_PLACEMENT_DEVICE);
  St oob(wharf_container_get_constant_info(c, 4, &info));
  EXPECT_EQ(oob.code(), WHARF_INVALID_ARGUMENT);
}

TEST_F(Fixture, CopyOnWriteCostsOnlyTheUpdatedBytes) {
  uint64_t before = constants_bytes(rt);
  EXPECT_EQ(before, (64 * 32 + 32 * 32 * 2 + 32) * 4u);
  wharf_runtime_reset_peak(rt);
  wharf_run* old_run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &old_run));
  void* embed_before = address_of(old_run, "embed");
  ASSERT_OK(wharf_run_end(old_run));

  Weights up;
  up.add("layers.0.w", {32, 32}, 2.0f);
  ASSERT_OK(wharf_container_update(c, up.build(), nullptr));
  // Extra memory during the update = the updated constant's bytes, not a model copy.
  EXPECT_EQ(constants_bytes(rt, true) - before, 32u * 32u * 4u);
  ASSERT_OK(wharf_container_swap(c));
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(read_first(run, "layers.0.w"), 2.0f);
  EXPECT_EQ(read_first(run, "embed"), 1.0f);
  EXPECT_EQ(address_of(run, "embed"), embed_before);  // shared slot, not copied
  ASSERT_OK(wharf_run_end(run));
}

TEST_F(Fixture, PartialUpdateNeverStale) {
  Weights a, b;
  update_swap({"layers.0.w"}, 2.0f, &a);  // active: layers.0.w = 2
  update_swap({"layers.1.w"}, 3.0f, &b);  // built from the active one, not the older inactive
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(read_first(run, "layers.0.w"), 2.0f);
  EXPECT_EQ(read_first(run, "layers.1.w"), 3.0f);
  EXPECT_EQ(read_first(run, "embed"), 1.0f);
  ASSERT_OK(wharf_run_end(run));
}

TEST_F(Fixture, SwapRollsBackAndFreeInactive) {
  Weights a;
  update_swap({"norm"}, 5.0f, &a);
  uint64_t g = wharf_container_generation(c);
  ASSERT_OK(wharf_container_swap(c));  // roll back
  EXPECT_GT(wharf_container_generation(c), g);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(read_first(run, "norm"), 1.0f);
  ASSERT_OK(wharf_run_end(run));
  ASSERT_OK(wharf_container_free_inactive(c));
  St st(wharf_container_swap(c));
  EXPECT_EQ(st.code(), WHARF_FAILED_PRECONDITION);
  // Only the active generation's storage remains.
  EXPECT_EQ(constants_bytes(rt), (64 * 32 + 32 * 32 * 2 + 32) * 4u);
}

TEST_F(Fixture, ValidationChangesNothing) {
  float x[32 * 32] = {0};
  int64_t good[2] = {32, 32}, bad[2] = {32, 16}, strides[2] = {1, 32};
  struct Case {
    const char* fqn;
    wharf_tensor_view v{};
    wharf_code code;
    const char* needle;
  } cases[] = {
      {"layers.9.w",
       {sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, good, nullptr},
       WHARF_NOT_FOUND,
       "not declared"},
      {"layers.0.w",
       {sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F16, WHARF_DEVICE_CPU, 0, 2, good, nullptr},
       WHARF_INVALID_ARGUMENT,
       "dtype F32 expected, got F16"},
      {"layers.0.w",
       {sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, bad, nullptr},
       WHARF_INVALID_ARGUMENT,
       "shape [32, 32] expected, got [32, 16]"},
      {"layers.0.w",
       {sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, good, strides},
       WHARF_INVALID_ARGUMENT,
       "non-contiguous"},
      {"layers.0.w",
       {sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, WHARF_DEVICE_CUDA, 0, 2, good, nullptr},
       WHARF_INVALID_ARGUMENT,
       "host backend"},
  };
  uint64_t bytes = constants_bytes(rt);
  for (const auto& cs : cases) {
    // A valid entry first: it must not be applied either.
    Weights w;
    w.add("norm", {32}, 9.0f);
    wharf_constant_map* m = w.build();
    St add(wharf_constant_map_set(m, cs.fqn, &cs.v));
    ASSERT_EQ(add.code(), WHARF_OK) << add.msg();
    St st(wharf_container_update(c, m, nullptr));
    EXPECT_EQ(st.code(), cs.code) << cs.needle;
    EXPECT_NE(st.msg().find(cs.needle), std::string::npos) << st.msg();
    EXPECT_NE(st.msg().find(std::string("'") + cs.fqn + "'"), std::string::npos) << st.msg();
    EXPECT_EQ(constants_bytes(rt), bytes);
    St sw(wharf_container_swap(c));  // nothing was staged
    EXPECT_EQ(sw.code(), WHARF_FAILED_PRECONDITION);
  }
  EXPECT_EQ(wharf_container_generation(c), 1u);
}

TEST_F(Fixture, RequireFullNamesTheMissingConstant) {
  Weights w;
  w.add("embed", {64, 32}, 2.0f);
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.require_full = 1;
  St st(wharf_container_update(c, w.build(), &o));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(st.msg().find("layers.0.w"), std::string::npos) << st.msg();
}

TEST(Container, FreshContainerCannotSwapUntilComplete) {
  wharf_runtime* rt = host_runtime();
  int64_t s1[1] = {8}, s2[2] = {2, 4};
  wharf_constant_decl decls[2] = {{sizeof(wharf_constant_decl), "a", WHARF_DTYPE_F32, 1, s1, WHARF_PLACEMENT_DEVICE, 0},
                                  {sizeof(wharf_constant_decl), "b", WHARF_DTYPE_I32, 2, s2, WHARF_PLACEMENT_HOST, 0}};
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.name = "fresh";
  o.constants = decls;
  o.num_constants = 2;
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create(rt, &o, &c));
  wharf_run* run = nullptr;
  St none(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(none.code(), WHARF_FAILED_PRECONDITION);
  EXPECT_EQ(run, nullptr);
  std::vector<float> a(8, 1.5f);
  wharf_constant_map* m = nullptr;
  ASSERT_OK(wharf_constant_map_create(&m));
  wharf_tensor_view va{sizeof(wharf_tensor_view), 0, a.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, s1, nullptr};
  ASSERT_OK(wharf_constant_map_set(m, "a", &va));
  ASSERT_OK(wharf_container_update(c, m, nullptr));
  St sw(wharf_container_swap(c));
  EXPECT_EQ(sw.code(), WHARF_FAILED_PRECONDITION);
  EXPECT_NE(sw.msg().find("'b'"), std::string::npos) << sw.msg();
  std::vector<int32_t> b(8, 7);
  wharf_constant_map* m2 = nullptr;
  ASSERT_OK(wharf_constant_map_create(&m2));
  wharf_tensor_view vb{sizeof(wharf_tensor_view), 0, b.data(), WHARF_DTYPE_I32, WHARF_DEVICE_CPU, 0, 2, s2, nullptr};
  ASSERT_OK(wharf_constant_map_set(m2, "b", &vb));
  ASSERT_OK(wharf_container_update(c, m2, nullptr));  // adds to what is staged
  ASSERT_OK(wharf_container_swap(c));
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(read_first(run, "a"), 1.5f);
  wharf_tensor_view v{};
  ASSERT_OK(wharf_run_get_tensor(run, "b", &v));
  EXPECT_EQ(static_cast<int32_t*>(v.data)[7], 7);
  EXPECT_EQ(v.device_type, WHARF_DEVICE_CPU);
  ASSERT_OK(wharf_run_end(run));
  wharf_constant_map_free(m);
  wharf_constant_map_free(m2);
  wharf_container_free(c);
  wharf_runtime_free(rt);
}

TEST(Container, BadDeclarationsAreRefused) {
  wharf_runtime* rt = host_runtime();
  int64_t s[1] = {4}, neg[1] = {-4};
  wharf_constant_decl dup[2] = {{sizeof(wharf_constant_decl), "a", WHARF_DTYPE_F32, 1, s, WHARF_PLACEMENT_DEVICE, 0},
                                {sizeof(wharf_constant_decl), "a", WHARF_DTYPE_F32, 1, s, WHARF_PLACEMENT_DEVICE, 0}};
  wharf_constant_decl negd[1] = {
      {sizeof(wharf_constant_decl), "n", WHARF_DTYPE_F32, 1, neg, WHARF_PLACEMENT_DEVICE, 0}};
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.constants = dup;
  o.num_constants = 2;
  wharf_container* c = nullptr;
  St st(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(st.msg().find("declared twice"), std::string::npos);
  o.constants = negd;
  o.num_constants = 1;
  St st2(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(st2.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(st2.msg().find("'n'"), std::string::npos);
  EXPECT_EQ(c, nullptr);
  // Values a C caller can store in enum fields and flags that name nothing: refused with the
  // value (read as an integer: no undefined enum load, which the asan/ubsan build checks).
  wharf_constant_decl odd[1] = {{sizeof(wharf_constant_decl), "p", WHARF_DTYPE_F32, 1, s, WHARF_PLACEMENT_DEVICE, 0x6}};
  o.constants = odd;
  St flags(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(flags.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(flags.msg().find("unknown flags 0x6"), std::string::npos) << flags.msg();
  odd[0].flags = 0;
  int32_t bad_placement = 7, bad_dtype = 99;
  std::memcpy(&odd[0].placement, &bad_placement, sizeof bad_placement);
  St placement(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(placement.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(placement.msg().find("unknown placement 7"), std::string::npos) << placement.msg();
  odd[0].placement = WHARF_PLACEMENT_DEVICE;
  std::memcpy(&odd[0].dtype, &bad_dtype, sizeof bad_dtype);
  St dtype(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(dtype.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(dtype.msg().find("unknown dtype value 99"), std::string::npos) << dtype.msg();
  EXPECT_EQ(c, nullptr);
  wharf_runtime_free(rt);
}

TEST(Container, OutOfMemoryMidUpdateLeavesActiveAndLeaksNothing) {
  // Room for the model (4 KiB + 4 KiB) plus one more 4 KiB constant, not two.
  wharf_runtime* rt = host_runtime(3 * 4096);
  Weights w;
  w.add("a", {1024}, 1.0f);
  w.add("b", {1024}, 1.0f);
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create_from_map(rt, w.build(), nullptr, &c));
  uint64_t before = constants_bytes(rt);
  Weights up;
  up.add("a", {1024}, 2.0f);
  up.add("b", {1024}, 2.0f);
  St st(wharf_container_update(c, up.build(), nullptr));
  EXPECT_EQ(st.code(), WHARF_OUT_OF_MEMORY);
  EXPECT_NE(st.msg().find("'b'"), std::string::npos) << st.msg();
  EXPECT_EQ(constants_bytes(rt), before);  // the partial generation was released
  St sw(wharf_container_swap(c));
  EXPECT_EQ(sw.code(), WHARF_FAILED_PRECONDITION);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(read_first(run, "a"), 1.0f);
  ASSERT_OK(wharf_run_end(run));
  // In place needs no extra memory, so it fits.
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  ASSERT_OK(wharf_container_update(c, up.map, &o));
  EXPECT_EQ(constants_bytes(rt), before);
  wharf_container_free(c);
  wharf_runtime_free(rt);
}

TEST_F(Fixture, RunKeepsItsGenerationAcrossSwaps) {
  wharf_run* old_run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &old_run));
  Weights a;
  update_swap({"embed", "layers.0.w", "layers.1.w", "norm"}, 2.0f, &a);
  ASSERT_OK(wharf_container_free_inactive(c));
  // The open run still reads generation 1's storage, which is still allocated.
  EXPECT_EQ(wharf_run_generation(old_run), 1u);
  EXPECT_EQ(read_first(old_run, "embed"), 1.0f);
  uint64_t model_bytes = (64 * 32 + 32 * 32 * 2 + 32) * 4u;
  EXPECT_EQ(constants_bytes(rt), 2 * model_bytes);
  ASSERT_OK(wharf_run_end(old_run));
  ASSERT_OK(wharf_runtime_synchronize(rt));
  ASSERT_OK(wharf_container_free_inactive(c));  // reaps finished runs
  EXPECT_EQ(constants_bytes(rt), model_bytes);
}

TEST_F(Fixture, StorageOutlivesRunUntilTheDeviceIsDone) {
  // Block the runtime's stream: the run's end event cannot complete until released.
  std::atomic<bool> release{false};
  ASSERT_TRUE(rt->rt->stream()
                  .enqueue_host([&] {
                    while (!release) std::this_thread::yield();
                  })
                  .ok());
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  ASSERT_OK(wharf_run_end(run));
  Weights a;
  update_swap({"embed", "layers.0.w", "layers.1.w", "norm"}, 2.0f, &a);
  ASSERT_OK(wharf_container_free_inactive(c));
  uint64_t model_bytes = (64 * 32 + 32 * 32 * 2 + 32) * 4u;
  EXPECT_EQ(constants_bytes(rt), 2 * model_bytes);  // the device may still read gen 1
  release = true;
  ASSERT_OK(wharf_runtime_synchronize(rt));
  ASSERT_OK(wharf_container_free_inactive(c));
  EXPECT_EQ(constants_bytes(rt), model_bytes);
}

TEST_F(Fixture, InPlaceUpdateUsesNoExtraMemoryAndWaitsForRuns) {
  uint64_t before = constants_bytes(rt);
  wharf_runtime_reset_peak(rt);
  wharf_run* open = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &open));
  Weights w;
  w.add("layers.0.w", {32, 32}, 8.0f);
  w.build();
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  std::atomic<bool> done{false};
  std::thread t([&] {
    St st(wharf_container_update(c, w.map, &o));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(done.load());                        // waits for the open run
  EXPECT_EQ(read_first(open, "layers.0.w"), 1.0f);  // which still sees old data
  ASSERT_OK(wharf_run_end(open));
  t.join();
  EXPECT_EQ(constants_bytes(rt, true), before);  // no extra memory at any point
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(read_first(run, "layers.0.w"), 8.0f);
  EXPECT_EQ(wharf_run_generation(run), 2u);  // new data, new generation id
  EXPECT_EQ(wharf_container_generation(c), 2u);
  ASSERT_OK(wharf_run_end(run));
}

// Storage owned outside the container's generations (as an offloader holds what a caller's
// captured graph copies from) is never overwritten by an in-place update: the constant gets
// fresh storage. The check counted the caller's reference into the generation as a copy, so
// one outside owner went unseen and the held bytes were overwritten.
TEST_F(Fixture, InPlaceUpdateLeavesStorageHeldOutsideTheContainerAlone) {
  struct Told : wharf::GenerationListener {
    std::vector<std::shared_ptr<wharf::Generation>> gens;
    void generation_staged(const std::shared_ptr<wharf::Generation>& gen) override { gens.push_back(gen); }
  };
  auto told = std::make_shared<Told>();
  c->c->add_listener(told);
  Weights w2;
  w2.add("layers.0.w", {32, 32}, 5.0f);
  w2.build();
  ASSERT_OK(wharf_container_update(c, w2.map, nullptr));
  ASSERT_OK(wharf_container_swap(c));
  ASSERT_OK(wharf_container_free_inactive(c));
  ASSERT_EQ(told->gens.size(), 1u);
  const int idx = c->c->find("layers.0.w");
  ASSERT_GE(idx, 0);
  std::shared_ptr<wharf::Slot> held = told->gens[0]->slots[size_t(idx)];
  told->gens.clear();  // now the active generation and `held` own the storage
  Weights w8;
  w8.add("layers.0.w", {32, 32}, 8.0f);
  w8.build();
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  ASSERT_OK(wharf_container_update(c, w8.map, &o));
  EXPECT_EQ(static_cast<const float*>(held->data())[0], 5.0f) << "the in-place update wrote storage held elsewhere";
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(read_first(run, "layers.0.w"), 8.0f);
  ASSERT_OK(wharf_run_end(run));
}

// A GenerationListener recording what it is told (ModelGraphs prepares for swaps this way).
struct RecordingListener : wharf::GenerationListener {
  wharf::Container* c = nullptr;
  std::vector<std::shared_ptr<wharf::Generation>> told;
  std::vector<uint64_t> generation_seen;  // the container's generation id during the call
  std::vector<int> update_code;           // what a write from inside the call answered
  void generation_staged(const std::shared_ptr<wharf::Generation>& gen) override {
    told.push_back(gen);
    generation_seen.push_back(c->generation());  // takes the container's lock: none is held
    wharf::ConstantMap empty;
    update_code.push_back(int(c->update(empty, wharf::UpdateOptions()).code()));
  }
};

// Listeners are told of each generation an update stages (on the writer's thread, no
// container lock held, the write's admission held), of an in-place update's generation, and
// of a weight store update's staging of each member; not of swaps and rollbacks (nothing new
// to serve); one that is gone is dropped.
TEST_F(Fixture, ListenersAreToldOfEachStagedGeneration) {
  auto l = std::make_shared<RecordingListener>();
  l->c = c->c.get();
  c->c->add_listener(l);
  Weights w1;
  w1.add("norm", {32}, 2.0f);
  ASSERT_OK(wharf_container_update(c, w1.build(), nullptr));
  ASSERT_EQ(l->told.size(), 1u);
  EXPECT_EQ(l->generation_seen[0], 1u) << "told before the swap";
  EXPECT_EQ(l->update_code[0], int(wharf::Code::kBusy)) << "the write's admission is held while listeners run";
  ASSERT_OK(wharf_container_swap(c));
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  const int norm = c->c->find("norm");
  EXPECT_EQ(l->told[0]->slots[size_t(norm)]->data(), address_of(run, "norm")) << "the generation the swap published";
  ASSERT_OK(wharf_run_end(run));
  ASSERT_OK(wharf_container_swap(c));  // a rollback: nothing told
  EXPECT_EQ(l->told.size(), 1u);
  // In place (no run open: storage reused, told after the publish).
  Weights w2;
  w2.add("norm", {32}, 3.0f);
  w2.build();
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  const uint64_t before_in_place = wharf_container_generation(c);
  ASSERT_OK(wharf_container_update(c, w2.map, &o));
  ASSERT_EQ(l->told.size(), 2u);
  EXPECT_EQ(l->generation_seen[1], before_in_place + 1) << "storage reused: told after the publish";
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(l->told[1]->slots[size_t(norm)]->data(), address_of(run, "norm"));
  EXPECT_EQ(read_first(run, "norm"), 3.0f);
  // In place with the constant pinned by this open run (no wait): fresh storage, nothing
  // reused, so the listener is told before the publish (runs go on meanwhile).
  Weights w3;
  w3.add("norm", {32}, 4.0f);
  w3.build();
  o.in_place_max_wait_ms = 0;
  const uint64_t before_fresh = wharf_container_generation(c);
  ASSERT_OK(wharf_container_update(c, w3.map, &o));
  ASSERT_EQ(l->told.size(), 3u);
  EXPECT_EQ(l->generation_seen[2], before_fresh) << "nothing reused: told before the publish";
  EXPECT_EQ(read_first(run, "norm"), 3.0f);  // the open run keeps its data
  ASSERT_OK(wharf_run_end(run));
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(l->told[2]->slots[size_t(norm)]->data(), address_of(run, "norm"));
  EXPECT_EQ(read_first(run, "norm"), 4.0f);
  ASSERT_OK(wharf_run_end(run));
  // Gone: no longer called.
  std::weak_ptr<RecordingListener> gone = l;
  l.reset();
  EXPECT_TRUE(gone.expired());
  ASSERT_OK(wharf_container_update(c, w1.map, nullptr));
}

TEST(Container, ListenersAreToldOfAWeightStoreUpdatesStaging) {
  wharf_runtime* rt = host_runtime();
  wharf_weight_store* store = nullptr;
  ASSERT_OK(wharf_weight_store_create(rt, &store));
  Weights base;
  model(&base, 1.0f);
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.store = store;
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create_from_map(rt, base.build(), &co, &c));
  auto l = std::make_shared<RecordingListener>();
  l->c = c->c.get();
  c->c->add_listener(l);
  Weights w;
  w.add("norm", {32}, 5.0f);
  ASSERT_OK(wharf_weight_store_update(store, w.build(), nullptr));
  ASSERT_EQ(l->told.size(), 1u);
  EXPECT_EQ(l->generation_seen[0], 1u);
  ASSERT_OK(wharf_weight_store_swap(store));
  EXPECT_EQ(l->told.size(), 1u);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(l->told[0]->slots[size_t(c->c->find("norm"))]->data(), address_of(run, "norm"));
  EXPECT_EQ(read_first(run, "norm"), 5.0f);
  ASSERT_OK(wharf_run_end(run));
  l.reset();
  wharf_container_free(c);
  wharf_weight_store_free(store);
  wharf_runtime_free(rt);
}

// Fold: "wt" is derived as the transpose of "w", computed through the run it is given.
wharf_status* transpose_fold(wharf_run* run, void* user) {
  auto* calls = static_cast<int*>(user);
  ++*calls;
  wharf_tensor_view w, wt;
  wharf_status* st = wharf_run_get_tensor(run, "w", &w);
  if (st) return st;
  if ((st = wharf_run_get_tensor(run, "wt", &wt))) return st;
  const float* src = static_cast<const float*>(w.data);
  float* dst = static_cast<float*>(wt.data);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) dst[j * 2 + i] = src[i * 3 + j];
  return nullptr;
}

wharf_status* failing_fold(wharf_run*, void*) {
  wharf_status* st = nullptr;
  wharf_dtype d;
  st = wharf_dtype_from_name("fold-failed", &d);  // a real status from the library
  return st;
}

TEST(Container, FoldComputesDerivedConstants) {
  wharf_runtime* rt = host_runtime();
  int64_t sw[2] = {2, 3}, swt[2] = {3, 2};
  wharf_constant_decl decls[2] = {
      {sizeof(wharf_constant_decl), "w", WHARF_DTYPE_F32, 2, sw, WHARF_PLACEMENT_DEVICE, 0},
      {sizeof(wharf_constant_decl), "wt", WHARF_DTYPE_F32, 2, swt, WHARF_PLACEMENT_DEVICE, WHARF_CONSTANT_DERIVED}};
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.constants = decls;
  co.num_constants = 2;
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create(rt, &co, &c));
  float w[6] = {0, 1, 2, 3, 4, 5};
  wharf_constant_map* m = nullptr;
  ASSERT_OK(wharf_constant_map_create(&m));
  wharf_tensor_view v{sizeof(wharf_tensor_view), 0, w, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, sw, nullptr};
  ASSERT_OK(wharf_constant_map_set(m, "w", &v));
  St nofold(wharf_container_update(c, m, nullptr));
  EXPECT_EQ(nofold.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(nofold.msg().find("fold"), std::string::npos);

  wharf_update_options o;
  wharf_update_options_init(&o);
  o.fold = failing_fold;
  St failed(wharf_container_update(c, m, &o));
  EXPECT_EQ(failed.code(), WHARF_NOT_FOUND);  // the callback's own status comes back
  EXPECT_NE(failed.msg().find("fold-failed"), std::string::npos);
  St sw0(wharf_container_swap(c));
  EXPECT_EQ(sw0.code(), WHARF_FAILED_PRECONDITION);  // the failed update staged nothing

  int calls = 0;
  o.fold = transpose_fold;
  o.fold_user = &calls;
  ASSERT_OK(wharf_container_update(c, m, &o));
  EXPECT_EQ(calls, 1);
  ASSERT_OK(wharf_container_swap(c));
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  wharf_tensor_view t{};
  ASSERT_OK(wharf_run_get_tensor(run, "wt", &t));
  const float* tt = static_cast<const float*>(t.data);
  EXPECT_EQ(tt[0], 0);
  EXPECT_EQ(tt[1], 3);
  EXPECT_EQ(tt[2], 1);
  EXPECT_EQ(tt[5], 5);
  ASSERT_OK(wharf_run_end(run));
  // A map may not supply a derived constant.
  wharf_constant_map* bad = nullptr;
  ASSERT_OK(wharf_constant_map_create(&bad));
  wharf_tensor_view vt{sizeof(wharf_tensor_view), 0, w, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, swt, nullptr};
  ASSERT_OK(wharf_constant_map_set(bad, "wt", &vt));
  St derived(wharf_container_update(c, bad, &o));
  EXPECT_EQ(derived.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(derived.msg().find("derived"), std::string::npos);
  wharf_constant_map_free(bad);
  wharf_constant_map_free(m);
  wharf_container_free(c);
  wharf_runtime_free(rt);
}

// What a fold callback's run marks read-only (issue 21, item 5): every constant the update
// did not give fresh storage shares its slot with the active generation, which open and new
// runs read; only derived constants and the constants the update wrote may be written.
struct FoldFlags {
  int calls = 0;
  uint32_t by_name[3] = {0, 0, 0};   // a, b, d through wharf_run_get_tensor
  uint32_t by_index[3] = {0, 0, 0};  // the same through wharf_run_get_tensor_at
};

wharf_status* recording_fold(wharf_run* run, void* user) {
  auto* f = static_cast<FoldFlags*>(user);
  ++f->calls;
  const char* names[3] = {"a", "b", "d"};
  for (int i = 0; i < 3; ++i) {
    wharf_tensor_view v{};
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    if (wharf_status* st = wharf_run_get_tensor(run, names[i], &v)) return st;
    f->by_name[i] = v.flags;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    if (wharf_status* st = wharf_run_get_tensor_at(run, size_t(i), &v)) return st;
    f->by_index[i] = v.flags;
  }
  // d = a + b, written through its (writable) view.
  wharf_tensor_view a, b, d;
  a.struct_size = b.struct_size = d.struct_size = sizeof(wharf_tensor_view);
  if (wharf_status* st = wharf_run_get_tensor(run, "a", &a)) return st;
  if (wharf_status* st = wharf_run_get_tensor(run, "b", &b)) return st;
  if (wharf_status* st = wharf_run_get_tensor(run, "d", &d)) return st;
  for (int i = 0; i < 4; ++i)
    static_cast<float*>(d.data)[i] = static_cast<const float*>(a.data)[i] + static_cast<const float*>(b.data)[i];
  return nullptr;
}

TEST(Container, FoldRunMarksEveryConstantItMayNotWriteReadOnly) {
  wharf_runtime* rt = host_runtime();
  int64_t s4[1] = {4};
  wharf_constant_decl decls[3] = {
      {sizeof(wharf_constant_decl), "a", WHARF_DTYPE_F32, 1, s4, WHARF_PLACEMENT_DEVICE, 0},
      {sizeof(wharf_constant_decl), "b", WHARF_DTYPE_F32, 1, s4, WHARF_PLACEMENT_DEVICE, 0},
      {sizeof(wharf_constant_decl), "d", WHARF_DTYPE_F32, 1, s4, WHARF_PLACEMENT_DEVICE, WHARF_CONSTANT_DERIVED}};
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.name = "folded";
  co.constants = decls;
  co.num_constants = 3;
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create(rt, &co, &c));
  float a[4] = {1, 1, 1, 1}, b[4] = {10, 10, 10, 10}, a2[4] = {2, 2, 2, 2}, b3[4] = {30, 30, 30, 30};
  auto map_of = [&](std::vector<std::pair<const char*, float*>> entries) {
    wharf_constant_map* m = nullptr;
    EXPECT_EQ(wharf_constant_map_create(&m), nullptr);
    for (auto& e : entries) {
      wharf_tensor_view v{sizeof(wharf_tensor_view), 0, e.second, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, s4, nullptr};
      St st(wharf_constant_map_set(m, e.first, &v));
      EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    }
    return m;
  };
  const uint32_t RO = WHARF_VIEW_READ_ONLY;
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.fold = recording_fold;

  // The first update writes everything: all fresh, all writable.
  FoldFlags first;
  o.fold_user = &first;
  wharf_constant_map* full = map_of({{"a", a}, {"b", b}});
  ASSERT_OK(wharf_container_update(c, full, &o));
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_EQ(first.calls, 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(first.by_name[i] & RO, 0u) << i;

  // A run holds the active generation while a partial update folds: "b" is that
  // generation's slot, read-only in the fold; "a" (fresh) and "d" (derived) are writable.
  wharf_run* open = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &open));
  FoldFlags partial;
  o.fold_user = &partial;
  wharf_constant_map* only_a = map_of({{"a", a2}});
  ASSERT_OK(wharf_container_update(c, only_a, &o));
  EXPECT_EQ(partial.calls, 1);
  EXPECT_EQ(partial.by_name[0], 0u);
  EXPECT_EQ(partial.by_name[1], RO);
  EXPECT_EQ(partial.by_name[2], 0u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(partial.by_index[i], partial.by_name[i]) << i;
  ASSERT_OK(wharf_container_swap(c));

  // In place: the fresh "b" is writable, "a" (shared with the generation the open run
  // pinned... and the rollback generation) is not.
  FoldFlags in_place;
  o.fold_user = &in_place;
  o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  o.in_place_max_wait_ms = 0;
  wharf_constant_map* only_b = map_of({{"b", b3}});
  ASSERT_OK(wharf_container_update(c, only_b, &o));
  EXPECT_EQ(in_place.calls, 1);
  EXPECT_EQ(in_place.by_name[0], RO);
  EXPECT_EQ(in_place.by_name[1], 0u);
  EXPECT_EQ(in_place.by_name[2], 0u);

  // In an ordinary run every constant is read-only.
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  const char* names[3] = {"a", "b", "d"};
  for (const char* n : names) {
    wharf_tensor_view v{};
    std::memset(&v, 0, sizeof v);
    ASSERT_OK(wharf_run_get_tensor(run, n, &v));
    EXPECT_EQ(v.flags, RO) << n;
  }
  float d[4];
  ASSERT_OK(wharf_run_read(run, "d", 0, d, sizeof d));
  EXPECT_EQ(d[0], 32);  // a2 + b3: the folds wrote what they were allowed to
  ASSERT_OK(wharf_run_end(run));
  ASSERT_OK(wharf_run_read(open, "d", 0, d, sizeof d));
  EXPECT_EQ(d[0], 11);  // the open run's generation is untouched
  ASSERT_OK(wharf_run_end(open));

  // A caller's map hands back its own (writable) memory; a map loaded from a file a
  // read-only mapping.
  wharf_tensor_view v{};
  std::memset(&v, 0, sizeof v);
  ASSERT_OK(wharf_constant_map_find(full, "a", &v));
  EXPECT_EQ(v.flags, 0u);
  const std::string path = ::testing::TempDir() + "fold_flags.safetensors";
  ASSERT_OK(wharf_constant_map_save_safetensors(full, path.c_str()));
  wharf_constant_map* loaded = nullptr;
  ASSERT_OK(wharf_constant_map_load_safetensors(path.c_str(), &loaded));
  ASSERT_OK(wharf_constant_map_find(loaded, "a", &v));
  EXPECT_EQ(v.flags, RO);
  const char* fqn = nullptr;
  ASSERT_OK(wharf_constant_map_get_entry(loaded, 0, &fqn, &v));
  EXPECT_EQ(v.flags, RO);
  wharf_constant_map_free(loaded);
  std::remove(path.c_str());

  wharf_constant_map_free(full);
  wharf_constant_map_free(only_a);
  wharf_constant_map_free(only_b);
  wharf_container_free(c);
  wharf_runtime_free(rt);
}

struct ReleaseLog {
  std::atomic<int> calls{0};
  void* last = nullptr;
};
void on_release(void* data, void* user) {
  auto* log = static_cast<ReleaseLog*>(user);
  log->last = data;
  ++log->calls;
}

TEST_F(Fixture, UserManagedConstantReleasedOnceWhenUnreferenced) {
  std::vector<float> mine(32, 6.0f);
  int64_t s[1] = {32};
  wharf_tensor_view v{sizeof(wharf_tensor_view), 0, mine.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, s, nullptr};
  ReleaseLog log;
  ASSERT_OK(wharf_container_bind_user_constant(c, "norm", &v, on_release, &log));
  ASSERT_OK(wharf_container_swap(c));
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(address_of(run, "norm"), mine.data());  // bound, not copied
  ASSERT_OK(wharf_run_end(run));
  Weights w;
  update_swap({"norm"}, 1.0f, &w);  // replaces it in the new active generation
  EXPECT_EQ(log.calls.load(), 0);   // the inactive generation still holds it
  ASSERT_OK(wharf_runtime_synchronize(rt));
  ASSERT_OK(wharf_container_free_inactive(c));
  EXPECT_EQ(log.calls.load(), 1);
  EXPECT_EQ(log.last, mine.data());
  int64_t bad[1] = {31};
  wharf_tensor_view vb{
      sizeof(wharf_tensor_view), 0, mine.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, bad, nullptr};
  St st(wharf_container_bind_user_constant(c, "norm", &vb, on_release, &log));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_EQ(log.calls.load(), 1);  // not called on error
}

TEST_F(Fixture, MixedSourceKindsInOneMap) {
  // Pinned and "device" memory of the host backend, beside pageable memory.
  wharf::Buffer pinned, device;
  auto& dev = rt->rt->device();
  ASSERT_TRUE(dev.allocate(wharf::MemKind::kPinnedHost, wharf::MemTag::kWorkspace, 32 * 32 * 4, "src", &pinned).ok());
  ASSERT_TRUE(dev.allocate(wharf::MemKind::kDevice, wharf::MemTag::kWorkspace, 32 * 32 * 4, "src", &device).ok());
  for (int i = 0; i < 32 * 32; ++i) {
    static_cast<float*>(pinned.data())[i] = 3.0f;
    static_cast<float*>(device.data())[i] = 4.0f;
  }
  Weights w;
  w.add("embed", {64, 32}, 2.0f);
  wharf_constant_map* m = w.build();
  int64_t s[2] = {32, 32};
  wharf_tensor_view vp{
      sizeof(wharf_tensor_view), 0, pinned.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, s, nullptr};
  wharf_tensor_view vd{
      sizeof(wharf_tensor_view), 0, device.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, s, nullptr};
  ASSERT_OK(wharf_constant_map_set(m, "layers.0.w", &vp));
  ASSERT_OK(wharf_constant_map_set(m, "layers.1.w", &vd));
  ASSERT_OK(wharf_container_update(c, m, nullptr));
  ASSERT_OK(wharf_container_swap(c));
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(read_first(run, "embed"), 2.0f);
  EXPECT_EQ(read_first(run, "layers.0.w"), 3.0f);
  EXPECT_EQ(read_first(run, "layers.1.w"), 4.0f);
  ASSERT_OK(wharf_run_end(run));
}

// Readers on several threads check that every constant of their run carries the same
// stamp (one generation's values) while a writer updates everything and swaps in a loop.
TEST_F(Fixture, ConcurrentRunsSeeExactlyOneGeneration) {
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, runs{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      while (!stop) {
        wharf_run* run = nullptr;
        St st(wharf_run_begin(c, nullptr, nullptr, &run));
        if (st.code() != WHARF_OK) {
          ++torn;
          continue;
        }
        float stamp = -1;
        for (const char* n : {"embed", "layers.0.w", "layers.1.w", "norm"}) {
          wharf_tensor_view v{};
          St ts(wharf_run_get_tensor(run, n, &v));
          const float* p = static_cast<const float*>(v.data);
          size_t count = std::strcmp(n, "embed") == 0 ? 64 * 32 : std::strcmp(n, "norm") == 0 ? 32 : 32 * 32;
          double sum = 0;
          for (size_t i = 0; i < count; ++i) sum += p[i];
          float value = float(sum / double(count));
          if (stamp < 0) stamp = value;
          if (value != stamp || p[0] != stamp) ++torn;
        }
        St end(wharf_run_end(run));
        ++runs;
      }
    });
  }
  for (int k = 2; k < 60; ++k) {
    Weights w;
    model(&w, float(k));
    ASSERT_OK(wharf_container_update(c, w.build(), nullptr));
    ASSERT_OK(wharf_container_swap(c));
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GT(runs.load(), 0);
  EXPECT_EQ(wharf_container_generation(c), 59u);
}

TEST_F(Fixture, ConcurrentUpdatesAreNeverInterleaved) {
  Weights a, b;
  model(&a, 10.0f);
  model(&b, 20.0f);
  a.build();
  b.build();
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ok{0}, busy{0};
    auto updater = [&](wharf_constant_map* m) {
      St st(wharf_container_update(c, m, nullptr));
      if (st.code() == WHARF_OK)
        ++ok;
      else if (st.code() == WHARF_BUSY)
        ++busy;
    };
    std::thread t1(updater, a.map), t2(updater, b.map);
    t1.join();
    t2.join();
    EXPECT_EQ(ok + busy, 2);
    EXPECT_GE(ok.load(), 1);
    ASSERT_OK(wharf_container_swap(c));
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
    float e = read_first(run, "embed");
    EXPECT_TRUE(e == 10.0f || e == 20.0f);
    EXPECT_EQ(read_first(run, "layers.0.w"), e);
    EXPECT_EQ(read_first(run, "norm"), e);
    ASSERT_OK(wharf_run_end(run));
  }
}

TEST_F(Fixture, HostBackendRejectsNativeStreams) {
  wharf_run* run = nullptr;
  int fake;
  St st(wharf_run_begin(c, nullptr, &fake, &run));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_EQ(run, nullptr);
  EXPECT_EQ(wharf_run_end(nullptr), nullptr);
}

// A fold callback's status, the 0.3 queries of containers and runs, and update options'
// wait_stream / in_place_max_wait_ms.

wharf_status* budget_exceeded_fold(wharf_run* target, void* user) {
  wharf_tensor_view w{};
  std::memset(&w, 0, sizeof w);
  if (wharf_status* s = wharf_run_get_tensor(target, "w", &w)) return s;
  ++*static_cast<int*>(user);
  return wharf_status_create(WHARF_RESOURCE_EXHAUSTED, "fold: scratch budget of 64 bytes exceeded");
}

TEST(AbiStatus, FoldCallbackStatusReachesTheCallerWithItsCodeAndMessage) {
  wharf_runtime* rt = wharf_test::make_runtime(WHARF_BACKEND_HOST);
  int64_t shape[1] = {4};
  wharf_constant_decl decls[2] = {f32_decl("w", shape), f32_decl("scaled", shape, WHARF_CONSTANT_DERIVED)};
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.name = "folded";
  o.constants = decls;
  o.num_constants = 2;
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create(rt, &o, &c));
  float w[4] = {1, 2, 3, 4};
  wharf_constant_map* map = map_of("w", w, shape);
  int calls = 0;
  wharf_update_options u;
  wharf_update_options_init(&u);
  u.fold = budget_exceeded_fold;
  u.fold_user = &calls;
  St st(wharf_container_update(c, map, &u));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(st.code(), WHARF_RESOURCE_EXHAUSTED);
  // The callback's message, verbatim, after the container's context.
  EXPECT_EQ(st.msg(), "container 'folded': fold callback: fold: scratch budget of 64 bytes exceeded");
  EXPECT_EQ(wharf_container_has_staged(c), 0);
  wharf_constant_map_free(map);
  wharf_container_free(c);
  wharf_runtime_free(rt);
}

TEST(AbiQueries, NameStatesIndicesStagedAndRunSession) {
  wharf_runtime* rt = wharf_test::make_runtime(WHARF_BACKEND_HOST);
  int64_t shape[1] = {4}, hshape[1] = {2};
  wharf_constant_decl decls[2] = {f32_decl("a", shape), f32_decl("b", shape)};
  wharf_state_decl states[2];
  std::memset(states, 0, sizeof states);
  for (int i = 0; i < 2; ++i) {
    states[i].struct_size = sizeof states[i];
    states[i].fqn = i == 0 ? "kv" : "h";
    states[i].dtype = WHARF_DTYPE_F32;
    states[i].ndim = 1;
    states[i].shape = hshape;
  }
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.name = "decode";
  o.constants = decls;
  o.num_constants = 2;
  o.states = states;
  o.num_states = 2;
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create(rt, &o, &c));
  EXPECT_STREQ(wharf_container_name(c), "decode");
  EXPECT_STREQ(wharf_container_name(nullptr), "");
  ASSERT_EQ(wharf_container_num_states(c), 2u);
  wharf_state_info si;
  si.struct_size = sizeof si;
  ASSERT_OK(wharf_container_get_state_info(c, 1, &si));
  EXPECT_STREQ(si.fqn, "h");
  EXPECT_EQ(si.ndim, 1);
  EXPECT_EQ(si.shape[0], 2);
  EXPECT_EQ(si.nbytes, 8u);
  St past(wharf_container_get_state_info(c, 2, &si));
  EXPECT_EQ(past.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_EQ(wharf_container_find_constant(c, "b"), 1);
  EXPECT_EQ(wharf_container_find_constant(c, "kv"), -1);
  EXPECT_EQ(wharf_container_find_state(c, "kv"), 0);
  EXPECT_EQ(wharf_container_find_state(c, "nope"), -1);
  EXPECT_EQ(wharf_container_find_state(nullptr, "kv"), -1);

  EXPECT_EQ(wharf_container_has_staged(c), 0);
  float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
  wharf_constant_map* map = nullptr;
  ASSERT_OK(wharf_constant_map_create(&map));
  wharf_tensor_view va = f32_view(a, 1, shape), vb = f32_view(b, 1, shape);
  ASSERT_OK(wharf_constant_map_set(map, "a", &va));
  ASSERT_OK(wharf_constant_map_set(map, "b", &vb));
  ASSERT_OK(wharf_container_update(c, map, nullptr));
  EXPECT_EQ(wharf_container_has_staged(c), 1);
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_EQ(wharf_container_has_staged(c), 0);
  wharf_constant_map_free(map);

  wharf_session* session = nullptr;
  ASSERT_OK(wharf_session_create(rt, &c, 1, nullptr, &session));
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, session, nullptr, &run));
  // Index access gives what name access gives.
  wharf_tensor_view by_name, by_index;
  std::memset(&by_name, 0, sizeof by_name);
  std::memset(&by_index, 0, sizeof by_index);
  ASSERT_OK(wharf_run_get_tensor(run, "b", &by_name));
  ASSERT_OK(wharf_run_get_tensor_at(run, 1, &by_index));
  EXPECT_EQ(by_index.data, by_name.data);
  EXPECT_EQ(by_index.shape[0], 4);
  EXPECT_EQ(by_index.strides[0], 1);
  ASSERT_OK(wharf_run_get_tensor(run, "h", &by_name));
  ASSERT_OK(wharf_run_get_state_at(run, 1, &by_index));
  EXPECT_EQ(by_index.data, by_name.data);
  St oob(wharf_run_get_tensor_at(run, 2, &by_index));
  EXPECT_EQ(oob.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(oob.has("index 2") && oob.has("'decode'")) << oob.msg();
  St soob(wharf_run_get_state_at(run, 7, &by_index));
  EXPECT_EQ(soob.code(), WHARF_INVALID_ARGUMENT);
  // The run's session: a new reference, independent of the caller's.
  wharf_session* again = nullptr;
  ASSERT_OK(wharf_run_get_session(run, &again));
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again, session);
  EXPECT_EQ(wharf_session_state_bytes(again), wharf_session_state_bytes(session));
  wharf_session_free(session);  // the run and `again` keep the session
  ASSERT_OK(wharf_run_get_tensor_at(run, 0, &by_index));
  ASSERT_OK(wharf_run_end(run));
  wharf_session_free(again);
  wharf_container_free(c);
  wharf_runtime_free(rt);
}

TEST(AbiQueries, RunWithoutSessionHasNone) {
  Model m(1);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(m.c, nullptr, nullptr, &run));
  wharf_session* s = reinterpret_cast<wharf_session*>(0x1);
  ASSERT_OK(wharf_run_get_session(run, &s));
  EXPECT_EQ(s, nullptr);
  ASSERT_OK(wharf_run_end(run));
}

TEST(AbiUpdate, WaitStreamMustBeNullOnTheHostBackend) {
  Model m(1);
  float y[4] = {2, 2, 2, 2};
  wharf_constant_map* map = map_of("w", y, m.shape);
  wharf_update_options u;
  wharf_update_options_init(&u);
  int not_a_stream = 0;
  u.wait_stream = &not_a_stream;
  St st(wharf_container_update(m.c, map, &u));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(st.has("wait_stream")) << st.msg();
  wharf_constant_map_free(map);
}

TEST(AbiUpdate, InPlaceGivesANewGenerationAndHonoursItsWaitBound) {
  Model m(1);
  const uint64_t g0 = wharf_container_generation(m.c);
  float y[4] = {2, 2, 2, 2};
  wharf_constant_map* map = map_of("w", y, m.shape);
  wharf_update_options u;
  wharf_update_options_init(&u);
  u.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  ASSERT_OK(wharf_container_update(m.c, map, &u));
  const uint64_t g1 = wharf_container_generation(m.c);
  EXPECT_GT(g1, g0);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(m.c, nullptr, nullptr, &run));
  EXPECT_EQ(wharf_run_generation(run), g1);
  // An open run pins "w"; with in_place_max_wait_ms 0 the update does not wait for it: "w"
  // gets fresh storage and the open run keeps reading its data.
  float z[4] = {3, 3, 3, 3};
  wharf_constant_map* map2 = map_of("w", z, m.shape);
  u.in_place_max_wait_ms = 0;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_OK(wharf_container_update(m.c, map2, &u));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(900));
  EXPECT_GT(wharf_container_generation(m.c), g1);
  float got = 0;
  ASSERT_OK(wharf_run_read(run, "w", 0, &got, sizeof got));
  EXPECT_EQ(got, 2);
  ASSERT_OK(wharf_run_end(run));
  EXPECT_EQ(m.first(), 3);
  wharf_constant_map_free(map);
  wharf_constant_map_free(map2);
}

}  // namespace

// Names enter through declarations too: non-UTF-8 FQNs are refused there, and messages show
// a name with control characters escaped, never raw.
TEST(Container, DeclaredNamesMustBeUtf8AndAreQuotedInMessages) {
  wharf_runtime* rt = host_runtime();
  int64_t s[1] = {4};
  wharf_constant_decl d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.dtype = WHARF_DTYPE_F32;
  d.ndim = 1;
  d.shape = s;
  d.placement = WHARF_PLACEMENT_DEVICE;
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.constants = &d;
  o.num_constants = 1;
  wharf_container* c = nullptr;
  for (const char* bad : {"a\xc0\xaf", "\xed\xa0\x80", "w\xf4\x90\x80\x80", "t\xe2\x82"}) {
    d.fqn = bad;
    St st(wharf_container_create(rt, &o, &c));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << st.msg();
    EXPECT_NE(st.msg().find("UTF-8"), std::string::npos) << st.msg();
    EXPECT_EQ(c, nullptr);
  }
  d.fqn = "evil\n\x1b[31mname";
  d.flags = 0x10;  // refused, naming the constant
  St st(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_EQ(st.msg().find('\n'), std::string::npos) << st.msg();
  EXPECT_EQ(st.msg().find('\x1b'), std::string::npos) << st.msg();
  EXPECT_NE(st.msg().find("evil\\n"), std::string::npos) << st.msg();
  o.name = "bad\xff";
  d.flags = 0;
  d.fqn = "ok";
  St named(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(named.code(), WHARF_INVALID_ARGUMENT) << named.msg();
  wharf_runtime_free(rt);
}

// A swap with nothing staged says why: nothing has succeeded yet (a failed update stages
// nothing), or the inactive generation was freed.
TEST(Container, SwapWithNothingStagedSaysWhy) {
  wharf_runtime* rt = host_runtime();
  int64_t s[1] = {4};
  wharf_constant_decl d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.fqn = "w";
  d.dtype = WHARF_DTYPE_F32;
  d.ndim = 1;
  d.shape = s;
  d.placement = WHARF_PLACEMENT_DEVICE;
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.constants = &d;
  o.num_constants = 1;
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create(rt, &o, &c));
  float bad[3] = {1, 2, 3};
  int64_t s3[1] = {3};
  wharf_constant_map* m = nullptr;
  ASSERT_OK(wharf_constant_map_create(&m));
  wharf_tensor_view v{};
  std::memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.data = bad;
  v.dtype = WHARF_DTYPE_F32;
  v.device_type = WHARF_DEVICE_CPU;
  v.ndim = 1;
  v.shape = s3;
  ASSERT_OK(wharf_constant_map_set(m, "w", &v));
  St failed(wharf_container_update(c, m, nullptr));
  EXPECT_EQ(failed.code(), WHARF_INVALID_ARGUMENT);
  St swap1(wharf_container_swap(c));
  EXPECT_EQ(swap1.code(), WHARF_FAILED_PRECONDITION);
  EXPECT_NE(swap1.msg().find("no update has succeeded yet"), std::string::npos) << swap1.msg();
  float good[4] = {1, 2, 3, 4};
  v.data = good;
  v.shape = s;
  wharf_constant_map* m4 = nullptr;
  ASSERT_OK(wharf_constant_map_create(&m4));
  ASSERT_OK(wharf_constant_map_set(m4, "w", &v));
  ASSERT_OK(wharf_container_update(c, m4, nullptr));
  ASSERT_OK(wharf_container_swap(c));
  ASSERT_OK(wharf_container_free_inactive(c));
  St swap2(wharf_container_swap(c));
  EXPECT_EQ(swap2.code(), WHARF_FAILED_PRECONDITION);
  EXPECT_NE(swap2.msg().find("was freed"), std::string::npos) << swap2.msg();
  wharf_constant_map_free(m);
  wharf_constant_map_free(m4);
  wharf_container_free(c);
  wharf_runtime_free(rt);
}
