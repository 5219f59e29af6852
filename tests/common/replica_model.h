// SPDX-License-Identifier: Apache-2.0
// The small model the replica-group tests (in-process: replica_test.cpp; across processes:
// rank_group_test.cpp) declare on every replica, its versioned weights, and how a run tells
// which version it serves.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "common/test_support.h"
#include "wharf/wharf.h"

namespace wharf_test::replica_model {

// Three device constants and one host-placed one.
inline const char* const kNames[] = {"embed", "layers.0.w", "layers.1.w", "offloaded.w"};
inline const std::vector<int64_t> kShapes[] = {{64, 32}, {32, 32}, {32, 32}, {16, 8}};
constexpr size_t kNumConstants = 4;

inline uint64_t elements(size_t i) {
  uint64_t n = 1;
  for (int64_t d : kShapes[i]) n *= uint64_t(d);
  return n;
}

inline wharf_runtime* host_runtime(uint64_t limit = 0) { return make_runtime(WHARF_BACKEND_HOST, {limit, 2, 1 << 20}); }

// The constants' declarations; `change` alters constant 1 (for mismatch tests): 1 shape,
// 2 dtype, 3 name, 4 placement, 5 one constant fewer, 6 a derived constant.
inline std::vector<wharf_constant_decl> model_decls(int change = 0) {
  static const int64_t other_shape[] = {32, 16};
  std::vector<wharf_constant_decl> decls;
  for (size_t i = 0; i < kNumConstants; ++i) {
    wharf_constant_decl d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.fqn = kNames[i];
    d.dtype = WHARF_DTYPE_F32;
    d.ndim = int32_t(kShapes[i].size());
    d.shape = kShapes[i].data();
    d.placement = i == 3 ? WHARF_PLACEMENT_HOST : WHARF_PLACEMENT_DEVICE;
    if (i == 1 && change == 1) d.shape = other_shape;
    if (i == 1 && change == 2) d.dtype = WHARF_DTYPE_F16;
    if (i == 1 && change == 3) d.fqn = "layers.0.v";
    if (i == 1 && change == 4) d.placement = WHARF_PLACEMENT_HOST;
    if (i == 1 && change == 6) d.flags = WHARF_CONSTANT_DERIVED;
    decls.push_back(d);
  }
  if (change == 5) decls.pop_back();
  return decls;
}

// Constant i of version v holds v * 100 + i in every element (pageable host memory).
struct Weights {
  std::vector<std::vector<float>> data;
  std::vector<size_t> which;
  wharf_constant_map* map = nullptr;
  explicit Weights(float v, std::vector<size_t> constants = {0, 1, 2, 3}) : which(std::move(constants)) {
    EXPECT_EQ(wharf_constant_map_create(&map), nullptr);
    for (size_t i : which) {
      data.emplace_back(elements(i), v * 100 + float(i));
      wharf_tensor_view t{sizeof(wharf_tensor_view),
                          0,
                          data.back().data(),
                          WHARF_DTYPE_F32,
                          WHARF_DEVICE_CPU,
                          0,
                          int32_t(kShapes[i].size()),
                          kShapes[i].data(),
                          nullptr};
      St st(wharf_constant_map_set(map, kNames[i], &t));
      EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    }
  }
  ~Weights() { wharf_constant_map_free(map); }
  Weights(const Weights&) = delete;
};

// Every element of constant i in `run`; -1 when they disagree (a torn constant).
inline float read_whole(wharf_run* run, size_t i) {
  wharf_tensor_view v{};
  St st(wharf_run_get_tensor(run, kNames[i], &v));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  if (st.code() != WHARF_OK) return -2;
  const float* p = static_cast<const float*>(v.data);
  for (uint64_t k = 1; k < elements(i); ++k)
    if (p[k] != p[0]) return -1;
  return p[0];
}

// The version every constant of `run` holds (v * 100 + i), or -1 for a mix.
inline float version_of(wharf_run* run) {
  const float v = read_whole(run, 0) / 100;
  for (size_t i = 1; i < kNumConstants; ++i)
    if ((read_whole(run, i) - float(i)) / 100 != v) return -1;
  return v;
}

// What a run begun now serves.
inline float version_now(wharf_container* c) {
  wharf_run* run = nullptr;
  St st(wharf_run_begin(c, nullptr, nullptr, &run));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  if (!run) return -3;
  const float v = version_of(run);
  EXPECT_EQ(wharf_run_end(run), nullptr);
  return v;
}

// A fold callback for the host backend: writes `target` (a derived constant) as embed[0] +
// `offset` in every element, so with model_decls(6) (constant 1, "layers.0.w", derived) and
// offset 1 a folded container serves version v exactly as version_of reads it. Counts its
// calls; the call numbered `fail_at` (from 0) fails with DATA_CORRUPT instead, writing nothing.
struct Fold {
  const char* target = "layers.0.w";
  float offset = 1;
  int fail_at = -1;
  int calls = 0;
  // Called (if set) from inside the callback, on the updating thread (re-entrancy tests).
  std::function<void()> inside;
};

inline wharf_status* fold_from_embed(wharf_run* run, void* user) {
  Fold* f = static_cast<Fold*>(user);
  const int call = f->calls++;
  if (f->inside) f->inside();
  if (call == f->fail_at) return wharf_status_create(WHARF_DATA_CORRUPT, "the test's fold failed on purpose");
  wharf_tensor_view embed{}, out{};
  if (wharf_status* st = wharf_run_get_tensor(run, "embed", &embed)) return st;
  if (wharf_status* st = wharf_run_get_tensor(run, f->target, &out)) return st;
  uint64_t n = 1;
  for (int32_t d = 0; d < out.ndim; ++d) n *= uint64_t(out.shape[d]);
  const float v = static_cast<const float*>(embed.data)[0] + f->offset;
  for (uint64_t k = 0; k < n; ++k) static_cast<float*>(out.data)[k] = v;
  return nullptr;
}

inline wharf_update_options fold_options(Fold* f) {
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.fold = fold_from_embed;
  o.fold_user = f;
  return o;
}

inline uint64_t constants_bytes(wharf_runtime* rt) {
  wharf_memory_stats m;
  std::memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  EXPECT_EQ(wharf_runtime_get_memory_stats(rt, &m), nullptr);
  return m.current[WHARF_MEM_CONSTANTS];
}

}  // namespace wharf_test::replica_model
