/* SPDX-License-Identifier: Apache-2.0 */
// The arithmetic of the benchmarks' kernel-time measurement (kernel_timer.h): GPU activity
// records (kernels, memcpys, memsets with start and end in nanoseconds, as CUPTI reports them)
// turned into one model run's figures, and back-to-back runs' records split into runs. No CUDA
// here, so the unit tests (tests/unit/kernel_time_math_test.cpp) feed it crafted records.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace bench {

enum class ActivityKind : uint8_t { kernel, memcpy, memset };

struct Activity {
  ActivityKind kind = ActivityKind::kernel;
  uint64_t start = 0, end = 0;  // ns on CUPTI's clock; both 0: CUPTI could not time it
  uint32_t stream = 0;          // CUPTI's stream id
};

// One run's GPU work, in nanoseconds.
struct RunFigures {
  size_t kernels = 0;      // kernel records
  size_t copies = 0;       // memcpy and memset records
  size_t untimed = 0;      // records without timestamps (counted, not timed)
  uint64_t kernel_ns = 0;  // the kernels' durations summed
  uint64_t copy_ns = 0;    // the memcpys' and memsets' durations summed
  uint64_t span_ns = 0;    // the first start to the last end
  uint64_t busy_ns = 0;    // the union of all records' intervals (overlapping work counted once)
  // Idle time inside the span: between one operation's end and the next one's start.
  uint64_t gap_ns() const { return span_ns - busy_ns; }
};

inline RunFigures run_figures(const std::vector<Activity>& records) {
  RunFigures f;
  std::vector<std::pair<uint64_t, uint64_t>> iv;
  iv.reserve(records.size());
  for (const Activity& a : records) {
    (a.kind == ActivityKind::kernel ? f.kernels : f.copies)++;
    if (a.start == 0 && a.end == 0) {
      ++f.untimed;
      continue;
    }
    const uint64_t end = std::max(a.start, a.end);  // a reversed pair counts as no time
    (a.kind == ActivityKind::kernel ? f.kernel_ns : f.copy_ns) += end - a.start;
    iv.emplace_back(a.start, end);
  }
  if (iv.empty()) return f;
  std::sort(iv.begin(), iv.end());
  uint64_t cur_start = iv[0].first, cur_end = iv[0].second, last_end = iv[0].second;
  for (size_t i = 1; i < iv.size(); ++i) {
    last_end = std::max(last_end, iv[i].second);
    if (iv[i].first > cur_end) {
      f.busy_ns += cur_end - cur_start;
      cur_start = iv[i].first;
      cur_end = iv[i].second;
    } else {
      cur_end = std::max(cur_end, iv[i].second);
    }
  }
  f.busy_ns += cur_end - cur_start;
  f.span_ns = last_end - iv[0].first;
  return f;
}

// Runs issued back to back on one stream execute in stream order: sorted by start, run i's
// records all come before run i+1's, and none of run i+1's starts before run i's last one
// ends. Splits `records` of `runs` such runs with `per_run` records each into `out` (one vector
// per run, by start); false, `out` untouched, when the count is not runs * per_run or a run's
// first record starts before the previous run's last end (work of something else between the
// runs, or records that are not in stream order), so a wrong split is refused, not reported.
// Untimed records cannot be placed: any makes the split fail.
inline bool split_runs(std::vector<Activity> records, size_t runs, size_t per_run,
                       std::vector<std::vector<Activity>>* out) {
  if (runs == 0 || per_run == 0 || records.size() != runs * per_run) return false;
  for (const Activity& a : records)
    if (a.start == 0 && a.end == 0) return false;
  std::stable_sort(records.begin(), records.end(),
                   [](const Activity& a, const Activity& b) { return a.start < b.start; });
  std::vector<std::vector<Activity>> split(runs);
  uint64_t prev_end = 0;
  for (size_t r = 0; r < runs; ++r) {
    const auto first = records.begin() + std::ptrdiff_t(r * per_run);
    if (r > 0 && first->start < prev_end) return false;
    split[r].assign(first, first + std::ptrdiff_t(per_run));
    prev_end = 0;
    for (const Activity& a : split[r]) prev_end = std::max(prev_end, std::max(a.start, a.end));
  }
  *out = std::move(split);
  return true;
}

}  // namespace bench
