// SPDX-License-Identifier: Apache-2.0
// H2D bandwidth: TransferEngine beside the CUDA baselines, measured in one run on one GPU.
//
//   h2d_bench [GIB] [--csv PATH] [--sweep-gib G] [--reps N] [--shape T,CHUNK_KIB,RING_MIB,BLOCK_MIB]...
//
// Rows: (1) pinned cudaMemcpyAsync of the whole buffer (the physical ceiling), (2) plain
// pageable cudaMemcpy, (3) TransferEngine from a pinned source, (4) TransferEngine from a
// pageable source with the runtime's default shape (12 threads, 512 KiB chunks, a ring of 4 MiB
// per thread, 8 MiB DMAs: transfer.h's default_staging_options),
// (5) a sweep of chunk size x threads from a pageable source on a smaller prefix (with its
// own pinned ceiling at that size), or instead of the sweep, each --shape given: T threads,
// chunks of CHUNK_KIB, a ring of RING_MIB, DMAs of up to BLOCK_MIB (TransferOptions::
// block_bytes; a block of one chunk is the engine before blocks), the shapes measured in
// turn, repetition by repetition, so that they share the machine's noise. Each figure is the median of N timed
// repetitions after one untimed warm-up; GB/s is 1e9 bytes per second. Every TransferEngine result is checked byte for
// byte against the source after its repetitions (the destination is zeroed first), so a fast but wrong copy fails the
// run.
#include <cuda_runtime_api.h>

#include <algorithm>
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

#include "device/device.h"
#include "device/transfer.h"
#include "device/transfer_env.h"

namespace {

using wharf::Buffer;
using wharf::Device;
using wharf::MemKind;
using wharf::MemTag;
using wharf::Status;
using wharf::TransferEngine;
using wharf::TransferOptions;

constexpr uint64_t MiB = 1ull << 20, GiB = 1ull << 30;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "h2d_bench: %s\n", what.c_str());
  std::exit(1);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

void check(const Status& st, const char* what) {
  if (!st.ok()) die(std::string(what) + ": " + wharf::code_name(st.code()) + ": " + st.message());
}

struct Shape {
  uint32_t threads = 0;
  uint64_t chunk = 0, ring = 0, block = 0;
};

struct Args {
  double gib = 4;
  double sweep_gib = 1;
  int reps = 5;
  std::string csv;
  std::vector<Shape> shapes;  // --shape: replace the sweep
};

Shape parse_shape(const std::string& v) {
  unsigned t = 0;
  unsigned long long chunk_kib = 0, ring_mib = 0, block_mib = 0;
  char extra = 0;
  if (std::sscanf(v.c_str(), "%u,%llu,%llu,%llu%c", &t, &chunk_kib, &ring_mib, &block_mib, &extra) != 4 || t == 0 ||
      chunk_kib < 64 || ring_mib == 0 || ring_mib * 1024 < chunk_kib)
    die("--shape " + v + ": expected THREADS,CHUNK_KIB,RING_MIB,BLOCK_MIB (chunks of at least 64 KiB, a ring of at " +
        "least one chunk)");
  return Shape{t, chunk_kib << 10, ring_mib * MiB, block_mib * MiB};
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die("option " + s + " needs a value");
      return argv[++i];
    };
    if (s == "--csv")
      a.csv = value();
    else if (s == "--sweep-gib")
      a.sweep_gib = std::atof(value().c_str());
    else if (s == "--reps")
      a.reps = std::atoi(value().c_str());
    else if (s == "--shape")
      a.shapes.push_back(parse_shape(value()));
    else if (s == "-h" || s == "--help") {
      std::printf(
          "usage: h2d_bench [GIB=4] [--csv PATH] [--sweep-gib G=1] [--reps N=5] "
          "[--shape THREADS,CHUNK_KIB,RING_MIB,BLOCK_MIB]...\n");
      std::exit(0);
    } else if (!s.empty() && s[0] != '-')
      a.gib = std::atof(s.c_str());
    else
      die("unknown option " + s);
  }
  if (a.gib <= 0 || a.sweep_gib <= 0 || a.reps < 1) die("sizes must be positive and --reps at least 1");
  return a;
}

// Fills with a position-dependent pattern on several threads; this is also the first touch
// of the pageable pages, so no page fault lands inside a timed region.
void fill_pattern(char* p, uint64_t n) {
  const unsigned nt = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> ts;
  const uint64_t per = (n / nt + 4095) & ~uint64_t(4095);
  for (unsigned t = 0; t < nt; ++t) {
    ts.emplace_back([=] {
      const uint64_t b = std::min(n, t * per), e = std::min(n, b + per);
      for (uint64_t i = b; i < e; ++i) p[i] = static_cast<char>((i * 2654435761u) >> 13);
    });
  }
  for (auto& t : ts) t.join();
}

