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

// Median with the smallest and largest sample (what every table prints), and the count.
struct Spread {
  double med = 0, lo = 0, hi = 0;
  size_t n = 0;
};
inline Spread spread(const std::vector<double>& v) {
  Spread s{median(v), v.empty() ? 0 : v[0], v.empty() ? 0 : v[0], v.size()};
  for (double x : v) {
    s.lo = std::min(s.lo, x);
    s.hi = std::max(s.hi, x);
  }
  return s;
}

// A dense tensor view of `data` (contiguous: no strides).
inline wharf_tensor_view tensor_view(void* data, wharf_dtype dt, wharf_device_type dev, int32_t ndim,
                                     const int64_t* shape) {
  wharf_tensor_view v;
  std::memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.data = data;
  v.dtype = dt;
  v.device_type = dev;
  v.ndim = ndim;
  v.shape = shape;
  return v;
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

#ifdef WHARF_EXPERIMENTAL
// Prints a table of `m`'s first `num_buckets` captured graphs in capture order (each bucket's
// size, its capture time in parts, its nodes and the pool memory it added; num_buckets from
// wharf_graph_stats) and returns the captures' total milliseconds.
inline double print_graph_buckets(const wharf_model* m, uint32_t num_buckets) {
  double total_ms = 0;
  std::printf("%-8s %9s %9s %9s %9s %9s %9s %7s %12s\n", "bucket", "capture", "bind+fold", "warm-up", "captured",
              "scan", "instant.", "nodes", "pool +bytes");
  for (uint32_t i = 0; i < num_buckets; ++i) {
    wharf_graph_bucket_info b;
    std::memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    wharf_ok(wharf_model_get_graph_bucket(m, i, &b), "graph bucket");
    total_ms += b.capture_ms;
    std::printf("%-8lld %6.1f ms %6.1f ms %6.1f ms %6.1f ms %6.1f ms %6.1f ms %7llu %12llu\n", (long long)b.bucket_size,
                b.capture_ms, b.bind_fold_ms, b.warmup_ms, b.capture_run_ms, b.scan_ms, b.instantiate_ms,
                (unsigned long long)b.nodes, (unsigned long long)b.pool_bytes);
  }
  return total_ms;
}
#endif

}  // namespace bench
