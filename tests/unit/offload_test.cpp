// SPDX-License-Identifier: Apache-2.0
// Offloaders on the host backend: the ordering logic of the slot ring (a copy never
// overwrites a slot a layer still reads, forced by parking the run's stream), prefetch_step
// and slot_capacity edge cases, layer selection, errors with clear messages, and generations
// (a swap changes what later runs prefetch; a run in flight keeps its generation's data).
#define WHARF_EXPERIMENTAL 1
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/handles.h"
#include "api/offload_api.h"
#include "common/test_support.h"
#include "offload/offloader.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

constexpr int64_t kElems = 64;

std::string layer_name(int i) { return "layers." + std::to_string(i) + ".w"; }
std::string bias_name(int i) { return "layers." + std::to_string(i) + ".b"; }

// A container of `layers` layers (w: [64] F32, b: [8] F32, host-placed unless
// `device_placed`) plus a device-placed "embed", on the host backend.
class Offload : public ::testing::Test {
 protected:
  void SetUp() override {
    wharf_runtime_options o;
    wharf_runtime_options_init(&o);
    o.backend = WHARF_BACKEND_HOST;
    ASSERT_OK(wharf_runtime_create(&o, &rt));
  }
  void TearDown() override {
    wharf_offloader_free(off);
    wharf_container_free(c);
    wharf_runtime_free(rt);
  }

  void make(int layers, bool device_placed = false) {
    n = layers;
    std::vector<wharf_constant_decl> decls;
    static const int64_t wshape = kElems, bshape = 8, eshape = 4;
    names.clear();
    names.push_back("embed");
    for (int i = 0; i < layers; ++i) {
      names.push_back(layer_name(i));
      names.push_back(bias_name(i));
    }
    for (const std::string& nm : names) {
      wharf_constant_decl d;
      std::memset(&d, 0, sizeof d);
      d.struct_size = sizeof d;
      d.fqn = nm.c_str();
      d.dtype = WHARF_DTYPE_F32;
      d.ndim = 1;
      bool is_b = nm.size() > 2 && nm.compare(nm.size() - 2, 2, ".b") == 0;
      d.shape = nm == "embed" ? &eshape : is_b ? &bshape : &wshape;
      d.placement = nm == "embed" || device_placed ? WHARF_PLACEMENT_DEVICE : WHARF_PLACEMENT_HOST;
      decls.push_back(d);
    }
    wharf_container_options co;
    wharf_container_options_init(&co);
    co.name = "toy";
    co.constants = decls.data();
    co.num_constants = decls.size();
    ASSERT_OK(wharf_container_create(rt, &co, &c));
    ASSERT_NO_FATAL_FAILURE(publish(1));
  }

  // Writes every constant with values stamp * 1000 + layer (w) and -(...) (b), and swaps.
  void publish(int stamp) {
    std::vector<std::vector<float>> data;
    std::vector<int64_t> shapes;
    data.reserve(names.size());
    shapes.reserve(names.size());
    wharf_constant_map* m = nullptr;
    ASSERT_OK(wharf_constant_map_create(&m));
    for (const std::string& nm : names) {
      int layer = nm == "embed" ? -1 : std::stoi(nm.substr(7));
      bool is_b = nm.size() > 2 && nm.compare(nm.size() - 2, 2, ".b") == 0;
      int64_t elems = nm == "embed" ? 4 : is_b ? 8 : kElems;
      float v = value(stamp, layer) * (is_b ? -1.0f : 1.0f);
      data.emplace_back(size_t(elems), v);
      shapes.push_back(elems);
      wharf_tensor_view tv{sizeof(wharf_tensor_view),
                           0,
                           data.back().data(),
                           WHARF_DTYPE_F32,
                           WHARF_DEVICE_CPU,
                           0,
                           1,
                           &shapes.back(),
                           nullptr};
      ASSERT_OK(wharf_constant_map_set(m, nm.c_str(), &tv));
    }
    St st(wharf_container_update(c, m, nullptr));
    wharf_constant_map_free(m);
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
    ASSERT_OK(wharf_container_swap(c));
  }
  static float value(int stamp, int layer) { return float(stamp * 1000 + layer); }

  void create(uint32_t k, uint32_t cap, uint32_t group_size = 0, uint32_t num_in_group = 1) {
    wharf_offloader_options oo;
    wharf_offloader_options_init(&oo);
    oo.prefetch_step = k;
    oo.slot_capacity = cap;
    oo.group_size = group_size;
    oo.num_in_group = num_in_group;
    ASSERT_OK(wharf_offloader_create(c, &oo, &off));
  }

  wharf_run* begin_run() {
    wharf_run* r = nullptr;
    St st(wharf_run_begin(c, nullptr, nullptr, &r));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return r;
  }
  static wharf::Stream& stream(wharf_run* r) { return r->run->stream(); }

  // "Kernel" of layer `layer`: reads its slots on the run's stream and records what it saw.
  void read_layer(wharf_run* r, uint32_t layer) {
    size_t sz = wharf_offloader_num_layer_constants(off, layer);
    std::vector<wharf_tensor_view> views(sz);
    for (auto& v : views) {
      std::memset(&v, 0, sizeof v);
      v.struct_size = sizeof v;
    }
    St st(wharf_run_wait_offload(r, off, layer, views.data(), views.size()));
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
    if (sz == 0) return;
    ASSERT_EQ(sz, 2u);
    const float* w = static_cast<const float*>(views[0].data);
    const float* b = static_cast<const float*>(views[1].data);
    ASSERT_EQ(views[0].shape[0], kElems);
    ASSERT_EQ(views[1].shape[0], 8);
    ASSERT_OK(wharf::api::to_c(stream(r).enqueue_host([this, w, b, layer] {
      // Every element, so a partially overwritten slot shows.
      float first = w[0];
      bool uniform = true;
      for (int64_t i = 0; i < kElems; ++i) uniform &= w[i] == first;
      for (int i = 0; i < 8; ++i) uniform &= b[i] == -first;
      std::lock_guard<std::mutex> lock(seen_mu);
      seen.push_back(uniform ? first : -1.0f);
      seen_layers.push_back(layer);
    })));
  }
  // One whole pass over every layer; returns what the layers read.
  std::vector<float> pass(wharf_run* r, bool end = true) {
    {
      std::lock_guard<std::mutex> lock(seen_mu);
      seen.clear();
    }
    St st(wharf_run_begin_offload(r, off));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    for (uint32_t L = 0; L < wharf_offloader_num_layers(off); ++L) {
      read_layer(r, L);
      St s2(wharf_run_mark_offload_issued(r, off, L));
      EXPECT_EQ(s2.code(), WHARF_OK) << s2.msg();
    }
    if (end) {
      St s3(wharf_run_end_offload(r, off));
      EXPECT_EQ(s3.code(), WHARF_OK) << s3.msg();
    }
    EXPECT_EQ(wharf_runtime_synchronize(rt), nullptr);
    std::lock_guard<std::mutex> lock(seen_mu);
    return seen;
  }
  std::vector<float> expected(int stamp, const std::vector<int>& layers) {
    std::vector<float> e;
    for (int L : layers) e.push_back(value(stamp, L));
    return e;
  }
  std::vector<int> all_layers() {
    std::vector<int> v;
    for (int i = 0; i < n; ++i) v.push_back(i);
    return v;
  }
  uint64_t offload_bytes() {
    wharf_memory_stats ms;
    std::memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    St st(wharf_runtime_get_memory_stats(rt, &ms));
    return ms.current[WHARF_MEM_OFFLOAD];
  }

