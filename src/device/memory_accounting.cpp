#include "device/memory_accounting.h"

#include <algorithm>

namespace wharf {

const char* mem_tag_name(MemTag tag) {
  switch (tag) {
    case MemTag::kConstants: return "constants";
    case MemTag::kState: return "state";
    case MemTag::kStaging: return "staging";
    case MemTag::kWorkspace: return "workspace";
    case MemTag::kOffload: return "offload";
    case MemTag::kGraph: return "graph";
  }
  return "unknown";
}

Status MemoryAccounting::reserve(MemKind kind, MemTag tag, uint64_t bytes, const std::string& what) {
  int t = static_cast<int>(tag);
  if (t < 0 || t >= kMemTagCapacity) return Internal("memory tag out of range: " + std::to_string(t));
  std::lock_guard<std::mutex> lock(mu_);
  if (kind == MemKind::kDevice) {
    if (device_limit_ != 0 && (bytes > device_limit_ || s_.device_current > device_limit_ - bytes))
      return OutOfMemory("allocating " + std::to_string(bytes) + " bytes for " + what +
                         " would exceed the runtime's device_memory_limit of " +
                         std::to_string(device_limit_) + " bytes (" +
                         std::to_string(s_.device_current) + " in use)");
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
  std::lock_guard<std::mutex> lock(mu_);
  (kind == MemKind::kDevice ? s_.device_current : s_.pinned_current) -= bytes;
  s_.current[static_cast<int>(tag)] -= bytes;
}

MemorySnapshot MemoryAccounting::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return s_;
}

void MemoryAccounting::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  s_.peak = s_.current;
  s_.device_peak = s_.device_current;
  s_.pinned_peak = s_.pinned_current;
}

}  // namespace wharf