struct Timing {
  double median_s = 0, min_s = 0, max_s = 0;
};

Timing measure(int reps, const std::function<void()>& fn) {
  fn();  // warm-up: lazy allocations (the staging ring), driver state, TLBs
  std::vector<double> s;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  Timing t;
  t.median_s = reps % 2 ? s[reps / 2] : 0.5 * (s[reps / 2 - 1] + s[reps / 2]);
  t.min_s = s.front();
  t.max_s = s.back();
  return t;
}

struct Row {
  std::string name;
  uint32_t threads = 0;
  uint64_t chunk = 0, ring = 0, bytes = 0;
  Timing t;
  double ceiling_gbps = 0;
};

double gbps(uint64_t bytes, double s) { return double(bytes) / s / 1e9; }

std::string size_str(uint64_t b) {
  if (b == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g MiB", double(b) / double(MiB));
  return buf;
}

void print_row(const Row& r) {
  const double g = gbps(r.bytes, r.t.median_s);
  char range[48];
  std::snprintf(range, sizeof(range), "%.1f-%.1f", gbps(r.bytes, r.t.max_s), gbps(r.bytes, r.t.min_s));
  std::printf("%-38s %7s %8s %9s %6.2f %9.2f %7.1f %11s %7.1f%%\n", r.name.c_str(),
              r.threads ? std::to_string(r.threads).c_str() : "-", size_str(r.chunk).c_str(), size_str(r.ring).c_str(),
              double(r.bytes) / double(GiB), r.t.median_s * 1e3, g, range, 100.0 * g / r.ceiling_gbps);
  std::fflush(stdout);
}

// Reads the device buffer back in pieces and compares it with the source.
void verify(const char* what, const void* dev, const char* expect, uint64_t n, Buffer& scratch, cudaStream_t s) {
  const uint64_t step = scratch.size();
  for (uint64_t off = 0; off < n; off += step) {
    const uint64_t k = std::min(step, n - off);
    check(cudaMemcpyAsync(scratch.data(), static_cast<const char*>(dev) + off, k, cudaMemcpyDeviceToHost, s),
          "reading back for verification");
    check(cudaStreamSynchronize(s), "reading back for verification");
    if (std::memcmp(scratch.data(), expect + off, k) != 0) {
      uint64_t i = 0;
      while (static_cast<const char*>(scratch.data())[i] == expect[off + i]) ++i;
      die(std::string(what) + ": destination differs from the source at byte " + std::to_string(off + i));
    }
  }
}

uint64_t device_used() {
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return total - free;
}

// The rows choose the ring's shape; the environment's other switches (WHARF_TRANSFER_RAMP,
// _ALLOC_AHEAD_MIB, WHARF_STAGING_COPY, WHARF_SERVING_*) apply as they do to a runtime's engine
// (device/transfer_env.h), so an A/B run of this benchmark measures what it says.
std::unique_ptr<TransferEngine> make_engine(const std::shared_ptr<Device>& dev, const TransferOptions& shape) {
  TransferOptions o = shape;
  check(wharf::apply_transfer_env(&o), "reading the transfer switches from the environment");
  o.chunk_bytes = shape.chunk_bytes;
  o.block_bytes = shape.block_bytes;
  o.staging_bytes = shape.staging_bytes;
  std::unique_ptr<TransferEngine> e;
  check(TransferEngine::create(dev, o, &e), "creating a TransferEngine");
  return e;
}

std::unique_ptr<TransferEngine> make_engine(const std::shared_ptr<Device>& dev, uint32_t threads, uint64_t chunk,
                                            uint64_t ring = 0, uint64_t block = TransferOptions{}.block_bytes) {
  TransferOptions o;
  o.threads = threads;
  o.chunk_bytes = chunk;
  // By default two chunks per thread: one fills while one is in flight.
  o.staging_bytes = ring ? ring : 2ull * threads * chunk;
  o.block_bytes = block;
  return make_engine(dev, o);
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  std::string reason;
  if (!wharf::cuda_device_available(0, &reason)) die("needs a CUDA GPU: " + reason);
  std::shared_ptr<Device> dev;
  check(wharf::create_cuda_device(wharf::DeviceOptions{}, &dev), "creating the CUDA device");
  wharf::DeviceInfo info;
  check(dev->info(&info), "querying the device");

  const uint64_t bytes = uint64_t(args.gib * double(GiB)) & ~uint64_t(4095);
  const uint64_t sweep_bytes = std::min(bytes, uint64_t(args.sweep_gib * double(GiB)) & ~uint64_t(4095));
  if (bytes == 0 || sweep_bytes == 0) die("size below one page");
  std::printf("h2d_bench on %s (sm_%d%d): %.2f GiB per copy, sweep %.2f GiB, median of %d after a warm-up\n",
              info.name.c_str(), info.compute_major, info.compute_minor, double(bytes) / double(GiB),
              double(sweep_bytes) / double(GiB), args.reps);

  Buffer dst, pinned, scratch;
  check(dev->allocate(MemKind::kDevice, MemTag::kWorkspace, bytes, "bench destination", &dst), "allocating");
  check(dev->allocate(MemKind::kPinnedHost, MemTag::kWorkspace, bytes, "bench pinned source", &pinned), "allocating");
  check(dev->allocate(MemKind::kPinnedHost, MemTag::kWorkspace, 256 * MiB, "bench read-back", &scratch), "allocating");
  std::unique_ptr<char, decltype(&std::free)> pageable(static_cast<char*>(std::aligned_alloc(4096, bytes)), &std::free);
  if (!pageable) die("allocating " + std::to_string(bytes) + " bytes of pageable memory");
  fill_pattern(pageable.get(), bytes);
  std::memcpy(pinned.data(), pageable.get(), bytes);
  char* const src = pageable.get();
  void* const d = dst.data();
  if (dev->query_pointer(src).kind != wharf::PointerKind::kPageableHost)
    die("the pageable source is not seen as pageable");

  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  auto pinned_copy = [&](uint64_t n) {
    check(cudaMemcpyAsync(d, pinned.data(), n, cudaMemcpyHostToDevice, s), "pinned cudaMemcpyAsync");
    check(cudaStreamSynchronize(s), "pinned cudaMemcpyAsync");
  };
  auto zero_dst = [&] {
    check(cudaMemset(d, 0, bytes), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaMemset");
  };

  std::vector<Row> rows;
  std::printf("\n%-38s %7s %8s %9s %6s %9s %7s %11s %8s\n", "case", "threads", "chunk", "ring", "GiB", "median ms",
              "GB/s", "GB/s range", "% pinned");

  Row ceiling{"(1) pinned cudaMemcpyAsync (ceiling)",          0, 0, 0, bytes,
              measure(args.reps, [&] { pinned_copy(bytes); }), 0};
  ceiling.ceiling_gbps = gbps(bytes, ceiling.t.median_s);
  const double ceil_gbps = ceiling.ceiling_gbps;
  rows.push_back(ceiling);
  print_row(rows.back());

  rows.push_back(
      {"(2) pageable cudaMemcpy", 0, 0, 0, bytes,
       measure(args.reps, [&] { check(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice), "pageable cudaMemcpy"); }),
       ceil_gbps});
  print_row(rows.back());

  {
    auto eng = make_engine(dev, wharf::default_staging_options(12));
    zero_dst();
    Timing t = measure(args.reps, [&] { check(eng->copy({{d, pinned.data(), bytes}}, {}), "TransferEngine copy"); });
    verify("TransferEngine, pinned source", d, src, bytes, scratch, s);
    rows.push_back({"(3) TransferEngine, pinned source", 12, 4 * MiB, 0, bytes, t, ceil_gbps});
    print_row(rows.back());
  }

  // Staging figures from the device's accounting, cross-checked with cudaMemGetInfo: the
  // ring is pinned host memory, so device memory in use must not grow by its size.
  uint64_t staging_bytes = 0, pinned_total = 0;
  int64_t device_delta = 0;
  double engine_pageable_gbps = 0;
  {
    const uint64_t used_before = device_used();
    auto eng = make_engine(dev, wharf::default_staging_options(12));
    zero_dst();
    wharf::TransferStats stats;
    Timing t = measure(args.reps, [&] { check(eng->copy({{d, src, bytes}}, {}, &stats), "TransferEngine copy"); });
    wharf::MemorySnapshot snap = dev->accounting().snapshot();
    staging_bytes = snap.current[int(MemTag::kStaging)];
    pinned_total = snap.pinned_current;
    device_delta = int64_t(device_used()) - int64_t(used_before);
    if (stats.pageable_bytes != bytes) die("TransferEngine did not classify the source as pageable");
    verify("TransferEngine, pageable source", d, src, bytes, scratch, s);
    engine_pageable_gbps = gbps(bytes, t.median_s);
    rows.push_back({"(4) TransferEngine, pageable source", 12, wharf::default_staging_options(12).chunk_bytes,
                    staging_bytes, bytes, t, ceil_gbps});
    print_row(rows.back());
  }

  // (5) The sweep, against a ceiling measured at its own size.
  Row sweep_ceiling{"(5) pinned cudaMemcpyAsync, sweep size",
                    0,
                    0,
                    0,
                    sweep_bytes,
                    measure(args.reps, [&] { pinned_copy(sweep_bytes); }),
                    0};
  sweep_ceiling.ceiling_gbps = gbps(sweep_bytes, sweep_ceiling.t.median_s);
  rows.push_back(sweep_ceiling);
  print_row(rows.back());
  if (args.shapes.empty()) {
    for (uint64_t chunk : {2 * MiB, 4 * MiB, 8 * MiB, 16 * MiB}) {
      for (uint32_t threads : {4u, 8u, 12u, 16u}) {
        auto eng = make_engine(dev, threads, chunk);
        zero_dst();
        Timing t = measure(args.reps, [&] { check(eng->copy({{d, src, sweep_bytes}}, {}), "TransferEngine copy"); });
        verify("sweep", d, src, sweep_bytes, scratch, s);
        rows.push_back(
            {"    pageable sweep", threads, chunk, 2ull * threads * chunk, sweep_bytes, t, sweep_ceiling.ceiling_gbps});
        print_row(rows.back());
      }
    }
  } else {
    // The shapes in turn within each repetition (after one warm-up of each), each engine
    // kept for the whole run: the rows share the machine's noise.
    std::vector<std::unique_ptr<TransferEngine>> engines;
    std::vector<std::vector<double>> samples(args.shapes.size());
    std::vector<uint64_t> copies(args.shapes.size(), 0);
    for (const Shape& sh : args.shapes) engines.push_back(make_engine(dev, sh.threads, sh.chunk, sh.ring, sh.block));
    for (int r = 0; r <= args.reps; ++r)
      for (size_t k = 0; k < engines.size(); ++k) {
        wharf::TransferStats stats;
        auto t0 = std::chrono::steady_clock::now();
        check(engines[k]->copy({{d, src, sweep_bytes}}, {}, &stats), "TransferEngine copy");
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r > 0) samples[k].push_back(sec);
        copies[k] = stats.staged_copies;
      }
    for (size_t k = 0; k < engines.size(); ++k) {
      const Shape& sh = args.shapes[k];
      zero_dst();
      check(engines[k]->copy({{d, src, sweep_bytes}}, {}), "TransferEngine copy");
      verify("shape", d, src, sweep_bytes, scratch, s);
      std::vector<double>& v = samples[k];
      std::sort(v.begin(), v.end());
      Timing t;
      t.median_s = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
      t.min_s = v.front();
      t.max_s = v.back();
      char name[64];
      std::snprintf(name, sizeof name, "(6) shape, blocks %g MiB, %llu DMAs", double(sh.block) / double(MiB),
                    (unsigned long long)copies[k]);
      rows.push_back({name, sh.threads, sh.chunk, sh.ring, sweep_bytes, t, sweep_ceiling.ceiling_gbps});
      print_row(rows.back());
    }
  }

  std::printf(
      "\nstaging ring (4): %s under tag 'staging' (accounting), %s pinned in all (incl. the bench's own "
      "%s source and %s read-back buffer);\n  device memory in use changed by %+.2f MiB across ring creation "
      "(cudaMemGetInfo; the ring is host memory, so ~0 expected)\n",
      size_str(staging_bytes).c_str(), size_str(pinned_total).c_str(), size_str(bytes).c_str(),
      size_str(scratch.size()).c_str(), double(device_delta) / double(MiB));
  std::printf("TransferEngine pageable (4): %.1f%% of the pinned ceiling (target >= 85%%)\n",
              100.0 * engine_pageable_gbps / ceil_gbps);

  if (!args.csv.empty()) {
    FILE* f = std::fopen(args.csv.c_str(), "w");
    if (!f) die("opening " + args.csv + " for writing: " + std::strerror(errno));
    std::fprintf(f, "case,threads,chunk_bytes,staging_bytes,bytes,median_s,min_s,max_s,gbps,pct_of_pinned\n");
    for (const Row& r : rows) {
      const double g = gbps(r.bytes, r.t.median_s);
      std::fprintf(f, "\"%s\",%u,%llu,%llu,%llu,%.6f,%.6f,%.6f,%.3f,%.2f\n", r.name.c_str(), r.threads,
                   (unsigned long long)r.chunk, (unsigned long long)r.ring, (unsigned long long)r.bytes, r.t.median_s,
                   r.t.min_s, r.t.max_s, g, 100.0 * g / r.ceiling_gbps);
    }
    if (std::fclose(f) != 0) die("writing " + args.csv);
    std::printf("wrote %s\n", args.csv.c_str());
  }
  check(cudaStreamDestroy(s), "cudaStreamDestroy");
  return 0;
}