  wharf_runtime* rt = nullptr;
  wharf_container* c = nullptr;
  wharf_offloader* off = nullptr;
  int n = 0;
  std::vector<std::string> names;
  std::mutex seen_mu;
  std::vector<float> seen;
  std::vector<uint32_t> seen_layers;
};

TEST_F(Offload, EveryLayerReadsItsOwnWeightsForEachStepAndCapacity) {
  ASSERT_NO_FATAL_FAILURE(make(6));
  const uint32_t cases[][2] = {{1, 1}, {1, 2}, {2, 2}, {2, 3}, {3, 3}, {0, 1}, {0, 2}, {5, 6}, {6, 6}};
  for (const auto& kc : cases) {
    SCOPED_TRACE("prefetch_step " + std::to_string(kc[0]) + ", slot_capacity " + std::to_string(kc[1]));
    wharf_offloader_free(off);
    off = nullptr;
    ASSERT_NO_FATAL_FAILURE(create(kc[0], kc[1]));
    EXPECT_EQ(wharf_offloader_num_layers(off), 6u);
    wharf_run* r = begin_run();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(pass(r), expected(1, all_layers()));
    ASSERT_OK(wharf_run_end(r));
  }
}

TEST_F(Offload, CapacityAndStepAreClampedToTheOffloadedLayers) {
  ASSERT_NO_FATAL_FAILURE(make(3));
  ASSERT_NO_FATAL_FAILURE(create(8, 16));
  // Three slots of one layer's bytes (w: 256 bytes, b: 32 bytes at offset 256 -> 512 aligned).
  EXPECT_EQ(offload_bytes(), 3u * 512u);
  wharf_run* r = begin_run();
  EXPECT_EQ(pass(r), expected(1, all_layers()));
  ASSERT_OK(wharf_run_end(r));
  wharf_offloader_free(off);
  off = nullptr;
  EXPECT_EQ(offload_bytes(), 0u);
}

TEST_F(Offload, PoolIsAllocatedOnceWithStableAddresses) {
  ASSERT_NO_FATAL_FAILURE(make(4));
  ASSERT_NO_FATAL_FAILURE(create(1, 2));
  EXPECT_EQ(offload_bytes(), 2u * 512u);
  std::vector<void*> first;
  for (int rep = 0; rep < 3; ++rep) {
    wharf_run* r = begin_run();
    ASSERT_OK(wharf_run_begin_offload(r, off));
    for (uint32_t L = 0; L < 4; ++L) {
      wharf_tensor_view v[2];
      std::memset(v, 0, sizeof v);
      v[0].struct_size = v[1].struct_size = sizeof v[0];
      ASSERT_OK(wharf_run_wait_offload(r, off, L, v, 2));
      if (rep == 0)
        first.push_back(v[0].data);
      else
        EXPECT_EQ(first[L], v[0].data) << "layer " << L;
      ASSERT_OK(wharf_run_mark_offload_issued(r, off, L));
    }
    ASSERT_OK(wharf_run_end_offload(r, off));
    ASSERT_OK(wharf_run_end(r));
    EXPECT_EQ(offload_bytes(), 2u * 512u);
  }
  EXPECT_EQ(first[0], first[2]);  // layer 2 reuses layer 0's slot
  EXPECT_NE(first[0], first[1]);
}

// Output view arrays are walked at the element size their first element states, as input
// arrays are: a caller whose views are larger (built against a newer header) gets each one
// at its own stride, nothing written into the bytes past this library's view; the views are
// marked read-only (slots hold copies of constants that later prefetches reuse).
TEST_F(Offload, OutputViewsAreWrittenAtTheCallersStrideAndReadOnly) {
  ASSERT_NO_FATAL_FAILURE(make(4));
  ASSERT_NO_FATAL_FAILURE(create(1, 2));
  wharf_tensor_view plain[2];
  std::memset(plain, 0, sizeof plain);
  plain[0].struct_size = plain[1].struct_size = sizeof plain[0];
  struct Newer {
    wharf_tensor_view v;
    uint64_t future;
  } newer[2];
  std::memset(newer, 0xAB, sizeof newer);
  newer[0].v.struct_size = newer[1].v.struct_size = sizeof(Newer);
  wharf_run* r = begin_run();
  ASSERT_OK(wharf_run_begin_offload(r, off));
  ASSERT_OK(wharf_run_wait_offload(r, off, 0, plain, 2));
  ASSERT_OK(wharf_run_wait_offload(r, off, 0, &newer[0].v, 2));
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(newer[i].v.data, plain[i].data) << i;
    EXPECT_EQ(newer[i].v.ndim, plain[i].ndim) << i;
    EXPECT_EQ(newer[i].v.struct_size, sizeof(wharf_tensor_view)) << i;  // the bytes written
    EXPECT_EQ(newer[i].future, 0xABABABABABABABABull) << i;             // nothing past them
    EXPECT_EQ(plain[i].flags, WHARF_VIEW_READ_ONLY) << i;
  }
  EXPECT_NE(plain[0].data, plain[1].data);
  // A first element stating garbage that is no view's size (below the 0.3 layout, or not a
  // multiple of the view's alignment: 60 would misalign every later element) is walked at
  // the 0.3 layout, never past a caller's array of 0.3 views.
  for (uint32_t garbage : {0u, 8u, 60u, 61u, 0xEEEEEEEEu}) {
    wharf_tensor_view g[2];
    std::memset(g, 0, sizeof g);
    g[0].struct_size = garbage;
    ASSERT_OK(wharf_run_wait_offload(r, off, 0, g, 2));
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(g[i].data, plain[i].data) << garbage << " " << i;
      EXPECT_EQ(g[i].struct_size, sizeof(wharf_tensor_view)) << garbage << " " << i;
    }
  }
  ASSERT_OK(wharf_run_mark_offload_issued(r, off, 0));
  ASSERT_OK(wharf_run_end_offload(r, off));
  ASSERT_OK(wharf_run_end(r));
}

