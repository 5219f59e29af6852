// SPDX-License-Identifier: Apache-2.0
// The staging threads' host copy alone, on the CPU: N threads copy G GiB of pageable memory
// into a ring of "pinned-like" memory (aligned, touched beforehand) in pieces, as the
// transfer engine's workers fill staging chunks, with memcpy beside copy_to_dma_buffer
// (streaming stores, src/device/dma_copy.h; WHARF_STAGING_COPY picks between them in the
// library). No GPU: the DMA that reads the ring in the library is absent here, so this shows
// what the copy itself costs the host, not the update's speed (update_bench measures that).
//
//   staging_copy_bench [--gib G] [--ring-mib R[,R...]] [--piece-mib P[,P...]]
//                      [--threads T[,T...]] [--reps N] [--csv PATH]
//
// Rings: 96 MiB (the library's default ring until session 9, 12 threads x 2 chunks of 4 MiB) and 1 GiB
// (larger than any last-level cache). Which one a memcpy behaves like decides the gain: into
// a ring that stays in the cache, memcpy's read-for-ownership hits the cache; into one that
// does not, it reads DRAM, which streaming stores skip.
//
// Each row's modes run interleaved (repetition r of every mode before r + 1) after one
// untimed warm-up; GB/s = 10^9 bytes per second, median with min and max.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "device/dma_copy.h"

namespace {

using Clock = std::chrono::steady_clock;
using CopyFn = void (*)(void*, const void*, size_t) noexcept;

void plain_memcpy(void* d, const void* s, size_t n) noexcept { std::memcpy(d, s, n); }

struct Mode {
  const char* name;
  CopyFn fn;
};

std::vector<uint64_t> parse_list(const char* s) {
  std::vector<uint64_t> v;
  for (const char* p = s; *p;) {
    char* end = nullptr;
    const unsigned long long x = std::strtoull(p, &end, 10);
    if (end == p || x == 0) {
      std::fprintf(stderr, "staging_copy_bench: bad list '%s' (positive integers, comma separated)\n", s);
      std::exit(2);
    }
    v.push_back(x);
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') {
      std::fprintf(stderr, "staging_copy_bench: bad list '%s'\n", s);
      std::exit(2);
    }
  }
  return v;
}

void* aligned_touched(size_t bytes, unsigned char fill) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0) {
    std::fprintf(stderr, "staging_copy_bench: cannot allocate %zu bytes\n", bytes);
    std::exit(2);
  }
  std::memset(p, fill, bytes);  // no first-touch faults timed
  return p;
}

// One repetition: `threads` threads take pieces in order from a shared index and copy piece
// i of the source into a slot of the ring. Each thread cycles through its own slots (slot
// t, t + T, ...), so no two threads write one slot at once, as the engine's chunk events
// guarantee. Returns seconds.
double run_once(CopyFn fn, const char* src, uint64_t bytes, char* ring, uint64_t slots, uint64_t piece,
                uint32_t threads) {
  std::atomic<uint64_t> next{0};
  const uint64_t pieces = (bytes + piece - 1) / piece;
  const uint64_t own = slots / threads;  // >= 1: the caller sizes the ring
  std::vector<std::thread> pool;
  const Clock::time_point t0 = Clock::now();
  for (uint32_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      uint64_t k = 0;
      for (;;) {
        const uint64_t i = next.fetch_add(1, std::memory_order_relaxed);
        if (i >= pieces) return;
        char* const slot = ring + (t + threads * (k++ % own)) * piece;
        fn(slot, src + i * piece, std::min(piece, bytes - i * piece));
      }
    });
  for (std::thread& th : pool) th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t gib = 2, reps = 7;
  std::vector<uint64_t> rings_mib{96, 1024};
  std::vector<uint64_t> pieces_mib{4, 16};
  const uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  // 1 thread, and the library's default copy_threads: min(12, cores - 1).
  std::vector<uint64_t> thread_counts{1};
  if (cores > 2) thread_counts.push_back(std::min(12u, cores - 1));
  const char* csv_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--gib" && has)
      gib = parse_list(argv[++i]).at(0);
    else if (a == "--ring-mib" && has)
      rings_mib = parse_list(argv[++i]);
    else if (a == "--piece-mib" && has)
      pieces_mib = parse_list(argv[++i]);
    else if (a == "--threads" && has)
      thread_counts = parse_list(argv[++i]);
    else if (a == "--reps" && has)
      reps = parse_list(argv[++i]).at(0);
    else if (a == "--csv" && has)
      csv_path = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: staging_copy_bench [--gib G] [--ring-mib R[,R...]] [--piece-mib P[,P...]] "
                   "[--threads T[,T...]] [--reps N] [--csv PATH]\n");
      return 2;
    }
  }

  std::vector<Mode> modes{{"memcpy", &plain_memcpy}, {"stream", &wharf::copy_to_dma_buffer}};
  const char* stream_kind = "memcpy (no streaming stores on this CPU)";
