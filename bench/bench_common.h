/* SPDX-License-Identifier: Apache-2.0 */
// What the GPU benchmarks share: fail-fast checks for CUDA and Wharf calls (a benchmark that
// hits an error exits with status 2 rather than report a figure), timers and a median.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "wharf/wharf.h"

namespace bench {

using Clock = std::chrono::steady_clock;

#define CUDA_OK(x)                                                                             \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                            \
    }                                                                                          \
  } while (0)

inline void wharf_ok(wharf_status* st, const char* what) {
  if (!st) return;
  std::fprintf(stderr, "%s: %s: %s\n", what, wharf_code_name(wharf_status_code(st)), wharf_status_message(st));
  std::exit(2);
}

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
inline double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// The middle element (upper middle for an even count); 0 for no samples.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Free device memory as the driver sees it.
inline uint64_t free_device_bytes() {
  size_t f = 0, t = 0;
  CUDA_OK(cudaMemGetInfo(&f, &t));
  return f;
}

// Writes every page of host memory from all cores, so first-touch faults are not measured.
inline void touch(void* p, size_t n, unsigned char v) {
  unsigned nt = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> ts;
  size_t per = (n + nt - 1) / nt;
  for (unsigned i = 0; i < nt; ++i) {
    size_t off = std::min(n, per * i), len = std::min(n - off, per);
    ts.emplace_back([=] { std::memset(static_cast<char*>(p) + off, v, len); });
  }
  for (auto& t : ts) t.join();
}

}  // namespace bench