// The forced order: the run's stream is parked before layer 0's reader while the copy of
// layer 1 into the same slot (prefetch_step = slot_capacity = 1) is already issued. The
// copy must wait for the reader, so the reader sees layer 0 however long it is parked.
TEST_F(Offload, ACopyNeverOverwritesASlotALayerStillReads) {
  ASSERT_NO_FATAL_FAILURE(make(4));
  ASSERT_NO_FATAL_FAILURE(create(1, 1));
  wharf_run* r = begin_run();
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  ASSERT_OK(wharf_run_begin_offload(r, off));
  wharf_tensor_view v[2];
  std::memset(v, 0, sizeof v);
  v[0].struct_size = v[1].struct_size = sizeof v[0];
  ASSERT_OK(wharf_run_wait_offload(r, off, 0, v, 2));
  ASSERT_OK(wharf::api::to_c(stream(r).enqueue_host([opened] { opened.wait(); })));
  const float* w = static_cast<const float*>(v[0].data);
  std::vector<float> got;
  ASSERT_OK(wharf::api::to_c(stream(r).enqueue_host([w, &got] { got.assign(w, w + kElems); })));
  ASSERT_OK(wharf_run_mark_offload_issued(r, off, 0));  // issues layer 1's copy into the same slot
  // Give a wrongly ordered copy every chance to land while the reader is parked (what the
  // reader saw is checked after the run; the test thread does not touch the slot).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  gate.set_value();
  for (uint32_t L = 1; L < 4; ++L) {
    read_layer(r, L);
    ASSERT_OK(wharf_run_mark_offload_issued(r, off, L));
  }
  ASSERT_OK(wharf_run_end_offload(r, off));
  ASSERT_OK(wharf_runtime_synchronize(rt));
  EXPECT_EQ(got, std::vector<float>(kElems, value(1, 0)));
  {
    std::lock_guard<std::mutex> lock(seen_mu);
    EXPECT_EQ(seen, expected(1, {1, 2, 3}));
  }
  ASSERT_OK(wharf_run_end(r));
}

// With two slots and prefetch_step 1, the copy of layer 2 goes into layer 0's slot: it must
// wait for layer 0's reader (parked here) even though layer 1 was issued after it.
TEST_F(Offload, ACopyWaitsForTheSlotsPreviousReader) {
  ASSERT_NO_FATAL_FAILURE(make(4));
  ASSERT_NO_FATAL_FAILURE(create(1, 2));
  wharf_run* r = begin_run();
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  ASSERT_OK(wharf_run_begin_offload(r, off));
  wharf_tensor_view v[2];
  std::memset(v, 0, sizeof v);
  v[0].struct_size = v[1].struct_size = sizeof v[0];
  ASSERT_OK(wharf_run_wait_offload(r, off, 0, v, 2));
  const float* w0 = static_cast<const float*>(v[0].data);
  ASSERT_OK(wharf::api::to_c(stream(r).enqueue_host([opened] { opened.wait(); })));
  std::vector<float> got;
  ASSERT_OK(wharf::api::to_c(stream(r).enqueue_host([w0, &got] { got.assign(w0, w0 + kElems); })));
  ASSERT_OK(wharf_run_mark_offload_issued(r, off, 0));  // layer 1 -> slot 1
  {
    std::lock_guard<std::mutex> lock(seen_mu);
    seen.clear();
  }
  read_layer(r, 1);
  ASSERT_OK(wharf_run_mark_offload_issued(r, off, 1));  // layer 2 -> slot 0: waits for layer 0's reader
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  gate.set_value();
  read_layer(r, 2);
  ASSERT_OK(wharf_run_mark_offload_issued(r, off, 2));
  read_layer(r, 3);
  ASSERT_OK(wharf_run_mark_offload_issued(r, off, 3));
  ASSERT_OK(wharf_run_end_offload(r, off));
  ASSERT_OK(wharf_runtime_synchronize(rt));
  EXPECT_EQ(got, std::vector<float>(kElems, value(1, 0)));
  {
    std::lock_guard<std::mutex> lock(seen_mu);
    EXPECT_EQ(seen, expected(1, {1, 2, 3}));
  }
  ASSERT_OK(wharf_run_end(r));
}

TEST_F(Offload, GroupSelectionOffloadsTheLastLayersOfEachGroup) {
  ASSERT_NO_FATAL_FAILURE(make(8));
  ASSERT_NO_FATAL_FAILURE(create(1, 1, /*group_size=*/4, /*num_in_group=*/2));
  const uint32_t want[8] = {0, 0, 2, 2, 0, 0, 2, 2};
  for (uint32_t L = 0; L < 8; ++L) EXPECT_EQ(wharf_offloader_num_layer_constants(off, L), want[L]) << "layer " << L;
  EXPECT_STREQ(wharf_offloader_layer_constant(off, 2, 0), "layers.2.w");
  EXPECT_STREQ(wharf_offloader_layer_constant(off, 2, 1), "layers.2.b");
  EXPECT_EQ(wharf_offloader_layer_constant(off, 2, 2), nullptr);
  EXPECT_EQ(wharf_offloader_layer_constant(off, 0, 0), nullptr);
  EXPECT_EQ(wharf_offloader_num_layer_constants(off, 99), 0u);
  wharf_run* r = begin_run();
  EXPECT_EQ(pass(r), expected(1, {2, 3, 6, 7}));
  ASSERT_OK(wharf_run_end(r));
}

