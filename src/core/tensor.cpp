// SPDX-License-Identifier: Apache-2.0
#include "core/tensor.h"

#include "core/checked.h"

namespace wharf {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Status TensorMeta::validate(const std::string& what) const {
  if (!dtype_valid(static_cast<int>(dtype)))
    return InvalidArgument(what + ": unknown dtype value " + std::to_string(static_cast<int>(dtype)));
  if (shape.size() > static_cast<size_t>(kMaxDims))
    return InvalidArgument(what + ": " + std::to_string(shape.size()) + " dimensions, at most " +
                           std::to_string(kMaxDims) + " supported");
  if (!strides.empty() && strides.size() != shape.size())
    return InvalidArgument(what + ": " + std::to_string(strides.size()) + " strides for " +
                           std::to_string(shape.size()) + " dimensions");
  // A zero dimension makes the element count exactly 0 wherever it stands: [4, 2^62, 2^62, 0]
  // is as valid as [0, 2^62, 2^62, 4], so the product is formed only when no dimension is 0.
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) return InvalidArgument(what + ": negative dimension in shape " + shape_string(shape));
    if (shape[i] == 0) empty = true;
  }
  uint64_t n = empty ? 0 : 1;
  for (size_t i = 0; !empty && i < shape.size(); ++i)
    if (!checked_mul(n, static_cast<uint64_t>(shape[i]), &n))
      return InvalidArgument(what + ": element count of shape " + shape_string(shape) + " overflows");
  uint64_t bytes;
  if (dtype_sub_byte(dtype)) {
    // Packed: the reference's rule is that a tensor's bit size is a multiple of 8.
    uint64_t bits;
    if (!checked_mul(n, dtype_bits(dtype), &bits) || bits / 8 > (uint64_t(1) << 62))
      return InvalidArgument(what + ": byte size of shape " + shape_string(shape) + " overflows");
    if (bits % 8 != 0)
      return InvalidArgument(what + ": shape " + shape_string(shape) + " of " + dtype_name(dtype) + " is " +
                             std::to_string(bits) + " bits, not a whole number of bytes (a " +
                             std::to_string(dtype_bits(dtype)) +
                             "-bit dtype needs an element count that makes "
                             "a multiple of 8 bits)");
  } else if (!checked_mul(n, dtype_size(dtype), &bytes) || bytes > (uint64_t(1) << 62)) {
    return InvalidArgument(what + ": byte size of shape " + shape_string(shape) + " overflows");
  }
  for (int64_t s : strides)
    if (s < 0) return InvalidArgument(what + ": negative stride in " + shape_string(strides));
  if (dtype_sub_byte(dtype) && !contiguous())
    return Unsupported(what + ": strides " + shape_string(strides) + " for a " + dtype_name(dtype) +
                       " tensor: elements of a sub-byte dtype are packed and not byte-addressable, so "
                       "only contiguous views are supported");
  // (A contiguous sub-byte view's extent is its packed size, checked above.)
  if (!strides.empty() && n > 0 && !dtype_sub_byte(dtype)) {
    uint64_t last = 0, term;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (!checked_mul(static_cast<uint64_t>(shape[i] - 1), static_cast<uint64_t>(strides[i]), &term) ||
          !checked_add(last, term, &last))
        return InvalidArgument(what + ": strided extent overflows");
    }
    if (!checked_mul(last + 1, dtype_size(dtype), &bytes) || bytes > (uint64_t(1) << 62))
      return InvalidArgument(what + ": strided extent overflows");
  }
  if (device_type != DeviceType::kCpu && device_type != DeviceType::kCuda)
    return InvalidArgument(what + ": unknown device type " + std::to_string(static_cast<int>(device_type)));
  if (device_index < 0) return InvalidArgument(what + ": negative device index " + std::to_string(device_index));
  return Status::Ok();
}

uint64_t TensorMeta::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

uint64_t TensorMeta::nbytes() const {
  if (dtype_sub_byte(dtype)) return numel() * dtype_bits(dtype) / 8;  // validate(): fits, whole bytes
  return numel() * dtype_size(dtype);
}

// stride[i] is the product of the later dimensions. For a valid non-empty tensor that product
// always fits (validate() bounds the byte size by 2^62). Only a zero-element view can have later
// dimensions whose product exceeds int64 (shape [0, INT64_MAX, 4]); the exact value is then not
// representable, and the stride saturates at INT64_MAX instead of overflowing (undefined
// behaviour). Such a stride addresses nothing: the view has no element.
std::vector<int64_t> TensorMeta::contiguous_strides() const {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    if (__builtin_mul_overflow(acc, shape[i], &acc)) acc = INT64_MAX;
  }
  return s;
}

bool TensorMeta::contiguous() const {
  if (strides.empty()) return true;
  // No element: every stride vector describes the same (empty) view.
  for (int64_t d : shape)
    if (d == 0) return true;
  std::vector<int64_t> c = contiguous_strides();
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1 && strides[i] != c[i]) return false;  // size-1 dims may carry any stride
  return true;
}

uint64_t TensorMeta::extent_bytes() const {
  // Sub-byte views are contiguous (validate()), so their extent is their packed size.
  if (strides.empty() || dtype_sub_byte(dtype)) return nbytes();
  uint64_t n = numel();
  if (n == 0) return 0;
  uint64_t last = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    last += static_cast<uint64_t>(shape[i] - 1) * static_cast<uint64_t>(strides[i]);
  return (last + 1) * dtype_size(dtype);
}

}  // namespace wharf
