// SPDX-License-Identifier: Apache-2.0
// Probe (session 9): a staging pipeline like the engine's, copy variants.
#include <cuda_runtime_api.h>
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using clk = std::chrono::steady_clock;
static double now_ms() { return std::chrono::duration<double, std::milli>(clk::now().time_since_epoch()).count(); }
#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::printf("FAIL %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

constexpr size_t MiB = 1 << 20, GiB = 1ull << 30;

__attribute__((target("avx2"))) static void nt_copy(char* d, const char* s, size_t n) {
  for (size_t i = 0; i < n; i += 128) {
    __m256i a = _mm256_loadu_si256((const __m256i*)(s + i));
    __m256i b = _mm256_loadu_si256((const __m256i*)(s + i + 32));
    __m256i c = _mm256_loadu_si256((const __m256i*)(s + i + 64));
    __m256i e = _mm256_loadu_si256((const __m256i*)(s + i + 96));
    _mm256_stream_si256((__m256i*)(d + i), a);
    _mm256_stream_si256((__m256i*)(d + i + 32), b);
    _mm256_stream_si256((__m256i*)(d + i + 64), c);
    _mm256_stream_si256((__m256i*)(d + i + 96), e);
  }
  _mm_sfence();
}
__attribute__((target("cldemote"))) static void demote(char* d, size_t n) {
  for (size_t i = 0; i < n; i += 64) _cldemote(d + i);
}
__attribute__((target("clflushopt"))) static void flush(char* d, size_t n) {
  for (size_t i = 0; i < n; i += 64) _mm_clflushopt(d + i);
  _mm_sfence();
}
// memcpy in sub-pieces, demoting each sub-piece after it is written (lines still warm)
__attribute__((target("cldemote"))) static void memcpy_demote(char* d, const char* s, size_t n, size_t sub) {
  for (size_t o = 0; o < n; o += sub) {
    size_t k = std::min(sub, n - o);
    std::memcpy(d + o, s + o, k);
    for (size_t i = 0; i < k; i += 64) _cldemote(d + o + i);
  }
}

enum Var { kMemcpy, kNT, kDemote, kDemoteSub, kFlush, kMemcpySub };
static const char* vname[] = {"memcpy",     "nt-avx2", "memcpy+cldemote", "memcpy+cldemote/64K", "memcpy+clflushopt",
                              "memcpy/256K"};

struct Pipe {
  char* dev;
  char* ring;
  char* other;
  int dma_src;  // 0 ring, 1 other pinned buffer, 2 none
  cudaStream_t s;
};

// chunk 4 MiB, groups of G chunks per DMA, ring R chunks. Returns ms.
static double run(Pipe& p, const char* src, size_t n, int T, size_t chunk, int G, int R, Var v, double* read_gbs) {
  size_t nchunks = n / chunk;
  size_t ngroups = nchunks / G;
  int ring_groups = R / G;
  std::vector<cudaEvent_t> ev(ring_groups);
  for (auto& e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  std::vector<std::atomic<int>> filled(ngroups);
  std::vector<std::atomic<int>> enq(ngroups);
  for (size_t g = 0; g < ngroups; ++g) filled[g] = 0, enq[g] = 0;
  std::atomic<size_t> next{0};
  std::atomic<long> read_ns{0};
  double t0 = now_ms();
  std::vector<std::thread> th;
  for (int t = 0; t < T; ++t)
    th.emplace_back([&] {
      for (size_t i; (i = next++) < nchunks;) {
        size_t g = i / G;
        if (g >= size_t(ring_groups)) {
          size_t prev = g - ring_groups;
          while (!enq[prev].load(std::memory_order_acquire)) std::this_thread::yield();
          CK(cudaEventSynchronize(ev[prev % ring_groups]));
        }
        char* d = p.ring + (i % R) * chunk;
        const char* s = src + i * chunk;
        auto a = clk::now();
        switch (v) {
          case kMemcpy:
            std::memcpy(d, s, chunk);
            break;
          case kNT:
            nt_copy(d, s, chunk);
            break;
          case kDemote:
            std::memcpy(d, s, chunk);
            demote(d, chunk);
            break;
          case kDemoteSub:
            memcpy_demote(d, s, chunk, 64 * 1024);
            break;
          case kFlush:
            std::memcpy(d, s, chunk);
            flush(d, chunk);
            break;
          case kMemcpySub:
            for (size_t o = 0; o < chunk; o += 256 * 1024) std::memcpy(d + o, s + o, 256 * 1024);
            break;
        }
        read_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now() - a).count();
        filled[g].fetch_add(1, std::memory_order_release);
      }
    });
  for (size_t g = 0; g < ngroups; ++g) {
    while (filled[g].load(std::memory_order_acquire) < G) std::this_thread::yield();
    size_t first = g * G;
    if (p.dma_src == 0)
      CK(cudaMemcpyAsync(p.dev + first * chunk, p.ring + (first % R) * chunk, G * chunk, cudaMemcpyHostToDevice, p.s));
    else if (p.dma_src == 1)
      CK(cudaMemcpyAsync(p.dev + first * chunk, p.other + first * chunk, G * chunk, cudaMemcpyHostToDevice, p.s));
    CK(cudaEventRecord(ev[g % ring_groups], p.s));
    enq[g].store(1, std::memory_order_release);
  }
  CK(cudaStreamSynchronize(p.s));
  double ms = now_ms() - t0;
  for (auto& x : th) x.join();
  for (auto& e : ev) CK(cudaEventDestroy(e));
  *read_gbs = double(n) / T / (read_ns.load() / double(T)) * 1.0;  // GB/s per thread while reading
  return ms;
}