TEST_F(Offload, ExplicitListAndPattern) {
  ASSERT_NO_FATAL_FAILURE(make(3));
  const char* fqns[] = {"layers.2.w", "layers.0.w"};
  wharf_offloader_options oo;
  wharf_offloader_options_init(&oo);
  oo.fqns = fqns;
  oo.num_fqns = 2;
  ASSERT_OK(wharf_offloader_create(c, &oo, &off));
  EXPECT_EQ(wharf_offloader_num_layers(off), 3u);
  EXPECT_EQ(wharf_offloader_num_layer_constants(off, 0), 1u);
  EXPECT_EQ(wharf_offloader_num_layer_constants(off, 1), 0u);
  EXPECT_EQ(wharf_offloader_num_layer_constants(off, 2), 1u);
  wharf_run* r = begin_run();
  ASSERT_OK(wharf_run_begin_offload(r, off));
  for (uint32_t L = 0; L < 3; ++L) {
    wharf_tensor_view v{};
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    ASSERT_OK(wharf_run_wait_offload(r, off, L, &v, 1));
    if (L != 1) {
      const float* w = static_cast<const float*>(v.data);
      ASSERT_OK(wharf_runtime_synchronize(rt));
      EXPECT_EQ(w[kElems - 1], value(1, int(L)));
      EXPECT_EQ(v.device_type, WHARF_DEVICE_CPU);  // the host backend's "device" memory
    }
    ASSERT_OK(wharf_run_mark_offload_issued(r, off, L));
  }
  ASSERT_OK(wharf_run_end_offload(r, off));
  ASSERT_OK(wharf_run_end(r));
}

TEST_F(Offload, CreationErrorsNameWhatIsWrong) {
  ASSERT_NO_FATAL_FAILURE(make(3));
  wharf_offloader* o = nullptr;
  wharf_offloader_options oo;
  wharf_offloader_options_init(&oo);
  oo.prefetch_step = 3;
  oo.slot_capacity = 2;
  EXPECT_FAILS(wharf_offloader_create(c, &oo, &o), WHARF_INVALID_ARGUMENT, "prefetch_step 3 needs slot_capacity >= 3");
  wharf_offloader_options_init(&oo);
  oo.layer_pattern = "layers.";
  EXPECT_FAILS(wharf_offloader_create(c, &oo, &o), WHARF_INVALID_ARGUMENT, "{layer}");
  oo.layer_pattern = "blocks.{layer}.";
  EXPECT_FAILS(wharf_offloader_create(c, &oo, &o), WHARF_INVALID_ARGUMENT, "no constant's name matches");
  wharf_offloader_options_init(&oo);
  oo.group_size = 4;
  oo.num_in_group = 5;
  EXPECT_FAILS(wharf_offloader_create(c, &oo, &o), WHARF_INVALID_ARGUMENT, "num_in_group 5");
  wharf_offloader_options_init(&oo);
  const char* unknown[] = {"layers.9.w"};
  oo.fqns = unknown;
  oo.num_fqns = 1;
  EXPECT_FAILS(wharf_offloader_create(c, &oo, &o), WHARF_NOT_FOUND, "'layers.9.w'");
  const char* nolayer[] = {"embed"};
  oo.fqns = nolayer;
  EXPECT_FAILS(wharf_offloader_create(c, &oo, &o), WHARF_INVALID_ARGUMENT, "'embed' carries no layer number");
  const char* twice[] = {"layers.1.w", "layers.1.w"};
  oo.fqns = twice;
  oo.num_fqns = 2;
  EXPECT_FAILS(wharf_offloader_create(c, &oo, &o), WHARF_ALREADY_EXISTS, "listed twice");
  oo.num_fqns = 1;
  oo.fqns = nullptr;
  EXPECT_FAILS(wharf_offloader_create(c, &oo, &o), WHARF_INVALID_ARGUMENT, "fqns is NULL");
  EXPECT_FAILS(wharf_offloader_create(nullptr, nullptr, &o), WHARF_INVALID_ARGUMENT, "must not be NULL");
  // A newer header's field this library does not know.
  struct Bigger {
    wharf_offloader_options o;
    uint64_t future;
  } big;
  std::memset(&big, 0, sizeof big);
  wharf_offloader_options_init(&big.o);
  big.o.struct_size = sizeof big;
  big.future = 1;
  EXPECT_FAILS(wharf_offloader_create(c, &big.o, &o), WHARF_UNSUPPORTED, "wharf_offloader_options");
  EXPECT_EQ(o, nullptr);
  EXPECT_EQ(offload_bytes(), 0u);
}

TEST_F(Offload, DevicePlacedConstantsAreRefused) {
  ASSERT_NO_FATAL_FAILURE(make(2, /*device_placed=*/true));
  wharf_offloader* o = nullptr;
  EXPECT_FAILS(wharf_offloader_create(c, nullptr, &o), WHARF_FAILED_PRECONDITION, "WHARF_PLACEMENT_HOST");
  EXPECT_EQ(o, nullptr);
}

TEST_F(Offload, RunErrorsNameTheLayerAndTheRule) {
  ASSERT_NO_FATAL_FAILURE(make(3));
  ASSERT_NO_FATAL_FAILURE(create(1, 1));
  wharf_run* r = begin_run();
  wharf_tensor_view v[2];
  std::memset(v, 0, sizeof v);
  v[0].struct_size = v[1].struct_size = sizeof v[0];
  EXPECT_FAILS(wharf_run_wait_offload(r, off, 0, v, 2), WHARF_FAILED_PRECONDITION, "wharf_run_begin_offload first");
  EXPECT_FAILS(wharf_run_mark_offload_issued(r, off, 0), WHARF_FAILED_PRECONDITION, "wharf_run_begin_offload first");
  EXPECT_FAILS(wharf_run_end_offload(r, off), WHARF_FAILED_PRECONDITION, "wharf_run_begin_offload first");
  ASSERT_OK(wharf_run_begin_offload(r, off));
  EXPECT_FAILS(wharf_run_begin_offload(r, off), WHARF_FAILED_PRECONDITION, "already began");
  EXPECT_FAILS(wharf_run_wait_offload(r, off, 7, v, 2), WHARF_INVALID_ARGUMENT, "layer 7 is out of range");
  EXPECT_FAILS(wharf_run_wait_offload(r, off, 0, v, 1), WHARF_INVALID_ARGUMENT, "views holds 1");
  EXPECT_FAILS(wharf_run_wait_offload(r, off, 1, v, 2), WHARF_FAILED_PRECONDITION, "the next is layer 0");
  EXPECT_FAILS(wharf_run_mark_offload_issued(r, off, 0), WHARF_FAILED_PRECONDITION, "was not waited for");
  ASSERT_OK(wharf_run_wait_offload(r, off, 0, v, 2));
  void* first = v[0].data;
  ASSERT_OK(wharf_run_wait_offload(r, off, 0, v, 2));  // again before issued: the same slot
  EXPECT_EQ(v[0].data, first);
  EXPECT_FAILS(wharf_run_wait_offload(r, off, 1, v, 2), WHARF_FAILED_PRECONDITION, "layer 0 was not marked issued");
  ASSERT_OK(wharf_run_mark_offload_issued(r, off, 0));
  EXPECT_FAILS(wharf_run_mark_offload_issued(r, off, 0), WHARF_FAILED_PRECONDITION, "already marked issued");
  EXPECT_FAILS(wharf_run_wait_offload(r, off, 0, v, 2), WHARF_FAILED_PRECONDITION, "already issued");
  ASSERT_OK(wharf_run_wait_offload(r, off, 1, nullptr, 0));  // wait only
  EXPECT_FAILS(wharf_run_wait_offload(r, off, 1, nullptr, 3), WHARF_INVALID_ARGUMENT, "views is NULL");
  // Another run of the container meanwhile: BUSY, naming the container.
  wharf_run* r2 = begin_run();
  EXPECT_FAILS(wharf_run_begin_offload(r2, off), WHARF_BUSY, "'toy'");
  EXPECT_FAILS(wharf_run_wait_offload(r2, off, 1, v, 2), WHARF_FAILED_PRECONDITION, "another run holds");
  EXPECT_FAILS(wharf_run_begin_offload(nullptr, off), WHARF_INVALID_ARGUMENT, "must not be NULL");
  ASSERT_OK(wharf_run_end_offload(r, off));
  ASSERT_OK(wharf_run_end(r));
  // Now free for r2.
  EXPECT_EQ(pass(r2), expected(1, all_layers()));
  ASSERT_OK(wharf_run_end(r2));
}

