// SPDX-License-Identifier: Apache-2.0
// The benchmarks' kernel-time arithmetic (bench/kernel_time_math.h): a run's figures from
// crafted CUPTI-like records (sums, span, idle gaps with overlapping and nested work, untimed
// records) and the split of back-to-back runs' records, which must refuse every split it
// cannot make exactly.
#include <gtest/gtest.h>

#include <vector>

#include "../../bench/kernel_time_math.h"

namespace {

using bench::Activity;
using bench::ActivityKind;

Activity rec(ActivityKind k, uint64_t start, uint64_t end) {
  Activity a;
  a.kind = k;
  a.start = start;
  a.end = end;
  return a;
}
Activity kern(uint64_t start, uint64_t end) { return rec(ActivityKind::kernel, start, end); }

TEST(KernelTimeMath, SerialRunSumsKernelsAndCopiesApartAndCountsTheGaps) {
  // kernel 100..150, gap 10, memset 160..170, gap 30, kernel 200..260, memcpy 260..300.
  const std::vector<Activity> r = {kern(200, 260), kern(100, 150), rec(ActivityKind::memset, 160, 170),
                                   rec(ActivityKind::memcpy, 260, 300)};
  const bench::RunFigures f = bench::run_figures(r);
  EXPECT_EQ(f.kernels, 2u);
  EXPECT_EQ(f.copies, 2u);
  EXPECT_EQ(f.kernel_ns, 110u);
  EXPECT_EQ(f.copy_ns, 50u);
  EXPECT_EQ(f.span_ns, 200u);
  EXPECT_EQ(f.busy_ns, 160u);
  EXPECT_EQ(f.gap_ns(), 40u);
  EXPECT_EQ(f.untimed, 0u);
}

TEST(KernelTimeMath, OverlappingAndNestedWorkIsBusyOnce) {
  // Two branches of a graph: 0..100 and 50..120 overlap; 130..140 nests in 125..200; the
  // kernels' sum counts each kernel, the busy time the union.
  const std::vector<Activity> r = {kern(0, 100), kern(50, 120), kern(125, 200), kern(130, 140)};
  const bench::RunFigures f = bench::run_figures(r);
  EXPECT_EQ(f.kernel_ns, 100u + 70u + 75u + 10u);
  EXPECT_EQ(f.span_ns, 200u);
  EXPECT_EQ(f.busy_ns, 120u + 75u);
  EXPECT_EQ(f.gap_ns(), 5u);
}

TEST(KernelTimeMath, TheSpanEndsAtTheLatestEndNotTheLastStart) {
  // The record starting last ends first: the span is 0..500, not 0..320.
  const std::vector<Activity> r = {kern(0, 500), kern(300, 320)};
  const bench::RunFigures f = bench::run_figures(r);
  EXPECT_EQ(f.span_ns, 500u);
  EXPECT_EQ(f.busy_ns, 500u);
  EXPECT_EQ(f.gap_ns(), 0u);
}

TEST(KernelTimeMath, UntimedAndReversedRecordsAreCountedWithoutTime) {
  const std::vector<Activity> r = {kern(0, 0), kern(1000, 1100), kern(1200, 1150), rec(ActivityKind::memcpy, 0, 0)};
  const bench::RunFigures f = bench::run_figures(r);
  EXPECT_EQ(f.kernels, 3u);
  EXPECT_EQ(f.copies, 1u);
  EXPECT_EQ(f.untimed, 2u);
  EXPECT_EQ(f.kernel_ns, 100u);  // the reversed one counts 0
  EXPECT_EQ(f.copy_ns, 0u);
  EXPECT_EQ(f.span_ns, 200u);  // 1000 .. 1200
  EXPECT_EQ(f.busy_ns, 100u);
}

TEST(KernelTimeMath, NoRecordsNoTime) {
  const bench::RunFigures f = bench::run_figures({});
  EXPECT_EQ(f.kernels + f.copies + f.kernel_ns + f.copy_ns + f.span_ns + f.busy_ns, 0u);
}

TEST(KernelTimeMath, SplitsBackToBackRunsInStreamOrder) {
  // Three runs of two records each, given out of order (CUPTI's buffers are per stream and
  // context, not globally sorted).
  const std::vector<Activity> all = {kern(220, 260), kern(0, 40),  kern(110, 150),
                                     kern(200, 210), kern(50, 90), kern(100, 105)};
  std::vector<std::vector<Activity>> runs;
  ASSERT_TRUE(bench::split_runs(all, 3, 2, &runs));
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0][0].start, 0u);
  EXPECT_EQ(runs[0][1].start, 50u);
  EXPECT_EQ(runs[1][0].start, 100u);
  EXPECT_EQ(runs[1][1].start, 110u);
  EXPECT_EQ(runs[2][0].start, 200u);
  EXPECT_EQ(runs[2][1].start, 220u);
  EXPECT_EQ(bench::run_figures(runs[1]).kernel_ns, 45u);
}

TEST(KernelTimeMath, RefusesASplitWhoseCountIsNotRunsTimesRecords) {
  std::vector<std::vector<Activity>> runs = {{kern(1, 2)}};
  const std::vector<Activity> all = {kern(0, 10), kern(20, 30), kern(40, 50)};
  EXPECT_FALSE(bench::split_runs(all, 2, 2, &runs));
  EXPECT_FALSE(bench::split_runs(all, 0, 3, &runs));
  EXPECT_FALSE(bench::split_runs(all, 3, 0, &runs));
  ASSERT_EQ(runs.size(), 1u);  // untouched
  EXPECT_EQ(runs[0][0].start, 1u);
}

TEST(KernelTimeMath, RefusesASplitThatWouldCutThroughOverlappingWork) {
  // Four records, two runs of two by count, but the third record starts while the second
  // (which the count puts in run 0) still runs: the runs were not in stream order.
  const std::vector<Activity> all = {kern(0, 10), kern(20, 100), kern(50, 60), kern(110, 120)};
  std::vector<std::vector<Activity>> runs;
  EXPECT_FALSE(bench::split_runs(all, 2, 2, &runs));
  EXPECT_TRUE(runs.empty());
  // The same records in stream order split.
  const std::vector<Activity> ok = {kern(0, 10), kern(20, 40), kern(50, 60), kern(110, 120)};
  EXPECT_TRUE(bench::split_runs(ok, 2, 2, &runs));
}

TEST(KernelTimeMath, RefusesASplitWithUntimedRecords) {
  const std::vector<Activity> all = {kern(0, 10), kern(0, 0), kern(50, 60), kern(70, 80)};
  std::vector<std::vector<Activity>> runs;
  EXPECT_FALSE(bench::split_runs(all, 2, 2, &runs));
}

}  // namespace
