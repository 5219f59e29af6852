#include "core/dtype.h"

namespace wharf {
namespace {
struct Info { const char* name; size_t size; };
constexpr Info kInfo[kNumDTypes] = {
    {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
    {"I8", 1},  {"U8", 1},  {"I16", 2},  {"I32", 4}, {"I64", 8},     {"BOOL", 1},
};
}  // namespace

size_t dtype_size(DType d) {
  int v = static_cast<int>(d);
  return dtype_valid(v) ? kInfo[v].size : 0;
}

const char* dtype_name(DType d) {
  int v = static_cast<int>(d);
  return dtype_valid(v) ? kInfo[v].name : nullptr;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == kInfo[i].name) return static_cast<DType>(i);
  return std::nullopt;
}

}  // namespace wharf
