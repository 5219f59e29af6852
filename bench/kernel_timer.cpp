// SPDX-License-Identifier: Apache-2.0
// kernel_timer.h: CUPTI opened with dlopen, its activity records collected per model run.
#include "kernel_timer.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "bench_common.h"

#if WHARF_BENCH_HAVE_CUPTI
#include <cupti.h>
#endif

namespace bench {

namespace {

#if WHARF_BENCH_HAVE_CUPTI

// The entry points used, resolved from the library opened. Records are read through the
// header's structs, and only their leading fields (kind, start, end, and for kernels the
// stream id), which every record version of a kind has kept at the same place; the library
// must be of the major version the header is (libcupti.so.<CUDA major>).
struct Cupti {
  decltype(&cuptiGetVersion) get_version = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;
};
Cupti g_cupti;

// Filled by CUPTI's buffer-completed callback (its own thread, or the one calling flush).
// Never destroyed: CUPTI may deliver its last buffers from its exit handler, after static
// objects are gone.
struct Collected {
  std::mutex mu;
  std::vector<Activity> records;
  uint64_t dropped = 0;
};
Collected& collected() {
  static Collected* c = new Collected;
  return *c;
}

constexpr size_t kBufferBytes = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // CUPTI wants 8-byte alignment; aligned_alloc gives more.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(64, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size, size_t valid) {
  std::vector<Activity> got;
  CUpti_Activity* r = nullptr;
  while (buffer && g_cupti.next_record(buffer, valid, &r) == CUPTI_SUCCESS) {
    Activity a;
    switch (r->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
        a.kind = ActivityKind::kernel;
        a.start = k->start;
        a.end = k->end;
        a.stream = k->streamId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
        a.kind = ActivityKind::memcpy;
        a.start = m->start;
        a.end = m->end;
        a.stream = m->streamId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
        a.kind = ActivityKind::memset;
        a.start = m->start;
        a.end = m->end;
        a.stream = m->streamId;
        break;
      }
      default:
        continue;
    }
    got.push_back(a);
  }
  size_t dropped = 0;
  if (g_cupti.dropped_records && g_cupti.dropped_records(ctx, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;
  std::free(buffer);
  Collected& c = collected();
  std::lock_guard<std::mutex> lock(c.mu);
  c.records.insert(c.records.end(), got.begin(), got.end());
  c.dropped += dropped;
}

const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                     CUPTI_ACTIVITY_KIND_MEMSET};

std::string cupti_error(const char* what, CUptiResult r) {
  const char* s = nullptr;
  if (!g_cupti.result_string || g_cupti.result_string(r, &s) != CUPTI_SUCCESS || !s) s = "unknown error";
  return std::string(what) + ": " + s + " (" + std::to_string(int(r)) + ")";
}

// Where CUPTI is looked for, first found wins: $WHARF_CUPTI (a path), the folder of the
// running executable (the GPU bundle carries libcupti there: the CUPTI of the toolkit these
// benches were built with), the loader's search (LD_LIBRARY_PATH, ld.so.cache), the toolkit
// they were built with, and the usual toolkit folders.
std::vector<std::string> candidates() {
  const std::string name = "libcupti.so." + std::to_string(CUDART_VERSION / 1000);
  std::vector<std::string> c;
  if (const char* env = std::getenv("WHARF_CUPTI"); env && *env) c.push_back(env);
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, size_t(n));
    dir.resize(dir.rfind('/') + 1);
    c.push_back(dir + name);
  }
  c.push_back(name);
#ifdef WHARF_BENCH_CUPTI_LIBDIR
  c.push_back(std::string(WHARF_BENCH_CUPTI_LIBDIR) + "/" + name);
#endif
  c.push_back("/usr/local/cuda/lib64/" + name);
  c.push_back("/usr/local/cuda/extras/CUPTI/lib64/" + name);
  return c;
}

#endif  // WHARF_BENCH_HAVE_CUPTI

}  // namespace

ActivityTracer& ActivityTracer::get() {
  static ActivityTracer t;
  return t;
}

