/* SPDX-License-Identifier: Apache-2.0 */
// Element types. Values match wharf_dtype (values are only appended).
//
// The set is the safetensors format's 22 dtypes. Most are whole bytes; F4, F6_E2M3 and F6_E3M2
// are narrower than a byte and packed: a tensor of them has numel * bits / 8 bytes, and only a
// tensor whose bit size is a multiple of 8 exists (the reference implementation's rule). Size
// tensors with dtype_bits, never with dtype_size.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace wharf {

enum class DType : int {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kF64 = 3,
  kF8E4M3 = 4,
  kF8E5M2 = 5,
  kI8 = 6,
  kU8 = 7,
  kI16 = 8,
  kI32 = 9,
  kI64 = 10,
  kBool = 11,
  // Since 0.3.
  kU16 = 12,
  kU32 = 13,
  kU64 = 14,
  kC64 = 15,
  kF8E8M0 = 16,
  kF8E4M3Fnuz = 17,
  kF8E5M2Fnuz = 18,
  kF4 = 19,
  kF6E2M3 = 20,
  kF6E3M2 = 21,
};
constexpr int kNumDTypes = 22;

inline bool dtype_valid(int v) { return v >= 0 && v < kNumDTypes; }
// Bits per element (4, 6, 8, 16, 32 or 64); 0 for an invalid value.
size_t dtype_bits(DType d);
// Bytes per element for a dtype of whole bytes; 0 for a sub-byte dtype (F4, F6_*) and for an
// invalid value (as the reference's deprecated Dtype::size(), bits / 8).
size_t dtype_size(DType d);
inline bool dtype_sub_byte(DType d) { return dtype_bits(d) % 8 != 0; }
const char* dtype_name(DType d);  // safetensors spelling; nullptr for an invalid value
std::optional<DType> dtype_from_name(std::string_view name);
// The position of `d` in the reference implementation's Dtype enum, which lists dtypes in
// increasing alignment order (BOOL = 0 ... U64 = 21). Its writer sorts tensors by this rank,
// descending, then by name, so every tensor lands naturally aligned; so does Wharf's.
int dtype_safetensors_rank(DType d);

}  // namespace wharf
