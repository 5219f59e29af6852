// SPDX-License-Identifier: Apache-2.0
// The small model the replica-group tests (in-process: replica_test.cpp; across processes:
// rank_group_test.cpp) declare on every replica, its versioned weights, and how a run tells
// which version it serves.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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

inline uint64_t constants_bytes(wharf_runtime* rt) {
  wharf_memory_stats m;
  std::memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  EXPECT_EQ(wharf_runtime_get_memory_stats(rt, &m), nullptr);
  return m.current[WHARF_MEM_CONSTANTS];
}

}  // namespace wharf_test::replica_model
