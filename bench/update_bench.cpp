// SPDX-License-Identifier: Apache-2.0
// update_bench: hot weight updates and file loads, Wharf beside its baselines and the
// hardware's limit, measured in the same run on the same GPU.
//
// Groups (each measured with its rows interleaved: repetition r runs every row of the group
// once before repetition r + 1, so all rows share the machine's noise):
//   large-25, large-100   a model of --tensors x (--gib / --tensors) BF16 tensors, updating
//                         25% / 100% of it:
//     ceiling     one pinned cudaMemcpyAsync of the update's bytes (the H2D limit)
//     baseline a  "caller copies first": pageable cudaMemcpy into a temporary device tensor,
//                 then a device copy into a full-size inactive buffer (AOTInductor's path
//                 when CPU sources are rejected)
//     baseline b  "full-size inactive buffer, direct": one pageable cudaMemcpy per constant
//     wharf       wharf_container_update from pinned, pageable and device sources
//   small-100             a model of --small-gib of 0.5-4 MiB tensors (norms, biases, small
//                         projections): ceiling, wharf from pinned and pageable sources
//   file                  a --file-gib safetensors file (tensors of 0.5-128 MiB), page cache warm:
//     ceiling     one pinned copy of the file's tensor bytes
//     wharf load  wharf_constant_map_load_safetensors + wharf_container_create_from_map
//     wharf update_from_file  streaming update of a loaded container from the file
//     safetensors load_file(path, device="cuda") (tools/bench/safetensors_peer.py, PyTorch)
//
// Each row: median, min and max seconds of --reps repetitions (after one warm-up), GB/s of
// the median, the ceiling's median over the row's median ("x ceil"), and the peak extra
// device bytes (Wharf: its accounting, cross-checked with cudaMemGetInfo; baselines: what
// they allocate). A last table checks the targets of docs/performance.md.
//
// usage: update_bench [--gib N] [--tensors N] [--small-gib N] [--file-gib N] [--file-dir DIR]
//                     [--reps N] [--peer PATH] [--csv PATH] [--probe [--probe-hold-gib N]]
//                     [--copy-threads N] [--staging-mib N] [--no-baselines]
//                     [--settle-ms N] [--trace-one [--trace-dir DIR]]
//                     [--stall-every N --stall-ms M]
// --settle-ms N: milliseconds between freeing the inactive generation and each timed update
// (default 50; see timed_update).
// --no-baselines: leave out the large groups' pageable cudaMemcpy baselines (a and b), the
// slowest rows, when only Wharf's rows and the targets are wanted.
// --copy-threads / --staging-mib: the runtime's wharf_runtime_options (0: its defaults).
// --stall-every N --stall-ms M: every Nth staging fill (of pageable and file sources) sleeps M
// ms before it reads, through the library's test hook at that point: a staging thread stalled
// mid-copy, as seen on busy hosts, made reproducible (docs/performance.md, "Small staging
// chunks"). Off by default; the header prints it.
// --probe: only the copy engine's own costs (see probe()), over --gib bytes, with
// --probe-hold-gib GiB of other device memory held meanwhile.
// --trace-one: after each group's repetitions, one more run of each of its Wharf rows that
// copies from the host (pinned, pageable, file) with WHARF_TRANSFER_TRACE set: the transfer
// engine's trace of that run goes to DIR/transfer_trace_<group>_<source>[_load].txt (--trace-dir,
// default .) and its summary is printed beside the group's medians (docs/performance.md,
// "Tracing one update"). The traced runs are not among the samples.
#include <cuda_runtime.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "core/test_hooks.h"
#include "wharf/wharf.h"

namespace {

using namespace bench;

struct Row {
  std::string group, name, source;
  uint64_t bytes = 0;
  std::function<double()> once;  // one repetition; returns seconds
  std::vector<double> samples;
  uint64_t extra = 0, extra_mgi = 0;  // peak extra device bytes: accounting, cudaMemGetInfo
  std::string note;                   // why a row has no samples
};

double min_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }
double max_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

// Runs one warm-up and `reps` repetitions of every row, interleaved.
void measure(std::vector<Row>& rows, int reps) {
  for (int r = 0; r <= reps; ++r)
    for (Row& row : rows) {
      if (!row.once) continue;
      double s = row.once();
      if (r) row.samples.push_back(s);
    }
}

// Tensor sizes of the small model (MiB), cycled: what a transformer's norms, biases and
// small projections look like.
const double kSmallMiB[] = {0.5, 1, 2, 4, 0.75, 3, 1.5, 2.5};
// The file's mix: a few large projections among many small tensors.
const double kFileMiB[] = {128, 0.5, 64, 1, 16, 2, 4, 0.75};

std::vector<uint64_t> sizes_for(const double* mib, size_t n, uint64_t total) {
  std::vector<uint64_t> out;
  uint64_t sum = 0;
  for (size_t i = 0;; ++i) {
    uint64_t b = uint64_t(mib[i % n] * double(1 << 20)) & ~uint64_t(4095);
    if (sum + b > total) break;
    out.push_back(b);
    sum += b;
  }
  return out;
}