TEST_F(Offload, ARunOfAnotherContainerIsRefused) {
  ASSERT_NO_FATAL_FAILURE(make(2));
  ASSERT_NO_FATAL_FAILURE(create(1, 1));
  wharf_container* other = nullptr;
  wharf_constant_map* m = nullptr;
  ASSERT_OK(wharf_constant_map_create(&m));
  float x[4] = {0, 0, 0, 0};
  int64_t shape = 4;
  wharf_tensor_view tv{sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, &shape, nullptr};
  ASSERT_OK(wharf_constant_map_set(m, "x", &tv));
  ASSERT_OK(wharf_container_create_from_map(rt, m, nullptr, &other));
  wharf_constant_map_free(m);
  wharf_run* r = nullptr;
  ASSERT_OK(wharf_run_begin(other, nullptr, nullptr, &r));
  EXPECT_FAILS(wharf_run_begin_offload(r, off), WHARF_INVALID_ARGUMENT, "the offloader is over container 'toy'");
  ASSERT_OK(wharf_run_end(r));
  wharf_container_free(other);
}

TEST_F(Offload, RunEndReleasesTheOffloaderAfterAnEarlyExit) {
  ASSERT_NO_FATAL_FAILURE(make(4));
  ASSERT_NO_FATAL_FAILURE(create(2, 2));
  wharf_run* r = begin_run();
  ASSERT_OK(wharf_run_begin_offload(r, off));
  read_layer(r, 0);
  ASSERT_OK(wharf_run_mark_offload_issued(r, off, 0));  // layer 2's copy in flight, never waited
  ASSERT_OK(wharf_run_end(r));                          // no wharf_run_end_offload
  ASSERT_OK(wharf_runtime_synchronize(rt));             // layer 0's reader has recorded what it saw
  wharf_run* r2 = begin_run();
  EXPECT_EQ(pass(r2), expected(1, all_layers()));
  ASSERT_OK(wharf_run_end(r2));
}

TEST_F(Offload, TheOffloaderOutlivesItsHandleWhileARunHoldsIt) {
  ASSERT_NO_FATAL_FAILURE(make(3));
  ASSERT_NO_FATAL_FAILURE(create(1, 1));
  wharf_run* r = begin_run();
  ASSERT_OK(wharf_run_begin_offload(r, off));
  wharf_offloader_free(off);  // the run's end hook keeps it (and its pool)
  off = nullptr;
  EXPECT_EQ(offload_bytes(), 512u);
  ASSERT_OK(wharf_run_end(r));  // ends offloading, drops the last reference
  EXPECT_EQ(offload_bytes(), 0u);
}

TEST_F(Offload, ASwapBetweenRunsChangesWhatLaterRunsPrefetch) {
  ASSERT_NO_FATAL_FAILURE(make(5));
  ASSERT_NO_FATAL_FAILURE(create(2, 3));
  wharf_run* r = begin_run();
  EXPECT_EQ(pass(r), expected(1, all_layers()));
  ASSERT_OK(wharf_run_end(r));
  ASSERT_NO_FATAL_FAILURE(publish(2));
  r = begin_run();
  EXPECT_EQ(pass(r), expected(2, all_layers()));
  ASSERT_OK(wharf_run_end(r));
  // Rollback (swap with nothing staged) goes back to the first weights.
  ASSERT_OK(wharf_container_swap(c));
  r = begin_run();
  EXPECT_EQ(pass(r), expected(1, all_layers()));
  ASSERT_OK(wharf_run_end(r));
}

TEST_F(Offload, ARunInFlightKeepsItsGenerationsData) {
  ASSERT_NO_FATAL_FAILURE(make(5));
  ASSERT_NO_FATAL_FAILURE(create(1, 2));
  wharf_run* r = begin_run();
  {
    std::lock_guard<std::mutex> lock(seen_mu);
    seen.clear();
  }
  ASSERT_OK(wharf_run_begin_offload(r, off));
  read_layer(r, 0);
  ASSERT_OK(wharf_run_mark_offload_issued(r, off, 0));
  read_layer(r, 1);
  // A hot update and swap in the middle of the run: later copies of this run must still come
  // from the generation it pinned.
  ASSERT_NO_FATAL_FAILURE(publish(2));
  ASSERT_OK(wharf_run_mark_offload_issued(r, off, 1));
  for (uint32_t L = 2; L < 5; ++L) {
    read_layer(r, L);
    ASSERT_OK(wharf_run_mark_offload_issued(r, off, L));
  }
  ASSERT_OK(wharf_run_end_offload(r, off));
  ASSERT_OK(wharf_runtime_synchronize(rt));
  {
    std::lock_guard<std::mutex> lock(seen_mu);
    EXPECT_EQ(seen, expected(1, all_layers()));
  }
  ASSERT_OK(wharf_run_end(r));
  r = begin_run();
  EXPECT_EQ(pass(r), expected(2, all_layers()));
  ASSERT_OK(wharf_run_end(r));
}

