// SPDX-License-Identifier: Apache-2.0
#include "device/memory_accounting.h"

#include <algorithm>

namespace wharf {

const char* mem_tag_name(MemTag tag) {
  switch (tag) {
    case MemTag::kConstants:
      return "constants";
    case MemTag::kState:
      return "state";
    case MemTag::kStaging:
      return "staging";
    case MemTag::kWorkspace:
      return "workspace";
    case MemTag::kOffload:
      return "offload";
    case MemTag::kGraph:
      return "graph";
  }
  return "unknown";
}

Status MemoryAccounting::reserve(MemKind kind, MemTag tag, uint64_t bytes, const std::string& what) {
  int t = static_cast<int>(tag);
  if (t < 0 || t >= kMemTagCapacity) return Internal("memory tag out of range: " + std::to_string(t));
  MutexLock lock(mu_);
  if (kind == MemKind::kDevice) {
    if (device_limit_ != 0 && (bytes > device_limit_ || s_.device_current > device_limit_ - bytes))
      return OutOfMemory("allocating " + std::to_string(bytes) + " bytes for " + what +
                         " would exceed the runtime's device_memory_limit of " + std::to_string(device_limit_) +
                         " bytes (" + std::to_string(s_.device_current) + " in use)");
    s_.device_current += bytes;
    s_.device_peak = std::max(s_.device_peak, s_.device_current);
  } else {
    s_.pinned_current += bytes;
    s_.pinned_peak = std::max(s_.pinned_peak, s_.pinned_current);
  }
  s_.current[t] += bytes;
  s_.peak[t] = std::max(s_.peak[t], s_.current[t]);
  return Status::Ok();
}

void MemoryAccounting::release(MemKind kind, MemTag tag, uint64_t bytes) {
  const int t = static_cast<int>(tag);
  WHARF_DCHECK(t >= 0 && t < kMemTagCapacity, "memory accounting: release with a tag out of range");
  MutexLock lock(mu_);
  uint64_t& by_kind = kind == MemKind::kDevice ? s_.device_current : s_.pinned_current;
  // Accounting never goes negative: a release larger than what is held is a double free or
  // a release under the wrong tag or kind.
  WHARF_DCHECK(by_kind >= bytes, "memory accounting: releasing more bytes of a memory kind than are held");
  WHARF_DCHECK(s_.current[t] >= bytes, "memory accounting: releasing more bytes under a tag than are held");
  by_kind -= bytes;
  s_.current[t] -= bytes;
}

MemorySnapshot MemoryAccounting::snapshot() const {
  MutexLock lock(mu_);
  return s_;
}

void MemoryAccounting::reset_peak() {
  MutexLock lock(mu_);
  s_.peak = s_.current;
  s_.device_peak = s_.device_current;
  s_.pinned_peak = s_.pinned_current;
}

}  // namespace wharf
