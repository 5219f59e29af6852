/* SPDX-License-Identifier: Apache-2.0 */
// Per-tag accounting of the bytes a runtime holds, with a cap on device memory.
// Every memory figure Wharf reports (docs, benchmarks) is read from here.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "core/sync.h"

namespace wharf {

enum class MemTag : int {
  kConstants = 0,
  kState = 1,
  kStaging = 2,
  kWorkspace = 3,
  kOffload = 4,
  kGraph = 5,
};
constexpr int kMemTagCapacity = 16;
const char* mem_tag_name(MemTag tag);

enum class MemKind : int { kDevice = 0, kPinnedHost = 1 };

struct MemorySnapshot {
  std::array<uint64_t, kMemTagCapacity> current{};
  std::array<uint64_t, kMemTagCapacity> peak{};
  uint64_t device_current = 0, device_peak = 0;
  uint64_t pinned_current = 0, pinned_peak = 0;
};

class MemoryAccounting {
 public:
  explicit MemoryAccounting(uint64_t device_limit) : device_limit_(device_limit) {}

  // Claims `bytes` before the real allocation. Fails with OUT_OF_MEMORY naming `what` when
  // a device claim would pass the limit; on failure nothing is counted.
  Status reserve(MemKind kind, MemTag tag, uint64_t bytes, const std::string& what) WHARF_EXCLUDES(mu_);
  // Gives back what a reserve() of the same kind and tag claimed (never more: checked).
  void release(MemKind kind, MemTag tag, uint64_t bytes) WHARF_EXCLUDES(mu_);

  MemorySnapshot snapshot() const WHARF_EXCLUDES(mu_);
  void reset_peak() WHARF_EXCLUDES(mu_);
  uint64_t device_limit() const { return device_limit_; }

 private:
  const uint64_t device_limit_;  // 0 = none
  mutable Mutex mu_;
  MemorySnapshot s_ WHARF_GUARDED_BY(mu_);
};

}  // namespace wharf