// A compiled model's graphs capture through begin() with a target (graphs/model_graphs.h):
// their own stream and ring. The layers land in that ring at the pool's offsets, the waits
// hand out its slots, the pool keeps what the previous run left there, and the next run uses
// the pool again. A target marked re-pointed holds no storage of the generation.
TEST_F(Offload, ATargetRingTakesTheCopiesAndLeavesThePoolAlone) {
  ASSERT_NO_FATAL_FAILURE(make(5));
  ASSERT_NO_FATAL_FAILURE(create(1, 2));
  wharf::Offloader& o = *off->o;
  wharf_run* r = begin_run();
  EXPECT_EQ(pass(r), expected(1, all_layers()));
  ASSERT_OK(wharf_run_end(r));
  std::vector<char> pool(o.ring_bytes());
  std::memcpy(pool.data(), o.pool_base(), pool.size());
  ASSERT_NO_FATAL_FAILURE(publish(2));

  std::vector<float> ring_mem(o.ring_bytes() / sizeof(float));
  char* ring = reinterpret_cast<char*>(ring_mem.data());
  r = begin_run();
  std::unique_ptr<wharf::Stream> other;
  ASSERT_OK(wharf::api::to_c(r->run->container()->runtime().device().create_stream(&other)));
  wharf::OffloadTarget target;
  target.stream = other.get();
  target.ring = ring;
  target.repointed = true;
  ASSERT_OK(wharf::api::to_c(o.begin(*r->run, target)));
  std::vector<float> read;
  for (uint32_t L = 0; L < 5; ++L) {
    char* slot = nullptr;
    ASSERT_OK(wharf::api::to_c(o.wait(*r->run, L, &slot)));
    ASSERT_EQ(slot, ring + o.slot_offset(L)) << "layer " << L;
    const float* w = reinterpret_cast<const float*>(slot);
    // The layer's "kernel", on the target's stream: what it reads when it runs.
    ASSERT_OK(wharf::api::to_c(other->enqueue_host([this, w, &read] {
      std::lock_guard<std::mutex> lock(seen_mu);
      read.push_back(w[kElems - 1]);
    })));
    ASSERT_OK(wharf::api::to_c(o.issued(*r->run, L)));
  }
  ASSERT_OK(wharf::api::to_c(o.end(*r->run)));
  ASSERT_OK(wharf::api::to_c(other->synchronize()));
  ASSERT_OK(wharf_runtime_synchronize(rt));
  {
    std::lock_guard<std::mutex> lock(seen_mu);
    EXPECT_EQ(read, expected(2, all_layers()));
  }
  EXPECT_EQ(std::memcmp(pool.data(), o.pool_base(), pool.size()), 0) << "a target's run wrote into the pool";
  // The last layers stay in the ring, at the pool's layout: layer 4 in slot 0, layer 3 in slot 1.
  EXPECT_EQ(ring_mem[o.slot_offset(4) / sizeof(float)], value(2, 4));
  EXPECT_EQ(ring_mem[o.slot_offset(3) / sizeof(float)], value(2, 3));
  EXPECT_NE(o.slot_offset(3), o.slot_offset(4));
  EXPECT_EQ(o.captured_storage(), 0u);
  ASSERT_OK(wharf_run_end(r));
  r = begin_run();
  EXPECT_EQ(pass(r), expected(2, all_layers()));
  ASSERT_OK(wharf_run_end(r));
  EXPECT_NE(std::memcmp(pool.data(), o.pool_base(), pool.size()), 0) << "the next run did not use the pool";
}

TEST_F(Offload, OptionsInitIsSized) {
  wharf_offloader_options oo;
  std::memset(&oo, 0xAB, sizeof oo);
  wharf_offloader_options_init_sized(&oo, offsetof(wharf_offloader_options, fqns));
  EXPECT_EQ(oo.struct_size, offsetof(wharf_offloader_options, fqns));
  unsigned char tail;
  std::memcpy(&tail, reinterpret_cast<unsigned char*>(&oo) + offsetof(wharf_offloader_options, fqns), 1);
  EXPECT_EQ(tail, 0xAB);  // nothing written past struct_size
  wharf_offloader_options_init(&oo);
  EXPECT_EQ(oo.struct_size, sizeof oo);
  EXPECT_EQ(oo.prefetch_step, 1u);
  EXPECT_EQ(oo.num_in_group, 1u);
  EXPECT_EQ(oo.slot_capacity, 0u);
  EXPECT_EQ(oo.layer_pattern, nullptr);
  wharf_offloader_free(nullptr);
  EXPECT_EQ(wharf_offloader_num_layers(nullptr), 0u);
}

// --- budget check --------------------------------------------------------------------------

TEST(OffloadBudget, ArithmeticAndText) {
  using wharf::H2DSource;
  using wharf::OffloadBudget;
  // 1.5 GiB at 48.1 GB/s = 33.48 ms against 13.5 ms of compute: 19.98 ms exposed.
  OffloadBudget b = OffloadBudget::estimate(6, uint64_t(3) << 29, 48'100'000'000ull, H2DSource::kMeasured, 13'500);
  EXPECT_NEAR(b.copy_us, 33484.67, 0.01);
  EXPECT_EQ(b.compute_us, 13500.0);
  EXPECT_NEAR(b.exposed_us, 33484.67 - 13500.0, 0.01);
  EXPECT_TRUE(b.checked());
  EXPECT_TRUE(b.exposed());
  EXPECT_EQ(b.describe(),
            "offloading 6 layers moves 1.5 GiB per step: 33.5 ms at 48.1 GB/s H2D (measured), 2.5x the 13.5 ms "
            "step compute time given; prefetch cannot hide 20.0 ms");
  // Copies that fit: nothing exposed.
  b = OffloadBudget::estimate(1, uint64_t(64) << 20, 25'000'000'000ull, H2DSource::kGiven, 5'000);
  EXPECT_NEAR(b.copy_us, 2684.4, 0.1);
  EXPECT_EQ(b.exposed_us, 0.0);
  EXPECT_FALSE(b.exposed());
  EXPECT_EQ(b.describe(),
            "offloading 1 layer moves 64.0 MiB per step: 2.7 ms at 25.0 GB/s H2D (given), 0.5x the 5.0 ms step "
            "compute time given: prefetch can hide the copies");
  // Exactly equal: hidden (the bound is max(compute, copy)).
  b = OffloadBudget::estimate(2, 1'000'000, 1'000'000'000ull, H2DSource::kGiven, 1'000);
  EXPECT_EQ(b.copy_us, 1000.0);
  EXPECT_EQ(b.exposed_us, 0.0);
  // Unknown compute time: no check, said so.
  b = OffloadBudget::estimate(3, 3000, wharf::kHostAssumedH2D, H2DSource::kAssumed, 0);
  EXPECT_FALSE(b.checked());
  EXPECT_FALSE(b.exposed());
  EXPECT_EQ(b.describe(),
            "offloading 3 layers moves 2.9 KiB per step: 0.2 us at 12.0 GB/s H2D (assumed for the host backend); "
            "no step compute time given (step_compute_us 0), so no budget check");
}