int main() {
  size_t n = 2 * GiB;
  CK(cudaSetDevice(0));
  Pipe p;
  CK(cudaMalloc((void**)&p.dev, n));
  CK(cudaStreamCreateWithFlags(&p.s, cudaStreamNonBlocking));
  char* pinned;
  CK(cudaHostAlloc((void**)&pinned, n, cudaHostAllocPortable));
  std::memset(pinned, 1, n);
  size_t ring_max = 256 * MiB;
  CK(cudaHostAlloc((void**)&p.ring, ring_max, cudaHostAllocPortable));
  std::memset(p.ring, 0, ring_max);
  p.other = pinned;
  char* src = static_cast<char*>(std::malloc(n));
  for (size_t i = 0; i < n; i += 4096) src[i] = char(i >> 12);
  std::memset(src, 3, n);
  auto ceiling = [&] {
    auto a = now_ms();
    CK(cudaMemcpyAsync(p.dev, pinned, n, cudaMemcpyHostToDevice, p.s));
    CK(cudaStreamSynchronize(p.s));
    return now_ms() - a;
  };
  struct Cfg {
    int T;
    size_t chunk;
    int G, R;
    Var v;
    int dma_src = 0;
  };
  std::vector<Cfg> cfgs = {
      {12, 4 * MiB, 4, 24, kMemcpy},    {12, 4 * MiB, 4, 24, kMemcpy, 1}, {12, 4 * MiB, 4, 24, kMemcpy, 2},
      {12, 4 * MiB, 4, 24, kNT, 1},     {12, 4 * MiB, 4, 24, kNT, 2},     {12, 1 * MiB, 4, 24, kMemcpy},
      {12, 1 * MiB, 4, 48, kMemcpy},    {12, 1 * MiB, 8, 48, kMemcpy},    {12, 1 * MiB, 4, 24, kNT},
      {12, 2 * MiB, 4, 32, kMemcpy},    {12, 2 * MiB, 4, 48, kMemcpy},    {12, 512 * 1024, 8, 48, kMemcpy},
      {12, 512 * 1024, 8, 64, kMemcpy}, {8, 1 * MiB, 4, 24, kMemcpy},     {16, 1 * MiB, 4, 32, kMemcpy},
      {16, 4 * MiB, 4, 32, kMemcpy, 2}, {12, 1 * MiB, 4, 24, kMemcpy, 2},
  };
  int reps = 5;
  std::vector<std::vector<double>> res(cfgs.size()), rd(cfgs.size());
  std::vector<double> ceil;
  for (int r = 0; r < reps + 1; ++r) {
    double c = ceiling();
    if (r) ceil.push_back(c);
    for (size_t k = 0; k < cfgs.size(); ++k) {
      auto& c2 = cfgs[k];
      double g;
      p.dma_src = c2.dma_src;
      double ms = run(p, src, n, c2.T, c2.chunk, c2.G, c2.R, c2.v, &g);
      if (r) res[k].push_back(ms), rd[k].push_back(g);
    }
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double cm = med(ceil);
  std::printf("ceiling 2 GiB: %.2f ms (%.2f GB/s)\n", cm, n / (cm * 1e6));
  for (size_t k = 0; k < cfgs.size(); ++k) {
    auto& c = cfgs[k];
    auto v = res[k];
    std::sort(v.begin(), v.end());
    std::printf(
        "T=%2d chunk %4zu KiB x%d ring %3zu MiB dma<-%-5s %-22s median %.2f ms (min %.2f max %.2f) = %.3f x ceiling; "
        "per-thread read %.2f GB/s\n",
        c.T, c.chunk / 1024, c.G, c.R * c.chunk / MiB,
        c.dma_src == 0   ? "ring"
        : c.dma_src == 1 ? "other"
                         : "none",
        vname[c.v], med(v), v.front(), v.back(), cm / med(v), med(rd[k]));
  }
  return 0;
}
