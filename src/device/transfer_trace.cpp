// SPDX-License-Identifier: Apache-2.0
// The transfer trace's post-processing (device/transfer_trace.h): the summary and the text.
#include "device/transfer_trace.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/logging.h"

namespace wharf {
namespace {

double ms_of(int64_t ns) { return ns < 0 ? -1 : double(ns) / 1e6; }

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

}  // namespace

std::string mib_text(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f MiB", double(bytes) / double(1 << 20));
  return buf;
}

TransferTraceSummary summarize_transfer_trace(const TransferTrace& t) {
  TransferTraceSummary s;
  s.bytes = t.pageable_bytes + t.pinned_bytes + t.device_bytes + t.file_bytes;
  s.total_ms = ms_of(t.total_ns);
  auto first_of = [](double& cur, double v) {
    if (v >= 0 && (cur < 0 || v < cur)) cur = v;
  };
  auto last_of = [](double& cur, double v) {
    if (v >= 0 && v > cur) cur = v;
  };
  // Device intervals of every copy, for the busy time and the gaps.
  std::vector<std::pair<double, double>> dev;
  for (const TransferTrace::Block& b : t.blocks) {
    first_of(s.first_enqueue_ms, ms_of(b.enqueue_start_ns));
    if (b.device_start_ms >= 0 && b.device_end_ms >= 0) dev.emplace_back(b.device_start_ms, b.device_end_ms);
  }
  for (const TransferTrace::Direct& d : t.directs) {
    s.dma_bytes += d.bytes;
    first_of(s.first_enqueue_ms, ms_of(d.enqueue_start_ns));
    s.direct_enqueue_ms += d.enqueue_end_ns >= 0 ? ms_of(d.enqueue_end_ns - d.enqueue_start_ns) : 0;
    if (d.device_start_ms >= 0 && d.device_end_ms >= 0) dev.emplace_back(d.device_start_ms, d.device_end_ms);
  }
  for (const TransferTrace::Fill& f : t.fills) {
    if (f.read_end_ns < 0) continue;
    s.staged_bytes += f.bytes;
    first_of(s.fill_first_ms, ms_of(f.read_start_ns));
    last_of(s.fill_last_ms, ms_of(f.read_end_ns));
  }
  for (const TransferTrace::Worker& w : t.workers) {
    first_of(s.worker_first_start_ms, ms_of(w.start_ns));
    last_of(s.worker_last_start_ms, ms_of(w.start_ns));
    s.read_ms += ms_of(int64_t(w.read_ns));
    s.chunk_wait_ms += ms_of(int64_t(w.chunk_wait_ns));
    s.dst_wait_ms += ms_of(int64_t(w.dst_wait_ns));
    s.enqueue_ms += ms_of(int64_t(w.enqueue_ns));
  }
  s.dma_bytes += s.staged_bytes;
  if (s.fill_last_ms > s.fill_first_ms && s.fill_first_ms >= 0)
    s.fill_gbps = double(s.staged_bytes) / ((s.fill_last_ms - s.fill_first_ms) * 1e6);
  // The workers' read time of staged fills: all, the first wave (one fill per thread), the rest.
  double read_ms[2] = {0, 0};
  uint64_t read_bytes[2] = {0, 0};
  for (size_t i = 0; i < t.fills.size(); ++i) {
    const TransferTrace::Fill& f = t.fills[i];
    if (f.read_end_ns < 0) continue;
    const int later = i >= t.staging_threads ? 1 : 0;
    read_ms[later] += ms_of(f.read_end_ns - f.read_start_ns);
    read_bytes[later] += f.bytes;
  }
  std::vector<int> cpus;
  for (const TransferTrace::Fill& f : t.fills)
    if (f.cpu >= 0) cpus.push_back(f.cpu);
  std::sort(cpus.begin(), cpus.end());
  s.fill_cpus = uint32_t(std::unique(cpus.begin(), cpus.end()) - cpus.begin());
  auto rate = [](uint64_t bytes, double ms) { return ms > 0 ? double(bytes) / (ms * 1e6) : 0.0; };
  s.thread_read_gbps = rate(read_bytes[0] + read_bytes[1], read_ms[0] + read_ms[1]);
  s.first_fills_thread_gbps = rate(read_bytes[0], read_ms[0]);
  s.later_fills_thread_gbps = rate(read_bytes[1], read_ms[1]);
  for (const TransferTrace::Alloc& al : t.allocs) {
    if (al.end_ns < 0) continue;
    const double ms = ms_of(al.end_ns - al.start_ns);
    s.alloc_ms += ms;
    s.alloc_max_ms = std::max(s.alloc_max_ms, ms);
    last_of(s.allocs_done_ms, ms_of(al.end_ns));
  }
  if (t.requests_done_ns >= 0 && t.workers_done_ns >= t.requests_done_ns)
    s.wait_workers_ms = ms_of(t.workers_done_ns - t.requests_done_ns);
  if (t.drain_start_ns >= 0 && t.total_ns >= t.drain_start_ns) s.drain_ms = ms_of(t.total_ns - t.drain_start_ns);
  // The copy engine: the union of the intervals, and what lies between its pieces.
  std::sort(dev.begin(), dev.end());
  double cur_start = -1, cur_end = -1;
  for (const auto& [a, b] : dev) {
    if (cur_end < 0) {
      cur_start = a, cur_end = b;
      s.first_dma_ms = a;
      continue;
    }
    if (a > cur_end) {
      s.dma_busy_ms += cur_end - cur_start;
      s.gaps.push_back({cur_end, a - cur_end});
      cur_start = a;
    }
    cur_end = std::max(cur_end, b);
  }
  if (cur_end >= 0) {
    s.dma_busy_ms += cur_end - cur_start;
    s.last_dma_ms = cur_end;
    s.dma_idle_ms = std::max(0.0, (s.last_dma_ms - s.first_dma_ms) - s.dma_busy_ms);
  }
  std::sort(s.gaps.begin(), s.gaps.end(),
            [](const TransferTraceSummary::Gap& x, const TransferTraceSummary::Gap& y) { return x.ms > y.ms; });
  if (s.gaps.size() > 5) s.gaps.resize(5);
  return s;
}

std::string format_transfer_trace(const TransferTrace& t, bool summary_only) {
  const TransferTraceSummary s = summarize_transfer_trace(t);
  auto gbps = [](uint64_t bytes, double ms) { return ms > 0 ? double(bytes) / (ms * 1e6) : 0.0; };
  std::string o;
  o += fmt("transfer trace: %zu requests, %s (pageable %s, pinned %s, device %s, file %s)%s%s\n", t.requests,
           mib_text(s.bytes).c_str(), mib_text(t.pageable_bytes).c_str(), mib_text(t.pinned_bytes).c_str(),
           mib_text(t.device_bytes).c_str(), mib_text(t.file_bytes).c_str(), t.serving ? "; runs being served" : "",
           t.error.empty() ? "" : ("; FAILED: " + t.error).c_str());
  o += fmt(
      "  setup        %u staging threads, chunks of %s in blocks of %u%s, ring %s, reads (%s); %zu fills in "
      "%zu blocks, %llu staged DMAs; %zu direct copies; trace setup %.3f ms left out\n",
      t.staging_threads, mib_text(t.chunk_bytes).c_str(), t.block_chunks, t.ramp_start ? " (first ones ramped)" : "",
      mib_text(t.ring_bytes).c_str(), t.staging_copy.c_str(), t.fills.size(), t.blocks.size(),
      (unsigned long long)t.staged_copies, t.directs.size(), double(t.setup_ns) / 1e6);
  o += fmt("  total        %.3f ms = %.2f GB/s (planned at %.3f ms)\n", s.total_ms, gbps(s.bytes, s.total_ms),
           ms_of(t.planned_ns));
  o +=
      fmt("  first DMA    enqueued at %.3f ms (host), began at %.3f ms (device)\n", s.first_enqueue_ms, s.first_dma_ms);
  if (!t.workers.empty())
    o += fmt("  workers      %zu told to start at %.3f ms, started %.3f-%.3f ms\n", t.workers.size(),
             ms_of(t.workers_begin_ns), s.worker_first_start_ms, s.worker_last_start_ms);
  if (!t.fills.empty())
    o +=
        fmt("  host fills   %s read %.3f-%.3f ms = %.2f GB/s; per thread while reading %.2f GB/s (first fills "
            "%.2f, later %.2f); on %u CPUs\n",
            mib_text(s.staged_bytes).c_str(), s.fill_first_ms, s.fill_last_ms, s.fill_gbps, s.thread_read_gbps,
            s.first_fills_thread_gbps, s.later_fills_thread_gbps, s.fill_cpus);
  if (t.device_times) {
    o +=
        fmt("  DMA          %.3f-%.3f ms: busy %.3f ms (%.2f GB/s while busy), idle %.3f ms; after it %.3f ms to "
            "return\n",
            s.first_dma_ms, s.last_dma_ms, s.dma_busy_ms, gbps(s.dma_bytes, s.dma_busy_ms), s.dma_idle_ms,
            s.last_dma_ms >= 0 ? s.total_ms - s.last_dma_ms : -1.0);
    std::string g;
    for (const TransferTraceSummary::Gap& gap : s.gaps) g += fmt(" %.3f ms at %.3f;", gap.ms, gap.at_ms);
    o += "  DMA gaps    " + (g.empty() ? std::string(" none") : g) + "\n";
  } else {
    o += "  DMA          no device times\n";
  }
  if (t.alloc_ahead_bytes > 0)
    o += fmt("  allocations  ahead of need: each staged destination once the fills were within %s of it\n",
             mib_text(t.alloc_ahead_bytes).c_str());
  o +=
      fmt("  caller       %zu allocations %.3f ms (longest %.3f, last done at %.3f ms); direct enqueues %.3f ms; "
          "then waited %.3f ms for the workers, %.3f ms for the stream\n",
          t.allocs.size(), s.alloc_ms, s.alloc_max_ms, s.allocs_done_ms, s.direct_enqueue_ms, s.wait_workers_ms,
          s.drain_ms);
  if (!t.workers.empty())
    o += fmt("  workers sum  reads %.3f ms, chunk waits %.3f ms, destination waits %.3f ms, enqueue calls %.3f ms\n",
             s.read_ms, s.chunk_wait_ms, s.dst_wait_ms, s.enqueue_ms);
  o +=
      fmt("  summary      total_ms=%.4f bytes=%llu dma_bytes=%llu staged_bytes=%llu first_enqueue_ms=%.4f "
          "first_dma_ms=%.4f last_dma_ms=%.4f dma_busy_ms=%.4f dma_idle_ms=%.4f fill_gbps=%.3f thread_read_gbps=%.3f "
          "alloc_ms=%.4f wait_workers_ms=%.4f drain_ms=%.4f device_times=%d\n",
          s.total_ms, (unsigned long long)s.bytes, (unsigned long long)s.dma_bytes, (unsigned long long)s.staged_bytes,
          s.first_enqueue_ms, s.first_dma_ms, s.last_dma_ms, s.dma_busy_ms, s.dma_idle_ms, s.fill_gbps,
          s.thread_read_gbps, s.alloc_ms, s.wait_workers_ms, s.drain_ms, t.device_times ? 1 : 0);
  if (summary_only) return o;
  o += "# fill index block thread cpu bytes wait_ms read_start_ms read_end_ms\n";
  for (size_t i = 0; i < t.fills.size(); ++i) {
    const TransferTrace::Fill& f = t.fills[i];
    o += fmt("fill %zu %u %u %d %llu %.4f %.4f %.4f\n", i, f.block, f.thread, f.cpu, (unsigned long long)f.bytes,
             ms_of(f.wait_ns), ms_of(f.read_start_ns), ms_of(f.read_end_ns));
  }
  o += "# block index thread fills copies bytes ready_ms enqueue_start_ms enqueue_end_ms device_start_ms "
       "device_end_ms\n";
  for (size_t i = 0; i < t.blocks.size(); ++i) {
    const TransferTrace::Block& b = t.blocks[i];
    o += fmt("block %zu %u %u %u %llu %.4f %.4f %.4f %.4f %.4f\n", i, b.thread, b.fills, b.copies,
             (unsigned long long)b.bytes, ms_of(b.ready_ns), ms_of(b.enqueue_start_ns), ms_of(b.enqueue_end_ns),
             b.device_start_ms, b.device_end_ms);
  }
  o += "# direct request bytes enqueue_start_ms enqueue_end_ms device_start_ms device_end_ms\n";
  for (const TransferTrace::Direct& d : t.directs)
    o += fmt("direct %zu %llu %.4f %.4f %.4f %.4f\n", d.request, (unsigned long long)d.bytes, ms_of(d.enqueue_start_ns),
             ms_of(d.enqueue_end_ns), d.device_start_ms, d.device_end_ms);
  o += "# alloc request bytes start_ms end_ms\n";
  for (const TransferTrace::Alloc& al : t.allocs)
    o += fmt("alloc %zu %llu %.4f %.4f\n", al.request, (unsigned long long)al.bytes, ms_of(al.start_ns),
             ms_of(al.end_ns));
  o += "# worker index start_ms end_ms fills host_pieces bytes read_ms chunk_wait_ms dst_wait_ms enqueue_ms\n";
  for (size_t i = 0; i < t.workers.size(); ++i) {
    const TransferTrace::Worker& w = t.workers[i];
    o += fmt("worker %zu %.4f %.4f %llu %llu %llu %.4f %.4f %.4f %.4f\n", i, ms_of(w.start_ns), ms_of(w.end_ns),
             (unsigned long long)w.fills, (unsigned long long)w.host_pieces, (unsigned long long)w.bytes,
             ms_of(int64_t(w.read_ns)), ms_of(int64_t(w.chunk_wait_ns)), ms_of(int64_t(w.dst_wait_ns)),
             ms_of(int64_t(w.enqueue_ns)));
  }
  o +=
      fmt("# calling thread: planned %.4f workers_begin %.4f requests_done %.4f workers_done %.4f drain_start %.4f "
          "total %.4f\n",
          ms_of(t.planned_ns), ms_of(t.workers_begin_ns), ms_of(t.requests_done_ns), ms_of(t.workers_done_ns),
          ms_of(t.drain_start_ns), ms_of(t.total_ns));
  return o;
}

// The debug profile of one copy() call (host times only).
void log_transfer_trace(const TransferTrace& t) {
  std::string line = format_transfer_trace(t, /*summary_only=*/true);
  for (char& c : line)
    if (c == '\n') c = ';';
  WHARF_LOG(kDebug, line);
}

}  // namespace wharf