struct LogCapture {
  std::mutex mu;
  std::vector<std::pair<wharf_log_level, std::string>> lines;
  static void sink(wharf_log_level level, const char* message, void* user) {
    auto* self = static_cast<LogCapture*>(user);
    std::lock_guard<std::mutex> lock(self->mu);
    self->lines.emplace_back(level, message);
  }
  LogCapture() { wharf_log_set_callback(&sink, WHARF_LOG_DEBUG, this); }
  ~LogCapture() { wharf_log_set_callback(nullptr, WHARF_LOG_WARN, nullptr); }
  std::vector<std::string> at(wharf_log_level level) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::string> v;
    for (const auto& l : lines)
      if (l.first == level && l.second.find("offloader over container") != std::string::npos) v.push_back(l.second);
    return v;
  }
};

// 4 layers of 64 + 8 floats: 1152 bytes per step.
constexpr uint64_t kStepBytes = 4 * (kElems + 8) * sizeof(float);

wharf_offloader_budget query_budget(wharf_offloader* off) {
  wharf_offloader_budget b;
  std::memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  St st(wharf_offloader_get_budget(off, &b));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  return b;
}

TEST_F(Offload, BudgetExposedIsLoggedAtWarnWithTheFigures) {
  make(4);
  LogCapture logs;
  wharf_offloader_options oo;
  wharf_offloader_options_init(&oo);
  oo.h2d_bytes_per_second = 1'152'000;  // 1152 bytes: 1 ms
  oo.step_compute_us = 400;
  ASSERT_OK(wharf_offloader_create(c, &oo, &off));
  const std::vector<std::string> warns = logs.at(WHARF_LOG_WARN);
  ASSERT_EQ(warns.size(), 1u);
  EXPECT_EQ(warns[0],
            "offloader over container 'toy': offloading 4 layers moves 1.1 KiB per step: 1.0 ms at 1.2 MB/s H2D "
            "(given), 2.5x the 400.0 us step compute time given; prefetch cannot hide 600.0 us");
  wharf_offloader_budget b = query_budget(off);
  EXPECT_EQ(b.num_offloaded_layers, 4u);
  EXPECT_EQ(b.bytes_per_step, kStepBytes);
  EXPECT_EQ(b.h2d_bytes_per_second, 1'152'000u);
  EXPECT_EQ(b.h2d_source, WHARF_H2D_GIVEN);
  EXPECT_DOUBLE_EQ(b.copy_us, 1000.0);
  EXPECT_DOUBLE_EQ(b.compute_us, 400.0);
  EXPECT_DOUBLE_EQ(b.exposed_us, 600.0);
  // The offloader works as any other.
  wharf_run* r = begin_run();
  EXPECT_EQ(pass(r), expected(1, all_layers()));
  ASSERT_OK(wharf_run_end(r));
}

TEST_F(Offload, BudgetThatFitsLogsNoWarning) {
  make(4);
  LogCapture logs;
  wharf_offloader_options oo;
  wharf_offloader_options_init(&oo);
  oo.h2d_bytes_per_second = 1'152'000;
  oo.step_compute_us = 1000;  // exactly the copy time: hidden
  oo.refuse_if_exposed = 1;
  ASSERT_OK(wharf_offloader_create(c, &oo, &off));
  EXPECT_TRUE(logs.at(WHARF_LOG_WARN).empty());
  ASSERT_EQ(logs.at(WHARF_LOG_INFO).size(), 1u);
  EXPECT_NE(logs.at(WHARF_LOG_INFO)[0].find("prefetch can hide the copies"), std::string::npos);
  EXPECT_EQ(query_budget(off).exposed_us, 0.0);
}

TEST_F(Offload, BudgetRefusalChangesNothing) {
  make(4);
  const uint64_t before = offload_bytes();
  wharf_offloader_options oo;
  wharf_offloader_options_init(&oo);
  oo.h2d_bytes_per_second = 1'152'000;
  oo.step_compute_us = 400;
  oo.refuse_if_exposed = 1;
  off = reinterpret_cast<wharf_offloader*>(uintptr_t(1));  // overwritten with NULL on failure
  EXPECT_FAILS(wharf_offloader_create(c, &oo, &off), WHARF_RESOURCE_EXHAUSTED,
               "offloader over container 'toy': offloading 4 layers moves 1.1 KiB per step: 1.0 ms at 1.2 MB/s H2D "
               "(given), 2.5x the 400.0 us step compute time given; prefetch cannot hide 600.0 us (refused: "
               "refuse_if_exposed is set)");
  EXPECT_EQ(off, nullptr);
  EXPECT_EQ(offload_bytes(), before);  // the slot pool went with it
  // The container is untouched: an offloader without the refusal works.
  oo.refuse_if_exposed = 0;
  ASSERT_OK(wharf_offloader_create(c, &oo, &off));
  wharf_run* r = begin_run();
  EXPECT_EQ(pass(r), expected(1, all_layers()));
  ASSERT_OK(wharf_run_end(r));
}

