// SPDX-License-Identifier: Apache-2.0
#include "device/serving.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "core/env.h"

namespace wharf {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Status ServingPolicy::from_env(ServingPolicy* out) {
  std::optional<uint64_t> dma_kib, inflight_kib, threads, window_ms, poll_us;
  WHARF_RETURN_IF_ERROR(env_uint("WHARF_SERVING_DMA_KIB", 0, 1ull << 20, "KiB", &dma_kib));
  WHARF_RETURN_IF_ERROR(env_uint("WHARF_SERVING_INFLIGHT_KIB", 0, 1ull << 30, "KiB", &inflight_kib));
  WHARF_RETURN_IF_ERROR(env_uint("WHARF_SERVING_COPY_THREADS", 0, 256, "threads", &threads));
  WHARF_RETURN_IF_ERROR(env_uint("WHARF_SERVING_WINDOW_MS", 0, 3600000, "ms", &window_ms));
  WHARF_RETURN_IF_ERROR(env_uint("WHARF_SERVING_POLL_US", 0, 100000, "us", &poll_us));
  ServingPolicy p;
  if (dma_kib) p.dma_bytes = *dma_kib << 10;
  if (inflight_kib) p.inflight_bytes = *inflight_kib << 10;
  if (threads) p.copy_threads = uint32_t(*threads);
  if (window_ms) p.window_ms = *window_ms;
  if (poll_us) p.poll_us = *poll_us;
  *out = p;
  return Status::Ok();
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