#ifdef WHARF_DMA_COPY_X86
  if (wharf::dma_copy::cpu_has_avx2()) {
    stream_kind = "AVX2";
    modes.push_back({"stream-sse2", &wharf::dma_copy::stream_sse2});
  } else {
    stream_kind = "SSE2";
  }
#endif

  const uint64_t bytes = gib << 30;
  uint64_t max_ring = 0;
  for (uint64_t r : rings_mib) max_ring = std::max(max_ring, r << 20);
  for (uint64_t p : pieces_mib)
    for (uint64_t t : thread_counts) max_ring = std::max(max_ring, (p << 20) * t);
  char* src = static_cast<char*>(aligned_touched(bytes, 0x5a));
  char* ring = static_cast<char*>(aligned_touched(max_ring, 0));

  // The last-level cache, as glibc reports it (0 where it cannot tell): whether a ring fits.
  long l3 = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  std::printf(
      "staging_copy_bench: %llu GiB pageable -> ring, %u cores seen, L3 %ld MiB, stream = %s; %llu reps after one "
      "warm-up\n",
      static_cast<unsigned long long>(gib), cores, l3 > 0 ? l3 >> 20 : 0L, stream_kind,
      static_cast<unsigned long long>(reps));
  std::printf("%7s %9s %8s  %-12s %8s %8s %8s  %s\n", "threads", "piece_MiB", "ring_MiB", "mode", "GB/s", "min", "max",
              "x memcpy");
  FILE* csv = csv_path ? std::fopen(csv_path, "w") : nullptr;
  if (csv_path && !csv) {
    std::fprintf(stderr, "staging_copy_bench: cannot write %s\n", csv_path);
    return 2;
  }
  if (csv) std::fprintf(csv, "threads,piece_mib,ring_mib,mode,gbps_median,gbps_min,gbps_max\n");

  for (uint64_t ring_mib : rings_mib)
    for (uint64_t p_mib : pieces_mib)
      for (uint64_t t : thread_counts) {
        const uint64_t piece = p_mib << 20;
        // The ring as asked, or larger where it holds fewer pieces than threads.
        const uint64_t slots = std::max<uint64_t>((ring_mib << 20) / piece, t);
        std::vector<std::vector<double>> gbps(modes.size());
        for (uint64_t r = 0; r <= reps; ++r)
          for (size_t m = 0; m < modes.size(); ++m) {
            const double s = run_once(modes[m].fn, src, bytes, ring, slots, piece, uint32_t(t));
            if (r > 0) gbps[m].push_back(double(bytes) / s / 1e9);  // repetition 0: warm-up
          }
        double memcpy_med = 0;
        for (size_t m = 0; m < modes.size(); ++m) {
          std::vector<double> v = gbps[m];
          std::sort(v.begin(), v.end());
          const double med = v[v.size() / 2], lo = v.front(), hi = v.back();
          if (m == 0) memcpy_med = med;
          std::printf("%7llu %9llu %8llu  %-12s %8.2f %8.2f %8.2f  %.3f\n", static_cast<unsigned long long>(t),
                      static_cast<unsigned long long>(p_mib), static_cast<unsigned long long>((slots * piece) >> 20),
                      modes[m].name, med, lo, hi, med / memcpy_med);
          if (csv)
            std::fprintf(csv, "%llu,%llu,%llu,%s,%.3f,%.3f,%.3f\n", static_cast<unsigned long long>(t),
                         static_cast<unsigned long long>(p_mib), static_cast<unsigned long long>((slots * piece) >> 20),
                         modes[m].name, med, lo, hi);
        }
      }
  if (csv) std::fclose(csv);
  std::free(ring);
  std::free(src);
  return 0;
}