TEST_F(Offload, BudgetWithoutComputeTimeChecksNothingAndAssumesTheHostRate) {
  make(4);
  LogCapture logs;
  wharf_offloader_options oo;
  wharf_offloader_options_init(&oo);
  oo.refuse_if_exposed = 1;  // nothing to refuse without a compute time
  ASSERT_OK(wharf_offloader_create(c, &oo, &off));
  EXPECT_TRUE(logs.at(WHARF_LOG_WARN).empty());
  wharf_offloader_budget b = query_budget(off);
  EXPECT_EQ(b.bytes_per_step, kStepBytes);
  EXPECT_EQ(b.h2d_source, WHARF_H2D_ASSUMED);
  EXPECT_EQ(b.h2d_bytes_per_second, 12'000'000'000u);
  EXPECT_DOUBLE_EQ(b.copy_us, double(kStepBytes) / 12'000.0);
  EXPECT_EQ(b.compute_us, 0.0);
  EXPECT_EQ(b.exposed_us, 0.0);
  ASSERT_EQ(logs.at(WHARF_LOG_INFO).size(), 1u);
  EXPECT_NE(logs.at(WHARF_LOG_INFO)[0].find("no budget check"), std::string::npos);
}

TEST_F(Offload, BudgetOnlyCountsTheSelectedLayers) {
  make(4);
  wharf_offloader_options oo;
  wharf_offloader_options_init(&oo);
  oo.group_size = 2;  // layers 1 and 3
  oo.h2d_bytes_per_second = 1'000'000;
  ASSERT_OK(wharf_offloader_create(c, &oo, &off));
  wharf_offloader_budget b = query_budget(off);
  EXPECT_EQ(b.num_offloaded_layers, 2u);
  EXPECT_EQ(b.bytes_per_step, kStepBytes / 2);
}

TEST_F(Offload, OptionsOfTheFirstLayoutTakeBudgetDefaults) {
  make(4);
  // A caller compiled before the budget fields: its struct ends at slot_capacity, and what
  // follows in its memory is not the library's to read.
  const size_t old_size = offsetof(wharf_offloader_options, step_compute_us);
  alignas(wharf_offloader_options) unsigned char raw[sizeof(wharf_offloader_options) + 16];
  std::memset(raw, 0x7F, sizeof raw);
  auto* oo = reinterpret_cast<wharf_offloader_options*>(raw);
  wharf_offloader_options_init_sized(oo, old_size);
  EXPECT_EQ(oo->struct_size, old_size);
  EXPECT_EQ(raw[old_size], 0x7F);  // init wrote nothing past it
  oo->h2d_bytes_per_second = 5;    // not the caller's field: must not be read
  LogCapture logs;
  ASSERT_OK(wharf_offloader_create(c, oo, &off));
  EXPECT_TRUE(logs.at(WHARF_LOG_WARN).empty());
  wharf_offloader_budget b = query_budget(off);
  EXPECT_EQ(b.compute_us, 0.0);
  EXPECT_EQ(b.h2d_source, WHARF_H2D_ASSUMED);
  EXPECT_EQ(b.h2d_bytes_per_second, 12'000'000'000u);
}

TEST_F(Offload, BudgetQueryWritesOnlyTheCallersSize) {
  make(4);
  wharf_offloader_options oo;
  wharf_offloader_options_init(&oo);
  oo.h2d_bytes_per_second = 1'152'000;
  oo.step_compute_us = 400;
  ASSERT_OK(wharf_offloader_create(c, &oo, &off));
  // An older caller whose struct ends before copy_us.
  wharf_offloader_budget b;
  std::memset(&b, 0x5A, sizeof b);
  b.struct_size = offsetof(wharf_offloader_budget, copy_us);
  ASSERT_OK(wharf_offloader_get_budget(off, &b));
  EXPECT_EQ(b.struct_size, offsetof(wharf_offloader_budget, copy_us));
  EXPECT_EQ(b.bytes_per_step, kStepBytes);
  unsigned char tail;
  std::memcpy(&tail, reinterpret_cast<unsigned char*>(&b) + offsetof(wharf_offloader_budget, copy_us), 1);
  EXPECT_EQ(tail, 0x5A);
  // Sizes that cut a field or are missing are refused, naming the struct.
  b.struct_size = offsetof(wharf_offloader_budget, bytes_per_step) + 4;
  EXPECT_FAILS(wharf_offloader_get_budget(off, &b), WHARF_INVALID_ARGUMENT, "wharf_offloader_budget");
  b.struct_size = 0;
  EXPECT_FAILS(wharf_offloader_get_budget(off, &b), WHARF_INVALID_ARGUMENT, "struct_size 0");
  EXPECT_FAILS(wharf_offloader_get_budget(nullptr, &b), WHARF_INVALID_ARGUMENT, "must not be NULL");
}

// --- model-level options (the GPU suite runs offloaded models) ----------------------------------

TEST(OffloadModelOptions, OffloadOptionsAreReadBeforeTheModelAndOldCallersHaveNone) {
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_HOST;
  wharf_runtime* rt = nullptr;
  ASSERT_OK(wharf_runtime_create(&ro, &rt));
  wharf_constant_map* w = nullptr;
  ASSERT_OK(wharf_constant_map_create(&w));
  // A caller compiled before the offload field: init writes nothing past its struct.
  const size_t old_size = offsetof(wharf_model_options, offload);
  alignas(wharf_model_options) unsigned char raw[sizeof(wharf_model_options) + 8];
  std::memset(raw, 0x6B, sizeof raw);
  auto* mo = reinterpret_cast<wharf_model_options*>(raw);
  wharf_model_options_init_sized(mo, old_size);
  EXPECT_EQ(mo->struct_size, old_size);
  EXPECT_EQ(raw[old_size], 0x6B);
  wharf_model* m = nullptr;
  // Past the options, the host backend is refused: the offload field was not read.
  EXPECT_FAILS(wharf_model_load(rt, "model.so", w, mo, &m), WHARF_UNSUPPORTED, "CUDA backend");
  // Offload options are checked as wharf_offloader_create checks them, naming the call.
  wharf_model_options full;
  wharf_model_options_init(&full);
  wharf_offloader_options oo;
  wharf_offloader_options_init(&oo);
  oo.struct_size = 2;
  full.offload = &oo;
  EXPECT_FAILS(wharf_model_load(rt, "model.so", w, &full, &m), WHARF_INVALID_ARGUMENT, "wharf_offloader_options");
  wharf_offloader_options_init(&oo);
  oo.num_fqns = 1;
  EXPECT_FAILS(wharf_model_load(rt, "model.so", w, &full, &m), WHARF_INVALID_ARGUMENT,
               "wharf_model_load: offload: fqns is NULL");
  EXPECT_EQ(m, nullptr);
  wharf_offloader* off = reinterpret_cast<wharf_offloader*>(uintptr_t(1));
  EXPECT_FAILS(wharf_model_get_offloader(nullptr, &off), WHARF_INVALID_ARGUMENT, "must not be NULL");
  wharf_constant_map_free(w);
  wharf_runtime_free(rt);
}

}  // namespace