// The safetensors library, driven over pipes so its loads interleave with ours.
class Peer {
 public:
  bool start(const std::string& script, const std::string& path, std::string* why) {
    if (access(script.c_str(), R_OK) != 0) {
      *why = "peer script " + script + " not found (--peer PATH)";
      return false;
    }
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) {
      *why = "pipe failed";
      return false;
    }
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      execlp("python3", "python3", script.c_str(), path.c_str(), static_cast<char*>(nullptr));
      std::printf("unavailable: cannot run python3\n");
      std::fflush(stdout);
      _exit(0);
    }
    close(in[0]);
    close(out[1]);
    to_ = fdopen(in[1], "w");
    from_ = fdopen(out[0], "r");
    std::string line = read_line();
    if (line.rfind("ready", 0) != 0) {
      *why = line.empty() ? "the peer exited without a word" : line;
      stop();
      return false;
    }
    version_ = line.substr(6);
    return true;
  }
  double once() {
    std::fprintf(to_, "go\n");
    std::fflush(to_);
    std::string line = read_line();
    if (line.empty()) {
      std::fprintf(stderr, "safetensors peer: no answer\n");
      std::exit(2);
    }
    return std::atof(line.c_str());
  }
  void stop() {
    if (to_) std::fclose(to_);
    if (from_) std::fclose(from_);
    to_ = from_ = nullptr;
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  const std::string& version() const { return version_; }
  ~Peer() { stop(); }

 private:
  std::string read_line() {
    char buf[512];
    if (!from_ || !std::fgets(buf, sizeof buf, from_)) return "";
    std::string s(buf);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  }
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
  std::string version_;
};

wharf_constant_map* make_map(const std::vector<std::string>& names, const std::vector<uint64_t>& sizes, char* base,
                             wharf_device_type dt, size_t count) {
  wharf_constant_map* m = nullptr;
  wharf_ok(wharf_constant_map_create(&m), "map");
  uint64_t off = 0;
  for (size_t i = 0; i < count; ++i) {
    int64_t elems = int64_t(sizes[i] / 2);  // BF16
    wharf_tensor_view v;
    std::memset(&v, 0, sizeof v);
    v.data = base + off;
    v.dtype = WHARF_DTYPE_BF16;
    v.device_type = dt;
    v.ndim = 1;
    v.shape = &elems;
    v.struct_size = sizeof v;
    wharf_ok(wharf_constant_map_set(m, names[i].c_str(), &v), "map set");  // copies the shape
    off += sizes[i];
  }
  return m;
}

uint64_t constants_bytes(wharf_runtime* rt, bool peak) {
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  wharf_ok(wharf_runtime_get_memory_stats(rt, &ms), "stats");
  return peak ? ms.peak[WHARF_MEM_CONSTANTS] : ms.current[WHARF_MEM_CONSTANTS];
}

// One timed update of `c` by `update` (a map's or a file's; then a swap, untimed), from an
// empty inactive generation so that it allocates its slots, tracking the peak extra device
// memory on `row`.
// --settle-ms (default 50): a pause between freeing the inactive generation and the timed
// update. Device memory handed back to the driver keeps the GPU busy for about 20 ms after
// the free returns (measured, issue 21: an update started at once copies at 0.93-0.94 of the
// ceiling from pinned memory, one started 20 or 200 ms later at 0.985-0.996; the driver
// presumably scrubs the freed pages with the copy engines). A served model's next update does
// not follow its previous generation's free by microseconds; --settle-ms 0 measures that case.
int g_settle_ms = 50;

bool g_trace_one = false;
std::string g_trace_dir = ".";