ActivityTracer::ActivityTracer() {
#if WHARF_BENCH_HAVE_CUPTI
  void* lib = nullptr;
  std::string tried;
  for (const std::string& path : candidates()) {
    lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      library_ = path;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + path;
  }
  if (!lib) {
    why_ = "CUPTI not found (tried " + tried + "; set WHARF_CUPTI to its path)";
    return;
  }
  struct Sym {
    const char* name;
    void** slot;
  };
  const Sym syms[] = {{"cuptiGetVersion", reinterpret_cast<void**>(&g_cupti.get_version)},
                      {"cuptiGetResultString", reinterpret_cast<void**>(&g_cupti.result_string)},
                      {"cuptiActivityRegisterCallbacks", reinterpret_cast<void**>(&g_cupti.register_callbacks)},
                      {"cuptiActivityEnable", reinterpret_cast<void**>(&g_cupti.enable)},
                      {"cuptiActivityDisable", reinterpret_cast<void**>(&g_cupti.disable)},
                      {"cuptiActivityFlushAll", reinterpret_cast<void**>(&g_cupti.flush_all)},
                      {"cuptiActivityGetNextRecord", reinterpret_cast<void**>(&g_cupti.next_record)},
                      {"cuptiActivityGetNumDroppedRecords", reinterpret_cast<void**>(&g_cupti.dropped_records)}};
  for (const Sym& s : syms) {
    *s.slot = ::dlsym(lib, s.name);
    if (!*s.slot) {
      why_ = library_ + " lacks " + s.name;
      return;
    }
  }
  if (g_cupti.get_version(&version_) != CUPTI_SUCCESS) version_ = 0;
  // A library of another major version writes records this build cannot read.
  if (version_ / 10000 != CUPTI_API_VERSION / 10000) {
    why_ = library_ + " is CUPTI API version " + std::to_string(version_) + ", these benches were built for " +
           std::to_string(CUPTI_API_VERSION) + " (another major version)";
    return;
  }
  if (CUptiResult r = g_cupti.register_callbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
    why_ = cupti_error("cuptiActivityRegisterCallbacks", r);
    return;
  }
  ok_ = true;
#else
  why_ = "CUPTI not found (its headers were not found when these benches were built)";
#endif
}

bool ActivityTracer::enable() {
#if WHARF_BENCH_HAVE_CUPTI
  if (!ok_) return false;
  if (enabled_) return true;
  for (CUpti_ActivityKind k : kKinds)
    if (CUptiResult r = g_cupti.enable(k); r != CUPTI_SUCCESS) {
      why_ = cupti_error("cuptiActivityEnable", r);
      for (CUpti_ActivityKind d : kKinds) g_cupti.disable(d);
      return false;
    }
  enabled_ = true;
  return true;
#else
  return false;
#endif
}

void ActivityTracer::disable() {
#if WHARF_BENCH_HAVE_CUPTI
  if (!ok_ || !enabled_) return;
  for (CUpti_ActivityKind k : kKinds) g_cupti.disable(k);
  enabled_ = false;
#endif
}

std::vector<Activity> ActivityTracer::take() {
  std::vector<Activity> out;
#if WHARF_BENCH_HAVE_CUPTI
  if (!ok_) return out;
  // Records are complete once their work is: wait for the device, then flush every buffer
  // (forced: also those CUPTI would keep until full).
  CUDA_OK(cudaDeviceSynchronize());
  g_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  Collected& c = collected();
  std::lock_guard<std::mutex> lock(c.mu);
  out.swap(c.records);
#endif
  return out;
}

uint64_t ActivityTracer::dropped() const {
#if WHARF_BENCH_HAVE_CUPTI
  Collected& c = collected();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.dropped;
#else
  return 0;
#endif
}

