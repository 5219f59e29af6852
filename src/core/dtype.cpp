// SPDX-License-Identifier: Apache-2.0
#include "core/dtype.h"

namespace wharf {
namespace {
// rank: the dtype's position in the reference implementation's Dtype enum (safetensors crate,
// src/tensor.rs), "in increasing alignment order".
struct Info {
  const char* name;
  size_t bits;
  int rank;
};
constexpr Info kInfo[kNumDTypes] = {
    {"F32", 32, 17},   {"F16", 16, 13},   {"BF16", 16, 14},      {"F64", 64, 19},        {"F8_E4M3", 8, 7},
    {"F8_E5M2", 8, 6}, {"I8", 8, 5},      {"U8", 8, 4},          {"I16", 16, 11},        {"I32", 32, 15},
    {"I64", 64, 20},   {"BOOL", 8, 0},    {"U16", 16, 12},       {"U32", 32, 16},        {"U64", 64, 21},
    {"C64", 64, 18},   {"F8_E8M0", 8, 8}, {"F8_E4M3FNUZ", 8, 9}, {"F8_E5M2FNUZ", 8, 10}, {"F4", 4, 1},
    {"F6_E2M3", 6, 2}, {"F6_E3M2", 6, 3},
};
}  // namespace

size_t dtype_bits(DType d) {
  int v = static_cast<int>(d);
  return dtype_valid(v) ? kInfo[v].bits : 0;
}

size_t dtype_size(DType d) { return dtype_bits(d) / 8; }

const char* dtype_name(DType d) {
  int v = static_cast<int>(d);
  return dtype_valid(v) ? kInfo[v].name : nullptr;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == kInfo[i].name) return static_cast<DType>(i);
  return std::nullopt;
}

int dtype_safetensors_rank(DType d) {
  int v = static_cast<int>(d);
  return dtype_valid(v) ? kInfo[v].rank : -1;
}

}  // namespace wharf