// --trace-one: one traced run of each host-sourced Wharf row of a group (see the top).
void trace_rows(std::vector<Row>& rows) {
  if (!g_trace_one) return;
  auto median_of = [&](const std::string& name, const std::string& source) {
    for (const Row& r : rows)
      if (r.name.rfind(name, 0) == 0 && r.source == source && !r.samples.empty()) return median(r.samples);
    return 0.0;
  };
  const double ceil_s = median_of("ceiling", "pinned"), pinned_s = median_of("wharf update", "pinned");
  for (Row& r : rows) {
    if (!r.once || r.name.rfind("wharf", 0) != 0 || r.source == "device" || r.samples.empty()) continue;
    const bool load = r.name.find("load") != std::string::npos;
    const std::string path =
        g_trace_dir + "/transfer_trace_" + r.group + "_" + r.source + (load ? "_load" : "") + ".txt";
    std::remove(path.c_str());
    setenv("WHARF_TRANSFER_TRACE", path.c_str(), 1);
    const double s = r.once();
    unsetenv("WHARF_TRANSFER_TRACE");
    char pinned_txt[64] = "";
    if (pinned_s > 0) std::snprintf(pinned_txt, sizeof pinned_txt, "pinned update %.2f ms, ", pinned_s * 1e3);
    std::printf(
        "\ntraced: %s, %s from %s: %.2f ms in the bench; medians of the group: ceiling %.2f ms, %sthis row "
        "%.2f ms (%s)\n",
        r.group.c_str(), r.name.c_str(), r.source.c_str(), s * 1e3, ceil_s * 1e3, pinned_txt, median(r.samples) * 1e3,
        path.c_str());
    // The summary lines of each copy() the run made (the records follow in the file).
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) {
      std::printf("  (no trace written: was this bench built against a library without WHARF_TRANSFER_TRACE?)\n");
      continue;
    }
    char line[2048];
    while (std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, "transfer trace:", 15) && std::strncmp(line, "  ", 2)) continue;
      std::printf("  %s", line);
      // Where this copy's time went beyond the ceiling's rate, from its "summary" line:
      // total = before the first DMA + the DMAs' busy time + the copy engine's idle gaps + after
      // the last DMA, and busy = the DMA bytes at the ceiling's rate + what the DMAs were slower.
      double total = -1, dma_bytes = 0, first = -1, last = -1, busy = 0, idle = 0;
      int dev = 0;
      const char* p = std::strstr(line, "summary ");
      if (!p || ceil_s <= 0) continue;
      auto get = [&](const char* key, double* v) {
        const char* k = std::strstr(p, key);
        if (k) *v = std::atof(k + std::strlen(key));
      };
      get(" total_ms=", &total);
      get(" dma_bytes=", &dma_bytes);
      get(" first_dma_ms=", &first);
      get(" last_dma_ms=", &last);
      get(" dma_busy_ms=", &busy);
      get(" dma_idle_ms=", &idle);
      if (const char* k = std::strstr(p, " device_times=")) dev = std::atoi(k + 14);
      if (!dev || first < 0 || total < 0) continue;
      const double ceil_gbps = double(r.bytes) / ceil_s / 1e9, ideal = dma_bytes / (ceil_gbps * 1e6);
      std::printf(
          "    vs the ceiling (%.2f GB/s): %.3f ms over its %.3f ms = before the first DMA %.3f + copy engine "
          "idle %.3f + DMAs slower than the ceiling %.3f + after the last DMA %.3f\n",
          ceil_gbps, total - ideal, ideal, first, idle, busy - ideal, total - last);
    }
    std::fclose(f);
  }
  std::fflush(stdout);
}

double timed_update(wharf_runtime* rt, wharf_container* c, const std::function<wharf_status*()>& update, Row* row) {
  wharf_ok(wharf_container_free_inactive(c), "free inactive");
  wharf_ok(wharf_runtime_synchronize(rt), "sync");
  if (g_settle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(g_settle_ms));
  const uint64_t before = constants_bytes(rt, false);
  wharf_runtime_reset_peak(rt);
  const uint64_t free0 = free_device_bytes();
  auto t0 = Clock::now();
  wharf_ok(update(), "update");
  double s = seconds_since(t0);
  const uint64_t free1 = free_device_bytes();
  row->extra = std::max(row->extra, constants_bytes(rt, true) - before);
  row->extra_mgi = std::max(row->extra_mgi, free0 > free1 ? free0 - free1 : 0);
  wharf_ok(wharf_container_swap(c), "swap");
  return s;
}

