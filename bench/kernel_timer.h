/* SPDX-License-Identifier: Apache-2.0 */
// Issue 25's "replay step <= 1.15x the GPU time of its kernels", measured: a model run's GPU
// time (CUDA events around wharf_model_run, runs back to back) against the GPU time of the
// kernels, memcpys and memsets it executes, recorded with CUPTI's activity API. CUPTI is
// opened at run time (dlopen), so a benchmark starts where it is missing and says "CUPTI not
// found" for this part only. Used by model_bench and batch_bench (--kernel-time), as a phase of
// its own after their other figures: the tracer is enabled before that phase loads and
// captures its models, and nothing else runs while it records.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "kernel_time_math.h"

namespace bench {

// CUPTI's activity API for kernels (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, which does not
// serialize them), memcpys and memsets. One per process: CUPTI's buffer callbacks are global.
class ActivityTracer {
 public:
  // Opens CUPTI and registers the buffer callbacks on first use; ok() is false (why() says
  // why: "CUPTI not found (tried ...)", a missing symbol, a CUPTI error) when it cannot.
  static ActivityTracer& get();

  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  const std::string& library() const { return library_; }
  uint32_t version() const { return version_; }

  // Starts / stops recording (activity kinds enabled or disabled). false: CUPTI refused
  // (why() says so).
  bool enable();
  void disable();
  bool enabled() const { return enabled_; }

  // Waits for the device, flushes CUPTI's buffers and returns every record completed since
  // the last take() (kernels, memcpys, memsets; other kinds are ignored).
  std::vector<Activity> take();
  // Records CUPTI dropped (its buffers full) since the tracer opened.
  uint64_t dropped() const;

 private:
  ActivityTracer();
  bool ok_ = false, enabled_ = false;
  std::string why_, library_;
  uint32_t version_ = 0;
};

// One model run as the benchmark makes it, each part enqueued on the run's stream without
// waiting for the GPU: `begin` (run begin and anything else the step needs before the model
// runs; not timed), `run` (the model run: what the events bracket and what is attributed),
// `end` (run end).
struct RunHooks {
  std::function<void()> begin, run, end;
};

// One row of the kernel-time table: medians over the runs, microseconds.
struct KernelTimeRow {
  std::string mode;  // "graph" or "eager"
  long long size = 0;
  int runs = 0;
  double replay_us = 0;            // events around `run`, runs back to back, tracing off
  double traced_us = 0;            // the same with tracing on (CUPTI's cost on the GPU time)
  double kernels_us = 0;           // the run's kernels' durations summed (runs traced one by one)
  double copies_us = 0;            // its memcpys' and memsets' durations summed
  double span_us = 0;              // its first operation's start to its last one's end
  double gaps_us = 0;              // idle time inside the span (span minus the union of its operations)
  double b2b_kernels_us = 0;       // kernels' time per run in the traced back-to-back loop
  bool b2b_per_run = false;        // b2b_kernels_us is a median per run (split_runs), else a mean
  size_t kernels = 0, copies = 0;  // records per run (the last isolated run's)
  std::string note;                // what could not be measured, and why
  double ratio() const { return kernels_us > 0 ? replay_us / kernels_us : 0; }
};

// Measures `h` on `stream`: 5 warm-up runs (a graph's capture happens there), then `runs` runs
// back to back with tracing off (replay_us), `runs` traced one at a time with the device
// synchronized and CUPTI flushed after each (kernels, copies, span, gaps), and `runs` traced
// back to back (traced_us, b2b_kernels_us). The tracer must be ok(); its state on entry is
// restored on return.
KernelTimeRow measure_kernel_time(ActivityTracer& t, cudaStream_t stream, const RunHooks& h, int runs, const char* mode,
                                  long long size);

// Prints the rows as one table under `title` (with the tracer's library and how to read it).
void print_kernel_time(const char* title, const std::vector<KernelTimeRow>& rows);

// Appends the rows to `f` as CSV lines `kernel_time,<mode>,<size>,<field>,<value>`.
void write_kernel_time_csv(FILE* f, const std::vector<KernelTimeRow>& rows);

}  // namespace bench
