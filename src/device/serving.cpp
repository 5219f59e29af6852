// SPDX-License-Identifier: Apache-2.0
#include "device/serving.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

namespace wharf {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A non-negative decimal integer from the environment, else `fallback` (a malformed value is
// ignored rather than failing an update).
uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  if (*end != '\0' || v[0] == '-') return fallback;
  return x;
}

}  // namespace

ServingPolicy ServingPolicy::from_env() {
  ServingPolicy p;
  p.dma_bytes = env_u64("WHARF_SERVING_DMA_KIB", p.dma_bytes >> 10) << 10;
  p.inflight_bytes = env_u64("WHARF_SERVING_INFLIGHT_KIB", p.inflight_bytes >> 10) << 10;
  p.copy_threads = uint32_t(std::min<uint64_t>(env_u64("WHARF_SERVING_COPY_THREADS", p.copy_threads), 1u << 16));
  p.window_ms = env_u64("WHARF_SERVING_WINDOW_MS", p.window_ms);
  p.poll_us = std::min<uint64_t>(env_u64("WHARF_SERVING_POLL_US", p.poll_us), 100000);
  return p;
}

std::shared_ptr<ServingSignal> ServingSignal::for_cuda_device(int index) {
  static std::mutex mu;
  static std::map<int, std::shared_ptr<ServingSignal>>* signals = new std::map<int, std::shared_ptr<ServingSignal>>;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<ServingSignal>& s = (*signals)[index];
  if (!s) s = std::make_shared<ServingSignal>();
  return s;
}

void ServingSignal::note_run() noexcept {
  const int64_t now = now_ns();
  if (now - last_ns_.load(std::memory_order_relaxed) > 1000000) last_ns_.store(now, std::memory_order_relaxed);
}

bool ServingSignal::active(uint64_t window_ms) const noexcept {
  const int64_t last = last_ns_.load(std::memory_order_relaxed);
  if (window_ms == 0 || last == 0) return false;
  return now_ns() - last < int64_t(window_ms) * 1000000;
}

}  // namespace wharf
