// Element types. Values match wharf_dtype.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace wharf {

enum class DType : int {
  kF32 = 0, kF16 = 1, kBF16 = 2, kF64 = 3, kF8E4M3 = 4, kF8E5M2 = 5,
  kI8 = 6, kU8 = 7, kI16 = 8, kI32 = 9, kI64 = 10, kBool = 11,
};
constexpr int kNumDTypes = 12;

inline bool dtype_valid(int v) { return v >= 0 && v < kNumDTypes; }
size_t dtype_size(DType d);              // 0 for an invalid value
const char* dtype_name(DType d);         // safetensors spelling; nullptr for an invalid value
std::optional<DType> dtype_from_name(std::string_view name);

}  // namespace wharf