KernelTimeRow measure_kernel_time(ActivityTracer& t, cudaStream_t stream, const RunHooks& h, int runs, const char* mode,
                                  long long size) {
  KernelTimeRow row;
  row.mode = mode;
  row.size = size;
  row.runs = runs;
  const bool was_enabled = t.enabled();
  const uint64_t dropped0 = t.dropped();
  std::vector<cudaEvent_t> ev(2 * size_t(runs));
  for (auto& e : ev) CUDA_OK(cudaEventCreate(&e));
  // Runs back to back: nothing waits for the GPU between them, so each run's work queues
  // behind the previous one's and the events measure the GPU's time for the run, not the
  // host's launch latency (for an eager run the GPU still waits on its launches: its gaps).
  auto back_to_back = [&]() {
    for (int i = 0; i < runs; ++i) {
      h.begin();
      CUDA_OK(cudaEventRecord(ev[2 * size_t(i)], stream));
      h.run();
      CUDA_OK(cudaEventRecord(ev[2 * size_t(i) + 1], stream));
      h.end();
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    std::vector<double> us;
    for (int i = 0; i < runs; ++i) {
      float ms = 0;
      CUDA_OK(cudaEventElapsedTime(&ms, ev[2 * size_t(i)], ev[2 * size_t(i) + 1]));
      us.push_back(double(ms) * 1e3);
    }
    return us;
  };
  for (int i = 0; i < 5; ++i) {  // warm-up (and a graph's capture)
    h.begin();
    h.run();
    h.end();
  }
  CUDA_OK(cudaStreamSynchronize(stream));

  // 1. Back to back, not traced: the replay's GPU time as served.
  t.disable();
  t.take();
  row.replay_us = median(back_to_back());

  // 2. Traced one run at a time. Records are attributed to a run by flushing CUPTI around it:
  // the device is idle before the run is enqueued and waited for after it, so everything
  // recorded between the two flushes is the run's (run begin's work is flushed away before,
  // run end's after). The alternatives need more: correlation ids tell a record's API call,
  // not its run, unless the runtime and driver API calls are recorded too (host-side tracing
  // of every call, which would slow the runs measured), and time ranges need the events'
  // times on CUPTI's clock, which CUDA does not give. The back-to-back loop (3) is split by
  // stream order instead, checked (split_runs).
  if (!t.enable()) {
    row.note = t.why();
    for (auto& e : ev) cudaEventDestroy(e);
    return row;
  }
  std::vector<double> kern, copy, span, gaps;
  size_t per_run = 0, untimed = 0;
  bool same_count = true;
  for (int i = 0; i < runs; ++i) {
    h.begin();
    t.take();
    h.run();
    const std::vector<Activity> recs = t.take();
    h.end();
    const RunFigures f = run_figures(recs);
    kern.push_back(double(f.kernel_ns) / 1e3);
    copy.push_back(double(f.copy_ns) / 1e3);
    span.push_back(double(f.span_ns) / 1e3);
    gaps.push_back(double(f.gap_ns()) / 1e3);
    untimed += f.untimed;
    if (i > 0 && recs.size() != per_run) same_count = false;
    per_run = recs.size();
    row.kernels = f.kernels;
    row.copies = f.copies;
  }
  row.kernels_us = median(kern);
  row.copies_us = median(copy);
  row.span_us = median(span);
  row.gaps_us = median(gaps);

  // 3. Traced back to back: CUPTI's cost on the GPU time (against 1), and the kernels' time
  // when they queue behind each other (against 2). Everything recorded here is the runs'
  // (and run begin's and end's, if they did GPU work: then the split below is refused).
  t.take();
  row.traced_us = median(back_to_back());
  const std::vector<Activity> all = t.take();
  std::vector<std::vector<Activity>> per;
  if (same_count && split_runs(all, size_t(runs), per_run, &per)) {
    std::vector<double> k;
    for (const auto& r : per) k.push_back(double(run_figures(r).kernel_ns) / 1e3);
    row.b2b_kernels_us = median(k);
    row.b2b_per_run = true;
  } else {
    uint64_t ns = 0;
    for (const Activity& a : all)
      if (a.kind == ActivityKind::kernel && a.end > a.start) ns += a.end - a.start;
    row.b2b_kernels_us = double(ns) / 1e3 / runs;
  }
  if (!was_enabled) t.disable();
  for (auto& e : ev) CUDA_OK(cudaEventDestroy(e));
  std::string note;
  if (row.kernels == 0) note += "no kernel records (CUPTI recorded none for this run); ";
  if (!same_count) note += "records per run varied; ";
  if (untimed) note += std::to_string(untimed) + " records without timestamps; ";
  if (t.dropped() != dropped0) note += std::to_string(t.dropped() - dropped0) + " records dropped; ";
  if (!note.empty()) row.note = note.substr(0, note.size() - 2);
  return row;
}

void print_kernel_time(const char* title, const std::vector<KernelTimeRow>& rows) {
  ActivityTracer& t = ActivityTracer::get();
  std::printf("%s (CUPTI %u, %s)\n", title, t.version(), t.library().c_str());
  std::printf("%-6s %6s %10s %10s %10s %10s %10s %10s %7s %10s %11s %6s\n", "mode", "size", "replay", "kernels",
              "copies", "span", "gaps", "outside", "ratio", "traced", "b2b kern", "kernels");
  for (const KernelTimeRow& r : rows) {
    std::printf("%-6s %6lld %7.1f us %7.1f us %7.1f us %7.1f us %7.1f us %7.1f us %6.3fx %7.1f us %7.1f us%s %6zu",
                r.mode.c_str(), r.size, r.replay_us, r.kernels_us, r.copies_us, r.span_us, r.gaps_us,
                r.replay_us - r.span_us, r.ratio(), r.traced_us, r.b2b_kernels_us, r.b2b_per_run ? " " : "~",
                r.kernels);
    if (r.copies) std::printf(" +%zu copies", r.copies);
    if (!r.note.empty()) std::printf("  [%s]", r.note.c_str());
    std::printf("\n");
  }
  std::printf(
      "  medians over the runs: replay = GPU time of the model run (events around it, runs back to back, not traced);\n"
      "  kernels / copies = its kernels' / memcpys' and memsets' durations summed (CUPTI, one run at a time);\n"
      "  span = its first start to last end; gaps = idle time inside the span; outside = replay - span;\n"
      "  ratio = replay / kernels (issue 25: <= 1.15x for a graph replay); traced = replay with CUPTI on;\n"
      "  b2b kern = kernels per run in the traced back-to-back loop (~: a mean, the runs' records could not be "
      "split)\n");
}

void write_kernel_time_csv(FILE* f, const std::vector<KernelTimeRow>& rows) {
  for (const KernelTimeRow& r : rows) {
    const std::pair<const char*, double> v[] = {{"replay_us", r.replay_us},    {"kernels_us", r.kernels_us},
                                                {"copies_us", r.copies_us},    {"span_us", r.span_us},
                                                {"gaps_us", r.gaps_us},        {"ratio", r.ratio()},
                                                {"traced_us", r.traced_us},    {"b2b_kernels_us", r.b2b_kernels_us},
                                                {"kernels", double(r.kernels)}};
    for (const auto& [name, value] : v)
      std::fprintf(f, "kernel_time_%s_%lld_%s,%.3f,,\n", r.mode.c_str(), r.size, name, value);
  }
}

}  // namespace bench
