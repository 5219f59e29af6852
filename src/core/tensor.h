/* SPDX-License-Identifier: Apache-2.0 */
// Tensor metadata (dtype, shape, strides, where the data lives) without the data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace wharf {

constexpr int kMaxDims = 8;

enum class DeviceType : int { kCpu = 0, kCuda = 1 };

struct TensorMeta {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements; empty = contiguous row-major
  DeviceType device_type = DeviceType::kCpu;
  int32_t device_index = 0;

  // Checks dtype, rank, non-negative dims/strides and that the byte extent fits in 63 bits.
  // A sub-byte dtype (F4, F6_*): the tensor's bit size must be a multiple of 8
  // (kInvalidArgument otherwise) and the view contiguous (kUnsupported for other strides: its
  // elements are not byte-addressable). `what` names the tensor in messages ("constant 'w'").
  Status validate(const std::string& what) const;

  uint64_t numel() const;   // product of shape (1 for a scalar); call validate() first
  uint64_t nbytes() const;  // numel * dtype_bits / 8 (packed for sub-byte dtypes)
  // No strides, strides equal to the row-major ones (size-1 dimensions may carry any stride),
  // or no element at all (a zero-element view is contiguous whatever its strides).
  bool contiguous() const;
  // Bytes from the first to one past the last element addressed (strided views).
  uint64_t extent_bytes() const;
  // Row-major strides: stride[i] = product of shape[i+1..]. Never overflows: for a zero-element
  // view whose later dimensions multiply past int64 (shape [0, INT64_MAX, 4]) the stride
  // saturates at INT64_MAX (it addresses nothing).
  std::vector<int64_t> contiguous_strides() const;
};

// "[4096, 1024]"
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace wharf