// --probe: what the copy engine costs beside the ceiling, with no Wharf code involved, to
// find where an update's time goes (issue 21). Every row copies the same bytes from pinned
// memory on one stream: as one copy; as copies of 128 MiB (one per constant); as copies of
// 4/8/16 MiB (staging chunks), also with an event recorded after each (the ring's chunk
// events); and as copies of 128 MiB into destinations allocated just before each copy from a
// stream-ordered pool that returns its memory at every free (Wharf's DevicePool) or keeps it.
//
// hold_gib: device memory allocated (cudaMalloc, 1 GiB at a time) and kept during the probe,
// as a serving process holds its model, to see whether fresh allocations then copy slower.
int probe(uint64_t bytes, int reps, double hold_gib) {
  std::vector<void*> held;
  for (double g = 0; g + 1 <= hold_gib; g += 1) {
    void* h = nullptr;
    CUDA_OK(cudaMalloc(&h, 1ull << 30));
    CUDA_OK(cudaMemset(h, 0, 1ull << 30));
    held.push_back(h);
  }
  void* src = nullptr;
  void* dst = nullptr;
  CUDA_OK(cudaHostAlloc(&src, bytes, cudaHostAllocPortable));
  touch(src, bytes, 1);
  CUDA_OK(cudaMalloc(&dst, bytes));
  cudaStream_t s, pool_stream;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&pool_stream, cudaStreamNonBlocking));
  int dev = 0;
  CUDA_OK(cudaGetDevice(&dev));
  auto make_pool = [&](uint64_t threshold) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t pool = nullptr;
    CUDA_OK(cudaMemPoolCreate(&pool, &props));
    CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    return pool;
  };
  cudaMemPool_t pool_release = make_pool(0), pool_keep = make_pool(UINT64_MAX);
  std::vector<cudaEvent_t> events(4096);
  for (cudaEvent_t& e : events) CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));

  auto pieces = [&](uint64_t piece, bool with_events) {
    return [=, &events] {
      auto t0 = Clock::now();
      size_t k = 0;
      for (uint64_t off = 0; off < bytes; off += piece) {
        CUDA_OK(cudaMemcpyAsync(static_cast<char*>(dst) + off, static_cast<char*>(src) + off,
                                std::min(piece, bytes - off), cudaMemcpyHostToDevice, s));
        if (with_events) CUDA_OK(cudaEventRecord(events[k++ % events.size()], s));
      }
      CUDA_OK(cudaStreamSynchronize(s));
      return seconds_since(t0);
    };
  };
  // free_mode 0: every buffer freed, then one synchronize; 1: each freed and synchronized
  // (Wharf's DevicePool::free); 2: as 1, then the pool trimmed to 0 (cudaMemPoolTrimTo).
  auto fresh = [&](cudaMemPool_t pool, int free_mode = 0) {
    return [=] {
      const uint64_t piece = 128ull << 20;
      std::vector<void*> bufs;
      auto t0 = Clock::now();
      for (uint64_t off = 0; off < bytes; off += piece) {
        void* d = nullptr;
        const uint64_t n = std::min(piece, bytes - off);
        CUDA_OK(cudaMallocFromPoolAsync(&d, n, pool, pool_stream));
        CUDA_OK(cudaStreamSynchronize(pool_stream));
        bufs.push_back(d);
        CUDA_OK(cudaMemcpyAsync(d, static_cast<char*>(src) + off, n, cudaMemcpyHostToDevice, s));
      }
      CUDA_OK(cudaStreamSynchronize(s));
      const double t = seconds_since(t0);
      for (void* d : bufs) {
        CUDA_OK(cudaFreeAsync(d, pool_stream));
        if (free_mode >= 1) CUDA_OK(cudaStreamSynchronize(pool_stream));
        if (free_mode == 2) CUDA_OK(cudaMemPoolTrimTo(pool, 0));
      }
      CUDA_OK(cudaStreamSynchronize(pool_stream));
      return t;
    };
  };
  std::vector<Row> rows;
  rows.push_back(Row{"probe", "one copy (ceiling)", "pinned", bytes, pieces(bytes, false)});
  rows.push_back(Row{"probe", "copies of 128 MiB", "pinned", bytes, pieces(128ull << 20, false)});
  for (uint64_t mib : {4, 8, 16}) {
    rows.push_back(
        Row{"probe", "copies of " + std::to_string(mib) + " MiB", "pinned", bytes, pieces(mib << 20, false)});
    rows.push_back(
        Row{"probe", "copies of " + std::to_string(mib) + " MiB + event", "pinned", bytes, pieces(mib << 20, true)});
  }
  rows.push_back(Row{"probe", "128 MiB, fresh dst, pool releases", "pinned", bytes, fresh(pool_release)});
  rows.push_back(Row{"probe", "128 MiB, fresh dst, pool keeps", "pinned", bytes, fresh(pool_keep)});
  rows.push_back(Row{"probe", "128 MiB, releases, sync per free", "pinned", bytes, fresh(pool_release, 1)});
  rows.push_back(Row{"probe", "128 MiB, releases, sync+trim per free", "pinned", bytes, fresh(pool_release, 2)});
  measure(rows, reps);
  const double ceil = median(rows[0].samples);
  std::printf(
      "probe: %.2f GiB from pinned memory, %d reps after one warm-up, rows interleaved; %zu GiB of other "
      "device memory held\n",
      double(bytes) / double(1ull << 30), reps, held.size());
  std::printf("%-40s %9s %9s %9s %8s %7s\n", "what", "median_s", "min_s", "max_s", "GB/s", "x_ceil");
  for (const Row& r : rows) {
    const double med = median(r.samples);
    std::printf("%-40s %9.5f %9.5f %9.5f %8.2f %7.3f\n", r.name.c_str(), med, min_of(r.samples), max_of(r.samples),
                double(r.bytes) / med / 1e9, ceil / med);
  }
  for (cudaEvent_t e : events) CUDA_OK(cudaEventDestroy(e));
  CUDA_OK(cudaMemPoolDestroy(pool_release));
  CUDA_OK(cudaMemPoolDestroy(pool_keep));
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaStreamDestroy(pool_stream));
  CUDA_OK(cudaFree(dst));
  CUDA_OK(cudaFreeHost(src));
  for (void* h : held) CUDA_OK(cudaFree(h));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  double gib = 8, small_gib = 1, file_gib = 4;
  int tensors = 64, reps = 7;
  bool do_probe = false;
  bool baselines = true;
  double hold_gib = 0;
  uint32_t copy_threads = 0;
  uint64_t staging_mib = 0;
  const char* csv = nullptr;
  std::string file_dir = "/tmp";
  std::string peer_script;
  long stall_every = 0, stall_ms = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gib") && i + 1 < argc)
      gib = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--tensors") && i + 1 < argc)
      tensors = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--small-gib") && i + 1 < argc)
      small_gib = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--file-gib") && i + 1 < argc)
      file_gib = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--file-dir") && i + 1 < argc)
      file_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--peer") && i + 1 < argc)
      peer_script = argv[++i];
    else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc)
      csv = argv[++i];
    else if (!std::strcmp(argv[i], "--probe"))
      do_probe = true;
    else if (!std::strcmp(argv[i], "--no-baselines"))
      baselines = false;
    else if (!std::strcmp(argv[i], "--settle-ms") && i + 1 < argc)
      g_settle_ms = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--probe-hold-gib") && i + 1 < argc)
      hold_gib = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--copy-threads") && i + 1 < argc)
      copy_threads = uint32_t(std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--staging-mib") && i + 1 < argc)
      staging_mib = uint64_t(std::atoll(argv[++i]));
    else if (!std::strcmp(argv[i], "--trace-one"))
      g_trace_one = true;
    else if (!std::strcmp(argv[i], "--trace-dir") && i + 1 < argc)
      g_trace_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--stall-every") && i + 1 < argc)
      stall_every = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--stall-ms") && i + 1 < argc)
      stall_ms = std::atol(argv[++i]);
    else {
      std::fprintf(
          stderr,
          "usage: update_bench [--gib N] [--tensors N] [--small-gib N] [--file-gib N] [--file-dir DIR] "
          "[--reps N] [--peer PATH] [--csv PATH] [--probe [--probe-hold-gib N]] [--copy-threads N] [--staging-mib N] "
          "[--no-baselines] [--settle-ms N] [--trace-one [--trace-dir DIR]] [--stall-every N --stall-ms M]\n");
      return 2;
    }
  }
  if (stall_every < 0 || stall_ms < 0 || (stall_every > 0) != (stall_ms > 0)) {
    std::fprintf(stderr, "update_bench: --stall-every and --stall-ms go together, both > 0\n");
    return 2;
  }
  // Every stall_every-th fill sleeps stall_ms first (the hook runs on the staging thread that
  // reached the point, with no library lock held).
  std::atomic<long> fills_seen{0};
  std::unique_ptr<wharf::ScopedTestHook> stall_hook;
  if (stall_every > 0)
    stall_hook = std::make_unique<wharf::ScopedTestHook>([&](const char* point) {
      if (std::strcmp(point, "transfer.staged.fill") == 0 && fills_seen.fetch_add(1) % stall_every == stall_every - 1)
        std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms));
    });
  if (reps < 1 || tensors < 1) {
    std::fprintf(stderr, "update_bench: --reps and --tensors must be >= 1\n");
    return 2;
  }
  if (g_trace_one && ::mkdir(g_trace_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "update_bench: cannot make --trace-dir %s: %s\n", g_trace_dir.c_str(), std::strerror(errno));
    return 2;
  }
  if (do_probe) return probe(uint64_t(gib * double(1ull << 30)) & ~uint64_t(4095), reps, hold_gib);
  if (peer_script.empty()) {
    // The bundle keeps it in peers/ beside the binary; a build tree, in tools/bench.
    std::string self(argv[0]);
    std::string dir = self.find('/') == std::string::npos ? "." : self.substr(0, self.rfind('/'));
    peer_script = dir + "/peers/safetensors_peer.py";
    if (access(peer_script.c_str(), R_OK) != 0) peer_script = "tools/bench/safetensors_peer.py";
  }

  const uint64_t per_tensor = (uint64_t(gib * double(1ull << 30)) / uint64_t(tensors)) & ~uint64_t(4095);
  const uint64_t total = per_tensor * uint64_t(tensors);
  const std::vector<uint64_t> small_sizes =
      sizes_for(kSmallMiB, std::size(kSmallMiB), uint64_t(small_gib * double(1ull << 30)));
  const std::vector<uint64_t> file_sizes =
      sizes_for(kFileMiB, std::size(kFileMiB), uint64_t(file_gib * double(1ull << 30)));
  uint64_t small_total = 0, file_total = 0;
  for (uint64_t b : small_sizes) small_total += b;
  for (uint64_t b : file_sizes) file_total += b;
  const uint64_t host_bytes = std::max({total, small_total, file_total});

  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  ro.copy_threads = copy_threads;
  ro.staging_bytes = staging_mib << 20;
  wharf_runtime* rt = nullptr;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime");
  wharf_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  wharf_ok(wharf_runtime_get_device_info(rt, &info), "device info");
  // The staging threads' copy (the library reads WHARF_STAGING_COPY; unset: memcpy), so an
  // A/B run's logs say which side they are.
  const char* staging_copy = std::getenv("WHARF_STAGING_COPY");
  const char* ramp = std::getenv("WHARF_TRANSFER_RAMP");              // the first blocks' smaller fills (unset: on)
  const char* ahead = std::getenv("WHARF_TRANSFER_ALLOC_AHEAD_MIB");  // allocating ahead of need (unset: off)
  const char* chunk = std::getenv("WHARF_TRANSFER_CHUNK_KIB");        // the ring's chunks (unset: 512)
  const char* block = std::getenv("WHARF_TRANSFER_BLOCK_KIB");        // its DMA blocks (unset: 8192)
  std::printf(
      "update_bench: %s (wharf %s); %d reps after one warm-up, rows interleaved; copy_threads %u, "
      "staging %llu MiB (0: defaults); settle %d ms; WHARF_STAGING_COPY %s; WHARF_TRANSFER_RAMP %s; "
      "WHARF_TRANSFER_ALLOC_AHEAD_MIB %s; WHARF_TRANSFER_CHUNK_KIB %s; WHARF_TRANSFER_BLOCK_KIB %s; "
      "stalls: %ld ms every %ld fills (0: none)\n",
      info.name, wharf_version(), reps, copy_threads, (unsigned long long)staging_mib, g_settle_ms,
      staging_copy && *staging_copy ? staging_copy : "(unset: memcpy)", ramp ? ramp : "(unset: on)",
      ahead && *ahead ? ahead : "(unset: 0)", chunk && *chunk ? chunk : "(unset: 512)",
      block && *block ? block : "(unset: 8192)", stall_ms, stall_every);
  std::printf(
      "  large: %d x %.0f MiB BF16 = %.2f GiB; small: %zu tensors of 0.5-4 MiB = %.2f GiB; "
      "file: %zu tensors of 0.5-128 MiB = %.2f GiB\n",
      tensors, double(per_tensor) / (1 << 20), double(total) / (1ull << 30), small_sizes.size(),
      double(small_total) / (1ull << 30), file_sizes.size(), double(file_total) / (1ull << 30));

  // Sources: pageable, pinned and device bytes, large enough for every group.
  std::vector<char> pageable(host_bytes);
  touch(pageable.data(), host_bytes, 1);
  void* pinned = nullptr;
  CUDA_OK(cudaHostAlloc(&pinned, host_bytes, cudaHostAllocPortable));
  touch(pinned, host_bytes, 2);
  void* dsrc = nullptr;
  CUDA_OK(cudaMalloc(&dsrc, total));
  CUDA_OK(cudaMemset(dsrc, 3, total));
  CUDA_OK(cudaDeviceSynchronize());
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // The ceiling: one pinned H2D copy of `bytes` into a scratch device buffer.
  void* scratch = nullptr;
  CUDA_OK(cudaMalloc(&scratch, host_bytes));
  auto ceiling_row = [&](const std::string& group, uint64_t bytes) {
    Row row{group, "ceiling: pinned cudaMemcpyAsync", "pinned", bytes};
    row.once = [&, bytes] {
      auto t0 = Clock::now();
      CUDA_OK(cudaMemcpyAsync(scratch, pinned, bytes, cudaMemcpyHostToDevice, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      return seconds_since(t0);
    };
    return row;
  };

  std::vector<Row> all;
  std::vector<wharf_constant_map*> maps;  // freed at the end
  auto keep = [&](std::vector<Row>& rows) {
    for (Row& r : rows) {
      r.once = nullptr;
      all.push_back(std::move(r));
    }
  };

  // --- large model: 25% and 100% updates ---------------------------------------------------
  {
    std::vector<std::string> names;
    std::vector<uint64_t> sizes(size_t(tensors), per_tensor);
    for (int i = 0; i < tensors; ++i) names.push_back("layers." + std::to_string(i) + ".weight");
    wharf_constant_map* init = make_map(names, sizes, static_cast<char*>(pinned), WHARF_DEVICE_CPU, sizes.size());
    wharf_container* c = nullptr;
    wharf_ok(wharf_container_create_from_map(rt, init, nullptr, &c), "load");
    wharf_constant_map_free(init);
    void* full = nullptr;
    void* tmp = nullptr;
    CUDA_OK(cudaMalloc(&full, total));
    CUDA_OK(cudaMalloc(&tmp, total));
    for (int percent : {25, 100}) {
      const std::string group = "large-" + std::to_string(percent);
      const int count = tensors * percent / 100;
      const uint64_t bytes = per_tensor * uint64_t(count);
      std::vector<Row> rows;
      rows.reserve(8);  // rows hand out pointers to themselves below
      rows.push_back(ceiling_row(group, bytes));
      Row b{group, "baseline b: full buffer, direct", "pageable", bytes};
      b.extra = b.extra_mgi = total;
      b.once = [&, count] {
        auto t0 = Clock::now();
        for (int i = 0; i < count; ++i)
          CUDA_OK(cudaMemcpy(static_cast<char*>(full) + uint64_t(i) * per_tensor,
                             pageable.data() + uint64_t(i) * per_tensor, per_tensor, cudaMemcpyHostToDevice));
        return seconds_since(t0);
      };
      if (baselines) rows.push_back(std::move(b));
      Row a{group, "baseline a: caller copies first", "pageable", bytes};
      a.extra = a.extra_mgi = total + bytes;
      a.once = [&, count, bytes] {
        auto t0 = Clock::now();
        for (int i = 0; i < count; ++i)
          CUDA_OK(cudaMemcpy(static_cast<char*>(tmp) + uint64_t(i) * per_tensor,
                             pageable.data() + uint64_t(i) * per_tensor, per_tensor, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(full, tmp, bytes, cudaMemcpyDeviceToDevice));
        CUDA_OK(cudaDeviceSynchronize());
        return seconds_since(t0);
      };
      if (baselines) rows.push_back(std::move(a));
      struct Src {
        const char* name;
        char* base;
        wharf_device_type dt;
      };
      const Src srcs[] = {{"pinned", static_cast<char*>(pinned), WHARF_DEVICE_CPU},
                          {"pageable", pageable.data(), WHARF_DEVICE_CPU},
                          {"device", static_cast<char*>(dsrc), WHARF_DEVICE_CUDA}};
      for (const Src& s : srcs) {
        wharf_constant_map* m = make_map(names, sizes, s.base, s.dt, size_t(count));
        maps.push_back(m);
        rows.push_back(Row{group, "wharf update", s.name, bytes});
        Row* row = &rows.back();
        row->once = [rt, c, m, row] {
          return timed_update(
              rt, c, [=] { return wharf_container_update(c, m, nullptr); }, row);
        };
      }
      measure(rows, reps);
      trace_rows(rows);
      keep(rows);
    }
    CUDA_OK(cudaFree(tmp));
    CUDA_OK(cudaFree(full));
    wharf_container_free(c);
  }

  // --- small tensors ----------------------------------------------------------------------
  {
    const std::string group = "small-100";
    std::vector<std::string> names;
    for (size_t i = 0; i < small_sizes.size(); ++i) names.push_back("blocks." + std::to_string(i) + ".norm");
    wharf_constant_map* init =
        make_map(names, small_sizes, static_cast<char*>(pinned), WHARF_DEVICE_CPU, small_sizes.size());
    wharf_container* c = nullptr;
    wharf_ok(wharf_container_create_from_map(rt, init, nullptr, &c), "load small");
    wharf_constant_map_free(init);
    std::vector<Row> rows;
    rows.reserve(4);  // rows hand out pointers to themselves below
    rows.push_back(ceiling_row(group, small_total));
    for (auto [name, base] : {std::pair<const char*, char*>{"pinned", static_cast<char*>(pinned)},
                              std::pair<const char*, char*>{"pageable", pageable.data()}}) {
      wharf_constant_map* m = make_map(names, small_sizes, base, WHARF_DEVICE_CPU, small_sizes.size());
      maps.push_back(m);
      rows.push_back(Row{group, "wharf update", name, small_total});
      Row* row = &rows.back();
      row->once = [rt, c, m, row] {
        return timed_update(
            rt, c, [=] { return wharf_container_update(c, m, nullptr); }, row);
      };
    }
    measure(rows, reps);
    trace_rows(rows);
    keep(rows);
    wharf_container_free(c);
  }

  // --- a safetensors file -------------------------------------------------------------------
  std::string peer_version;
  {
    const std::string group = "file";
    const std::string path = file_dir + "/wharf_update_bench_" + std::to_string(getpid()) + ".safetensors";
    std::vector<std::string> names;
    for (size_t i = 0; i < file_sizes.size(); ++i) names.push_back("model.layers." + std::to_string(i) + ".weight");
    wharf_constant_map* src = make_map(names, file_sizes, pageable.data(), WHARF_DEVICE_CPU, file_sizes.size());
    wharf_ok(wharf_constant_map_save_safetensors(src, path.c_str()), "save the file");
    wharf_constant_map_free(src);
    wharf_constant_map* loaded = nullptr;  // the page cache warms on the warm-up repetition
    wharf_ok(wharf_constant_map_load_safetensors(path.c_str(), &loaded), "load the file");
    wharf_container* c = nullptr;
    wharf_ok(wharf_container_create_from_map(rt, loaded, nullptr, &c), "container from the file");
    wharf_constant_map_free(loaded);

    std::vector<Row> rows;
    rows.reserve(4);  // rows hand out pointers to themselves below
    rows.push_back(ceiling_row(group, file_total));
    Row load{group, "wharf load (map + container)", "file", file_total};
    load.once = [&] {
      auto t0 = Clock::now();
      wharf_constant_map* m = nullptr;
      wharf_ok(wharf_constant_map_load_safetensors(path.c_str(), &m), "load");
      wharf_container* fresh = nullptr;
      wharf_ok(wharf_container_create_from_map(rt, m, nullptr, &fresh), "create from map");
      wharf_constant_map_free(m);
      double s = seconds_since(t0);
      wharf_container_free(fresh);
      wharf_ok(wharf_runtime_synchronize(rt), "sync");
      return s;
    };
    rows.push_back(std::move(load));
    rows.push_back(Row{group, "wharf update_from_file (streaming)", "file", file_total});
    {
      Row* row = &rows.back();
      row->once = [&, row] {
        return timed_update(
            rt, c, [&] { return wharf_container_update_from_file(c, path.c_str(), nullptr); }, row);
      };
    }
    Peer peer;
    std::string why;
    Row lib{group, "safetensors load_file(device=cuda)", "file", file_total};
    if (peer.start(peer_script, path, &why)) {
      peer_version = peer.version();
      lib.once = [&] { return peer.once(); };
    } else {
      lib.note = "not measured: " + why;
    }
    rows.push_back(std::move(lib));
    measure(rows, reps);
    peer.stop();
    trace_rows(rows);
    keep(rows);
    wharf_container_free(c);
    std::remove(path.c_str());
  }

  // --- report -------------------------------------------------------------------------------
  auto ceiling_of = [&](const std::string& group) {
    for (const Row& r : all)
      if (r.group == group && r.name.rfind("ceiling", 0) == 0) return median(r.samples);
    return 0.0;
  };
  std::printf("\n%-10s %-36s %-9s %9s %9s %9s %8s %7s %10s %10s\n", "group", "path", "source", "median_s", "min_s",
              "max_s", "GB/s", "x_ceil", "extra_MiB", "mgi_MiB");
  for (const Row& r : all) {
    if (r.samples.empty()) {
      std::printf("%-10s %-36s %-9s %s\n", r.group.c_str(), r.name.c_str(), r.source.c_str(), r.note.c_str());
      continue;
    }
    const double med = median(r.samples);
    std::printf("%-10s %-36s %-9s %9.4f %9.4f %9.4f %8.2f %7.3f %10.0f %10.0f\n", r.group.c_str(), r.name.c_str(),
                r.source.c_str(), med, min_of(r.samples), max_of(r.samples), double(r.bytes) / med / 1e9,
                ceiling_of(r.group) / med, double(r.extra) / (1 << 20), double(r.extra_mgi) / (1 << 20));
  }
  if (!peer_version.empty()) std::printf("peer: %s\n", peer_version.c_str());

  // Targets (issue 13; docs/performance.md).
  auto med_of = [&](const std::string& group, const std::string& name, const std::string& source) {
    for (const Row& r : all)
      if (r.group == group && r.name == name && r.source == source && !r.samples.empty()) return median(r.samples);
    return 0.0;
  };
  struct Target {
    std::string what;
    double got, want;
  };
  std::vector<Target> targets;
  for (const char* g : {"large-25", "large-100"}) {
    targets.push_back(
        {std::string(g) + " pinned vs ceiling", ceiling_of(g) / med_of(g, "wharf update", "pinned"), 0.95});
    targets.push_back(
        {std::string(g) + " pageable vs ceiling", ceiling_of(g) / med_of(g, "wharf update", "pageable"), 0.90});
  }
  targets.push_back({"small-100 pageable vs ceiling",
                     ceiling_of("small-100") / med_of("small-100", "wharf update", "pageable"), 0.80});
  targets.push_back(
      {"small-100 pinned vs ceiling", ceiling_of("small-100") / med_of("small-100", "wharf update", "pinned"), 0.80});
  const double load_s = med_of("file", "wharf load (map + container)", "file");
  targets.push_back({"file load vs ceiling", ceiling_of("file") / load_s, 0.80});
  targets.push_back({"file update_from_file vs ceiling",
                     ceiling_of("file") / med_of("file", "wharf update_from_file (streaming)", "file"), 0.90});
  const double lib_s = med_of("file", "safetensors load_file(device=cuda)", "file");
  if (lib_s > 0) targets.push_back({"file load vs safetensors library (speed ratio)", lib_s / load_s, 1.0});
  std::printf("\n%-48s %8s %8s %s\n", "target", "measured", "target", "");
  for (const Target& t : targets)
    std::printf("%-48s %8.3f %8.2f %s\n", t.what.c_str(), t.got, t.want, t.got >= t.want ? "met" : "MISSED");

  if (csv) {
    FILE* f = std::fopen(csv, "w");
    if (f) {
      std::fprintf(f,
                   "group,path,source,bytes,median_s,min_s,max_s,gbps,x_ceiling,extra_device_bytes,extra_memgetinfo_"
                   "bytes,samples\n");
      for (const Row& r : all) {
        if (r.samples.empty()) continue;
        const double med = median(r.samples);
        std::fprintf(f, "%s,\"%s\",%s,%llu,%.6f,%.6f,%.6f,%.3f,%.4f,%llu,%llu,%zu\n", r.group.c_str(), r.name.c_str(),
                     r.source.c_str(), (unsigned long long)r.bytes, med, min_of(r.samples), max_of(r.samples),
                     double(r.bytes) / med / 1e9, ceiling_of(r.group) / med, (unsigned long long)r.extra,
                     (unsigned long long)r.extra_mgi, r.samples.size());
      }
      std::fclose(f);
    }
  }
  for (wharf_constant_map* m : maps) wharf_constant_map_free(m);
  wharf_runtime_free(rt);
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(scratch));
  CUDA_OK(cudaFree(dsrc));
  CUDA_OK(cudaFreeHost(pinned));
  return 0;
}
